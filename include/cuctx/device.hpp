// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::Device: one of the devices the driver sees.

#include "cuctx/device_properties.hpp"
#include "cuctx/export.hpp"

#include <cuda.h>

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace cuctx {

/// One of the devices the driver sees: an ordinal and the driver's handle. Queries go to the driver
/// each time; none makes a context except memoryInfo().
///
/// \par Threading
/// Thread-safe (a value: copies are independent, and every member may be called from any thread).
class CUCTX_API Device {
public:
    /// The number of devices the driver sees (CUDA_VISIBLE_DEVICES applies). Loads the driver;
    /// 0 never happens: a driver without devices is an Errc::no_device error.
    static int count();
    /// The device with this ordinal; an ordinal outside [0, count()) is an Errc::invalid_argument
    /// error that says how many devices there are.
    static Device get(int ordinal);
    /// Every device, in ordinal order.
    static std::vector<Device> all();

    /// The ordinal, as the driver numbers the visible devices (CUDA_VISIBLE_DEVICES applies).
    int ordinal() const noexcept { return ordinal_; }
    /// cuDeviceGetName, e.g. "NVIDIA H200".
    std::string name() const;
    /// "GPU-" and the 16 UUID bytes in the 8-4-4-4-12 form nvidia-smi prints.
    std::string uuid() const;
    /// The 16 bytes of cuDeviceGetUuid.
    std::array<unsigned char, 16> uuidBytes() const;
    /// "0000:19:00.0": the driver's domain:bus:device.function form.
    std::string pciBusId() const;
    /// A compute capability: {9, 0} for sm_90. A value type.
    struct ComputeCapability {
        int major = 0; ///< 9 for sm_90
        int minor = 0; ///< 0 for sm_90
    };
    /// CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR and _MINOR.
    ComputeCapability computeCapability() const;
    /// cuDeviceTotalMem, in bytes.
    std::size_t totalMemory() const;
    /// All of DeviceProperties in one call.
    DeviceProperties properties() const;

    /// Device memory in bytes, as cuMemGetInfo reports it. A value type.
    struct MemoryInfo {
        std::size_t free = 0;  ///< what is free now, for every process
        std::size_t total = 0; ///< the device's memory
    };
    /// Free and total device memory (cuMemGetInfo). It needs a context: this retains the primary
    /// context for the duration of the call (creating it if it is inactive, which takes time and
    /// device memory) and leaves the thread's context stack as it was.
    MemoryInfo memoryInfo() const;

    /// cuDevicePrimaryCtxGetState. A value type.
    struct PrimaryContextState {
        bool active = false; ///< whether the primary context exists (some code in this process retains it)
        unsigned flags = 0;  ///< CU_CTX_* scheduling and other flags
    };
    /// The primary context's state, read without creating or retaining it.
    PrimaryContextState primaryContextState() const;

    /// The raw value of any attribute, for what DeviceProperties does not cover.
    int nativeAttribute(CUdevice_attribute attribute) const;
    /// The driver's handle (CUdevice).
    CUdevice native() const noexcept { return handle_; }

    /// Whether both are the same device (the same ordinal).
    friend bool operator==(const Device& a, const Device& b) noexcept { return a.ordinal_ == b.ordinal_; }

private:
    Device(int ordinal, CUdevice handle) noexcept : ordinal_(ordinal), handle_(handle) {}

    int ordinal_;
    CUdevice handle_;
};

} // namespace cuctx

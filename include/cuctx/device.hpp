// SPDX-License-Identifier: MIT
#pragma once

// cuctx::Device: one of the devices the driver sees. Thread-safe (a value: an ordinal and a handle).

#include "cuctx/device_properties.hpp"
#include "cuctx/export.hpp"

#include <cuda.h>

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace cuctx {

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

    int ordinal() const noexcept { return ordinal_; }
    std::string name() const;
    /// "GPU-" and the 16 UUID bytes in the 8-4-4-4-12 form nvidia-smi prints.
    std::string uuid() const;
    std::array<unsigned char, 16> uuidBytes() const;
    /// "0000:19:00.0": the driver's domain:bus:device.function form.
    std::string pciBusId() const;
    struct ComputeCapability {
        int major = 0;
        int minor = 0;
    };
    ComputeCapability computeCapability() const;
    std::size_t totalMemory() const;
    /// All of DeviceProperties in one call.
    DeviceProperties properties() const;

    struct MemoryInfo {
        std::size_t free = 0;
        std::size_t total = 0;
    };
    /// Free and total device memory (cuMemGetInfo). It needs a context: this retains the primary
    /// context for the duration of the call (creating it if it is inactive, which takes time and
    /// device memory) and leaves the thread's context stack as it was.
    MemoryInfo memoryInfo() const;

    struct PrimaryContextState {
        bool active = false;
        unsigned flags = 0; ///< CU_CTX_* scheduling and other flags
    };
    /// The primary context's state, read without creating or retaining it.
    PrimaryContextState primaryContextState() const;

    /// The raw value of any attribute, for what DeviceProperties does not cover.
    int nativeAttribute(CUdevice_attribute attribute) const;
    CUdevice native() const noexcept { return handle_; }

    friend bool operator==(const Device& a, const Device& b) noexcept { return a.ordinal_ == b.ordinal_; }

private:
    Device(int ordinal, CUdevice handle) noexcept : ordinal_(ordinal), handle_(handle) {}

    int ordinal_;
    CUdevice handle_;
};

} // namespace cuctx

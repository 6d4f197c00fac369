// SPDX-License-Identifier: MIT
#include "cuctx/device.hpp"

#include "check/check.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"

#include <cstdio>
#include <cstdlib>

namespace cuctx {
namespace {

using detail::api;
using detail::check;
using detail::Subject;

std::string visibleDevicesNote()
{
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    if (visible == nullptr)
        return "CUDA_VISIBLE_DEVICES is not set";
    return std::string("CUDA_VISIBLE_DEVICES=\"") + visible + "\"";
}

} // namespace

int Device::count()
{
    int n = 0;
    check(api().cuDeviceGetCount(&n), "cuDeviceGetCount");
    return n;
}

Device Device::get(int ordinal)
{
    const int n = count();
    if (ordinal < 0 || ordinal >= n)
        detail::throwError(Errc::invalid_argument, "cuctx::Device::get",
                           "device ordinal " + std::to_string(ordinal) + " is out of range: the driver sees " +
                               std::to_string(n) + " device(s), ordinals 0 to " + std::to_string(n - 1) + " (" +
                               visibleDevicesNote() + ")",
                           "Use an ordinal below Device::count()");
    CUdevice handle = 0;
    check(api().cuDeviceGet(&handle, ordinal), "cuDeviceGet", Subject{.device = ordinal});
    return Device(ordinal, handle);
}

std::vector<Device> Device::all()
{
    const int n = count();
    std::vector<Device> devices;
    devices.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        CUdevice handle = 0;
        check(api().cuDeviceGet(&handle, i), "cuDeviceGet", Subject{.device = i});
        devices.push_back(Device(i, handle));
    }
    return devices;
}

std::string Device::name() const
{
    char buffer[256] = {};
    check(api().cuDeviceGetName(buffer, sizeof buffer - 1, handle_), "cuDeviceGetName", Subject{.device = ordinal_});
    return buffer;
}

std::array<unsigned char, 16> Device::uuidBytes() const
{
    CUuuid raw{};
    check(api().cuDeviceGetUuid(&raw, handle_), "cuDeviceGetUuid", Subject{.device = ordinal_});
    std::array<unsigned char, 16> bytes{};
    for (std::size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<unsigned char>(raw.bytes[i]);
    return bytes;
}

std::string Device::uuid() const
{
    const auto b = uuidBytes();
    char text[64];
    std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return text;
}

std::string Device::pciBusId() const
{
    char buffer[64] = {};
    check(api().cuDeviceGetPCIBusId(buffer, sizeof buffer - 1, handle_), "cuDeviceGetPCIBusId",
          Subject{.device = ordinal_});
    return buffer;
}

int Device::nativeAttribute(CUdevice_attribute attribute) const
{
    int value = 0;
    check(api().cuDeviceGetAttribute(&value, attribute, handle_), "cuDeviceGetAttribute", Subject{.device = ordinal_});
    return value;
}

Device::ComputeCapability Device::computeCapability() const
{
    return {nativeAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            nativeAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)};
}

std::size_t Device::totalMemory() const
{
    std::size_t bytes = 0;
    check(api().cuDeviceTotalMem(&bytes, handle_), "cuDeviceTotalMem", Subject{.device = ordinal_});
    return bytes;
}

DeviceProperties Device::properties() const
{
    DeviceProperties p;
    p.ordinal = ordinal_;
    p.name = name();
    p.uuid = uuid();
    p.pciBusId = pciBusId();
    const auto cc = computeCapability();
    p.computeCapabilityMajor = cc.major;
    p.computeCapabilityMinor = cc.minor;
    p.totalMemory = totalMemory();
    auto attr = [this](CUdevice_attribute a) { return nativeAttribute(a); };
    p.multiprocessors = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    p.maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    p.maxThreadsPerMultiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    p.maxBlockDim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    p.maxBlockDim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
    p.maxBlockDim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
    p.maxGridDim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
    p.maxGridDim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    p.maxGridDim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
    p.warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    p.registersPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    p.registersPerMultiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    p.sharedMemoryPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    p.sharedMemoryPerBlockOptin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    p.sharedMemoryPerMultiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    p.l2CacheSize = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    p.memoryBusWidth = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    p.memoryClockRate = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    p.clockRate = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    p.computeMode = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
    p.asyncEngines = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
    p.unifiedAddressing = attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) != 0;
    p.managedMemory = attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) != 0;
    p.concurrentKernels = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS) != 0;
    p.cooperativeLaunch = attr(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH) != 0;
    p.eccEnabled = attr(CU_DEVICE_ATTRIBUTE_ECC_ENABLED) != 0;
    p.integrated = attr(CU_DEVICE_ATTRIBUTE_INTEGRATED) != 0;
    p.canMapHostMemory = attr(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY) != 0;
    p.memoryPools = attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
    return p;
}

std::string DeviceProperties::computeModeName() const
{
    switch (computeMode) {
    case CU_COMPUTEMODE_DEFAULT: return "default";
    case CU_COMPUTEMODE_PROHIBITED: return "prohibited";
    case CU_COMPUTEMODE_EXCLUSIVE_PROCESS: return "exclusive-process";
    default: return "unknown";
    }
}

Device::PrimaryContextState Device::primaryContextState() const
{
    unsigned flags = 0;
    int active = 0;
    check(api().cuDevicePrimaryCtxGetState(handle_, &flags, &active), "cuDevicePrimaryCtxGetState",
          Subject{.device = ordinal_});
    return {active != 0, flags};
}

Device::MemoryInfo Device::memoryInfo() const
{
    const detail::DriverApi& d = api();
    const Subject subject{.device = ordinal_};
    CUcontext primary = nullptr;
    check(d.cuDevicePrimaryCtxRetain(&primary, handle_), "cuDevicePrimaryCtxRetain", subject);
    // Undo in reverse order whatever happens; a failure to undo is logged, the first error wins.
    CUresult r = d.cuCtxPushCurrent(primary);
    MemoryInfo info;
    if (r == CUDA_SUCCESS) {
        r = d.cuMemGetInfo(&info.free, &info.total);
        CUcontext popped = nullptr;
        const CUresult pop = d.cuCtxPopCurrent(&popped);
        if (pop != CUDA_SUCCESS || popped != primary)
            detail::logError("Device::memoryInfo: cuCtxPopCurrent gave {} and context {} instead of {}",
                             resultName(pop), static_cast<void*>(popped), static_cast<void*>(primary));
        if (r != CUDA_SUCCESS) {
            (void)d.cuDevicePrimaryCtxRelease(handle_);
            check(r, "cuMemGetInfo", subject);
        }
    } else {
        (void)d.cuDevicePrimaryCtxRelease(handle_);
        check(r, "cuCtxPushCurrent", subject);
    }
    check(d.cuDevicePrimaryCtxRelease(handle_), "cuDevicePrimaryCtxRelease", subject);
    return info;
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::DeviceProperties: a snapshot of what a backend asks a device.

#include "cuctx/export.hpp"
#include <cstddef>
#include <string>

namespace cuctx {

/// Read in one go by Device::properties(); sizes in bytes, clocks in kHz. Each field is the
/// CU_DEVICE_ATTRIBUTE_* of the same name unless said otherwise.
///
/// \par Threading
/// Thread-compatible value type.
struct CUCTX_API DeviceProperties {
    int ordinal = 0;                       ///< the device's ordinal (Device::ordinal)
    std::string name;                      ///< cuDeviceGetName, e.g. "NVIDIA H200"
    std::string uuid;                      ///< "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it
    std::string pciBusId;                  ///< "0000:19:00.0" (domain:bus:device.function)
    int computeCapabilityMajor = 0;        ///< COMPUTE_CAPABILITY_MAJOR: 9 for sm_90
    int computeCapabilityMinor = 0;        ///< COMPUTE_CAPABILITY_MINOR: 0 for sm_90
    std::size_t totalMemory = 0;           ///< cuDeviceTotalMem
    int multiprocessors = 0;               ///< MULTIPROCESSOR_COUNT
    int maxThreadsPerBlock = 0;            ///< MAX_THREADS_PER_BLOCK
    int maxThreadsPerMultiprocessor = 0;   ///< MAX_THREADS_PER_MULTIPROCESSOR
    int maxBlockDim[3] = {0, 0, 0};        ///< MAX_BLOCK_DIM_X, _Y, _Z
    int maxGridDim[3] = {0, 0, 0};         ///< MAX_GRID_DIM_X, _Y, _Z
    int warpSize = 0;                      ///< WARP_SIZE
    int registersPerBlock = 0;             ///< MAX_REGISTERS_PER_BLOCK
    int registersPerMultiprocessor = 0;    ///< MAX_REGISTERS_PER_MULTIPROCESSOR
    int sharedMemoryPerBlock = 0;          ///< MAX_SHARED_MEMORY_PER_BLOCK
    int sharedMemoryPerBlockOptin = 0;     ///< MAX_SHARED_MEMORY_PER_BLOCK_OPTIN (Function::setMaxDynamicSharedMemory)
    int sharedMemoryPerMultiprocessor = 0; ///< MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
    int l2CacheSize = 0;                   ///< L2_CACHE_SIZE
    int memoryBusWidth = 0;                ///< bits
    int memoryClockRate = 0;               ///< kHz (peak)
    int clockRate = 0;                     ///< kHz (typical)
    int computeMode = 0;                   ///< CUcomputemode: 0 default, 2 prohibited, 3 exclusive process
    int asyncEngines = 0;                  ///< ASYNC_ENGINE_COUNT: copies that can overlap kernels
    bool unifiedAddressing = false;        ///< UNIFIED_ADDRESSING
    bool managedMemory = false;            ///< MANAGED_MEMORY
    bool concurrentKernels = false;        ///< CONCURRENT_KERNELS
    bool cooperativeLaunch = false;        ///< COOPERATIVE_LAUNCH (LaunchConfig::cooperative)
    bool eccEnabled = false;               ///< ECC_ENABLED
    bool integrated = false;               ///< INTEGRATED: shares memory with the host
    bool canMapHostMemory = false;         ///< CAN_MAP_HOST_MEMORY
    bool memoryPools = false;              ///< MEMORY_POOLS_SUPPORTED

    /// "default", "prohibited", "exclusive-process" (or "unknown").
    std::string computeModeName() const;
};

} // namespace cuctx

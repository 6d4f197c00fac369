// SPDX-License-Identifier: MIT
#pragma once

// cuctx::DeviceProperties: a snapshot of what a backend asks a device. A value type.

#include "cuctx/export.hpp"
#include <cstddef>
#include <string>

namespace cuctx {

/// Read in one go by Device::properties(); sizes in bytes, clocks in kHz.
struct CUCTX_API DeviceProperties {
    int ordinal = 0;
    std::string name;
    std::string uuid;     ///< "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it
    std::string pciBusId; ///< "0000:19:00.0" (domain:bus:device.function)
    int computeCapabilityMajor = 0;
    int computeCapabilityMinor = 0;
    std::size_t totalMemory = 0;
    int multiprocessors = 0;
    int maxThreadsPerBlock = 0;
    int maxThreadsPerMultiprocessor = 0;
    int maxBlockDim[3] = {0, 0, 0};
    int maxGridDim[3] = {0, 0, 0};
    int warpSize = 0;
    int registersPerBlock = 0;
    int registersPerMultiprocessor = 0;
    int sharedMemoryPerBlock = 0;
    int sharedMemoryPerBlockOptin = 0;
    int sharedMemoryPerMultiprocessor = 0;
    int l2CacheSize = 0;
    int memoryBusWidth = 0;  ///< bits
    int memoryClockRate = 0; ///< kHz (peak)
    int clockRate = 0;       ///< kHz (typical)
    int computeMode = 0;     ///< CUcomputemode: 0 default, 2 prohibited, 3 exclusive process
    int asyncEngines = 0;
    bool unifiedAddressing = false;
    bool managedMemory = false;
    bool concurrentKernels = false;
    bool cooperativeLaunch = false;
    bool eccEnabled = false;
    bool integrated = false;
    bool canMapHostMemory = false;
    bool memoryPools = false;

    /// "default", "prohibited", "exclusive-process" (or "unknown").
    std::string computeModeName() const;
};

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::deviceModes(): how each device is shared and kept: MPS, MIG, persistence, compute mode.

#include "cuctx/export.hpp"

#include <optional>
#include <string>
#include <vector>

namespace cuctx {

/// The MPS server's limit of client contexts per device (Volta and newer; 48 before).
inline constexpr int kMpsClientContextLimit = 60;

/// How one device is shared and kept, from the driver and, where it is there, NVML.
///
/// \par Threading
/// Thread-compatible value type.
struct DeviceMode {
    int ordinal = 0;     ///< the device as this process numbers it
    int computeMode = 0; ///< CUcomputemode: 0 Default, 2 Prohibited, 3 Exclusive Process
    /// Contexts made here are clients of an MPS server (CU_DEVICE_ATTRIBUTE_MPS_ENABLED).
    bool mps = false;
    /// What only NVML knows: absent where NVML is unavailable or the device does not say.
    std::optional<int> mpsClients;   ///< MPS client processes now (nvmlDeviceGetMPSComputeRunningProcesses)
    std::optional<bool> persistence; ///< persistence mode (nvmlDeviceGetPersistenceMode)
    std::optional<bool> mig;         ///< the GPU is partitioned (nvmlDeviceGetMigMode); CUDA then shows one instance
    std::optional<int> migInstances; ///< MIG instances on the GPU that holds this device
    /// NVML was loaded and knows this device: false where nvmlProblem says why NVML said nothing.
    bool nvmlAnswered = false;
    /// Why NVML could not say, empty when it could: NVML unavailable, the device unknown to it, or each
    /// query that failed otherwise than "not supported" ("CALL failed with NAME (N): TEXT", NVML's error's
    /// name, number and text), "; " between them.
    std::string nvmlProblem;
};

/// Every visible device's mode, in ordinal order. Creates no context. Never fails for NVML: its
/// part is left empty (nvmlProblem says why, unless the device does not support the query). Throws Error for the
/// driver's load errors.
///
/// Thread-safe.
CUCTX_API std::vector<DeviceMode> deviceModes();

} // namespace cuctx

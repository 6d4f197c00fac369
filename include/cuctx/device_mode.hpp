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

/// Why NVML could not give each part of one device's mode: empty where it could or where the device does
/// not support the query; "CALL failed with NAME (N): TEXT" where NVML refused a call (NVML's error's name,
/// number and text; ": TEXT" left out where NVML has none).
///
/// \par Threading
/// Thread-compatible value type.
struct NvmlModeProblems {
    /// NVML unavailable, or no handle for the device ("NVML does not know GPU-...", or the lookup that
    /// failed); the fields below are then empty.
    std::string device;
    std::string persistence;  ///< nvmlDeviceGetPersistenceMode
    std::string mig;          ///< nvmlDeviceGetMigMode
    std::string migInstances; ///< counting the MIG instances (nvmlDeviceGetMaxMigDeviceCount and the lookups)
    std::string mpsClients;   ///< listing the MPS clients

    /// Why `field` (one of the members above) is not known: the device's problem where it has one.
    const std::string& about(const std::string& field) const { return device.empty() ? field : device; }
};

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
    /// Why NVML could not say, empty when it could: nvmlProblems' non-empty members, "; " between them.
    std::string nvmlProblem;
    /// Why NVML could not say each part, apart.
    NvmlModeProblems nvmlProblems;
};

/// Every visible device's mode, in ordinal order. Creates no context. Never fails for NVML: its
/// part is left empty (nvmlProblem says why, unless the device does not support the query). Throws Error for the
/// driver's load errors.
///
/// Thread-safe.
CUCTX_API std::vector<DeviceMode> deviceModes();

} // namespace cuctx

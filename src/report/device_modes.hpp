// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// cuctx::deviceModes() with each NVML field's problem apart, for doctor, which notes each check's own.

#include "cuctx/device_mode.hpp"

#include <string>
#include <vector>

namespace cuctx::detail {

/// Why NVML could not say each part of one device's mode, empty where it could or the device does not
/// support the query. `device`: NVML unavailable, or the device's handle not had (then the others are
/// empty). DeviceMode::nvmlProblem joins them.
struct ModeProblems {
    std::string device;
    std::string persistence;
    std::string mig;          ///< nvmlDeviceGetMigMode
    std::string migInstances; ///< nvmlDeviceGetMaxMigDeviceCount
    std::string mpsClients;

    /// Why `field` (one of the above) is not known: the device's problem where it has one.
    const std::string& about(const std::string& field) const { return device.empty() ? field : device; }
};

struct ModesReport {
    std::vector<DeviceMode> modes;      ///< what deviceModes() returns
    std::vector<ModeProblems> problems; ///< one for each of `modes`
    bool nvmlLoaded = false;            ///< NVML loaded and initialised (it may still know no device)
    std::string nvmlHint;               ///< what to do where it did not load or initialise
};

/// deviceModes() and each field's problem. Throws as deviceModes() does.
ModesReport deviceModesReport();

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// cuctx::deviceModes() with whether NVML loaded and what to do where it did not, for doctor.

#include "cuctx/device_mode.hpp"

#include <string>
#include <vector>

namespace cuctx::detail {

struct ModesReport {
    std::vector<DeviceMode> modes; ///< what deviceModes() returns
    bool nvmlLoaded = false;       ///< NVML loaded and initialised (it may still know no device)
    std::string nvmlHint;          ///< what to do where it did not load or initialise
};

/// deviceModes(), and whether NVML loaded. Throws as deviceModes() does.
ModesReport deviceModesReport();

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#pragma once

// cuctx-inspect's exit statuses, documented in docs/cuctx-inspect.md and in --help.

#include "cuctx/error.hpp"

namespace cuctx::tools {

enum ExitCode : int {
    exitOk = 0,
    exitInternal = 1,        ///< an unexpected failure inside the tool
    exitUsage = 2,           ///< bad command line
    exitNoDriver = 3,        ///< libcuda.so.1 could not be loaded
    exitStubDriver = 4,      ///< the toolkit's stub libcuda was loaded
    exitNoDevice = 5,        ///< a driver, but no usable device
    exitDriverTooOld = 6,    ///< the driver lacks entry points cuctx needs
    exitForked = 7,          ///< forked after CUDA was initialised
    exitDriverError = 8,     ///< a driver call failed while inspecting
    exitModuleError = 9,     ///< `module FILE`: the file is missing or not an image, or it did not load
    exitDoctorWarnings = 10, ///< `doctor`: warnings, no errors
    exitDoctorErrors = 11,   ///< `doctor`: at least one error
    exitNoResources = 12,    ///< `bench`: the system refused a thread the measurement needs
    exitNoNvml = 13,         ///< `processes`: NVML (libnvidia-ml.so.1) could not be loaded or initialised
};

/// The exit status and the JSON "status" word for a load failure.
struct Outcome {
    ExitCode code;
    const char* status;
    const char* label; ///< for the one-line human message
};

inline Outcome outcomeFor(Errc condition)
{
    switch (condition) {
    case Errc::driver_not_found: return {exitNoDriver, "no_driver", "no CUDA driver"};
    case Errc::stub_driver: return {exitStubDriver, "stub_driver", "stub CUDA driver"};
    case Errc::no_device: return {exitNoDevice, "no_device", "no CUDA device"};
    case Errc::driver_too_old: return {exitDriverTooOld, "driver_too_old", "CUDA driver too old"};
    case Errc::forked_after_init: return {exitForked, "forked_after_init", "forked after CUDA init"};
    case Errc::nvml_unavailable: return {exitNoNvml, "nvml_unavailable", "NVML unavailable"};
    case Errc::invalid_argument: return {exitUsage, "usage_error", "bad argument"}; // --device 9 of 2, say
    default: return {exitDriverError, "driver_error", "CUDA driver error"};
    }
}

} // namespace cuctx::tools

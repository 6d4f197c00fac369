// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::Driver: the runtime-loaded CUDA driver.

#include "cuctx/export.hpp"
#include <string>

namespace cuctx {

enum class Errc;

/// The CUDA driver as cuctx loads it: `dlopen("libcuda.so.1")` at run time, so programs that use
/// cuctx start (and can say what is missing) on machines without a GPU or driver. Loading happens
/// once, on the first call that needs the driver or on load(); a failed load is remembered and
/// reported again, until setLibraryPath() names another library. Only static functions.
///
/// \par Threading
/// Thread-safe: the first call to need the driver loads it, once, whichever thread makes it; the
/// others wait for it. Call setLibraryPath() before any thread uses the driver: racing a first load,
/// it either comes first or, once a driver is loaded from another path, is refused.
class CUCTX_API Driver {
public:
    /// Where loading looks, or looked: the path given to setLibraryPath(), else $CUCTX_DRIVER_PATH,
    /// else "libcuda.so.1" (found by the dynamic loader's usual search).
    static std::string libraryPath();

    /// Loads the driver from `path` instead. Allowed before loading and after a failed load (which
    /// is then forgotten); once a driver is loaded, a different path is an Errc::invalid_state error.
    static void setLibraryPath(std::string path);

    /// Loads the driver and initialises it (cuInit). Throws Error: Errc::driver_not_found,
    /// stub_driver, no_device, driver_too_old, forked_after_init, or driver_error.
    static void load();

    /// Whether the driver is loaded and sees at least one device. Loads it if needed; never throws.
    static bool available() noexcept;

    /// The CUDA version the driver supports (cuDriverGetVersion, 13000 for 13.0). Loads the driver.
    static int version();

    /// The CUDA version of the headers cuctx was built with (CUDA_VERSION).
    static int headerVersion() noexcept;

    /// Where a load stands, for tools that report instead of throwing. A value type.
    struct Status {
        bool loaded = false;       ///< a driver is loaded and initialised with a device
        Errc condition{};          ///< why not, when !loaded
        int result = 0;            ///< the CUresult behind it, if any
        std::string message;       ///< the full error message, when !loaded
        std::string requestedPath; ///< what was asked for (libraryPath())
        std::string resolvedPath;  ///< the file the dynamic loader opened, when one was opened
        int driverVersion = 0;     ///< cuDriverGetVersion, when the library answered it
    };
    /// Loads the driver if nobody has tried yet, and says how it went. Never throws.
    static Status status() noexcept;
};

} // namespace cuctx

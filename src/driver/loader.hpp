// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// Opening one driver library and resolving its table. Stateless: the process-wide driver in
// driver.cpp calls it once, and tests call it directly for each failure mode.

#include "cuctx/error.hpp"
#include "driver/driver_api.hpp"

#include <memory>
#include <optional>
#include <string>

namespace cuctx::detail {

/// An opened and initialised driver library. Closing it (the destructor) is only safe when nothing
/// calls through `api` any more: the process-wide driver is therefore never closed.
class LoadedDriver {
public:
    LoadedDriver(void* handle, std::string resolvedPath) noexcept;
    ~LoadedDriver();
    LoadedDriver(const LoadedDriver&) = delete;
    LoadedDriver& operator=(const LoadedDriver&) = delete;

    DriverApi api;
    int version = 0;          ///< cuDriverGetVersion
    std::string resolvedPath; ///< the file the dynamic loader opened

    /// Keeps the library mapped for the life of the process (used by the process-wide driver).
    void leak() noexcept { handle_ = nullptr; }

private:
    void* handle_;
};

/// How an attempt went: a driver, or an error with what was learnt on the way.
struct LoadAttempt {
    std::unique_ptr<LoadedDriver> driver;
    std::optional<Error> error;
    std::string resolvedPath;
    int driverVersion = 0;
};

/// dlopen(path) with RTLD_NOW | RTLD_LOCAL, cuGetProcAddress_v2 for every entry at its pinned
/// version, cuDriverGetVersion and cuInit(0). Each failure mode has its own Errc.
LoadAttempt loadDriver(const std::string& path);

} // namespace cuctx::detail

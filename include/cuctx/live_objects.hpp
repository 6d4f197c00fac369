// SPDX-License-Identifier: MIT
#pragma once

// cuctx::liveObjects: how many driver objects cuctx has made and not yet destroyed, in this process.
// For leak checks (cuctx-stress, a backend's own tests) and diagnostics. Thread-safe.

#include "cuctx/export.hpp"

namespace cuctx {

struct LiveObjects {
    long contexts = 0; ///< created, retained primary and green contexts not yet destroyed or released
    long modules = 0;  ///< loaded modules not yet unloaded (module cache included)
    long streams = 0;
    long events = 0;
    long buffers = 0; ///< DeviceBuffer allocations
    bool operator==(const LiveObjects&) const = default;
};

CUCTX_API LiveObjects liveObjects() noexcept;

} // namespace cuctx

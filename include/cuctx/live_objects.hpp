// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::liveObjects: how many driver objects cuctx has made and not yet destroyed, in this process.
/// For leak checks (cuctx-stress, a backend's own tests) and diagnostics.

#include "cuctx/export.hpp"

namespace cuctx {

/// Counts of the driver objects cuctx has made and not yet destroyed.
///
/// \par Threading
/// Thread-compatible value type.
struct LiveObjects {
    /// Contexts cuctx holds: created, retained primary and green ones not yet destroyed or released,
    /// and borrowed ones (Context::borrow) while a handle to them lives (cuctx forgets them when the
    /// last goes, and never destroys them).
    long contexts = 0;
    long modules = 0; ///< loaded modules not yet unloaded (module cache included)
    long streams = 0; ///< Stream objects' streams
    long events = 0;  ///< Event objects' events
    long buffers = 0; ///< DeviceBuffer allocations
    /// Whether every count is equal.
    bool operator==(const LiveObjects&) const = default;
};

/// The counts now. Thread-safe; each count is read on its own, so while other threads make and
/// destroy objects the counts may come from slightly different moments.
CUCTX_API LiveObjects liveObjects() noexcept;

} // namespace cuctx

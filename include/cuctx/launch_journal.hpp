// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// The launch journal: per context, the last 32 launches cuctx::launch made, named as suspects when
/// a sticky fault surfaces (docs/faults.md). On by default; CUCTX_LAUNCH_JOURNAL=0 turns it off.

#include "cuctx/context.hpp"
#include "cuctx/export.hpp"

#include <string>
#include <vector>

namespace cuctx {

/// Turns the journal on or off for the whole process (launches made while off are not recorded).
/// Thread-safe.
CUCTX_API void setLaunchJournal(bool on) noexcept;
/// Whether cuctx::launch journals. Thread-safe.
CUCTX_API bool launchJournalEnabled() noexcept;

/// The journalled launches of `context`, oldest first, one line each ("launch 3 of context 2 on
/// device 0: kernel 'scale' of 'kernels.ptx', grid (1, 1, 1), block (32, 1, 1), stream 0x..., thread
/// 1234, at app.cpp:42"); with `pendingOnly`, only those no successful Stream::synchronize or
/// Context::synchronize has retired since. Thread-safe; a launch racing the call may be left out.
CUCTX_API std::vector<std::string> recentLaunches(const Context& context, bool pendingOnly = false);

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The context registry as cuctx::processReport shows it: report structs built from the context
// layer's state, so that the context layer knows nothing of reports.

#include "cuctx/process_report.hpp"

#include <vector>

namespace cuctx::detail {

/// Every live context and every thread that has one entered, read under the registry mutex (so
/// that no context is freed meanwhile) for cuctx::processReport. Thread names are left empty. With
/// `tryOnly` (a forked child, where a thread of the parent may have held the mutex at the fork) it
/// gives up rather than wait, and returns false.
bool snapshotRegistry(std::vector<ContextSnapshot>& contexts, std::vector<ThreadSnapshot>& threads, bool tryOnly);

} // namespace cuctx::detail

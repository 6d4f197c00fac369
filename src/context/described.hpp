// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// A context's description as a log argument, made only when the line is written (log/log.hpp's Lazy).

#include "context/context_state.hpp"
#include "log/log.hpp"

namespace cuctx::detail {

/// describeContext(state) when the log line that takes it is written; `state` must outlive the call.
inline auto described(const ContextState& state) noexcept
{
    return Lazy{[&state] { return describeContext(state); }};
}

} // namespace cuctx::detail

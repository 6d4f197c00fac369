// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// How cuctx's own code reaches the state behind a Context handle.

#include "check/check.hpp"
#include "context/context_state.hpp"
#include "cuctx/context.hpp"

#include <utility>

namespace cuctx::detail {

class ContextAccess {
public:
    static ContextState* state(const Context& context) noexcept { return context.state_; }
    /// A handle that takes over one count of `state->handles`.
    static Context fromCountedState(ContextState* state) noexcept { return Context(state); }
    /// Empties `context` without dropping the count it stands for (the inverse of fromCountedState).
    static ContextState* release(Context& context) noexcept { return std::exchange(context.state_, nullptr); }
};

/// The state of a non-empty handle, after reporting any error recorded on it; Errc::invalid_argument
/// for an empty handle. `call` names the cuctx function, for the message.
ContextState& checkedState(const Context& context, const char* call);
/// checkedState without reporting an error recorded on the context: for what enters it (a push, an
/// adoption), which, like a guard, leaves that error to the context's next fallible call, so that one
/// thread's misuse recorded there does not stop another thread from entering the context.
ContextState& stateToEnter(const Context& context, const char* call);

/// A Subject for error messages about `state`.
inline Subject subjectOf(const ContextState& state) noexcept
{
    return Subject{.device = state.ordinal, .contextId = state.id, .context = state.handle};
}

} // namespace cuctx::detail

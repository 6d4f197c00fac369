// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The push and pop that guards, ContextStack and adoptions share: each keeps cuctx's frames and the
// driver's stack in step, counts the use on the thread's slot, and checks what the driver pops.

#include "context/thread_state.hpp"

#include <optional>
#include <string>

namespace cuctx::detail {

/// Pushes `state`'s context on the driver's stack and makes `frame` the top (frame->kind says what it
/// is; a push or adoption also takes a handle, while a guard's use count is enough to keep the context
/// alive). Leaves nothing behind if the push fails.
void pushFrame(ThreadState& ts, ContextState* state, Frame& frame);

/// Pops `frame` from the driver and the record, checks that the driver popped that context, repairs
/// and records a mismatch on the context, and ends the use. A frame that is not the top (something
/// pushed later is still above it) is unlinked without touching the driver, and recorded as misuse.
/// Returns the handle the frame kept (empty for a guard). Never throws: `who` names the caller.
Context popFrame(ThreadState& ts, Frame& frame, const char* who) noexcept;

/// The rest of a pop of the top `frame` whose driver call failed (`r`) or popped another context
/// (`popped`): repairs the driver's stack as far as it can, records the mismatch on the context and
/// ends the use.
Context finishFailedPop(ThreadState& ts, Frame& frame, CUresult r, CUcontext popped, const char* who) noexcept;

/// Compares cuctx's record with cuCtxGetCurrent; on a difference, the text that shows both.
std::optional<std::string> describeDrift(ThreadState& ts, CUcontext* actual = nullptr);

/// Throws Errc::stack_mismatch if the driver's current context is not the recorded one.
void verifyStack(ThreadState& ts, const char* who);

/// "guard", "push" or "adopted".
const char* kindName(FrameKind kind) noexcept;

/// "context 3 on device 0" for a handle cuctx made, else the raw handle with its driver id.
std::string describeHandle(CUcontext handle);

/// The frames, bottom first.
std::vector<const Frame*> framesBottomUp();

} // namespace cuctx::detail

#pragma once

// The push and pop that guards, ContextStack and adoptions share: each keeps cuctx's record and the
// driver's stack in step, counts the use on the thread's slot, and checks what the driver pops.

#include "context/thread_state.hpp"

#include <optional>
#include <string>

namespace cuctx::detail {

/// Pushes `state`'s context on the driver's stack and records the entry; a push or adoption also takes
/// a handle (a guard's use count is enough to keep the context alive). Leaves nothing behind if the
/// push fails.
const StackEntry& pushEntry(ThreadState& ts, ContextState* state, StackEntryKind kind);

/// Pops entry `index` (which must be the top) from the driver and the record, checks that the driver
/// popped that context, repairs and records a mismatch on the context, and ends the use. Returns the
/// handle the entry kept (empty for a guard). Never throws: `who` names the caller in what it records.
Context popEntry(ThreadState& ts, std::size_t index, const char* who) noexcept;

/// The rest of a pop whose driver call failed (`r`) or popped another context (`popped`) than the top
/// entry's: removes the entry, repairs the driver's stack as far as it can, records the mismatch on the
/// context and ends the use.
Context finishFailedPop(ThreadState& ts, CUresult r, CUcontext popped, const char* who) noexcept;

/// Compares cuctx's record with cuCtxGetCurrent; on a difference, the text that shows both.
std::optional<std::string> describeDrift(ThreadState& ts, CUcontext* actual = nullptr);

/// Throws Errc::stack_mismatch if the driver's current context is not the recorded one.
void verifyStack(ThreadState& ts, const char* who);

/// "guard", "push" or "adopted".
const char* kindName(StackEntryKind kind) noexcept;

/// "context 3 on device 0" for a handle cuctx made, else the raw handle with its driver id.
std::string describeHandle(CUcontext handle);

} // namespace cuctx::detail

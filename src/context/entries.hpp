// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The entries that guards (out of line), ContextStack and adoptions make and end: each keeps cuctx's
// record and the driver's stack in step, and checks what the driver pops.

#include "context/thread_state.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cuctx::detail {

/// Makes `state`'s context current on this thread: a new entry on top of the record, then the
/// driver's push. A push or adoption (`kind`) also takes a handle, while a guard's caller holds one.
/// A green context is claimed for the thread. Leaves nothing behind if it fails (Errc::invalid_state
/// with a full record, the driver's error if the push fails, Errc::context_busy for a green context
/// another thread has). Returns the entry.
RecordEntry* pushEntry(ThreadState& ts, ContextState* state, StackEntryKind kind, const char* who);
/// pushEntry's second half, for an entry `mine` already on top of this thread's record (written and
/// published: ContextGuard's inline path, whose push was diverted): the driver's push, the entry's
/// kind, the trace line. If the push fails, takes the entry back (takeBackEntry) and throws.
RecordEntry* pushRecorded(ThreadState& ts, ContextState* state, StackEntryKind kind, std::uint32_t mine);
/// Takes back this thread's top entry, of `state`, that never reached the driver (its push failed or
/// was never made): the depth below it, then what ending any use of `state` does with its leave flags.
/// While it stood the entry kept the context in use, so a thread that dropped the last handle or ended
/// the last use meanwhile left the context's destruction to this end.
void takeBackEntry(ContextState* state) noexcept;

/// Ends `entry` of `state` (this thread's or, by misuse, another's): pops it from the driver and the record if
/// it is this thread's top, checks that the driver popped its context, repairs and records a
/// mismatch on the context. An entry that is not the top (out of order) or another thread's is left
/// on its thread's driver stack and turned into a push there, and the misuse recorded on the context.
/// Returns the handle a push or adoption kept (empty for a guard). Never throws: `who` names the caller.
Context popEntry(ThreadState& ts, RecordEntry* entry, ContextState* state, const char* who) noexcept;
/// popEntry for a guard that its inline exit could not end: first, whether its entry is one that a
/// thread left when it exited (abandonedEntries) and that this thread's storage now holds; such an
/// entry is ended there, recording Errc::invalid_state, and this thread's stack is left alone.
Context endGuardEntry(ThreadState& ts, RecordEntry* entry, ContextState* state, const char* who) noexcept;

/// Called when this thread leaves `state` (leftFlaggedContext) while the context has a guard that
/// outlived its thread (ContextState::kAbandonedGuard): whether the entry just above this thread's
/// depth, of `state`, keeps a handle (a push, an adoption, a binding). No guard's inline exit ends
/// such an entry of its own thread, so the exit was that abandoned guard's, this thread reusing the
/// exited one's storage, and it popped this thread's entry. Then it is pushed back (record and driver
/// as they were), the guard's use ends, Errc::invalid_state is recorded on the context, and true is
/// returned. Never throws.
bool restoreEntryEndedByAbandonedGuard(ThreadState& ts, ContextState* state) noexcept;

/// The rest of a pop of this thread's top entry `k` whose driver call failed (`r`) or popped another
/// context (`popped`): repairs the driver's stack as far as it can, records the mismatch on the
/// context and ends the entry.
Context finishFailedPop(ThreadState& ts, std::uint32_t k, CUresult r, CUcontext popped, const char* who) noexcept;

/// Ends this thread's adoption (ContextStack::release, ~ContextBinding): Errc::invalid_state, naming
/// `who`, if there is none or entries lie above it. Returns the handle the adoption kept. Leaves an
/// error recorded on the context for its next fallible call: release() reports it, a binding's end
/// does not.
Context endAdoption(const char* who);

/// Compares cuctx's record with cuCtxGetCurrent; on a difference, the text that shows both.
std::optional<std::string> describeDrift(ThreadState& ts, CUcontext* actual = nullptr);

/// Throws Errc::stack_mismatch if the driver's current context is not the recorded one.
void verifyStack(ThreadState& ts, const char* who);

/// "guard", "push" or "adopted".
const char* kindName(StackEntryKind kind) noexcept;

/// "context 3 on device 0" for a handle cuctx made, else the raw handle with its driver id.
std::string describeHandle(CUcontext handle);

/// This thread's entries, bottom first.
std::vector<std::pair<ContextState*, StackEntryKind>> entriesBottomUp(const ThreadState& ts);

} // namespace cuctx::detail

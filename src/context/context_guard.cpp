// SPDX-License-Identifier: MIT
#include "cuctx/context_guard.hpp"

#include "check/check.hpp"
#include "context/asymmetric_fence.hpp"
#include "context/context_access.hpp"
#include "context/entries.hpp"
#include "context/thread_state.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"

namespace cuctx {

using detail::ContextState;
using detail::RecordEntry;
using detail::ThreadState;

namespace {

// The out-of-line entry of a non-empty handle's context.
RecordEntry* enterState(ContextState* state, bool verify)
{
    (void)detail::api("cuctx::ContextGuard"); // throws in a forked child
    ThreadState& ts = detail::threadState();
    if (verify)
        detail::verifyStack(ts, "cuctx::ContextGuard");
    if (const std::uint32_t depth = detail::recordDepth(); depth != 0 && detail::entryAt(depth) == state)
        return nullptr; // already on top
    // No throwSticky here: a guard never reports an error recorded on its context, on any path (the
    // inline ones cannot afford to look); the context's next fallible call does (docs/contexts.md).
    return detail::pushEntry(ts, state, detail::StackEntryKind::guard, "cuctx::ContextGuard");
}

} // namespace

RecordEntry* ContextGuard::enter(const Context& context, bool verify)
{
    // The header's inline paths did not apply: this context is not on top and the inline push may
    // not be used (the guard verifies, the handle is empty, the context is green, the thread is new
    // to cuctx, its record is full, or this is a forked child).
    ContextState* state = detail::ContextAccess::state(context);
    if (state == nullptr)
        (void)detail::checkedState(context, "cuctx::ContextGuard"); // throws: empty handle
    return enterState(state, verify);
}

namespace {

// Takes back the entry that the inline path made before its push. Through the depth, not the top: a
// child forked between the entry and the push (from a signal handler) has its entries hidden, the new
// one among them, and its top off the record. While it stood the entry kept the context in use: a
// thread that dropped the last handle meanwhile left the destruction to the end of this use (an
// orphaned context is entered inline through a handle that counts nothing, a Module::cached
// reference's), so this end looks at the flags as every other end does.
void takeBackEntry(ContextState* state) noexcept
{
    detail::setRecordDepth(detail::recordDepth() - 1);
    detail::lightFence(); // pairs with the heavy fence of a thread dropping the last handle
    if (state->leaveFlags.load(std::memory_order_relaxed) != 0)
        detail::leftFlaggedContext(state);
}

} // namespace

RecordEntry* ContextGuard::pushFailed(ContextState* state, CUresult result)
{
    if (result == detail::kDiverted) {
        // The inline path may not call the driver now: the slow one knows why, and enters anew. A
        // handle taken while the entry still keeps the context alive keeps it so until the slow
        // path's own entry; its release ends the context if that entry failed and nothing else uses
        // it.
        state->handles.fetch_add(1, std::memory_order_relaxed);
        const Context keep = detail::ContextAccess::fromCountedState(state);
        takeBackEntry(state);
        return enterState(state, false);
    }
    takeBackEntry(state);
    detail::throwDriverError(result, "cuCtxPushCurrent", detail::subjectOf(*state), SourceLocation::current());
}

void ContextGuard::popFailed(ContextState* state, RecordEntry* entry, CUresult result, CUcontext popped) noexcept
{
    if (result == detail::kDiverted) {
        leave(state, entry);
        return;
    }
    // The inline exit found the entry on top of this thread's record: the thread is registered.
    ThreadState& ts = *detail::t_threadState;
    const auto k = static_cast<std::uint32_t>(entry - detail::t_record.entries);
    if (entry->load(std::memory_order_relaxed) != state || ts.kindOf(k) != detail::StackEntryKind::guard) {
        // The top of this thread's record, where this guard's entry lay, is another context's entry or
        // one that keeps a handle (a push, an adoption: no live guard's own entry does): a guard whose
        // thread exited, ended where this thread reuses that storage. What the pop took (this thread's
        // context, or one that code outside cuctx pushed over it) goes back; then the guard ends as the
        // exited thread's.
        if (result == CUDA_SUCCESS && detail::api().cuCtxPushCurrent(popped) != CUDA_SUCCESS)
            detail::logError("cuctx::ContextGuard: could not push back this thread's context after ending a guard of "
                             "a thread that exited");
        (void)detail::endGuardEntry(ts, entry, state, "cuctx::ContextGuard");
        return;
    }
    (void)detail::finishFailedPop(ts, k, result, popped, "cuctx::ContextGuard");
}

void ContextGuard::leave(ContextState* state, RecordEntry* entry) noexcept
{
    ThreadState* ts = detail::t_threadState;
    if (ts == nullptr) { // a thread new to cuctx ends a guard made on another (misuse)
        try {
            ts = &detail::makeThreadState();
        } catch (...) {
            detail::logError("cuctx::ContextGuard: a guard ended on a thread cuctx could not register");
            return;
        }
    }
    (void)detail::endGuardEntry(*ts, entry, state, "cuctx::ContextGuard");
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
#include "cuctx/context_guard.hpp"

#include "check/check.hpp"
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

RecordEntry* ContextGuard::pushFailed(ContextState* state, CUresult result)
{
    // The inline path's entry is on top of the record. It stays there while the slow path does what
    // the inline path may not do now (diverted: a driver not yet loaded, a forked child, which
    // throws, or trace level), so that it keeps the context in use throughout: an orphaned context
    // is entered inline through a handle that counts nothing (a Module::cached reference's), and
    // nothing else keeps it alive.
    if (result == detail::kDiverted) {
        const std::uint32_t mine = detail::recordDepth();
        ThreadState* ts = nullptr;
        try {
            (void)detail::api("cuctx::ContextGuard"); // throws in a forked child
            ts = &detail::threadState();
            if (mine == 1)
                detail::learnBase(*ts); // what lies below cuctx's entries, as pushEntry reads it
        } catch (...) {
            detail::takeBackEntry(state);
            throw;
        }
        return detail::pushRecorded(*ts, state, detail::StackEntryKind::guard, mine); // takes it back if it fails
    }
    detail::takeBackEntry(state);
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

#include "cuctx/context_guard.hpp"

#include "context/context_access.hpp"
#include "context/stack_ops.hpp"
#include "context/thread_state.hpp"
#include "driver/check.hpp"
#include "driver/driver_state.hpp"
#include "log.hpp"

namespace cuctx {

using detail::ContextState;
using detail::ThreadState;

void ContextGuard::enter(const Context& context, bool verify)
{
    // The header's inline path found that this context is not cuctx's top entry here. The usual case
    // next: a plain context, a thread cuctx knows, a loaded driver: push it.
    ContextState* state = state_;
    ThreadState* ts = detail::t_threadState;
    const detail::DriverApi* d = detail::g_activeApi.load(std::memory_order_relaxed);
    if (!verify && state != nullptr && ts != nullptr && d != nullptr && !state->exclusive() &&
        !state->hasSticky.load(std::memory_order_relaxed)) [[likely]] {
        detail::Slot& slot = ts->slotFor(state);
        slot.uses.store(slot.uses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        const CUresult r = d->cuCtxPushCurrent(state->handle);
        if (r == CUDA_SUCCESS) [[likely]] {
            ts->entries.push_back(detail::StackEntry{state->handle, state, &slot, detail::StackEntryKind::guard, false});
            ts->refreshTop();
            thread_ = ts;
            uses_ = &slot.uses;
            entryIndex_ = static_cast<unsigned>(ts->entries.size() - 1);
            pushed_ = true;
            if (detail::logEnabled(LogLevel::trace)) [[unlikely]]
                detail::logTrace("thread {}: push {} (guard), depth {}", ts->tid, detail::describeContext(*state),
                                 ts->entries.size());
            return;
        }
        ThreadState::endUse(slot, state);
        detail::throwDriverError(r, "cuCtxPushCurrent", detail::subjectOf(*state), std::source_location::current());
    }
    enterSlow(context, verify);
}

void ContextGuard::enterSlow(const Context& context, bool verify)
{
    // An empty handle, a verifying guard, a green context, a recorded error, the thread's first
    // guard, or a forked child.
    ContextState* state = detail::ContextAccess::state(context);
    if (state == nullptr)
        (void)detail::checkedState(context, "cuctx::ContextGuard"); // throws: empty handle
    (void)detail::api(); // throws in a child forked after initialisation
    ThreadState& ts = detail::threadState();
    thread_ = &ts;
    if (verify)
        detail::verifyStack(ts, "cuctx::ContextGuard");
    if (!ts.entries.empty() && ts.entries.back().state == state) {
        uses_ = &ts.entries.back().slot->uses;
        uses_->store(uses_->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return;
    }
    detail::throwSticky(*state);
    const detail::StackEntry& entry = detail::pushEntry(ts, state, detail::StackEntryKind::guard);
    uses_ = &entry.slot->uses;
    entryIndex_ = static_cast<unsigned>(ts.entries.size() - 1);
    pushed_ = true;
}

void ContextGuard::leave() noexcept
{
    // The usual case first: this guard's entry is on top and the driver pops what it pushed.
    ThreadState& ts = *thread_;
    if (entryIndex_ + 1 == ts.entries.size()) [[likely]] {
        const detail::StackEntry top = ts.entries.back();
        CUcontext popped = nullptr;
        const CUresult r = detail::g_activeApi.load(std::memory_order_relaxed)->cuCtxPopCurrent(&popped);
        if (r == CUDA_SUCCESS && popped == top.handle) [[likely]] {
            ts.entries.pop_back();
            ts.refreshTop();
            if (detail::logEnabled(LogLevel::trace)) [[unlikely]]
                detail::logTrace("thread {}: pop {} (guard), depth {}", ts.tid, detail::describeContext(*state_),
                                 ts.entries.size());
            ThreadState::endUse(*top.slot, state_);
            return;
        }
        detail::finishFailedPop(ts, r, popped, "cuctx::ContextGuard");
        return;
    }
    detail::popEntry(ts, entryIndex_, "cuctx::ContextGuard");
}

} // namespace cuctx

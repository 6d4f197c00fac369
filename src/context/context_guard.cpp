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
    // The inline fast path did not apply: no cuctx entry of this context on top, a verifying guard,
    // an empty handle, or a forked child (whose atfork handler clears the thread's top).
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

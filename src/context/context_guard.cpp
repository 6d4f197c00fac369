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

ContextGuard::ContextGuard(const Context& context)
{
    enter(context, false);
}

ContextGuard::ContextGuard(const Context& context, VerifyCurrent)
{
    enter(context, true);
}

void ContextGuard::enter(const Context& context, bool verify)
{
    ContextState* state = detail::ContextAccess::state(context);
    ThreadState& ts = detail::threadState();
    thread_ = &ts;
    state_ = state;
    // The elided path still notices a fork: the child's atfork handler clears the driver table.
    if (!verify && state != nullptr && !ts.entries.empty() && ts.entries.back().state == state &&
        detail::g_activeApi.load(std::memory_order_relaxed) != nullptr) [[likely]] {
        // Already current through cuctx: count the use on this thread's own slot, nothing else.
        slot_ = ts.entries.back().slot;
        slot_->uses.store(slot_->uses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return;
    }
    if (state == nullptr)
        (void)detail::checkedState(context, "cuctx::ContextGuard"); // throws: empty handle
    (void)detail::api(); // throws in a child forked after initialisation
    if (verify)
        detail::verifyStack(ts, "cuctx::ContextGuard");
    if (!ts.entries.empty() && ts.entries.back().state == state) {
        slot_ = ts.entries.back().slot;
        slot_->uses.store(slot_->uses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return;
    }
    detail::throwSticky(*state);
    const detail::StackEntry& entry = detail::pushEntry(ts, state, detail::StackEntryKind::guard, {});
    slot_ = entry.slot;
    entryIndex_ = static_cast<unsigned>(ts.entries.size() - 1);
    pushed_ = true;
}

ContextGuard::~ContextGuard()
{
    if (!pushed_) [[likely]] {
        ThreadState::endUse(*slot_, state_);
        return;
    }
    detail::popEntry(*thread_, entryIndex_, "cuctx::ContextGuard");
}

} // namespace cuctx

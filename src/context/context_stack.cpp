#include "cuctx/context_stack.hpp"

#include "context/context_access.hpp"
#include "context/stack_ops.hpp"
#include "driver/check.hpp"

namespace cuctx {

using detail::StackEntryKind;
using detail::ThreadState;

void ContextStack::push(const Context& context)
{
    detail::ContextState& state = detail::checkedState(context, "cuctx::ContextStack::push");
    detail::pushEntry(detail::threadState(), &state, StackEntryKind::push);
}

Context ContextStack::pop()
{
    ThreadState& ts = detail::threadState();
    if (ts.entries.empty() || ts.entries.back().kind != StackEntryKind::push)
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::pop",
                           ts.entries.empty() ? "cuctx has pushed nothing on this thread's stack"
                                              : std::string("the top of this thread's stack is a ") +
                                                    detail::kindName(ts.entries.back().kind) +
                                                    ", which only its owner may remove",
                           "Pop only what ContextStack::push pushed, in reverse order");
    detail::ContextState& state = *ts.entries.back().state;
    Context owner = detail::popEntry(ts, ts.entries.size() - 1, "cuctx::ContextStack::pop");
    detail::throwSticky(state); // a pop that found someone else's context on top says so now
    return owner;
}

CUcontext ContextStack::current() noexcept
{
    ThreadState& ts = detail::threadState();
    if (ts.entries.empty() && !ts.baseKnown) {
        try {
            detail::learnBase(ts);
        } catch (...) {
            return nullptr; // no driver: nothing can be current
        }
    }
    return ts.current();
}

std::size_t ContextStack::depth() noexcept
{
    return detail::threadState().entries.size();
}

std::vector<ContextStack::Entry> ContextStack::snapshot()
{
    const ThreadState& ts = detail::threadState();
    std::vector<Entry> entries;
    entries.reserve(ts.entries.size());
    for (const detail::StackEntry& e : ts.entries)
        entries.push_back(Entry{e.handle, e.state->id, e.state->ordinal, detail::kindName(e.kind)});
    return entries;
}

void ContextStack::adopt(const Context& context)
{
    detail::ContextState& state = detail::checkedState(context, "cuctx::ContextStack::adopt");
    ThreadState& ts = detail::threadState();
    if (!ts.entries.empty() && ts.entries.front().kind == StackEntryKind::binding) {
        if (ts.entries.front().state == &state)
            return;
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::adopt",
                           "this thread has already adopted " + detail::describeContext(*ts.entries.front().state),
                           "Release it first (ContextStack::release)", detail::subjectOf(state));
    }
    if (!ts.entries.empty())
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::adopt",
                           "this thread has guards or pushes on its stack; an adoption must be the bottom entry",
                           "Adopt at the start of the worker, outside any guard", detail::subjectOf(state));
    detail::pushEntry(ts, &state, StackEntryKind::binding);
}

void ContextStack::release()
{
    ThreadState& ts = detail::threadState();
    if (ts.entries.empty() || ts.entries.front().kind != StackEntryKind::binding)
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::release", "this thread has adopted no context",
                           "Call release() only after adopt()");
    if (ts.entries.size() != 1)
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::release",
                           "guards or pushes are still above the adopted context",
                           "Release the adoption after they end");
    detail::ContextState& state = *ts.entries.front().state;
    Context owner = detail::popEntry(ts, 0, "cuctx::ContextStack::release");
    detail::throwSticky(state);
}

Context ContextStack::adopted()
{
    const ThreadState& ts = detail::threadState();
    if (!ts.entries.empty() && ts.entries.front().kind == StackEntryKind::binding) {
        detail::ContextState* state = ts.entries.front().state;
        state->handles.fetch_add(1, std::memory_order_relaxed); // the adoption holds one
        return detail::ContextAccess::adopt(state);
    }
    return {};
}

std::optional<ContextStack::Drift> ContextStack::drift()
{
    ThreadState& ts = detail::threadState();
    CUcontext actual = nullptr;
    auto text = detail::describeDrift(ts, &actual);
    if (!text)
        return std::nullopt;
    return Drift{ts.current(), actual, std::move(*text)};
}

void ContextStack::verify()
{
    detail::verifyStack(detail::threadState(), "cuctx::ContextStack::verify");
}

void ContextStack::resync()
{
    ThreadState& ts = detail::threadState();
    if (!ts.entries.empty())
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::resync",
                           "cuctx has entries on this thread's stack; resync only accepts a new base below none",
                           "End the guards, pushes and adoption first");
    detail::learnBase(ts);
}

} // namespace cuctx

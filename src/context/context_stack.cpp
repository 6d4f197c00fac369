// SPDX-License-Identifier: MIT
#include "cuctx/context_stack.hpp"

#include "check/check.hpp"
#include "context/context_access.hpp"
#include "context/entries.hpp"
#include "driver/driver_state.hpp"

namespace cuctx {

using detail::StackEntryKind;
using detail::ThreadState;

namespace {

// Whether this thread's entry 1 is an adoption (ts may be null: a thread new to cuctx has none).
bool hasAdoption(const ThreadState* ts) noexcept
{
    return ts != nullptr && detail::recordDepth() >= 1 && ts->kindOf(1) == StackEntryKind::adopted;
}

} // namespace

void ContextStack::push(const Context& context)
{
    detail::ContextState& state = detail::stateToEnter(context, "cuctx::ContextStack::push");
    (void)detail::pushEntry(detail::threadState(), &state, StackEntryKind::push, "cuctx::ContextStack::push");
}

Context ContextStack::pop()
{
    ThreadState& ts = detail::threadState();
    const std::uint32_t depth = detail::recordDepth();
    if (depth == 0 || ts.kindOf(depth) != StackEntryKind::push)
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::pop",
                           depth == 0 ? "cuctx has pushed nothing on this thread's stack"
                                      : std::string("the top of this thread's stack is a ") +
                                            detail::kindName(ts.kindOf(depth)) + ", which only its owner may remove",
                           "Pop only what ContextStack::push pushed, in reverse order");
    detail::ContextState& state = *detail::entryAt(depth);
    Context owner = detail::popEntry(ts, &detail::t_record.entries[depth], &state, "cuctx::ContextStack::pop");
    detail::throwSticky(state); // a pop that found someone else's context on top says so now
    return owner;
}

CUcontext ContextStack::current() noexcept
{
    ThreadState* ts = detail::t_threadState;
    if (ts == nullptr || detail::recordDepth() == 0) { // the driver's current context, whoever set it
        try {
            ts = &detail::threadState();
            detail::learnBase(*ts);
        } catch (...) {
            return nullptr; // no driver: nothing can be current
        }
    }
    return ts->current();
}

std::size_t ContextStack::depth() noexcept
{
    return detail::t_threadState != nullptr ? detail::recordDepth() : 0;
}

std::vector<ContextStack::Entry> ContextStack::snapshot()
{
    std::vector<Entry> entries;
    if (const ThreadState* ts = detail::t_threadState)
        for (const auto& [state, kind] : detail::entriesBottomUp(*ts))
            entries.push_back(Entry{state->handle, state->id, state->ordinal, detail::kindName(kind)});
    return entries;
}

void ContextStack::adopt(const Context& context)
{
    detail::ContextState& state = detail::stateToEnter(context, "cuctx::ContextStack::adopt");
    ThreadState& ts = detail::threadState();
    if (hasAdoption(&ts)) {
        if (detail::entryAt(1) == &state)
            return;
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::adopt",
                           "this thread has already adopted " + detail::describeContext(*detail::entryAt(1)),
                           "Release it first (ContextStack::release)", detail::subjectOf(state));
    }
    if (detail::recordDepth() != 0)
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::adopt",
                           "this thread has guards or pushes on its stack; an adoption must be the bottom entry",
                           "Adopt at the start of the worker, outside any guard", detail::subjectOf(state));
    (void)detail::pushEntry(ts, &state, StackEntryKind::adopted, "cuctx::ContextStack::adopt");
}

Context detail::endAdoption(const char* who)
{
    ThreadState& ts = detail::threadState();
    if (!hasAdoption(&ts))
        detail::throwError(Errc::invalid_state, who, "this thread has adopted no context",
                           "Call release() only after adopt()");
    if (detail::recordDepth() != 1)
        detail::throwError(Errc::invalid_state, who, "guards or pushes are still above the adopted context",
                           "Release the adoption after they end");
    return detail::popEntry(ts, &detail::t_record.entries[1], detail::entryAt(1), who);
}

void ContextStack::release()
{
    const Context owner = detail::endAdoption("cuctx::ContextStack::release");
    detail::throwSticky(*detail::ContextAccess::state(owner));
}

Context ContextStack::adopted()
{
    if (hasAdoption(detail::t_threadState)) {
        detail::ContextState* state = detail::entryAt(1);
        state->handles.fetch_add(1, std::memory_order_relaxed); // the adoption holds one
        return detail::ContextAccess::fromCountedState(state);
    }
    return {};
}

std::optional<ContextStack::Drift> ContextStack::drift()
{
    (void)detail::api("cuctx::ContextStack::drift"); // in a forked child: says so, naming the call
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
    (void)detail::api("cuctx::ContextStack::resync"); // in a forked child: says so, naming the call
    ThreadState& ts = detail::threadState();
    if (detail::recordDepth() != 0)
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::resync",
                           "cuctx has entries on this thread's stack; resync only accepts a new base below none",
                           "End the guards, pushes and adoption first");
    detail::learnBase(ts);
}

} // namespace cuctx

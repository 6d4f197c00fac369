// SPDX-License-Identifier: MIT
#include "cuctx/context_stack.hpp"

#include "check/check.hpp"
#include "context/context_access.hpp"
#include "context/frames.hpp"
#include "driver/driver_state.hpp"

namespace cuctx {

using detail::Frame;
using detail::FrameKind;
using detail::ThreadState;

namespace {

const Frame* bottomFrame() noexcept
{
    const Frame* f = detail::topFrame();
    while (f != nullptr && detail::frameBelow(*f) != nullptr)
        f = detail::frameBelow(*f);
    return f;
}

// Pushes a heap frame of `kind` for `state`; frees it if the push fails.
void pushHeapFrame(ThreadState& ts, detail::ContextState& state, FrameKind kind)
{
    auto* frame = new Frame{};
    frame->kind = kind;
    try {
        detail::pushFrame(ts, &state, *frame);
    } catch (...) {
        delete frame;
        throw;
    }
}

} // namespace

void ContextStack::push(const Context& context)
{
    detail::ContextState& state = detail::checkedState(context, "cuctx::ContextStack::push");
    pushHeapFrame(detail::threadState(), state, FrameKind::push);
}

Context ContextStack::pop()
{
    ThreadState& ts = detail::threadState();
    Frame* top = detail::topFrame();
    if (top == nullptr || top->kind != FrameKind::push)
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::pop",
                           top == nullptr ? "cuctx has pushed nothing on this thread's stack"
                                          : std::string("the top of this thread's stack is a ") +
                                                detail::kindName(top->kind) + ", which only its owner may remove",
                           "Pop only what ContextStack::push pushed, in reverse order");
    detail::ContextState& state = *top->state;
    Context owner = detail::popFrame(ts, *top, "cuctx::ContextStack::pop");
    detail::throwSticky(state); // a pop that found someone else's context on top says so now
    return owner;
}

CUcontext ContextStack::current() noexcept
{
    ThreadState& ts = detail::threadState();
    if (detail::topFrame() == nullptr) { // the driver's current context, whoever set it
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
    std::size_t depth = 0;
    for (const Frame* f = detail::topFrame(); f != nullptr; f = detail::frameBelow(*f))
        ++depth;
    return depth;
}

std::vector<ContextStack::Entry> ContextStack::snapshot()
{
    std::vector<Entry> entries;
    for (const Frame* f : detail::framesBottomUp())
        entries.push_back(Entry{f->state->handle, f->state->id, f->state->ordinal, detail::kindName(f->kind)});
    return entries;
}

void ContextStack::adopt(const Context& context)
{
    detail::ContextState& state = detail::checkedState(context, "cuctx::ContextStack::adopt");
    ThreadState& ts = detail::threadState();
    if (const Frame* bottom = bottomFrame(); bottom != nullptr && bottom->kind == FrameKind::adopted) {
        if (bottom->state == &state)
            return;
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::adopt",
                           "this thread has already adopted " + detail::describeContext(*bottom->state),
                           "Release it first (ContextStack::release)", detail::subjectOf(state));
    }
    if (detail::topFrame() != nullptr)
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::adopt",
                           "this thread has guards or pushes on its stack; an adoption must be the bottom entry",
                           "Adopt at the start of the worker, outside any guard", detail::subjectOf(state));
    pushHeapFrame(ts, state, FrameKind::adopted);
}

void ContextStack::release()
{
    ThreadState& ts = detail::threadState();
    const Frame* bottom = bottomFrame();
    if (bottom == nullptr || bottom->kind != FrameKind::adopted)
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::release", "this thread has adopted no context",
                           "Call release() only after adopt()");
    Frame* top = detail::topFrame();
    if (top != bottom)
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::release",
                           "guards or pushes are still above the adopted context",
                           "Release the adoption after they end");
    detail::ContextState& state = *top->state;
    Context owner = detail::popFrame(ts, *top, "cuctx::ContextStack::release");
    detail::throwSticky(state);
}

Context ContextStack::adopted()
{
    if (const Frame* bottom = bottomFrame(); bottom != nullptr && bottom->kind == FrameKind::adopted) {
        bottom->state->handles.fetch_add(1, std::memory_order_relaxed); // the adoption holds one
        return detail::ContextAccess::fromCountedState(bottom->state);
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
    if (detail::topFrame() != nullptr)
        detail::throwError(Errc::invalid_state, "cuctx::ContextStack::resync",
                           "cuctx has entries on this thread's stack; resync only accepts a new base below none",
                           "End the guards, pushes and adoption first");
    detail::learnBase(ts);
}

} // namespace cuctx

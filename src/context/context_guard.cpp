#include "cuctx/context_guard.hpp"

#include "context/context_access.hpp"
#include "context/stack_ops.hpp"
#include "context/thread_state.hpp"
#include "driver/check.hpp"
#include "driver/driver_state.hpp"
#include "log.hpp"

#include <unistd.h>

namespace cuctx {

using detail::ContextState;
using detail::ThreadState;

namespace {

// The cold parts of the switching path, kept out of enter() and leave() so that those stay small
// (no spilled registers, no stack realignment): each is a call that only failures and tracing make.
[[gnu::noinline, gnu::cold]] void pushFailed(std::atomic<std::uint32_t>& uses, ContextState* state, CUresult r)
{
    ThreadState::endUse(uses, state);
    detail::throwDriverError(r, "cuCtxPushCurrent", detail::subjectOf(*state), std::source_location::current());
}

[[gnu::noinline, gnu::cold]] void traceGuard(const char* what, const ContextState* state, std::uint32_t depth) noexcept
{
    try {
        detail::logTrace("thread {}: {} {} (guard), depth {}", gettid(), what, detail::describeContext(*state), depth);
    } catch (...) {
    }
}

} // namespace

void ContextGuard::enter(const Context& context, bool verify)
{
    // The header's inline path found that this context is not cuctx's top entry here. The usual case
    // next, kept lean: a plain context, a thread cuctx knows, a loaded driver: push it.
    ContextState* state = frame_.state;
    ThreadState* ts = detail::t_threadState;
    const detail::DriverApi* d = detail::g_activeApi.load(std::memory_order_relaxed);
    if (!verify && state != nullptr && ts != nullptr && d != nullptr && !state->exclusive() &&
        !state->hasSticky.load(std::memory_order_relaxed)) [[likely]] {
        detail::Slot& slot = ts->slotFor(state);
        slot.uses.store(slot.uses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        const CUresult r = d->cuCtxPushCurrent(state->handle);
        if (r == CUDA_SUCCESS) [[likely]] {
            detail::Frame* below = detail::t_top.frame;
            frame_.uses = &slot.uses;
            frame_.below = below;
            frame_.depth = below != nullptr ? below->depth + 1 : 1;
            detail::t_top = detail::ThreadTop{state, &slot.uses, &frame_};
            pushed_ = true;
            if (detail::logEnabled(LogLevel::trace)) [[unlikely]]
                traceGuard("push", state, frame_.depth);
            return;
        }
        pushFailed(slot.uses, state, r);
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
    if (verify)
        detail::verifyStack(ts, "cuctx::ContextGuard");
    if (detail::t_top.state == state) {
        frame_.uses = detail::t_top.uses;
        frame_.uses->store(frame_.uses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return;
    }
    detail::throwSticky(*state);
    frame_.kind = detail::FrameKind::guard;
    detail::pushFrame(ts, state, frame_);
    pushed_ = true;
}

void ContextGuard::leave() noexcept
{
    // The usual case first: this guard's frame is on top and the driver pops what it pushed.
    if (detail::t_top.frame == &frame_) [[likely]] {
        CUcontext popped = nullptr;
        const CUresult r = detail::g_activeApi.load(std::memory_order_relaxed)->cuCtxPopCurrent(&popped);
        if (r == CUDA_SUCCESS && popped == frame_.state->handle) [[likely]] {
            detail::setTop(frame_.below);
            if (detail::logEnabled(LogLevel::trace)) [[unlikely]]
                traceGuard("pop", frame_.state, frame_.depth - 1);
            ThreadState::endUse(*frame_.uses, frame_.state);
            return;
        }
        detail::finishFailedPop(detail::threadState(), frame_, r, popped, "cuctx::ContextGuard");
        return;
    }
    detail::popFrame(detail::threadState(), frame_, "cuctx::ContextGuard");
}

} // namespace cuctx

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

namespace detail {

void guardPushFailed(Frame& frame, CUresult result)
{
    ThreadState::endUse(*frame.uses, frame.state);
    throwDriverError(result, "cuCtxPushCurrent", subjectOf(*frame.state), std::source_location::current());
}

void guardPopFailed(Frame& frame, CUresult result, CUcontext popped) noexcept
{
    finishFailedPop(threadState(), frame, result, popped, "cuctx::ContextGuard");
}

} // namespace detail

void ContextGuard::enter(const Context& context, bool verify)
{
    // The header's inline paths did not apply: this context is not on top, nor the one this thread
    // switched to last; or the guard verifies, the handle is empty, the context is green, the thread
    // is new to cuctx, or this is a forked child.
    ContextState* state = detail::ContextAccess::state(context);
    if (state == nullptr)
        (void)detail::checkedState(context, "cuctx::ContextGuard"); // throws: empty handle
    (void)detail::api();                                          // throws in a forked child
    ThreadState& ts = detail::threadState();
    if (verify)
        detail::verifyStack(ts, "cuctx::ContextGuard");
    detail::ThreadTop& top = detail::t_top;
    if (top.state == state && top.frame != nullptr) {
        frame_.uses = top.frame->uses;
        frame_.uses->store(frame_.uses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        frame_.kind = detail::FrameKind::elided;
        return;
    }
    detail::throwSticky(*state);
    frame_.kind = detail::FrameKind::guard;
    detail::pushFrame(ts, state, frame_);
}

void ContextGuard::leave() noexcept
{
    detail::ThreadState& ts = detail::threadState();
    if (detail::t_top.frame == &frame_ && detail::g_pop.load(std::memory_order_relaxed) != nullptr) {
        CUcontext popped = nullptr;
        const CUresult r = detail::g_activeApi.load(std::memory_order_relaxed)->cuCtxPopCurrent(&popped);
        if (r != CUDA_SUCCESS || popped != frame_.state->handle) {
            detail::finishFailedPop(ts, frame_, r, popped, "cuctx::ContextGuard");
            return;
        }
        detail::setTop(frame_.below);
        ThreadState::endUse(*frame_.uses, frame_.state);
        return;
    }
    detail::popFrame(ts, frame_, "cuctx::ContextGuard"); // not on top (misuse), or a forked child
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
#include "cuctx/context_guard.hpp"

#include "check/check.hpp"
#include "context/context_access.hpp"
#include "context/frames.hpp"
#include "context/thread_state.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"

#include <unistd.h>

namespace cuctx {

using detail::ContextState;
using detail::ThreadState;

void ContextGuard::enter(const Context& context, bool verify)
{
    // The header's inline paths did not apply: this context is not on top, nor the one this thread
    // switched to last; or the guard verifies, the handle is empty, the context is green, the thread
    // is new to cuctx, or this is a forked child.
    ContextState* state = detail::ContextAccess::state(context);
    if (state == nullptr)
        (void)detail::checkedState(context, "cuctx::ContextGuard"); // throws: empty handle
    (void)detail::api("cuctx::ContextGuard");                       // throws in a forked child
    ThreadState& ts = detail::threadState();
    if (verify)
        detail::verifyStack(ts, "cuctx::ContextGuard");
    if (const detail::Frame* top = detail::topFrame(); top != nullptr && top->state == state) {
        enterElided(*top);
        return;
    }
    // No throwSticky here: a guard never reports an error recorded on its context, on any path (the
    // inline ones cannot afford to look); the context's next fallible call does (docs/contexts.md).
    frame_.kind = detail::FrameKind::guard;
    detail::pushFrame(ts, state, frame_);
}

void ContextGuard::pushFailed(const Context& context, CUresult result)
{
    ThreadState::endUse(*frame_.uses, frame_.state); // the inline path counted the use first
    if (result == detail::kDiverted) {
        enter(context, false); // the inline path may not call the driver now: the slow one knows why
        return;
    }
    detail::throwDriverError(result, "cuCtxPushCurrent", detail::subjectOf(*frame_.state), SourceLocation::current());
}

void ContextGuard::popFailed(CUresult result, CUcontext popped) noexcept
{
    if (result == detail::kDiverted) {
        leave();
        return;
    }
    detail::finishFailedPop(detail::threadState(), frame_, result, popped, "cuctx::ContextGuard");
}

void ContextGuard::leave() noexcept
{
    detail::popFrame(detail::threadState(), frame_, "cuctx::ContextGuard");
}

} // namespace cuctx

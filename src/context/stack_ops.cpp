#include "context/stack_ops.hpp"

#include "context/context_access.hpp"
#include "driver/check.hpp"
#include "driver/driver_state.hpp"
#include "log.hpp"

#include <cstdio>

namespace cuctx::detail {
namespace {

Error mismatchError(std::string who, std::string detail, std::string hint, const ContextState& state,
                    std::source_location where = std::source_location::current())
{
    ErrorInfo info;
    info.condition = Errc::stack_mismatch;
    info.call = std::move(who);
    info.object = describeContext(state);
    info.detail = std::move(detail);
    info.hint = std::move(hint);
    return Error(std::move(info), where);
}

} // namespace

const char* kindName(FrameKind kind) noexcept
{
    switch (kind) {
    case FrameKind::guard: return "guard";
    case FrameKind::push: return "push";
    case FrameKind::adopted: return "adopted";
    case FrameKind::elided: return "elided";
    }
    return "?";
}

std::string describeHandle(CUcontext handle)
{
    if (handle == nullptr)
        return "no context";
    if (auto known = describeLiveContext(handle))
        return *known;
    char text[64];
    unsigned long long id = 0;
    const DriverApi* d = g_activeApi.load(std::memory_order_acquire);
    if (d != nullptr && d->cuCtxGetId != nullptr && d->cuCtxGetId(handle, &id) == CUDA_SUCCESS)
        std::snprintf(text, sizeof text, "context %llu (handle %p, not cuctx's)", id, static_cast<void*>(handle));
    else
        std::snprintf(text, sizeof text, "context handle %p (not cuctx's)", static_cast<void*>(handle));
    return text;
}

std::vector<const Frame*> framesBottomUp()
{
    std::vector<const Frame*> frames;
    for (const Frame* f = topFrame(); f != nullptr; f = frameBelow(*f))
        frames.push_back(f);
    return {frames.rbegin(), frames.rend()};
}

void pushFrame(ThreadState& ts, ContextState* state, Frame& frame)
{
    Slot& slot = ts.slotFor(state);
    ts.beginUse(slot, state);
    const CUresult r = api().cuCtxPushCurrent(state->handle);
    if (r != CUDA_SUCCESS) [[unlikely]] {
        ThreadState::endUse(slot.uses, state);
        throwDriverError(r, "cuCtxPushCurrent", subjectOf(*state), std::source_location::current());
    }
    frame.state = state;
    frame.uses = &slot.uses;
    Frame* const below = topFrame();
    frame.below = below != nullptr ? below : &g_bottomFrame; // what the inline exit makes the top
    if (ownsHandle(frame))
        state->handles.fetch_add(1, std::memory_order_relaxed); // the caller holds one: not a revival
    setTop(&frame);
    if (!state->exclusive()) { // green contexts always take the slow path, which checks their owner
        ThreadTop& top = t_top;
        top.recentUses = &slot.uses;
        top.recentState.store(state, std::memory_order_relaxed);
    }
    if (logEnabled(LogLevel::trace)) [[unlikely]]
        logTrace("thread {}: push {} ({}), depth {}", ts.tid, describeContext(*state), kindName(frame.kind),
                 framesBottomUp().size());
}

namespace {

// Ends a frame's part in the record: its use, and the handle it kept (returned). Frees a heap frame.
Context retire(Frame& frame) noexcept
{
    ContextState* state = frame.state;
    const bool owned = ownsHandle(frame);
    std::atomic<std::uint32_t>* uses = frame.uses;
    if (frame.kind != FrameKind::guard)
        delete &frame;
    ThreadState::endUse(*uses, state);
    return owned ? ContextAccess::adopt(state) : Context{};
}

} // namespace

Context popFrame(ThreadState& ts, Frame& frame, const char* who) noexcept
{
    Frame* top = topFrame();
    if (top != &frame && top != nullptr) [[unlikely]] {
        // Something cuctx pushed later is still above this frame: leave the driver's stack alone.
        Frame* above = top;
        while (above != nullptr && above->below != &frame)
            above = frameBelow(*above);
        if (above != nullptr)
            above->below = frame.below;
        recordSticky(
            *frame.state,
            mismatchError(who,
                          std::string("it ends while ") + describeContext(*top->state) + " (a " + kindName(top->kind) +
                              " made after it) is still on top of this thread's stack; its own context "
                              "stays on the driver's stack below that",
                          "End what you push or adopt inside a guard's scope before the scope ends", *frame.state));
        (void)ts;
        return retire(frame);
    }
    const DriverApi* d = g_activeApi.load(std::memory_order_acquire);
    if (d == nullptr) [[unlikely]] {
        // A child forked after initialisation, unwinding a frame its parent made: the driver refuses
        // every call here, so only cuctx's record is undone (and guards keep taking the slow path,
        // which reports the fork).
        setTop(frame.below);
        return retire(frame);
    }
    CUcontext popped = nullptr;
    const CUresult r = d->cuCtxPopCurrent(&popped);
    if (r != CUDA_SUCCESS || popped != frame.state->handle) [[unlikely]]
        return finishFailedPop(ts, frame, r, popped, who);
    setTop(frame.below);
    if (logEnabled(LogLevel::trace)) [[unlikely]]
        logTrace("thread {}: pop {} ({}), depth {}", ts.tid, describeContext(*frame.state), kindName(frame.kind),
                 framesBottomUp().size());
    return retire(frame);
}

Context finishFailedPop(ThreadState& ts, Frame& frame, CUresult r, CUcontext popped, const char* who) noexcept
{
    setTop(frame.below);
    const CUcontext mine = frame.state->handle;
    const DriverApi& d = *g_activeApi.load(std::memory_order_acquire);
    try {
        std::string detail;
        if (r != CUDA_SUCCESS)
            detail = std::string("cuCtxPopCurrent failed with ") + std::string(resultName(r));
        else
            detail = "the driver popped " + describeHandle(popped) + " instead of the context it pushed";
        // Code inside the scope pushed another context and left it: then ours is still on top.
        CUcontext now = nullptr;
        if (r == CUDA_SUCCESS && d.cuCtxGetCurrent(&now) == CUDA_SUCCESS && now == mine && ts.current() != mine) {
            CUcontext again = nullptr;
            if (d.cuCtxPopCurrent(&again) == CUDA_SUCCESS)
                detail += "; popped its own context too, so the stack is as it was before it";
        }
        (void)d.cuCtxGetCurrent(&now);
        if (now != ts.current())
            detail += "; the driver's current context is now " + describeHandle(now) + ", where cuctx expected " +
                      describeHandle(ts.current());
        recordSticky(*frame.state, mismatchError(who, detail,
                                                 "Code inside the scope changed the current context "
                                                 "(cuCtxSetCurrent, cudaSetDevice, an unbalanced cuCtxPushCurrent) "
                                                 "without restoring it",
                                                 *frame.state));
    } catch (...) {
        logError("{}: the context stack changed behind cuctx's back (and describing it failed)", who);
    }
    return retire(frame);
}

std::optional<std::string> describeDrift(ThreadState& ts, CUcontext* actualOut)
{
    if (!ts.baseKnown && topFrame() == nullptr)
        learnBase(ts);
    CUcontext actual = nullptr;
    check(api().cuCtxGetCurrent(&actual), "cuCtxGetCurrent");
    if (actualOut != nullptr)
        *actualOut = actual;
    if (actual == ts.current())
        return std::nullopt;
    std::string text = "the driver's current context is " + describeHandle(actual) + ", but cuctx recorded " +
                       describeHandle(ts.current()) + " (cuctx's entries, bottom first: ";
    const auto frames = framesBottomUp();
    if (frames.empty())
        text += "none";
    for (std::size_t i = 0; i < frames.size(); ++i)
        text += (i ? ", " : "") + describeContext(*frames[i]->state) + " [" + kindName(frames[i]->kind) + "]";
    text += ")";
    return text;
}

void verifyStack(ThreadState& ts, const char* who)
{
    if (auto drift = describeDrift(ts))
        throwError(Errc::stack_mismatch, who, *drift,
                   "Other code (cuCtxSetCurrent, cudaSetDevice, an unbalanced push) changed this thread's "
                   "current context; restore it, or call ContextStack::resync() when cuctx has no entries");
}

} // namespace cuctx::detail

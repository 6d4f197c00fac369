// SPDX-License-Identifier: MIT
#include "context/frames.hpp"

#include "check/check.hpp"
#include "context/context_access.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"

#include <cstdio>

namespace cuctx::detail {
namespace {

Error mismatchError(std::string who, std::string detail, std::string hint, const ContextState& state,
                    SourceLocation where = SourceLocation::current())
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
    // What lies below cuctx's entries: read again on every entry from an empty record, since code
    // outside cuctx (cuCtxSetCurrent, cudaSetDevice) may have changed it since cuctx last looked. A
    // failed pop repairs the stack down to exactly this (finishFailedPop).
    if (topFrame() == nullptr)
        learnBase(ts);
    Slot& slot = ts.slotFor(state);
    ts.beginUse(slot, state);
    const CUresult r = api().cuCtxPushCurrent(state->handle);
    if (r != CUDA_SUCCESS) [[unlikely]] {
        ThreadState::endUse(slot.uses, state);
        throwDriverError(r, "cuCtxPushCurrent", subjectOf(*state), SourceLocation::current());
    }
    frame.state = state;
    frame.uses = &slot.uses;
    Frame* const below = topFrame();
    frame.below = below != nullptr ? below : &g_bottomFrame; // what the inline exit makes the top
    if (ownsHandle(frame))
        state->handles.fetch_add(1, std::memory_order_relaxed); // the caller holds one: not a revival
    setTop(&frame);
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
    return owned ? ContextAccess::fromCountedState(state) : Context{};
}

} // namespace

namespace {

bool inRecord(const Frame* top, const Frame& frame) noexcept
{
    for (const Frame* f = top; f != nullptr; f = frameBelow(*f))
        if (f == &frame)
            return true;
    return false;
}

// The thread whose slot `uses` is, under the registry mutex; nullptr if it has exited.
ThreadState* ownerOfSlotLocked(const std::atomic<std::uint32_t>* uses) noexcept
{
    for (ThreadState* ts : registeredThreads()) {
        bool found = false;
        ts->forEachSlot([&](const Slot& slot) { found = found || &slot.uses == uses; });
        if (found)
            return ts;
    }
    return nullptr;
}

// A guard ended on a thread other than the one that made it (ContextGuard is thread-bound). Its
// context stays pushed on the driver's stack of the thread that made it, which this thread cannot
// touch; so its frame there, about to be freed with the guard, is replaced by a heap frame of kind
// `push` that keeps the context alive, as if that thread had called ContextStack::push: it may pop it,
// or it is released when the thread exits. This thread's stack and record are left alone. (Safe
// while the thread that made the guard is not itself entering or leaving contexts at that moment,
// which a program that hands a guard over has to ensure anyway.)
Context endForeignGuard(ThreadState& ts, Frame& frame, const char* who) noexcept
{
    long ownerTid = 0;
    bool replaced = false;
    try {
        auto* copy = new Frame{frame.state, frame.uses, frame.below, FrameKind::push};
        {
            std::lock_guard lock(registryMutex());
            if (ThreadState* owner = ownerOfSlotLocked(frame.uses)) {
                ownerTid = owner->tid;
                ThreadRecord& record = *owner->record;
                Frame*& head = record.forked ? record.hidden : record.frame;
                if (head == &frame) {
                    head = copy;
                    replaced = true;
                } else {
                    for (Frame* f = head; f != &g_bottomFrame && f != nullptr; f = f->below)
                        if (f->below == &frame) {
                            f->below = copy;
                            replaced = true;
                            break;
                        }
                }
                if (replaced)
                    frame.state->handles.fetch_add(1, std::memory_order_relaxed); // the push's own
            }
        }
        if (!replaced)
            delete copy;
        std::string detail = "a ContextGuard is thread-bound, but this one was made on thread " +
                             (ownerTid != 0 ? std::to_string(ownerTid) : std::string("(one that has exited)")) +
                             " and destroyed on thread " + std::to_string(ts.tid);
        detail += replaced ? "; its context stays pushed on the stack of the thread that made it, recorded there as a "
                             "ContextStack::push (pop it there, or it is released when that thread exits); this "
                             "thread's stack is untouched"
                           : "; neither thread's stack was touched";
        ErrorInfo info;
        info.condition = Errc::invalid_state;
        info.call = who;
        info.object = describeContext(*frame.state);
        info.detail = std::move(detail);
        info.hint = "Destroy a ContextGuard on the thread that made it, in scope order";
        recordSticky(*frame.state, Error(std::move(info)));
    } catch (...) {
        logError("{}: a ContextGuard was destroyed on another thread than the one that made it", who);
    }
    return {};
}

} // namespace

Context popFrame(ThreadState& ts, Frame& frame, const char* who) noexcept
{
    Frame* top = topFrame();
    if (frame.kind == FrameKind::guard && !inRecord(top, frame)) [[unlikely]]
        return endForeignGuard(ts, frame, who);
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

namespace {

// Pushes again what cuctx knows lay below `frame` (the base, then its frames bottom up), after code
// inside the frame's scope popped them; false if a push fails.
bool repushBelow(const DriverApi& d, ThreadState& ts, const Frame& frame) noexcept
{
    std::vector<CUcontext> contexts;
    try {
        for (const Frame* f = frameBelow(frame); f != nullptr; f = frameBelow(*f))
            contexts.push_back(f->state->handle);
        if (ts.base != nullptr)
            contexts.push_back(ts.base);
    } catch (...) {
        return false;
    }
    for (auto c = contexts.rbegin(); c != contexts.rend(); ++c)
        if (d.cuCtxPushCurrent(*c) != CUDA_SUCCESS)
            return false;
    return true;
}

} // namespace

Context finishFailedPop(ThreadState& ts, Frame& frame, CUresult r, CUcontext popped, const char* who) noexcept
{
    setTop(frame.below);
    if (r != CUDA_SUCCESS && t_threadExiting) {
        // A thread-local (a ContextBinding) ends after the driver's per-thread stack did: nothing left
        // to pop, and nothing anyone did wrong.
        logDebug("{}: thread {} exits after the driver forgot its stack; nothing to pop", who, ts.tid);
        return retire(frame);
    }
    const CUcontext mine = frame.state->handle;
    const DriverApi& d = *g_activeApi.load(std::memory_order_acquire);
    // What was below the frame when it was pushed: the frame below it, else the base (read when the
    // first entry was made from an empty record).
    const CUcontext expected = ts.current();
    try {
        std::string detail;
        std::string repair;
        CUcontext now = nullptr;
        if (r != CUDA_SUCCESS) {
            detail = std::string("cuCtxPopCurrent failed with ") + std::string(resultName(r)) +
                     ": code inside the scope popped the context it pushed";
        } else {
            detail = "the driver popped " + describeHandle(popped) + " instead of the context it pushed";
            (void)d.cuCtxGetCurrent(&now);
            if (now == expected && mine == expected) {
                repair = "; (had the code pushed " + describeHandle(popped) +
                         " rather than replacing the top, a second entry of " + describeHandle(mine) +
                         " is left above the first: a guard that enters the context below it cannot tell the two "
                         "apart)";
            } else if (now == mine && mine != expected) {
                // Code inside pushed another context and left it: the guard's own entry is still on top.
                CUcontext again = nullptr;
                if (d.cuCtxPopCurrent(&again) == CUDA_SUCCESS)
                    repair = "; code inside left a push of its own: popped the guard's context too";
            } else if (now != expected && popped == expected && expected != nullptr) {
                // Code inside popped the guard's entry, so the pop took the caller's: put it back.
                if (d.cuCtxPushCurrent(expected) == CUDA_SUCCESS)
                    repair = "; code inside popped the context the guard pushed, so its pop took the caller's "
                             "entry: pushed that back";
            }
        }
        // Whatever else code inside left above the caller's entries: pop it, and if that empties the
        // stack, push back what cuctx knows was below. Only above an entry of cuctx's own, which
        // cuctx knows is there: a base read earlier may have been changed since by code outside.
        (void)d.cuCtxGetCurrent(&now);
        int extra = 0;
        for (; frameBelow(frame) != nullptr && now != expected && now != nullptr && extra < 64; ++extra) {
            CUcontext dropped = nullptr;
            if (d.cuCtxPopCurrent(&dropped) != CUDA_SUCCESS || d.cuCtxGetCurrent(&now) != CUDA_SUCCESS)
                break;
        }
        if (extra > 0)
            repair += "; popped " + std::to_string(extra) + " more entr" + (extra == 1 ? "y" : "ies") +
                      " that code inside left above the caller's";
        if (now == nullptr && expected != nullptr)
            repair += repushBelow(d, ts, frame) ? "; pushed back what cuctx knew lay below (" +
                                                      std::to_string(framesBottomUp().size() + (ts.base ? 1 : 0)) +
                                                      " entries, top " + describeHandle(expected) + ")"
                                                : "; pushing back what lay below failed";
        (void)d.cuCtxGetCurrent(&now);
        if (now == expected)
            detail += repair + "; the stack below it is as it was (current: " + describeHandle(now) + ")";
        else
            detail += repair + "; cuctx could not restore the stack: the driver's current context is now " +
                      describeHandle(now) + ", where it was " + describeHandle(expected) + " before the scope";
        recordSticky(*frame.state, mismatchError(who, detail,
                                                 "Code inside the scope changed the current context "
                                                 "(cuCtxSetCurrent, cudaSetDevice, an unbalanced cuCtxPushCurrent "
                                                 "or cuCtxPopCurrent) without restoring it",
                                                 *frame.state));
    } catch (...) {
        logError("{}: the context stack changed behind cuctx's back (and describing it failed)", who);
    }
    return retire(frame);
}

std::optional<std::string> describeDrift(ThreadState& ts, CUcontext* actualOut)
{
    CUcontext actual = nullptr;
    check(api().cuCtxGetCurrent(&actual), "cuCtxGetCurrent");
    if (topFrame() == nullptr) {
        // cuctx has no entry here: what is current is the base, whoever set it (no drift, and the
        // next repair starts from the truth).
        ts.base = actual;
        ts.baseKnown = true;
    }
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
    (void)api(who); // in a forked child: says so, naming the call
    if (auto drift = describeDrift(ts))
        throwError(Errc::stack_mismatch, who, *drift,
                   "Other code (cuCtxSetCurrent, cudaSetDevice, an unbalanced push) changed this thread's "
                   "current context; restore it, or call ContextStack::resync() when cuctx has no entries");
}

} // namespace cuctx::detail

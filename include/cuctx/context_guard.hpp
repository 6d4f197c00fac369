#pragma once

// cuctx::ContextGuard: a context current on this thread for one scope. Thread-bound.

#include "cuctx/context.hpp"
#include "cuctx/detail/context_state.hpp"
#include "cuctx/detail/thread_top.hpp"

namespace cuctx {

/// Asks a guard to check the driver's current context (cuCtxGetCurrent, 10-15 ns) before trusting
/// cuctx's record, for code that may have changed it behind cuctx's back (runtime API, other libraries).
struct VerifyCurrent {};
inline constexpr VerifyCurrent verifyCurrent{};

/// Makes `context` current on this thread until the scope ends, then restores exactly what was
/// there. Entering the context that is already current (an outer guard, a binding, an adoption)
/// makes no driver call and touches no shared cache line. Otherwise it pushes, and on exit pops and
/// checks that what it pops is what it pushed; a mismatch (someone changed the stack inside the
/// scope) is logged, recorded on the context (Context::checkRecordedError) and repaired as far as
/// the driver allows. While the guard lives, the context cannot be destroyed. Neither copyable nor
/// movable; no heap allocation after the thread's first guard.
class ContextGuard {
public:
    CUCTX_ALWAYS_INLINE explicit ContextGuard(const Context& context)
    {
        detail::ContextState* state = context.state_;
        frame_.state = state;
        detail::ThreadTop& top = detail::t_top;
        if (top.state == state && state != nullptr) [[likely]] {
            // Already current through cuctx: count the use on this thread's own counter, nothing else.
            frame_.uses = top.frame->uses;
            frame_.uses->store(frame_.uses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            frame_.kind = detail::FrameKind::elided;
            return;
        }
        const detail::PushFn push = detail::g_push.load(std::memory_order_relaxed);
        if (top.recentState == state && state != nullptr && push != nullptr &&
            top.recentSlot->load(std::memory_order_relaxed) == state) [[likely]] {
            // The context this thread switched to last: push it, with cuctx's record kept inline.
            frame_.uses = top.recentUses;
            frame_.uses->store(frame_.uses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            frame_.kind = detail::FrameKind::guard;
            if (const CUresult r = push(state->handle); r != CUDA_SUCCESS) [[unlikely]]
                detail::guardPushFailed(frame_, r);
            frame_.below = top.frame;
            top.state = state;
            top.frame = &frame_;
            return;
        }
        enter(context, false);
    }
    ContextGuard(const Context& context, VerifyCurrent)
    {
        frame_.state = context.state_;
        enter(context, true);
    }
    CUCTX_ALWAYS_INLINE ~ContextGuard()
    {
        if (frame_.kind == detail::FrameKind::guard) {
            const detail::PopFn pop = detail::g_pop.load(std::memory_order_relaxed);
            if (detail::t_top.frame != &frame_ || pop == nullptr) [[unlikely]] {
                leave();
                return;
            }
            CUcontext popped = nullptr;
            const CUresult r = pop(&popped);
            if (r != CUDA_SUCCESS || popped != frame_.state->handle) [[unlikely]] {
                detail::guardPopFailed(frame_, r, popped);
                return;
            }
            detail::setTop(frame_.below);
            const std::uint32_t after = frame_.uses->load(std::memory_order_relaxed) - 1;
            frame_.uses->store(after, std::memory_order_release);
            if (after == 0) {
                // The last use here: an orphaned context may go, a green one releases its owner. The
                // fence needs only the compiler (g_pop is null where it would need more).
                std::atomic_signal_fence(std::memory_order_seq_cst); // see context/fence.hpp
                if (frame_.state->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]]
                    detail::lastUseOnThread(frame_.state);
            }
            return;
        }
        const std::uint32_t after = frame_.uses->load(std::memory_order_relaxed) - 1;
        frame_.uses->store(after, std::memory_order_release);
        if (after == 0) [[unlikely]]
            detail::lastUseOnThread(frame_.state);
    }
    ContextGuard(const ContextGuard&) = delete;
    ContextGuard& operator=(const ContextGuard&) = delete;

    /// Whether entering needed a driver push (false when the context was already current).
    bool switched() const noexcept { return frame_.kind == detail::FrameKind::guard; }

private:
    void enter(const Context& context, bool verify);
    [[gnu::cold]] void leave() noexcept; // misuse, a forked child, trace level

    // The guard's entry in cuctx's record of this thread's stack: kind `guard` when it pushed (then
    // linked), `elided` when its context was already current.
    detail::Frame frame_;
};

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::ContextGuard: a context current on this thread for one scope.

#include "cuctx/context.hpp"
#include "cuctx/detail/context_state.hpp"
#include "cuctx/detail/thread_record.hpp"
#include "cuctx/export.hpp"

// The frame's fields are set only where a path reads them (no dead stores on the inline paths), and
// g++ 12 cannot follow that through std::optional<ContextGuard> at -O2 (a false
// -Wmaybe-uninitialized at the destructor's reads, verified: every constructor path sets `kind` and
// `uses`). The warning is off for this header's code only, wherever it is inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace cuctx {

/// Asks a guard to check the driver's current context (cuCtxGetCurrent, 10-15 ns) before trusting
/// cuctx's record, for code that may have changed it behind cuctx's back (runtime API, other libraries).
/// A tag: an empty value type.
struct VerifyCurrent {};
/// The VerifyCurrent tag: `ContextGuard guard(ctx, cuctx::verifyCurrent);`.
inline constexpr VerifyCurrent verifyCurrent{};

/// Makes `context` current on this thread until the scope ends, then restores exactly what was
/// there. Entering the context that is already current (an outer guard, a binding, an adoption)
/// makes no driver call and touches no shared cache line. Otherwise it pushes, and on exit pops and
/// checks that what it pops is what it pushed; a mismatch (someone changed the stack inside the
/// scope) is logged, recorded on the context (Context::checkRecordedError) and repaired as far as
/// the driver allows. A guard never throws an error recorded on its context (on no path): the
/// context's next fallible call does. While the guard lives, the context cannot be destroyed. Neither copyable nor
/// movable; no heap allocation after the thread's first guard.
///
/// \par Threading
/// Thread-bound: made and destroyed on one thread, in scope order. A guard that switched (pushed its
/// context) and is destroyed on another thread (handed over in a std::optional or unique_ptr) is
/// detected there, provided the making thread is not entering or leaving contexts at that moment:
/// neither thread's driver stack is touched, the context stays pushed on the making thread, recorded
/// there as a ContextStack::push, and Errc::invalid_state naming both threads is recorded on the
/// context. A guard that entered its context already current (elided, switched() false) and is
/// destroyed on another thread is not detected, and corrupts the making thread's use count of the
/// context (its destruction may then come while that thread uses it, or never). A switching guard
/// that ends before a guard or push made after it on its thread is detected and recorded as
/// Errc::stack_mismatch.
class CUCTX_API ContextGuard {
public:
    /// Makes `context` current on this thread: no driver call when it already is, otherwise one
    /// push. Throws for its own failures only: an empty handle (Errc::invalid_argument), a failed
    /// push, a green context entered on another thread (Errc::context_busy), a forked child
    /// (Errc::forked_after_init); never for an error recorded on the context.
    CUCTX_ALWAYS_INLINE explicit ContextGuard(const Context& context)
    {
        detail::ContextState* state = context.state_;
        frame_.state = state;
        detail::ThreadRecord& record = detail::t_record;
        detail::Frame* const below = record.frame; // never null; the bottom's context matches none
        if (below->state == state) [[likely]] {
            enterElided(*below);
            return;
        }
        // A context this thread has a slot for in its table (never an empty Context's, nor a green
        // one's): push it, with cuctx's record kept inline.
        if (state != nullptr) [[likely]] {
            detail::Slot& slot = record.slots[state->slotIndex];
            if (slot.state.load(std::memory_order_relaxed) == state) [[likely]] {
                frame_.uses = &slot.uses;
                detail::countUse(slot.uses);
                frame_.kind = detail::FrameKind::guard;
                const detail::PushFn push = detail::g_push.load(std::memory_order_relaxed);
                if (const CUresult r = push(state->handle); r != CUDA_SUCCESS) [[unlikely]] {
                    pushFailed(context, r);
                    return;
                }
                frame_.below = below;
                record.frame = &frame_;
                return;
            }
        }
        enter(context, false);
    }
    /// The same, after checking that the driver's current context is the one cuctx recorded
    /// (ContextStack::verify): Errc::stack_mismatch, showing both, when code outside cuctx changed it.
    ContextGuard(const Context& context, VerifyCurrent)
    {
        frame_.state = context.state_;
        enter(context, true);
    }
    /// Restores what was current before: pops what it pushed and checks it popped that (a mismatch
    /// is logged, repaired as far as the driver allows and recorded on the context). Never throws.
    CUCTX_ALWAYS_INLINE ~ContextGuard()
    {
        if (frame_.kind == detail::FrameKind::guard) {
            detail::ThreadRecord& record = detail::t_record;
            if (record.frame != &frame_) [[unlikely]] {
                leave();
                return;
            }
            const detail::PopFn pop = detail::g_pop.load(std::memory_order_relaxed);
            CUcontext popped = nullptr;
            const CUresult r = pop(&popped);
            if (r != CUDA_SUCCESS || popped != frame_.state->handle) [[unlikely]] {
                popFailed(r, popped);
                return;
            }
            record.frame = frame_.below;
            const std::uint32_t after = frame_.uses->load(std::memory_order_relaxed) - 1;
            frame_.uses->store(after, std::memory_order_release);
            if (after == 0) {
                // The last use here: an orphaned context may go, a green one releases its owner. The
                // fence needs only the compiler: the thread that drops the last handle issues the
                // asymmetric fence's heavy side (membarrier), and g_pop diverts where none is available.
                std::atomic_signal_fence(std::memory_order_seq_cst);
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
    // `top` is cuctx's top frame and already has this context: count the use on this thread's own
    // counter, nothing else.
    CUCTX_ALWAYS_INLINE void enterElided(const detail::Frame& top) noexcept
    {
        frame_.uses = top.uses;
        detail::countUse(*frame_.uses);
        frame_.kind = detail::FrameKind::elided;
    }
    void enter(const Context& context, bool verify);
    // Out of line, rare; marked cold so that their call sites cost the inline paths nothing (no
    // registers kept for them, no code in the way: measured, 0.5-1 ns of a switching guard).
    [[gnu::cold]] void pushFailed(const Context& context, CUresult result);   // diverted, or throws
    [[gnu::cold]] void popFailed(CUresult result, CUcontext popped) noexcept; // diverted, or a mismatch
    [[gnu::cold]] void leave() noexcept;                                      // not on top (misuse), a forked child

    // The guard's entry in cuctx's record of this thread's stack: kind `guard` when it pushed (then
    // linked), `elided` when its context was already current.
    detail::Frame frame_;
};

} // namespace cuctx

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

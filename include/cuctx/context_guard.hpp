// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::ContextGuard: a context current on this thread for one scope.

#include "cuctx/context.hpp"
#include "cuctx/detail/context_state.hpp"
#include "cuctx/detail/thread_record.hpp"
#include "cuctx/export.hpp"

// The guard's members are set on every path, but g++ 12 cannot follow that through
// std::optional<ContextGuard> at -O2 (a false -Wmaybe-uninitialized at the destructor's reads), nor
// see that `popped` is read only after the driver wrote it. The warning is off for this header's code
// only, wherever it is inlined.
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
/// makes no driver call and writes nothing. Otherwise it pushes, and on exit pops and checks that
/// what it pops is what it pushed; a mismatch (someone changed the stack inside the scope) is
/// logged, recorded on the context (Context::checkRecordedError) and repaired as far as the driver
/// allows. A guard never throws an error recorded on its context (on no path): the context's next
/// fallible call does. While the guard lives, the context cannot be destroyed. Neither copyable nor
/// movable; no heap allocation, ever. At most 31 contexts entered at once on one thread (guards,
/// pushes and an adoption together; entering the context already on top does not count).
///
/// \par Threading
/// Thread-bound: made and destroyed on one thread, in scope order. A guard that switched (pushed its
/// context) and ends out of order (before a guard or push made after it on its thread) or on another
/// thread (handed over in a std::optional or unique_ptr) is detected, provided the making thread is
/// not entering or leaving contexts at that moment: neither thread's driver stack is touched, the
/// context stays pushed on the making thread, recorded there as a ContextStack::push (pop it there,
/// or it is released when that thread exits), and Errc::stack_mismatch (out of order) or
/// Errc::invalid_state (another thread) naming the threads is recorded on the context. A switching
/// guard whose making thread exits first keeps its context in use (never destroyed) until the guard
/// is destroyed, which then records Errc::invalid_state; destroyed on a later thread that reuses the
/// exited one's storage and has entered the same context at the same depth, it cannot be told from
/// that thread's own entry and ends it (what lay below becomes current there). A guard that entered
/// its context already current (elided, switched() false) has nothing to undo, wherever it ends; it
/// makes no entry of its own and relies on the entry below it, so ending that entry while the elided
/// guard lives (the switching guard below it out of order, ContextStack::pop or release of the push
/// or adoption below it) goes unnoticed: the context is then no longer current, nor kept alive by the
/// elided guard.
class CUCTX_API ContextGuard {
public:
    /// Makes `context` current on this thread: no driver call when it already is, otherwise one
    /// push. Throws for its own failures only: an empty handle (Errc::invalid_argument), a failed
    /// push, a green context entered on another thread (Errc::context_busy), 31 contexts entered on
    /// this thread already (Errc::invalid_state), a forked child (Errc::forked_after_init); never for
    /// an error recorded on the context.
    CUCTX_ALWAYS_INLINE explicit ContextGuard(const Context& context)
    {
        detail::ContextState* const state = context.state_;
        detail::ThreadRecord& record = detail::t_record;
        detail::RecordEntry* const top = record.top.load(std::memory_order_relaxed);
        state_ = state;
        if (top->load(std::memory_order_relaxed) == state) [[likely]] {
            entry_ = nullptr; // already on top (entries[0] matches no context): nothing to do
            return;
        }
        // A new entry on top, written before the push so that the stores retire in the shadow of
        // the driver's call (a failed push takes it back). Out of line: an empty handle, a green
        // context (no inline handle), a full record, a thread not yet registered, exited or in a
        // forked child (the slot above the top is null: the record's end slot, or the off record's).
        detail::RecordEntry* const mine = top + 1;
        if (mine->load(std::memory_order_relaxed) != nullptr && state != nullptr) [[likely]] {
            // Read once: the compiler would load it again after the record's stores.
            if (const CUcontext handle = state->inlineHandle; handle != nullptr) [[likely]] {
                mine->store(state, std::memory_order_relaxed);
                record.top.store(mine, std::memory_order_release);
                entry_ = mine;
                const detail::PushFn push = detail::g_push.load(std::memory_order_relaxed);
                if (const CUresult r = push(handle); r != CUDA_SUCCESS) [[unlikely]]
                    entry_ = pushFailed(state, r);
                return;
            }
        }
        entry_ = enter(context, false);
    }
    /// The same, after checking that the driver's current context is the one cuctx recorded
    /// (ContextStack::verify): Errc::stack_mismatch, showing both, when code outside cuctx changed it.
    ContextGuard(const Context& context, VerifyCurrent) : state_(context.state_), entry_(enter(context, true)) {}
    /// Restores what was current before: pops what it pushed and checks it popped that (a mismatch
    /// is logged, repaired as far as the driver allows and recorded on the context). Never throws.
    CUCTX_ALWAYS_INLINE ~ContextGuard()
    {
        if (entry_ == nullptr)
            return; // elided: its context stays on top below it
        detail::ThreadRecord& record = detail::t_record;
        if (record.top.load(std::memory_order_relaxed) != entry_) [[unlikely]] {
            leave(state_, entry_); // not on top, or another thread's entry
            return;
        }
        const detail::PopFn pop = detail::g_pop.load(std::memory_order_relaxed);
        CUcontext popped;
        const CUresult r = pop(&popped);
        if (r != CUDA_SUCCESS || popped != state_->handle) [[unlikely]] {
            popFailed(state_, entry_, r, r == CUDA_SUCCESS ? popped : nullptr);
            return;
        }
        // After the pop, never before: a thread destroying the context must not find it unused while
        // it is still on this thread's driver stack. The fence needs only the compiler: the thread
        // that drops the last handle issues the asymmetric fence's heavy side (membarrier), and g_pop
        // diverts where none is available.
        record.top.store(entry_ - 1, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (state_->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]]
            detail::leftFlaggedContext(state_); // green, or orphaned while in use
    }
    ContextGuard(const ContextGuard&) = delete;
    ContextGuard& operator=(const ContextGuard&) = delete;

    /// Whether entering needed a driver push (false when the context was already current).
    bool switched() const noexcept { return entry_ != nullptr; }

private:
    // Out of line. The member functions are static and take values, so that the guard's own members
    // never escape and stay in registers. Marked cold where they are rare, so that their call sites
    // cost the inline paths nothing (no registers kept for them, no code in the way: measured, 0.5-1
    // ns of a switching guard). Each returns the guard's entry (nullptr: elided) or throws.
    static detail::RecordEntry* enter(const Context& context, bool verify);
    // Takes the state, not the Context: nothing but the state is kept across the push for it.
    [[gnu::cold]] static detail::RecordEntry* pushFailed(detail::ContextState* state, CUresult result);
    // A diverted pop, or a mismatch.
    [[gnu::cold]] static void popFailed(detail::ContextState* state, detail::RecordEntry* entry, CUresult result,
                                        CUcontext popped) noexcept;
    // Not on top (out of order), another thread's entry, a forked child.
    [[gnu::cold]] static void leave(detail::ContextState* state, detail::RecordEntry* entry) noexcept;

    detail::ContextState* state_;
    detail::RecordEntry* entry_; // this guard's entry in its thread's record; nullptr when elided
};

} // namespace cuctx

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#pragma once

// cuctx::ContextGuard: a context current on this thread for one scope. Thread-bound.

#include "cuctx/context.hpp"
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
    explicit ContextGuard(const Context& context)
    {
        detail::ContextState* state = context.state_;
        frame_.state = state;
        detail::ThreadTop& top = detail::t_top;
        if (top.state == state && state != nullptr) [[likely]] {
            // Already current through cuctx: count the use on this thread's own counter, nothing else.
            frame_.uses = top.uses;
            frame_.uses->store(frame_.uses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            return;
        }
        const detail::PushPop* driver = detail::g_pushPop.load(std::memory_order_relaxed);
        if (top.recentState == state && state != nullptr && driver != nullptr &&
            top.recentSlot->load(std::memory_order_relaxed) == state) [[likely]] {
            // The context this thread switched to last: push it, with cuctx's record kept inline.
            frame_.uses = top.recentUses;
            frame_.uses->store(frame_.uses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            frame_.handle = top.recentHandle;
            frame_.orphaned = top.recentOrphaned;
            if (const CUresult r = driver->push(frame_.handle); r != CUDA_SUCCESS) [[unlikely]]
                detail::guardPushFailed(frame_, r);
            frame_.below = top.frame;
            top.state = state;
            top.uses = frame_.uses;
            top.frame = &frame_;
            pushed_ = true;
            if (detail::g_logLevel.load(std::memory_order_relaxed) == 0) [[unlikely]]
                detail::traceGuard("push", frame_);
            return;
        }
        enter(context, false);
    }
    ContextGuard(const Context& context, VerifyCurrent)
    {
        frame_.state = context.state_;
        enter(context, true);
    }
    ~ContextGuard()
    {
        if (pushed_) {
            const detail::PushPop* driver = detail::g_pushPop.load(std::memory_order_relaxed);
            if (detail::t_top.frame != &frame_ || driver == nullptr) [[unlikely]] {
                leave();
                return;
            }
            CUcontext popped = nullptr;
            const CUresult r = driver->pop(&popped);
            if (r != CUDA_SUCCESS || popped != frame_.handle) [[unlikely]] {
                detail::guardPopFailed(frame_, r, popped);
                return;
            }
            detail::setTop(frame_.below);
            if (detail::g_logLevel.load(std::memory_order_relaxed) == 0) [[unlikely]]
                detail::traceGuard("pop", frame_);
            const std::uint32_t after = frame_.uses->load(std::memory_order_relaxed) - 1;
            frame_.uses->store(after, std::memory_order_release);
            if (after == 0) {
                // The last use here (a green context's frame has no `orphaned`: it goes out of line).
                if (frame_.orphaned == nullptr || !detail::g_leaveFenceIsCompilerOnly) [[unlikely]] {
                    detail::lastUseOnThread(frame_.state);
                } else {
                    std::atomic_signal_fence(std::memory_order_seq_cst); // see context/fence.hpp
                    if (frame_.orphaned->load(std::memory_order_relaxed)) [[unlikely]]
                        detail::lastUseEnded(frame_.state);
                }
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
    bool switched() const noexcept { return pushed_; }

private:
    void enter(const Context& context, bool verify);
    void leave() noexcept;

    detail::Frame frame_; // the guard's entry in cuctx's record of this thread's stack, when it pushed
    bool pushed_ = false;
};

} // namespace cuctx

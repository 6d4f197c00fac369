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
        frame_.state = context.state_;
        const detail::ThreadTop& top = detail::t_top;
        if (top.state == frame_.state && frame_.state != nullptr) [[likely]] {
            frame_.uses = top.uses; // only this thread writes its count
            frame_.uses->store(frame_.uses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
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
        if (!pushed_) [[likely]] {
            const std::uint32_t after = frame_.uses->load(std::memory_order_relaxed) - 1;
            frame_.uses->store(after, std::memory_order_release);
            if (after == 0) [[unlikely]]
                detail::lastUseOnThread(frame_.state);
            return;
        }
        leave();
    }
    ContextGuard(const ContextGuard&) = delete;
    ContextGuard& operator=(const ContextGuard&) = delete;

    /// Whether entering needed a driver push (false when the context was already current).
    bool switched() const noexcept { return pushed_; }

private:
    void enter(const Context& context, bool verify);
    void enterSlow(const Context& context, bool verify);
    void leave() noexcept;

    detail::Frame frame_; // the guard's entry in cuctx's record of this thread's stack, when it pushed
    bool pushed_ = false;
};

} // namespace cuctx

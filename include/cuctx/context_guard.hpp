#pragma once

// cuctx::ContextGuard: a context current on this thread for one scope. Thread-bound.

#include "cuctx/context.hpp"

namespace cuctx {

namespace detail {
struct ThreadState;
struct Slot;
} // namespace detail

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
    explicit ContextGuard(const Context& context);
    ContextGuard(const Context& context, VerifyCurrent);
    ~ContextGuard();
    ContextGuard(const ContextGuard&) = delete;
    ContextGuard& operator=(const ContextGuard&) = delete;

    /// Whether entering needed a driver push (false when the context was already current).
    bool switched() const noexcept { return pushed_; }

private:
    void enter(const Context& context, bool verify);

    detail::ThreadState* thread_ = nullptr;
    detail::ContextState* state_ = nullptr;
    detail::Slot* slot_ = nullptr;
    unsigned entryIndex_ = 0;
    bool pushed_ = false;
};

} // namespace cuctx

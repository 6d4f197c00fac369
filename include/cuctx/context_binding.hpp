// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::ContextBinding: a worker thread's context for the life of a scope.

#include "cuctx/context.hpp"
#include "cuctx/export.hpp"

namespace cuctx {

/// The scoped form of ContextStack::adopt(): a worker's main function creates one, and every
/// ContextGuard on the same context inside it, task after task, costs no driver call. Restores the
/// previous adoption state on exit. Neither copyable nor movable.
///
/// \par Threading
/// Thread-bound: made and destroyed on one thread, around the guards it serves. Destroyed on another
/// thread (a binding handed over in a unique_ptr), it releases *that* thread's adoption: one it had of
/// its own is ended (not detected), and with none an Errc::invalid_state error is logged; the making
/// thread keeps its adoption until it releases it or exits.
class CUCTX_API ContextBinding {
public:
    /// Adopts `context` on this thread (ContextStack::adopt), unless this thread has already adopted
    /// it (then the binding does nothing, now or on exit). Throws what adopt() throws: another context
    /// adopted here, or guards or pushes already on this thread's stack, are Errc::invalid_state; an
    /// empty handle Errc::invalid_argument; never an error recorded on the context.
    explicit ContextBinding(const Context& context);
    /// Releases the adoption it made (as ContextStack::release does); a failure is logged, never
    /// thrown. An error recorded on the context (Context::checkRecordedError) stays recorded for the
    /// context's next fallible call.
    ~ContextBinding();
    ContextBinding(const ContextBinding&) = delete;
    ContextBinding& operator=(const ContextBinding&) = delete;

    /// The bound context.
    const Context& context() const noexcept { return context_; }

private:
    Context context_;
    bool adoptedHere_ = false;
};

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once

// cuctx::ContextBinding: a worker thread's context for the life of a scope. Thread-bound.

#include "cuctx/context.hpp"
#include "cuctx/export.hpp"

namespace cuctx {

/// The scoped form of ContextStack::adopt(): a worker's main function creates one, and every
/// ContextGuard on the same context inside it, task after task, costs no driver call. Restores the
/// previous adoption state on exit. Neither copyable nor movable.
class CUCTX_API ContextBinding {
public:
    explicit ContextBinding(const Context& context);
    ~ContextBinding();
    ContextBinding(const ContextBinding&) = delete;
    ContextBinding& operator=(const ContextBinding&) = delete;

    const Context& context() const noexcept { return context_; }

private:
    Context context_;
    bool adoptedHere_ = false;
};

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once

// Internal, not an API: the owning-handle template that cuctx's RAII types (Stream, Event,
// DeviceBuffer, IpcMemory) are built on, so that their move logic is written once.

#include "cuctx/context.hpp"

#include <utility>

namespace cuctx::detail {

/// Owns one driver object that lives in a context: its handle, and the context it keeps alive
/// while it exists. Move-only; empty when default-constructed, moved from, released or reset.
/// `Traits` gives `using Handle = ...;` (whose value-initialised form means none) and
/// `static void destroy(const Context&, Handle) noexcept`, which destroys it in its context and
/// logs a failure rather than throwing. Thread-compatible: one object needs its user's exclusive access
/// to be moved, reset or destroyed (the types built on it state their own contracts).
template <typename Traits>
class ContextOwned {
public:
    using Handle = typename Traits::Handle;

    ContextOwned() noexcept = default;
    ContextOwned(Context context, Handle handle) noexcept : context_(std::move(context)), handle_(handle) {}
    ContextOwned(ContextOwned&& other) noexcept
        : context_(std::move(other.context_)), handle_(std::exchange(other.handle_, Handle{}))
    {
    }
    ContextOwned& operator=(ContextOwned&& other) noexcept
    {
        if (this != &other) {
            reset();
            context_ = std::move(other.context_);
            handle_ = std::exchange(other.handle_, Handle{});
        }
        return *this;
    }
    ~ContextOwned() { reset(); }

    explicit operator bool() const noexcept { return !(handle_ == Handle{}); }
    Handle get() const noexcept { return handle_; }
    const Context& context() const noexcept { return context_; }

    /// Gives the object up without destroying it: the caller now owns the returned handle.
    Handle release() noexcept
    {
        context_.reset();
        return std::exchange(handle_, Handle{});
    }
    /// Destroys the object (if any) and drops the context.
    void reset() noexcept
    {
        if (!(handle_ == Handle{}))
            Traits::destroy(context_, std::exchange(handle_, Handle{}));
        context_.reset();
    }

private:
    Context context_;
    Handle handle_{};
};

} // namespace cuctx::detail

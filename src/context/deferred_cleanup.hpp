#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// Cleanup that cannot run where the last handle went. Inside a stream host callback the driver
// refuses every context call (CUDA_ERROR_NOT_PERMITTED, driver-facts.md), so a module, stream,
// event, buffer or context whose last handle is dropped there cannot be unloaded, destroyed or
// freed on the spot. Its cleanup is queued instead, with a handle that keeps its context alive, and
// runs later on an ordinary thread: at the next cuctx call that checks a context
// (checkedState), after Context::synchronize and Stream::synchronize, and at exit. Thread-safe.

#include "context/context_state.hpp"

#include <atomic>
#include <functional>

namespace cuctx::detail {

/// Whether this thread is running a host callback that cuctx launched (Stream::hostCallback).
bool inHostCallback() noexcept;

/// Marks this thread as inside a host callback for its lifetime (runCallback's scope, which includes
/// destroying what the callback captured).
class HostCallbackScope {
public:
    HostCallbackScope() noexcept;
    ~HostCallbackScope();
    HostCallbackScope(const HostCallbackScope&) = delete;
    HostCallbackScope& operator=(const HostCallbackScope&) = delete;

private:
    bool outer_;
};

/// Queues `cleanup` (which returns whether it could do its work) to run later on an ordinary thread,
/// holding one more handle of `context` (may be null) until it has run. Never throws: if even the
/// queue cannot grow, the object is leaked and that is logged.
void deferCleanup(ContextState* context, std::function<bool()> cleanup) noexcept;

/// Queues the release of the last handle of `state` (whose count has just dropped to zero), so
/// that the context is destroyed later, outside the callback.
void deferRelease(ContextState* state) noexcept;

/// Queues a handle of `state` that the caller has counted already: its release, later on an ordinary
/// thread, destroys the context if nothing uses it then.
void deferCountedHandle(ContextState* state) noexcept;

extern std::atomic<bool> g_cleanupDeferred;
[[gnu::cold]] void runDeferredCleanupNow() noexcept;

/// Runs whatever was deferred, unless this thread is itself in a host callback. One relaxed load
/// when nothing was.
inline void runDeferredCleanup() noexcept
{
    if (g_cleanupDeferred.load(std::memory_order_acquire)) [[unlikely]]
        runDeferredCleanupNow();
}

/// A destructor's driver work in `context`: runs `cleanup` now, or defers it (see above) when this
/// thread is in a host callback, or when `cleanup` returns false because the driver refused it
/// there (a callback launched without cuctx).
template <typename Cleanup>
void cleanupInContext(ContextState& context, Cleanup cleanup) noexcept
{
    if (!inHostCallback() && cleanup())
        return;
    try {
        deferCleanup(&context, std::function<bool()>(std::move(cleanup)));
    } catch (...) {
        // No memory for the queue's entry: the object leaks (deferCleanup itself never throws).
    }
}

} // namespace cuctx::detail

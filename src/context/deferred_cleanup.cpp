#include "context/deferred_cleanup.hpp"

#include "context/context_access.hpp"
#include "log/log.hpp"

#include <cstdlib>
#include <deque>
#include <mutex>
#include <utility>

namespace cuctx::detail {

std::atomic<bool> g_cleanupDeferred{false};

namespace {

thread_local bool t_inHostCallback = false;

struct Deferred {
    Context keepAlive; // the context the cleanup runs in: alive until the cleanup has run
    std::function<bool()> cleanup;
};

struct DeferredQueue {
    std::mutex mutex;
    std::deque<Deferred> items;
};

DeferredQueue& queue()
{
    static auto* q = new DeferredQueue; // immortal: used from atexit and from late destructors
    return *q;
}

void runAtExit()
{
    runDeferredCleanupNow();
}

void enqueue(Deferred item) noexcept
{
    static std::once_flag atExit;
    try {
        std::call_once(atExit, [] { std::atexit(runAtExit); });
        DeferredQueue& q = queue();
        std::lock_guard lock(q.mutex);
        q.items.push_back(std::move(item));
        g_cleanupDeferred.store(true, std::memory_order_release);
    } catch (...) {
        // Leaked: item goes out of scope here, which drops its handle of the context.
    }
}

} // namespace

bool inHostCallback() noexcept
{
    return t_inHostCallback;
}

HostCallbackScope::HostCallbackScope() noexcept : outer_(std::exchange(t_inHostCallback, true)) {}

HostCallbackScope::~HostCallbackScope()
{
    t_inHostCallback = outer_;
}

void deferCleanup(ContextState* context, std::function<bool()> cleanup) noexcept
{
    Deferred item;
    if (context != nullptr) {
        context->handles.fetch_add(1, std::memory_order_relaxed); // a handle already exists: safe
        item.keepAlive = ContextAccess::fromCountedState(context);
    }
    item.cleanup = std::move(cleanup);
    enqueue(std::move(item));
}

void deferRelease(ContextState* state) noexcept
{
    // Nobody else holds a handle any more, and the context is not orphaned yet: restoring the count
    // and giving it to the queue makes the queue the last owner.
    state->handles.fetch_add(1, std::memory_order_relaxed);
    deferCountedHandle(state);
}

void deferCountedHandle(ContextState* state) noexcept
{
    Deferred item;
    item.keepAlive = ContextAccess::fromCountedState(state);
    enqueue(std::move(item));
}

void runDeferredCleanupNow() noexcept
{
    if (t_inHostCallback)
        return; // the driver refuses the work here too
    std::deque<Deferred> items;
    {
        DeferredQueue& q = queue();
        std::lock_guard lock(q.mutex);
        items.swap(q.items);
        g_cleanupDeferred.store(false, std::memory_order_relaxed);
    }
    // In the order queued, outside the lock (a cleanup may drop the last handle of a context, whose
    // destruction unloads its cached modules, which may log).
    for (Deferred& item : items) {
        if (item.cleanup && !item.cleanup())
            logError("a cleanup deferred out of a host callback was refused again by the driver; the object leaks");
        item = Deferred{};
    }
}

} // namespace cuctx::detail

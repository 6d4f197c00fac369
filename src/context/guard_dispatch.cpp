// SPDX-License-Identifier: MIT
#include "context/guard_dispatch.hpp"

#include "context/asymmetric_fence.hpp"
#include "cuctx/detail/thread_record.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"

#include <mutex>

namespace cuctx::detail {

namespace {

// What the inline guard calls where it must not call the driver (thread_record.hpp).
CUresult CUDAAPI divertedPush(CUcontext)
{
    return kDiverted;
}
CUresult CUDAAPI divertedPop(CUcontext*)
{
    return kDiverted;
}

} // namespace

constinit std::atomic<PushFn> g_push{&divertedPush};
constinit std::atomic<PopFn> g_pop{&divertedPop};

void refreshInlineDriver() noexcept
{
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    const DriverApi* d = g_activeApi.load(std::memory_order_acquire);
    const bool tracing = g_logLevel.load(std::memory_order_relaxed) == static_cast<int>(LogLevel::trace);
    g_push.store(d != nullptr && !tracing ? d->cuCtxPushCurrent : &divertedPush, std::memory_order_release);
    g_pop.store(d != nullptr && !tracing && leaveFenceIsCompilerOnly() ? d->cuCtxPopCurrent : &divertedPop,
                std::memory_order_release);
}

namespace {

void onDriverEvent(DriverEvent event) noexcept
{
    if (event == DriverEvent::forkedChild) {
        // In the child of a fork, from the atfork handler: no lock (a parent's thread may have held
        // the mutex at fork time), only stores. Every guard goes out of line, which reports the fork.
        g_push.store(&divertedPush, std::memory_order_relaxed);
        g_pop.store(&divertedPop, std::memory_order_relaxed);
        return;
    }
    refreshInlineDriver();
}

// Registered during static initialisation, before any code outside cuctx can call it (a shared
// library's initialisers run before its users'). The refresh after registering covers a driver that
// another initialiser of a static build loaded first.
[[maybe_unused]] const bool g_listening = [] {
    setDriverListener(&onDriverEvent);
    setLogLevelListener(&refreshInlineDriver);
    refreshInlineDriver();
    return true;
}();

} // namespace

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#include "driver/fork_state.hpp"

#include "cuctx/error.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>

namespace cuctx::detail {
namespace {

std::atomic<pid_t> g_initPid{0};
std::atomic<bool> g_forkedChild{false};
std::atomic<void (*)()> g_onChild{nullptr};
std::once_flag g_atforkOnce;

// Runs in the child of a fork(). Only async-signal-safe work: atomics and the callback, which
// itself only stores an atomic.
void atforkChild()
{
    if (g_initPid.load(std::memory_order_relaxed) == 0)
        return; // forked before CUDA was initialised: the child may use CUDA normally
    g_forkedChild.store(true, std::memory_order_relaxed);
    if (auto* onChild = g_onChild.load(std::memory_order_relaxed))
        onChild();
}

} // namespace

void noteDriverInitialised(void (*onChild)()) noexcept
{
    g_onChild.store(onChild, std::memory_order_relaxed);
    pid_t expected = 0;
    g_initPid.compare_exchange_strong(expected, getpid());
    std::call_once(g_atforkOnce, [] { pthread_atfork(nullptr, nullptr, atforkChild); });
}

bool forkedAfterInit() noexcept
{
    if (g_forkedChild.load(std::memory_order_relaxed))
        return true;
    const pid_t initPid = g_initPid.load(std::memory_order_relaxed);
    return initPid != 0 && initPid != getpid();
}

pid_t initialisingPid() noexcept
{
    return g_initPid.load(std::memory_order_relaxed);
}

void throwForkedAfterInit(const char* call, SourceLocation where)
{
    ErrorInfo info;
    info.condition = Errc::forked_after_init;
    info.call = call;
    info.detail = "this process (pid " + std::to_string(getpid()) +
                  ") was forked after CUDA was initialized in "
                  "process " +
                  std::to_string(initialisingPid()) + "; a forked child cannot use CUDA, every driver call fails there";
    info.hint = "Start worker processes before CUDA is initialised, or exec a fresh program (posix_spawn, "
                "fork+exec)";
    throw Error(std::move(info), where);
}

} // namespace cuctx::detail

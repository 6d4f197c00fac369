// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::testing: what cuctx's own thread-safety harness uses, for backends to test their code the
/// same way. Thread-safe unless noted.

#include "cuctx/context_stack.hpp"
#include "cuctx/error.hpp"
#include "cuctx/export.hpp"

#include <cuda.h>

#include <atomic>
#include <barrier>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

/// \namespace cuctx::testing
/// What cuctx's own thread-safety harness uses (cuctx-stress, the CPU suite), for backends to test
/// their code the same way. Every function is thread-safe.
namespace cuctx::testing {

/// Makes the `nth` next call (1 = the very next) of the driver entry point `symbol`
/// ("cuModuleLoadDataEx") return `result` without reaching the driver, on any thread. Works on the
/// real driver: the first call routes every entry of cuctx's driver table through a counting hook
/// (a few ns per call). Throws Errc::invalid_argument for a symbol cuctx does not use.
CUCTX_API void failNthCall(const std::string& symbol, int nth, CUresult result);
/// Forgets every failure not yet delivered.
CUCTX_API void clearInjectedFailures() noexcept;
/// Forgets which devices a sticky fault poisoned (cuctx::deviceFault), so that cuctx lets calls
/// through to them again. For test doubles that can undo a fault (the fake driver's reset); on the
/// real driver the device stays broken and the calls fail again, one by one.
CUCTX_API void forgetDeviceFaults() noexcept;

namespace detail {
CUCTX_API std::string describeStack(); // this thread's stack, bottom first, and the driver's current context
[[noreturn]] CUCTX_API void stackChanged(const std::string& before, const std::string& after);
} // namespace detail

/// Runs `f` and throws Errc::invalid_state, showing both, if it leaves this thread's context stack
/// (cuctx's record and the driver's current context) other than it found it. It looks at the calling
/// thread only: `f` runs there.
template <typename F>
void expectStackUnchanged(F&& f)
{
    const std::string before = detail::describeStack();
    f();
    const std::string after = detail::describeStack();
    if (after != before)
        detail::stackChanged(before, after);
}

/// Runs `f` and throws Errc::invalid_state, naming each device and what appeared there, if it
/// created or retained a context on any device that stays after it returns: a primary context that
/// was inactive and is now active (cuDevicePrimaryCtxGetState), this process newly listed by NVML on
/// a device (any context, whoever made it: the runtime API, another library), or more contexts made
/// through cuctx alive than before. For a backend's CI: "importing us does not touch the GPU".
/// Without NVML (or where it refuses the list) the other two are checked. A context created and
/// destroyed inside `f` leaves nothing to see. Loads the driver (cuInit), which makes no context.
CUCTX_API void expectNoNewContexts(const std::function<void()>& f);

namespace detail {
/// runConcurrently with the thread creation given: `start(body)` returns a joinable std::jthread
/// running `body`, or throws (tests make it fail at the nth thread).
template <typename Start, typename F>
void runConcurrentlyWith(Start&& start, unsigned threads, F&& f)
{
    std::barrier gate(static_cast<std::ptrdiff_t>(threads));
    std::atomic<bool> abandoned{false};
    std::mutex mutex;
    std::exception_ptr failure;
    std::exception_ptr notStarted;
    std::size_t started = 0;
    {
        std::vector<std::jthread> pool;
        pool.reserve(threads); // before any thread: a failure here leaves nothing to join
        try {
            for (unsigned i = 0; i < threads; ++i) {
                pool.push_back(start([&, i] {
                    gate.arrive_and_wait();
                    if (abandoned.load())
                        return;
                    try {
                        f(i);
                    } catch (...) {
                        std::lock_guard lock(mutex);
                        if (!failure)
                            failure = std::current_exception();
                    }
                }));
            }
        } catch (...) {
            // Release the threads that started (they wait at the gate for the missing ones), let
            // them return without running `f`, and join them below: never std::terminate.
            notStarted = std::current_exception();
            abandoned.store(true);
            for (std::size_t missing = pool.size(); missing < threads; ++missing)
                gate.arrive_and_drop();
        }
        started = pool.size();
    } // joins
    if (notStarted) {
        try {
            std::rethrow_exception(notStarted);
        } catch (const std::system_error& e) {
            ErrorInfo info;
            info.condition = Errc::invalid_state;
            info.call = "cuctx::testing::runConcurrently";
            info.object = "thread " + std::to_string(started + 1) + " of " + std::to_string(threads);
            info.detail = std::string("the system refused to start it (") + e.what() + "); the " +
                          std::to_string(started) + " started were joined without running";
            info.hint = "Run fewer threads, or raise the limit (ulimit -u, kernel.threads-max)";
            throw Error(std::move(info));
        }
    }
    if (failure)
        std::rethrow_exception(failure);
}
} // namespace detail

/// Runs `f(index)` on `threads` new threads released together (a barrier, so they truly race), joins
/// them all, and rethrows the first exception any of them threw. When the system refuses a thread,
/// none runs `f`: the ones started are joined and Errc::invalid_state is thrown, naming the thread
/// and the system's error (it never hangs or ends in std::terminate). `f` is called on every thread
/// at once (the same object, concurrently), so it must be safe to call so.
template <typename F>
void runConcurrently(unsigned threads, F&& f)
{
    detail::runConcurrentlyWith([](auto&& body) { return std::jthread(std::forward<decltype(body)>(body)); }, threads,
                                f);
}

} // namespace cuctx::testing

// SPDX-License-Identifier: MIT
#pragma once

// cuctx::testing: what cuctx's own thread-safety harness uses, for backends to test their code the
// same way. Thread-safe unless noted.

#include "cuctx/context_stack.hpp"
#include "cuctx/error.hpp"
#include "cuctx/export.hpp"

#include <cuda.h>

#include <barrier>
#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cuctx::testing {

/// Makes the `nth` next call (1 = the very next) of the driver entry point `symbol`
/// ("cuModuleLoadDataEx") return `result` without reaching the driver, on any thread. Works on the
/// real driver: the first call routes every entry of cuctx's driver table through a counting hook
/// (a few ns per call). Throws Errc::invalid_argument for a symbol cuctx does not use.
CUCTX_API void failNthCall(const std::string& symbol, int nth, CUresult result);
/// Forgets every failure not yet delivered.
CUCTX_API void clearInjectedFailures() noexcept;

namespace detail {
CUCTX_API std::string describeStack(); // this thread's stack, bottom first, and the driver's current context
[[noreturn]] CUCTX_API void stackChanged(const std::string& before, const std::string& after);
} // namespace detail

/// Runs `f` and throws Errc::invalid_state, showing both, if it leaves this thread's context stack
/// (cuctx's record and the driver's current context) other than it found it.
template <typename F>
void expectStackUnchanged(F&& f)
{
    const std::string before = detail::describeStack();
    f();
    const std::string after = detail::describeStack();
    if (after != before)
        detail::stackChanged(before, after);
}

/// Runs `f(index)` on `threads` new threads released together (a barrier, so they truly race), joins
/// them all, and rethrows the first exception any of them threw.
template <typename F>
void runConcurrently(unsigned threads, F&& f)
{
    std::barrier start(static_cast<std::ptrdiff_t>(threads));
    std::mutex mutex;
    std::exception_ptr failure;
    {
        std::vector<std::jthread> pool;
        for (unsigned i = 0; i < threads; ++i)
            pool.emplace_back([&, i] {
                start.arrive_and_wait();
                try {
                    f(i);
                } catch (...) {
                    std::lock_guard lock(mutex);
                    if (!failure)
                        failure = std::current_exception();
                }
            });
    }
    if (failure)
        std::rethrow_exception(failure);
}

} // namespace cuctx::testing

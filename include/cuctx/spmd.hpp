// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::runOnEach: one worker thread per context (the seeds' SPMD model), each with its context
/// bound for its whole life, so that the work's guards and launches cost no context switch. Results
/// come back in context order. If a worker throws, the others are asked to stop (their stop_token)
/// and joined, and the first exception is rethrown in the caller: no thread is left running.

#include "cuctx/context.hpp"
#include "cuctx/context_binding.hpp"

#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <type_traits>
#include <vector>

namespace cuctx {

/// Runs `work(context, index, stop)` on one new thread per context; returns what each returned
/// (nothing for void work). `stop` is requested once any worker has failed.
///
/// \par Threading
/// Thread-safe: each call has threads of its own. `work` is reentrant and runs on every worker
/// thread at once (the same object, called concurrently), each with its context bound by a
/// ContextBinding; it may call cuctx (a guard on another context pushes and pops as usual).
template <typename Work>
auto runOnEach(const std::vector<Context>& contexts, Work&& work)
{
    using Result = std::invoke_result_t<Work&, const Context&, std::size_t, std::stop_token>;
    constexpr bool isVoid = std::is_void_v<Result>;
    // One byte per worker for void work, not bool: std::vector<bool> packs its elements into shared
    // words, so workers setting their own elements at once would race.
    using Slot = std::conditional_t<isVoid, unsigned char, std::optional<Result>>;
    std::vector<Slot> results(contexts.size());
    std::stop_source stop;
    std::mutex failureMutex;
    std::exception_ptr failure;
    {
        std::vector<std::jthread> workers;
        workers.reserve(contexts.size());
        for (std::size_t i = 0; i < contexts.size(); ++i)
            workers.emplace_back([&, i] {
                try {
                    ContextBinding binding(contexts[i]);
                    if constexpr (isVoid) {
                        work(contexts[i], i, stop.get_token());
                        results[i] = 1;
                    } else {
                        results[i].emplace(work(contexts[i], i, stop.get_token()));
                    }
                } catch (...) {
                    std::lock_guard lock(failureMutex);
                    if (!failure)
                        failure = std::current_exception();
                    stop.request_stop();
                }
            });
    } // joins every worker
    if (failure)
        std::rethrow_exception(failure);
    if constexpr (!isVoid) {
        std::vector<Result> out;
        out.reserve(results.size());
        for (auto& r : results)
            out.push_back(std::move(*r));
        return out;
    }
}

/// runOnEach over the primary context of every device (as runOnEach for threads).
template <typename Work>
auto runOnEachDevice(Work&& work)
{
    std::vector<Context> contexts;
    for (const Device& device : Device::all())
        contexts.push_back(Context::primary(device));
    return runOnEach(contexts, std::forward<Work>(work));
}

} // namespace cuctx

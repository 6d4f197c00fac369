// cuctx-bench-contexts: what entering a context costs through cuctx against the raw driver calls,
// measured in the same run (ratios matter; absolute times drift between machines).
//
//   switch   ContextGuard that must push and pop   vs  cuCtxPushCurrent + cuCtxPopCurrent
//   elided   ContextGuard on the current context   vs  the same raw pair
//   shared   N threads, one shared context, a guard around each task (workers adopted the context)
//            vs  a raw push + pop around each task
//
// usage: cuctx-bench-contexts [--threads N] [--tasks N] [--iterations N] [--csv]

#include "bench_common.hpp"
#include "context/fence.hpp"
#include "cuctx/cuctx.hpp"
#include "driver/driver_state.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace cuctx::bench;
using Clock = std::chrono::steady_clock;

struct Options {
    int threads = 16;
    long tasks = 1'000'000;      // per thread, for the shared-context runs
    long iterations = 1'000'000; // for the single-thread runs
    int repeats = 11;            // single-thread runs keep the best of these
    bool csv = false;
};

// Best time per iteration (ns) of each of two loops, over `repeats` rounds that run them in turn, so
// that both see the same machine (clock, neighbours) as far as possible.
std::pair<double, double> bestOfBoth(const Options& o, const std::function<void(long)>& first,
                                     const std::function<void(long)>& second)
{
    double best[2] = {1e300, 1e300};
    for (int r = 0; r < o.repeats; ++r) {
        for (int which = 0; which < 2; ++which) {
            const auto t0 = Clock::now();
            (which == 0 ? first : second)(o.iterations);
            const double ns =
                std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / o.iterations;
            best[which] = std::min(best[which], ns);
        }
    }
    return {best[0], best[1]};
}

// Aggregate operations per second of `threads` threads each running `perThread(tasks)` after a common
// start: all tasks over the span from the first thread's start to the last one's finish. `setUp`
// and `tearDown` run on each thread outside that span.
double aggregateOps(const Options& o, const std::function<void()>& setUp,
                    const std::function<void(long)>& perThread, const std::function<void()>& tearDown)
{
    std::barrier start(o.threads);
    std::vector<Clock::time_point> begins(static_cast<std::size_t>(o.threads));
    std::vector<Clock::time_point> ends(static_cast<std::size_t>(o.threads));
    std::vector<std::thread> threads;
    for (int t = 0; t < o.threads; ++t)
        threads.emplace_back([&, t] {
            setUp();
            start.arrive_and_wait();
            begins[static_cast<std::size_t>(t)] = Clock::now();
            perThread(o.tasks);
            ends[static_cast<std::size_t>(t)] = Clock::now();
            tearDown();
        });
    for (auto& th : threads)
        th.join();
    const auto first = *std::min_element(begins.begin(), begins.end());
    const auto last = *std::max_element(ends.begin(), ends.end());
    const double seconds = std::chrono::duration<double>(last - first).count();
    return static_cast<double>(o.tasks) * o.threads / seconds;
}

} // namespace

int main(int argc, char** argv)
{
    Options o;
    if (!parseFlags(argc, argv,
                    {{"--threads", &o.threads},
                     {"--tasks", &o.tasks},
                     {"--iterations", &o.iterations},
                     {"--csv", &o.csv}})) {
        std::fprintf(stderr,
                     "usage: cuctx-bench-contexts [--threads N] [--tasks N] [--iterations N] [--csv]\n");
        return 2;
    }
    if (!driverReady("cuctx-bench-contexts"))
        return 77;
    const auto& d = cuctx::detail::api();
    const cuctx::Device device = cuctx::Device::get(0);
    cuctx::Context home = cuctx::Context::create(device);  // current underneath, as in a real program
    cuctx::Context other = cuctx::Context::create(device); // what the switching guard enters
    std::vector<Row> rows;

    cuctx::ContextBinding binding(home);
    std::optional<PinToCurrentCpu> pin(std::in_place);
    const bool pinned = pin->pinned();
    const CUcontext otherHandle = other.native();
    auto rawPairLoop = [&](long n) {
        CUcontext popped = nullptr;
        for (long i = 0; i < n; ++i) {
            d.cuCtxPushCurrent(otherHandle);
            d.cuCtxPopCurrent(&popped);
        }
        keep(popped);
    };
    const auto [rawPair, switching] = bestOfBoth(o, rawPairLoop, [&](long n) {
        // No keep(g) here: the driver calls cannot be optimised away, and the raw loop has no
        // compiler barrier per iteration either.
        for (long i = 0; i < n; ++i)
            cuctx::ContextGuard g(other);
    });
    const auto [rawPair2, elided] = bestOfBoth(o, rawPairLoop, [&](long n) {
        for (long i = 0; i < n; ++i) {
            cuctx::ContextGuard g(home);
            keep(g);
        }
    });
    const auto [getCurrent, elided2] = bestOfBoth(
        o,
        [&](long n) {
            CUcontext c = nullptr;
            for (long i = 0; i < n; ++i)
                d.cuCtxGetCurrent(&c);
            keep(c);
        },
        [&](long n) {
            for (long i = 0; i < n; ++i) {
                cuctx::ContextGuard g(home);
                keep(g);
            }
        });
    rows.push_back({"guard that switches (1 thread)", ns(rawPair), ns(switching), switching / rawPair,
                    "<= 1.10x raw pair", switching / rawPair <= 1.10});
    rows.push_back({"guard on the current context", ns(rawPair2), ns(elided), rawPair2 / elided,
                    ">= 10x cheaper, <= 5 ns", rawPair2 / elided >= 10 && elided <= 5.0});
    rows.push_back(
        {"cuCtxGetCurrent (reference)", ns(getCurrent), ns(elided2), getCurrent / elided2, "(none)", true});

    pin.reset();

    // N threads, one shared context, a task per iteration.
    const CUcontext sharedHandle = home.native();
    const double rawShared = aggregateOps(
        o, [] {},
        [&](long tasks) {
            CUcontext popped = nullptr;
            for (long i = 0; i < tasks; ++i) {
                d.cuCtxPushCurrent(sharedHandle);
                keep(i);
                d.cuCtxPopCurrent(&popped);
            }
        },
        [] {});
    const double cuctxShared = aggregateOps(
        o, [&] { cuctx::ContextStack::adopt(home); },
        [&](long tasks) {
            for (long i = 0; i < tasks; ++i) {
                cuctx::ContextGuard g(home);
                keep(g); // the task: here nothing but being inside the guard
            }
        },
        [] { cuctx::ContextStack::release(); });
    const std::string name = std::to_string(o.threads) + " threads, 1 shared context";
    rows.push_back({name, mops(rawShared), mops(cuctxShared), cuctxShared / rawShared, ">= 50x raw aggregate",
                    cuctxShared / rawShared >= 50});

    if (!o.csv)
        std::printf(
            "cuctx-bench-contexts: %s, driver %d, %ld iterations (best of %d), %d threads x %ld tasks, "
            "asymmetric fence: %s, single-thread runs %s\n\n",
            device.name().c_str(), cuctx::Driver::version(), o.iterations, o.repeats, o.threads, o.tasks,
            cuctx::detail::fenceModeName(), pinned ? "pinned to one CPU" : "not pinned");
    print(rows, o.csv);
    return 0;
}

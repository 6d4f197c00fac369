// SPDX-License-Identifier: MIT
// cuctx-bench-contexts: what entering a context costs through cuctx against the raw driver calls,
// measured in the same run (ratios matter; absolute times drift between machines).
//
//   switch   ContextGuard that must push and pop   vs  cuCtxPushCurrent + cuCtxPopCurrent
//   elided   ContextGuard on the current context   vs  the same raw pair
//   shared   N threads, one shared context, a guard around each task (workers adopted the context)
//            vs  a raw push + pop around each task
//
// Single-thread figures come from pairs of short runs, raw and cuctx side by side (compareLoops):
// the ns columns show each one's best run, the ratio the median of the pairs' ratios.
//
// usage: cuctx-bench-contexts [--threads N, 1-1024] [--tasks N] [--iterations N, 1000 or more]
//                             [--rounds N, 3 or more] [--csv]

#include "bench_common.hpp"
#include "context/asymmetric_fence.hpp"
#include "cuctx/cuctx.hpp"
#include "measure.hpp"

#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

using namespace cuctx::bench;

struct Options {
    int threads = 16;
    long tasks = 1'000'000;   // per thread, for the shared-context runs
    long iterations = 50'000; // per timed run of a single-thread loop
    int rounds = 201;         // pairs of runs (raw and cuctx) per single-thread comparison
    bool csv = false;
};

} // namespace

int main(int argc, char** argv)
{
    Options o;
    // Fewer iterations or rounds than these time the clock, not the guard, and give a verdict all the same.
    if (!parseFlags("cuctx-bench-contexts", argc, argv,
                    {{"--threads", &o.threads, 1, kMaxThreads},
                     {"--tasks", &o.tasks},
                     {"--iterations", &o.iterations, 1000},
                     {"--rounds", &o.rounds, 3},
                     {"--csv", &o.csv}})) {
        std::fprintf(stderr, "usage: cuctx-bench-contexts [--threads N, 1-1024] [--tasks N] "
                             "[--iterations N, 1000 or more] [--rounds N, 3 or more] [--csv]\n");
        return 2;
    }
    if (!driverReady("cuctx-bench-contexts"))
        return 77;
    std::vector<Row> rows;
    try {
        const cuctx::Device device = cuctx::Device::get(0);
        cuctx::Context home = cuctx::Context::create(device);  // current underneath, as in a real program
        cuctx::Context other = cuctx::Context::create(device); // what the switching guard enters

        const GuardCosts g = measureGuards(home, other, o.iterations, o.rounds);
        rows.push_back({"guard that switches (1 thread)", ns(g.rawPair), ns(g.switching), g.switchingRatio,
                        "<= 1.05x raw pair", g.switchingRatio <= 1.05});
        rows.push_back({"guard on the current context", ns(g.rawPairAgain), ns(g.elided), g.elidedSpeedup, "<= 3 ns",
                        g.elided <= 3.0});
        rows.push_back({"cuCtxGetCurrent (reference)", ns(g.getCurrent), ns(g.elidedAgain),
                        g.getCurrent / g.elidedAgain, "(none)", std::isfinite(g.getCurrent / g.elidedAgain)});

        const SharedCosts shared = measureShared(home, o.threads, o.tasks, false);
        const std::string name = std::to_string(o.threads) + " threads, 1 shared context";
        rows.push_back({name, mops(shared.raw), mops(shared.cuctx), shared.cuctx / shared.raw, ">= 3000 Mops/s",
                        shared.cuctx >= 3000e6});

        if (!o.csv)
            std::printf("cuctx-bench-contexts: %s, driver %d, %d pairs of runs of %ld iterations, %d threads x %ld "
                        "tasks, asymmetric fence: %s, single-thread runs %s\n\n",
                        device.name().c_str(), cuctx::Driver::version(), o.rounds, o.iterations, o.threads, o.tasks,
                        cuctx::detail::fenceModeName(), g.pinned ? "pinned to one CPU" : "not pinned");
    } catch (const std::exception& e) {
        return stopped("cuctx-bench-contexts", rows, o.csv, e);
    }
    print(rows, o.csv);
    return 0;
}

// cuctx-bench-switching: ContextGuard against the raw driver in the switching patterns users have,
// not only the one context entered again and again. Every pattern runs the same sequence of
// contexts three ways in the same process: the raw cuCtxPushCurrent + cuCtxPopCurrent pair, a
// minimal guard that pushes and pops and checks nothing (the floor any design must stay near), and
// cuctx::ContextGuard. Single-thread figures are the median of pairs of short runs side by side
// (compareLoops); one iteration is one context entered and left.
//
//   same        one created context, again and again
//   alternate   two created contexts, A B A B ...
//   round-robin four created contexts in turn
//   random      eight created contexts in a fixed random order
//   nested      three created contexts entered inside each other (A { B { C } })
//   mixed       the primary context and two created ones, P A P B ...
//   N threads   each thread rotating over 2, 4 and 8 shared contexts, a guard per task (aggregate
//               over windows of --window-ms; the median ratio of --thread-rounds rounds of windows
//               and its 95% interval), the minimal guard beside it
//
// usage: cuctx-bench-switching [--iterations N, 1000 or more] [--rounds N, 3 or more]
//                              [--threads N, 1-1024] [--window-ms N, 20-60000]
//                              [--thread-rounds N, 6 or more] [--csv]

#include "bench_common.hpp"
#include "cuctx/cuctx.hpp"
#include "driver/driver_state.hpp"
#include "measure.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace cuctx::bench;

struct Options {
    long iterations = 20'000; // contexts entered per timed run
    int rounds = 101;         // pairs of runs per comparison
    int threads = 16;
    long windowMs = 200;   // each multi-thread run's window
    int threadRounds = 33; // rounds of multi-thread runs (raw, guard, minimal guard), at least 6
    bool csv = false;
};

constexpr std::size_t kSequenceLength = 4096; // a power of two: the loops index it with a mask

// A guard that pushes and pops and checks nothing: what the driver alone costs through a scope. It
// calls through the same table as the raw loop, taken once outside the loop (cuctx::detail::api()
// per call would add its caller's location and a test for a loaded driver to every call: 1-3% of
// the pair, measured on the H200, which is not the floor's to pay).
class MinimalGuard {
public:
    MinimalGuard(const cuctx::detail::DriverApi& d, CUcontext context) : d_(d) { d_.cuCtxPushCurrent(context); }
    ~MinimalGuard()
    {
        CUcontext popped = nullptr;
        d_.cuCtxPopCurrent(&popped);
    }
    MinimalGuard(const MinimalGuard&) = delete;
    MinimalGuard& operator=(const MinimalGuard&) = delete;

private:
    const cuctx::detail::DriverApi& d_;
};

struct Pattern {
    std::string name;
    std::vector<std::size_t> sequence; // indices into the contexts, kSequenceLength of them
};

std::vector<std::size_t> repeated(std::initializer_list<std::size_t> cycle)
{
    std::vector<std::size_t> s;
    while (s.size() < kSequenceLength)
        for (std::size_t i : cycle)
            s.push_back(i);
    s.resize(kSequenceLength);
    return s;
}

std::vector<std::size_t> shuffled(std::size_t first, std::size_t count)
{
    std::mt19937 random(20261203);
    std::uniform_int_distribution<std::size_t> pick(first, first + count - 1);
    std::vector<std::size_t> s(kSequenceLength);
    for (auto& i : s)
        i = pick(random);
    return s;
}

struct Figures {
    Comparison cuctx; // raw pair (first) against ContextGuard (second)
    Comparison floor; // raw pair (first) against the minimal guard (second)
};

Figures comparePattern(const std::vector<cuctx::Context>& contexts, const std::vector<std::size_t>& sequence,
                       const Options& o)
{
    const auto& d = cuctx::detail::api();
    std::vector<CUcontext> handles;
    for (const auto& c : contexts)
        handles.push_back(c.native());
    // Each side's sequence holds its own handles by value: the raw side's CUcontexts, the guard's
    // Contexts (copies: one word each, the state they share). Until 2026-12-06 the guard's held
    // pointers to the Contexts, a load more per context entered than the raw side made.
    std::vector<CUcontext> rawSequence;
    std::vector<cuctx::Context> guardSequence;
    for (std::size_t i : sequence) {
        rawSequence.push_back(handles[i]);
        guardSequence.push_back(contexts[i]);
    }
    constexpr std::size_t mask = kSequenceLength - 1;
    // Each loop goes on where its last call stopped (a run is timed in parts: compareLoops), in a
    // local copy of its position, so that the position stays in a register across the driver's calls.
    std::size_t rawAt = 0;
    std::size_t guardAt = 0;
    std::size_t minimalAt = 0;
    auto raw = [&](long n) {
        CUcontext popped = nullptr;
        std::size_t at = rawAt;
        for (long i = 0; i < n; ++i) {
            d.cuCtxPushCurrent(rawSequence[at++ & mask]);
            d.cuCtxPopCurrent(&popped);
        }
        rawAt = at;
        keep(popped);
    };
    auto guards = [&](long n) {
        std::size_t at = guardAt;
        for (long i = 0; i < n; ++i)
            cuctx::ContextGuard g(guardSequence[at++ & mask]);
        guardAt = at;
    };
    auto minimal = [&](long n) {
        std::size_t at = minimalAt;
        for (long i = 0; i < n; ++i)
            MinimalGuard g(d, rawSequence[at++ & mask]);
        minimalAt = at;
    };
    return {compareLoops(o.iterations, o.rounds, raw, guards), compareLoops(o.iterations, o.rounds, raw, minimal)};
}

// A { B { C } }: three contexts entered per iteration of the loops, reported per context entered.
Figures compareNested(const std::vector<cuctx::Context>& contexts, const Options& o)
{
    const auto& d = cuctx::detail::api();
    // Each side holds its own three handles by value in an array, as comparePattern's sequences do:
    // the raw side and the floor its CUcontexts, the guard's side its Contexts (until 2026-12-06 the
    // raw side held three locals and the guards reached theirs through the vector, a load more per
    // context entered than the raw side made).
    const std::array<CUcontext, 3> handles{contexts[0].native(), contexts[1].native(), contexts[2].native()};
    const std::array<cuctx::Context, 3> held{contexts[0], contexts[1], contexts[2]};
    auto raw = [&](long n) {
        CUcontext popped = nullptr;
        for (long i = 0; i < n; ++i) {
            d.cuCtxPushCurrent(handles[0]);
            d.cuCtxPushCurrent(handles[1]);
            d.cuCtxPushCurrent(handles[2]);
            d.cuCtxPopCurrent(&popped);
            d.cuCtxPopCurrent(&popped);
            d.cuCtxPopCurrent(&popped);
        }
        keep(popped);
    };
    auto guards = [&](long n) {
        for (long i = 0; i < n; ++i) {
            cuctx::ContextGuard ga(held[0]);
            cuctx::ContextGuard gb(held[1]);
            cuctx::ContextGuard gc(held[2]);
        }
    };
    auto minimal = [&](long n) {
        for (long i = 0; i < n; ++i) {
            MinimalGuard ga(d, handles[0]);
            MinimalGuard gb(d, handles[1]);
            MinimalGuard gc(d, handles[2]);
        }
    };
    const long nests = o.iterations / 3; // main() asks for at least 1000 iterations
    auto perContext = [](Comparison x) {
        x.first /= 3;
        x.second /= 3;
        return x;
    };
    return {perContext(compareLoops(nests, o.rounds, raw, guards)),
            perContext(compareLoops(nests, o.rounds, raw, minimal))};
}

// `threads` threads, each entering the shared contexts in turn from its own starting point, a
// guard (or the raw pair, or the minimal guard) around each task. Aggregate operations per second,
// over windows (windowRate) in which all the threads run the whole time: the three sides in
// `threadRounds` rounds of windows, rotating which goes first (33 rounds: each of the three orders
// eleven times); each side's best rate, and the median of the rounds' ratios to the raw side with its
// 95% interval (a multi-thread run drifts more than a single-thread one: the driver serialises
// switches of shared contexts, and the system schedules sixteen threads). Some 30 rounds, not 7: on
// the H200 the medians of 7 pairs lay between 0.965 and 1.066 in nine runs of one build, those of 31
// between 1.000 and 1.041 in three (timed to the last finish, below). The minimal guard makes the raw side's driver
// calls and nothing else, so its ratio shows how far the rows' ratios move with nothing of cuctx's in them.
//
// Windows, not a fixed number of tasks a thread timed from the first thread's start to the last one's
// finish (until 2026-12-06): there the last thread to finish set the rate, and it ran its last tasks
// beside fewer and fewer others (the slowest of the sixteen took 1.13-1.24 times as long as the
// fastest on an H100 machine that day), so a row timed a thinning contention that a pool running all
// its threads never has. Both ways side by side in one process read the same there (the guard 0.994,
// 1.014, 0.998 timed to the last finish; 0.996, 1.007, 1.014 in windows, over 2, 4, 8 contexts).
//
// The verdict: the guard is below raw when its rounds show it, that is when the whole distribution-free
// 95% interval of their median ratio (medianInterval) lies below 1.00 (a one-sided test at about
// 97.5%). Until 2026-12-06 the median itself had to reach 1.00, and the floor, the same driver calls
// through a scope, missed that over two contexts in three of runs 1-8 of docs/switching-runs.md
// (0.995-0.997): that verdict judged the rounds' noise, not the guard. The new one is more lenient by
// design (a median below 1.00 passes where its interval reaches 1.00), not toothless: timed to the last
// finish, in five runs on H100 machines that day, it put the guard below raw in 8 of 15 rows (medians
// 0.912-0.982) and the floor in one (0.992). The interval speaks for one process only: it takes the
// rounds for independent draws, and the medians of one row differ between processes, even on one
// machine, by more than their intervals' widths, so a run's verdict holds for the process and the
// machine it ran on.
//
// What moves these rows is the driver's contention, which answers to nanoseconds: a raw side that
// spends about 8 ns more between a task's pop and the next push gained 2-23%, one that spends them
// between the push and the pop lost 3-5% (cuctx-bench-guard-anatomy --threads).
struct ThreadFigures {
    double raw = 0;
    double guarded = 0;
    double minimal = 0;
    MedianInterval ratio;      // guard / raw
    MedianInterval floorRatio; // minimal guard / raw
    int emptyRounds = 0;       // rounds left out: a window that finished no batch
};
ThreadFigures compareThreads(const std::vector<cuctx::Context>& shared, const Options& o)
{
    const auto& d = cuctx::detail::api();
    const std::size_t k = shared.size();
    std::atomic<std::size_t> nextStart{0};
    thread_local std::size_t start = 0;
    // Each thread's `n` tasks, from its starting point: the raw pair, a guard, or the minimal guard,
    // with the same task inside on every side (keep(i): an opaque use, a compiler barrier). Not
    // keep(g): taking the guard's address made its two members escape to the stack, two stores and
    // their reloads around the driver's calls that the other sides and a guard in a program do not
    // make.
    const std::function<void(long)> rawTasks = [&](long n) {
        CUcontext popped = nullptr;
        for (long i = 0; i < n; ++i) {
            d.cuCtxPushCurrent(shared[(start + static_cast<std::size_t>(i)) % k].native());
            keep(i);
            d.cuCtxPopCurrent(&popped);
        }
    };
    const std::function<void(long)> guardTasks = [&](long n) {
        for (long i = 0; i < n; ++i) {
            cuctx::ContextGuard g(shared[(start + static_cast<std::size_t>(i)) % k]);
            keep(i);
        }
    };
    const std::function<void(long)> minimalTasks = [&](long n) {
        for (long i = 0; i < n; ++i) {
            MinimalGuard g(d, shared[(start + static_cast<std::size_t>(i)) % k].native());
            keep(i);
        }
    };
    // Before the window opens, each thread does one task of its side, so that neither side's figure
    // holds what a thread's first switch costs (the driver's per-thread set-up, and cuctx
    // registering the thread). Both sides' threads start from the same contexts, whatever the
    // number of threads.
    auto run = [&](const std::function<void(long)>& tasks) {
        nextStart.store(0);
        return windowRate(
            o.threads, static_cast<double>(o.windowMs) * 1e-3, kSwitchTasksPerBatch,
            [&] {
                start = nextStart.fetch_add(1);
                tasks(1);
            },
            [&] { tasks(kSwitchTasksPerBatch); });
    };
    const std::array<const std::function<void(long)>*, 3> sides{&rawTasks, &guardTasks, &minimalTasks};
    RoundsOfSides rounds =
        roundsOfSides(o.threadRounds, sides.size(), [&](std::size_t side) { return run(*sides[side]); });
    ThreadFigures f;
    f.raw = rounds.best[0];
    f.guarded = rounds.best[1];
    f.minimal = rounds.best[2];
    f.ratio = medianInterval(std::move(rounds.ratios[1]));
    f.floorRatio = medianInterval(std::move(rounds.ratios[2]));
    f.emptyRounds = rounds.emptyRounds;
    return f;
}

} // namespace

int main(int argc, char** argv)
{
    Options o;
    // Fewer iterations or rounds than these time the clock, not the guard; a window shorter than
    // kMinWindowMs holds too few batches a thread to say anything (a thread's batch takes up to 1.3 ms).
    constexpr long kMinWindowMs = 20;
    if (!parseFlags("cuctx-bench-switching", argc, argv,
                    {{"--iterations", &o.iterations, 1000},
                     {"--rounds", &o.rounds, 3},
                     {"--threads", &o.threads, 1, kMaxThreads},
                     {"--window-ms", &o.windowMs, kMinWindowMs, 60'000},
                     {"--thread-rounds", &o.threadRounds, 6},
                     {"--csv", &o.csv}})) {
        std::fprintf(stderr, "usage: cuctx-bench-switching [--iterations N, 1000 or more] [--rounds N, 3 or more] "
                             "[--threads N, 1-1024] [--window-ms N, 20-60000] [--thread-rounds N, 6 or more] "
                             "[--csv]\n");
        return 2;
    }
    if (!driverReady("cuctx-bench-switching"))
        return 77;
    std::vector<Row> rows;
    try {
        const cuctx::Device device = cuctx::Device::get(0);
        // Contexts 0-7 are created ones, 8 is the primary context; `home` stays current underneath, as
        // in a real program.
        cuctx::Context home = cuctx::Context::create(device);
        std::vector<cuctx::Context> contexts;
        for (int i = 0; i < 8; ++i)
            contexts.push_back(cuctx::Context::create(device));
        contexts.push_back(cuctx::Context::primary(device));
        const std::size_t primary = 8;

        const std::array patterns{
            Pattern{"same context again", repeated({0})},
            Pattern{"alternating two", repeated({0, 1})},
            Pattern{"round-robin over four", repeated({0, 1, 2, 3})},
            Pattern{"random over eight", shuffled(0, 8)},
            Pattern{"primary and created mixed", repeated({primary, 0, primary, 1})},
        };
        bool pinned = false;
        {
            cuctx::ContextBinding binding(home);
            PinToCurrentCpu pin;
            pinned = pin.pinned();
            auto add = [&](const std::string& name, const Figures& f) {
                rows.push_back({name, ns(f.cuctx.first), ns(f.cuctx.second), f.cuctx.ratio, "<= 1.05x raw pair",
                                f.cuctx.ratio <= 1.05});
                rows.push_back({"  minimal guard (floor)", ns(f.floor.first), ns(f.floor.second), f.floor.ratio,
                                "(none)", std::isfinite(f.floor.ratio)});
            };
            for (const Pattern& p : patterns)
                add(p.name, comparePattern(contexts, p.sequence, o));
            add("nested three deep", compareNested(contexts, o));
        }
        for (std::size_t k : {2, 4, 8}) {
            const std::vector<cuctx::Context> shared(contexts.begin(), contexts.begin() + static_cast<long>(k));
            const ThreadFigures f = compareThreads(shared, o);
            rows.push_back({std::to_string(o.threads) + " threads over " + std::to_string(k) + " contexts", mops(f.raw),
                            mops(f.guarded), f.ratio.median, "not shown below raw", f.ratio.high >= 1.0, f.ratio.low,
                            f.ratio.high});
            rows.push_back({"  minimal guard (floor)", mops(f.raw), mops(f.minimal), f.floorRatio.median, "(none)",
                            std::isfinite(f.floorRatio.median), f.floorRatio.low, f.floorRatio.high});
            if (const std::string lost = roundsLeftOut(f.emptyRounds, o.threadRounds, "",
                                                       "a longer --window-ms gives each thread time for one");
                !lost.empty())
                std::fprintf(stderr, "cuctx-bench-switching: %s: %s\n", rows[rows.size() - 2].name.c_str(),
                             lost.c_str());
        }
        if (!o.csv)
            std::printf("cuctx-bench-switching: %s, driver %d, %d pairs of runs of %ld contexts entered, %d threads "
                        "in windows of %ld ms, single-thread runs %s; ns per context entered\n\n",
                        device.name().c_str(), cuctx::Driver::version(), o.rounds, o.iterations, o.threads, o.windowMs,
                        pinned ? "pinned to one CPU" : "not pinned");
    } catch (const std::exception& e) {
        // A thread the system refused, a driver call that failed: the rows finished so far, and why.
        return stopped("cuctx-bench-switching", rows, o.csv, e);
    }
    print(rows, o.csv);
    return 0;
}

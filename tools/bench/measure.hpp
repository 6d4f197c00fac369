// SPDX-License-Identifier: MIT
#pragma once

// The measurements behind cuctx's benchmarks and `cuctx-inspect bench`: each times the raw driver
// and cuctx in the same run, so that their ratio holds whatever the machine. Run them on a thread
// with no context of its own current (they bind and restore their own).

#include "cuctx/context.hpp"
#include "cuctx/function.hpp"
#include "cuctx/module_image.hpp"

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace cuctx::bench {

/// An empty kernel ("empty") in PTX that every driver since CUDA 12.0 compiles for its devices.
inline constexpr const char* kEmptyKernelPtx =
    ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry empty()\n{\n    ret;\n}\n";

/// Two loops timed in `rounds` pairs of runs of `iterations` (which goes first alternates): each
/// one's best time per iteration (ns), and the median over the pairs of second / first. The runs
/// of a pair are adjacent, so the median holds while the machine's speed drifts between pairs; each
/// run is spread over kPlacementsPerRun stack placements (timeSpread), so that it holds whatever
/// placement the process got, too.
struct Comparison {
    double first = 0;
    double second = 0;
    double ratio = 0; ///< second / first, the median of the pairs'
};
/// Where a loop's stack lies changes what it costs: a load the CPU takes for dependent on a store
/// 4 KiB away waits for it, and which of the driver's and the guard's accesses meet that way depends
/// on where the stack lies against the thread record, the context's state and the driver's objects.
/// `cuctx-bench-guard-anatomy --sweep` showed the switching guard anywhere from 1.02x to 1.21x the
/// raw pair by placement alone; a context that costs 1.11x over one set of placements cost 1.01x
/// over another, moments later in the same process. So a run is split into parts at placements
/// spread over the whole 4 KiB range, and its time is what it costs on average over them.
inline constexpr int kPlacementsPerRun = 16;
/// How far below its usual place (bytes) part `part` of round `round` runs its loop: 16-byte steps
/// over 4 KiB; a round's parts lie 256 bytes apart, and 16 consecutive rounds visit every step once.
std::size_t stackPlacement(int round, int part);
/// How far below its usual place (bytes) batch `batch` (0 or more) of a thread runs, where a thread's
/// batches spread its stack (cuctx-bench-guard-anatomy --threads ... stack): 16-byte steps over 4 KiB, each
/// batch 7 steps on from the last, so that any 256 consecutive batches visit every step once, however
/// few batches a window holds and wherever a thread starts.
std::size_t batchPlacement(long batch);
/// ns per iteration of loop(iterations), run in kPlacementsPerRun even parts (fewer where `iterations`
/// is smaller), part k at stackPlacement(round, k). Each part calls `loop` anew: a loop that walks a
/// sequence should go on where the last call stopped.
double timeSpread(long iterations, int round, const std::function<void(long)>& loop);
/// ns per iteration of loop(iterations).
double timePerIteration(long iterations, const std::function<void(long)>& loop);
/// f() run with the stack `pad` bytes lower than it would be; its result.
double lowered(std::size_t pad, const std::function<double()>& f);

Comparison compareLoops(long iterations, int rounds, const std::function<void(long)>& first,
                        const std::function<void(long)>& second);

/// The median of `values` and an interval that holds the true median with at least 95% confidence
/// whatever their distribution, provided the values are independent draws of one distribution: the
/// order statistics k and n + 1 - k (1-based) for the largest k with P(Binomial(n, 1/2) < k) <= 2.5%
/// (with 31 values the 10th and 22nd, with 33 the 11th and 23rd). Below 9 values no narrower interval
/// qualifies and it is their whole range, which holds the median with 95% confidence from 6 values on
/// and with less below (callers ask for 6 or more). Values that are not finite numbers (NaN, an infinite
/// ratio over a time of 0) are left out; where none is left, all three are not a number, so that a
/// verdict that compares them fails.
struct MedianInterval {
    double median = 0;
    double low = 0;
    double high = 0;
};
MedianInterval medianInterval(std::vector<double> numbers);

/// `sides` sides of a comparison in `rounds` rounds, every side run once a round (`rate(side)`), the
/// order rotating so that round r starts with side r mod `sides`: each side's best rate, and each
/// side's ratios to side 0's rate of the same round, one a round (side 0's are all 1). A round where a
/// side's rate is 0 or not a finite number (a window that finished no batch) says nothing of any side:
/// every side's ratio for it is not a number, which medianInterval leaves out, and it is counted in
/// `emptyRounds`, for the caller to say how many of its rounds its figures rest on.
struct RoundsOfSides {
    std::vector<double> best;
    std::vector<std::vector<double>> ratios;
    int emptyRounds = 0;
};
RoundsOfSides roundsOfSides(int rounds, std::size_t sides, const std::function<double(std::size_t side)>& rate);

/// What a caller of roundsOfSides says where `emptyRounds` of its `rounds` were left out: how many, its
/// windows (`window`, such as " of 100 ms", or empty), what to do (`remedy`), and whether those left are
/// too few for medianInterval's interval. Empty where none was.
std::string roundsLeftOut(int emptyRounds, int rounds, const std::string& window, const std::string& remedy);

/// Aggregate operations per second of `threads` threads each running `perThread(tasks)` after a
/// common start: all tasks over the span from the first thread's start to the last one's finish.
/// `setUp` and `tearDown` run on each thread outside that span. Thread t runs on the t-th CPU the
/// process may use, as in concurrentRate (on every CPU the process started with when there are more
/// threads than CPUs). The first exception a thread throws is rethrown here once all are joined (the
/// others skip their tasks if they have not begun them); std::system_error where the system refuses a
/// thread.
double aggregateOps(int threads, long tasks, const std::function<void()>& setUp,
                    const std::function<void(long)>& perThread, const std::function<void()>& tearDown);

/// Aggregate operations per second of `threads` threads that each run `setUp` (before the window) and
/// then `batch` (which performs `perBatch` operations) again and again for the same window of
/// `seconds`, measured by this thread while they run: a thread the system deschedules counts fewer
/// operations instead of stretching everyone's window, and a thread started late never runs alone at
/// the end. A thread looks at the window's end between batches, and only the batches that it finished
/// within the window count (the one the window's end finds running does not): a window should be long
/// beside a batch (a thread that finished none counts none, and the rate may be 0). Thread t runs on CPU
/// firstCpu + t of those the process may use (wrapping), on every CPU the process started with when
/// there are more threads than CPUs. The first exception that `setUp` or `batch` throws stops every
/// thread at its next look and is rethrown here once all are joined; std::system_error where the system
/// refuses a thread.
double windowRate(int threads, double seconds, long perBatch, const std::function<void()>& setUp,
                  const std::function<void()>& batch, int firstCpu = 0);

/// Tasks a thread of the 16-thread switching rows (cuctx-bench-switching, and the anatomy's --threads
/// that explains them) runs between two looks at its window's end: a multiple of every count of shared
/// contexts (2, 4, 8), so that each thread goes on through them where its last batch stopped. A window
/// counts finished batches, so it must be long beside one: 1000 contended switches take a thread 0.4-1.3
/// ms (16 threads, H100), some 150-520 batches a thread in a window of 200 ms.
inline constexpr long kSwitchTasksPerBatch = 1000;
static_assert(kSwitchTasksPerBatch % 8 == 0);

/// The best of `rounds` windows of windowRate, with no set-up.
double concurrentRate(int threads, double seconds, int rounds, long perBatch, const std::function<void()>& batch,
                      int firstCpu = 0);

/// `threads` threads at once against one thread alone, each side running `batch` in windows of
/// `seconds` (concurrentRate, one window a run): `rounds` pairs of windows, alternating which goes
/// first, the lone thread on the next CPU each round. Each side's best rate, and the median of the
/// pairs' ratios: one window in which the lone thread runs unusually fast (on the H100 machine one
/// thread read 51 to 109 Mops/s between windows of one process, while 16 threads' sum moved by a fifth)
/// sets one pair's ratio, not the row's, and the lone thread runs on several of the CPUs the many use.
struct Scaling {
    double one = 0;   ///< best rate of one thread (ops/s)
    double many = 0;  ///< best aggregate rate of `threads` threads (ops/s)
    double ratio = 0; ///< median of the pairs' many / one
};
Scaling measureScaling(int threads, double seconds, int rounds, long perBatch, const std::function<void()>& batch);

/// One thread (pinned to its CPU where allowed), `home` bound underneath as in a real program; each
/// guard timed beside its reference in `rounds` pairs of runs of `iterations` (compareLoops).
struct GuardCosts {
    double rawPair = 0;        ///< ns, cuCtxPushCurrent(other) + cuCtxPopCurrent
    double switching = 0;      ///< ns, a ContextGuard on `other`
    double switchingRatio = 0; ///< switching guard / raw pair, median of the pairs'
    double rawPairAgain = 0;   ///< ns, the raw pair again, beside the elided guard
    double elided = 0;         ///< ns, a ContextGuard on `home`, already current
    double elidedSpeedup = 0;  ///< raw pair / elided guard, median of the pairs'
    double getCurrent = 0;     ///< ns, cuCtxGetCurrent
    double elidedAgain = 0;    ///< ns, the elided guard again, beside cuCtxGetCurrent
    bool pinned = false;
};
GuardCosts measureGuards(const Context& home, const Context& other, long iterations, int rounds);

/// `threads` threads, one shared context, a task per iteration: a raw push+pop around each (`tasks`
/// per thread), and a ContextGuard around each on threads that adopted the context (in windows of
/// concurrentRate, tasks * 100 ns long within 10-200 ms) (ops/s, aggregate).
struct SharedCosts {
    double raw = 0;
    double cuctx = 0;
    double rawOwnContexts = 0; ///< the raw pair with each thread on a context of its own
};
SharedCosts measureShared(const Context& shared, int threads, long tasks, bool ownContextsToo);

/// Enqueueing an empty kernel: cuLaunchKernel against cuctx::launch, in pairs of batches of `batch`
/// (alternating which goes first), each batch followed by an untimed synchronise. Each side's median
/// ns per launch, and the median of the pairs' ratios (cuctx over raw).
struct LaunchCosts {
    double raw = 0;
    double cuctx = 0;
    double ratio = 0;
    long launches = 0;
};
LaunchCosts measureLaunch(const Context& context, const Function& empty, long launches, long batch);

/// A Module::cached hit against loading the same image again with cuModuleLoadDataEx (median of
/// `loads`, the first dropped: it may be the cold JIT). ns each.
struct CacheCosts {
    double load = 0;
    double hit = 0;
};
CacheCosts measureModuleCache(const Context& context, std::span<const std::byte> image, long hits, int loads);

/// A PTX text of `bytes` bytes (or the empty kernel alone, where that is longer) that every driver
/// compiles: kEmptyKernelPtx, then comment lines.
std::string paddedPtx(std::size_t bytes);

/// Module::cached hits of one PTX image of paddedPtx(`bytes`) in `context`, on this thread: through a
/// ModuleImage (best of 5 runs of `hits`, the thread pinned) and through the span-based call that
/// digests and compares the image each time (fewer hits for large images: at least 3). The image
/// comes back, loaded, for measureImageScaling: apart, so that a caller keeps these figures where
/// the threads fail (a thread the system refuses).
struct ImageCacheCosts {
    std::size_t bytes = 0;
    double imageHit = 0; ///< ns
    double spanHit = 0;  ///< ns
    ModuleImage image;
};
ImageCacheCosts measureImageCache(const Context& context, std::size_t bytes, long hits);

/// ModuleImage hits of `image` (loaded in `context`) per second of one thread alone and of `threads`
/// threads at once, aggregate (measureScaling: `one`, `many`, and the median of many over one).
Scaling measureImageScaling(const Context& context, const ModuleImage& image, long hits, int threads);

/// What `threads` threads at once reach on this machine, over one thread alone, with work that shares
/// nothing: each looks ids up in an index of its own, shaped like the module cache's (a slot, its
/// link, the id compared), in the windows measureImageCache uses. The ceiling any shared structure is held to: where
/// the system's CPUs share cores or clock down when all are busy, it is below `threads`.
double unsharedScaling(int threads, long hits);

/// Creating and destroying a context, raw (cuCtxCreate + cuCtxDestroy) and through cuctx (ns, median
/// of `rounds`); and retaining and releasing a primary context that another owner keeps alive (ns,
/// best of 5 rounds of 1000: cuctx finds it interned and makes no driver call).
struct LifetimeCosts {
    double rawCreateDestroy = 0;
    double cuctxCreateDestroy = 0;
    double rawPrimaryRetainRelease = 0;
    double cuctxPrimaryRetainRelease = 0;
};
LifetimeCosts measureLifetimes(const Device& device, int rounds);

} // namespace cuctx::bench

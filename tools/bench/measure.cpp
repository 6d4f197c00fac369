// SPDX-License-Identifier: MIT
#include "measure.hpp"

#include "bench_common.hpp"
#include "cuctx/cuctx.hpp"
#include "raw_driver.hpp"

#include <alloca.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <barrier>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace cuctx::bench {
namespace {

// The finite numbers among `v`, sorted: values that are not numbers or infinite (a ratio over a time of
// 0) are left out.
std::vector<double> sortedNumbers(std::vector<double> v)
{
    std::erase_if(v, [](double x) { return !std::isfinite(x); });
    std::sort(v.begin(), v.end());
    return v;
}

// The middle value of `sorted`, or the mean of the two middle ones; not a number if it is empty, so that
// a verdict that compares it fails.
double middleOf(const std::vector<double>& sorted)
{
    if (sorted.empty())
        return std::numeric_limits<double>::quiet_NaN();
    const std::size_t mid = sorted.size() / 2;
    return sorted.size() % 2 != 0 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// The middle value, or the mean of the two middle ones, of the numbers among `v`.
double median(std::vector<double> v)
{
    return middleOf(sortedNumbers(std::move(v)));
}

// Pairs of windows (one thread, then all, or the other way round) of the 16-thread cache rows and of
// their unshared ceiling: an odd number, so that the median is one pair's.
constexpr int kScalingRounds = 9;

// The window (s) of the 16-thread cache rows and of their unshared ceiling, the same for both:
// 0.1 s at the default 100'000 hits, within 10-500 ms.
double hitWindow(long hits)
{
    return std::clamp(static_cast<double>(hits) * 1e-6, 0.01, 0.5);
}

// `n` Module::cached hits of `image` in `context`: the cache rows' loop, one thread's and many's.
void imageHits(const Context& context, const ModuleImage& image, long n)
{
    for (long i = 0; i < n; ++i) {
        const Module& hit = Module::cached(context, image);
        keep(hit);
    }
}

// The CPUs this process may run on, as it started, as a mask and listed: read before main, so before
// any measurement pins the main thread to one CPU (threads it starts inherit that).
struct StartCpus {
    cpu_set_t mask{};
    bool saved = false;
    std::vector<int> cpus;
};
const StartCpus g_start = [] {
    StartCpus s;
    CPU_ZERO(&s.mask);
    s.saved = sched_getaffinity(0, sizeof s.mask, &s.mask) == 0;
    if (s.saved)
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
            if (CPU_ISSET(cpu, &s.mask))
                s.cpus.push_back(cpu);
    return s;
}();

// Worker `t` of `threads` on the t-th of those CPUs (wrapping, for a lone thread placed further on),
// so that the system's placement of the threads is the same for both sides of a comparison: left to
// the scheduler, two threads share a CPU for a while in one run and not in the next, which moved
// 16-thread ratios by several percent between runs. Left to the scheduler, over every CPU the process
// started with, where there are more threads than CPUs (pinned, the CPUs that got two would set the
// pace of a whole aggregateOps run) or the system refuses: not on the mask the worker inherited, since
// a caller that pinned itself to one CPU (PinToCurrentCpu) would put every such worker on that CPU.
void pinWorker(int t, int threads)
{
    if (!g_start.cpus.empty() && t >= 0 && static_cast<std::size_t>(threads) <= g_start.cpus.size()) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(g_start.cpus[static_cast<std::size_t>(t) % g_start.cpus.size()], &one);
        if (sched_setaffinity(0, sizeof one, &one) == 0)
            return;
    }
    if (g_start.saved)
        (void)sched_setaffinity(0, sizeof g_start.mask, &g_start.mask);
}

// The first exception the worker threads of aggregateOps or windowRate threw, for the caller to
// rethrow once it has joined them all (one that left a std::thread would end the process).
class FirstFailure {
public:
    // Keeps the exception being handled, unless one came first.
    void capture() noexcept
    {
        {
            const std::lock_guard lock(mutex_);
            if (!first_)
                first_ = std::current_exception();
            failed_.store(true);
        }
        wake_.notify_all();
    }
    bool failed() const noexcept { return failed_.load(); }
    // Sleeps until `deadline`, or until a worker fails if one does first.
    void sleepUntil(Clock::time_point deadline)
    {
        std::unique_lock lock(mutex_);
        wake_.wait_until(lock, deadline, [this] { return failed_.load(); });
    }
    void rethrowIfAny() const
    {
        if (first_)
            std::rethrow_exception(first_);
    }

private:
    std::mutex mutex_;
    std::condition_variable wake_;
    std::exception_ptr first_;
    std::atomic<bool> failed_{false};
};

// What aggregateOps and windowRate throw when thread `started` + 1 of `threads` could not be made: the
// system refused it (std::system_error, whose code is kept) or its state could not be allocated
// (std::bad_alloc: not_enough_memory). A std::system_error either way, which cuctx-inspect reports as a
// lack of resources.
std::system_error threadRefused(const std::exception& e, std::size_t started, int threads)
{
    const auto* refused = dynamic_cast<const std::system_error*>(&e);
    return {refused != nullptr ? refused->code() : std::make_error_code(std::errc::not_enough_memory),
            "could not start thread " + std::to_string(started + 1) + " of " + std::to_string(threads) +
                " (use fewer threads, or raise the limit)"};
}

void checked(CUresult r, const char* call)
{
    if (r != CUDA_SUCCESS)
        throw std::runtime_error(std::string(call) + " failed with " + std::string(resultName(r)));
}

} // namespace

MedianInterval medianInterval(std::vector<double> numbers)
{
    constexpr double none = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> values = sortedNumbers(std::move(numbers));
    if (values.empty())
        return {none, none, none};
    const std::size_t n = values.size();
    // P(B < k) for B ~ Binomial(n, 1/2), summed term by term; each term from lgamma, since 2^-n
    // underflows from n = 1075.
    const auto total = static_cast<double>(n);
    const double lnHalfPowN = -total * std::log(2.0);
    std::size_t k = 0; // 0: no order statistic qualifies
    double below = 0;  // P(B < i + 1) after step i
    for (std::size_t i = 0; i < n / 2; ++i) {
        const auto x = static_cast<double>(i);
        below += std::exp(std::lgamma(total + 1) - std::lgamma(x + 1) - std::lgamma(total - x + 1) + lnHalfPowN);
        if (below > 0.025)
            break;
        k = i + 1;
    }
    // With fewer than 6 values no order statistic bounds the median at 95% (even the extremes cover it
    // with 1 - 2^(1-n), 94% for 5): no interval, so that a verdict on it fails rather than rest on 1-5
    // values that the rounds left.
    MedianInterval m;
    m.median = middleOf(values);
    m.low = k == 0 ? none : values[k - 1];
    m.high = k == 0 ? none : values[n - k];
    return m;
}

RoundsOfSides roundsOfSides(int rounds, std::size_t sides, const std::function<double(std::size_t side)>& rate)
{
    RoundsOfSides r{std::vector<double>(sides, 0.0), std::vector<std::vector<double>>(sides)};
    std::vector<double> round(sides);
    for (int k = 0; k < rounds; ++k) {
        for (std::size_t i = 0; i < sides; ++i) {
            const std::size_t side = (static_cast<std::size_t>(k) + i) % sides;
            round[side] = rate(side);
        }
        // A side's 0 would be a ratio of 0 (or, on side 0, an infinite one): a window too short for its
        // threads, not a speed.
        const bool empty = std::ranges::any_of(round, [](double x) { return !(std::isfinite(x) && x > 0); });
        r.emptyRounds += empty ? 1 : 0;
        for (std::size_t side = 0; side < sides; ++side) {
            r.best[side] = std::max(r.best[side], round[side]);
            r.ratios[side].push_back(empty ? std::numeric_limits<double>::quiet_NaN() : round[side] / round[0]);
        }
    }
    return r;
}

std::string roundsLeftOut(int emptyRounds, int rounds, const std::string& window, const std::string& remedy)
{
    if (emptyRounds == 0)
        return {};
    return std::to_string(emptyRounds) + " of " + std::to_string(rounds) + " rounds left out, a window" + window +
           " finished no batch (" + remedy + ")" +
           (rounds - emptyRounds < 6 ? "; under 6 left, too few for a 95% interval" : "");
}

double timePerIteration(long iterations, const std::function<void(long)>& loop)
{
    const auto t0 = Clock::now();
    loop(iterations);
    return nsSince(t0) / static_cast<double>(iterations);
}

[[gnu::noinline]] double lowered(std::size_t pad, const std::function<double()>& f)
{
    auto* room = static_cast<volatile char*>(alloca(pad + 1));
    room[0] = 0;
    const double result = f();
    room[pad] = 0; // keeps the room alive across the call
    return result;
}

std::size_t stackPlacement(int round, int part)
{
    // A round's parts are the 16 steps whose index leaves the same remainder mod 16, 256 bytes apart;
    // 7 is odd, so 16 consecutive rounds take every remainder once and visit all 256 steps of 4 KiB.
    return static_cast<std::size_t>((round * 7 + part * 16) % 256) * 16;
}

std::size_t batchPlacement(long batch)
{
    // The first part of round `batch`: 7 steps a round, and 7 and 256 share no factor, so any 256
    // consecutive rounds take every step once.
    return stackPlacement(static_cast<int>(batch % 256), 0);
}

double timeSpread(long iterations, int round, const std::function<void(long)>& loop)
{
    double ns = 0;
    for (int k = 0; k < kPlacementsPerRun; ++k) {
        // Even parts (they differ by one at most); a run shorter than kPlacementsPerRun skips the empty ones.
        const long n = iterations * (k + 1) / kPlacementsPerRun - iterations * k / kPlacementsPerRun;
        if (n > 0)
            ns += lowered(stackPlacement(round, k), [&] {
                const auto t0 = Clock::now();
                loop(n);
                return nsSince(t0);
            });
    }
    return ns / static_cast<double>(iterations);
}

Comparison compareLoops(long iterations, int rounds, const std::function<void(long)>& first,
                        const std::function<void(long)>& second)
{
    Comparison c{1e300, 1e300, 0};
    std::vector<double> ratios;
    for (int r = 0; r < rounds; ++r) {
        double a = 0;
        double b = 0;
        if (r % 2 == 0) {
            a = timeSpread(iterations, r, first);
            b = timeSpread(iterations, r, second);
        } else {
            b = timeSpread(iterations, r, second);
            a = timeSpread(iterations, r, first);
        }
        c.first = std::min(c.first, a);
        c.second = std::min(c.second, b);
        ratios.push_back(b / a);
    }
    c.ratio = median(std::move(ratios));
    return c;
}

double aggregateOps(int threads, long tasks, const std::function<void()>& setUp,
                    const std::function<void(long)>& perThread, const std::function<void()>& tearDown)
{
    std::barrier start(threads);
    std::vector<Clock::time_point> begins(static_cast<std::size_t>(threads));
    std::vector<Clock::time_point> ends(static_cast<std::size_t>(threads));
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    std::atomic<bool> abandoned{false};
    FirstFailure failure;
    try {
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                bool arrived = false;
                try {
                    pinWorker(t, threads);
                    setUp();
                    arrived = true;
                    start.arrive_and_wait();
                    if (!abandoned.load() && !failure.failed()) {
                        begins[static_cast<std::size_t>(t)] = Clock::now();
                        perThread(tasks);
                        ends[static_cast<std::size_t>(t)] = Clock::now();
                    }
                    tearDown();
                } catch (...) {
                    // The others skip their tasks where they have not begun them yet; the caller rethrows.
                    failure.capture();
                    if (!arrived)
                        start.arrive_and_drop();
                }
            });
    } catch (const std::exception& e) {
        // A thread was not made: release the ones waiting at the barrier, join them, and say so
        // (destroying a joinable std::thread would end the process in std::terminate).
        abandoned.store(true);
        for (std::size_t missing = pool.size(); missing < static_cast<std::size_t>(threads); ++missing)
            start.arrive_and_drop();
        for (auto& th : pool)
            th.join();
        throw threadRefused(e, pool.size(), threads);
    }
    for (auto& th : pool)
        th.join();
    failure.rethrowIfAny();
    const auto first = *std::min_element(begins.begin(), begins.end());
    const auto last = *std::max_element(ends.begin(), ends.end());
    const double seconds = std::chrono::duration<double>(last - first).count();
    return static_cast<double>(tasks) * threads / seconds;
}

double windowRate(int threads, double seconds, long perBatch, const std::function<void()>& setUp,
                  const std::function<void()>& batch, int firstCpu)
{
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::atomic<bool> stop{false};
    std::vector<long> batches(static_cast<std::size_t>(threads), 0);
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    FirstFailure failure;
    try {
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                bool counted = false; // in `ready`
                try {
                    pinWorker(firstCpu + t, threads);
                    setUp();
                    counted = true;
                    ready.fetch_add(1);
                    while (!go.load(std::memory_order_acquire))
                        std::this_thread::yield();
                    // Only the batches finished before the window closed count: one that the window's
                    // end finds running would count work done outside it (a whole batch for each
                    // thread, which a window short beside a batch multiplied).
                    long done = 0;
                    while (!stop.load(std::memory_order_acquire)) {
                        batch();
                        if (stop.load(std::memory_order_acquire))
                            break;
                        ++done;
                    }
                    batches[static_cast<std::size_t>(t)] = done;
                } catch (...) {
                    // The others stop at their next look at the window's end; the caller rethrows.
                    failure.capture();
                    stop.store(true, std::memory_order_release);
                    if (!counted)
                        ready.fetch_add(1);
                }
            });
    } catch (const std::exception& e) {
        // As in aggregateOps: the threads started leave at once; join them, and say so.
        stop.store(true);
        go.store(true);
        for (auto& th : pool)
            th.join();
        throw threadRefused(e, pool.size(), threads);
    }
    while (ready.load() < threads)
        std::this_thread::yield();
    // Every thread runs through the whole window: the count of batches that began after it opened
    // (the clock starts before the threads may go) and finished before it closed (the clock stops
    // after they are told to).
    const auto begin = Clock::now();
    go.store(true, std::memory_order_release);
    failure.sleepUntil(begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
    stop.store(true, std::memory_order_release);
    const double elapsed = std::chrono::duration<double>(Clock::now() - begin).count();
    for (auto& th : pool)
        th.join();
    failure.rethrowIfAny();
    long total = 0;
    for (const long b : batches)
        total += b;
    return static_cast<double>(total) * static_cast<double>(perBatch) / elapsed;
}

double concurrentRate(int threads, double seconds, int rounds, long perBatch, const std::function<void()>& batch,
                      int firstCpu)
{
    double best = 0;
    for (int round = 0; round < rounds; ++round)
        best = std::max(best, windowRate(
                                  threads, seconds, perBatch, [] {}, batch, firstCpu));
    return best;
}

Scaling measureScaling(int threads, double seconds, int rounds, long perBatch, const std::function<void()>& batch)
{
    Scaling s;
    std::vector<double> ratios;
    for (int r = 0; r < rounds; ++r) {
        double one = 0;
        double many = 0;
        if (r % 2 == 0) {
            one = concurrentRate(1, seconds, 1, perBatch, batch, r);
            many = concurrentRate(threads, seconds, 1, perBatch, batch);
        } else {
            many = concurrentRate(threads, seconds, 1, perBatch, batch);
            one = concurrentRate(1, seconds, 1, perBatch, batch, r);
        }
        s.one = std::max(s.one, one);
        s.many = std::max(s.many, many);
        // A lone thread that finished no batch in its window gives no ratio (left out of the median), not
        // one over a rate of nearly 0 that passes any verdict.
        ratios.push_back(one > 0 ? many / one : std::numeric_limits<double>::quiet_NaN());
    }
    s.ratio = median(std::move(ratios));
    return s;
}

GuardCosts measureGuards(const Context& home, const Context& other, long iterations, int rounds)
{
    const auto& d = tools::rawDriver();
    GuardCosts c;
    ContextBinding binding(home);
    PinToCurrentCpu pin;
    c.pinned = pin.pinned();
    const CUcontext otherHandle = other.native();
    auto rawPairLoop = [&](long n) {
        CUcontext popped = nullptr;
        for (long i = 0; i < n; ++i) {
            d.cuCtxPushCurrent(otherHandle);
            d.cuCtxPopCurrent(&popped);
        }
        keep(popped);
    };
    const Comparison switching = compareLoops(iterations, rounds, rawPairLoop, [&](long n) {
        // No keep(g) here: the driver calls cannot be optimised away, and the raw loop has no
        // compiler barrier per iteration either.
        for (long i = 0; i < n; ++i)
            ContextGuard g(other);
    });
    c.rawPair = switching.first;
    c.switching = switching.second;
    c.switchingRatio = switching.ratio;
    auto elidedLoop = [&](long n) {
        for (long i = 0; i < n; ++i) {
            ContextGuard g(home);
            keep(g);
        }
    };
    const Comparison elided = compareLoops(iterations, rounds, rawPairLoop, elidedLoop);
    c.rawPairAgain = elided.first;
    c.elided = elided.second;
    c.elidedSpeedup = 1.0 / elided.ratio;
    const Comparison getCurrent = compareLoops(
        iterations, rounds,
        [&](long n) {
            CUcontext current = nullptr;
            for (long i = 0; i < n; ++i)
                d.cuCtxGetCurrent(&current);
            keep(current);
        },
        elidedLoop);
    c.getCurrent = getCurrent.first;
    c.elidedAgain = getCurrent.second;
    return c;
}

SharedCosts measureShared(const Context& shared, int threads, long tasks, bool ownContextsToo)
{
    const auto& d = tools::rawDriver();
    SharedCosts c;
    const CUcontext sharedHandle = shared.native();
    auto rawPairs = [&](CUcontext handle, long n) {
        CUcontext popped = nullptr;
        for (long i = 0; i < n; ++i) {
            d.cuCtxPushCurrent(handle);
            keep(i);
            d.cuCtxPopCurrent(&popped);
        }
    };
    c.raw = aggregateOps(
        threads, tasks, [] {}, [&](long n) { rawPairs(sharedHandle, n); }, [] {});
    // The cuctx side in windows (concurrentRate): a guard that costs a nanosecond makes a million of
    // them a millisecond, too short a span for 16 threads that the system starts one by one (on a busy
    // H200 machine, the span from the first start to the last finish gave 1883-5181 Mops/s in three
    // runs of a build that gave 9420-9720 earlier that day). Each thread adopts the context in its
    // first batch; its exit releases it.
    constexpr long batch = 10'000;
    const double window = std::clamp(static_cast<double>(tasks) * 1e-7, 0.01, 0.2);
    c.cuctx = concurrentRate(threads, window, 3, batch, [&] {
        thread_local const bool adopted = (ContextStack::adopt(shared), true);
        (void)adopted;
        for (long i = 0; i < batch; ++i) {
            ContextGuard g(shared);
            keep(g); // the task: here nothing but being inside the guard
        }
    });
    if (ownContextsToo) {
        std::vector<Context> own;
        own.reserve(static_cast<std::size_t>(threads));
        for (int t = 0; t < threads; ++t)
            own.push_back(Context::create(shared.device()));
        std::atomic<int> next{0};
        thread_local CUcontext mine = nullptr;
        c.rawOwnContexts = aggregateOps(
            threads, tasks, [&] { mine = own[static_cast<std::size_t>(next.fetch_add(1))].native(); },
            [&](long n) { rawPairs(mine, n); }, [] {});
    }
    return c;
}

LaunchCosts measureLaunch(const Context& context, const Function& empty, long launches, long batch)
{
    const auto& d = tools::rawDriver();
    ContextBinding binding(context); // a worker with its context bound, as a backend runs kernels
    const CUfunction raw = empty.native();
    const LaunchConfig config{.grid = {1, 1, 1}, .block = {1, 1, 1}};
    batch = std::max(1L, batch);
    // Pairs of batches: at least two, and an even number, so that each side goes first as often.
    long rounds = std::max(2L, launches / batch);
    rounds += rounds % 2;
    // ns per launch over one batch, then an untimed synchronise, so that neither side finds the
    // launch queue filled by the other.
    const auto timeBatch = [&](bool viaCuctx) {
        const auto t0 = Clock::now();
        if (viaCuctx) {
            for (long i = 0; i < batch; ++i)
                launch(empty, config);
        } else {
            for (long i = 0; i < batch; ++i)
                d.cuLaunchKernel(raw, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
        }
        const double ns = nsSince(t0) / static_cast<double>(batch);
        context.synchronize();
        return ns;
    };
    // Paired rounds, alternating which side goes first, and the median of the pairs' ratios, as for
    // the switching guard (compareLoops). Until 2026-12-05 the raw batch always went first and the
    // sides' totals were compared: the enqueue time drifts (3.0 to 3.8 us a launch between runs on the
    // H100 machine), and one build read 0.998x, 1.015x and 1.024x in three runs.
    std::vector<double> raws;
    std::vector<double> cuctxs;
    std::vector<double> ratios;
    context.synchronize();
    for (long r = 0; r < rounds; ++r) {
        double a = 0;
        double b = 0;
        if (r % 2 == 0) {
            a = timeBatch(false);
            b = timeBatch(true);
        } else {
            b = timeBatch(true);
            a = timeBatch(false);
        }
        raws.push_back(a);
        cuctxs.push_back(b);
        ratios.push_back(b / a);
    }
    LaunchCosts c;
    c.launches = rounds * batch;
    c.raw = median(std::move(raws));
    c.cuctx = median(std::move(cuctxs));
    c.ratio = median(std::move(ratios));
    return c;
}

CacheCosts measureModuleCache(const Context& context, std::span<const std::byte> image, long hits, int loads)
{
    const auto& d = tools::rawDriver();
    ContextBinding binding(context);
    const Module first = Module::cached(context, image, {}, "bench");
    const auto t0 = Clock::now();
    for (long i = 0; i < hits; ++i) {
        const Module hit = Module::cached(context, image, {}, "bench");
        keep(hit);
    }
    CacheCosts c;
    c.hit = nsSince(t0) / static_cast<double>(std::max(1L, hits));
    std::string text(reinterpret_cast<const char*>(image.data()), image.size()); // NUL-terminated for the driver
    std::vector<double> times;
    for (int i = 0; i < loads + 1; ++i) {
        CUmodule m = nullptr;
        const auto l0 = Clock::now();
        checked(d.cuModuleLoadDataEx(&m, text.c_str(), 0, nullptr, nullptr), "cuModuleLoadDataEx");
        const double elapsed = nsSince(l0);
        d.cuModuleUnload(m);
        if (i > 0)
            times.push_back(elapsed);
    }
    c.load = median(std::move(times));
    return c;
}

std::string paddedPtx(std::size_t bytes)
{
    std::string ptx = kEmptyKernelPtx;
    const std::string line = "// padding: comments the JIT reads past" + std::string(24, '.') + "\n";
    while (ptx.size() + line.size() <= bytes)
        ptx += line;
    if (ptx.size() + 3 < bytes) // a last, shorter comment line makes up the size
        ptx += "//" + std::string(bytes - ptx.size() - 3, '.') + "\n";
    return ptx;
}

ImageCacheCosts measureImageCache(const Context& context, std::size_t bytes, long hits)
{
    ImageCacheCosts c;
    const std::string ptx = paddedPtx(bytes);
    c.bytes = ptx.size();
    c.image = ModuleImage::fromPtx(ptx, {}, "bench-" + std::to_string(c.bytes));
    const ModuleImage& image = c.image;
    const auto span = std::as_bytes(std::span(ptx.data(), ptx.size()));
    {
        ContextBinding binding(context);
        (void)Module::cached(context, image); // the load, untimed
    }
    {
        PinToCurrentCpu pin;
        c.imageHit = 1e300;
        for (int round = 0; round < 5; ++round)
            c.imageHit = std::min(c.imageHit, timePerIteration(hits, [&](long n) { imageHits(context, image, n); }));
        const long spanHits = std::clamp(static_cast<long>(static_cast<double>(hits) * 1024.0 /
                                                           static_cast<double>(std::max<std::size_t>(c.bytes, 1))),
                                         3L, std::max(3L, hits));
        c.spanHit = timePerIteration(spanHits, [&](long n) {
            for (long i = 0; i < n; ++i) {
                const Module hit = Module::cached(context, span, {}, "bench");
                keep(hit);
            }
        });
    }
    return c;
}

Scaling measureImageScaling(const Context& context, const ModuleImage& image, long hits, int threads)
{
    // Both sides the same way, in pairs of windows (measureScaling). A window is 0.1 s at the default
    // 100'000 hits: the 20 ms windows this took before gave the same build 9.7x to 16.9x between runs
    // on the H200 machine (16 threads against one), too short to average out a thread the system runs
    // something else on for a moment. Until 2026-12-05 each side took its best of five windows: the
    // lone thread's best was its one fast window, while the 16 threads' sum averages their CPUs.
    constexpr long batch = 1000;
    const double window = hitWindow(hits);
    const auto hitBatch = [&] { imageHits(context, image, batch); };
    return measureScaling(threads, window, kScalingRounds, batch, hitBatch);
}

double unsharedScaling(int threads, long hits)
{
    // A lookup shaped like a cache hit's (an open-addressing index of links: a slot, its link, the
    // id compared, the value read), each thread in an index of its own.
    struct Link {
        std::uint64_t id;
        std::uint64_t value;
    };
    constexpr std::size_t kLinks = 64;
    constexpr std::size_t kMask = 2 * kLinks - 1;
    struct Index {
        std::array<Link, kLinks> links{};
        std::array<const Link*, kMask + 1> slots{};
    };
    const auto slotOf = [](std::uint64_t id) {
        return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ull) >> 32) & kMask;
    };
    constexpr long batch = 1000;
    const auto lookups = [&] {
        thread_local const Index index = [&] {
            Index x;
            for (std::size_t k = 0; k < kLinks; ++k) {
                x.links[k] = {k * 7919 + 1, k};
                std::size_t i = slotOf(x.links[k].id);
                while (x.slots[i] != nullptr)
                    i = (i + 1) & kMask;
                x.slots[i] = &x.links[k];
            }
            return x;
        }();
        std::uint64_t sum = 0;
        for (long n = 0; n < batch; ++n) {
            const std::uint64_t id = static_cast<std::uint64_t>(n & (kLinks - 1)) * 7919 + 1;
            for (std::size_t i = slotOf(id);; i = (i + 1) & kMask) {
                const Link* link = index.slots[i];
                if (link == nullptr || link->id == id) {
                    sum += link != nullptr ? link->value : 1;
                    break;
                }
            }
        }
        keep(sum);
    };
    return measureScaling(threads, hitWindow(hits), kScalingRounds, batch, lookups).ratio;
}

LifetimeCosts measureLifetimes(const Device& device, int rounds)
{
    const auto& d = tools::rawDriver();
    LifetimeCosts c;
    std::vector<double> raw, wrapped;
    for (int i = 0; i < rounds; ++i) {
        auto t0 = Clock::now();
        CUcontext handle = nullptr;
        checked(d.cuCtxCreate_v4 != nullptr ? d.cuCtxCreate_v4(&handle, nullptr, 0, device.native())
                                            : d.cuCtxCreate_v2(&handle, 0, device.native()),
                "cuCtxCreate");
        CUcontext popped = nullptr;
        d.cuCtxPopCurrent(&popped);
        checked(d.cuCtxDestroy(handle), "cuCtxDestroy");
        raw.push_back(nsSince(t0));
        t0 = Clock::now();
        Context::create(device).reset();
        wrapped.push_back(nsSince(t0));
    }
    c.rawCreateDestroy = median(std::move(raw));
    c.cuctxCreateDestroy = median(std::move(wrapped));
    // A warm primary context (someone holds it): what a library pays that retains it per call.
    constexpr int kRetains = 1000;
    const Context keepPrimaryWarm = Context::primary(device);
    const Comparison primary = compareLoops(
        kRetains, 5,
        [&](long n) {
            CUcontext handle = nullptr;
            for (long i = 0; i < n; ++i) {
                checked(d.cuDevicePrimaryCtxRetain(&handle, device.native()), "cuDevicePrimaryCtxRetain");
                checked(d.cuDevicePrimaryCtxRelease(device.native()), "cuDevicePrimaryCtxRelease");
            }
        },
        [&](long n) {
            for (long i = 0; i < n; ++i)
                Context::primary(device).reset();
        });
    c.rawPrimaryRetainRelease = primary.first;
    c.cuctxPrimaryRetainRelease = primary.second;
    return c;
}

} // namespace cuctx::bench

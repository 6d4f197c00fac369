// SPDX-License-Identifier: MIT
// The statistics behind the benchmarks' verdicts (tools/bench/measure.cpp), which judge cuctx against
// the raw driver from rounds of runs.

#include <catch2/catch.hpp>

#include "bench_common.hpp"
#include "measure.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using cuctx::bench::medianInterval;
using cuctx::bench::roundsOfSides;

namespace {

std::vector<double> oneTo(int n)
{
    std::vector<double> v(static_cast<std::size_t>(n));
    std::iota(v.begin(), v.end(), 1.0);
    // Out of order, since the order must not matter: descending, then rotated by a third.
    std::reverse(v.begin(), v.end());
    std::rotate(v.begin(), v.begin() + n / 3, v.end());
    return v;
}

} // namespace

TEST_CASE("A median's 95% interval is the binomial order statistics around it", "[bench]")
{
    // The ranks of the standard tables for a median's distribution-free 95% interval.
    const auto m31 = medianInterval(oneTo(31));
    CHECK(m31.median == 16);
    CHECK(m31.low == 10);
    CHECK(m31.high == 22);
    const auto m9 = medianInterval(oneTo(9)); // P(B < 2) = 10/512 <= 2.5%, P(B < 3) = 46/512 is not
    CHECK(m9.low == 2);
    CHECK(m9.high == 8);
    const auto m101 = medianInterval(oneTo(101));
    CHECK(m101.median == 51);
    CHECK(m101.low == 41);
    CHECK(m101.high == 61);
    const auto m33 = medianInterval(oneTo(33));
    CHECK(m33.median == 17);
    CHECK(m33.low == 11);
    CHECK(m33.high == 23);
    // Beyond 1074 values 2^-n underflows a double: the ranks must not collapse onto the median.
    const auto m1100 = medianInterval(oneTo(1100));
    CHECK(m1100.low == 518);
    CHECK(m1100.high == 583);
    const auto m2000 = medianInterval(oneTo(2000));
    CHECK(m2000.low == 956);
    CHECK(m2000.high == 1045);
    const auto m10 = medianInterval(oneTo(10)); // an even count: the median is the middle two's mean
    CHECK(m10.median == 5.5);
    CHECK(m10.low == 2);
    CHECK(m10.high == 9);
}

TEST_CASE("Too few values for a 95% interval give none, which fails a verdict on it", "[bench]")
{
    const auto m8 = medianInterval(oneTo(8)); // P(B < 1) = 1/256: the extremes qualify, P(B < 2) = 9/256 not
    CHECK(m8.low == 1);
    CHECK(m8.high == 8);
    const auto m6 = medianInterval(oneTo(6)); // P(B < 1) = 1/64 <= 2.5%: the fewest with an interval
    CHECK(m6.low == 1);
    CHECK(m6.high == 6);
    // 5 values: even their extremes cover the median with 1 - 2/32 only. A row whose rounds left so few
    // (the others not numbers) must not be judged "not below raw" on them.
    const auto m5 = medianInterval(oneTo(5));
    CHECK(m5.median == 3);
    CHECK(std::isnan(m5.low));
    CHECK(std::isnan(m5.high));
    CHECK_FALSE(m5.high >= 1.0);
    const auto m1 = medianInterval({0.97});
    CHECK(m1.median == 0.97);
    CHECK(std::isnan(m1.low));
    CHECK(std::isnan(m1.high));
    // No values: nothing that a verdict comparing them (ratio <= 1.05, high >= 1.0) could pass on.
    const auto none = medianInterval({});
    CHECK(std::isnan(none.median));
    CHECK(std::isnan(none.low));
    CHECK(std::isnan(none.high));
}

TEST_CASE("Ratios that are not numbers are left out of a median's interval", "[bench]")
{
    std::vector<double> v = oneTo(31);
    v.insert(v.begin() + 3, 3, std::numeric_limits<double>::quiet_NaN());
    const auto m = medianInterval(v);
    CHECK(m.median == 16);
    CHECK(m.low == 10);
    CHECK(m.high == 22);
}

TEST_CASE("Infinite ratios are left out of a median's interval, and none finite fails every verdict", "[bench]")
{
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::vector<double> v = oneTo(31);
    v.insert(v.begin() + 5, 4, inf);
    v.push_back(-inf);
    const auto m = medianInterval(v);
    CHECK(m.median == 16);
    CHECK(m.low == 10);
    CHECK(m.high == 22);
    // Ratios over times of 0 only: an infinite high end passed cuctx-bench-switching's "high >= 1.0".
    const auto none = medianInterval({inf, inf, std::numeric_limits<double>::quiet_NaN(), inf, -inf, inf});
    CHECK_FALSE(none.high >= 1.0);
    CHECK_FALSE(none.median <= 1.05);
    CHECK(std::isnan(none.median));
    CHECK(std::isnan(none.low));
    CHECK(std::isnan(none.high));
}

TEST_CASE("Rounds of sides rotate which side goes first and give each side's ratio to the first side", "[bench]")
{
    std::vector<std::size_t> order;
    int call = 0;
    // Side s's rate in its round: 10 * (s + 1), times a factor that changes with every call, so that
    // a ratio taken across rounds would show.
    const auto r = roundsOfSides(4, 3, [&](std::size_t side) {
        order.push_back(side);
        ++call;
        return 10.0 * static_cast<double>(side + 1) * (call <= 3 ? 1.0 : call <= 6 ? 2.0 : call <= 9 ? 3.0 : 4.0);
    });
    CHECK(order == std::vector<std::size_t>{0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2});
    REQUIRE(r.ratios.size() == 3);
    CHECK(r.ratios[0] == std::vector<double>(4, 1.0));
    CHECK(r.ratios[1] == std::vector<double>(4, 2.0));
    CHECK(r.ratios[2] == std::vector<double>(4, 3.0));
    CHECK(r.best == std::vector<double>{40.0, 80.0, 120.0});
}

TEST_CASE("A round where a side finished no batch is left out of every side's ratios, and counted", "[bench]")
{
    // Round 1: side 1's window finished none (a ratio of 0); round 2: side 0's (an infinite ratio).
    int call = 0;
    const auto r = roundsOfSides(4, 2, [&](std::size_t side) {
        const int round = call++ / 2;
        if ((round == 1 && side == 1) || (round == 2 && side == 0))
            return 0.0;
        return side == 0 ? 10.0 : 15.0;
    });
    CHECK(r.emptyRounds == 2);
    REQUIRE(r.ratios[1].size() == 4);
    for (std::size_t side = 0; side < 2; ++side) {
        CHECK(std::isnan(r.ratios[side][1]));
        CHECK(std::isnan(r.ratios[side][2]));
    }
    CHECK(r.ratios[1][0] == 1.5);
    CHECK(r.ratios[1][3] == 1.5);
    CHECK(medianInterval(r.ratios[1]).median == 1.5); // not pulled towards 0 by the empty window
    CHECK(r.best == std::vector<double>{10.0, 15.0});
    // What the benchmarks say of it: the count, and that 2 rounds left are too few for an interval.
    CHECK(cuctx::bench::roundsLeftOut(r.emptyRounds, 4, " of 100 ms", "fewer threads") ==
          "2 of 4 rounds left out, a window of 100 ms finished no batch (fewer threads); under 6 left, too few for a "
          "95% interval");
    CHECK(cuctx::bench::roundsLeftOut(2, 33, "", "a longer window") ==
          "2 of 33 rounds left out, a window finished no batch (a longer window)");
    CHECK(cuctx::bench::roundsLeftOut(0, 33, "", "a longer window").empty());
}

TEST_CASE("A window's rate counts every batch its threads ran, each after every thread's set-up", "[bench]")
{
    using Clock = std::chrono::steady_clock;
    constexpr int threads = 3;
    constexpr long perBatch = 10;
    constexpr double seconds = 0.02;
    std::mutex mutex;
    std::set<std::thread::id> setUpThreads;
    std::set<std::thread::id> batchThreads;
    Clock::time_point lastSetUpEnd{};
    std::atomic<int> setUps{0};
    std::atomic<long> batches{0};
    std::atomic<long> early{0}; // batches run before every thread's set-up had ended
    const double rate = cuctx::bench::windowRate(
        threads, seconds, perBatch,
        [&] {
            // A set-up that takes a while: a window whose clock included it would read a lower rate
            // than the bound below allows.
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            const std::lock_guard lock(mutex);
            setUpThreads.insert(std::this_thread::get_id());
            lastSetUpEnd = std::max(lastSetUpEnd, Clock::now());
            setUps.fetch_add(1);
        },
        [&] {
            if (setUps.load() != threads)
                early.fetch_add(1);
            batches.fetch_add(1);
            const std::lock_guard lock(mutex);
            batchThreads.insert(std::this_thread::get_id());
        });
    const auto end = Clock::now();
    CHECK(early.load() == 0);
    CHECK(setUpThreads.size() == threads);
    // Batches run on the threads that were set up (on a loaded machine a thread may get no batch
    // into the window at all, which the rate rightly counts as none).
    CHECK(std::includes(setUpThreads.begin(), setUpThreads.end(), batchThreads.begin(), batchThreads.end()));
    // Every batch finished within the window counted, perBatch operations each (all but the one each
    // thread was in when it closed), over a window at least `seconds` long that opened after the last
    // set-up ended and closed before the call returned.
    const auto operations = static_cast<double>(batches.load() * perBatch);
    CHECK(rate <= operations / seconds * (1 + 1e-9));
    CHECK(rate >=
          (operations - threads * perBatch) / std::chrono::duration<double>(end - lastSetUpEnd).count() * (1 - 1e-9));
}

TEST_CASE("A window counts no batch that was still running when it closed", "[bench]")
{
    // Batches of 100 ms in a window of 10 ms: a batch counted whole when the window closes (as until
    // 2026-12-06) made 2 threads read 200 batches a second; 2 threads of 100 ms batches finish 20 a
    // second at most, however long the window really was.
    constexpr int threads = 2;
    constexpr double batchSeconds = 0.1;
    const double rate = cuctx::bench::windowRate(
        threads, 0.01, 1, [] {}, [] { std::this_thread::sleep_for(std::chrono::milliseconds(100)); });
    CHECK(rate >= 0);
    CHECK(rate <= threads / batchSeconds * (1 + 1e-9));
}

TEST_CASE("A lone thread that finished no batch gives no scaling ratio, not a huge one", "[bench]")
{
    // The first batch, the lone thread's (round 0 times one thread first), outlasts its window of 20 ms
    // many times over; every later batch returns at once, so the 2 threads of the next window finish
    // many. Over a rate of 0 the ratio is no number, and a ">= 10x" verdict on it fails (until
    // 2026-12-06 it divided by 1e-9 and read about 1e17).
    std::atomic<int> calls{0};
    const auto s = cuctx::bench::measureScaling(2, 0.02, 1, 1, [&] {
        if (calls.fetch_add(1) == 0) {
            const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
            while (std::chrono::steady_clock::now() < until) {
            }
        }
    });
    CHECK(s.one == 0);
    CHECK(s.many > 0);
    CHECK(std::isnan(s.ratio));
    CHECK_FALSE(s.ratio >= 10.0);
}

TEST_CASE("An exception in a worker of a window or of a run of tasks reaches the caller", "[bench]")
{
    // Thrown from a std::thread, it ended the process in std::terminate.
    std::atomic<int> setUps{0};
    CHECK_THROWS_WITH(cuctx::bench::windowRate(
                          4, 0.01, 1,
                          [&] {
                              if (setUps.fetch_add(1) == 2)
                                  throw std::runtime_error("set-up failed");
                          },
                          [] {}),
                      "set-up failed");
    CHECK(setUps.load() == 4);
    // A window of 10 s: the others stop at once, not when it closes.
    std::atomic<long> batches{0};
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(cuctx::bench::windowRate(
                          3, 10.0, 1, [] {},
                          [&] {
                              if (batches.fetch_add(1) == 100)
                                  throw std::runtime_error("batch failed");
                          }),
                      "batch failed");
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
    std::atomic<int> runs{0};
    CHECK_THROWS_WITH(cuctx::bench::aggregateOps(
                          3, 10, [] {},
                          [&](long) {
                              if (runs.fetch_add(1) == 1)
                                  throw std::runtime_error("tasks failed");
                          },
                          [] {}),
                      "tasks failed");
    std::atomic<int> aggregateSetUps{0};
    CHECK_THROWS_WITH(cuctx::bench::aggregateOps(
                          3, 10,
                          [&] {
                              if (aggregateSetUps.fetch_add(1) == 0)
                                  throw std::runtime_error("set-up failed");
                          },
                          [](long) {}, [] {}),
                      "set-up failed");
}

TEST_CASE("Workers beyond the CPUs run on every CPU the process started with, not on a pinned caller's", "[bench]")
{
    cpu_set_t original;
    REQUIRE(sched_getaffinity(0, sizeof original, &original) == 0);
    const int cpus = CPU_COUNT(&original);
    if (cpus < 2) {
        WARN("one CPU: nothing to tell apart");
        return;
    }
    cuctx::bench::PinToCurrentCpu pin; // as cuctx-bench-guard-anatomy's main does
    REQUIRE(pin.pinned());
    std::mutex mutex;
    std::vector<int> seen; // each worker's CPU count
    const auto record = [&] {
        cpu_set_t mine;
        CPU_ZERO(&mine);
        sched_getaffinity(0, sizeof mine, &mine);
        const std::lock_guard lock(mutex);
        seen.push_back(CPU_COUNT(&mine));
    };
    cuctx::bench::windowRate(cpus + 1, 0.001, 1, record, [] {});
    REQUIRE(seen.size() == static_cast<std::size_t>(cpus + 1));
    CHECK(std::count(seen.begin(), seen.end(), cpus) == cpus + 1);
    seen.clear();
    cuctx::bench::aggregateOps(
        cpus + 1, 1, record, [](long) {}, [] {});
    CHECK(std::count(seen.begin(), seen.end(), cpus) == cpus + 1);
    // As many as there are CPUs: one each.
    seen.clear();
    cuctx::bench::windowRate(cpus, 0.001, 1, record, [] {});
    CHECK(std::count(seen.begin(), seen.end(), 1) == cpus);
}

namespace {

// argv of a program given `words` after its name (they must outlive it).
std::vector<char*> argvOf(std::vector<std::string>& words)
{
    std::vector<char*> argv{const_cast<char*>("cuctx-bench-test")};
    for (std::string& w : words)
        argv.push_back(w.data());
    return argv;
}

// flagError on the words after a program's name.
std::string flagErrorOf(std::vector<std::string> words, int& threads, long& iterations, bool& csv)
{
    std::vector<char*> argv = argvOf(words);
    return cuctx::bench::flagError(
        static_cast<int>(argv.size()), argv.data(),
        {{"--threads", &threads, 1, cuctx::bench::kMaxThreads}, {"--iterations", &iterations, 1000}, {"--csv", &csv}});
}

} // namespace

TEST_CASE("A bad flag is named with its value", "[bench]")
{
    int threads = 16;
    long iterations = 50'000;
    bool csv = false;
    CHECK(flagErrorOf({"--threads", "8", "--iterations", "2000", "--csv"}, threads, iterations, csv).empty());
    CHECK(threads == 8);
    CHECK(iterations == 2000);
    CHECK(csv);
    CHECK(flagErrorOf({"--threads", "1024"}, threads, iterations, csv).empty());
    CHECK(threads == 1024);
    CHECK(flagErrorOf({"--threads", "abc"}, threads, iterations, csv) == "bad value 'abc' for --threads (1 to 1024)");
    CHECK(flagErrorOf({"--threads", "1025"}, threads, iterations, csv) == "bad value '1025' for --threads (1 to 1024)");
    CHECK(flagErrorOf({"--threads", "0"}, threads, iterations, csv) == "bad value '0' for --threads (1 to 1024)");
    CHECK(flagErrorOf({"--iterations", "999"}, threads, iterations, csv) ==
          "bad value '999' for --iterations (1000 or more)");
    CHECK(flagErrorOf({"--csv", "--foo"}, threads, iterations, csv) == "unknown option --foo");
    CHECK(flagErrorOf({"extra"}, threads, iterations, csv) == "unexpected word 'extra'");
    CHECK(flagErrorOf({"--iterations"}, threads, iterations, csv) == "--iterations needs a value");
    CHECK(flagErrorOf({"--threads", "99999999999999999999"}, threads, iterations, csv) ==
          "bad value '99999999999999999999' for --threads (1 to 1024)");
    CHECK(threads == 1024); // a refused value leaves the target as it was
    CHECK(iterations == 2000);
}

TEST_CASE("One word beside the flags at most: a second is refused, not taken over the first", "[bench]")
{
    bool csv = false;
    std::string ptx;
    std::vector<std::string> words{"a.ptx", "--csv", "b.ptx"};
    std::vector<char*> argv = argvOf(words);
    CHECK(cuctx::bench::flagError(static_cast<int>(argv.size()), argv.data(), {{"--csv", &csv}}, &ptx) ==
          "unexpected word 'b.ptx'");
    CHECK(ptx == "a.ptx");
    CHECK(cuctx::bench::flagError(2, argv.data(), {{"--csv", &csv}}, &ptx).empty());
}

TEST_CASE("A CSV field is quoted where it holds a comma, a quote, a line break or an edge space", "[bench]")
{
    using cuctx::bench::csvField;
    CHECK(csvField("same context again") == "same context again");
    CHECK(csvField("") == "");
    CHECK(csvField("16 threads, 1 shared context") == "\"16 threads, 1 shared context\"");
    CHECK(csvField("  minimal guard (floor)") == "\"  minimal guard (floor)\"");
    CHECK(csvField("<= 1 us, >= 50x faster") == "\"<= 1 us, >= 50x faster\"");
    CHECK(csvField("a \"b\"") == "\"a \"\"b\"\"\"");
    CHECK(csvField("two\nlines") == "\"two\nlines\"");
}

TEST_CASE("Any 256 consecutive batches of a spread thread visit every 16-byte step over 4 KiB", "[bench]")
{
    using cuctx::bench::batchPlacement;
    // From starts the anatomy gives its threads (16 batches apart) and from arbitrary ones, far along too.
    for (const long first : {0L, 1L, 5L, 16L, 240L, 255L, 256L, 1000L, 123457L}) {
        std::vector<bool> seen(256, false);
        for (long batch = first; batch < first + 256; ++batch) {
            const std::size_t pad = batchPlacement(batch);
            REQUIRE(pad % 16 == 0);
            REQUIRE(pad < 4096);
            seen[pad / 16] = true;
        }
        CHECK(std::count(seen.begin(), seen.end(), true) == 256);
    }
    // Consecutive batches lie apart, not on the same step.
    CHECK(batchPlacement(0) != batchPlacement(1));
}

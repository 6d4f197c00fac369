// SPDX-License-Identifier: MIT
#pragma once

// What the cuctx benchmarks share: a table of raw-driver and cuctx figures with their ratio and
// target, number formatting, and measurement helpers.

#include <sched.h>

#include "cuctx/driver.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace cuctx::bench {

using Clock = std::chrono::steady_clock;

/// Time since `t0`, in nanoseconds or milliseconds.
inline double nsSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}
inline double msSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Keeps the compiler from removing a loop body.
template <typename T>
void keep(T&& value)
{
    asm volatile("" : : "g"(&value) : "memory");
}

// Keeps the calling thread on the CPU it runs on for the object's lifetime, so that a single-thread
// measurement is not spread over cores (a migration costs more than what is measured); the threads
// of the multi-thread runs, started later, get the original mask back.
class PinToCurrentCpu {
public:
    PinToCurrentCpu()
    {
        saved_ = sched_getaffinity(0, sizeof original_, &original_) == 0;
        const int cpu = sched_getcpu();
        if (!saved_ || cpu < 0)
            return;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        pinned_ = sched_setaffinity(0, sizeof one, &one) == 0;
    }
    ~PinToCurrentCpu()
    {
        if (pinned_)
            sched_setaffinity(0, sizeof original_, &original_);
    }
    PinToCurrentCpu(const PinToCurrentCpu&) = delete;
    PinToCurrentCpu& operator=(const PinToCurrentCpu&) = delete;
    bool pinned() const { return pinned_; }

private:
    cpu_set_t original_{};
    bool saved_ = false;
    bool pinned_ = false;
};

struct Row {
    std::string name;
    std::string raw;
    std::string cuctx;
    double ratio;
    std::string target;
    bool met;
    // The 95% interval of a ratio that is a median of rounds (bench::medianInterval), where the
    // verdict rests on it; not a number elsewhere.
    double low = std::numeric_limits<double>::quiet_NaN();
    double high = std::numeric_limits<double>::quiet_NaN();
};

/// `text` as one CSV field (RFC 4180): quoted, its quotes doubled, where it holds a comma, a quote, a
/// line break or a space at either end ("16 threads, 1 shared context", "  minimal guard (floor)").
inline std::string csvField(const std::string& text)
{
    if (text.find_first_of(",\"\r\n") == std::string::npos &&
        (text.empty() || (text.front() != ' ' && text.back() != ' ')))
        return text;
    std::string quoted = "\"";
    for (const char c : text) {
        if (c == '"')
            quoted += '"';
        quoted += c;
    }
    return quoted + '"';
}

inline void print(const std::vector<Row>& rows, bool csv)
{
    if (csv) {
        std::printf("measurement,raw,cuctx,ratio,target,met,low,high\n");
        for (const Row& r : rows) {
            std::printf("%s,%s,%s,%.3f,%s,%s,", csvField(r.name).c_str(), csvField(r.raw).c_str(),
                        csvField(r.cuctx).c_str(), r.ratio, csvField(r.target).c_str(), r.met ? "yes" : "no");
            if (std::isnan(r.low))
                std::printf(",\n");
            else
                std::printf("%.3f,%.3f\n", r.low, r.high);
        }
        return;
    }
    std::printf("%-34s %14s %14s %9s  %-22s %s\n", "measurement", "raw driver", "cuctx", "ratio", "target", "met");
    for (const Row& r : rows) {
        std::printf("%-34s %14s %14s %9.3f  %-22s %s", r.name.c_str(), r.raw.c_str(), r.cuctx.c_str(), r.ratio,
                    r.target.c_str(), r.met ? "yes" : "NO");
        if (!std::isnan(r.low))
            std::printf("%s  95%% interval %.3f-%.3f", r.met ? "" : " ", r.low, r.high);
        std::printf("\n");
    }
}

inline std::string ns(double v)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f ns", v);
    return text;
}

inline std::string mops(double v)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f Mops/s", v / 1e6);
    return text;
}

/// Reads `text` into `value` where it is a whole number within `low`..`high` that `T` holds, and
/// nothing else ("12x", "+5", " 5" are not); false, `value` untouched, otherwise.
template <typename T>
bool wholeNumberIn(std::string_view text, long long low, long long high, T& value)
{
    T parsed{};
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (error != std::errc() || end != text.data() + text.size() || std::cmp_less(parsed, low) ||
        std::cmp_greater(parsed, high))
        return false;
    value = parsed;
    return true;
}

/// A command-line flag: a number follows it, a bool stands alone. A number must lie within
/// `low`..`high` (a count that makes no measurement below, a resource the system runs out of above).
struct Flag {
    const char* name;
    std::variant<int*, long*, std::size_t*, bool*> target;
    long long low = 1;
    long long high = std::numeric_limits<long long>::max();
};

/// What is wrong with argv for `flags`, empty where nothing is: "unknown option --foo", "--threads
/// needs a value", "bad value 'abc' for --threads" (with the range where the flag has one). One word
/// that is no flag goes to `positional` where one is given; a second is refused. A number must be a
/// whole one within its flag's range (1 and up unless the flag says otherwise) that its target holds:
/// "0", "-5", "12x" and one too large for the target are refused.
inline std::string flagError(int argc, char** argv, std::initializer_list<Flag> flags,
                             std::string* positional = nullptr)
{
    bool tookPositional = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const Flag* flag = nullptr;
        for (const Flag& f : flags)
            if (arg == f.name)
                flag = &f;
        if (flag == nullptr) {
            // One word at most: a second would silently replace the first.
            if (positional == nullptr || tookPositional || arg.empty() || arg[0] == '-')
                return arg.starts_with("-") ? "unknown option " + arg : "unexpected word '" + arg + "'";
            *positional = arg;
            tookPositional = true;
            continue;
        }
        if (bool* const* b = std::get_if<bool*>(&flag->target)) {
            **b = true;
            continue;
        }
        if (i + 1 >= argc)
            return arg + " needs a value";
        const std::string_view text = argv[++i];
        const long long low = std::max(flag->low, 1LL); // every count here is one
        const bool parsed = std::visit(
            [text, flag, low](auto* t) {
                using T = std::remove_pointer_t<decltype(t)>;
                if constexpr (std::is_same_v<T, bool>) {
                    return false;
                } else {
                    return wholeNumberIn(text, low, flag->high, *t);
                }
            },
            flag->target);
        if (!parsed) {
            std::string error = "bad value '" + std::string(text) + "' for " + arg;
            if (flag->high != std::numeric_limits<long long>::max())
                error += " (" + std::to_string(low) + " to " + std::to_string(flag->high) + ")";
            else if (low > 1)
                error += " (" + std::to_string(low) + " or more)";
            return error;
        }
    }
    return {};
}

/// Parses argv into `flags` (flagError); where something is wrong, says what on stderr ("TOOL: bad
/// value 'abc' for --threads") and returns false (the caller prints its usage).
inline bool parseFlags(const char* tool, int argc, char** argv, std::initializer_list<Flag> flags,
                       std::string* positional = nullptr)
{
    const std::string error = flagError(argc, argv, flags, positional);
    if (!error.empty())
        std::fprintf(stderr, "%s: %s\n", tool, error.c_str());
    return error.empty();
}

/// The most threads a benchmark's --threads takes: beyond it the system runs out of threads or memory
/// before the measurement says anything.
inline constexpr long long kMaxThreads = 1024;

/// What a benchmark's main does with an exception from its measurements (a thread the system refused,
/// a driver call that failed): prints the rows it finished, if any, says why it stopped on stderr, and
/// gives the exit status, 1.
inline int stopped(const char* tool, const std::vector<Row>& rows, bool csv, const std::exception& e)
{
    if (!rows.empty())
        print(rows, csv);
    std::fflush(stdout);
    std::fprintf(stderr, "%s: stopped: %s\n", tool, e.what());
    return 1;
}

/// Whether the driver is there to measure; says why not (on stderr) when it is not.
inline bool driverReady(const char* tool)
{
    const auto status = cuctx::Driver::status();
    if (!status.loaded)
        std::fprintf(stderr, "%s: nothing to measure: %s\n", tool, status.message.c_str());
    return status.loaded;
}

} // namespace cuctx::bench

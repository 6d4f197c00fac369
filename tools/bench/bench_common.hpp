#pragma once

// What the cuctx benchmarks share: a table of raw-driver and cuctx figures with their ratio and
// target, number formatting, and measurement helpers.

#include <sched.h>

#include <cstdio>
#include <string>
#include <vector>

namespace cuctx::bench {

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
};

inline void print(const std::vector<Row>& rows, bool csv)
{
    if (csv) {
        std::printf("measurement,raw,cuctx,ratio,target,met\n");
        for (const Row& r : rows)
            std::printf("%s,%s,%s,%.3f,%s,%s\n", r.name.c_str(), r.raw.c_str(), r.cuctx.c_str(), r.ratio,
                        r.target.c_str(), r.met ? "yes" : "no");
        return;
    }
    std::printf("%-34s %14s %14s %9s  %-22s %s\n", "measurement", "raw driver", "cuctx", "ratio", "target", "met");
    for (const Row& r : rows)
        std::printf("%-34s %14s %14s %9.3f  %-22s %s\n", r.name.c_str(), r.raw.c_str(), r.cuctx.c_str(), r.ratio,
                    r.target.c_str(), r.met ? "yes" : "NO");
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

} // namespace cuctx::bench

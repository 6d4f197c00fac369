// cuctx-bench-guard-anatomy: what each part of ContextGuard's inline switching path costs, for whoever
// works on it. Copies of the header's logic with parts left out (listed below) run beside the raw
// cuCtxPushCurrent + cuCtxPopCurrent pair, as does the real guard, in one process; each prints the
// median over 301 pairs of short runs of its ratio to the raw pair, each pair at another stack
// placement (bench::stackPlacement), then the low address bits of what the guard writes. `--sweep`
// times the real guard at every 16-byte placement of its stack over 4 KiB instead.
//
// The copies reach cuctx's internals; they are measurements, not alternatives to use.

#include "bench_common.hpp"
#include "context/context_access.hpp"
#include "cuctx/cuctx.hpp"
#include "driver/driver_state.hpp"
#include "measure.hpp"

#include <alloca.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace cuctx;
using Clock = std::chrono::steady_clock;
namespace d = cuctx::detail;

// Variants, each a copy of the header's switching path with parts left out (fallbacks are traps):
//   V1  the copy itself, nothing left out
//   V3  without the frame link (no `below`, top.frame left alone, no on-top check at exit)
//   V4  the use count alone around the driver's calls: the floor of counting
[[gnu::always_inline]] inline void countIn(std::atomic<std::uint32_t>* uses)
{
    uses->store(uses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

template <int V> struct G {
    d::Frame f;
    [[gnu::always_inline]] explicit G(d::ContextState* state)
    {
        f.state = state;
        d::ThreadTop& top = d::t_top;
        if constexpr (V == 4) {
            f.uses = top.recentUses;
            countIn(f.uses);
            if (d::g_push.load(std::memory_order_relaxed)(state->handle) != CUDA_SUCCESS) [[unlikely]]
                __builtin_trap();
            return;
        }
        d::Frame* const below = top.frame;
        if (below->state == state) [[unlikely]]
            __builtin_trap();
        if (top.recentState.load(std::memory_order_relaxed) == state) [[likely]] {
            f.uses = top.recentUses;
            countIn(f.uses);
            f.kind = d::FrameKind::guard;
            if (d::g_push.load(std::memory_order_relaxed)(state->handle) != CUDA_SUCCESS) [[unlikely]]
                __builtin_trap();
            if (V != 3) {
                f.below = below;
                top.frame = &f;
            }
            return;
        }
        __builtin_trap();
    }
    [[gnu::always_inline]] ~G()
    {
        d::ThreadTop& top = d::t_top;
        if (V != 4 && f.kind != d::FrameKind::guard) [[unlikely]]
            __builtin_trap();
        if (V != 3 && V != 4 && top.frame != &f) [[unlikely]]
            __builtin_trap();
        CUcontext popped = nullptr;
        if (d::g_pop.load(std::memory_order_relaxed)(&popped) != CUDA_SUCCESS || popped != f.state->handle)
            [[unlikely]] __builtin_trap();
        if (V != 3 && V != 4)
            top.frame = f.below;
        const std::uint32_t after = f.uses->load(std::memory_order_relaxed) - 1;
        f.uses->store(after, std::memory_order_release);
        if (after == 0) {
            std::atomic_signal_fence(std::memory_order_seq_cst);
            if (f.state->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]]
                __builtin_trap();
        }
    }
};
struct Holder {
    d::ContextState* state;
};
template <int V> [[gnu::noinline]] double run(const Holder& h, long n)
{
    auto t0 = Clock::now();
    for (long i = 0; i < n; ++i) {
        G<V> g(h.state);
    }
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
}
// Where the real guard's object lies, for comparing the low address bits of what it writes (stores
// and later loads 4 KiB apart look dependent to the CPU) between processes.
const void* g_guardAddress = nullptr;

[[gnu::noinline]] double runGuard(const Context& c, long n)
{
    auto t0 = Clock::now();
    for (long i = 0; i < n; ++i) {
        ContextGuard g(c);
        if (i == 0)
            g_guardAddress = &g;
    }
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
}
[[gnu::noinline]] double runRaw(CUcontext h, long n)
{
    const auto& api = d::api();
    CUcontext p = nullptr;
    auto t0 = Clock::now();
    for (long i = 0; i < n; ++i) {
        api.cuCtxPushCurrent(h);
        api.cuCtxPopCurrent(&p);
    }
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
}

// f() with the stack `pad` bytes lower: what it runs lies elsewhere (see bench::stackPlacement).
template <class F> [[gnu::noinline]] double lowered(std::size_t pad, const F& f)
{
    auto* room = static_cast<volatile char*>(alloca(pad + 1));
    room[0] = 0;
    const double t = f();
    room[pad] = 0;
    return t;
}

// --sweep: the real guard at every 16-byte step of a 4 KiB range of stack addresses, each beside the
// raw pair (median of 11 pairs): whether the guard's cost depends on where its object lies.
void sweep(const Context& other)
{
    const long n = 20000;
    std::printf("guard address bits 0-11, ratio to the raw pair\n");
    for (std::size_t pad = 0; pad < 4096; pad += 16) {
        std::vector<double> ratios;
        for (int r = 0; r < 11; ++r) {
            const double raw = runRaw(other.native(), n);
            ratios.push_back(lowered(pad, [&] { return runGuard(other, n); }) / raw);
        }
        std::sort(ratios.begin(), ratios.end());
        std::printf("0x%03x %.3f\n", static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(g_guardAddress) & 0xfff),
                    ratios[ratios.size() / 2]);
    }
}

int main(int argc, char** argv)
{
    if (!bench::driverReady("cuctx-bench-guard-anatomy"))
        return 77;
    const bench::PinToCurrentCpu pin;
    Context home = Context::create(Device::get(0));
    Context other = Context::create(Device::get(0));
    ContextBinding b(home);
    {
        ContextGuard warm(other);
    }
    if (argc > 1 && std::strcmp(argv[1], "--sweep") == 0) {
        sweep(other);
        return 0;
    }
    const Holder s{detail::ContextAccess::state(other)};
    // Each variant is timed beside a run of the raw pair (which goes first alternates), each run
    // short enough that the machine rarely changes within a pair; a variant's figure is the median
    // of its pairs' ratios. The order of the variants turns each round.
    constexpr int kVariants = 4;
    const char* names[kVariants] = {"guard", "copy", "-frame link", "count only"};
    auto runVariant = [&](int v, long n) {
        switch (v) {
        case 0: return runGuard(other, n);
        case 1: return run<1>(s, n);
        case 2: return run<3>(s, n);
        default: return run<4>(s, n);
        }
    };
    const long n = 50000;
    const int rounds = 301;
    std::vector<double> ratios[kVariants];
    double bestRaw = 1e9;
    for (int r = 0; r < rounds; ++r) {
        for (int k = 0; k < kVariants; ++k) {
            const int v = (k + r) % kVariants;
            double raw = 0;
            double variant = 0;
            const std::size_t pad = bench::stackPlacement(r * kVariants + k);
            auto timeRaw = [&] { return runRaw(other.native(), n); };
            auto timeVariant = [&] { return runVariant(v, n); };
            if (r % 2 == 0) {
                raw = lowered(pad, timeRaw);
                variant = lowered(pad, timeVariant);
            } else {
                variant = lowered(pad, timeVariant);
                raw = lowered(pad, timeRaw);
            }
            bestRaw = std::min(bestRaw, raw);
            ratios[v].push_back(variant / raw);
        }
    }
    std::printf("raw %.2f ns (best)", bestRaw);
    for (int v = 0; v < kVariants; ++v) {
        std::sort(ratios[v].begin(), ratios[v].end());
        std::printf(" | %s %.3fx", names[v], ratios[v][ratios[v].size() / 2]);
    }
    std::printf("\n");
    auto low = [](const void* p) { return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(p) & 0xfff); };
    std::printf("address bits 0-11: guard 0x%03x, thread top 0x%03x, use count 0x%03x, context state 0x%03x\n",
                low(g_guardAddress), low(&d::t_top), low(d::t_top.recentUses), low(s.state));
}

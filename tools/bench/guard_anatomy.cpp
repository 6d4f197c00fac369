// SPDX-License-Identifier: MIT
// cuctx-bench-guard-anatomy: what each part of ContextGuard's inline switching path costs, for whoever
// works on it. Copies of the header's logic with parts left out (listed below) are compared with the
// raw cuCtxPushCurrent + cuCtxPopCurrent pair, as is the real guard, in one process (bench::compareLoops:
// the median over 301 pairs of short runs, each at another stack placement); then it prints the low
// address bits of what the guard writes. `--sweep` times the real guard at every 16-byte placement of
// its stack over 4 KiB instead.
//
// The copies reach cuctx's internals; they are measurements, not alternatives to use.

#include "bench_common.hpp"
#include "context/context_access.hpp"
#include "cuctx/cuctx.hpp"
#include "driver/driver_state.hpp"
#include "measure.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace cuctx;
namespace d = cuctx::detail;

namespace {

// Variants, each a copy of the header's switching path with parts left out (fallbacks are traps):
//   V1  the copy itself, nothing left out
//   V2  without the frame link (no `below`, record.frame left alone, no on-top check at exit)
//   V3  the use count alone around the driver's calls: the floor of counting
template <int V>
struct G {
    d::Frame f;
    [[gnu::always_inline]] explicit G(d::ContextState* state)
    {
        f.state = state;
        d::ThreadRecord& record = d::t_record;
        d::Slot& slot = record.slots[state->slotIndex];
        if constexpr (V == 3) {
            f.uses = &slot.uses;
            d::countUse(*f.uses);
            if (d::g_push.load(std::memory_order_relaxed)(state->handle) != CUDA_SUCCESS) [[unlikely]]
                __builtin_trap();
            return;
        }
        d::Frame* const below = record.frame;
        if (below->state == state) [[unlikely]]
            __builtin_trap();
        if (slot.state.load(std::memory_order_relaxed) == state) [[likely]] {
            f.uses = &slot.uses;
            d::countUse(*f.uses);
            f.kind = d::FrameKind::guard;
            if (d::g_push.load(std::memory_order_relaxed)(state->handle) != CUDA_SUCCESS) [[unlikely]]
                __builtin_trap();
            if (V != 2) {
                f.below = below;
                record.frame = &f;
            }
            return;
        }
        __builtin_trap();
    }
    [[gnu::always_inline]] ~G()
    {
        d::ThreadRecord& record = d::t_record;
        constexpr bool linked = V == 1;
        if (V != 3 && f.kind != d::FrameKind::guard) [[unlikely]]
            __builtin_trap();
        if (linked && record.frame != &f) [[unlikely]]
            __builtin_trap();
        CUcontext popped = nullptr;
        if (d::g_pop.load(std::memory_order_relaxed)(&popped) != CUDA_SUCCESS || popped != f.state->handle) [[unlikely]]
            __builtin_trap();
        if (linked)
            record.frame = f.below;
        const std::uint32_t after = f.uses->load(std::memory_order_relaxed) - 1;
        f.uses->store(after, std::memory_order_release);
        if (after == 0) {
            std::atomic_signal_fence(std::memory_order_seq_cst);
            if (f.state->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]]
                __builtin_trap();
        }
    }
};

template <int V>
[[gnu::noinline]] void copyLoop(d::ContextState* state, long n)
{
    for (long i = 0; i < n; ++i) {
        G<V> g(state);
    }
}

// Where the real guard's object lies, to compare the low address bits of what it writes between
// processes whose figures differ.
const void* g_guardAddress = nullptr;

[[gnu::noinline]] void guardLoop(const Context& c, long n)
{
    for (long i = 0; i < n; ++i) {
        ContextGuard g(c);
        if (i == 0)
            g_guardAddress = &g;
    }
}

[[gnu::noinline]] void rawLoop(CUcontext h, long n)
{
    const auto& api = d::api();
    CUcontext p = nullptr;
    for (long i = 0; i < n; ++i) {
        api.cuCtxPushCurrent(h);
        api.cuCtxPopCurrent(&p);
    }
}

unsigned lowBits(const void* p)
{
    return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(p) & 0xfff);
}

// --sweep: the real guard at every 16-byte step of a 4 KiB range of stack addresses, each beside the
// raw pair (median of 11 pairs): whether the guard's cost depends on where its object lies.
void sweep(const Context& other)
{
    const long n = 20000;
    const std::function<void(long)> raw = [&](long k) { rawLoop(other.native(), k); };
    const std::function<void(long)> guard = [&](long k) { guardLoop(other, k); };
    std::printf("guard address bits 0-11, ratio to the raw pair\n");
    for (std::size_t pad = 0; pad < 4096; pad += 16) {
        std::vector<double> ratios;
        for (int r = 0; r < 11; ++r) {
            const double rawNs = bench::timePerIteration(n, raw);
            ratios.push_back(bench::lowered(pad, [&] { return bench::timePerIteration(n, guard); }) / rawNs);
        }
        std::sort(ratios.begin(), ratios.end());
        std::printf("0x%03x %.3f\n", lowBits(g_guardAddress), ratios[ratios.size() / 2]);
    }
}

} // namespace

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
    d::ContextState* const state = detail::ContextAccess::state(other);
    const std::pair<const char*, std::function<void(long)>> variants[] = {
        {"guard", [&](long n) { guardLoop(other, n); }},
        {"copy", [&](long n) { copyLoop<1>(state, n); }},
        {"-frame link", [&](long n) { copyLoop<2>(state, n); }},
        {"count only", [&](long n) { copyLoop<3>(state, n); }},
    };
    const std::function<void(long)> raw = [&](long n) { rawLoop(other.native(), n); };
    double bestRaw = 1e9;
    std::string line;
    for (const auto& [name, loop] : variants) {
        const bench::Comparison c = bench::compareLoops(50000, 301, raw, loop);
        bestRaw = std::min(bestRaw, c.first);
        char cell[64];
        std::snprintf(cell, sizeof cell, " | %s %.3fx", name, c.ratio);
        line += cell;
    }
    std::printf("raw %.2f ns (best)%s\n", bestRaw, line.c_str());
    std::printf("address bits 0-11: guard 0x%03x, thread record 0x%03x, use count 0x%03x, context state 0x%03x\n",
                lowBits(g_guardAddress), lowBits(&d::t_record), lowBits(&d::t_record.slots[state->slotIndex].uses),
                lowBits(state));
}

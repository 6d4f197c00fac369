// SPDX-License-Identifier: MIT
// cuctx-bench-guard-anatomy: what each part of ContextGuard's inline switching path costs, for whoever
// works on it, alternating between two contexts. Copies of the header's logic with parts left out (listed below) are
// compared with the raw cuCtxPushCurrent + cuCtxPopCurrent pair, as is the real guard, in one process
// (bench::compareLoops: the median over 301 pairs of short runs, each at another stack placement); then it prints the
// low address bits of what the guard writes. `--sweep` times the real guard at every 16-byte placement of its stack
// over 4 KiB instead; `--code` times the real guard, the copy and the top layout (below) with their loops shifted
// four ways in a line of code.
//
// The copies reach cuctx's internals; they are measurements, not alternatives to use.

#include "bench_common.hpp"
#include "context/context_access.hpp"
#include "cuctx/cuctx.hpp"
#include "driver/driver_state.hpp"
#include "measure.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace cuctx;
namespace d = cuctx::detail;

namespace {

// Variants, each a copy of the header's switching path with some parts (bits) kept; fallbacks are
// traps. All of them take the context through a Context, as the real guard does.
constexpr unsigned kElide = 1;     // the elided check: the record's top against the context
constexpr unsigned kLimit = 2;     // the limit and the empty-handle test
constexpr unsigned kFlagsIn = 4;   // the leave flags on entry (green and orphaned contexts go out of line)
constexpr unsigned kRecord = 8;    // the entry and the depth written, checked at exit, the depth restored
constexpr unsigned kPopCheck = 16; // what the driver popped, against the context
constexpr unsigned kFlagsOut = 32; // the leave flags at exit
constexpr unsigned kAll = 63;
constexpr unsigned kLate = 64; // an alternative (below): the record written after the push

template <unsigned F>
struct G {
    d::ContextState* state;
    d::RecordEntry* entry;
    [[gnu::always_inline]] explicit G(const Context& c) : state(detail::ContextAccess::state(c))
    {
        d::ThreadRecord& record = d::t_record;
        const std::uint32_t depth = record.depth.load(std::memory_order_relaxed);
        if constexpr ((F & kElide) != 0)
            if (record.entries[depth].load(std::memory_order_relaxed) == state) [[unlikely]]
                __builtin_trap();
        const std::uint32_t mine = depth + 1;
        if constexpr ((F & kLimit) != 0)
            if (mine >= record.limit || state == nullptr) [[unlikely]]
                __builtin_trap();
        if constexpr ((F & kFlagsIn) != 0)
            if (state->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]]
                __builtin_trap();
        entry = &record.entries[mine];
        if constexpr ((F & kRecord) != 0 && (F & kLate) == 0) {
            entry->store(state, std::memory_order_relaxed);
            record.depth.store(mine, std::memory_order_release);
        }
        if (d::g_push.load(std::memory_order_relaxed)(state->handle) != CUDA_SUCCESS) [[unlikely]]
            __builtin_trap();
        if constexpr ((F & kRecord) != 0 && (F & kLate) != 0) {
            entry->store(state, std::memory_order_relaxed);
            record.depth.store(mine, std::memory_order_release);
        }
    }
    [[gnu::always_inline]] ~G()
    {
        d::ThreadRecord& record = d::t_record;
        std::uint32_t depth = 0;
        if constexpr ((F & kRecord) != 0) {
            depth = record.depth.load(std::memory_order_relaxed);
            if (&record.entries[depth] != entry) [[unlikely]]
                __builtin_trap();
        }
        CUcontext popped;
        const CUresult r = d::g_pop.load(std::memory_order_relaxed)(&popped);
        if (r != CUDA_SUCCESS || ((F & kPopCheck) != 0 && popped != state->handle)) [[unlikely]]
            __builtin_trap();
        if constexpr ((F & kRecord) != 0)
            record.depth.store(depth - 1, std::memory_order_relaxed);
        if constexpr ((F & kFlagsOut) != 0) {
            std::atomic_signal_fence(std::memory_order_seq_cst);
            if (state->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]]
                __builtin_trap();
        }
    }
};

// Alternatives tried, neither better than the copy beyond the spread between runs (H200, 2026-12-04,
// five processes: copy 1.046-1.068x, record late 1.038-1.076x, fat 1.053-1.079x):
//   record late  the copy, its entry and depth written after the push instead of before it
//   fat          a Context of two words, the state (a green context tagged in its low bit, so that
//                entering tests no flags and no null) and the CUcontext (the push loads nothing
//                through the state); the guard keeps the handle and its entry
struct Fat {
    d::ContextState* state;
    CUcontext handle;
};
struct FatG {
    CUcontext handle;
    d::RecordEntry* entry;
    [[gnu::always_inline]] explicit FatG(const Fat& c) : handle(c.handle)
    {
        d::ThreadRecord& record = d::t_record;
        const std::uint32_t depth = record.depth.load(std::memory_order_relaxed);
        d::ContextState* const state = c.state;
        if (record.entries[depth].load(std::memory_order_relaxed) == state) [[unlikely]]
            __builtin_trap();
        const std::uint32_t mine = depth + 1;
        if (mine >= record.limit || (reinterpret_cast<std::uintptr_t>(state) & 1) != 0) [[unlikely]]
            __builtin_trap();
        entry = &record.entries[mine];
        entry->store(state, std::memory_order_relaxed);
        record.depth.store(mine, std::memory_order_release);
        if (d::g_push.load(std::memory_order_relaxed)(handle) != CUDA_SUCCESS) [[unlikely]]
            __builtin_trap();
    }
    [[gnu::always_inline]] ~FatG()
    {
        d::ThreadRecord& record = d::t_record;
        const std::uint32_t depth = record.depth.load(std::memory_order_relaxed);
        if (&record.entries[depth] != entry) [[unlikely]]
            __builtin_trap();
        CUcontext popped;
        const CUresult r = d::g_pop.load(std::memory_order_relaxed)(&popped);
        if (r != CUDA_SUCCESS || popped != handle) [[unlikely]]
            __builtin_trap();
        d::ContextState* const state = entry->load(std::memory_order_relaxed);
        record.depth.store(depth - 1, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (state->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]]
            __builtin_trap();
    }
};
[[gnu::noinline]] void fatLoop(const Fat* const* contexts, std::size_t mask, long n)
{
    for (long i = 0; i < n; ++i) {
        FatG g(*contexts[static_cast<std::size_t>(i) & mask]);
    }
}

// A third layout, also no better beyond the spread (H100 machine, 2026-12-05, one process: top 1.041x and
// 1.067x over 2 and 8 contexts, the copy 1.072x and 1.048x, the real guard 1.092x and 1.063x): the
// record's top kept as a pointer to the top entry instead of a depth. Entering compares the new
// entry's address with the record's last slot (an address the code forms from the thread pointer: no
// load; a thread not yet registered would keep its top at the last slot), and leaving compares the
// top with the guard's entry and writes the entry below it: nothing but the entry is kept across the
// pop. It would also need a constinit top, which cannot point into the thread's own storage. With --code (two
// processes, H100 machine, later the same day), averaged over four code offsets: top 1.051x, the copy 1.060x,
// the real guard 1.066x; the offset alone moved one layout in one process by up to 3.2%.
struct TopRecord {
    std::atomic<d::RecordEntry*> top;
    d::RecordEntry entries[d::kRecordEntries];
};
constinit thread_local TopRecord t_top CUCTX_TLS_INITIAL_EXEC{nullptr, {}};
// NullTest false: an empty Context would point to a placeholder state whose leave flags send it out of
// line, instead of holding null.
template <bool NullTest>
struct TopG {
    d::ContextState* state;
    d::RecordEntry* entry;
    [[gnu::always_inline]] explicit TopG(const Context& c) : state(detail::ContextAccess::state(c))
    {
        TopRecord& record = t_top;
        d::RecordEntry* const top = record.top.load(std::memory_order_relaxed);
        if (top->load(std::memory_order_relaxed) == state) [[unlikely]]
            __builtin_trap();
        d::RecordEntry* const mine = top + 1;
        if (mine >= &record.entries[d::kRecordEntries - 1] || (NullTest && state == nullptr) ||
            state->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]]
            __builtin_trap();
        mine->store(state, std::memory_order_relaxed);
        record.top.store(mine, std::memory_order_release);
        entry = mine;
        if (d::g_push.load(std::memory_order_relaxed)(state->handle) != CUDA_SUCCESS) [[unlikely]]
            __builtin_trap();
    }
    [[gnu::always_inline]] ~TopG()
    {
        TopRecord& record = t_top;
        if (record.top.load(std::memory_order_relaxed) != entry) [[unlikely]]
            __builtin_trap();
        CUcontext popped;
        const CUresult r = d::g_pop.load(std::memory_order_relaxed)(&popped);
        if (r != CUDA_SUCCESS || popped != state->handle) [[unlikely]]
            __builtin_trap();
        record.top.store(entry - 1, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (state->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]]
            __builtin_trap();
    }
};
template <bool NullTest>
[[gnu::noinline]] void topLoop(const Context* const* contexts, std::size_t mask, long n)
{
    for (long i = 0; i < n; ++i) {
        TopG<NullTest> g(*contexts[static_cast<std::size_t>(i) & mask]);
    }
}

// The guards cycle through `contexts` (a power of two of them), as a program switching between them does.
template <unsigned F>
[[gnu::noinline]] void copyLoop(const Context* const* contexts, std::size_t mask, long n)
{
    for (long i = 0; i < n; ++i) {
        G<F> g(*contexts[static_cast<std::size_t>(i) & mask]);
    }
}

// Where the real guard's object lies, to compare the low address bits of what it writes between
// processes whose figures differ.
const void* g_guardAddress = nullptr;

[[gnu::noinline]] void guardLoop(const Context* const* contexts, std::size_t mask, long n)
{
    for (long i = 0; i < n; ++i) {
        ContextGuard g(*contexts[static_cast<std::size_t>(i) & mask]);
        if (i == 0)
            g_guardAddress = &g;
    }
}

[[gnu::noinline]] void rawLoop(const CUcontext* handles, std::size_t mask, long n)
{
    const auto& api = d::api();
    CUcontext p = nullptr;
    for (long i = 0; i < n; ++i) {
        api.cuCtxPushCurrent(handles[static_cast<std::size_t>(i) & mask]);
        api.cuCtxPopCurrent(&p);
    }
}

// --code: the same loops, each shifted by 0, 16, 32 and 48 bytes within a 64-byte line of code (the
// function aligned to 64 bytes, then `Pad` bytes of no-ops run once per call before the loop): how far
// code placement alone moves a layout's ratio, to tell a layout's gain from where the compiler put its
// loop. The shifts are from where the compiler starts each loop, which differs between layouts: g++ 12
// aligns the real guard's loop to 8 bytes (it starts at 56, 8, 24, 40) and the others' to 16 (0, 16,
// 32, 48); clang 14 starts all three at 48, 0, 16, 32.
#define CUCTX_ANATOMY_PAD asm volatile(".skip %c0, 0x90" ::"i"(Pad))
template <int Pad>
[[gnu::noinline, gnu::aligned(64)]] void guardLoopAt(const Context* const* contexts, std::size_t mask, long n)
{
    CUCTX_ANATOMY_PAD;
    for (long i = 0; i < n; ++i)
        ContextGuard g(*contexts[static_cast<std::size_t>(i) & mask]);
}
template <int Pad>
[[gnu::noinline, gnu::aligned(64)]] void copyLoopAt(const Context* const* contexts, std::size_t mask, long n)
{
    CUCTX_ANATOMY_PAD;
    for (long i = 0; i < n; ++i)
        G<kAll> g(*contexts[static_cast<std::size_t>(i) & mask]);
}
template <int Pad>
[[gnu::noinline, gnu::aligned(64)]] void topLoopAt(const Context* const* contexts, std::size_t mask, long n)
{
    CUCTX_ANATOMY_PAD;
    for (long i = 0; i < n; ++i)
        TopG<true> g(*contexts[static_cast<std::size_t>(i) & mask]);
}
#undef CUCTX_ANATOMY_PAD

using LoopFn = void (*)(const Context* const*, std::size_t, long);

void codePlacement(const Context* const* contexts, const CUcontext* handles)
{
    const std::pair<const char*, std::array<LoopFn, 4>> layouts[] = {
        {"guard", {&guardLoopAt<0>, &guardLoopAt<16>, &guardLoopAt<32>, &guardLoopAt<48>}},
        {"copy", {&copyLoopAt<0>, &copyLoopAt<16>, &copyLoopAt<32>, &copyLoopAt<48>}},
        {"top", {&topLoopAt<0>, &topLoopAt<16>, &topLoopAt<32>, &topLoopAt<48>}},
    };
    for (const std::size_t count : {std::size_t{2}, std::size_t{8}}) {
        const std::size_t mask = count - 1;
        const std::function<void(long)> raw = [&](long n) { rawLoop(handles, mask, n); };
        std::printf("%zu contexts in turn, code shifted by 0 / 16 / 32 / 48 bytes:", count);
        for (const auto& [name, loops] : layouts) {
            std::printf(" | %s", name);
            for (const LoopFn loop : loops) {
                const bench::Comparison c =
                    bench::compareLoops(50000, 201, raw, [&](long n) { loop(contexts, mask, n); });
                std::printf(" %.3fx", c.ratio);
            }
        }
        std::printf("\n");
    }
}

unsigned lowBits(const void* p)
{
    return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(p) & 0xfff);
}

// --sweep: the real guard at every 16-byte step of a 4 KiB range of stack addresses, each beside the
// raw pair (median of 11 pairs): whether the guard's cost depends on where its object lies.
void sweep(const Context* const* contexts, const CUcontext* handles)
{
    const long n = 20000;
    const std::function<void(long)> raw = [&](long k) { rawLoop(handles, 1, k); };
    const std::function<void(long)> guard = [&](long k) { guardLoop(contexts, 1, k); };
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
    std::vector<Context> made;
    for (int i = 0; i < 8; ++i)
        made.push_back(Context::create(Device::get(0)));
    ContextBinding binding(home);
    {
        ContextGuard warm(made[0]); // registers this thread
    }
    t_top.entries[0].store(&d::g_placeholderContext, std::memory_order_relaxed);
    t_top.top.store(&t_top.entries[0], std::memory_order_relaxed);
    std::vector<const Context*> contexts;
    std::vector<CUcontext> handles;
    std::vector<Fat> fats;
    for (const Context& c : made) {
        contexts.push_back(&c);
        handles.push_back(c.native());
        fats.push_back({detail::ContextAccess::state(c), c.native()});
    }
    std::vector<const Fat*> fatPointers;
    for (const Fat& f : fats)
        fatPointers.push_back(&f);
    if (argc > 1 && std::strcmp(argv[1], "--sweep") == 0) {
        sweep(contexts.data(), handles.data());
        return 0;
    }
    if (argc > 1 && std::strcmp(argv[1], "--code") == 0) {
        codePlacement(contexts.data(), handles.data());
        return 0;
    }
    for (const std::size_t count : {std::size_t{2}, std::size_t{8}}) {
        const std::size_t mask = count - 1;
        const std::pair<const char*, std::function<void(long)>> variants[] = {
            {"guard", [&](long n) { guardLoop(contexts.data(), mask, n); }},
            {"copy", [&](long n) { copyLoop<kAll>(contexts.data(), mask, n); }},
            {"-elide", [&](long n) { copyLoop<kAll & ~kElide>(contexts.data(), mask, n); }},
            {"-limit", [&](long n) { copyLoop<kAll & ~kLimit>(contexts.data(), mask, n); }},
            {"-flags in", [&](long n) { copyLoop<kAll & ~kFlagsIn>(contexts.data(), mask, n); }},
            {"-record", [&](long n) { copyLoop<kAll & ~kRecord>(contexts.data(), mask, n); }},
            {"-pop check", [&](long n) { copyLoop<kAll & ~kPopCheck>(contexts.data(), mask, n); }},
            {"-flags out", [&](long n) { copyLoop<kAll & ~kFlagsOut>(contexts.data(), mask, n); }},
            {"calls only", [&](long n) { copyLoop<0>(contexts.data(), mask, n); }},
            {"record late", [&](long n) { copyLoop<kAll | kLate>(contexts.data(), mask, n); }},
            {"fat", [&](long n) { fatLoop(fatPointers.data(), mask, n); }},
            {"top", [&](long n) { topLoop<true>(contexts.data(), mask, n); }},
            {"top no null", [&](long n) { topLoop<false>(contexts.data(), mask, n); }},
        };
        const std::function<void(long)> raw = [&](long n) { rawLoop(handles.data(), mask, n); };
        double bestRaw = 1e9;
        std::string line;
        for (const auto& [name, loop] : variants) {
            const bench::Comparison c = bench::compareLoops(50000, 201, raw, loop);
            bestRaw = std::min(bestRaw, c.first);
            char cell[64];
            std::snprintf(cell, sizeof cell, " | %s %.3fx", name, c.ratio);
            line += cell;
        }
        std::printf("%zu contexts in turn: raw %.2f ns (best)%s\n", count, bestRaw, line.c_str());
    }
    std::printf("address bits 0-11: guard 0x%03x, thread record 0x%03x\n", lowBits(g_guardAddress),
                lowBits(&d::t_record));
}

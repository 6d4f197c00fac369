// SPDX-License-Identifier: MIT
// cuctx-bench-guard-anatomy: what each part of ContextGuard's inline switching path costs, for whoever
// works on it, alternating between two contexts. Copies of the header's logic with parts left out (listed
// below) are compared with the raw cuCtxPushCurrent + cuCtxPopCurrent pair, as is the real guard, in one
// process (bench::compareLoops: the median over 201 pairs of short runs, each spread over 16 stack
// placements); then it prints the low address bits of the thread's record. `--sweep` times the real
// guard, its object kept in memory, at every 16-byte placement of its stack over 4 KiB instead; `--code` times the real
// guard, the copy, the depth layout (below), the thread-pointer room check (kThreadPointer) and the driver's calls
// alone with their loops shifted four ways in a line of code.
//
// The copies reach cuctx's internals; they are measurements, not alternatives to use.

#include "bench_common.hpp"
#include "context/context_access.hpp"
#include "cuctx/cuctx.hpp"
#include "driver/driver_state.hpp"
#include "measure.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

using namespace cuctx;
namespace d = cuctx::detail;

namespace {

// Variants, each a copy of the header's switching path with some parts (bits) kept; fallbacks are
// traps. All of them take the context through a Context, as the real guard does.
constexpr unsigned kElide = 1; // the elided check: the record's top against the context
constexpr unsigned kLimit = 2; // the room left in the record (the slot above the top not null), the empty-handle test
constexpr unsigned kInlineHandle = 4; // the context's inline handle tested on entry (green contexts go out of line)
constexpr unsigned kRecord = 8;       // the entry and the top written, checked at exit, the top restored
constexpr unsigned kPopCheck = 16;    // what the driver popped, against the context
constexpr unsigned kFlagsOut = 32;    // the leave flags at exit
constexpr unsigned kAll = 63;
// Not a part but an alternative room check, the one before 2026-12-06 (measured beside the copy): take
// the thread pointer (a load from %fs:0) to compute where the new entry lies and compare that with the
// record's bounds, instead of loading the slot and testing it against the null end slot.
constexpr unsigned kThreadPointer = 64;
// Not parts but two moves of work out of the stretch between the push and the pop, which costs the
// 16-thread rows throughput (the "inside" raw side), for --threads: the record's top checked after the
// pop instead of before it, the one check of the guard's own in that stretch (a real guard that does
// so, putting back what it popped where it finds itself not the top, was built and did not lift
// cuctx-bench-switching's rows: docs/switching-runs.md), and the driver's pop function loaded before
// the push and kept in the guard, instead of after the push (the push is an opaque call, so the
// compiler cannot move the load). Every side loads that pointer after its push, the raw one too (from
// cuctx's table, two loads), so its move is timed against a raw side that moves it as well ("raw pop
// early").
constexpr unsigned kCheckAfterPop = 128;
constexpr unsigned kPopEarly = 256;

template <unsigned F>
[[gnu::always_inline]] inline bool roomFor(const d::ThreadRecord& record, const d::RecordEntry* mine)
{
    if constexpr ((F & kThreadPointer) != 0)
        return reinterpret_cast<std::uintptr_t>(mine) - reinterpret_cast<std::uintptr_t>(&record.entries[1]) <
               (d::kRecordEntries - 1) * sizeof(d::RecordEntry);
    else
        return mine->load(std::memory_order_relaxed) != nullptr;
}

struct NoPop {};

template <unsigned F>
struct G {
    d::ContextState* state;
    d::RecordEntry* entry;
    [[no_unique_address]] std::conditional_t<(F & kPopEarly) != 0, d::PopFn, NoPop> pop{};
    [[gnu::always_inline]] explicit G(const Context& c) : state(detail::ContextAccess::state(c))
    {
        d::ThreadRecord& record = d::t_record;
        d::RecordEntry* const top = record.top.load(std::memory_order_relaxed);
        if constexpr ((F & kElide) != 0)
            if (top->load(std::memory_order_relaxed) == state) [[unlikely]]
                __builtin_trap();
        entry = top + 1;
        if constexpr ((F & kLimit) != 0)
            if (!roomFor<F>(record, entry) || state == nullptr) [[unlikely]]
                __builtin_trap();
        // Read once, as the header does: the compiler would load it again after the record's stores.
        const CUcontext handle = (F & kInlineHandle) != 0 ? state->inlineHandle : state->handle;
        if constexpr ((F & kInlineHandle) != 0)
            if (handle == nullptr) [[unlikely]]
                __builtin_trap();
        if constexpr ((F & kRecord) != 0) {
            entry->store(state, std::memory_order_relaxed);
            record.top.store(entry, std::memory_order_release);
        }
        if constexpr ((F & kPopEarly) != 0)
            pop = d::g_pop.load(std::memory_order_relaxed);
        if (d::g_push.load(std::memory_order_relaxed)(handle) != CUDA_SUCCESS) [[unlikely]]
            __builtin_trap();
    }
    [[gnu::always_inline]] ~G()
    {
        d::ThreadRecord& record = d::t_record;
        constexpr bool kTopCheck = (F & kRecord) != 0;
        constexpr bool kTopCheckFirst = kTopCheck && (F & kCheckAfterPop) == 0;
        if constexpr (kTopCheckFirst)
            if (record.top.load(std::memory_order_relaxed) != entry) [[unlikely]]
                __builtin_trap();
        CUcontext popped;
        d::PopFn popFn;
        if constexpr ((F & kPopEarly) != 0)
            popFn = pop;
        else
            popFn = d::g_pop.load(std::memory_order_relaxed);
        const CUresult r = popFn(&popped);
        if (r != CUDA_SUCCESS || ((F & kPopCheck) != 0 && popped != state->handle)) [[unlikely]]
            __builtin_trap();
        if constexpr (kTopCheck && !kTopCheckFirst)
            if (record.top.load(std::memory_order_relaxed) != entry) [[unlikely]]
                __builtin_trap();
        if constexpr ((F & kRecord) != 0)
            record.top.store(entry - 1, std::memory_order_relaxed);
        if constexpr ((F & kFlagsOut) != 0) {
            std::atomic_signal_fence(std::memory_order_seq_cst);
            if (state->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]]
                __builtin_trap();
        }
    }
};

// The layout before 2026-12-05: the record's top kept as a depth (an index) beside a limit that sent
// unregistered threads out of line. Entering loaded the depth, the entry at it and the limit; leaving
// compared the entry at the depth with its own, kept the depth across the pop and wrote depth - 1.
// Averaged over four code offsets (--code, H100 machines, 2026-12-05), it cost 1.064x-1.073x against
// 1.043x-1.058x for a copy of the top pointer in three processes, and 1.057x-1.069x against
// 1.044x-1.057x for the real guard once it kept its top so in two more.
// Other layouts measured no better than the spread between runs: the record written after the push,
// a Context of two words (the state and the CUcontext), the top as one word with the depth in the
// state pointer's low bits (1.053x-1.076x), and no empty-handle test (an empty Context pointing to a
// placeholder state with leave flags: within 0.5%). Entering tested the leave flags and then loaded
// the handle until 2026-12-06, when one word replaced both (ContextState::inlineHandle, kInlineHandle
// here): in the seven comparisons where the flags' copy read 1.043x-1.060x (four processes, H100
// machines, --code means and single runs), copies of the inline handle read 0.001-0.026 lower; where
// it read about 1.03x, they read the same within 0.005. Measured then and not adopted, none lower than
// the inline handle's copy beyond the spread between runs (three or four processes each): no
// empty-handle test as well, the pushed handle kept in a register for the pop check, and the driver's
// push and pop read from the thread's record beside its top instead of from g_push and g_pop (one
// cache line fewer).
struct DepthRecord {
    std::atomic<std::uint32_t> depth;
    std::uint32_t limit;
    d::RecordEntry entries[d::kRecordEntries];
};
constinit thread_local DepthRecord t_depth CUCTX_TLS_INITIAL_EXEC{0, 0, {}};
struct DepthG {
    d::ContextState* state;
    d::RecordEntry* entry;
    [[gnu::always_inline]] explicit DepthG(const Context& c) : state(detail::ContextAccess::state(c))
    {
        DepthRecord& record = t_depth;
        const std::uint32_t depth = record.depth.load(std::memory_order_relaxed);
        if (record.entries[depth].load(std::memory_order_relaxed) == state) [[unlikely]]
            __builtin_trap();
        const std::uint32_t mine = depth + 1;
        if (mine >= record.limit || state == nullptr || state->leaveFlags.load(std::memory_order_relaxed) != 0)
            [[unlikely]]
            __builtin_trap();
        entry = &record.entries[mine];
        entry->store(state, std::memory_order_relaxed);
        record.depth.store(mine, std::memory_order_release);
        if (d::g_push.load(std::memory_order_relaxed)(state->handle) != CUDA_SUCCESS) [[unlikely]]
            __builtin_trap();
    }
    [[gnu::always_inline]] ~DepthG()
    {
        DepthRecord& record = t_depth;
        const std::uint32_t depth = record.depth.load(std::memory_order_relaxed);
        if (&record.entries[depth] != entry) [[unlikely]]
            __builtin_trap();
        CUcontext popped;
        const CUresult r = d::g_pop.load(std::memory_order_relaxed)(&popped);
        if (r != CUDA_SUCCESS || popped != state->handle) [[unlikely]]
            __builtin_trap();
        record.depth.store(depth - 1, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (state->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]]
            __builtin_trap();
    }
};

// The guards cycle through `contexts` (a power of two of them), as a program switching between them does.
template <class Guard>
[[gnu::noinline]] void loop(const Context* const* contexts, std::size_t mask, long n)
{
    for (long i = 0; i < n; ++i)
        Guard g(*contexts[static_cast<std::size_t>(i) & mask]);
}

// Where the real guard's object lies, for --sweep, which moves it through the stack. Taking its address
// keeps the guard in memory, so only the sweep's loop does; elsewhere the guard stays in registers, as in
// a program (until 2026-12-06 the table's guard row recorded it too, and read 1.5-4% above the copy in
// every process).
const void* g_guardAddress = nullptr;

[[gnu::noinline]] void guardLoopInMemory(const Context* const* contexts, std::size_t mask, long n)
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
// function aligned to 64 bytes, then `Pad` bytes of no-ops run once per call before the loop): how far code
// placement alone moves a layout's ratio, to tell a layout's gain from where the compiler put its loop. The
// shifts are from where the compiler starts each loop, which differs between layouts, compilers and builds
// (disassemble the loopAt functions to see where). The driver's calls alone ("calls only": the context
// reached through its Context, push and pop through cuctx's pointers) are the floor of every layout at each
// shift. Once (an H100 machine, 2026-12-06) single shifts read 2.1x-3.2x, the guard's and the copy's at
// different shifts, in one process only: two processes on another machine after it read 1.01x-1.06x at
// every shift.
#define CUCTX_ANATOMY_PAD                                                                                              \
    if constexpr (Pad > 0)                                                                                             \
    asm volatile(".skip %c0, 0x90" ::"i"(Pad))
template <int Pad, class Guard>
[[gnu::noinline, gnu::aligned(64)]] void loopAt(const Context* const* contexts, std::size_t mask, long n)
{
    CUCTX_ANATOMY_PAD;
    for (long i = 0; i < n; ++i)
        Guard g(*contexts[static_cast<std::size_t>(i) & mask]);
}
// The same for --threads code: a task per context entered, keep(i) inside as on the other sides, from
// the thread's place in `ring` (the contexts in turn, twice over).
template <int Pad, class Guard>
[[gnu::noinline, gnu::aligned(64)]] void taskLoopAt(const Context* const* ring, std::size_t mask, long n)
{
    CUCTX_ANATOMY_PAD;
    for (long i = 0; i < n; ++i) {
        Guard g(*ring[static_cast<std::size_t>(i) & mask]);
        bench::keep(i);
    }
}
#undef CUCTX_ANATOMY_PAD

using LoopFn = void (*)(const Context* const*, std::size_t, long);
template <class Guard>
std::array<LoopFn, 4> shifted()
{
    return {&loopAt<0, Guard>, &loopAt<16, Guard>, &loopAt<32, Guard>, &loopAt<48, Guard>};
}

void codePlacement(const Context* const* contexts, const CUcontext* handles)
{
    const std::pair<const char*, std::array<LoopFn, 4>> layouts[] = {
        {"guard", shifted<ContextGuard>()}, {"copy", shifted<G<kAll>>()},
        {"depth", shifted<DepthG>()},       {"thread pointer", shifted<G<kAll | kThreadPointer>>()},
        {"calls only", shifted<G<0>>()}, // the floor at each shift
    };
    for (const std::size_t count : {std::size_t{2}, std::size_t{8}}) {
        const std::size_t mask = count - 1;
        const std::function<void(long)> raw = [&](long n) { rawLoop(handles, mask, n); };
        std::printf("%zu contexts in turn, code shifted by 0 / 16 / 32 / 48 bytes:", count);
        for (const auto& [name, loops] : layouts) {
            std::printf(" | %s", name);
            double sum = 0;
            for (const LoopFn loop : loops) {
                const bench::Comparison c =
                    bench::compareLoops(50000, 201, raw, [&](long n) { loop(contexts, mask, n); });
                std::printf(" %.3fx", c.ratio);
                sum += c.ratio;
            }
            std::printf(" (mean %.3fx)", sum / 4);
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
    const std::function<void(long)> guard = [&](long k) { guardLoopInMemory(contexts, 1, k); };
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

// --threads [threads] [contexts] [rounds] [code | stack | work]: `threads` threads (16) entering `contexts`
// shared contexts (2; 1, 2, 4 or 8) in turn, a guard and keep(i) per task, as cuctx-bench-switching's
// multi-thread rows do, for the sides below in rounds (33) of windows of every side, rotating which
// goes first (until 2026-12-06, and in the figures below, a fixed number of tasks a thread timed from
// the first thread's start to the last one's finish). Each side's median ratio to the raw side, its 95%
// interval (bench::medianInterval) and its best rate. The copies show which part of the guard moves the
// aggregate, and three more whether moving work out from between the push and the pop does (the check
// that the guard's entry is the record's top after the pop, the pop function loaded before the push,
// and both; kCheckAfterPop, kPopEarly; the two that load it early also to a raw side that loads its pop
// function before its push too); raw sides with a dependent chain of about 2 or 8 ns between a task's
// pop and the next push ("gap") or between its push and its pop ("inside") whether time spent outside
// the driver's calls moves it; a raw side whose threads are not registered with cuctx (the others' are;
// cuctx-bench-switching registers only the guard's) whether registration does. `code`: the real guard
// and the driver's calls alone at four shifts in a line of code instead (see --code). `stack`: the raw
// side, the real guard and the driver's calls alone each as usual (their stacks where the thread's
// function puts them, for the whole run) and "spread", each batch at the thread's next stack placement
// (bench::batchPlacement: every 16-byte step over 4 KiB in any 256 consecutive batches; each thread's
// place goes on from window to window), as the single-thread rows of both benchmarks spread their runs
// over sixteen placements. Whether the multi-thread rows, which keep each thread's stack at one place
// for the whole process, time the guard at a placement rather than the guard: the spread guard's ratio
// to the spread raw side, printed beside its ratio to the raw side, is what a cuctx-bench-switching
// that spread its stacks would print. `work`: the raw side and the real guard around tasks that do
// work, as a pool's tasks do, with the context entered (8, 32 or 128 steps "inside") and 8 steps on
// each side of the pop ("both"), each guard also to the raw side doing the same work: whether what
// holds the guard below raw over two contexts is its work in an empty task, or the guard in any.
//
// 16 threads over two contexts, five processes on three H100 machines (2026-12-06): the gap 1.019x-
// 1.230x, inside 0.950x-0.974x, the short gap 0.994x-1.004x, unregistered 1.002x; the guard 1.002x-
// 1.009x, its copies 0.964x-1.011x; at four code shifts the guard 1.001x-1.033x and the calls alone
// 1.019x-1.049x. cuctx-bench-switching on the same machines read its guard at 0.957x-0.991x over two
// contexts: the driver's contention, which answers to nanoseconds and to the program around the
// loops, moves these rows, not one part of the guard. `stack`, two processes on one H100 machine
// (2026-12-07): the guard 1.013x and 1.005x with the stacks fixed, 1.006x and 1.012x to raw spread; a
// cuctx-bench-switching whose rows spread their stacks read 0.990x and 0.982x over two contexts there, so
// the stacks' placement is not what holds its rows below raw.
//
// The steps are template arguments, so that the plain raw side makes, between its push and its pop,
// what cuctx-bench-switching's raw side makes: the pop's call and keep(i), nothing more (between the
// pop and the next push every side here makes one load more than there, reaching the contexts through
// `at`). Until 2026-12-07 they were read at run time, and every raw side, the plain one included,
// loaded its two counts, tested them and stored a value between its push and its pop, and again after
// its pop. Every figure above was taken against that raw side. Work between a push and its pop costs
// these rows throughput (the "inside" side), which is why the guard read 1.00x or more here and
// below 1.00x in cuctx-bench-switching on the same machines. Against the fixed raw side, three
// processes on H100 machines (2026-12-07): the guard 0.975x-0.983x, as cuctx-bench-switching reads it;
// the calls alone 0.996x-1.005x; the copies 0.962x-1.004x; the 2 ns gap 0.982x-0.983x, 8 ns inside
// 0.977x-0.982x, the 8 ns gap 1.116x in one process and 0.976x and 0.981x in two: any work in a task
// costs these rows about 2%, no part of the guard more than another (docs/switching-runs.md).
// `work`, five processes on one H100 machine (2026-12-07): the guard to the raw side doing the same
// work 0.989x-1.002x (8 inside), 0.905x-1.020x (32), 1.001x-1.057x (128), 1.025x-1.092x (both 8); the
// empty guard 0.993x-1.093x: in tasks that do work the guard keeps level with raw.
template <int Steps>
[[gnu::always_inline]] inline void chain(long i)
{
    if constexpr (Steps > 0) {
        auto x = static_cast<std::uint64_t>(i);
        for (int j = 0; j < Steps; ++j) {
            x = x * 3 + 1;
            asm volatile("" : "+r"(x));
        }
        bench::keep(x);
    }
}

enum class ThreadSides { parts, code, stack, work };

void threads(const std::vector<Context>& all, int threadCount, std::size_t count, int rounds, ThreadSides which)
{
    const std::vector<Context> shared(all.begin(), all.begin() + static_cast<long>(count));
    const auto& api = d::api();
    // Windows as cuctx-bench-switching's (windowRate, batches of kSwitchTasksPerBatch), shorter, since
    // there are up to fifteen sides.
    constexpr double kWindowSeconds = 0.1;
    std::atomic<std::size_t> nextStart{0};
    thread_local std::size_t start = 0;
    auto at = [&](long i) -> const Context& { return shared[(start + static_cast<std::size_t>(i)) % count]; };
    auto rawSide = [&]<int Gap, int Inside>() {
        return std::function<void(long)>([&](long n) {
            CUcontext popped = nullptr;
            for (long i = 0; i < n; ++i) {
                api.cuCtxPushCurrent(at(i).native());
                bench::keep(i);
                chain<Inside>(i);
                api.cuCtxPopCurrent(&popped);
                chain<Gap>(i);
            }
        });
    };
    // The plain raw side with the driver's pop function read before the push, as kPopEarly does.
    auto rawPopEarly = [&] {
        return std::function<void(long)>([&](long n) {
            CUcontext popped = nullptr;
            for (long i = 0; i < n; ++i) {
                const auto pop = api.cuCtxPopCurrent;
                api.cuCtxPushCurrent(at(i).native());
                bench::keep(i);
                pop(&popped);
            }
        });
    };
    // A guard per task; with `Inside` and `Gap`, around work as rawSide's (the work mode's sides).
    auto guardSide = [&]<class Guard, int Gap = 0, int Inside = 0>()
    {
        return std::function<void(long)>([&](long n) {
            for (long i = 0; i < n; ++i) {
                {
                    Guard g(at(i));
                    bench::keep(i);
                    chain<Inside>(i);
                }
                chain<Gap>(i);
            }
        });
    };
    struct Side {
        const char* name;
        std::function<void(long)> tasks;
        bool registered = true;     // its threads registered with cuctx before the clock starts
        bool spread = false;        // each batch at the thread's next stack placement
        const char* base = nullptr; // the side (by name) its ratio is also given to, besides the raw side; null: none
    };
    // `code`: the real guard and the driver's calls alone (through cuctx's pointers) with their loops
    // shifted four ways in a line of code, as --code does for one thread.
    std::vector<const Context*> ring;
    for (std::size_t j = 0; j < 2 * count; ++j)
        ring.push_back(&shared[j % count]);
    auto shiftedSide = [&](void (*loop)(const Context* const*, std::size_t, long)) {
        return std::function<void(long)>([&, loop](long n) { loop(ring.data() + start % count, count - 1, n); });
    };
    std::vector<Side> sides;
    if (which == ThreadSides::code)
        sides = {
            {"raw", rawSide.operator()<0, 0>()},
            {"guard", guardSide.operator()<ContextGuard>()},
            {"guard +0", shiftedSide(&taskLoopAt<0, ContextGuard>)},
            {"guard +16", shiftedSide(&taskLoopAt<16, ContextGuard>)},
            {"guard +32", shiftedSide(&taskLoopAt<32, ContextGuard>)},
            {"guard +48", shiftedSide(&taskLoopAt<48, ContextGuard>)},
            {"calls only +0", shiftedSide(&taskLoopAt<0, G<0>>)},
            {"calls only +16", shiftedSide(&taskLoopAt<16, G<0>>)},
            {"calls only +32", shiftedSide(&taskLoopAt<32, G<0>>)},
            {"calls only +48", shiftedSide(&taskLoopAt<48, G<0>>)},
            {"raw gap 8", rawSide.operator()<8, 0>()},
        };
    else if (which == ThreadSides::stack)
        sides = {
            {"raw", rawSide.operator()<0, 0>()},
            {"guard", guardSide.operator()<ContextGuard>()},
            {"calls only", guardSide.operator()<G<0>>()},
            {"raw spread", rawSide.operator()<0, 0>(), true, true},
            {"guard spread", guardSide.operator()<ContextGuard>(), true, true, "raw spread"},
            {"calls spread", guardSide.operator()<G<0>>(), true, true, "raw spread"},
        };
    else if (which == ThreadSides::work)
        sides = {
            {"raw", rawSide.operator()<0, 0>()},
            {"guard", guardSide.operator()<ContextGuard>()},
            {"raw inside 8", rawSide.operator()<0, 8>()},
            {"guard inside 8", guardSide.operator()<ContextGuard, 0, 8>(), true, false, "raw inside 8"},
            {"raw inside 32", rawSide.operator()<0, 32>()},
            {"guard inside 32", guardSide.operator()<ContextGuard, 0, 32>(), true, false, "raw inside 32"},
            {"raw inside 128", rawSide.operator()<0, 128>()},
            {"guard inside 128", guardSide.operator()<ContextGuard, 0, 128>(), true, false, "raw inside 128"},
            {"raw both 8", rawSide.operator()<8, 8>()},
            {"guard both 8", guardSide.operator()<ContextGuard, 8, 8>(), true, false, "raw both 8"},
        };
    else
        sides = {
            {"raw", rawSide.operator()<0, 0>()},
            {"guard", guardSide.operator()<ContextGuard>()},
            {"calls only", guardSide.operator()<G<0>>()},
            {"copy", guardSide.operator()<G<kAll>>()},
            {"-record", guardSide.operator()<G<kAll & ~kRecord>>()},
            {"-entry checks", guardSide.operator()<G<kAll & ~(kElide | kLimit | kInlineHandle)>>()},
            {"-exit checks", guardSide.operator()<G<kAll & ~(kPopCheck | kFlagsOut)>>()},
            {"check after pop", guardSide.operator()<G<kAll | kCheckAfterPop>>()},
            {"pop loaded early", guardSide.operator()<G<kAll | kPopEarly>>(), true, false, "raw pop early"},
            {"both moved", guardSide.operator()<G<kAll | kCheckAfterPop | kPopEarly>>(), true, false, "raw pop early"},
            {"raw pop early", rawPopEarly()},
            {"raw gap 2", rawSide.operator()<2, 0>()},
            {"raw gap 8", rawSide.operator()<8, 0>()},
            {"raw inside 8", rawSide.operator()<0, 8>()},
            {"raw unregistered", rawSide.operator()<0, 0>(), false},
        };
    // Each spread side's next batch for each thread's place (`start`, one thread's a window), kept from
    // window to window, so that the rounds together visit every placement (batchPlacement) whatever a
    // window holds; the threads start 16 batches apart. Only the thread at that place touches it while
    // a window runs, and windowRate joins its threads before the next.
    std::vector<std::vector<long>> nextBatch(sides.size(), std::vector<long>(static_cast<std::size_t>(threadCount)));
    for (std::vector<long>& side : nextBatch)
        for (std::size_t t = 0; t < side.size(); ++t)
            side[t] = static_cast<long>(t) * 16;
    const bench::RoundsOfSides r = bench::roundsOfSides(rounds, sides.size(), [&](std::size_t side) {
        nextStart.store(0);
        return bench::windowRate(
            threadCount, kWindowSeconds, bench::kSwitchTasksPerBatch,
            [&] {
                start = nextStart.fetch_add(1);
                if (sides[side].registered) {
                    ContextGuard warm(at(0)); // registers the thread; the driver's per-thread set-up
                } else {
                    CUcontext popped = nullptr; // the driver's per-thread set-up only
                    api.cuCtxPushCurrent(at(0).native());
                    api.cuCtxPopCurrent(&popped);
                }
            },
            [&] {
                if (!sides[side].spread) {
                    sides[side].tasks(bench::kSwitchTasksPerBatch);
                    return;
                }
                bench::lowered(bench::batchPlacement(nextBatch[side][start]++), [&] {
                    sides[side].tasks(bench::kSwitchTasksPerBatch);
                    return 0.0;
                });
            });
    });
    std::printf("%d threads over %zu contexts, %d rounds of windows of %.0f ms: median ratio to raw (95%% "
                "interval), best Mops/s\n",
                threadCount, count, rounds, kWindowSeconds * 1e3);
    for (std::size_t k = 0; k < sides.size(); ++k) {
        const bench::MedianInterval m = bench::medianInterval(r.ratios[k]);
        std::printf("  %-16s %.3f (%.3f-%.3f) %.2f", sides[k].name, m.median, m.low, m.high, r.best[k] / 1e6);
        if (const char* const baseName = sides[k].base; baseName != nullptr) {
            const auto base = static_cast<std::size_t>(
                std::find_if(sides.begin(), sides.end(),
                             [&](const Side& side) { return std::strcmp(side.name, baseName) == 0; }) -
                sides.begin());
            const std::vector<double>& baseRatios = r.ratios.at(base); // a name no side has throws
            // Each round's ratio to its base side, from both sides' ratios to the raw side of that round.
            std::vector<double> toBase;
            for (std::size_t i = 0; i < r.ratios[k].size(); ++i)
                toBase.push_back(r.ratios[k][i] / baseRatios[i]);
            const bench::MedianInterval b = bench::medianInterval(std::move(toBase));
            std::printf(", to %s %.3f (%.3f-%.3f)", baseName, b.median, b.low, b.high);
        }
        std::printf("\n");
    }
    char window[32];
    std::snprintf(window, sizeof window, " of %.0f ms", kWindowSeconds * 1e3);
    if (const std::string lost =
            bench::roundsLeftOut(r.emptyRounds, rounds, window, "fewer threads give each time for one");
        !lost.empty())
        std::fprintf(stderr, "cuctx-bench-guard-anatomy: %s\n", lost.c_str());
}

// What the command line asks for: the table (no words), --sweep, --code, or --threads with its numbers.
struct Mode {
    enum class What { table, sweep, code, threads } what = What::table;
    int threadCount = 16;
    int contexts = 2;
    int rounds = 33;
    ThreadSides threadSides = ThreadSides::parts;
};

constexpr const char* kUsage = "usage: cuctx-bench-guard-anatomy [--sweep | --code | --threads [threads, 1-1024 "
                               "[contexts, 1, 2, 4 or 8 [rounds, 6-1000000]]] [code | stack | work]]\n";

// `mode` from argv; what is wrong with it, empty where nothing is.
std::string parseMode(int argc, char** argv, Mode& mode)
{
    if (argc < 2)
        return {};
    const std::string first = argv[1];
    if (first == "--sweep" || first == "--code") {
        mode.what = first == "--sweep" ? Mode::What::sweep : Mode::What::code;
        return argc > 2 ? "unexpected word '" + std::string(argv[2]) + "' after " + first : std::string();
    }
    if (first != "--threads")
        return first.starts_with("-") ? "unknown option " + first : "unexpected word '" + first + "'";
    mode.what = Mode::What::threads;
    // The counts in order, each optional, then optionally the word of the sides: "--threads 8 work" is
    // 8 threads over the default contexts and rounds, doing work. A word after the last count, or
    // after the sides' word, is refused.
    struct Count {
        int* value;
        int low;
        int high;
        const char* rule; // what the count must be, for the refusal
    };
    const Count counts[] = {
        {&mode.threadCount, 1, static_cast<int>(bench::kMaxThreads), "threads must be a whole number from 1 to 1024"},
        {&mode.contexts, 1, 8, "contexts must be 1, 2, 4 or 8"},
        {&mode.rounds, 6, 1'000'000, "rounds must be a whole number from 6 to 1000000"},
    };
    const std::pair<const char*, ThreadSides> words[] = {
        {"code", ThreadSides::code}, {"stack", ThreadSides::stack}, {"work", ThreadSides::work}};
    std::size_t next = 0; // the next count
    for (int at = 2; at < argc; ++at) {
        const std::string word = argv[at];
        if (mode.threadSides != ThreadSides::parts)
            return "unexpected word '" + word + "' after '" + argv[at - 1] + "'";
        const auto sides = std::ranges::find(words, word, [](const auto& w) { return std::string_view(w.first); });
        if (sides != std::end(words)) {
            mode.threadSides = sides->second;
            continue;
        }
        if (next == std::size(counts))
            return "unexpected word '" + word + "' after --threads' rounds (only 'code', 'stack' or 'work' may follow)";
        // A word that is no count in range says which count it stands for and what that one must be:
        // "bad value '5' for --threads (contexts, 1, 2, 4 or 8)" said neither that the 5 was the
        // contexts nor that they must be one of these.
        const Count& c = counts[next++];
        if (!bench::wholeNumberIn(argv[at], c.low, c.high, *c.value) ||
            (c.value == &mode.contexts && (mode.contexts & (mode.contexts - 1)) != 0)) {
            // A word with no digit may be a misspelt sides word as well as a bad count: say both.
            const bool noDigit = std::ranges::none_of(word, [](char ch) { return ch >= '0' && ch <= '9'; });
            return "bad value '" + word + "' for --threads: the " + c.rule +
                   (noDigit ? " (the sides' word after the counts is 'code', 'stack' or 'work')" : "");
        }
    }
    return {};
}

// The measurements the mode asks for, printed as they finish; false, measuring nothing, where the guard's
// inline path is diverted in this process (g_push and g_pop not the driver's: a ThreadSanitizer build, logging at trace
// level, no asymmetric fence for leaving; thread_record.hpp): the copies call through them, and a diverted call fails,
// which they take for a broken driver and trap on, and the real guard would time its out-of-line path
// instead of the one every mode is about.
bool run(const Mode& mode)
{
    const bench::PinToCurrentCpu pin;
    Context home = Context::create(Device::get(0));
    std::vector<Context> made;
    for (int i = 0; i < 8; ++i)
        made.push_back(Context::create(Device::get(0)));
    ContextBinding binding(home);
    {
        ContextGuard warm(made[0]); // registers this thread
    }
    if (d::g_push.load() != d::api().cuCtxPushCurrent || d::g_pop.load() != d::api().cuCtxPopCurrent)
        return false;
    t_depth.entries[0].store(&d::g_placeholderContext, std::memory_order_relaxed);
    t_depth.limit = d::kRecordEntries;
    std::vector<const Context*> contexts;
    std::vector<CUcontext> handles;
    for (const Context& c : made) {
        contexts.push_back(&c);
        handles.push_back(c.native());
    }
    if (mode.what == Mode::What::sweep) {
        sweep(contexts.data(), handles.data());
        return true;
    }
    if (mode.what == Mode::What::threads) {
        threads(made, mode.threadCount, static_cast<std::size_t>(mode.contexts), mode.rounds, mode.threadSides);
        return true;
    }
    if (mode.what == Mode::What::code) {
        codePlacement(contexts.data(), handles.data());
        return true;
    }
    for (const std::size_t count : {std::size_t{2}, std::size_t{8}}) {
        const std::size_t mask = count - 1;
        const std::pair<const char*, std::function<void(long)>> variants[] = {
            {"guard", [&](long n) { loop<ContextGuard>(contexts.data(), mask, n); }},
            {"copy", [&](long n) { loop<G<kAll>>(contexts.data(), mask, n); }},
            {"-elide", [&](long n) { loop<G<kAll & ~kElide>>(contexts.data(), mask, n); }},
            {"-limit", [&](long n) { loop<G<kAll & ~kLimit>>(contexts.data(), mask, n); }},
            {"-inline handle", [&](long n) { loop<G<kAll & ~kInlineHandle>>(contexts.data(), mask, n); }},
            {"-record", [&](long n) { loop<G<kAll & ~kRecord>>(contexts.data(), mask, n); }},
            {"-pop check", [&](long n) { loop<G<kAll & ~kPopCheck>>(contexts.data(), mask, n); }},
            {"-flags out", [&](long n) { loop<G<kAll & ~kFlagsOut>>(contexts.data(), mask, n); }},
            {"calls only", [&](long n) { loop<G<0>>(contexts.data(), mask, n); }},
            {"depth", [&](long n) { loop<DepthG>(contexts.data(), mask, n); }},
            {"thread pointer", [&](long n) { loop<G<kAll | kThreadPointer>>(contexts.data(), mask, n); }},
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
    std::printf("address bits 0-11: thread record 0x%03x\n", lowBits(&d::t_record));
    return true;
}

} // namespace

int main(int argc, char** argv)
{
    Mode mode;
    if (const std::string error = parseMode(argc, argv, mode); !error.empty()) {
        std::fprintf(stderr, "cuctx-bench-guard-anatomy: %s\n%s", error.c_str(), kUsage);
        return 2;
    }
    if (!bench::driverReady("cuctx-bench-guard-anatomy"))
        return 77;
    try {
        if (!run(mode)) {
            std::fprintf(stderr, "cuctx-bench-guard-anatomy: the guard's inline path is diverted in this process (a "
                                 "ThreadSanitizer build, logging at trace level, or no asymmetric fence), so its "
                                 "copies cannot run and the guard would not time its inline path; nothing "
                                 "measured\n");
            return 77;
        }
    } catch (const std::exception& e) {
        // A thread the system refused, a driver call that failed: what is printed so far stays.
        return bench::stopped("cuctx-bench-guard-anatomy", {}, false, e);
    }
    return 0;
}

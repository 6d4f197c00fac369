// cuctx-bench-guard-anatomy: what each part of ContextGuard's inline switching path costs, for whoever
// works on it. Copies of the header's logic with parts left out run interleaved with the raw
// cuCtxPushCurrent + cuCtxPopCurrent pair and the real guard in one process (best of 41 rounds of
// 300,000, three passes), each printed as a ratio to the raw pair:
//
//   guard               cuctx::ContextGuard itself
//   copy, cold calls    the header's switching path, its fallbacks calling cuctx's cold functions
//   trapped             the same with every fallback a trap (what the fallbacks' presence costs)
//   -kind               trapped, without storing the frame's kind
//   minimal             no frame: the use count and the current context only
//
// The copies reach cuctx's internals; they are measurements, not alternatives to use.

#include "bench_common.hpp"
#include "context/context_access.hpp"
#include "cuctx/cuctx.hpp"
#include "driver/driver_state.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

using namespace cuctx;
using Clock = std::chrono::steady_clock;
namespace d = cuctx::detail;

// V1: the header's logic, cold calls kept (misuse path trapped). V2: cold calls trapped.
// V3: V2 without the kind store.
// V5: minimal: save top.state in the guard, no frame link.
template <int V> struct G {
    d::Frame f;
    d::ContextState* savedState;
    [[gnu::always_inline]] explicit G(d::ContextState* state)
    {
        f.state = state;
        d::ThreadTop& top = d::t_top;
        if (top.state == state && state != nullptr) [[unlikely]]
            __builtin_trap();
        const d::PushFn push = d::g_push.load(std::memory_order_relaxed);
        if (top.recentState == state && state != nullptr && push != nullptr &&
            top.recentSlot->load(std::memory_order_relaxed) == state) [[likely]] {
            f.uses = top.recentUses;
            f.uses->store(f.uses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            if (V != 3)
                f.kind = d::FrameKind::guard;
            if (const CUresult r = push(state->handle); r != CUDA_SUCCESS) [[unlikely]] {
                if (V == 1)
                    d::guardPushFailed(f, r);
                else
                    __builtin_trap();
            }
            if (V == 5) {
                savedState = top.state;
                top.state = state;
                return;
            }
            f.below = top.frame;
            top.state = state;
            top.frame = &f;
            return;
        }
        __builtin_trap();
    }
    [[gnu::always_inline]] ~G()
    {
        if (V == 3 || f.kind == d::FrameKind::guard) {
            const d::PopFn pop = d::g_pop.load(std::memory_order_relaxed);
            if ((V != 5 && d::t_top.frame != &f) || pop == nullptr) [[unlikely]]
                __builtin_trap();
            CUcontext popped = nullptr;
            const CUresult r = pop(&popped);
            if (r != CUDA_SUCCESS || popped != f.state->handle) [[unlikely]] {
                if (V == 1) {
                    d::guardPopFailed(f, r, popped);
                    return;
                }
                __builtin_trap();
            }
            if (V == 5)
                d::t_top.state = savedState;
            else
                d::setTop(f.below);
            const std::uint32_t after = f.uses->load(std::memory_order_relaxed) - 1;
            f.uses->store(after, std::memory_order_release);
            if (after == 0) {
                std::atomic_signal_fence(std::memory_order_seq_cst);
                if (f.state->leaveFlags.load(std::memory_order_relaxed) != 0) [[unlikely]] {
                    if (V == 1)
                        d::lastUseOnThread(f.state);
                    else
                        __builtin_trap();
                }
            }
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
[[gnu::noinline]] double runGuard(const Context& c, long n)
{
    auto t0 = Clock::now();
    for (long i = 0; i < n; ++i) {
        ContextGuard g(c);
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
int main()
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
    const Holder s{detail::ContextAccess::state(other)};
    const long n = 300000;
    for (int pass = 0; pass < 3; ++pass) {
        double best[7];
        for (double& x : best)
            x = 1e9;
        for (int r = 0; r < 41; ++r) {
            best[0] = std::min(best[0], runRaw(other.native(), n));
            best[6] = std::min(best[6], runGuard(other, n));
            best[1] = std::min(best[1], run<1>(s, n));
            best[2] = std::min(best[2], run<2>(s, n));
            best[3] = std::min(best[3], run<3>(s, n));
            best[5] = std::min(best[5], run<5>(s, n));
        }
        std::printf("raw %.2f ns | guard %.3fx | copy, cold calls %.3fx | trapped %.3fx | -kind %.3fx | "
                    "minimal %.3fx\n",
                    best[0], best[6] / best[0], best[1] / best[0], best[2] / best[0], best[3] / best[0],
                    best[5] / best[0]);
    }
}

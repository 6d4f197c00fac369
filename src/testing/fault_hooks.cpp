// SPDX-License-Identifier: MIT
// cuctx::testing::failNthCall on any driver: a second driver table whose every entry is a hook that
// counts down its entry's pending failure and otherwise calls the real entry. Installing it swaps
// the active table (an atomic pointer every call reads), so threads see either table, both valid.

#include "cuctx/testing.hpp"

#include "check/check.hpp"
#include "check/device_faults.hpp"
#include "driver/driver_state.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string_view>

namespace cuctx::testing {

namespace {

enum EntryIndex : std::size_t {
#define CUCTX_ENTRY_INDEX(field, symbol, version, kind) index_##field,
    CUCTX_DRIVER_ENTRIES(CUCTX_ENTRY_INDEX)
#undef CUCTX_ENTRY_INDEX
        entryCount
};

struct Pending {
    std::atomic<long> countdown{0}; // > 0: fail when it reaches 1
    std::atomic<int> result{CUDA_SUCCESS};
};

Pending g_pending[entryCount];
cuctx::detail::DriverApi g_real;   // the loaded driver's table
cuctx::detail::DriverApi g_hooked; // hooks in front of it

template <std::size_t I, typename Fn>
struct Hook;

template <std::size_t I, typename... Args>
struct Hook<I, CUresult(CUDAAPI*)(Args...)> {
    using Fn = CUresult(CUDAAPI*)(Args...);
    static Fn real;
    static CUresult CUDAAPI call(Args... args)
    {
        Pending& p = g_pending[I];
        if (p.countdown.load(std::memory_order_relaxed) > 0 && p.countdown.fetch_sub(1, std::memory_order_acq_rel) == 1)
            return static_cast<CUresult>(p.result.load(std::memory_order_relaxed));
        return real(args...);
    }
};
template <std::size_t I, typename... Args>
typename Hook<I, CUresult(CUDAAPI*)(Args...)>::Fn Hook<I, CUresult(CUDAAPI*)(Args...)>::real = nullptr;

void installHooks()
{
    static std::once_flag once;
    std::call_once(once, [] {
        g_real = cuctx::detail::api();
        g_hooked = g_real;
#define CUCTX_HOOK(field, symbol, version, kind)                                                                       \
    if (g_real.field != nullptr) {                                                                                     \
        using H = Hook<index_##field, decltype(g_real.field)>;                                                         \
        H::real = g_real.field;                                                                                        \
        g_hooked.field = &H::call;                                                                                     \
    }
        CUCTX_DRIVER_ENTRIES(CUCTX_HOOK)
#undef CUCTX_HOOK
        cuctx::detail::g_activeApi.store(&g_hooked, std::memory_order_release);
        cuctx::detail::notifyDriverReplaced(); // the inline guard's push and pop go through hooks too
    });
}

} // namespace

void failNthCall(const std::string& symbol, int nth, CUresult result)
{
    std::size_t index = entryCount;
    std::size_t i = 0;
    for (const cuctx::detail::DriverEntry& e : cuctx::detail::driverEntries()) {
        if (std::string_view(e.symbol) == symbol && index == entryCount)
            index = i; // the first row of a symbol: the entry cuctx calls by that name
        ++i;
    }
    if (index == entryCount || nth < 1)
        cuctx::detail::throwError(Errc::invalid_argument, "cuctx::testing::failNthCall",
                                  index == entryCount ? "cuctx does not call '" + symbol + "'"
                                                      : "nth is " + std::to_string(nth) + "; the first call is 1");
    installHooks();
    g_pending[index].result.store(static_cast<int>(result), std::memory_order_relaxed);
    g_pending[index].countdown.store(nth, std::memory_order_release);
}

void clearInjectedFailures() noexcept
{
    for (Pending& p : g_pending)
        p.countdown.store(0, std::memory_order_relaxed);
}

void forgetDeviceFaults() noexcept
{
    cuctx::detail::forgetFaults();
}

namespace detail {

std::string describeStack()
{
    std::string text = "cuctx: [";
    bool first = true;
    for (const ContextStack::Entry& e : ContextStack::snapshot()) {
        text += (first ? "" : ", ") + std::string(e.kind) + " " + std::to_string(e.id);
        first = false;
    }
    CUcontext current = nullptr;
    (void)cuctx::detail::api().cuCtxGetCurrent(&current);
    char handle[32];
    std::snprintf(handle, sizeof handle, "%p", static_cast<void*>(current));
    return text + "], driver current: " + handle;
}

void stackChanged(const std::string& before, const std::string& after)
{
    cuctx::detail::throwError(Errc::invalid_state, "cuctx::testing::expectStackUnchanged",
                              "the code changed this thread's context stack: before " + before + "; after " + after,
                              "Balance every push with a pop in the same scope (ContextGuard does)");
}

} // namespace detail
} // namespace cuctx::testing

// SPDX-License-Identifier: MIT
// Out of memory: every allocation that making a context makes fails once, in turn (std::bad_alloc
// from this program's operator new, replaced_new.cpp). The call must throw, and leave nothing behind:
// no context alive in the driver, nothing in cuctx's registry or its object counts, the thread's stack
// as it was. A program of its own (cuctx-oom-tests), so that the replaced allocation functions stay
// out of the other tests' way.

#include <catch2/catch.hpp>

#include "fake_driver.hpp"
#include "replaced_new.hpp"

#include "context/context_state.hpp"
#include "cuctx/cuctx.hpp"
#include "driver/driver_state.hpp"

#include <atomic>
#include <new>
#include <ostream>
#include <string>

namespace {

// > 0: the allocation that brings it to 0 fails. Allocations of every thread count (the code under
// test runs on this one), but not the fake driver's.
std::atomic<long> g_countdown{0};

} // namespace

bool cuctx_test_fail_allocation() noexcept
{
    if (cuctx_fake_inside_call() != 0)
        return false; // the fake driver's own: the real driver allocates no C++ memory
    long n = g_countdown.load(std::memory_order_relaxed);
    while (n > 0)
        if (g_countdown.compare_exchange_weak(n, n - 1, std::memory_order_relaxed))
            return n == 1;
    return false;
}

namespace {

struct Live {
    int contexts, primary;
    long registered;
    cuctx::LiveObjects objects;
    CUcontext current;
    bool operator==(const Live&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Live& l)
{
    return out << "{driver contexts " << l.contexts << ", primary refcount " << l.primary << ", registered "
               << l.registered << ", cuctx contexts " << l.objects.contexts << ", current " << l.current << "}";
}

Live live()
{
    CUcontext current = nullptr;
    (void)cuctx::detail::api().cuCtxGetCurrent(&current);
    return {cuctx_fake_live_contexts(), cuctx_fake_primary_refcount(0), cuctx::detail::liveContexts(),
            cuctx::liveObjects(), current};
}

// Runs `make` with its 1st, 2nd, ... allocation failing, until one run makes no more allocations
// than that: each failed run must throw and leave everything as it was. Returns how many runs failed.
template <typename Make>
int failEachAllocation(const Make& make)
{
    int failed = 0;
    for (long nth = 1; nth < 10000; ++nth) {
        INFO("allocation " << nth << " fails");
        const Live before = live();
        g_countdown.store(nth);
        bool threw = false;
        std::string error = "std::bad_alloc";
        try {
            make();
        } catch (const std::bad_alloc&) {
            threw = true;
        } catch (const cuctx::Error& e) {
            threw = true; // cuctx may report it as its own error
            error = e.what();
        }
        const bool reached = g_countdown.exchange(0) == 0;
        INFO("threw: " << (threw ? error : "nothing"));
        CHECK(live() == before);
        if (!reached) {
            CHECK_FALSE(threw);
            return failed;
        }
        failed += threw ? 1 : 0; // a failure cuctx absorbed (a log line) is fine too
    }
    FAIL("more than 10000 allocations");
    return failed;
}

} // namespace

TEST_CASE("each allocation of making a context fails in turn: it throws and leaves nothing behind", "[oom]")
{
    cuctx::setLogLevel(cuctx::LogLevel::off);
    const cuctx::Device device = cuctx::Device::get(0);
    { // what is made once per process or thread (the registry, this thread's state) is made here
        const cuctx::Context warm = cuctx::Context::create(device);
        const cuctx::Context primary = cuctx::Context::primary(device);
        const cuctx::ContextGuard guard(warm);
    }
    SECTION("Context::create")
    {
        CHECK(failEachAllocation([&] {
                  const cuctx::Context c = cuctx::Context::create(device);
                  const cuctx::ContextGuard guard(c);
              }) > 0);
    }
    SECTION("Context::primary")
    {
        CHECK(failEachAllocation([&] { const cuctx::Context p = cuctx::Context::primary(device); }) > 0);
    }
    SECTION("Context::borrow")
    {
        CUcontext raw = nullptr;
        REQUIRE(cuctx::detail::api().cuCtxCreate_v2(&raw, 0, device.native()) == CUDA_SUCCESS);
        CUcontext popped = nullptr;
        REQUIRE(cuctx::detail::api().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
        CHECK(failEachAllocation([&] { const cuctx::Context b = cuctx::Context::borrow(raw); }) > 0);
        CHECK(cuctx::detail::api().cuCtxDestroy(raw) == CUDA_SUCCESS);
    }
    SECTION("Context::green")
    {
        CHECK(failEachAllocation([&] { const cuctx::Context g = cuctx::Context::green(device, 8); }) > 0);
    }
}

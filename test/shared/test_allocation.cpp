// SPDX-License-Identifier: MIT
// The promise that guards do not allocate, checked with a counting global operator new. Built only
// without sanitizers, which bring their own operator new.

#include "driver_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/error.hpp"

#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>

namespace {

// Counts this thread's allocations while `counting` is set.
thread_local bool t_counting = false;
thread_local long t_allocations = 0;

} // namespace

void* operator new(std::size_t size)
{
    if (t_counting)
        ++t_allocations;
    if (void* p = std::malloc(size == 0 ? 1 : size))
        return p;
    throw std::bad_alloc();
}

void operator delete(void* p) noexcept
{
    std::free(p);
}

// Only where sized deallocation is on (g++ always, clang 14 with -fsized-deallocation): elsewhere
// nothing declares or calls it.
#ifdef __cpp_sized_deallocation
void operator delete(void* p, std::size_t) noexcept
{
    std::free(p);
}
#endif

using cuctx::Context;
using cuctx::ContextGuard;
using cuctx::Device;

TEST_CASE("entering and leaving guards allocates nothing, switching or not", "[guard][allocation]")
{
    cuctx::test::drainRawStack();
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    {
        ContextGuard warm(a); // the thread's first guard makes its state
        ContextGuard warm2(b);
    }
    t_allocations = 0;
    t_counting = true;
    for (int i = 0; i < 1000; ++i) {
        ContextGuard ga(a);    // switching
        ContextGuard again(a); // elided
        ContextGuard gb(b);    // switching again, on top
    }
    t_counting = false;
    CHECK(t_allocations == 0);
    CHECK(cuctx::ContextStack::depth() == 0);
}

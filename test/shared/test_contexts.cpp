// SPDX-License-Identifier: MIT
// Context, ContextGuard, ContextStack, adoption and the registry. Runs in both suites: against the
// fake driver on the CPU and against the real driver on the GPU.

#include "driver_helpers.hpp"
#include "thread_helpers.hpp"

#include "context/asymmetric_fence.hpp"
#include "context/context_access.hpp"
#include "cuctx/context.hpp"
#include "cuctx/context_binding.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/error.hpp"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <unistd.h>

using cuctx::Context;
using cuctx::ContextGuard;
using cuctx::ContextStack;
using cuctx::Device;
using cuctx::Errc;
using cuctx::test::errcOf;
using cuctx::test::Event;
using cuctx::test::raw;
using cuctx::test::rawCurrent;

namespace {

long live()
{
    return cuctx::detail::liveContexts();
}

} // namespace

TEST_CASE("Context::create leaves the caller's stack as it was; the last handle destroys it", "[context]")
{
    cuctx::test::drainRawStack();
    const long before = live();
    {
        Context a = Context::create(Device::get(0));
        CHECK(rawCurrent() == nullptr);
        CHECK(live() == before + 1);
        CHECK(a.device().ordinal() == 0);
        CHECK_FALSE(a.isPrimary());
        if (raw().cuCtxGetId != nullptr)
            CHECK(a.id() != 0);
        Context copy = a;
        CHECK(copy == a);
        a.reset();
        CHECK(live() == before + 1); // the copy keeps it
    }
    CHECK(live() == before);
}

TEST_CASE("a context reports its flags, limits, priorities and API version", "[context]")
{
    cuctx::ContextOptions options;
    options.schedule = cuctx::SchedulePolicy::blockingSync;
    Context c = Context::create(Device::get(0), options);
    CHECK((c.flags() & CU_CTX_SCHED_MASK) == CU_CTX_SCHED_BLOCKING_SYNC);
    CHECK(c.apiVersion() >= 3020);
    const auto range = c.streamPriorityRange();
    CHECK(range.greatest <= range.least);
    CHECK(c.limit(CU_LIMIT_STACK_SIZE) > 0);
    CHECK_NOTHROW(c.setLimit(CU_LIMIT_STACK_SIZE, 2048));
    CHECK_NOTHROW(c.synchronize());
    const auto memory = c.memoryInfo();
    CHECK(memory.free <= memory.total);
    CHECK(rawCurrent() == nullptr); // every query restored the stack
}

TEST_CASE("guards nest LIFO and restore exactly what was there", "[guard]")
{
    cuctx::test::drainRawStack();
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    {
        ContextGuard ga(a);
        CHECK(ga.switched());
        CHECK(rawCurrent() == a.native());
        {
            ContextGuard gb(b);
            CHECK(rawCurrent() == b.native());
            {
                ContextGuard ga2(a);
                CHECK(ga2.switched()); // a is current below b, not on top: a push is needed
                CHECK(rawCurrent() == a.native());
                CHECK(ContextStack::depth() == 3);
            }
            CHECK(rawCurrent() == b.native());
        }
        CHECK(rawCurrent() == a.native());
    }
    CHECK(rawCurrent() == nullptr);
    CHECK(ContextStack::depth() == 0);
}

TEST_CASE("a guard on the context already current makes no driver call", "[guard]")
{
    cuctx::test::drainRawStack();
    Context a = Context::create(Device::get(0));
    ContextGuard outer(a);
    const long calls = cuctx::test::driverCalls();
    {
        ContextGuard inner(a);
        CHECK_FALSE(inner.switched());
        ContextGuard inner2(a);
        CHECK_FALSE(inner2.switched());
    }
    if (cuctx::test::kFakeDriver)
        CHECK(cuctx::test::driverCalls() == calls);
    CHECK(ContextStack::depth() == 1);
}

TEST_CASE("a guard restores the stack when its scope ends with an exception", "[guard]")
{
    cuctx::test::drainRawStack();
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    ContextGuard ga(a);
    try {
        ContextGuard gb(b);
        CHECK(rawCurrent() == b.native());
        throw std::runtime_error("task failed");
    } catch (const std::runtime_error&) {
    }
    CHECK(rawCurrent() == a.native());
    CHECK(ContextStack::depth() == 1);
}

TEST_CASE("a guard on an empty handle is a clear error", "[guard]")
{
    Context empty;
    CHECK(errcOf([&] { ContextGuard g(empty); }) == Errc::invalid_argument);
    CHECK(ContextStack::depth() == 0);
    // Also once this thread has entered a context, and after that context is gone: the inline paths
    // must not take an empty handle for it.
    Context recent = Context::create(Device::get(0));
    {
        ContextGuard warm(recent);
    }
    CHECK(errcOf([&] { ContextGuard g(empty); }) == Errc::invalid_argument);
    recent.reset();
    CHECK(errcOf([&] { ContextGuard g(empty); }) == Errc::invalid_argument);
    CHECK(ContextStack::depth() == 0);
}

TEST_CASE("a foreign cuCtxSetCurrent inside a guard is detected, reported and repaired at exit", "[guard]")
{
    cuctx::test::drainRawStack();
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    {
        ContextGuard ga(a);
        REQUIRE(raw().cuCtxSetCurrent(b.native()) == CUDA_SUCCESS); // other code replaces the top
    }
    CHECK(rawCurrent() == nullptr); // the replaced entry was popped: the stack is as before
    try {
        a.checkRecordedError();
        FAIL("the mismatch was not recorded");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == Errc::stack_mismatch);
        CHECK_THAT(e.what(), Catch::Contains("instead of the context it pushed"));
        CHECK_THAT(e.what(), Catch::Contains("cudaSetDevice"));
    }
    CHECK_NOTHROW(a.checkRecordedError()); // reported once
}

TEST_CASE("an unbalanced foreign push inside a guard is detected and both entries are popped", "[guard]")
{
    cuctx::test::drainRawStack();
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    Context outer = Context::create(Device::get(0));
    ContextGuard go(outer);
    {
        ContextGuard ga(a);
        REQUIRE(raw().cuCtxPushCurrent(b.native()) == CUDA_SUCCESS); // pushed and never popped
    }
    CHECK(rawCurrent() == outer.native());
    CHECK(errcOf([&] { a.synchronize(); }) == Errc::stack_mismatch); // the next fallible call reports it
}

TEST_CASE("verify() detects a foreign cuCtxSetCurrent and shows both views", "[stack]")
{
    cuctx::test::drainRawStack();
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    ContextStack::push(a);
    CHECK_NOTHROW(ContextStack::verify());
    CHECK_FALSE(ContextStack::drift());
    REQUIRE(raw().cuCtxSetCurrent(b.native()) == CUDA_SUCCESS);
    const auto drift = ContextStack::drift();
    REQUIRE(drift);
    CHECK(drift->expected == a.native());
    CHECK(drift->actual == b.native());
    try {
        ContextStack::verify();
        FAIL("verify did not throw");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == Errc::stack_mismatch);
        CHECK_THAT(e.what(), Catch::Contains("the driver's current context is context"));
        CHECK_THAT(e.what(), Catch::Contains("[push]"));
    }
    // A guard asked to verify refuses to build on the wrong belief.
    CHECK(errcOf([&] { ContextGuard g(a, cuctx::verifyCurrent); }) == Errc::stack_mismatch);
    REQUIRE(raw().cuCtxSetCurrent(a.native()) == CUDA_SUCCESS); // put it back
    CHECK(ContextStack::pop() == a);
    CHECK(ContextStack::depth() == 0);
}

TEST_CASE("ContextStack: LIFO pushes, duplicate pushes, pop on an empty stack", "[stack]")
{
    cuctx::test::drainRawStack();
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    CHECK(errcOf([] { ContextStack::pop(); }) == Errc::invalid_state);
    ContextStack::push(a);
    ContextStack::push(b);
    ContextStack::push(b); // a duplicate, as the driver allows
    CHECK(ContextStack::depth() == 3);
    CHECK(ContextStack::current() == b.native());
    const auto snap = ContextStack::snapshot();
    REQUIRE(snap.size() == 3);
    CHECK(snap[0].handle == a.native());
    CHECK(snap[2].kind == "push");
    CHECK(ContextStack::pop() == b);
    CHECK(rawCurrent() == b.native());
    CHECK(ContextStack::pop() == b);
    CHECK(ContextStack::pop() == a);
    CHECK(rawCurrent() == nullptr);
    CHECK(errcOf([] { ContextStack::pop(); }) == Errc::invalid_state);
}

TEST_CASE("a pushed context stays alive while pushed, even with no other handle", "[stack]")
{
    cuctx::test::drainRawStack();
    const long before = live();
    ContextStack::push(Context::create(Device::get(0)));
    CHECK(live() == before + 1);
    CHECK(raw().cuCtxSynchronize() == CUDA_SUCCESS);
    ContextStack::pop();
    CHECK(live() == before);
}

TEST_CASE("a switching guard makes only the driver's push and pop, whatever the pattern of switching", "[guard]")
{
    // A guard's entry is the context in the thread's record, whatever the context: every pattern below
    // runs the inline path, exactly one push and one pop per guard, no cuCtxGetCurrent, no search.
    cuctx::test::drainRawStack();
    std::vector<Context> made;
    made.reserve(8);
    for (int i = 0; i < 8; ++i)
        made.push_back(Context::create(Device::get(0)));
    const Context primary = Context::primary(Device::get(0));
    const auto cycle = [](std::vector<const Context*> contexts) {
        std::vector<const Context*> s;
        s.reserve(64);
        for (int i = 0; i < 64; ++i)
            s.push_back(contexts[static_cast<std::size_t>(i) % contexts.size()]);
        return s;
    };
    std::vector<const Context*> random;
    unsigned seed = 12345;
    for (int i = 0; i < 64; ++i) {
        seed = seed * 1103515245u + 12345u;
        random.push_back(&made[(seed >> 16) % made.size()]);
    }
    const std::vector<std::pair<const char*, std::vector<const Context*>>> patterns = {
        {"same", cycle({&made[0]})},
        {"alternating", cycle({&made[0], &made[1]})},
        {"round-robin over four", cycle({&made[0], &made[1], &made[2], &made[3]})},
        {"random over eight", random},
        {"primary and created mixed", cycle({&primary, &made[0], &primary, &made[1]})},
    };
    for (const auto& [name, sequence] : patterns) {
        INFO(name);
        for (const Context* c : sequence) {
            ContextGuard first(*c); // the thread's first guard registers it
        }
        const long calls = cuctx::test::driverCalls();
        for (const Context* c : sequence) {
            ContextGuard g(*c);
            CHECK(g.switched());
            CHECK(ContextStack::depth() == 1);
        }
        if (cuctx::test::kFakeDriver)
            CHECK(cuctx::test::driverCalls() - calls == 2 * static_cast<long>(sequence.size()));
        CHECK(rawCurrent() == nullptr);
    }
    // Nested three deep: each guard's entry is below the next, each made inline too.
    for (int i = 0; i < 3; ++i) {
        ContextGuard first(made[static_cast<std::size_t>(i)]);
    }
    const long calls = cuctx::test::driverCalls();
    for (int i = 0; i < 20; ++i) {
        ContextGuard a(made[0]);
        ContextGuard b(made[1]);
        ContextGuard c(made[2]);
        CHECK(ContextStack::depth() == 3);
    }
    if (cuctx::test::kFakeDriver)
        CHECK(cuctx::test::driverCalls() - calls == 20L * 6);
    CHECK(rawCurrent() == nullptr);
}

TEST_CASE("a thread enters up to 31 contexts at once; one more is a clear error that changes nothing",
          "[guard][registry]")
{
    cuctx::test::drainRawStack();
    const long before = live();
    constexpr auto most = static_cast<std::size_t>(cuctx::detail::kRecordEntries - 1);
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    const std::vector<long> self{static_cast<long>(gettid())};
    {
        std::vector<std::unique_ptr<ContextGuard>> nest;
        for (std::size_t i = 0; i < most; ++i) // a b a b ...: each one switches
            nest.push_back(std::make_unique<ContextGuard>(i % 2 == 0 ? a : b));
        CHECK(ContextStack::depth() == most);
        CHECK(a.threadsUsing() == self);
        CHECK(b.threadsUsing() == self);
        const Context& next = most % 2 == 0 ? a : b;
        const CUcontext top = rawCurrent();
        try {
            ContextGuard one(next);
            FAIL("a guard beyond the record's capacity was made");
        } catch (const cuctx::Error& e) {
            CHECK(e.code() == Errc::invalid_state);
            CHECK(std::string(e.what()).find("31 contexts entered") != std::string::npos);
        }
        CHECK_THROWS_AS(ContextStack::push(next), cuctx::Error);
        CHECK(ContextStack::depth() == most); // nothing changed
        CHECK(rawCurrent() == top);
        // The end slot, which sends the inline guard out of line on a full record, stays null.
        CHECK(cuctx::detail::t_record.entries[cuctx::detail::kRecordEntries].load() == nullptr);
        {
            ContextGuard elided(most % 2 == 0 ? b : a); // the context on top: no entry needed
            CHECK_FALSE(elided.switched());
        }
        while (!nest.empty())
            nest.pop_back();
    }
    CHECK(ContextStack::depth() == 0);
    CHECK(rawCurrent() == nullptr);
    CHECK(a.threadsUsing().empty());
    // A context dropped while a guard has it entered goes when that guard ends.
    {
        Context last = b;
        b = Context();
        ContextGuard g(last);
        last = Context();
        CHECK(live() == before + 2); // still used here
    }
    CHECK(live() == before + 1);
    a = Context();
    CHECK(live() == before);
    CHECK(rawCurrent() == nullptr);
}

TEST_CASE("an adopted context makes every guard on it free; release restores the stack", "[adopt]")
{
    cuctx::test::drainRawStack();
    Context shared = Context::create(Device::get(0));
    ContextStack::adopt(shared);
    ContextStack::adopt(shared); // again: nothing happens
    CHECK(ContextStack::adopted() == shared);
    CHECK(ContextStack::depth() == 1);
    const long calls = cuctx::test::driverCalls();
    for (int task = 0; task < 100; ++task) {
        ContextGuard g(shared);
        CHECK_FALSE(g.switched());
    }
    if (cuctx::test::kFakeDriver)
        CHECK(cuctx::test::driverCalls() == calls);
    Context other = Context::create(Device::get(0));
    CHECK(errcOf([&] { ContextStack::adopt(other); }) == Errc::invalid_state);
    ContextStack::release();
    CHECK(rawCurrent() == nullptr);
    CHECK_FALSE(ContextStack::adopted());
    CHECK(errcOf([] { ContextStack::release(); }) == Errc::invalid_state);
}

TEST_CASE("ContextBinding adopts for a scope and nests with the same context", "[adopt]")
{
    cuctx::test::drainRawStack();
    Context shared = Context::create(Device::get(0));
    {
        cuctx::ContextBinding binding(shared);
        CHECK(rawCurrent() == shared.native());
        {
            cuctx::ContextBinding inner(shared);
            ContextGuard g(shared);
            CHECK_FALSE(g.switched());
        }
        CHECK(ContextStack::adopted() == shared);
    }
    CHECK(rawCurrent() == nullptr);
    CHECK(ContextStack::depth() == 0);
}

TEST_CASE("dropping the last handle while another thread uses the context defers its destruction", "[registry]")
{
    cuctx::test::drainRawStack();
    const long before = live();
    Context a = Context::create(Device::get(0));
    Event entered, dropped, checked;
    CUresult workAfterDrop = CUDA_ERROR_UNKNOWN;
    long liveWhileUsed = 0;
    std::thread user([&] {
        {
            ContextGuard g(a);
            entered.set();
            dropped.wait();
            workAfterDrop = raw().cuCtxSynchronize(); // no use after destroy: it still exists
            liveWhileUsed = live();
        }
        checked.set();
    });
    entered.wait();
    const auto users = a.threadsUsing();
    CHECK(users.size() == 1);
    a.reset(); // the last handle
    dropped.set();
    checked.wait();
    user.join();
    CHECK(workAfterDrop == CUDA_SUCCESS);
    CHECK(liveWhileUsed == before + 1);
    CHECK(live() == before); // destroyed when the guard ended, on the user thread
}

TEST_CASE("a thread that exits while it has a context adopted releases it", "[registry]")
{
    const long before = live();
    Event adopted;
    std::thread worker([&] {
        ContextStack::adopt(Context::create(Device::get(0))); // the adoption holds the only handle
        adopted.set();
    });
    adopted.wait();
    worker.join();
    CHECK(live() == before);
}

TEST_CASE("primary contexts are shared per device and their retains balance", "[primary]")
{
    cuctx::test::drainRawStack();
    const Device dev = Device::get(0);
    const bool activeBefore = dev.primaryContextState().active;
    {
        Context p1 = Context::primary(dev);
        Context p2 = Context::primary(dev);
        CHECK(p1 == p2);
        CHECK(p1.isPrimary());
        CHECK(rawCurrent() == nullptr); // retaining does not push
        CHECK(dev.primaryContextState().active);
        ContextGuard g(p1);
        CHECK(rawCurrent() == p1.native());
    }
    CHECK(dev.primaryContextState().active == activeBefore); // released exactly once
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_primary_refcount(0) == 0);
#endif
}

TEST_CASE("a guard keeps a primary context alive after its handles are gone", "[primary][registry]")
{
    cuctx::test::drainRawStack();
    const Device dev = Device::get(0);
    const bool activeBefore = dev.primaryContextState().active;
    Context p = Context::primary(dev);
    {
        ContextGuard g(p);
        p.reset();
        CHECK(dev.primaryContextState().active);
        CHECK(raw().cuCtxSynchronize() == CUDA_SUCCESS);
    }
    CHECK(dev.primaryContextState().active == activeBefore);
}

TEST_CASE("threads that drop their handles inside guards race the destruction: it happens once, after the last use",
          "[registry]")
{
    const long before = live();
    constexpr int kThreads = 8;
    std::atomic<int> failures{0};
    {
        Context shared = Context::create(Device::get(0));
        std::vector<std::thread> threads;
        Event go;
        threads.reserve(kThreads);
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t, mine = shared]() mutable {
                go.wait();
                for (int i = 0; i < 300; ++i) {
                    ContextGuard g(mine);
                    if (raw().cuCtxSynchronize() != CUDA_SUCCESS) // would be 709 after a destroy
                        failures.fetch_add(1);
                    if (i == 100 + 20 * t) {
                        mine.reset(); // the guard lives on without a handle
                        if (raw().cuCtxSynchronize() != CUDA_SUCCESS)
                            failures.fetch_add(1);
                        break;
                    }
                }
            });
        }
        shared.reset(); // from now on only the workers' handles and uses keep it
        go.set();
        for (auto& th : threads)
            th.join();
    }
    CHECK(failures.load() == 0);
    CHECK(live() == before);
}

TEST_CASE("the destruction race holds with each asymmetric fence this machine offers", "[registry]")
{
    using cuctx::detail::FenceMode;
    const FenceMode original = cuctx::detail::g_fenceMode.load();
#ifndef CUCTX_TSAN
    for (FenceMode mode : {FenceMode::mprotect, FenceMode::none, original}) {
        INFO("fence mode " << static_cast<int>(mode));
        cuctx::detail::setFenceMode(mode);
        const long before = live();
        Context shared = Context::create(Device::get(0));
        std::vector<std::thread> threads;
        std::atomic<int> failures{0};
        threads.reserve(4);
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&failures, mine = shared]() mutable {
                for (int i = 0; i < 200; ++i) {
                    ContextGuard g(mine);
                    if (raw().cuCtxSynchronize() != CUDA_SUCCESS)
                        failures.fetch_add(1);
                    if (i == 150) {
                        mine.reset(); // this guard ends without a handle
                        break;
                    }
                }
            });
        shared.reset();
        for (auto& th : threads)
            th.join();
        cuctx::detail::heavyFence(); // and once more on its own
        CHECK(failures.load() == 0);
        CHECK(live() == before);
    }
#endif
    cuctx::detail::setFenceMode(original);
}

TEST_CASE("a guard that ends under a push made inside it leaves the driver alone and records the misuse", "[guard]")
{
    cuctx::test::drainRawStack();
    const long before = live();
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    {
        ContextGuard ga(a);
        ContextStack::push(b); // never popped inside the guard's scope
    }
    // The guard's entry stays below b's, now a push: cuctx's record and the driver's stack agree.
    REQUIRE(ContextStack::depth() == 2);
    CHECK(ContextStack::snapshot()[0].handle == a.native());
    CHECK(ContextStack::snapshot()[0].kind == "push");
    CHECK(ContextStack::snapshot()[1].handle == b.native());
    CHECK(rawCurrent() == b.native()); // nothing was popped from under it
    CHECK(errcOf([&] { a.checkRecordedError(); }) == Errc::stack_mismatch);
    CHECK(ContextStack::pop() == b);
    CHECK(rawCurrent() == a.native()); // the guard's own push is still on the driver's stack, as reported
    const CUcontext aHandle = a.native();
    a = Context();
    CHECK(live() == before + 2); // the push keeps it
    Context popped = ContextStack::pop();
    CHECK(popped.native() == aHandle);
    CHECK(rawCurrent() == nullptr);
    CHECK(ContextStack::depth() == 0);
    popped = Context();
    CHECK(live() == before + 1);
}

TEST_CASE("switching again to the last context takes the inline path, which still checks what it pops", "[guard]")
{
    cuctx::test::drainRawStack();
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    for (int i = 0; i < 3; ++i) { // the second and third entries take the inline switching path
        ContextGuard g(a);
        CHECK(g.switched());
        CHECK(rawCurrent() == a.native());
    }
    {
        ContextGuard g(a);
        REQUIRE(raw().cuCtxSetCurrent(b.native()) == CUDA_SUCCESS);
    }
    CHECK(rawCurrent() == nullptr);
    CHECK(errcOf([&] { a.checkRecordedError(); }) == Errc::stack_mismatch);
}

TEST_CASE("a new context at a destroyed one's address is never mistaken for it", "[guard][registry]")
{
    cuctx::test::drainRawStack();
    const std::vector<long> self{static_cast<long>(gettid())};
    for (int i = 0; i < 20; ++i) {
        Context c = Context::create(Device::get(0));
        {
            ContextGuard g(c);
            CHECK(rawCurrent() == c.native());
            CHECK(c.threadsUsing() == self);
        }
        {
            ContextGuard again(c); // the inline switching path
            CHECK(rawCurrent() == c.native());
            CHECK(c.threadsUsing() == self); // c's own entry, not a dead context's
        }
    } // each c is destroyed here; the next may reuse its state's address
    CHECK(rawCurrent() == nullptr);
}

TEST_CASE("a context destroyed on one thread leaves no stale fast path on another that used it", "[guard][registry]")
{
    // The worker switches to a context (an entry in the worker's record), the main thread destroys it and
    // makes new ones, likely at the same address; the worker's next guards must enter the new context,
    // where a destroyer looks, and no entry in use may name the dead one.
    std::optional<Context> current;
    Event ready[20], done[20];
    std::vector<std::vector<long>> seen(20);
    int staleEntries = 0;
    long workerTid = 0;
    std::thread worker([&] {
        cuctx::test::drainRawStack();
        workerTid = static_cast<long>(gettid());
        const cuctx::detail::ContextState* previous = nullptr;
        for (int i = 0; i < 20; ++i) {
            ready[i].wait();
            // Nothing in this thread's record in use names the old context (the allocator may or may not
            // have given the new context the old address: this checks the record itself).
            for (std::size_t k = 1; k <= cuctx::ContextStack::depth(); ++k)
                if (previous != nullptr && cuctx::detail::t_record.entries[k].load() == previous)
                    ++staleEntries;
            previous = cuctx::detail::ContextAccess::state(*current);
            {
                ContextGuard g(*current);
                ContextGuard nested(*current); // elided
            }
            {
                ContextGuard again(*current); // the inline switching path
                seen[static_cast<std::size_t>(i)] = current->threadsUsing();
            }
            done[i].set();
        }
    });
    for (int i = 0; i < 20; ++i) {
        current.emplace(Context::create(Device::get(0))); // the previous one is destroyed here
        ready[i].set();
        done[i].wait();
    }
    worker.join();
    current.reset();
    CHECK(staleEntries == 0);
    for (const auto& threads : seen)
        CHECK(threads == std::vector<long>{workerTid});
}

TEST_CASE("the registry sees a thread's use through every kind of guard entry", "[registry]")
{
    cuctx::test::drainRawStack();
    Context a = Context::create(Device::get(0));
    const long self = static_cast<long>(gettid());
    CHECK(a.threadsUsing().empty());
    {
        ContextGuard first(a); // the slow switching path
        CHECK(a.threadsUsing() == std::vector<long>{self});
        ContextGuard elided(a);
        CHECK(a.threadsUsing() == std::vector<long>{self});
    }
    CHECK(a.threadsUsing().empty());
    {
        ContextGuard again(a); // the inline switching path
        CHECK(again.switched());
        CHECK(a.threadsUsing() == std::vector<long>{self});
    }
    CHECK(a.threadsUsing().empty());
}

TEST_CASE("a push above the adoption leaves it adopted: pop, then release", "[adopt][stack]")
{
    cuctx::test::drainRawStack();
    Context home = Context::create(Device::get(0));
    Context other = Context::create(Device::get(0));
    ContextStack::adopt(home);
    ContextStack::push(other); // once cleared the adoption: release() then said none was adopted
    CHECK(ContextStack::adopted() == home);
    CHECK(ContextStack::snapshot()[0].kind == "adopted");
    CHECK(errcOf([] { ContextStack::release(); }) == Errc::invalid_state); // the push is on top
    CHECK(ContextStack::pop() == other);
    CHECK(ContextStack::adopted() == home);
    CHECK(errcOf([] { (void)ContextStack::pop(); }) == Errc::invalid_state); // the adoption is not pop()'s
    ContextStack::release();
    CHECK(ContextStack::depth() == 0);
    CHECK(rawCurrent() == nullptr);
}

TEST_CASE("a ContextBinding on an empty handle is refused like adopt()", "[adopt]")
{
    cuctx::test::drainRawStack();
    CHECK(errcOf([] { cuctx::ContextBinding binding{Context()}; }) == Errc::invalid_argument);
    CHECK(ContextStack::depth() == 0);
    CHECK_FALSE(ContextStack::adopted());
}

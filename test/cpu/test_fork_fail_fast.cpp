// SPDX-License-Identifier: MIT
// A child forked after CUDA was initialised must fail fast, before any driver call, with an error
// that says so (driver-facts.md: the driver answers such a child with CUDA_ERROR_NOT_INITIALIZED).

#include <catch2/catch.hpp>

#include "../shared/process_helpers.hpp"
#include "fake_env.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/device.hpp"
#include "cuctx/driver.hpp"
#include "cuctx/error.hpp"

#include <unistd.h>

#include <cstring>

TEST_CASE("a child forked after initialisation gets forked_after_init, before any driver call", "[fork]")
{
    cuctx::test::FakeEnvironment env;
    REQUIRE(cuctx::Device::count() == 2); // the parent has initialised CUDA
    const int parent = static_cast<int>(getpid());
    const int status = cuctx::test::inChild([parent] {
        const long callsBefore = cuctx_fake_total_calls();
        try {
            (void)cuctx::Device::count();
            return 1;
        } catch (const cuctx::Error& e) {
            if (e.condition() != cuctx::Errc::forked_after_init)
                return 2;
            const std::string m = e.what();
            if (m.find("forked after CUDA was initialized in process " + std::to_string(parent)) == std::string::npos)
                return 3;
            if (m.find("exec") == std::string::npos)
                return 4;
        }
        if (cuctx_fake_total_calls() != callsBefore)
            return 5; // cuctx called the driver
        const auto st = cuctx::Driver::status();
        if (st.loaded || st.condition != cuctx::Errc::forked_after_init)
            return 6;
        return 0;
    });
    CHECK(status == 0);
    // The parent is untouched.
    CHECK(cuctx::Device::count() == 2);
}

TEST_CASE("in a child forked after initialisation, ending what the parent entered undoes cuctx's record alone",
          "[fork]")
{
    cuctx::test::FakeEnvironment env;
    const cuctx::Context a = cuctx::Context::create(cuctx::Device::get(0));
    const cuctx::Context b = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::ContextStack::push(a);
    const int status = cuctx::test::inChild([&] {
        const long callsBefore = cuctx_fake_total_calls();
        try {
            if (cuctx::ContextStack::pop() != a)
                return 1;
        } catch (...) {
            return 2; // the docs (contexts.md, fork()) promise no error
        }
        if (cuctx::ContextStack::depth() != 0)
            return 3;
        try {
            cuctx::ContextGuard guard(b); // something new: refused
            return 4;
        } catch (const cuctx::Error& e) {
            if (e.condition() != cuctx::Errc::forked_after_init)
                return 5;
        }
        return cuctx_fake_total_calls() == callsBefore ? 0 : 6;
    });
    CHECK(status == 0);
    CHECK(cuctx::ContextStack::pop() == a); // the parent's push is its own
}

TEST_CASE("a child of a forked child can still end what the first parent entered", "[fork]")
{
    cuctx::test::FakeEnvironment env;
    const cuctx::Context a = cuctx::Context::create(cuctx::Device::get(0));
    const cuctx::Context b = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::ContextStack::push(a);
    cuctx::ContextStack::push(b);
    const int status = cuctx::test::inChild([&] {
        if (cuctx::ContextStack::depth() != 2)
            return 10;
        return cuctx::test::inChild([&] {
            const long callsBefore = cuctx_fake_total_calls();
            if (cuctx::ContextStack::depth() != 2 || cuctx::ContextStack::snapshot().size() != 2)
                return 1;
            try {
                if (cuctx::ContextStack::pop() != b || cuctx::ContextStack::pop() != a)
                    return 2;
            } catch (...) {
                return 3;
            }
            if (cuctx::ContextStack::depth() != 0)
                return 4;
            return cuctx_fake_total_calls() == callsBefore ? 0 : 5;
        });
    });
    CHECK(status == 0);
    CHECK(cuctx::ContextStack::pop() == b);
    CHECK(cuctx::ContextStack::pop() == a);
}

namespace {

cuctx::detail::PushFn g_driverPush = nullptr;
pid_t g_pushChild = -1;

// Forks first, as a signal handler that forks between the inline guard's new entry and its push
// would: the parent goes on to the driver, the child returns what its push (the diversion that the
// atfork handler set) returns there.
CUresult CUDAAPI forkingPush(CUcontext context)
{
    const pid_t pid = fork();
    if (pid == 0)
        return cuctx::detail::g_push.load()(context);
    g_pushChild = pid;
    return g_driverPush(context);
}

cuctx::detail::PopFn g_driverPop = nullptr;
pid_t g_popChild = -1;

// Forks first, then calls the driver's pop in both processes: in the child, the driver refuses it.
CUresult CUDAAPI forkingPop(CUcontext* popped)
{
    const pid_t pid = fork();
    if (pid != 0)
        g_popChild = pid;
    return g_driverPop(popped);
}

} // namespace

TEST_CASE("a fork between the inline guard's entry and its push leaves the child's record as it was", "[fork]")
{
    cuctx::test::FakeEnvironment env;
    const cuctx::Context a = cuctx::Context::create(cuctx::Device::get(0));
    const cuctx::Context b = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::ContextStack::push(a);
    const pid_t parent = getpid();
    g_driverPush = cuctx::detail::g_push.load();
    REQUIRE(g_driverPush != nullptr);
    cuctx::detail::g_push.store(&forkingPush);
    try {
        const cuctx::ContextGuard guard(b); // inline: the thread is registered and b is not on top
        if (getpid() != parent)
            _exit(10); // the child must not enter b
    } catch (const cuctx::Error& e) {
        if (getpid() != parent) {
            int code = e.condition() == cuctx::Errc::forked_after_init ? 0 : 11;
            try {
                // The guard's entry is taken back: what the parent entered before is all that is left.
                if (code == 0 && cuctx::ContextStack::depth() != 1)
                    code = 12;
                if (code == 0 && cuctx::ContextStack::pop() != a)
                    code = 13;
                if (code == 0 && cuctx::ContextStack::depth() != 0)
                    code = 14;
            } catch (...) {
                code = 15;
            }
            _exit(code);
        }
        throw;
    }
    cuctx::detail::g_push.store(g_driverPush);
    CHECK(cuctx::test::exitStatusOf(g_pushChild) == 0);
    CHECK(cuctx::ContextStack::pop() == a);
}

TEST_CASE("a fork inside the inline guard's pop leaves the child's record as it was before the guard", "[fork]")
{
    cuctx::test::FakeEnvironment env;
    const cuctx::Context a = cuctx::Context::create(cuctx::Device::get(0));
    const cuctx::Context b = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::ContextStack::push(a);
    const pid_t parent = getpid();
    g_driverPop = cuctx::detail::g_pop.load();
    REQUIRE(g_driverPop != nullptr);
    {
        const cuctx::ContextGuard guard(b);
        REQUIRE(guard.switched());
        cuctx::detail::g_pop.store(&forkingPop);
    } // the driver's pop fails in the child: cuctx undoes its record alone
    if (getpid() != parent) {
        int code = 0;
        try {
            if (cuctx::ContextStack::depth() != 1)
                code = 1;
            else if (cuctx::ContextStack::pop() != a)
                code = 2;
        } catch (...) {
            code = 3;
        }
        _exit(code);
    }
    cuctx::detail::g_pop.store(g_driverPop);
    CHECK(cuctx::test::exitStatusOf(g_popChild) == 0);
    CHECK(cuctx::ContextStack::pop() == a);
}

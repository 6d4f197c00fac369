// SPDX-License-Identifier: MIT
// cuctx::testing, the harness backends use: failing the Nth call of a driver entry (through cuctx's
// own hooks, so it works on the real driver too), checking a stack is left alone, racing threads.

#include <catch2/catch.hpp>

#include "module_helpers.hpp"

#include "cuctx/cuctx.hpp"
#include "cuctx/testing.hpp"

#include <pthread.h>

#include <atomic>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

TEST_CASE("failNthCall makes the nth call of a driver entry fail, on the inline guard path too", "[harness]")
{
    cuctx::Context a = cuctx::Context::create(cuctx::Device::get(0));
    const std::string ptx = cuctx::test::readText(cuctx::test::testPtxPath());
    cuctx::testing::failNthCall("cuModuleLoadDataEx", 2, CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_NOTHROW(cuctx::Module::fromPtx(a, ptx)); // the first call goes through
    try {
        (void)cuctx::Module::fromPtx(a, ptx);
        FAIL("the second load was not failed");
    } catch (const cuctx::Error& e) {
        CHECK(e.result() == CUDA_ERROR_OUT_OF_MEMORY);
        CHECK(e.call() == "cuModuleLoadDataEx");
    }
    CHECK_NOTHROW(cuctx::Module::fromPtx(a, ptx)); // once only

    {
        cuctx::ContextGuard warm(a);
    } // the next switch to `a` takes the inline path
    cuctx::testing::failNthCall("cuCtxPushCurrent", 1, CUDA_ERROR_INVALID_CONTEXT);
    CHECK_THROWS_WITH(cuctx::ContextGuard(a), Catch::Contains("cuCtxPushCurrent"));
    CHECK(cuctx::ContextStack::depth() == 0);

    cuctx::testing::failNthCall("cuMemAlloc", 1, CUDA_ERROR_OUT_OF_MEMORY);
    cuctx::testing::clearInjectedFailures();
    CHECK_NOTHROW(cuctx::DeviceBuffer(a, 64));
    CHECK_THROWS_WITH(cuctx::testing::failNthCall("cuNotAThing", 1, CUDA_ERROR_UNKNOWN),
                      Catch::Contains("does not call"));
}

TEST_CASE("expectStackUnchanged passes balanced code and names what unbalanced code left", "[harness]")
{
    cuctx::Context a = cuctx::Context::create(cuctx::Device::get(0));
    CHECK_NOTHROW(cuctx::testing::expectStackUnchanged([&] { cuctx::ContextGuard g(a); }));
    try {
        cuctx::testing::expectStackUnchanged([&] { cuctx::ContextStack::push(a); });
        FAIL("a push without its pop passed");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == cuctx::Errc::invalid_state);
        CHECK(std::string(e.what()).find("push " + std::to_string(a.id())) != std::string::npos);
    }
    cuctx::ContextStack::pop();
}

TEST_CASE("runConcurrently releases every thread together and rethrows the first failure", "[harness]")
{
    std::atomic<int> arrived{0};
    std::atomic<int> maxSeen{0};
    cuctx::testing::runConcurrently(8, [&](unsigned) {
        const int now = ++arrived;
        int seen = maxSeen.load();
        while (now > seen && !maxSeen.compare_exchange_weak(seen, now)) {
        }
    });
    CHECK(arrived == 8);
    CHECK_THROWS_WITH(cuctx::testing::runConcurrently(4,
                                                      [](unsigned i) {
                                                          if (i == 3)
                                                              throw std::runtime_error("thread 3");
                                                      }),
                      "thread 3");
}

TEST_CASE("runConcurrently joins the started threads and throws when the system refuses one", "[harness]")
{
    std::atomic<int> ran{0};
    auto body = [&](unsigned) { ++ran; };
    // The 4th of 8 threads cannot be made: the 3 started wait for it at the barrier and must be
    // released and joined, not left to hang (or to std::terminate in a joinable thread's destructor).
    unsigned made = 0;
    auto refuseFourth = [&](auto&& run) {
        if (++made == 4)
            throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), "pthread_create");
        return std::jthread(std::forward<decltype(run)>(run));
    };
    try {
        cuctx::testing::detail::runConcurrentlyWith(refuseFourth, 8, body);
        FAIL("a refused thread went unreported");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == cuctx::Errc::invalid_state);
        CHECK_THAT(e.what(), Catch::Contains("thread 4 of 8") && Catch::Contains("3 started were joined"));
    }
    CHECK(ran == 0); // no thread ran `f` alone: all or none race

    // The same through std::thread itself: a default stack no mmap can give makes pthread_create fail.
    pthread_attr_t saved;
    REQUIRE(pthread_getattr_default_np(&saved) == 0);
    pthread_attr_t huge;
    pthread_attr_init(&huge);
    REQUIRE(pthread_attr_setstacksize(&huge, std::size_t{1} << 50) == 0);
    REQUIRE(pthread_setattr_default_np(&huge) == 0);
    bool refused = false;
    try {
        cuctx::testing::runConcurrently(4, body);
    } catch (const cuctx::Error& e) {
        refused = e.condition() == cuctx::Errc::invalid_state;
    } catch (...) {
    }
    pthread_setattr_default_np(&saved);
    pthread_attr_destroy(&huge);
    pthread_attr_destroy(&saved);
    CHECK(refused);
    CHECK(ran == 0);
    cuctx::testing::runConcurrently(4, body); // threads start again
    CHECK(ran == 4);
}

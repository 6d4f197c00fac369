// SPDX-License-Identifier: MIT
// cuctx::testing, the harness backends use: failing the Nth call of a driver entry (through cuctx's
// own hooks, so it works on the real driver too), checking a stack is left alone, racing threads.

#include <catch2/catch.hpp>

#include "module_helpers.hpp"

#include "cuctx/cuctx.hpp"
#include "cuctx/testing.hpp"

#include <atomic>
#include <stdexcept>

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

// SPDX-License-Identifier: MIT
// The driver's per-thread stack semantics (driver-facts.md), asserted on the raw entry points. The
// same file runs against the fake driver (CPU suite) and the real one (GPU suite): the fake's model is
// only trusted where these pass on the H200.

#include "driver_helpers.hpp"

#include "cuctx/device.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

using cuctx::test::raw;
using cuctx::test::rawCurrent;

using cuctx::test::rawCreate;

TEST_CASE("driver: cuCtxCreate pushes the new context; pops are LIFO; pop on empty is 201", "[conformance][stack]")
{
    cuctx::test::drainRawStack();
    CUcontext a = rawCreate();
    CHECK(rawCurrent() == a);
    CUcontext b = rawCreate();
    CHECK(rawCurrent() == b);
    CUcontext popped = nullptr;
    REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
    CHECK(popped == b);
    REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
    CHECK(popped == a);
    CHECK(rawCurrent() == nullptr);
    CHECK(raw().cuCtxPopCurrent(&popped) == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(raw().cuCtxDestroy(a) == CUDA_SUCCESS);
    CHECK(raw().cuCtxDestroy(b) == CUDA_SUCCESS);
}

TEST_CASE("driver: a duplicate push needs two pops; SetCurrent replaces the top; SetCurrent(NULL) pops",
          "[conformance][stack]")
{
    cuctx::test::drainRawStack();
    CUcontext a = rawCreate();
    CUcontext b = rawCreate();
    CUcontext popped = nullptr;
    REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
    REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);

    CHECK(raw().cuCtxSetCurrent(nullptr) == CUDA_SUCCESS); // empty stack: a no-op
    CHECK(rawCurrent() == nullptr);

    REQUIRE(raw().cuCtxPushCurrent(a) == CUDA_SUCCESS);
    REQUIRE(raw().cuCtxPushCurrent(a) == CUDA_SUCCESS);
    REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
    CHECK(rawCurrent() == a); // the duplicate is still there
    REQUIRE(raw().cuCtxSetCurrent(b) == CUDA_SUCCESS);
    CHECK(rawCurrent() == b); // replaced a, did not push
    REQUIRE(raw().cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
    CHECK(rawCurrent() == nullptr); // and that was the only entry
    CHECK(raw().cuCtxDestroy(a) == CUDA_SUCCESS);
    CHECK(raw().cuCtxDestroy(b) == CUDA_SUCCESS);
}

TEST_CASE("driver: a new thread starts with an empty stack; work there fails with 201", "[conformance][stack]")
{
    auto current = reinterpret_cast<CUcontext>(0x1);
    CUresult sync = CUDA_SUCCESS;
    std::thread([&] {
        (void)raw().cuCtxGetCurrent(&current);
        sync = raw().cuCtxSynchronize();
    }).join();
    CHECK(current == nullptr);
    CHECK(sync == CUDA_ERROR_INVALID_CONTEXT);
}

TEST_CASE("driver: primary retain does not push; cuCtxDestroy on it and a release without retain give 201",
          "[conformance][stack]")
{
    cuctx::test::drainRawStack();
    const CUdevice dev = cuctx::Device::get(0).native();
    unsigned flags = 0;
    int activeBefore = 0;
    REQUIRE(raw().cuDevicePrimaryCtxGetState(dev, &flags, &activeBefore) == CUDA_SUCCESS);
    CUcontext primary = nullptr;
    REQUIRE(raw().cuDevicePrimaryCtxRetain(&primary, dev) == CUDA_SUCCESS);
    CHECK(rawCurrent() == nullptr);
    int active = 0;
    REQUIRE(raw().cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS);
    CHECK(active == 1);
    CHECK(raw().cuCtxDestroy(primary) == CUDA_ERROR_INVALID_CONTEXT);
    REQUIRE(raw().cuDevicePrimaryCtxRelease(dev) == CUDA_SUCCESS);
    if (activeBefore == 0) {
        REQUIRE(raw().cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS);
        CHECK(active == 0);
        CHECK(raw().cuDevicePrimaryCtxRelease(dev) == CUDA_ERROR_INVALID_CONTEXT);
    }
}

TEST_CASE("driver: a context destroyed while current on another thread stays current there, stale",
          "[conformance][stack]")
{
    cuctx::test::drainRawStack();
    CUcontext victim = rawCreate();
    CUcontext popped = nullptr;
    REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);

    std::mutex m;
    std::condition_variable cv;
    int phase = 0; // 1: the thread has it current; 2: main destroyed it
    CUcontext seen = nullptr;
    CUresult getDevice = CUDA_ERROR_UNKNOWN, work = CUDA_SUCCESS, pop = CUDA_ERROR_UNKNOWN;
    std::thread holder([&] {
        (void)raw().cuCtxPushCurrent(victim);
        {
            std::lock_guard lock(m);
            phase = 1;
        }
        cv.notify_all();
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return phase == 2; });
        (void)raw().cuCtxGetCurrent(&seen);
        CUdevice d = 0;
        getDevice = raw().cuCtxGetDevice(&d);
        work = raw().cuCtxSynchronize();
        CUcontext p = nullptr;
        pop = raw().cuCtxPopCurrent(&p);
    });
    {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return phase == 1; });
    }
    CHECK(raw().cuCtxDestroy(victim) == CUDA_SUCCESS); // succeeds although current elsewhere
    {
        std::lock_guard lock(m);
        phase = 2;
    }
    cv.notify_all();
    holder.join();
    CHECK(seen == victim);
    CHECK(getDevice == CUDA_SUCCESS);
    CHECK(work == CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK(pop == CUDA_SUCCESS);
    // A second destroy fails: 709 from the plain driver, 201 under compute-sanitizer, which tracks the
    // handle itself. Never success (the handle is stale, the very thing cuctx must never touch).
    const CUresult again = raw().cuCtxDestroy(victim);
    CHECK((again == CUDA_ERROR_CONTEXT_IS_DESTROYED || again == CUDA_ERROR_INVALID_CONTEXT));
}

// SPDX-License-Identifier: MIT
// Sticky faults: a kernel fault poisons its device for the process, cuctx fails fast naming the
// first fault, and the launch journal names the suspects. Runs in both suites; the tests that need
// a fault run on the fake driver only (CUCTX_TEST_FAKE_DRIVER): on the real driver one fault would
// poison the device for every later test of the GPU suite's process, so the real fault is provoked
// in a supervised worker process instead (docs/faults.md, "Isolated workers").

#include "driver_helpers.hpp"
#include "module_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/device.hpp"
#include "cuctx/error.hpp"

#include <string>

using cuctx::Context;
using cuctx::Device;
using cuctx::Errc;
using cuctx::test::raw;

namespace {

[[maybe_unused]] bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

} // namespace

#ifdef CUCTX_TEST_FAKE_DRIVER

TEST_CASE("the fake driver: a sticky fault poisons every context of its device, as measured", "[faults]")
{
    cuctx_fake_reset();
    CUcontext faulted = nullptr, bystander = nullptr, other = nullptr;
    REQUIRE(raw().cuCtxCreate_v4(&faulted, nullptr, 0, 0) == CUDA_SUCCESS);
    REQUIRE(raw().cuCtxCreate_v4(&bystander, nullptr, 0, 0) == CUDA_SUCCESS);
    REQUIRE(raw().cuCtxCreate_v4(&other, nullptr, 0, 1) == CUDA_SUCCESS); // device 1
    CUcontext popped = nullptr;
    for (int i = 0; i < 3; ++i)
        REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);

    REQUIRE(raw().cuCtxPushCurrent(faulted) == CUDA_SUCCESS);
    cuctx_fake_fail("cuCtxSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS, 1);
    CHECK(raw().cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(cuctx_fake_device_poisoned(0) == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(cuctx_fake_device_poisoned(1) == 0);
    CUdeviceptr p = 0;
    CHECK(raw().cuMemAlloc(&p, 64) == CUDA_ERROR_ILLEGAL_ADDRESS); // the faulted context
    REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);      // the stack still works

    REQUIRE(raw().cuCtxPushCurrent(bystander) == CUDA_SUCCESS); // another context of the device
    CHECK(raw().cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS);
    REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);

    CUcontext fresh = nullptr;
    CHECK(raw().cuCtxCreate_v4(&fresh, nullptr, 0, 0) == CUDA_ERROR_ILLEGAL_ADDRESS);

    REQUIRE(raw().cuCtxPushCurrent(other) == CUDA_SUCCESS); // device 1 is not affected
    CHECK(raw().cuCtxSynchronize() == CUDA_SUCCESS);
    REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);

    CHECK(raw().cuCtxDestroy(faulted) == CUDA_SUCCESS);
    CHECK(raw().cuCtxDestroy(bystander) == CUDA_SUCCESS);
    CHECK(raw().cuCtxDestroy(other) == CUDA_SUCCESS);
    cuctx_fake_reset(); // a reset forgets the fault (a real process cannot)
    CHECK(cuctx_fake_device_poisoned(0) == 0);
}

#endif // CUCTX_TEST_FAKE_DRIVER

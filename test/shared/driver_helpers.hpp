// SPDX-License-Identifier: MIT
#pragma once

// Helpers for the tests that run in both suites: against the fake driver (CPU suite, where
// CUCTX_TEST_FAKE_DRIVER is defined) and against the real driver (GPU suite).

#include <catch2/catch.hpp>

#include "context/context_state.hpp"
#include "cuctx/device.hpp"
#include "driver/driver_state.hpp"

#ifdef CUCTX_TEST_FAKE_DRIVER
#include "fake_driver.hpp"
#endif

#include <cuda.h>

namespace cuctx::test {

inline const detail::DriverApi& raw()
{
    return detail::api();
}

/// What the driver says is current on this thread.
inline CUcontext rawCurrent()
{
    CUcontext c = nullptr;
    REQUIRE(raw().cuCtxGetCurrent(&c) == CUDA_SUCCESS);
    return c;
}

/// A context created with the raw driver on device 0, as other code would: the driver leaves it
/// pushed on this thread.
inline CUcontext rawCreate()
{
    CUcontext c = nullptr;
    const auto& d = raw();
    const CUdevice device = Device::get(0).native();
    const CUresult r =
        d.cuCtxCreate_v4 != nullptr ? d.cuCtxCreate_v4(&c, nullptr, 0, device) : d.cuCtxCreate_v2(&c, 0, device);
    REQUIRE(r == CUDA_SUCCESS);
    return c;
}

/// Pops the driver's stack until it is empty (test set-up on a thread that may have leftovers).
inline void drainRawStack()
{
    CUcontext c = nullptr;
    for (int i = 0; i < 64 && raw().cuCtxGetCurrent(&c) == CUDA_SUCCESS && c != nullptr; ++i)
        (void)raw().cuCtxPopCurrent(&c);
}

/// How many driver calls have been made (fake driver only; -1 on the real driver, where the tests
/// that need it assert something weaker).
inline long driverCalls()
{
#ifdef CUCTX_TEST_FAKE_DRIVER
    return cuctx_fake_total_calls();
#else
    return -1;
#endif
}

inline constexpr bool kFakeDriver =
#ifdef CUCTX_TEST_FAKE_DRIVER
    true;
#else
    false;
#endif

} // namespace cuctx::test

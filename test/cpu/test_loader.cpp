// SPDX-License-Identifier: MIT
// Every way loading the driver can fail, each through cuctx's real loader.

#include <catch2/catch.hpp>

#include "../conformance/proc_address_conformance.hpp"
#include "fake_env.hpp"

#include "cuctx/driver.hpp"
#include "cuctx/error.hpp"
#include "driver/loader.hpp"

#include <string>

using cuctx::Errc;
using cuctx::detail::loadDriver;

TEST_CASE("a path with no library: driver_not_found, naming the path and what to do", "[loader]")
{
    const auto attempt = loadDriver("/nonexistent/cuctx/libcuda.so.1");
    REQUIRE_FALSE(attempt.driver);
    REQUIRE(attempt.error);
    CHECK(attempt.error->condition() == Errc::driver_not_found);
    CHECK(attempt.error->result() == 0);
    const std::string m = attempt.error->what();
    CHECK_THAT(m, Catch::Contains("/nonexistent/cuctx/libcuda.so.1"));
    CHECK_THAT(m, Catch::Contains("Install the NVIDIA driver"));
    CHECK_THAT(m, Catch::Contains("CUCTX_DRIVER_PATH"));
}

TEST_CASE("the CUDA toolkit's stub libcuda: stub_driver with CUDA_ERROR_STUB_LIBRARY", "[loader]")
{
    const auto attempt = loadDriver(CUCTX_STUB_DRIVER_PATH);
    REQUIRE_FALSE(attempt.driver);
    REQUIRE(attempt.error);
    CHECK(attempt.error->condition() == Errc::stub_driver);
    CHECK(attempt.error->result() == 34);
    CHECK(attempt.resolvedPath.find("stubs") != std::string::npos);
    CHECK_THAT(attempt.error->what(), Catch::Contains("CUDA_ERROR_STUB_LIBRARY"));
    CHECK_THAT(attempt.error->what(), Catch::Contains("LD_LIBRARY_PATH"));
}

TEST_CASE("a library that is no CUDA driver (no cuGetProcAddress_v2): driver_too_old", "[loader]")
{
    const auto attempt = loadDriver("libm.so.6");
    REQUIRE(attempt.error);
    CHECK(attempt.error->condition() == Errc::driver_too_old);
    CHECK_THAT(attempt.error->what(), Catch::Contains("cuGetProcAddress_v2"));
    CHECK_THAT(attempt.error->what(), Catch::Contains("12.0"));
}

TEST_CASE("a driver without devices: no_device, with the driver's version", "[loader]")
{
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_DEVICES", "0");
    const auto attempt = loadDriver(CUCTX_FAKE_DRIVER_PATH);
    REQUIRE(attempt.error);
    CHECK(attempt.error->condition() == Errc::no_device);
    CHECK(attempt.error->result() == 100);
    CHECK(attempt.driverVersion == 13000);
    CHECK_THAT(attempt.error->what(), Catch::Contains("CUDA 13.0"));
    CHECK_THAT(attempt.error->what(), Catch::Contains("CUDA_VISIBLE_DEVICES"));
}

TEST_CASE("a driver missing a required entry point: driver_too_old, naming it and its version", "[loader]")
{
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_HIDE", "cuCtxPushCurrent,cuDevicePrimaryCtxRetain");
    const auto attempt = loadDriver(CUCTX_FAKE_DRIVER_PATH);
    REQUIRE(attempt.error);
    CHECK(attempt.error->condition() == Errc::driver_too_old);
    CHECK_THAT(attempt.error->what(), Catch::Contains("cuCtxPushCurrent (CUDA 4.0)"));
    CHECK_THAT(attempt.error->what(), Catch::Contains("cuDevicePrimaryCtxRetain (CUDA 7.0)"));
}

TEST_CASE("an old driver loads, with its newer entry points left empty", "[loader]")
{
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_DRIVER_VERSION", "11080");
    const auto attempt = loadDriver(CUCTX_FAKE_DRIVER_PATH);
    REQUIRE(attempt.driver);
    CHECK(attempt.driver->version == 11080);
    CHECK(attempt.driver->api.cuCtxCreate_v2 != nullptr);
    CHECK(attempt.driver->api.cuCtxCreate_v4 == nullptr); // CUDA 12.5
    CHECK(attempt.driver->api.cuCtxGetId == nullptr);     // CUDA 12.0
}

TEST_CASE("a driver older than the required entry points: driver_too_old listing them", "[loader]")
{
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_DRIVER_VERSION", "6050");
    const auto attempt = loadDriver(CUCTX_FAKE_DRIVER_PATH);
    REQUIRE(attempt.error);
    CHECK(attempt.error->condition() == Errc::driver_too_old);
    CHECK_THAT(attempt.error->what(), Catch::Contains("CUDA 6.5"));
    CHECK_THAT(attempt.error->what(), Catch::Contains("cuDevicePrimaryCtxRetain (CUDA 7.0)"));
}

TEST_CASE("each entry is resolved at its pinned version: cuCtxCreate_v2 and _v4 are different ABIs", "[loader]")
{
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_DEVICES", "1");
    const auto attempt = loadDriver(CUCTX_FAKE_DRIVER_PATH);
    REQUIRE(attempt.driver);
    const auto& api = attempt.driver->api;
    CUcontext ctx = nullptr;
    REQUIRE(api.cuCtxCreate_v2(&ctx, 0, 0) == CUDA_SUCCESS);
    CHECK(cuctx_fake_calls("cuCtxCreate_v2") == 1);
    CHECK(cuctx_fake_calls("cuCtxCreate_v4") == 0);
    REQUIRE(api.cuCtxDestroy(ctx) == CUDA_SUCCESS);
    CHECK(cuctx_fake_live_contexts() == 0);
}

TEST_CASE("the fake driver answers cuGetProcAddress_v2 as the real driver does", "[loader][conformance]")
{
    cuctx::test::checkProcAddressConformance(CUCTX_FAKE_DRIVER_PATH);
}

TEST_CASE("the process-wide driver loads from the configured path", "[loader]")
{
    const auto st = cuctx::Driver::status();
    REQUIRE(st.loaded);
    CHECK(st.requestedPath == CUCTX_FAKE_DRIVER_PATH);
    CHECK(st.resolvedPath.find("libcuctx-fake-cuda") != std::string::npos);
    CHECK(cuctx::Driver::version() == 13000);
    CHECK(cuctx::Driver::available());
    CHECK(cuctx::Driver::headerVersion() >= 12000);
    // Once loaded, the driver cannot be swapped under running code.
    CHECK_NOTHROW(cuctx::Driver::setLibraryPath(CUCTX_FAKE_DRIVER_PATH));
    try {
        cuctx::Driver::setLibraryPath("/elsewhere/libcuda.so.1");
        FAIL("no throw");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == Errc::invalid_state);
        CHECK_THAT(e.what(), Catch::Contains("already loaded"));
    }
}

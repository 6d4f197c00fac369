// SPDX-License-Identifier: MIT
// Device enumeration and queries against the fake driver (two devices by default).

#include <catch2/catch.hpp>

#include "fake_env.hpp"

#include "cuctx/device.hpp"
#include "cuctx/error.hpp"
#include "driver/driver_state.hpp"

#include <regex>

using cuctx::Device;
using cuctx::Errc;

namespace {

CUcontext currentContext()
{
    CUcontext c = nullptr;
    REQUIRE(cuctx::detail::api().cuCtxGetCurrent(&c) == CUDA_SUCCESS);
    return c;
}

} // namespace

TEST_CASE("devices are enumerated in ordinal order with their identity", "[device]")
{
    cuctx::test::FakeEnvironment env;
    REQUIRE(Device::count() == 2);
    const auto all = Device::all();
    REQUIRE(all.size() == 2);
    CHECK(all[1].ordinal() == 1);
    CHECK(all[1].name() == "cuctx Fake GPU 1");
    CHECK(all[0].uuid() == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
    CHECK(std::regex_match(all[1].uuid(),
                           std::regex("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")));
    CHECK(all[1].pciBusId() == "0000:11:00.0");
    CHECK(all[0].computeCapability().major == 9);
    CHECK(all[0].totalMemory() == (80ull << 30));
    CHECK(Device::get(1) == all[1]);
}

TEST_CASE("properties gather the attributes a backend needs", "[device]")
{
    cuctx::test::FakeEnvironment env;
    const auto p = Device::get(0).properties();
    CHECK(p.name == "cuctx Fake GPU 0");
    CHECK(p.multiprocessors == 132);
    CHECK(p.maxThreadsPerBlock == 1024);
    CHECK(p.warpSize == 32);
    CHECK(p.memoryBusWidth == 5120);
    CHECK(p.l2CacheSize == (50 << 20));
    CHECK(p.unifiedAddressing);
    CHECK(p.computeModeName() == "default");
}

TEST_CASE("an ordinal out of range says how many devices there are", "[device]")
{
    cuctx::test::FakeEnvironment env;
    try {
        (void)Device::get(5);
        FAIL("no throw");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == Errc::invalid_argument);
        CHECK_THAT(e.what(), Catch::Contains("device ordinal 5 is out of range"));
        CHECK_THAT(e.what(), Catch::Contains("2 device(s)"));
        CHECK_THAT(e.what(), Catch::Contains("CUDA_VISIBLE_DEVICES"));
    }
    CHECK_THROWS_AS(Device::get(-1), cuctx::Error);
}

TEST_CASE("the primary context's state is read without retaining or creating it", "[device]")
{
    cuctx::test::FakeEnvironment env;
    const auto state = Device::get(0).primaryContextState();
    CHECK_FALSE(state.active);
    CHECK(cuctx_fake_calls("cuDevicePrimaryCtxRetain") == 0);
    CHECK(cuctx_fake_primary_refcount(0) == 0);
}

TEST_CASE("memoryInfo balances its primary-context retain and leaves the stack as it was", "[device]")
{
    cuctx::test::FakeEnvironment env;
    const auto info = Device::get(1).memoryInfo();
    CHECK(info.total == (80ull << 30));
    CHECK(info.free < info.total);
    CHECK(cuctx_fake_primary_refcount(1) == 0);
    CHECK_FALSE(Device::get(1).primaryContextState().active);
    CHECK(currentContext() == nullptr);
}

TEST_CASE("a failing memoryInfo reports the call and still releases and pops", "[device]")
{
    cuctx::test::FakeEnvironment env;
    cuctx_fake_fail("cuMemGetInfo", CUDA_ERROR_OUT_OF_MEMORY, 1);
    try {
        (void)Device::get(0).memoryInfo();
        FAIL("no throw");
    } catch (const cuctx::Error& e) {
        CHECK(e.result() == CUDA_ERROR_OUT_OF_MEMORY);
        CHECK(e.call() == "cuMemGetInfo");
        CHECK(e.object() == "device 0");
    }
    CHECK(cuctx_fake_primary_refcount(0) == 0);
    CHECK(currentContext() == nullptr);

    cuctx_fake_fail("cuCtxPushCurrent", CUDA_ERROR_INVALID_VALUE, 1);
    CHECK_THROWS_AS(Device::get(0).memoryInfo(), cuctx::Error);
    CHECK(cuctx_fake_primary_refcount(0) == 0);
    CHECK(currentContext() == nullptr);
}

TEST_CASE("a driver query that fails names the call and the device", "[device]")
{
    cuctx::test::FakeEnvironment env;
    cuctx_fake_fail("cuDeviceGetName", CUDA_ERROR_INVALID_DEVICE, 1);
    try {
        (void)Device::get(1).name();
        FAIL("no throw");
    } catch (const cuctx::Error& e) {
        CHECK(e.call() == "cuDeviceGetName");
        CHECK_THAT(e.what(),
                   Catch::Contains("cuDeviceGetName failed with CUDA_ERROR_INVALID_DEVICE (101) on device 1"));
    }
}

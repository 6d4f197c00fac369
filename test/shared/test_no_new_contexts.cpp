// SPDX-License-Identifier: MIT
// cuctx::testing::expectNoNewContexts on both drivers: code that touches no device passes, a
// deliberate primary-context retain, a context kept through cuctx and one created behind cuctx's
// back (seen by NVML) are each caught, naming the device.

#include "driver_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/device.hpp"
#include "cuctx/error.hpp"
#include "cuctx/testing.hpp"
#include "driver/nvml.hpp"
#include "report/gpu_processes.hpp"

#include <unistd.h>

#include <optional>
#include <string>

using cuctx::testing::expectNoNewContexts;

namespace {

std::string failureOf(const std::function<void()>& f)
{
    try {
        expectNoNewContexts(f);
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == cuctx::Errc::invalid_state);
        CHECK(e.call() == "cuctx::testing::expectNoNewContexts");
        return e.what();
    }
    return {};
}

// A device whose primary context is inactive now (the last one: earlier tests favour device 0).
std::optional<cuctx::Device> idleDevice()
{
    const auto all = cuctx::Device::all();
    for (auto it = all.rbegin(); it != all.rend(); ++it)
        if (!it->primaryContextState().active)
            return *it;
    return std::nullopt;
}

// Whether NVML lists this process on `device` (nullopt: NVML cannot say here).
std::optional<bool> nvmlListsSelf(const cuctx::Device& device)
{
    try {
        const auto& nvml = cuctx::detail::nvml("test");
        const auto h = cuctx::detail::nvmlHandlesOf(nvml, {device.uuid()})[0];
        if (h == nullptr)
            return std::nullopt;
        for (const auto& p : cuctx::detail::nvmlProcesses(nvml, h, false))
            if (p.pid == static_cast<unsigned>(getpid()))
                return true;
        return false;
    } catch (const cuctx::Error&) {
        return std::nullopt;
    }
}

} // namespace

TEST_CASE("expectNoNewContexts passes code that only asks about devices", "[testing][no-new-contexts]")
{
    int count = 0;
    expectNoNewContexts([&] {
        count = cuctx::Device::count();
        for (const auto& d : cuctx::Device::all())
            (void)d.name();
    });
    CHECK(count > 0);
}

TEST_CASE("expectNoNewContexts catches a deliberate primary-context retain", "[testing][no-new-contexts]")
{
    const auto device = idleDevice();
    if (!device) {
        WARN("every device's primary context is active already: nothing to catch");
        return;
    }
    CUcontext retained = nullptr;
    const std::string what = failureOf(
        [&] { REQUIRE(cuctx::test::raw().cuDevicePrimaryCtxRetain(&retained, device->native()) == CUDA_SUCCESS); });
    REQUIRE(retained != nullptr);
    CHECK(cuctx::test::raw().cuDevicePrimaryCtxRelease(device->native()) == CUDA_SUCCESS);
    CHECK_THAT(what,
               Catch::Contains("device " + std::to_string(device->ordinal()) + "'s primary context became active"));
    // Retained and released inside: nothing stays, nothing to report.
    expectNoNewContexts([&] {
        CUcontext c = nullptr;
        REQUIRE(cuctx::test::raw().cuDevicePrimaryCtxRetain(&c, device->native()) == CUDA_SUCCESS);
        REQUIRE(cuctx::test::raw().cuDevicePrimaryCtxRelease(device->native()) == CUDA_SUCCESS);
    });
}

TEST_CASE("expectNoNewContexts catches a context kept through cuctx", "[testing][no-new-contexts]")
{
    std::optional<cuctx::Context> kept;
    const std::string what = failureOf([&] { kept = cuctx::Context::create(cuctx::Device::get(0)); });
    CHECK_THAT(what, Catch::Contains("1 more context(s) made through cuctx are alive"));
    kept.reset();
    expectNoNewContexts([] { (void)cuctx::Context::create(cuctx::Device::get(0)); }); // destroyed inside
}

TEST_CASE("expectNoNewContexts catches a context created behind cuctx's back, through NVML",
          "[testing][no-new-contexts]")
{
    const auto device = idleDevice();
    if (!device || nvmlListsSelf(*device) != false) {
        WARN("no device without a context of this process that NVML can report on: nothing to check");
        return;
    }
    cuctx::test::drainRawStack();
    CUcontext created = nullptr;
    const std::string what =
        failureOf([&] { REQUIRE(cuctx::test::raw().cuCtxCreate_v2(&created, 0, device->native()) == CUDA_SUCCESS); });
    REQUIRE(created != nullptr);
    CHECK(cuctx::test::raw().cuCtxDestroy(created) == CUDA_SUCCESS);
    CHECK_THAT(what, Catch::Contains("NVML now lists this process on device " + std::to_string(device->ordinal())));
}

// SPDX-License-Identifier: MIT
// Green contexts: current on one thread at a time; partitions that share no SM; their streams.

#include "driver_helpers.hpp"
#include "module_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/device_buffer.hpp"
#include "cuctx/error.hpp"
#include "cuctx/launch.hpp"
#include "cuctx/module.hpp"
#include "cuctx/stream.hpp"

#include <cstdint>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

using cuctx::Context;
using cuctx::ContextGuard;
using cuctx::Device;
using cuctx::Errc;

namespace {

bool haveGreenContexts()
{
    const auto& d = cuctx::test::raw();
    if (d.cuGreenCtxCreate == nullptr || d.cuGreenCtxGetDevResource == nullptr) {
        WARN("this driver has no green contexts (CUDA 12.4); nothing to check");
        return false;
    }
    return true;
}

/// The device's SMs as the driver reports them (cuDeviceGetDevResource), not through cuctx.
CUdevResource deviceSms(const Device& device)
{
    CUdevResource all{};
    REQUIRE(cuctx::test::raw().cuDeviceGetDevResource(device.native(), &all, CU_DEV_RESOURCE_TYPE_SM) == CUDA_SUCCESS);
    return all;
}

/// A green context's SMs as the driver reports them (cuGreenCtxGetDevResource), not through cuctx.
unsigned reportedSms(const Context& green)
{
    CUdevResource r{};
    REQUIRE(green.nativeGreen() != nullptr);
    REQUIRE(cuctx::test::raw().cuGreenCtxGetDevResource(green.nativeGreen(), &r, CU_DEV_RESOURCE_TYPE_SM) ==
            CUDA_SUCCESS);
    return r.sm.smCount;
}

int fakeLiveContexts()
{
#ifdef CUCTX_TEST_FAKE_DRIVER
    return cuctx_fake_live_contexts();
#else
    return 0;
#endif
}

} // namespace

TEST_CASE("a green context is current on one thread at a time", "[green]")
{
    cuctx::test::drainRawStack();
    if (cuctx::test::raw().cuGreenCtxCreate == nullptr) {
        WARN("this driver has no green contexts (CUDA 12.4); nothing to check");
        return;
    }
    const long before = cuctx::detail::liveContexts();
    {
        Context green = Context::green(Device::get(0), 8);
        CHECK(green.isGreen());
        cuctx::Errc elsewhere{};
        {
            ContextGuard here(green);
            CHECK(cuctx::test::rawCurrent() == green.native());
            ContextGuard nested(green); // the same thread again: fine
            std::thread([&] {
                try {
                    ContextGuard there(green);
                } catch (const cuctx::Error& e) {
                    elsewhere = e.condition();
                }
            }).join();
        }
        CHECK(elsewhere == cuctx::Errc::context_busy);
        bool enteredLater = false;
        std::thread([&] {
            ContextGuard there(green); // free again once this thread left it
            enteredLater = cuctx::test::rawCurrent() == green.native();
        }).join();
        CHECK(enteredLater);
    }
    CHECK(cuctx::detail::liveContexts() == before);
}

TEST_CASE("a green partition's contexts report disjoint SM counts within the device", "[green]")
{
    cuctx::test::drainRawStack();
    if (!haveGreenContexts())
        return;
    const Device device = Device::get(0);
    const unsigned available = deviceSms(device).sm.smCount;
    REQUIRE(available >= 64); // an H200 has 132
    const long before = cuctx::detail::liveContexts();
    {
        // Multiples of 8: whole groups on every architecture's granularity (at most 8, cuda.h).
        const std::vector<unsigned> asked = {24, 40};
        const std::vector<Context> parts = Context::greenPartition(device, asked);
        REQUIRE(parts.size() == asked.size());
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < parts.size(); ++i) {
            CHECK(parts[i].isGreen());
            CHECK(parts[i].device().ordinal() == 0);
            const unsigned got = reportedSms(parts[i]);
            INFO("partition " << i << ": asked " << asked[i] << ", the driver reports " << got << " of " << available
                              << " SMs");
            CHECK(got == asked[i]);
            CHECK(parts[i].smCount() == got);
            sum += got;
        }
        CHECK(sum <= available); // counts are all the driver tells; the one split keeps them disjoint
        CHECK(parts[0].native() != parts[1].native());
        CHECK(parts[0].nativeGreen() != parts[1].nativeGreen());
#ifdef CUCTX_TEST_FAKE_DRIVER
        CHECK(cuctx_fake_green_overlap(parts[0].nativeGreen(), parts[1].nativeGreen()) == 0);
#endif
        // A request the granularity rounds up: asked 20, got at least 20 (24 on compute capability 9.0).
        const std::vector<Context> rounded = Context::greenPartition(device, {20});
        CHECK(rounded.at(0).smCount() >= 20);
        CHECK(rounded.at(0).smCount() == reportedSms(rounded[0]));
    }
    CHECK(cuctx::detail::liveContexts() == before);
}

TEST_CASE("a context's SM count: a primary context has the whole device", "[green]")
{
    if (cuctx::test::raw().cuCtxGetDevResource == nullptr) {
        WARN("this driver has no cuCtxGetDevResource (CUDA 12.4); nothing to check");
        return;
    }
    const Device device = Device::get(0);
    CHECK(Context::primary(device).smCount() ==
          static_cast<unsigned>(device.nativeAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)));
}

#ifdef CUCTX_TEST_FAKE_DRIVER
TEST_CASE("Context::green splits independently, so two of them share SMs; a partition's do not", "[green]")
{
    // The fake knows which SMs each green context holds (the real driver tells counts only).
    const Context a = Context::green(Device::get(0), 16);
    const Context b = Context::green(Device::get(0), 16);
    CHECK(cuctx_fake_green_overlap(a.nativeGreen(), b.nativeGreen()) == 16); // documented on Context::green
    const std::vector<Context> parts = Context::greenPartition(Device::get(0), {16, 16});
    CHECK(cuctx_fake_green_overlap(parts[0].nativeGreen(), parts[1].nativeGreen()) == 0);
}
#endif

TEST_CASE("a stream on a green partition runs work", "[green][stream]")
{
    cuctx::test::drainRawStack();
    if (!haveGreenContexts() || cuctx::test::raw().cuGreenCtxStreamCreate == nullptr)
        return;
    const std::vector<Context> parts = Context::greenPartition(Device::get(0), {16, 32});
    const Context& part = parts[1];
#ifdef CUCTX_TEST_FAKE_DRIVER
    const long greenStreams = cuctx_fake_calls("cuGreenCtxStreamCreate");
#endif
    const cuctx::Stream stream(part);
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_calls("cuGreenCtxStreamCreate") == greenStreams + 1);
#endif
    CHECK(stream.nonBlocking());
    if (cuctx::test::raw().cuStreamGetGreenCtx != nullptr) {
        CUgreenCtx owner = nullptr;
        REQUIRE(cuctx::test::raw().cuStreamGetGreenCtx(stream.native(), &owner) == CUDA_SUCCESS);
        CHECK(owner == part.nativeGreen());
    }
    constexpr unsigned n = 1024;
    const cuctx::DeviceBuffer in(part, n * sizeof(float));
    const cuctx::DeviceBuffer out(part, n * sizeof(float));
    in.fill32(0x40400000u, stream); // 3.0f
    out.fill32(0u, stream);
    const cuctx::Module module = cuctx::Module::fromPtx(part, cuctx::test::readText(cuctx::test::testPtxPath()));
    cuctx::launch(module.function("scale"), {.grid = {n / 256, 1, 1}, .block = {256, 1, 1}, .stream = stream.native()},
                  out.address(), in.address(), 2.0f, n);
    stream.synchronize();
    const std::vector<float> result = out.download<float>();
    REQUIRE(result.size() == n);
    if (!cuctx::test::kFakeDriver) { // the fake runs no kernels
        CHECK(result.front() == 6.0f);
        CHECK(result.back() == 6.0f);
    }
    CHECK(in.download<float>().back() == 3.0f);
    Errc condition{};
    std::string blocking;
    try {
        const cuctx::Stream s(part, {.nonBlocking = false});
    } catch (const cuctx::Error& e) {
        condition = e.condition();
        blocking = e.what();
    }
    CHECK(condition == Errc::invalid_argument);
    CHECK_THAT(blocking, Catch::Matchers::Contains("CU_STREAM_NON_BLOCKING"));
}

TEST_CASE("greenPartition refuses what the device cannot give, naming the device, the request and its SMs", "[green]")
{
    cuctx::test::drainRawStack();
    if (!haveGreenContexts())
        return;
    const Device device = Device::get(0);
    const unsigned available = deviceSms(device).sm.smCount;
    const long before = cuctx::detail::liveContexts();
    const int fakeBefore = fakeLiveContexts();
    auto refusal = [&](const std::vector<unsigned>& asked) -> std::string {
        try {
            (void)Context::greenPartition(device, asked);
        } catch (const cuctx::Error& e) {
            CHECK(e.condition() == Errc::invalid_argument);
            return e.what();
        }
        FAIL("greenPartition accepted a request it cannot give");
        return {};
    };
    using Catch::Matchers::Contains;
    CHECK_THAT(refusal({}), Contains("empty"));
    const std::string zero = refusal({24, 0});
    CHECK_THAT(zero, Contains("device 0"));
    CHECK_THAT(zero, Contains("0 SMs"));
    const std::string over = refusal({available, 8});
    CHECK_THAT(over, Contains("device 0"));
    CHECK_THAT(over, Contains("asks for " + std::to_string(available + 8) + " SMs"));
    CHECK_THAT(over, Contains("has " + std::to_string(available)));
    // As many 1-SM partitions as the device has SMs: the sum fits, but every architecture's minimum
    // partition is at least 2 SMs, so one split cannot give that many groups.
    const std::string groups = refusal(std::vector<unsigned>(available, 1));
    CHECK_THAT(groups, Contains("device 0"));
    CHECK_THAT(groups, Contains("asks for " + std::to_string(available) + " SMs"));
    CHECK_THAT(groups, Contains("has " + std::to_string(available) + " SMs"));
    CHECK(cuctx::detail::liveContexts() == before);
    CHECK(fakeLiveContexts() == fakeBefore);
}

#ifdef CUCTX_TEST_FAKE_DRIVER
TEST_CASE("greenPartition leaves no green context behind when any driver call in it fails", "[green][faults]")
{
    const Device device = Device::get(0);
    const std::vector<unsigned> asked = {24, 40, 16};
    const char* const calls[] = {"cuDeviceGetDevResource",
                                 "cuDevSmResourceSplitByCount",
                                 "cuDevResourceGenerateDesc",
                                 "cuGreenCtxCreate",
                                 "cuCtxFromGreenCtx",
                                 "cuGreenCtxGetDevResource",
                                 "cuCtxGetId"};
    std::vector<long> made; // how often a clean partition calls each
    for (const char* call : calls)
        made.push_back(cuctx_fake_calls(call));
    (void)Context::greenPartition(device, asked);
    for (std::size_t i = 0; i < made.size(); ++i)
        made[i] = cuctx_fake_calls(calls[i]) - made[i];
    const long before = cuctx::detail::liveContexts();
    const int fakeBefore = cuctx_fake_live_contexts();
    int failed = 0;
    for (std::size_t i = 0; i < made.size(); ++i) {
        for (long nth = 1; nth <= made[i]; ++nth) {
            INFO(calls[i] << " fails at its call " << nth);
            cuctx_fake_fail(calls[i], CUDA_ERROR_OUT_OF_MEMORY, static_cast<int>(nth));
            try {
                (void)Context::greenPartition(device, asked);
            } catch (const cuctx::Error& e) {
                ++failed;
                CHECK_THAT(e.what(), Catch::Matchers::Contains("device 0"));
            }
            CHECK(cuctx::detail::liveContexts() == before);
            CHECK(cuctx_fake_live_contexts() == fakeBefore);
        }
    }
    // Every failure throws but cuCtxGetId's, which cuctx absorbs (the context's id is then 0).
    CHECK(failed == std::accumulate(made.begin(), made.end(), 0L) - made.back());
}
#endif

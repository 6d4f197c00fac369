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
#include "cuctx/device_buffer.hpp"
#include "cuctx/device_fault.hpp"
#include "cuctx/error.hpp"
#include "cuctx/event.hpp"
#include "cuctx/launch.hpp"
#include "cuctx/launch_journal.hpp"
#include "cuctx/live_objects.hpp"
#include "cuctx/module.hpp"
#include "cuctx/process_report.hpp"
#include "cuctx/stream.hpp"
#include "cuctx/testing.hpp"

#include "log_helpers.hpp"

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

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

TEST_CASE("the launch journal records each launch with the caller's location until a sync retires it",
          "[faults][journal]")
{
    REQUIRE(cuctx::launchJournalEnabled()); // on by default
    Context ctx = Context::create(Device::get(0));
    cuctx::Module module =
        cuctx::Module::fromPtx(ctx, cuctx::test::readText(cuctx::test::testPtxPath()), {}, "kernels");
    cuctx::Stream stream(ctx);
    CHECK(cuctx::recentLaunches(ctx).empty());

    cuctx::launch(module.function("empty"), {.grid = {2, 3, 1}, .block = {32, 1, 1}, .stream = stream});
    const std::string line = std::to_string(__LINE__ - 1);
    std::vector<std::string> all = cuctx::recentLaunches(ctx);
    REQUIRE(all.size() == 1);
    CHECK(contains(all[0], "kernel 'empty' of 'kernels'"));
    CHECK(contains(all[0], "grid (2, 3, 1), block (32, 1, 1)"));
    CHECK(contains(all[0], "context " + std::to_string(ctx.id())));
    CHECK(contains(all[0], "test_faults.cpp:" + line));
    CHECK(cuctx::recentLaunches(ctx, true).size() == 1);

    stream.synchronize(); // retires the stream's launches: no suspects left, still in the journal
    CHECK(cuctx::recentLaunches(ctx, true).empty());
    CHECK(cuctx::recentLaunches(ctx).size() == 1);

    cuctx::launch(module.function("bump"), {.grid = {1, 1, 1}, .block = {1, 1, 1}});
    CHECK(cuctx::recentLaunches(ctx, true).size() == 1);
    ctx.synchronize(); // retires every launch of the context
    CHECK(cuctx::recentLaunches(ctx, true).empty());

    // Turned off, it records nothing; the ring keeps its last 32 launches.
    cuctx::setLaunchJournal(false);
    cuctx::launch(module.function("empty"), {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = stream});
    cuctx::setLaunchJournal(true);
    CHECK(cuctx::recentLaunches(ctx).size() == 2);
    for (int i = 0; i < 40; ++i)
        cuctx::launch(module.function("empty"), {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = stream});
    all = cuctx::recentLaunches(ctx);
    CHECK(all.size() == 32);
    CHECK(contains(all.back(), "launch 42 of"));
    stream.synchronize();
}

TEST_CASE("the launch journal takes launches from many threads while another reads it", "[faults][journal]")
{
    Context ctx = Context::create(Device::get(0));
    cuctx::Module module =
        cuctx::Module::fromPtx(ctx, cuctx::test::readText(cuctx::test::testPtxPath()), {}, "kernels");
    const cuctx::Function empty = module.function("empty");
    constexpr unsigned kThreads = 4;
    constexpr int kLaunches = 200;
    std::atomic<unsigned> done{0};
    cuctx::testing::runConcurrently(kThreads + 1, [&](unsigned index) {
        if (index == kThreads) { // the reader: every entry it sees is whole
            while (done.load() < kThreads)
                for (const std::string& entry : cuctx::recentLaunches(ctx))
                    if (!contains(entry, "kernel 'empty' of 'kernels', grid (1, 1, 1), block (1, 1, 1)"))
                        throw std::runtime_error("torn journal entry: " + entry);
            return;
        }
        cuctx::Stream stream(ctx);
        for (int i = 0; i < kLaunches; ++i)
            cuctx::launch(empty, {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = stream});
        stream.synchronize();
        done.fetch_add(1);
    });
    const std::vector<std::string> all = cuctx::recentLaunches(ctx);
    CHECK(all.size() == 32);
    CHECK(contains(all.back(), "launch " + std::to_string(kThreads * kLaunches) + " of"));
    CHECK(cuctx::recentLaunches(ctx, true).empty()); // each thread synchronised its stream
}

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
    REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);       // the stack still works

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

namespace {

// The fake driver and cuctx with no fault recorded, before and after a test that makes one.
struct NoFaults {
    NoFaults() { forget(); }
    ~NoFaults() { forget(); }
    NoFaults(const NoFaults&) = delete;
    NoFaults& operator=(const NoFaults&) = delete;
    static void forget()
    {
        cuctx_fake_reset();
        cuctx::testing::forgetDeviceFaults();
    }
};

} // namespace

TEST_CASE("the first sticky error poisons the device, and later calls fail fast naming it", "[faults]")
{
    NoFaults clean;
    Context faulted = Context::create(Device::get(0));
    Context bystander = Context::create(Device::get(0));
    Context other = Context::create(Device::get(1));
    CHECK_FALSE(cuctx::deviceFault(0).has_value());

    cuctx_fake_fail("cuCtxSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS, 1);
    std::string first;
    try {
        faulted.synchronize();
        FAIL("the injected fault was not reported");
    } catch (const cuctx::Error& e) {
        CHECK(e.code() == Errc::device_poisoned); // the first one is also a driver error with its result
        CHECK(e.code() == Errc::driver_error);
        CHECK(e.condition() == Errc::device_poisoned);
        CHECK(e.result() == CUDA_ERROR_ILLEGAL_ADDRESS);
        first = e.what();
    }
    CHECK(contains(first, "cuCtxSynchronize"));
    CHECK(contains(first, "poisons device 0"));
    CHECK(contains(first, "docs/faults.md"));

    const std::optional<cuctx::DeviceFault> fault = cuctx::deviceFault(0);
    REQUIRE(fault.has_value());
    CHECK(fault->device == 0);
    CHECK(fault->result == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(fault->call == "cuCtxSynchronize");
    CHECK(contains(fault->object, "context " + std::to_string(faulted.id())));
    CHECK(fault->threadId > 0);
    CHECK_FALSE(fault->time.empty());
    CHECK_FALSE(cuctx::deviceFault(1).has_value());

    // Later calls on the device fail fast, without a driver call, naming the first fault.
    const long creates = cuctx_fake_calls("cuCtxCreate_v4");
    const long syncs = cuctx_fake_calls("cuCtxSynchronize");
    for (auto attempt : {+[] { (void)Context::create(Device::get(0)); }}) {
        try {
            attempt();
            FAIL("Context::create on a poisoned device succeeded");
        } catch (const cuctx::Error& e) {
            CHECK(e.condition() == Errc::device_poisoned);
            CHECK(e.code() == Errc::device_poisoned);
            CHECK(e.result() == 0);
            const std::string m = e.what();
            CHECK(contains(m, "cuctx::Context::create"));
            CHECK(contains(m, "CUDA_ERROR_ILLEGAL_ADDRESS (700) from cuCtxSynchronize on context " +
                                  std::to_string(faulted.id())));
            CHECK(contains(m, "thread " + std::to_string(fault->threadId)));
            CHECK(contains(m, fault->time));
            CHECK(contains(m, "restart the process"));
        }
    }
    CHECK_THROWS_MATCHES(bystander.synchronize(), cuctx::Error,
                         Catch::Predicate<cuctx::Error>(
                             [](const cuctx::Error& e) { return e.condition() == Errc::device_poisoned; }, "poisoned"));
    CHECK_THROWS_MATCHES(cuctx::Stream(bystander), cuctx::Error,
                         Catch::Predicate<cuctx::Error>(
                             [](const cuctx::Error& e) { return e.condition() == Errc::device_poisoned; }, "poisoned"));
    CHECK(cuctx_fake_calls("cuCtxCreate_v4") == creates);
    CHECK(cuctx_fake_calls("cuCtxSynchronize") == syncs);

    // Another device is not affected.
    CHECK_NOTHROW(other.synchronize());
    CHECK_NOTHROW(cuctx::Stream(other).synchronize());
}

TEST_CASE("a sticky fault names the launches since the last synchronisation as suspects", "[faults][journal]")
{
    NoFaults clean;
    Context ctx = Context::create(Device::get(0));
    Context bystander = Context::create(Device::get(0));
    cuctx::Module module =
        cuctx::Module::fromPtx(ctx, cuctx::test::readText(cuctx::test::testPtxPath()), {}, "kernels");
    cuctx::Stream stream(ctx);
    cuctx::launch(module.function("empty"), {.grid = {7, 1, 1}, .block = {1, 1, 1}, .stream = stream});
    stream.synchronize(); // retired: not a suspect
    cuctx::launch(module.function("bump"), {.grid = {5, 1, 1}, .block = {64, 1, 1}, .stream = stream});
    const std::string line = std::to_string(__LINE__ - 1);
    // A busier context of the same device, registered later, must not push the faulting one's launch
    // out of the suspects.
    cuctx::Module other =
        cuctx::Module::fromPtx(bystander, cuctx::test::readText(cuctx::test::testPtxPath()), {}, "kernels");
    cuctx::Stream otherStream(bystander);
    for (int i = 0; i < 10; ++i)
        cuctx::launch(other.function("empty"), {.grid = {3, 1, 1}, .block = {1, 1, 1}, .stream = otherStream});

    cuctx_fake_fail("cuStreamSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS, 1);
    std::string message;
    try {
        stream.synchronize();
        FAIL("the injected fault was not reported");
    } catch (const cuctx::Error& e) {
        message = e.what();
    }
    CHECK(contains(message, "suspects"));
    CHECK(contains(message, "kernel 'bump' of 'kernels', grid (5, 1, 1), block (64, 1, 1)"));
    CHECK(contains(message, "test_faults.cpp:" + line));
    CHECK_FALSE(contains(message, "grid (7, 1, 1)")); // retired

    const std::optional<cuctx::DeviceFault> fault = cuctx::deviceFault(0);
    REQUIRE(fault.has_value());
    REQUIRE(fault->suspects.size() == 9); // the faulting context's one, the bystander's last 8
    CHECK(contains(fault->suspects[0], "kernel 'bump'"));
    CHECK(contains(fault->suspects[8], "grid (3, 1, 1)"));

    // A later call, in another context of the device, names the same fault and suspect.
    try {
        bystander.synchronize();
        FAIL("a poisoned device's context synchronised");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == Errc::device_poisoned);
        CHECK(contains(e.what(), "kernel 'bump' of 'kernels'"));
    }
    // The process report shows it.
    const cuctx::ProcessReport report = cuctx::processReport({.devices = false});
    REQUIRE(report.poisonedDevices.size() == 1);
    CHECK(report.poisonedDevices[0].device == 0);
    CHECK(contains(report.text(), "device 0 POISONED by CUDA_ERROR_ILLEGAL_ADDRESS (700) from cuStreamSynchronize"));
    CHECK(contains(report.text(), "kernel 'bump' of 'kernels'"));
    const std::string json = report.json();
    CHECK(contains(json, "\"poisoned_devices\""));
    CHECK(contains(json, "\"result_name\": \"CUDA_ERROR_ILLEGAL_ADDRESS\""));
    // Launching there fails fast too, and is not journalled.
    CHECK_THROWS_MATCHES(cuctx::launch(module.function("empty"), {.grid = {1, 1, 1}, .block = {1, 1, 1}}), cuctx::Error,
                         Catch::Predicate<cuctx::Error>(
                             [](const cuctx::Error& e) { return e.condition() == Errc::device_poisoned; }, "poisoned"));
}

TEST_CASE("objects on a poisoned device release cuctx's bookkeeping quietly", "[faults]")
{
    NoFaults clean;
    const cuctx::LiveObjects before = cuctx::liveObjects();
    cuctx::test::ErrorLog log;
    {
        Context ctx = Context::create(Device::get(0));
        cuctx::Module module = cuctx::Module::fromPtx(ctx, cuctx::test::readText(cuctx::test::testPtxPath()));
        cuctx::Stream stream(ctx);
        cuctx::Event event(ctx);
        cuctx::DeviceBuffer buffer(ctx, 256);
        std::vector<cuctx::Stream> more;
        more.reserve(8);
        for (int i = 0; i < 8; ++i)
            more.emplace_back(ctx);
        cuctx_fake_fail("cuStreamSynchronize", CUDA_ERROR_LAUNCH_FAILED, 1);
        CHECK_THROWS(stream.synchronize());
        REQUIRE(cuctx::deviceFault(0).has_value());
    } // every destroy call fails on the poisoned device
    const cuctx::LiveObjects after = cuctx::liveObjects();
    CHECK(after.contexts == before.contexts);
    CHECK(after.modules == before.modules);
    CHECK(after.streams == before.streams);
    CHECK(after.events == before.events);
    CHECK(after.buffers == before.buffers);
    CHECK(log.take().empty()); // no error flood: the poisoning was reported once, as a warning
}

#endif // CUCTX_TEST_FAKE_DRIVER

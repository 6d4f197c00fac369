// SPDX-License-Identifier: MIT
// Streams, events, device buffers, SPMD workers and pipelines. Runs in both suites.

#include "driver_helpers.hpp"
#include "log_helpers.hpp"
#include "module_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/device_buffer.hpp"
#include "cuctx/error.hpp"
#include "cuctx/event.hpp"
#include "cuctx/live_objects.hpp"
#include "cuctx/module.hpp"
#include "cuctx/peer_access.hpp"
#include "cuctx/pipeline.hpp"
#include "cuctx/spmd.hpp"
#include "cuctx/stream.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

using cuctx::Context;
using cuctx::Device;
using cuctx::DeviceBuffer;
using cuctx::Errc;
using cuctx::Event;
using cuctx::Stream;
using cuctx::test::rawCurrent;

namespace {

struct LiveCounts {
    int streams, events, allocations;
};

LiveCounts live()
{
#ifdef CUCTX_TEST_FAKE_DRIVER
    return {cuctx_fake_live_streams(), cuctx_fake_live_events(), cuctx_fake_live_allocations()};
#else
    return {0, 0, 0};
#endif
}

void checkNothingLeft(const LiveCounts& before)
{
    const LiveCounts now = live();
    CHECK(now.streams == before.streams);
    CHECK(now.events == before.events);
    CHECK(now.allocations == before.allocations);
}

std::vector<float> iota(std::size_t n, float start)
{
    std::vector<float> v(n);
    std::iota(v.begin(), v.end(), start);
    return v;
}

} // namespace

TEST_CASE("a stream has its flags and priority, and leaves the caller's stack alone", "[stream]")
{
    const LiveCounts before = live();
    {
        Context ctx = Context::create(Device::get(0));
        const auto range = ctx.streamPriorityRange();
        Stream high(ctx, {.nonBlocking = true, .priority = range.greatest});
        Stream plain(ctx, {.nonBlocking = false});
        CHECK(high.priority() == range.greatest);
        CHECK(high.nonBlocking());
        CHECK_FALSE(plain.nonBlocking());
        CHECK(high.context() == ctx);
        CHECK(high.device().ordinal() == 0);
        CHECK(rawCurrent() == nullptr);
        high.synchronize();
        CHECK(high.ready());
        try {
            Stream bad(ctx, {.priority = range.greatest - 1});
            FAIL("a priority outside the range was accepted");
        } catch (const cuctx::Error& e) {
            CHECK(e.condition() == Errc::invalid_argument);
            CHECK(std::string(e.what()).find("outside this context's range") != std::string::npos);
        }
        Stream moved = std::move(high);
        CHECK(moved.native() != nullptr);
        CHECK_FALSE(high); // NOLINT(bugprone-use-after-move): the empty state is the contract
        CHECK_THROWS_AS(high.synchronize(), cuctx::Error);
    }
    checkNothingLeft(before);
}

TEST_CASE("a host callback's exception is rethrown by the next synchronize, once", "[stream]")
{
    Context ctx = Context::create(Device::get(0));
    Stream s(ctx);
    std::atomic<int> ran{0};
    s.hostCallback([&] { ++ran; });
    s.hostCallback([] { throw std::runtime_error("callback failed"); });
    s.hostCallback([&] { ++ran; }); // later callbacks still run
    CHECK_THROWS_WITH(s.synchronize(), "callback failed");
    CHECK(ran == 2);
    CHECK_NOTHROW(s.synchronize()); // reported once
}

TEST_CASE("every host callback's exception is rethrown, one per synchronize, in order", "[stream]")
{
    Context ctx = Context::create(Device::get(0));
    Stream s(ctx);
    s.hostCallback([] { throw std::runtime_error("first"); });
    s.hostCallback([] { throw std::runtime_error("second"); });
    CHECK_THROWS_WITH(s.synchronize(), "first");
    CHECK_THROWS_WITH(s.synchronize(), "second"); // kept, not lost
    CHECK_NOTHROW(s.synchronize());
}

TEST_CASE("events: flags are checked, cross-context waits are allowed, records must use the event's context",
          "[stream]")
{
    const LiveCounts before = live();
    {
        Context a = Context::create(Device::get(0));
        Context b = Context::create(Device::get(0));
        Stream sa(a), sb(b);
        Event done(a);
        done.record(sa);
        sb.wait(done); // an event of another context: fine (driver-facts.md)
        sb.synchronize();
        CHECK(done.ready());
        done.synchronize();

        try {
            Event bad(a, {.timing = true, .interprocess = true});
            FAIL("an interprocess timing event was created");
        } catch (const cuctx::Error& e) {
            CHECK(e.condition() == Errc::invalid_argument);
            CHECK(std::string(e.what()).find("CU_EVENT_DISABLE_TIMING") != std::string::npos);
        }
        try {
            done.record(sb);
            FAIL("an event of context a was recorded on a stream of context b");
        } catch (const cuctx::Error& e) {
            CHECK(std::string(e.what()).find("Stream::wait") != std::string::npos);
        }
        Event start(a, {.timing = true}), stop(a, {.timing = true});
        start.record(sa);
        stop.record(sa);
        sa.synchronize();
        CHECK(Event::elapsedMilliseconds(start, stop) >= 0.0f);
        CHECK_THROWS_WITH(Event::elapsedMilliseconds(done, stop), Catch::Contains("timing"));
        CHECK_THROWS_WITH(done.ipcHandle(), Catch::Contains("interprocess"));
        Event shared(a, {.interprocess = true});
        shared.record(sa);
        const cuctx::IpcEventHandle h = shared.ipcHandle();
        CHECK(cuctx::IpcEventHandle::parse(h.text()).bytes == h.bytes);
        CHECK_THROWS_AS(cuctx::IpcEventHandle::parse("not hex"), cuctx::Error);
    }
    checkNothingLeft(before);
}

TEST_CASE("device buffers copy both ways, check their ranges, and copy between contexts", "[stream]")
{
    const LiveCounts before = live();
    {
        Context a = Context::create(Device::get(0));
        Context b = Context::create(Device::get(0));
        const std::vector<float> data = iota(1000, 1.0f);
        DeviceBuffer x(a, data.size() * sizeof(float));
        x.upload(std::span<const float>(data));
        CHECK(x.download<float>() == data);
        CHECK_THROWS_WITH(x.upload(data.data(), 8, x.bytes() - 4), Catch::Contains("do not fit"));
        DeviceBuffer y(b, x.bytes());
        Stream sb(b);
        y.fill32(0, sb);
        y.copyFrom(x, sb); // a peer copy: another context
        sb.synchronize();
        CHECK(y.download<float>() == data);
        Stream sa(a);
        DeviceBuffer z(a, x.bytes());
        z.copyFrom(x, sa); // the same context
        sa.synchronize();
        CHECK(z.download<float>() == data);
        CHECK_THROWS_WITH(z.uploadAsync(data.data(), 4, sb), Catch::Contains("the stream in"));
        CHECK_THROWS_AS(DeviceBuffer(a, 0), cuctx::Error);
        const cuctx::IpcMemHandle h = x.ipcHandle();
        const cuctx::IpcMemHandle back = cuctx::IpcMemHandle::parse(h.text());
        CHECK(back.bytes == h.bytes);
        CHECK(back.size == x.bytes());
        CHECK(rawCurrent() == nullptr);
    }
    checkNothingLeft(before);
}

TEST_CASE("SPMD: one worker per context, each with its context current, results in order", "[spmd]")
{
    std::vector<Context> contexts;
    contexts.reserve(4);
    for (int i = 0; i < 4; ++i)
        contexts.push_back(Context::create(Device::get(0)));
    const std::vector<std::size_t> results =
        cuctx::runOnEach(contexts, [](const Context& ctx, std::size_t index, std::stop_token) {
            CHECK(rawCurrent() == ctx.native()); // bound for the worker's life
            cuctx::ContextGuard g(ctx);          // so a guard is free
            CHECK_FALSE(g.switched());
            return index * 10;
        });
    CHECK(results == std::vector<std::size_t>{0, 10, 20, 30});
    CHECK(rawCurrent() == nullptr);
}

TEST_CASE("SPMD: a failing worker's exception reaches the caller; the others are stopped and joined", "[spmd]")
{
    std::vector<Context> contexts;
    contexts.reserve(4);
    for (int i = 0; i < 4; ++i)
        contexts.push_back(Context::create(Device::get(0)));
    std::atomic<int> stopped{0};
    try {
        cuctx::runOnEach(contexts, [&](const Context& ctx, std::size_t index, std::stop_token stop) {
            DeviceBuffer scratch(ctx, 4096); // real work in the worker's context
            if (index == 2)
                throw std::runtime_error("worker 2 failed on " + std::to_string(ctx.id()));
            while (!stop.stop_requested())
                scratch.fill32(static_cast<unsigned>(index)); // until told to stop
            ++stopped;
        });
        FAIL("the failure was not reported");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()).find("worker 2 failed") != std::string::npos);
    }
    CHECK(stopped == 3); // every other worker saw the stop and returned before runOnEach did
}

TEST_CASE("a pipeline over four contexts passes each item through every stage, chained by events", "[pipeline]")
{
    constexpr std::size_t n = 4096, items = 8;
    std::vector<Context> contexts;
    contexts.reserve(4);
    for (int i = 0; i < 4; ++i)
        contexts.push_back(Context::create(Device::get(0)));
    std::vector<std::vector<DeviceBuffer>> buffers(4); // per stage, per item
    for (std::size_t s = 0; s < 4; ++s)
        for (std::size_t i = 0; i < items; ++i)
            buffers[s].emplace_back(contexts[s], n * sizeof(float));
    std::vector<std::vector<float>> inputs, outputs(items, std::vector<float>(n));
    for (std::size_t i = 0; i < items; ++i)
        inputs.push_back(iota(n, static_cast<float>(i * n)));
    std::vector<cuctx::Pipeline::Stage> stages;
    stages.push_back({contexts[0], [&](const Stream& s, std::size_t item) {
                          buffers[0][item].uploadAsync(inputs[item].data(), n * sizeof(float), s);
                      }});
    for (std::size_t st = 1; st < 3; ++st)
        stages.push_back({contexts[st], [&, st](const Stream& s, std::size_t item) {
                              buffers[st][item].copyFrom(buffers[st - 1][item], s); // across contexts
                          }});
    stages.push_back({contexts[3], [&](const Stream& s, std::size_t item) {
                          buffers[3][item].copyFrom(buffers[2][item], s);
                          buffers[3][item].downloadAsync(outputs[item].data(), n * sizeof(float), s);
                      }});
    cuctx::Pipeline pipeline(std::move(stages));
    for (std::size_t i = 0; i < items; ++i)
        pipeline.submit(i);
    pipeline.synchronize();
    for (std::size_t i = 0; i < items; ++i)
        CHECK(outputs[i] == inputs[i]);
    CHECK(rawCurrent() == nullptr);
}

TEST_CASE("context-wide record and wait: every stream of a context at once", "[stream]")
{
    if (cuctx::detail::api().cuCtxRecordEvent == nullptr) {
        WARN("cuCtxRecordEvent needs CUDA 12.5: not tested on this driver");
        return;
    }
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    Stream sa(a);
    DeviceBuffer x(a, 4096), y(b, 4096);
    x.fill32(7u, sa);
    Event all(a);
    all.recordContext(a); // all of a's work so far, on any stream
    all.waitInContext(b); // b's later work waits for it
    Stream sb(b);
    y.copyFrom(x, sb);
    sb.synchronize();
    const std::vector<unsigned> got = y.download<unsigned>();
    CHECK(std::count(got.begin(), got.end(), 7u) == 1024);
}

TEST_CASE("peers: the matrix covers every ordered pair; enabling what cannot be is an error with a hint", "[stream]")
{
    const std::vector<cuctx::PeerLink> links = cuctx::PeerAccess::matrix();
    const int n = Device::count();
    CHECK(links.size() == static_cast<std::size_t>(n * (n - 1)));
    for (const cuctx::PeerLink& l : links)
        CHECK(l.from != l.to);
#ifdef CUCTX_TEST_FAKE_DRIVER
    // The fake's two devices cannot reach each other.
    REQUIRE(n == 2);
    CHECK_FALSE(links[0].canAccess);
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(1));
    CHECK_THROWS_WITH(cuctx::PeerAccess::enable(a, b), Catch::Contains("cannot reach each other"));
    CHECK_FALSE(cuctx::PeerAccess::disable(a, b)); // not enabled: success, nothing changed
#endif
}

TEST_CASE("RAII handles: a move transfers ownership, an assignment destroys what was there", "[stream]")
{
    const cuctx::Context ctx = cuctx::Context::create(cuctx::Device::get(0));
    const cuctx::LiveObjects before = cuctx::liveObjects();
    {
        Stream a(ctx);
        Stream b(ctx);
        const CUstream second = b.native();
        a = std::move(b); // a's first stream is destroyed now
        CHECK(cuctx::liveObjects().streams == before.streams + 1);
        CHECK(a.native() == second);
        CHECK_FALSE(b); // NOLINT(bugprone-use-after-move): the empty state is the contract
        CHECK(b.native() == nullptr);
        Stream c(std::move(a));
        CHECK(c.native() == second);
        CHECK(c.context() == ctx);

        Event e1(ctx);
        Event e2(std::move(e1));
        CHECK_FALSE(e1); // NOLINT(bugprone-use-after-move): the empty state is the contract
        CHECK(e2);
        e2 = Event(ctx);
        CHECK(cuctx::liveObjects().events == before.events + 1);

        cuctx::DeviceBuffer x(ctx, 64);
        cuctx::DeviceBuffer y(ctx, 128);
        x = std::move(y);
        CHECK(x.bytes() == 128);
        CHECK(y.bytes() == 0); // NOLINT(bugprone-use-after-move): the empty state is the contract
        CHECK(y.address() == 0);
        CHECK(cuctx::liveObjects().buffers == before.buffers + 1);
        x = cuctx::DeviceBuffer();
        CHECK_FALSE(x);
        CHECK(cuctx::liveObjects().buffers == before.buffers);
    }
    CHECK(cuctx::liveObjects() == before);
}

namespace {

// What a host callback holds the last handles of: a context and one object of each kind in it.
struct HeldByCallback {
    struct Signal {
        std::promise<void> promise;
        Signal() = default;
        Signal(const Signal&) = delete;
        Signal& operator=(const Signal&) = delete;
        ~Signal() { promise.set_value(); }
    } gone;          // declared first: destroyed last, once everything below is
    Context context; // then the context, after what lives in it
    cuctx::Module module;
    Stream stream;
    Event event;
    DeviceBuffer buffer;

    explicit HeldByCallback(const Context& c)
        : context(c), module(cuctx::Module::fromPtx(c, cuctx::test::readText(cuctx::test::testPtxPath()))), stream(c),
          event(c), buffer(c, 256)
    {
    }
};

} // namespace

TEST_CASE("a context whose last use ends inside a host callback is destroyed outside it", "[stream]")
{
    // Its last handle went while a guard of an exited thread kept it in use; that guard, destroyed in
    // a host callback (misuse), ends the use there, where the driver refuses cuCtxDestroy. Destroyed
    // on the spot, the context leaked: cuctx forgot it after the refusal.
#ifdef CUCTX_TEST_FAKE_DRIVER
    const int contextsBefore = cuctx_fake_live_contexts();
#endif
    const long liveBefore = cuctx::liveObjects().contexts;
    Context host = Context::create(Device::get(0));
    Stream stream(host);
    {
        std::optional<Context> x(Context::create(Device::get(0)));
        std::unique_ptr<cuctx::ContextGuard> outlived;
        std::thread([&] { outlived = std::make_unique<cuctx::ContextGuard>(*x); }).join();
        x.reset(); // the last handle: the guard keeps it in use
        CHECK(cuctx::liveObjects().contexts == liveBefore + 2);
        stream.hostCallback([&] { outlived.reset(); });
        stream.synchronize(); // runs what the callback left to an ordinary thread
    }
    CHECK(cuctx::liveObjects().contexts == liveBefore + 1); // host only
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_live_contexts() == contextsBefore + 1);
#endif
    cuctx::ContextGuard guard(host);
    CHECK(cuctx::test::raw().cuCtxSynchronize() == CUDA_SUCCESS);
}

TEST_CASE("a context whose last handle goes in a host callback launched without cuctx is destroyed outside it",
          "[stream]")
{
    // A framework's callback (cudaLaunchHostFunc, cuLaunchHostFunc) that holds a cuctx Context: the
    // driver refuses cuCtxDestroy there too, and cuctx cannot tell it from its own flag.
#ifdef CUCTX_TEST_FAKE_DRIVER
    const int contextsBefore = cuctx_fake_live_contexts();
#endif
    const long liveBefore = cuctx::liveObjects().contexts;
    Context host = Context::create(Device::get(0));
    Stream stream(host);
    struct Held {
        std::optional<Context> context;
        CUresult push = CUDA_SUCCESS; // what the driver answers a push there (driver-facts.md: refused)
    };
    Held held{Context::create(Device::get(0))};
    const CUhostFn dropIt = [](void* p) {
        auto& h = *static_cast<Held*>(p);
        h.push = cuctx::test::raw().cuCtxPushCurrent(h.context->native());
        if (h.push == CUDA_SUCCESS) {
            CUcontext popped = nullptr;
            (void)cuctx::test::raw().cuCtxPopCurrent(&popped);
        }
        h.context.reset();
    };
    {
        cuctx::ContextGuard guard(host);
        REQUIRE(cuctx::test::raw().cuLaunchHostFunc(stream.native(), dropIt, &held) == CUDA_SUCCESS);
    }
    stream.synchronize(); // waits for the callback, then runs what it left to an ordinary thread
    CHECK(held.push == CUDA_ERROR_NOT_PERMITTED);
    CHECK(cuctx::liveObjects().contexts == liveBefore + 1); // host only
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_live_contexts() == contextsBefore + 1);
#endif
}

TEST_CASE("the last handles dropped inside a host callback are cleaned up outside it, and nothing leaks", "[stream]")
{
    cuctx::test::ErrorLog errors;
    const LiveCounts beforeFake = live();
#ifdef CUCTX_TEST_FAKE_DRIVER
    const int modulesBefore = cuctx_fake_live_modules();
    const int contextsBefore = cuctx_fake_live_contexts();
#endif
    Context host = Context::create(Device::get(0));
    Stream stream(host); // the callback's stream: in another context, which the test keeps
    const cuctx::LiveObjects before = cuctx::liveObjects();
    std::promise<void> gate;
    std::future<void> gone;
    {
        auto held = std::make_shared<HeldByCallback>(Context::create(Device::get(0)));
        gone = held->gone.promise.get_future();
        stream.hostCallback([held, opened = gate.get_future().share()] { opened.wait(); });
    } // from here only the callback holds them: they go when it does, on the driver's callback thread
    gate.set_value();
    SECTION("synchronize() cleans up after the callback")
    {
        stream.synchronize();
        CHECK(gone.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
    }
    SECTION("the next cuctx call cleans up")
    {
        REQUIRE(gone.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
        CHECK(Stream(host).priority() == 0);
    }
    CHECK(cuctx::liveObjects() == before);
    CHECK(errors.take().empty());
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_live_modules() == modulesBefore);
    CHECK(cuctx_fake_live_contexts() == contextsBefore + 1); // host
    CHECK(cuctx_fake_live_events() == beforeFake.events);
    CHECK(cuctx_fake_live_allocations() == beforeFake.allocations);
    CHECK(cuctx_fake_live_streams() == beforeFake.streams + 1); // stream
#endif
    (void)beforeFake;
}

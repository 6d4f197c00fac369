// SPDX-License-Identifier: MIT
// Fault injection: every driver call a representative workload makes is made to fail, once, each
// occurrence in turn. cuctx must report a clear error (a cuctx::Error naming a driver call) or,
// where the failure hits a destructor, log it and go on; it must leave the thread's stack as it
// was and leave nothing alive in the driver, but for what the failed call itself should have freed.

#include <catch2/catch.hpp>

#include "fake_driver.hpp"
#include "module_helpers.hpp"

#include "context/context_state.hpp"
#include "cuctx/cuctx.hpp"
#include "driver/driver_api.hpp"
#include "driver/driver_state.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

// Contexts, a guard, a module (JIT, lookup, attributes, the cache), a launch, streams, an event
// across contexts, buffers with copies, and a host callback.
void workload(const std::string& ptx)
{
    using namespace cuctx;
    Context a = Context::create(Device::get(0));
    Context p = Context::primary(Device::get(0));
    {
        ContextGuard g(a);
        ContextGuard inner(p);
    }
    const Module m = Module::fromPtx(a, ptx, {}, "kernels");
    const Function f = m.function("scale");
    (void)f.attributes();
    const Module cached = Module::cached(a, std::as_bytes(std::span(ptx.data(), ptx.size())));
    Stream s(a);
    Stream sp(p);
    Event e(a);
    DeviceBuffer in(a, 4096), out(p, 4096);
    in.fill32(1);
    launch(f, {.grid = {1, 1, 1}, .block = {32, 1, 1}, .stream = s.native()}, out.address(), in.address(), 2.0f, 1024u);
    e.record(s);
    sp.wait(e);
    out.copyFrom(in, sp);
    s.hostCallback([] {});
    sp.synchronize();
    s.synchronize();
    (void)out.download<float>();

    // The rest of what cuctx calls: device queries, context queries, the stack, module details,
    // event timing and handles, a green context.
    const Device device = Device::get(0);
    (void)device.properties();
    (void)device.memoryInfo();
    (void)device.primaryContextState();
    (void)a.flags();
    (void)a.apiVersion();
    (void)a.limit(CU_LIMIT_STACK_SIZE);
    (void)a.streamPriorityRange();
    (void)a.cacheConfig();
    (void)a.memoryInfo();
    a.synchronize();
    ContextStack::push(a); // a manual push: the workload itself must pop it when verify() throws
    try {
        ContextStack::verify();
    } catch (...) {
        (void)ContextStack::pop();
        throw;
    }
    (void)ContextStack::pop();
    (void)m.kernelNames();
    (void)m.global("counter");
    m.loadAllKernels();
    f.setMaxDynamicSharedMemory(1024);
    f.setCachePreference(CachePreference::l1);
    (void)f.maxActiveBlocksPerMultiprocessor(128);
    (void)f.maxPotentialBlockSize();
    (void)s.priority();
    (void)s.nonBlocking();
    (void)s.ready();
    Event t0(a, {.timing = true}), t1(a, {.timing = true});
    t0.record(s);
    t1.record(s);
    t1.synchronize();
    (void)t1.ready();
    (void)Event::elapsedMilliseconds(t0, t1);
    Event shared(a, {.interprocess = true});
    (void)shared.ipcHandle();
    (void)in.ipcHandle();
    e.recordContext(a);
    e.waitInContext(p);
    std::vector<unsigned> host(1024, 3u);
    in.upload(host.data(), 4096);
    in.downloadAsync(host.data(), 4096, s);
    in.uploadAsync(host.data(), 4096, s);
    in.fill32(2u, s);
    DeviceBuffer same(a, 4096);
    same.copyFrom(in, s); // within one context
    a.setLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 << 20);
    launch(m.function("empty"), {.grid = {2, 1, 1}, .block = {32, 1, 1}, .stream = s.native(), .cooperative = true});
    s.synchronize();
    (void)PeerAccess::matrix();
    (void)Module::loadingMode();
    const Context green = Context::green(device, 8);
    ContextGuard g(green);
}

struct Live {
    int contexts, primary, modules, streams, events, allocations;
    bool operator==(const Live&) const = default;
};

Live live()
{
    return {cuctx_fake_live_contexts(), cuctx_fake_primary_refcount(0), cuctx_fake_live_modules(),
            cuctx_fake_live_streams(),  cuctx_fake_live_events(),       cuctx_fake_live_allocations()};
}

std::map<std::string, long> callCounts()
{
    std::map<std::string, long> counts;
    // The fake counts most calls by symbol, versioned ones by field ("cuCtxCreate_v4"): take both.
    for (const cuctx::detail::DriverEntry& entry : cuctx::detail::driverEntries())
        for (const char* name : {entry.symbol, entry.field})
            counts[name] = cuctx_fake_calls(name);
    return counts;
}

CUcontext current()
{
    CUcontext c = nullptr;
    (void)cuctx::detail::api().cuCtxGetCurrent(&c);
    return c;
}

// Calls whose failure can leave something of the driver's alive (it was asked to free it and said
// no; or cuctx could not enter the context to free it in): a leak is then the driver's, not cuctx's.
const std::set<std::string> kMayLeak = {
    "cuCtxDestroy", "cuDevicePrimaryCtxRelease", "cuModuleUnload",  "cuStreamDestroy",  "cuEventDestroy",
    "cuMemFree",    "cuCtxPushCurrent",          "cuCtxGetCurrent", "cuGreenCtxDestroy"};

} // namespace

TEST_CASE("every driver call of a workload fails once, in turn: clear errors, the stack restored, no leaks", "[faults]")
{
    const std::string ptx = cuctx::test::readText(cuctx::test::testPtxPath());
    const auto previousLevel = cuctx::logLevel();
    cuctx::setLogLevel(cuctx::LogLevel::off); // destructors log what they cannot throw
    (void)cuctx::Driver::load();              // loading's own calls are not part of the workload
    const Live baseline = live();
    const long liveStates = cuctx::detail::liveContexts();
    const cuctx::LiveObjects objects = cuctx::liveObjects();
    const auto before = callCounts();
    workload(ptx); // clean: learn which calls it makes, and how often
    const auto after = callCounts();
    REQUIRE(live() == baseline);
    int injected = 0, thrown = 0, absorbed = 0;
    for (const auto& [symbol, count] : after) {
        const long calls = count - before.at(symbol);
        for (long nth = 1; nth <= calls; ++nth) {
            INFO("failing call " << nth << " of " << calls << " to " << symbol);
            const Live start = live();
            cuctx_fake_fail(symbol.c_str(), CUDA_ERROR_UNKNOWN, static_cast<int>(nth));
            ++injected;
            try {
                workload(ptx);
                ++absorbed; // the failure hit a destructor, or a call whose failure cuctx tolerates
            } catch (const cuctx::Error& e) {
                ++thrown;
                const std::string what = e.what();
                CHECK_FALSE(e.call().empty());
                CHECK(what.find("failed") != std::string::npos);
            } catch (const std::exception& e) {
                FAIL("not a cuctx::Error: " << e.what());
            }
            if (symbol == "cuCtxPopCurrent") {
                // A pop the driver refused leaves its context on the driver's stack: nothing cuctx
                // can do; clear it for the next round.
                CUcontext c = nullptr;
                while (current() != nullptr)
                    (void)cuctx::detail::api().cuCtxPopCurrent(&c);
            }
            CHECK(current() == nullptr);
            CHECK(cuctx::detail::liveContexts() == liveStates);
            CHECK(cuctx::liveObjects() == objects); // cuctx's own count: every object it made is gone
            if (kMayLeak.count(symbol) == 0)
                CHECK(live() == start);
        }
    }
    cuctx_fake_reset(); // forget any leftovers the tolerated leaks made
    cuctx::setLogLevel(previousLevel);
    std::string uncovered;
    for (const cuctx::detail::DriverEntry& entry : cuctx::detail::driverEntries())
        if (after.at(entry.symbol) == before.at(entry.symbol) && after.at(entry.field) == before.at(entry.field)) {
            uncovered += ' ';
            uncovered += entry.field;
        }
    WARN(injected << " failures injected: " << thrown << " reported as errors, " << absorbed
                  << " absorbed; entries the workload does not reach on this driver:" << uncovered);
    CHECK(injected > 100);
    CHECK(thrown > 0);
}

TEST_CASE("a failed push, inline or out of line, leaves the record, the driver and green ownership as they were",
          "[faults][record]")
{
    using namespace cuctx;
    const auto current = [] {
        CUcontext c = nullptr;
        REQUIRE(detail::api().cuCtxGetCurrent(&c) == CUDA_SUCCESS);
        return c;
    };
    const Context a = Context::create(Device::get(0));
    const Context b = Context::create(Device::get(0));
    const Context green = Context::green(Device::get(0), 8);
    bool busyElsewhere = true;
    std::thread([&] {
        {
            ContextGuard warm(a);
        } // registered: the next guard pushes inline
        ContextGuard outer(b);
        const auto failNextPush = [] { cuctx_fake_fail("cuCtxPushCurrent", CUDA_ERROR_OUT_OF_MEMORY, 1); };
        const auto unchanged = [&] {
            CHECK(ContextStack::depth() == 1);
            CHECK(current() == b.native());
            CHECK_FALSE(ContextStack::drift().has_value());
            CHECK(a.threadsUsing().empty());
            CHECK(green.threadsUsing().empty());
        };
        failNextPush();
        CHECK_THROWS_AS(ContextGuard(a), Error); // inline
        unchanged();
        failNextPush();
        CHECK_THROWS_AS(ContextGuard(a, verifyCurrent), Error); // out of line
        unchanged();
        failNextPush();
        CHECK_THROWS_AS(ContextStack::push(a), Error);
        unchanged();
        failNextPush();
        CHECK_THROWS_AS(ContextGuard(green), Error); // claims the green context first: must give it back
        unchanged();
        {
            ContextGuard g(a); // the next push works
            CHECK(current() == a.native());
        }
        unchanged();
    }).join();
    std::thread([&] {
        try {
            ContextGuard g(green);
            busyElsewhere = false;
        } catch (const Error&) {
        }
    }).join();
    CHECK_FALSE(busyElsewhere);
}

namespace {

// Run inside the entering thread's push (cuctx_fake_on_call): lets the thread that holds the context's
// last use end it, and waits until it has.
struct LastUseEnds {
    std::mutex mutex;
    std::condition_variable changed;
    bool leave = false; // the holder may end its guard
    bool left = false;  // it has
    static void during(void* self)
    {
        auto& s = *static_cast<LastUseEnds*>(self);
        std::unique_lock lock(s.mutex);
        s.leave = true;
        s.changed.notify_all();
        s.changed.wait(lock, [&] { return s.left; });
    }
};

} // namespace

TEST_CASE("a push that fails while the orphaned context's last use ends elsewhere destroys the context",
          "[faults][record]")
{
    const std::string ptx = cuctx::test::readText(cuctx::test::testPtxPath());
    // An orphaned context (its last handle gone) is entered through a handle that counts nothing, a
    // Module::cached reference's: inline, since it is not green. While the push is in flight, the
    // thread that held the context's last use ends it and, seeing this thread's entry, leaves the
    // destruction to it; then the push fails. Taking the entry back must end the context. At trace
    // level the inline push is diverted and the out-of-line code pushes on the same entry.
    using namespace cuctx;
    const bool diverted = GENERATE(false, true);
    const auto previousLevel = logLevel();
    if (diverted)
        setLogLevel(LogLevel::trace);
    const long destroyedBefore = cuctx_fake_calls("cuCtxDestroy");
    const int liveBefore = cuctx_fake_live_contexts();
    const Context other = Context::create(Device::get(0));
    {
        ContextGuard warm(other); // registers this thread: the guard below goes inline
    }
    std::optional<Context> context(Context::create(Device::get(0)));
    const Context& uncounted = Module::cached(*context, ModuleImage::fromPtx(ptx)).context();
    LastUseEnds sync;
    bool holding = false;
    std::thread holder([&] {
        std::optional<ContextGuard> guard(std::in_place, *context);
        {
            std::unique_lock lock(sync.mutex);
            holding = true;
            sync.changed.notify_all();
            sync.changed.wait(lock, [&] { return sync.leave; });
        }
        guard.reset(); // the last use: the other thread's entry is there, so it is left to that
        std::lock_guard lock(sync.mutex);
        sync.left = true;
        sync.changed.notify_all();
    });
    {
        std::unique_lock lock(sync.mutex);
        sync.changed.wait(lock, [&] { return holding; });
    }
    context.reset(); // the last handle: orphaned, in use on the holder
    CHECK(cuctx_fake_calls("cuCtxDestroy") == destroyedBefore);
    cuctx_fake_on_call("cuCtxPushCurrent", &LastUseEnds::during, &sync);
    cuctx_fake_fail("cuCtxPushCurrent", CUDA_ERROR_OUT_OF_MEMORY, 1);
    CHECK_THROWS_AS(ContextGuard(uncounted), Error);
    holder.join();
    setLogLevel(previousLevel);
    CHECK(ContextStack::depth() == 0);
    CHECK(cuctx_fake_calls("cuCtxDestroy") == destroyedBefore + 1);
    CHECK(cuctx_fake_live_contexts() == liveBefore + 1); // `other` only
}

TEST_CASE("a diverted inline push of an orphaned context keeps it alive until its last use ends", "[faults][record]")
{
    const std::string ptx = cuctx::test::readText(cuctx::test::testPtxPath());
    // At trace level the inline guard's push is diverted: the out-of-line code pushes on the inline
    // entry. The context, orphaned and entered through a handle that counts nothing, must stay alive
    // through it and be destroyed once, when the last use ends.
    using namespace cuctx;
    const long destroyedBefore = cuctx_fake_calls("cuCtxDestroy");
    const Context other = Context::create(Device::get(0));
    {
        ContextGuard warm(other);
    }
    std::optional<Context> context(Context::create(Device::get(0)));
    const CUcontext handle = context->native();
    const Context& uncounted = Module::cached(*context, ModuleImage::fromPtx(ptx)).context();
    std::optional<ContextGuard> holder(std::in_place, *context);
    {
        ContextGuard below(other); // the context is not on top: the next guard switches
        context.reset();           // the last handle: orphaned, in use through `holder`
        const auto previousLevel = logLevel();
        setLogLevel(LogLevel::trace);
        {
            ContextGuard g(uncounted);
            CHECK(ContextStack::current() == handle);
            CHECK(cuctx_fake_calls("cuCtxDestroy") == destroyedBefore);
        }
        setLogLevel(previousLevel);
        CHECK(ContextStack::current() == other.native());
        CHECK(cuctx_fake_calls("cuCtxDestroy") == destroyedBefore);
    }
    holder.reset(); // the last use
    CHECK(cuctx_fake_calls("cuCtxDestroy") == destroyedBefore + 1);
}

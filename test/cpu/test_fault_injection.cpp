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

#include <map>
#include <set>
#include <string>
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
    launch(f, {.grid = {1, 1, 1}, .block = {32, 1, 1}, .stream = s.native()}, out.address(), in.address(), 2.0f,
           1024u);
    e.record(s);
    sp.wait(e);
    out.copyFrom(in, sp);
    s.hostCallback([] {});
    sp.synchronize();
    s.synchronize();
    (void)out.download<float>();
}

struct Live {
    int contexts, primary, modules, streams, events, allocations;
    bool operator==(const Live&) const = default;
};

Live live()
{
    return {cuctx_fake_live_contexts(), cuctx_fake_primary_refcount(0), cuctx_fake_live_modules(),
            cuctx_fake_live_streams(), cuctx_fake_live_events(), cuctx_fake_live_allocations()};
}

std::map<std::string, long> callCounts()
{
    std::map<std::string, long> counts;
    for (const cuctx::detail::DriverEntry& entry : cuctx::detail::driverEntries())
        counts[entry.symbol] = cuctx_fake_calls(entry.symbol);
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
const std::set<std::string> kMayLeak = {"cuCtxDestroy",    "cuDevicePrimaryCtxRelease", "cuModuleUnload",
                                        "cuStreamDestroy", "cuEventDestroy",            "cuMemFree",
                                        "cuCtxPushCurrent", "cuCtxGetCurrent",          "cuGreenCtxDestroy"};

} // namespace

TEST_CASE("every driver call of a workload fails once, in turn: clear errors, the stack restored, no leaks",
          "[faults]")
{
    const std::string ptx = cuctx::test::readText(cuctx::test::testPtxPath());
    const auto previousLevel = cuctx::logLevel();
    cuctx::setLogLevel(cuctx::LogLevel::off); // destructors log what they cannot throw
    (void)cuctx::Driver::load(); // loading's own calls are not part of the workload
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
    WARN(injected << " failures injected: " << thrown << " reported as errors, " << absorbed << " absorbed");
    CHECK(injected > 100);
    CHECK(thrown > 0);
}

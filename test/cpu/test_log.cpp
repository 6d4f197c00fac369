// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "fake_env.hpp"
#include "log/log_level.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/device.hpp"
#include "cuctx/log.hpp"

#include <mutex>
#include <string>
#include <vector>

namespace {

struct Captured {
    std::mutex mutex;
    std::vector<std::pair<cuctx::LogLevel, std::string>> lines;
};

// Sends every message to a new Captured (as trace: the switches' log lines are all trace).
std::shared_ptr<Captured> captureSwitches()
{
    auto captured = std::make_shared<Captured>();
    cuctx::setLogSink([captured](cuctx::LogLevel, std::string_view message) {
        std::lock_guard lock(captured->mutex);
        captured->lines.emplace_back(cuctx::LogLevel::trace, std::string(message));
    });
    return captured;
}

struct Switches {
    int pushes = 0;
    int pops = 0;
};

// Stops capturing and counts the pushes and pops logged.
Switches countSwitches(Captured& captured)
{
    cuctx::setLogSink({});
    std::lock_guard lock(captured.mutex);
    Switches n;
    for (const auto& [level, line] : captured.lines) {
        n.pushes += line.find(": push context") != std::string::npos ? 1 : 0;
        n.pops += line.find(": pop context") != std::string::npos ? 1 : 0;
    }
    return n;
}

} // namespace

TEST_CASE("an embedding program receives cuctx's log through its own sink", "[log]")
{
    cuctx::test::FakeEnvironment env;
    auto captured = std::make_shared<Captured>();
    cuctx::setLogSink([captured](cuctx::LogLevel level, std::string_view message) {
        std::lock_guard lock(captured->mutex);
        captured->lines.emplace_back(level, std::string(message));
    });
    const auto previous = cuctx::logLevel();
    cuctx::setLogLevel(cuctx::LogLevel::warn);

    // A pop that returns the wrong context inside memoryInfo is logged as an error, not thrown.
    cuctx_fake_fail("cuCtxPopCurrent", CUDA_ERROR_INVALID_CONTEXT, 1);
    (void)cuctx::Device::get(0).memoryInfo();

    cuctx::setLogSink({});
    cuctx::setLogLevel(previous);
    std::lock_guard lock(captured->mutex);
    REQUIRE(captured->lines.size() == 1);
    CHECK(captured->lines[0].first == cuctx::LogLevel::error);
    CHECK_THAT(captured->lines[0].second, Catch::Contains("cuCtxPopCurrent gave CUDA_ERROR_INVALID_CONTEXT"));
}

TEST_CASE("messages below the level are not delivered", "[log]")
{
    cuctx::test::FakeEnvironment env;
    int delivered = 0;
    cuctx::setLogSink([&delivered](cuctx::LogLevel, std::string_view) { ++delivered; });
    const auto previous = cuctx::logLevel();
    cuctx::setLogLevel(cuctx::LogLevel::critical);
    cuctx_fake_fail("cuCtxPopCurrent", CUDA_ERROR_INVALID_CONTEXT, 1);
    (void)cuctx::Device::get(0).memoryInfo();
    cuctx::setLogSink({});
    cuctx::setLogLevel(previous);
    CHECK(delivered == 0);
}

TEST_CASE("at trace level every switch is logged, including those the inline path would make", "[log]")
{
    cuctx::Context home = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::Context other = cuctx::Context::create(cuctx::Device::get(0));
    {
        cuctx::ContextGuard warm(other);
    } // the next switches to `other` qualify for the inline path
    auto captured = captureSwitches();
    const auto previous = cuctx::logLevel();
    cuctx::setLogLevel(cuctx::LogLevel::trace);
    for (int i = 0; i < 3; ++i) {
        cuctx::ContextGuard g(other);
        CHECK(g.switched());
    }
    cuctx::setLogLevel(previous);
    {
        cuctx::ContextGuard quiet(other); // back below trace: nothing logged
    }
    const Switches logged = countSwitches(*captured);
    CHECK(logged.pushes == 3);
    CHECK(logged.pops == 3);
}

TEST_CASE("a guard whose scope spans a change of log level enters and leaves cleanly", "[log]")
{
    cuctx::Context home = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::Context other = cuctx::Context::create(cuctx::Device::get(0));
    {
        cuctx::ContextGuard warm(other);
    } // `other` is now this thread's recent context
    const CUcontext before = cuctx::ContextStack::current();
    const std::size_t depth = cuctx::ContextStack::depth();
    auto captured = captureSwitches();
    const auto previous = cuctx::logLevel();
    {
        cuctx::ContextGuard g(other); // entered inline, unlogged
        CHECK(g.switched());
        CHECK(cuctx::ContextStack::current() == other.native());
        cuctx::setLogLevel(cuctx::LogLevel::trace); // its exit now takes the logged path
    }
    CHECK(cuctx::ContextStack::current() == before);
    CHECK(cuctx::ContextStack::depth() == depth);
    {
        cuctx::ContextGuard g(other); // entered through the logged path
        CHECK(cuctx::ContextStack::current() == other.native());
        cuctx::setLogLevel(previous); // its exit is inline again
    }
    CHECK(cuctx::ContextStack::current() == before);
    CHECK(cuctx::ContextStack::depth() == depth);
    CHECK_NOTHROW(cuctx::ContextStack::verify());
    const Switches logged = countSwitches(*captured);
    CHECK(logged.pushes == 1);
    CHECK(logged.pops == 1);
}

TEST_CASE("CUCTX_LOG_LEVEL is read in any case, and only a level is one", "[log]")
{
    using cuctx::LogLevel;
    using cuctx::detail::parseLogLevel;
    CHECK(parseLogLevel("trace") == LogLevel::trace);
    CHECK(parseLogLevel("TRACE") == LogLevel::trace);
    CHECK(parseLogLevel("Debug") == LogLevel::debug);
    CHECK(parseLogLevel("INFO") == LogLevel::info);
    CHECK(parseLogLevel("Warning") == LogLevel::warn);
    CHECK(parseLogLevel("err") == LogLevel::error);
    CHECK(parseLogLevel("CRITICAL") == LogLevel::critical);
    CHECK(parseLogLevel("Off") == LogLevel::off);
    CHECK_FALSE(parseLogLevel("garbage"));
    CHECK_FALSE(parseLogLevel(""));
    CHECK_FALSE(parseLogLevel("trace "));
    CHECK_FALSE(parseLogLevel(std::string_view("off\0x", 5)));
}

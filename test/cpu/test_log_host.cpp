// SPDX-License-Identifier: MIT
// cuctx's logger in a host program that uses spdlog itself: it is in spdlog's registry, and a
// logger the host registered under cuctx's name first is used at the host's level.

#include <catch2/catch.hpp>

#include "log/log.hpp"

#include "cuctx/log.hpp"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>

namespace {

// Restores cuctx's own stderr logger and level when a test ends.
struct RestoreLogging {
    cuctx::LogLevel level = cuctx::logLevel();
    RestoreLogging() = default;
    RestoreLogging(const RestoreLogging&) = delete;
    RestoreLogging& operator=(const RestoreLogging&) = delete;
    ~RestoreLogging()
    {
        spdlog::drop("cuctx");
        cuctx::setLogSink({});
        cuctx::setLogLevel(level);
    }
};

} // namespace

TEST_CASE("cuctx's logger is in spdlog's registry, where spdlog::set_level reaches it", "[log]")
{
    RestoreLogging restore;
    spdlog::drop("cuctx");
    cuctx::setLogSink({}); // cuctx's own stderr logger, made anew
    spdlog::logger& used = cuctx::detail::logger();
    const auto registered = spdlog::get("cuctx");
    REQUIRE(registered != nullptr);
    CHECK(registered.get() == &used);
    CHECK(used.level() == spdlog::level::trace); // cuctx's own level decides what it logs

    registered->set_level(spdlog::level::off);
    spdlog::set_level(spdlog::level::err); // the host sets every registered logger's level
    CHECK(cuctx::detail::logger().level() == spdlog::level::err);
    spdlog::set_level(spdlog::level::info);
}

TEST_CASE("a logger the host registered under cuctx's name keeps the host's level", "[log]")
{
    RestoreLogging restore;
    spdlog::drop("cuctx");
    std::ostringstream out;
    auto host = std::make_shared<spdlog::logger>("cuctx", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
    host->set_pattern("%l %v");
    host->set_level(spdlog::level::err);
    spdlog::register_logger(host);

    cuctx::setLogSink({}); // back to "stderr": the host's registered logger, as at cuctx's first log line
    cuctx::setLogLevel(cuctx::LogLevel::warn);
    cuctx::detail::logWarn("below the host's level");
    cuctx::detail::logError("at the host's level");
    host->flush();

    CHECK(&cuctx::detail::logger() == host.get());
    CHECK(host->level() == spdlog::level::err);
    CHECK(out.str().find("below the host's level") == std::string::npos);
    CHECK(out.str().find("at the host's level") != std::string::npos);

    // cuctx's own level still filters first (CUCTX_LOG_LEVEL, setLogLevel).
    cuctx::setLogLevel(cuctx::LogLevel::off);
    cuctx::detail::logError("cuctx's level is off");
    host->flush();
    CHECK(out.str().find("cuctx's level is off") == std::string::npos);
}

// SPDX-License-Identifier: MIT
#include "log/log.hpp"

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace cuctx::detail {
namespace {

static_assert(static_cast<int>(LogLevel::trace) == spdlog::level::trace);
static_assert(static_cast<int>(LogLevel::off) == spdlog::level::off);

int levelFromEnvironment()
{
    const char* env = std::getenv("CUCTX_LOG_LEVEL");
    if (env == nullptr || env[0] == '\0')
        return static_cast<int>(LogLevel::warn);
    if (const auto level = parseLogLevel(env))
        return static_cast<int>(*level);
    // Once: this runs when cuctx is loaded. Through the logger, whose own level is trace.
    logger().warn("CUCTX_LOG_LEVEL='{}' is no log level (trace, debug, info, warn, error, critical, off, in any "
                  "case): logging at warn",
                  env);
    return static_cast<int>(LogLevel::warn);
}

// Forwards formatted messages to the embedding program's callback. With no mutex of its own: the
// program's sink is thread-safe (log.hpp says so), and cuctx never calls it holding a lock, since it
// may log through cuctx again or take a lock that a thread calling cuctx holds.
class CallbackSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
public:
    explicit CallbackSink(LogSink callback) : sink_(std::move(callback)) {}

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override
    {
        sink_(static_cast<LogLevel>(msg.level), std::string_view(msg.payload.data(), msg.payload.size()));
    }
    void flush_() override {}

private:
    LogSink sink_;
};

std::shared_ptr<spdlog::logger> makeStderrLogger()
{
    // A logger that the program registered under our name before we first logged is used as is, at
    // the level the program gave it.
    if (auto existing = spdlog::get("cuctx"))
        return existing;
    auto made = std::make_shared<spdlog::logger>("cuctx", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    made->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [cuctx] [%l] [tid %t] %v");
    made->set_level(spdlog::level::trace); // cuctx filters by its own level (CUCTX_LOG_LEVEL) first
    // In spdlog's registry, so that spdlog::get("cuctx") and spdlog::set_level reach it. Where the
    // program registers the name at this very moment, its logger is the one used.
    try {
        spdlog::register_logger(made);
    } catch (const spdlog::spdlog_ex&) {
        if (auto existing = spdlog::get("cuctx"))
            return existing;
    }
    return made;
}

struct LoggerSlot {
    std::mutex mutex;
    std::shared_ptr<spdlog::logger> logger;
};

LoggerSlot& slot()
{
    static auto* s = new LoggerSlot; // never destroyed: threads may log during exit
    return *s;
}

} // namespace

std::atomic<int> g_logLevel{levelFromEnvironment()};

constinit std::atomic<void (*)() noexcept> g_levelListener{nullptr};

void setLogLevelListener(void (*listener)() noexcept) noexcept
{
    g_levelListener.store(listener, std::memory_order_release);
}

spdlog::logger& logger()
{
    LoggerSlot& s = slot();
    std::lock_guard lock(s.mutex);
    if (!s.logger)
        s.logger = makeStderrLogger();
    return *s.logger; // kept alive: a replaced logger is retired, never destroyed while in use
}

} // namespace cuctx::detail

namespace cuctx {

void setLogLevel(LogLevel level) noexcept
{
    detail::g_logLevel.store(static_cast<int>(level), std::memory_order_relaxed);
    if (const auto listener = detail::g_levelListener.load(std::memory_order_acquire))
        listener(); // the guard's dispatch: at trace level every switch goes out of line, which logs it
}

LogLevel logLevel() noexcept
{
    return static_cast<LogLevel>(detail::g_logLevel.load(std::memory_order_relaxed));
}

void setLogSink(LogSink sink)
{
    auto& s = detail::slot();
    std::shared_ptr<spdlog::logger> next;
    if (sink) {
        next = std::make_shared<spdlog::logger>("cuctx", std::make_shared<detail::CallbackSink>(std::move(sink)));
        next->set_pattern("%v");
        next->set_level(spdlog::level::trace); // cuctx filters by its own level first
    } else {
        next = detail::makeStderrLogger();
    }
    std::lock_guard lock(s.mutex);
    // A thread may be logging through the old logger right now: keep it alive for the process.
    static auto* retired = new std::vector<std::shared_ptr<spdlog::logger>>;
    if (s.logger)
        retired->push_back(std::move(s.logger));
    s.logger = std::move(next);
}

} // namespace cuctx

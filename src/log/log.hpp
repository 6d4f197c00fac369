// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// cuctx's one named logger ("cuctx"). A disabled level costs one relaxed atomic load.

#include "cuctx/log.hpp"
#include "log/log_level.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <string_view>
#include <utility>

namespace cuctx::detail {

extern std::atomic<int> g_logLevel; // a LogLevel value

inline bool logEnabled(LogLevel level) noexcept
{
    return static_cast<int>(level) >= g_logLevel.load(std::memory_order_relaxed);
}

spdlog::logger& logger();

/// Called after every change of the level; set once, during static initialisation, by the layer that
/// needs to know (the guard's dispatch, src/context/guard_dispatch.cpp).
extern std::atomic<void (*)() noexcept> g_levelListener;
void setLogLevelListener(void (*listener)() noexcept) noexcept;

/// A log argument made only when its line is written, inside logAt's try: a log call's arguments are evaluated whether
/// or not its level is on, and one that allocates would cost every call an allocation, and could throw std::bad_alloc
/// out of a destructor. `make` returns something convertible to std::string_view (a std::string).
template <typename Make>
struct Lazy {
    Make make;
};
template <typename Make>
Lazy(Make) -> Lazy<Make>;

// Never throws: a line that cannot be written (no memory for the logger, made at its first use, or
// for the line; a sink that throws) is lost, and the caller, often a destructor, goes on.
template <typename... Args>
void logAt(LogLevel level, fmt::format_string<Args...> format, Args&&... args) noexcept
{
    if (logEnabled(level)) [[unlikely]] {
        try {
            logger().log(static_cast<spdlog::level::level_enum>(level), format, std::forward<Args>(args)...);
        } catch (...) {
        }
    }
}

template <typename... Args>
void logTrace(fmt::format_string<Args...> format, Args&&... args) noexcept
{
    logAt(LogLevel::trace, format, std::forward<Args>(args)...);
}
template <typename... Args>
void logDebug(fmt::format_string<Args...> format, Args&&... args) noexcept
{
    logAt(LogLevel::debug, format, std::forward<Args>(args)...);
}
template <typename... Args>
void logWarn(fmt::format_string<Args...> format, Args&&... args) noexcept
{
    logAt(LogLevel::warn, format, std::forward<Args>(args)...);
}
template <typename... Args>
void logError(fmt::format_string<Args...> format, Args&&... args) noexcept
{
    logAt(LogLevel::error, format, std::forward<Args>(args)...);
}

} // namespace cuctx::detail

// Plain "{}" only. (Not derived from formatter<string_view>: inlined at -O3, g++ 12 warns a false
// -Wstringop-overflow in its parse.)
template <typename Make>
struct fmt::formatter<cuctx::detail::Lazy<Make>> {
    constexpr auto parse(fmt::format_parse_context& ctx) { return ctx.begin(); }
    template <typename FormatContext>
    auto format(const cuctx::detail::Lazy<Make>& lazy, FormatContext& ctx) const
    {
        const auto text = lazy.make();
        return fmt::format_to(ctx.out(), "{}", std::string_view(text));
    }
};

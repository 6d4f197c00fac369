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

template <typename... Args>
void logAt(LogLevel level, fmt::format_string<Args...> format, Args&&... args)
{
    if (logEnabled(level)) [[unlikely]]
        logger().log(static_cast<spdlog::level::level_enum>(level), format, std::forward<Args>(args)...);
}

template <typename... Args>
void logTrace(fmt::format_string<Args...> format, Args&&... args)
{
    logAt(LogLevel::trace, format, std::forward<Args>(args)...);
}
template <typename... Args>
void logDebug(fmt::format_string<Args...> format, Args&&... args)
{
    logAt(LogLevel::debug, format, std::forward<Args>(args)...);
}
template <typename... Args>
void logWarn(fmt::format_string<Args...> format, Args&&... args)
{
    logAt(LogLevel::warn, format, std::forward<Args>(args)...);
}
template <typename... Args>
void logError(fmt::format_string<Args...> format, Args&&... args)
{
    logAt(LogLevel::error, format, std::forward<Args>(args)...);
}

} // namespace cuctx::detail

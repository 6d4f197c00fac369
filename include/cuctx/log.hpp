// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx's logging controls. The functions are thread-safe. (spdlog stays out of public headers: an
/// embedding program hands in a sink callback, or registers its own spdlog logger named "cuctx"
/// before cuctx logs.)

#include "cuctx/export.hpp"
#include <functional>
#include <string_view>

namespace cuctx {

/// How much cuctx logs, from everything (trace) to nothing (off); spdlog's levels.
enum class LogLevel { trace, debug, info, warn, error, critical, off };

/// The level below which cuctx logs nothing. Starts from $CUCTX_LOG_LEVEL (trace, debug, info,
/// warn, error, critical, off, in any case; default warn; anything else is warned about once and
/// means warn). At trace, every context transition is logged (and guards take their out-of-line
/// path, which logs them).
CUCTX_API void setLogLevel(LogLevel level) noexcept;
/// The level set by setLogLevel, or read from $CUCTX_LOG_LEVEL.
CUCTX_API LogLevel logLevel() noexcept;

/// Receives each message cuctx logs (already formatted, without a newline). Called from the thread
/// that logs, possibly from many threads at once: the sink must be thread-safe. cuctx holds no lock
/// of its own while it calls the sink, so the sink may call back into cuctx (liveObjects(),
/// processReport(), Context::threadsUsing()) or take locks that threads calling cuctx hold.
///
/// \par Threading
/// Reentrant, and called on several threads at once. A sink that setLogSink() replaced may still
/// receive a message that another thread was logging meanwhile, and cuctx keeps it (never destroys
/// it) until the process ends: what it captures must stay valid that long.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

/// Sends cuctx's log to `sink` instead of stderr; an empty sink restores stderr.
CUCTX_API void setLogSink(LogSink sink);

} // namespace cuctx

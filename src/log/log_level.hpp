#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// Reading CUCTX_LOG_LEVEL, apart from the logger (no spdlog here), for tests and fuzzers.

#include "cuctx/log.hpp"

#include <optional>
#include <string_view>

namespace cuctx::detail {

/// A CUCTX_LOG_LEVEL value: trace, debug, info, warn (or warning), error (or err), critical or off,
/// in any case; nothing for anything else.
std::optional<LogLevel> parseLogLevel(std::string_view text) noexcept;

} // namespace cuctx::detail

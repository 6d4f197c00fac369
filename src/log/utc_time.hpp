// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The wall-clock time as reports and fault records show it.

#include <ctime>
#include <string>

namespace cuctx::detail {

/// Now, in UTC, as ISO 8601 to the second: "2026-12-03T18:05:50Z".
inline std::string utcNow()
{
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

} // namespace cuctx::detail

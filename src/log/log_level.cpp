#include "log/log_level.hpp"

#include <cctype>
#include <cstddef>
#include <utility>

namespace cuctx::detail {

std::optional<LogLevel> parseLogLevel(std::string_view text) noexcept
{
    constexpr std::pair<std::string_view, LogLevel> kNames[] = {
        {"trace", LogLevel::trace}, {"debug", LogLevel::debug},       {"info", LogLevel::info},
        {"warn", LogLevel::warn},   {"warning", LogLevel::warn},      {"error", LogLevel::error},
        {"err", LogLevel::error},   {"critical", LogLevel::critical}, {"off", LogLevel::off},
    };
    for (const auto& [name, level] : kNames) {
        if (text.size() != name.size())
            continue;
        bool same = true;
        for (std::size_t i = 0; i < name.size() && same; ++i)
            same = std::tolower(static_cast<unsigned char>(text[i])) == name[i];
        if (same)
            return level;
    }
    return std::nullopt;
}

} // namespace cuctx::detail

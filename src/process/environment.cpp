#include "process/environment.hpp"

#include <charconv>

namespace cuctx::detail {
namespace {

bool allDigits(std::string_view text) noexcept
{
    if (text.empty())
        return false;
    for (const char c : text)
        if (c < '0' || c > '9')
            return false;
    return true;
}

} // namespace

bool isVisibleDeviceEntry(std::string_view entry) noexcept
{
    if (entry.starts_with("GPU-") || entry.starts_with("MIG-"))
        return entry.size() > 4;
    return allDigits(entry);
}

VisibleDevices parseVisibleDevices(std::string_view value)
{
    VisibleDevices v;
    std::size_t pos = 0;
    while (true) {
        const std::size_t comma = value.find(',', pos);
        v.entries.emplace_back(
            value.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
        if (comma == std::string_view::npos)
            break;
        pos = comma + 1;
    }
    for (std::size_t i = 0; i < v.entries.size(); ++i) {
        if (!isVisibleDeviceEntry(v.entries[i])) {
            v.stoppedAt = i;
            break;
        }
        v.used.push_back(v.entries[i]);
    }
    return v;
}

std::optional<int> parseLocalRank(std::string_view text) noexcept
{
    int value = 0;
    if (!allDigits(text))
        return std::nullopt;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

std::optional<std::uint64_t> parseCacheMaxSize(std::string_view text) noexcept
{
    std::uint64_t value = 0;
    if (!allDigits(text))
        return std::nullopt;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

bool cacheDisabled(std::string_view text) noexcept
{
    return text == "1";
}

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#include "format/report_format.hpp"

#include <cstdio>

namespace cuctx::detail {

std::string gibText(std::size_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return text;
}

std::string bytesText(std::size_t bytes)
{
    static const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    auto value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    if (unit == 0 || value == static_cast<double>(static_cast<long long>(value)))
        std::snprintf(text, sizeof text, "%.0f %s", value, units[unit]);
    else
        std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
    return text;
}

std::string wrapText(const std::string& text, std::size_t width, std::size_t indent)
{
    std::string out;
    std::size_t column = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t space = text.find(' ', pos);
        const std::size_t end = space == std::string::npos ? text.size() : space;
        const std::size_t length = end - pos;
        if (column > indent && column + 1 + length > width) {
            out += '\n';
            out.append(indent, ' ');
            column = indent;
        } else if (pos > 0) {
            out += ' ';
            ++column;
        }
        out.append(text, pos, length);
        column += length;
        pos = end + 1;
    }
    return out;
}

} // namespace cuctx::detail

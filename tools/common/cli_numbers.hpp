#pragma once

// CLI11 validators for the tools' numeric options: whole numbers in decimal only (CLI11's own
// conversion takes "010" as octal and "-1" as 2^64-1 for an unsigned option), checked against a
// range before CLI11 converts them, and real numbers that must be finite (CLI::Range passes NaN).

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <string>

namespace cuctx::tools {

/// A whole number from `lo` to `hi`, written in decimal. The text is rewritten to its canonical
/// form ("007" to "7") so that CLI11's conversion, which reads a leading 0 as octal, agrees.
inline CLI::Validator wholeNumber(long long lo, long long hi)
{
    const std::string range = "from " + std::to_string(lo) + " to " + std::to_string(hi);
    return CLI::Validator(
        [lo, hi, range](std::string& text) -> std::string {
            long long value = 0;
            const char* end = text.data() + text.size();
            const auto [stop, ec] = std::from_chars(text.data(), end, value);
            if (ec == std::errc::invalid_argument || stop != end)
                return "'" + text + "' is not a whole number (" + range + ")";
            if (ec == std::errc::result_out_of_range || value < lo || value > hi)
                return text + " is out of range: " + range;
            text = std::to_string(value);
            return {};
        },
        "N (" + range + ")");
}

/// A finite real number from `lo` to `hi` ("nan" and "inf" are refused).
inline CLI::Validator realNumber(double lo, double hi)
{
    auto show = [](double v) {
        char text[32];
        const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
        return std::string(text, ec == std::errc{} ? end : text);
    };
    const std::string range = "from " + show(lo) + " to " + show(hi);
    return CLI::Validator(
        [lo, hi, range](std::string& text) -> std::string {
            double value = 0;
            const char* end = text.data() + text.size();
            const auto [stop, ec] = std::from_chars(text.data(), end, value);
            if (ec != std::errc{} || stop != end || !std::isfinite(value))
                return "'" + text + "' is not a finite number (" + range + ")";
            if (value < lo || value > hi)
                return text + " is out of range: " + range;
            return {};
        },
        "X (" + range + ")");
}

} // namespace cuctx::tools

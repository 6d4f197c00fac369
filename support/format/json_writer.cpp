// SPDX-License-Identifier: MIT
#include "format/json_writer.hpp"

#include "format/printable.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace cuctx::detail {

std::string jsonQuote(std::string_view text)
{
    std::string out = "\"";
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (static_cast<unsigned char>(c) >= 0x80) {
            const std::size_t length = utf8Sequence(text.substr(i));
            if (length == 0) {
                out += "\\ufffd"; // a byte that is no UTF-8: U+FFFD, the replacement character
                ++i;
            } else if (startsWithC1(text.substr(i))) {
                // C1 controls (U+0080-U+009F): JSON allows them raw, but some terminals obey them.
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
                out += escaped;
                i += 2;
            } else {
                out.append(text.substr(i, length));
                i += length;
            }
            continue;
        }
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
                out += escaped;
            } else {
                out += c;
            }
        }
        ++i;
    }
    return out + "\"";
}

void JsonWriter::newline()
{
    out_ += '\n';
    out_.append(hasMembers_.size() * 2, ' ');
}

void JsonWriter::beforeValue()
{
    if (afterKey_) {
        afterKey_ = false;
        return;
    }
    if (!hasMembers_.empty()) {
        if (hasMembers_.back())
            out_ += ',';
        hasMembers_.back() = true;
        newline();
    }
}

JsonWriter& JsonWriter::open(char bracket)
{
    beforeValue();
    out_ += bracket;
    hasMembers_.push_back(false);
    return *this;
}

JsonWriter& JsonWriter::close(char bracket)
{
    const bool any = hasMembers_.back();
    hasMembers_.pop_back();
    if (any)
        newline();
    out_ += bracket;
    if (hasMembers_.empty())
        out_ += '\n';
    return *this;
}

JsonWriter& JsonWriter::key(std::string_view name)
{
    beforeValue();
    out_ += jsonQuote(name);
    out_ += ": ";
    afterKey_ = true;
    return *this;
}

JsonWriter& JsonWriter::value(std::string_view text)
{
    beforeValue();
    out_ += jsonQuote(text);
    return *this;
}

JsonWriter& JsonWriter::value(std::int64_t number)
{
    beforeValue();
    out_ += std::to_string(number);
    return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t number)
{
    beforeValue();
    out_ += std::to_string(number);
    return *this;
}

JsonWriter& JsonWriter::value(bool flag)
{
    beforeValue();
    out_ += flag ? "true" : "false";
    return *this;
}

std::string exactNumber(double number)
{
    if (!std::isfinite(number))
        return {};
    // The shortest digits that read back as the same double: a document's figures are exact, so that a
    // small one (0.0004 ms) does not read as zero, as it did with three fixed decimals. Without an
    // exponent where that stays short (0.0004, not 4e-04), with one beyond. std::to_chars, not printf:
    // the decimal point is '.' whatever the C locale says.
    const double magnitude = std::fabs(number);
    const bool fixed = magnitude == 0 || (magnitude >= 1e-6 && magnitude < 1e15);
    char text[64]; // fixed: at most 17 digits, 6 zeros, a sign and a point; otherwise at most 24
    const auto [end, ec] = fixed ? std::to_chars(text, text + sizeof text, number, std::chars_format::fixed)
                                 : std::to_chars(text, text + sizeof text, number);
    return std::string(text, ec == std::errc{} ? end : text);
}

JsonWriter& JsonWriter::value(double number)
{
    const std::string text = exactNumber(number);
    if (text.empty())
        return null(); // NaN or infinity, which JSON has no number for
    beforeValue();
    out_ += text;
    return *this;
}

JsonWriter& JsonWriter::null()
{
    beforeValue();
    out_ += "null";
    return *this;
}

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#include "format/printable.hpp"

#include <cstdio>

namespace cuctx::detail {

std::size_t utf8Sequence(std::string_view text) noexcept
{
    if (text.empty())
        return 0;
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(0);
    if (lead < 0x80)
        return 1;
    std::size_t length = 0;
    unsigned char low = 0x80; // the second byte's range, narrowed where the lead byte asks
    unsigned char high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) {
        length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        length = 3;
        low = lead == 0xe0 ? 0xa0 : 0x80;  // overlong
        high = lead == 0xed ? 0x9f : 0xbf; // surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        length = 4;
        low = lead == 0xf0 ? 0x90 : 0x80;  // overlong
        high = lead == 0xf4 ? 0x8f : 0xbf; // above U+10FFFF
    } else {
        return 0;
    }
    if (text.size() < length || byte(1) < low || byte(1) > high)
        return 0;
    for (std::size_t i = 2; i < length; ++i)
        if (byte(i) < 0x80 || byte(i) > 0xbf)
            return 0;
    return length;
}

bool startsWithC1(std::string_view text) noexcept
{
    return text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0xc2 &&
           static_cast<unsigned char>(text[1]) <= 0x9f;
}

std::string printableText(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    const auto escape = [&](std::string_view bytes) {
        for (const char c : bytes) {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out += hex;
        }
    };
    for (std::size_t i = 0; i < text.size();) {
        const auto lead = static_cast<unsigned char>(text[i]);
        const std::size_t length = utf8Sequence(text.substr(i));
        if (length == 0) {
            escape(text.substr(i, 1)); // no UTF-8
            ++i;
            continue;
        }
        if (lead < 0x20 || lead == 0x7f || startsWithC1(text.substr(i)))
            escape(text.substr(i, length));
        else if (lead == '\\')
            out += "\\\\";
        else
            out.append(text.substr(i, length));
        i += length;
    }
    return out;
}

} // namespace cuctx::detail

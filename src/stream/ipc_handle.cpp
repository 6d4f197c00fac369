// SPDX-License-Identifier: MIT
#include "cuctx/ipc_handle.hpp"

#include "check/check.hpp"

#include <charconv>

namespace cuctx {

namespace detail {

std::string toHex(const std::array<char, 64>& bytes)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    text.reserve(128);
    for (char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        text += digits[b >> 4];
        text += digits[b & 15];
    }
    return text;
}

bool fromHex(std::string_view text, std::array<char, 64>& bytes)
{
    if (text.size() != 128)
        return false;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'a' && c <= 'f')
            return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
            return c - 'A' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < 64; ++i) {
        const int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        bytes[i] = static_cast<char>(hi << 4 | lo);
    }
    return true;
}

} // namespace detail

IpcEventHandle IpcEventHandle::parse(std::string_view text)
{
    IpcEventHandle h;
    if (!detail::fromHex(text, h.bytes))
        detail::throwError(Errc::invalid_argument, "cuctx::IpcEventHandle::parse",
                           "not an event handle: expected 128 hex digits, got '" + std::string(text.substr(0, 40)) +
                               (text.size() > 40 ? "...'" : "'"));
    return h;
}

IpcMemHandle IpcMemHandle::parse(std::string_view text)
{
    IpcMemHandle h;
    const auto colon = text.find(':');
    std::size_t size = 0;
    const bool ok = colon != std::string_view::npos && detail::fromHex(text.substr(0, colon), h.bytes) &&
                    std::from_chars(text.data() + colon + 1, text.data() + text.size(), size).ec == std::errc{};
    if (!ok)
        detail::throwError(Errc::invalid_argument, "cuctx::IpcMemHandle::parse",
                           "not a memory handle: expected 128 hex digits, ':' and a size, got '" +
                               std::string(text.substr(0, 40)) + (text.size() > 40 ? "...'" : "'"));
    h.size = size;
    return h;
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once

// cuctx::IpcEventHandle and cuctx::IpcMemHandle: what one process hands another to share an event
// or device memory (cuIpcGetEventHandle, cuIpcGetMemHandle), as bytes or as text. Value types.

#include "cuctx/export.hpp"
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace cuctx {

namespace detail {
/// 64 bytes as 128 hex digits, and back (false on anything else).
CUCTX_API std::string toHex(const std::array<char, 64>& bytes);
CUCTX_API bool fromHex(std::string_view text, std::array<char, 64>& bytes);
} // namespace detail

struct CUCTX_API IpcEventHandle {
    std::array<char, 64> bytes{};
    /// 128 hex digits, for a command line or environment variable.
    std::string text() const { return detail::toHex(bytes); }
    /// Parses text(); throws Errc::invalid_argument on anything else.
    static IpcEventHandle parse(std::string_view text);
};

struct CUCTX_API IpcMemHandle {
    std::array<char, 64> bytes{};
    std::size_t size = 0; ///< what the sender allocated (travels in text() too)
    std::string text() const { return detail::toHex(bytes) + ":" + std::to_string(size); }
    static IpcMemHandle parse(std::string_view text);
};

} // namespace cuctx

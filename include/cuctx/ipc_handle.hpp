// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::IpcEventHandle and cuctx::IpcMemHandle: what one process hands another to share an event
/// or device memory (cuIpcGetEventHandle, cuIpcGetMemHandle), as bytes or as text.

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

/// What Event::ipcHandle gives and Event::openIpc takes in another process.
///
/// \par Threading
/// Thread-compatible value type.
struct CUCTX_API IpcEventHandle {
    std::array<char, 64> bytes{}; ///< the driver's CUipcEventHandle
    /// 128 hex digits, for a command line or environment variable.
    std::string text() const { return detail::toHex(bytes); }
    /// Parses text(); throws Errc::invalid_argument on anything else.
    static IpcEventHandle parse(std::string_view text);
};

/// What DeviceBuffer::ipcHandle gives and IpcMemory takes in another process.
///
/// \par Threading
/// Thread-compatible value type.
struct CUCTX_API IpcMemHandle {
    std::array<char, 64> bytes{}; ///< the driver's CUipcMemHandle
    std::size_t size = 0;         ///< what the sender allocated (travels in text() too)
    /// 128 hex digits, a colon and the size in decimal, for a command line or environment variable.
    std::string text() const { return detail::toHex(bytes) + ":" + std::to_string(size); }
    /// Parses text(); throws Errc::invalid_argument on anything else.
    static IpcMemHandle parse(std::string_view text);
};

} // namespace cuctx

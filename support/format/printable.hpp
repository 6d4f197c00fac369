// SPDX-License-Identifier: MIT
#pragma once

// Text that came from other processes (their names, command lines, environments), made safe to print
// on a terminal: cuctx-inspect shows operators what other users' processes say about themselves, and
// a name may hold escape sequences. Not public API (cuctx::detail): in the static library that
// libcuctx and the tools share (support/meson.build).

#include <cstddef>
#include <string>
#include <string_view>

namespace cuctx::detail {

/// The length of the well-formed UTF-8 sequence at the start of `text` (RFC 3629: no overlong forms,
/// no surrogates, nothing above U+10FFFF), or 0 when it starts with a byte that begins none, or is empty.
std::size_t utf8Sequence(std::string_view text) noexcept;

/// Whether `text` starts with a C1 control character (U+0080 to U+009F: 0xc2 0x80 to 0xc2 0x9f in
/// UTF-8), which some terminals obey as they do ESC sequences.
bool startsWithC1(std::string_view text) noexcept;

/// `text` as a terminal shows it safely: well-formed, printable UTF-8 is copied; every control
/// character (C0, DEL, and C1, U+0080 to U+009F, which some terminals obey too) and every byte that
/// is not part of well-formed UTF-8 is written as \xHH (one per byte); a backslash as \\, so that the
/// result reads back unambiguously. Text of printable characters comes back unchanged but for
/// backslashes.
std::string printableText(std::string_view text);

} // namespace cuctx::detail

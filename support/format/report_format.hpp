// SPDX-License-Identifier: MIT
#pragma once

// Text forms the reports share (cuctx::ProcessReport, cuctx::diagnose, cuctx-inspect).

#include <cstddef>
#include <string>

namespace cuctx::detail {

/// Bytes in GiB with one decimal: "139.8 GiB".
std::string gibText(std::size_t bytes);

/// Bytes in the largest binary unit that keeps the number at or above 1: "256 MiB", "1.5 GiB".
std::string bytesText(std::size_t bytes);

/// `text` wrapped at `width` columns; continuation lines start with `indent` spaces. Words longer
/// than a line (paths) stay whole.
std::string wrapText(const std::string& text, std::size_t width, std::size_t indent);

} // namespace cuctx::detail

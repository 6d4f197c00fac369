// SPDX-License-Identifier: MIT
#pragma once

// CUDA version numbers as text. In the static library that libcuctx and the tools share
// (cuctx-support, support/meson.build), so that the tools need nothing from libcuctx beyond its public API.

#include <string>

namespace cuctx::detail {

/// "12.5" for 12050.
std::string formatCudaVersion(int version);

} // namespace cuctx::detail

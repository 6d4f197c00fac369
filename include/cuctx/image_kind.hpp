// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::ImageKind: what a module image is, told from its first bytes. The functions are
/// thread-safe (pure functions).

#include "cuctx/export.hpp"
#include <cstddef>
#include <span>
#include <string>

namespace cuctx {

/// What a module image is.
enum class ImageKind {
    ptx,     ///< PTX text: JIT-compiled for the context's device at load time
    cubin,   ///< an ELF object with SASS for one architecture
    fatbin,  ///< a fat binary: SASS for several architectures and/or PTX
    unknown, ///< none of these (or empty)
};

/// The kind of `image`, from its magic numbers (ELF, fatbin header, fatbin wrapper) or, for PTX, a
/// `.version` directive before any other token (comments and blank space skipped).
CUCTX_API ImageKind detectImageKind(std::span<const std::byte> image) noexcept;

/// "ptx", "cubin", "fatbin", "unknown".
CUCTX_API const char* imageKindName(ImageKind kind) noexcept;

/// Why `image` of `kind` cannot be handed to the driver, or an empty string when it can: the driver
/// takes a cubin or fatbin without its size and would read past a truncated buffer, so cuctx checks
/// that the image is of that kind and that everything its headers point to lies inside it (an ELF's
/// section and program headers, with their standard entry sizes, and the contents of each section
/// and segment; a fatbin's header and payload). A fatbin wrapper (__fatBinC_Wrapper_t, what nvcc
/// embeds) is refused: it holds a pointer, not code. Any bytes and any kind are safe to pass.
CUCTX_API std::string checkImageBounds(std::span<const std::byte> image, ImageKind kind);

} // namespace cuctx

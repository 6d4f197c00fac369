// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::Library: a context-independent module (cuLibraryLoadData, CUDA 12.0+).

#include "cuctx/context.hpp"
#include "cuctx/export.hpp"
#include "cuctx/function.hpp"
#include "cuctx/jit_options.hpp"

#include <cuda.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuctx {

namespace detail {
struct LibraryState;
}

/// A context-independent module (cuLibraryLoadData, CUDA 12.0+), loaded once and usable from every
/// context: its kernels are resolved per context on demand. Shared ownership: the last handle (a
/// Library, or a Function of it) unloads it.
///
/// \par Threading
/// Thread-safe shared handle: every member may be called from any thread, and handles copied and
/// dropped on any threads at once.
class CUCTX_API Library {
public:
    Library() = default; ///< empty

    /// Loads a file (PTX, cubin or fatbin, told from its content); the file name is its label. Only
    /// a regular file of at most Module::kMaxImageFileBytes is read (as Module::fromFile).
    static Library fromFile(const std::filesystem::path& path, const JitOptions& options = {});
    /// Loads an image from memory; `label` names it in errors and logs.
    static Library fromImage(std::span<const std::byte> image, const JitOptions& options = {},
                             std::string_view label = "image");

    /// Whether it refers to a library (false when default-constructed).
    explicit operator bool() const noexcept { return state_ != nullptr; }

    /// The kernel `name` as a Function of `context` (cuLibraryGetKernel + cuKernelGetFunction).
    Function function(const Context& context, std::string_view name) const;
    /// The library's kernels (CUDA 12.4+).
    std::vector<std::string> kernelNames() const;
    /// The file name, or what the caller named the image.
    const std::string& label() const;
    /// The JIT's info log of the load (empty when the JIT said nothing).
    const std::string& infoLog() const;
    /// The driver's handle.
    CUlibrary native() const;

private:
    explicit Library(std::shared_ptr<detail::LibraryState> state) noexcept : state_(std::move(state)) {}
    detail::LibraryState& state(const char* call) const;

    std::shared_ptr<detail::LibraryState> state_;
};

} // namespace cuctx

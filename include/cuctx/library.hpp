// SPDX-License-Identifier: MIT
#pragma once

// cuctx::Library: a context-independent module (cuLibraryLoadData, CUDA 12.0+), loaded once and
// usable from every context: its kernels are resolved per context on demand. Shared ownership;
// thread-safe.

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

class CUCTX_API Library {
public:
    Library() = default; ///< empty

    static Library fromFile(const std::filesystem::path& path, const JitOptions& options = {});
    static Library fromImage(std::span<const std::byte> image, const JitOptions& options = {},
                             std::string_view label = "image");

    explicit operator bool() const noexcept { return state_ != nullptr; }

    /// The kernel `name` as a Function of `context` (cuLibraryGetKernel + cuKernelGetFunction).
    Function function(const Context& context, std::string_view name) const;
    /// The library's kernels (CUDA 12.4+).
    std::vector<std::string> kernelNames() const;
    const std::string& label() const;
    const std::string& infoLog() const;
    CUlibrary native() const;

private:
    explicit Library(std::shared_ptr<detail::LibraryState> state) noexcept : state_(std::move(state)) {}
    detail::LibraryState& state(const char* call) const;

    std::shared_ptr<detail::LibraryState> state_;
};

} // namespace cuctx

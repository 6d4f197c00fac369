// SPDX-License-Identifier: MIT
#pragma once

// cuctx::ModuleImage: what a module is built from, a PTX, cubin or fatbin image and the JitOptions to
// load it with, checked, copied and digested once. Module::cached(context, image) finds its module
// by the image's identity, without reading its bytes again, so that a hit costs the same whatever
// the image's size (docs/modules.md). Immutable, so thread-safe; copies share one record and are
// cheap (a shared_ptr copy: hot paths should take `const ModuleImage&`).

#include "cuctx/export.hpp"
#include "cuctx/image_kind.hpp"
#include "cuctx/jit_options.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace cuctx {

namespace detail {
struct ModuleImageData;
}

/// A module image with its JIT options, checked, copied and digested once: the key of
/// Module::cached(context, image), which finds the image's module by identity.
///
/// \par Threading
/// Thread-safe: immutable once made; copies share one record and may be made and dropped on any
/// threads at once.
class CUCTX_API ModuleImage {
public:
    /// An empty image: Module::cached refuses it.
    ModuleImage() noexcept = default;

    /// A copy of `image` (PTX, cubin or fatbin, told from its content) with `options`; `label` names
    /// it in errors and logs. The checks of Module::fromImage run here, once: an empty image, one of
    /// no known kind, or a cubin or fatbin whose headers point outside it is an Error of
    /// Errc::invalid_argument. A PTX image ends at its first NUL (the driver reads a C string).
    static ModuleImage fromBytes(std::span<const std::byte> image, const JitOptions& options = {},
                                 std::string_view label = "image");
    /// fromBytes over a PTX text.
    static ModuleImage fromPtx(std::string_view ptx, const JitOptions& options = {}, std::string_view label = "ptx");
    /// A file's content, read now, as Module::fromFile reads it: only a regular file (or a link to
    /// one) of at most Module::kMaxImageFileBytes, else an Error of Errc::invalid_argument naming the
    /// file. The file name is the label.
    static ModuleImage fromFile(const std::filesystem::path& path, const JitOptions& options = {});

    /// Whether this holds an image (false for a default-made one).
    explicit operator bool() const noexcept { return data_ != nullptr; }

    /// A number no other image of this process has (copies share it); 0 for an empty image.
    std::uint64_t id() const noexcept;
    /// The bytes the driver reads: the image as given, a PTX text up to its first NUL.
    std::span<const std::byte> bytes() const;
    /// PTX, cubin or fatbin, told from the content.
    ImageKind kind() const;
    /// The JIT options the image's module is loaded with.
    const JitOptions& options() const;
    /// What errors and logs call the image.
    const std::string& label() const;

private:
    friend struct detail::ModuleImageData;
    explicit ModuleImage(std::shared_ptr<const detail::ModuleImageData> data) noexcept;
    const detail::ModuleImageData& data(const char* call) const;

    std::shared_ptr<const detail::ModuleImageData> data_;
};

} // namespace cuctx

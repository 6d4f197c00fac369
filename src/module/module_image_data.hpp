// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// What stands behind a ModuleImage: everything the module cache needs to find the image's module,
// computed once when the image is made and never changed after (so read by any thread unlocked).

#include "cuctx/image_kind.hpp"
#include "cuctx/jit_options.hpp"
#include "cuctx/module_image.hpp"

#include "module/image_digest.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace cuctx::detail {

struct ModuleImageData {
    std::uint64_t id = 0;
    ImageKind kind = ImageKind::unknown;
    std::vector<std::byte> storage; // the cache bytes, then a NUL for PTX (so loading copies nothing)
    std::size_t size = 0;           // of the cache bytes
    ImageDigest digest;
    std::string fingerprint; // jitFingerprint(options)
    JitOptions options;
    std::string label;

    /// What the cache compares: the image, a PTX text up to its first NUL.
    std::span<const std::byte> bytes() const noexcept { return std::span(storage).first(size); }
    /// What the driver is handed (a PTX text with its NUL).
    std::span<const std::byte> loadBytes() const noexcept { return storage; }

    static const std::shared_ptr<const ModuleImageData>& of(const ModuleImage& image) noexcept { return image.data_; }
};

} // namespace cuctx::detail

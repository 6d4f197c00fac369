// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// A 128-bit digest of a module image, the module cache's key with the options' fingerprint.

#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>

namespace cuctx::detail {

struct ImageDigest {
    std::uint64_t low = 0;
    std::uint64_t high = 0;
    std::size_t bytes = 0;
    auto operator<=>(const ImageDigest&) const = default;
};

/// Two independently seeded 64-bit lanes over the image, eight bytes at a time, then mixed: not
/// cryptographic, but a collision between two images a program loads is out of reach in practice.
ImageDigest digestImage(std::span<const std::byte> image) noexcept;

} // namespace cuctx::detail

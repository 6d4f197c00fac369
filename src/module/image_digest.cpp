// SPDX-License-Identifier: MIT
#include "module/image_digest.hpp"

#include <cstring>

namespace cuctx::detail {
namespace {

constexpr std::uint64_t rotl(std::uint64_t v, int s) noexcept
{
    return (v << s) | (v >> (64 - s));
}

// The finaliser of splitmix64: every input bit affects every output bit.
constexpr std::uint64_t mix(std::uint64_t v) noexcept
{
    v ^= v >> 30;
    v *= 0xBF58476D1CE4E5B9ull;
    v ^= v >> 27;
    v *= 0x94D049BB133111EBull;
    return v ^ (v >> 31);
}

} // namespace

ImageDigest digestImage(std::span<const std::byte> image) noexcept
{
    std::uint64_t a = 0x9E3779B97F4A7C15ull ^ image.size();
    std::uint64_t b = 0xC2B2AE3D27D4EB4Full + image.size();
    std::size_t at = 0;
    for (; at + 8 <= image.size(); at += 8) {
        std::uint64_t word;
        std::memcpy(&word, image.data() + at, 8);
        a = rotl(a ^ (word * 0x87C37B91114253D5ull), 31) * 0x4CF5AD432745937Full;
        b = rotl(b + (word ^ 0x52DCE729DA3ED7B3ull), 27) * 0xFF51AFD7ED558CCDull + a;
    }
    std::uint64_t tail = 0;
    if (at < image.size())
        std::memcpy(&tail, image.data() + at, image.size() - at);
    a = mix(a ^ tail);
    b = mix(b + rotl(tail, 17) + a);
    return ImageDigest{a, b, image.size()};
}

} // namespace cuctx::detail

#include "cuctx/image_kind.hpp"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace cuctx {
namespace {

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;        // fatBinaryHeader, as written by fatbinary
constexpr std::uint32_t kFatbinWrapperMagic = 0x466243B1u; // __fatBinC_Wrapper_t, as nvcc embeds it

template <typename T>
T readAt(std::span<const std::byte> image, std::size_t offset)
{
    T value{};
    std::memcpy(&value, image.data() + offset, sizeof value);
    return value;
}

bool isElf(std::span<const std::byte> image)
{
    return image.size() >= 4 && std::memcmp(image.data(),
                                            "\x7f"
                                            "ELF",
                                            4) == 0;
}

// PTX: a `.version` directive is the first thing after comments and blank space.
bool isPtx(std::span<const std::byte> image)
{
    const std::string_view text(reinterpret_cast<const char*>(image.data()), image.size());
    std::size_t at = 0;
    while (at < text.size()) {
        const char c = text[at];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            ++at;
        } else if (text.compare(at, 2, "//") == 0) {
            const std::size_t end = text.find('\n', at);
            at = end == std::string_view::npos ? text.size() : end + 1;
        } else if (text.compare(at, 2, "/*") == 0) {
            const std::size_t end = text.find("*/", at + 2);
            at = end == std::string_view::npos ? text.size() : end + 2;
        } else {
            return text.compare(at, 8, ".version") == 0;
        }
    }
    return false;
}

std::string checkElfBounds(std::span<const std::byte> image)
{
    constexpr std::size_t kHeader = 64;
    if (image.size() < kHeader)
        return "a cubin (ELF) of " + std::to_string(image.size()) + " bytes is shorter than its 64-byte header";
    if (static_cast<unsigned char>(image[4]) != 2)
        return "the ELF image is not 64-bit, which is what the CUDA driver loads";
    const auto phoff = readAt<std::uint64_t>(image, 0x20);
    const auto shoff = readAt<std::uint64_t>(image, 0x28);
    const auto phentsize = readAt<std::uint16_t>(image, 0x36);
    const auto phnum = readAt<std::uint16_t>(image, 0x38);
    const auto shentsize = readAt<std::uint16_t>(image, 0x3A);
    const auto shnum = readAt<std::uint16_t>(image, 0x3C);
    const std::uint64_t size = image.size();
    auto tooShort = [&](std::uint64_t end, const char* what) {
        return "the cubin is truncated: its " + std::string(what) + " end at byte " + std::to_string(end) +
               " of an image of " + std::to_string(size) + " bytes";
    };
    if (phnum != 0 && (phoff > size || phentsize * std::uint64_t{phnum} > size - phoff))
        return tooShort(phoff + phentsize * std::uint64_t{phnum}, "program headers");
    if (shnum != 0 && (shoff > size || shentsize * std::uint64_t{shnum} > size - shoff))
        return tooShort(shoff + shentsize * std::uint64_t{shnum}, "section headers");
    if (shentsize >= 0x28) {
        for (std::uint16_t i = 0; i < shnum; ++i) {
            const std::size_t header = shoff + std::size_t{i} * shentsize;
            const auto type = readAt<std::uint32_t>(image, header + 4);
            const auto offset = readAt<std::uint64_t>(image, header + 0x18);
            const auto bytes = readAt<std::uint64_t>(image, header + 0x20);
            constexpr std::uint32_t kNoBits = 8;
            if (type != kNoBits && bytes != 0 && (offset > size || bytes > size - offset))
                return tooShort(offset + bytes, ("section " + std::to_string(i) + "'s contents").c_str());
        }
    }
    return {};
}

std::string checkFatbinBounds(std::span<const std::byte> image)
{
    if (readAt<std::uint32_t>(image, 0) == kFatbinWrapperMagic)
        return {}; // a wrapper points elsewhere, to what nvcc embedded: nothing here to check
    constexpr std::size_t kHeader = 16;
    if (image.size() < kHeader)
        return "a fatbin of " + std::to_string(image.size()) + " bytes is shorter than its 16-byte header";
    const auto headerSize = readAt<std::uint16_t>(image, 6);
    const auto fatSize = readAt<std::uint64_t>(image, 8);
    if (headerSize < kHeader || fatSize > image.size() || headerSize > image.size() - fatSize)
        return "the fatbin is truncated: its header says " + std::to_string(headerSize + fatSize) +
               " bytes, the image has " + std::to_string(image.size());
    return {};
}

} // namespace

ImageKind detectImageKind(std::span<const std::byte> image) noexcept
{
    if (isElf(image))
        return ImageKind::cubin;
    if (image.size() >= 4) {
        const auto magic = readAt<std::uint32_t>(image, 0);
        if (magic == kFatbinMagic || magic == kFatbinWrapperMagic)
            return ImageKind::fatbin;
    }
    return isPtx(image) ? ImageKind::ptx : ImageKind::unknown;
}

const char* imageKindName(ImageKind kind) noexcept
{
    switch (kind) {
    case ImageKind::ptx: return "ptx";
    case ImageKind::cubin: return "cubin";
    case ImageKind::fatbin: return "fatbin";
    case ImageKind::unknown: return "unknown";
    }
    return "unknown";
}

std::string checkImageBounds(std::span<const std::byte> image, ImageKind kind)
{
    switch (kind) {
    case ImageKind::cubin: return checkElfBounds(image);
    case ImageKind::fatbin: return checkFatbinBounds(image);
    case ImageKind::ptx: return {};
    case ImageKind::unknown: break;
    }
    if (image.empty())
        return "the image is empty";
    return "the image is not PTX (no .version directive first), a cubin (ELF) or a fatbin";
}

} // namespace cuctx

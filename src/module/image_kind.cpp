// SPDX-License-Identifier: MIT
#include "cuctx/image_kind.hpp"

#include <cstdint>
#include <cstring>
#include <string>
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

// Whether [offset, offset + count * entry) lies within `size` bytes, without overflow.
bool fits(std::uint64_t size, std::uint64_t offset, std::uint64_t count, std::uint64_t entry)
{
    return offset <= size && (entry == 0 || count <= (size - offset) / entry);
}

std::string checkElfBounds(std::span<const std::byte> image)
{
    constexpr std::size_t kHeader = 64;  // Elf64_Ehdr
    constexpr std::size_t kSegment = 56; // Elf64_Phdr
    constexpr std::size_t kSection = 64; // Elf64_Shdr
    constexpr std::uint16_t kPnXnum = 0xFFFF;
    if (image.size() < kHeader)
        return "a cubin (ELF) of " + std::to_string(image.size()) + " bytes is shorter than its 64-byte header";
    if (!isElf(image))
        return "the image is not a cubin: it does not start with the ELF magic";
    if (static_cast<unsigned char>(image[4]) != 2 || static_cast<unsigned char>(image[5]) != 1)
        return "the ELF image is not 64-bit little-endian, which is what the CUDA driver loads";
    const auto phoff = readAt<std::uint64_t>(image, 0x20);
    const auto shoff = readAt<std::uint64_t>(image, 0x28);
    const auto phentsize = readAt<std::uint16_t>(image, 0x36);
    std::uint64_t phnum = readAt<std::uint16_t>(image, 0x38);
    const auto shentsize = readAt<std::uint16_t>(image, 0x3A);
    std::uint64_t shnum = readAt<std::uint16_t>(image, 0x3C);
    const std::uint64_t size = image.size();
    auto tooShort = [&](std::uint64_t offset, std::uint64_t bytes, const std::string& what) {
        const std::uint64_t end = offset + bytes < offset ? UINT64_MAX : offset + bytes;
        return "the cubin is truncated: its " + what + " end at byte " + std::to_string(end) + " of an image of " +
               std::to_string(size) + " bytes";
    };
    // Section headers: any offset given must be inside the image (with no count, the count is in
    // the first header, ELF's extended numbering), and entries must be Elf64_Shdr.
    if (shoff != 0 || shnum != 0) {
        if (shentsize != kSection)
            return "the cubin's section header entry size is " + std::to_string(shentsize) + ", not " +
                   std::to_string(kSection);
        if (!fits(size, shoff, 1, kSection))
            return tooShort(shoff, kSection, "section headers");
        if (shnum == 0)
            shnum = readAt<std::uint64_t>(image, shoff + 0x20); // sh_size of section 0
        if (phnum == kPnXnum)
            phnum = readAt<std::uint32_t>(image, shoff + 0x2C); // sh_info of section 0
        if (!fits(size, shoff, shnum, kSection))
            return tooShort(shoff, shnum * kSection, "section headers");
        for (std::uint64_t i = 0; i < shnum; ++i) {
            const std::size_t header = shoff + i * kSection;
            const auto type = readAt<std::uint32_t>(image, header + 4);
            const auto offset = readAt<std::uint64_t>(image, header + 0x18);
            const auto bytes = readAt<std::uint64_t>(image, header + 0x20);
            constexpr std::uint32_t kNoBits = 8;
            if (type != kNoBits && bytes != 0 && !fits(size, offset, 1, bytes))
                return tooShort(offset, bytes, "section " + std::to_string(i) + "'s contents");
        }
    } else if (phnum == kPnXnum) {
        return "the cubin counts its segments in a section header it does not have";
    }
    // Program headers (segments): likewise, and each segment's file contents inside the image.
    if (phoff != 0 || phnum != 0) {
        if (phentsize != kSegment)
            return "the cubin's program header entry size is " + std::to_string(phentsize) + ", not " +
                   std::to_string(kSegment);
        if (!fits(size, phoff, phnum, kSegment))
            return tooShort(phoff, phnum * kSegment, "program headers");
        for (std::uint64_t i = 0; i < phnum; ++i) {
            const std::size_t header = phoff + i * kSegment;
            const auto offset = readAt<std::uint64_t>(image, header + 0x08);
            const auto bytes = readAt<std::uint64_t>(image, header + 0x20); // p_filesz
            if (bytes != 0 && !fits(size, offset, 1, bytes))
                return tooShort(offset, bytes, "segment " + std::to_string(i) + "'s contents");
        }
    }
    return {};
}

std::string checkFatbinBounds(std::span<const std::byte> image)
{
    constexpr std::size_t kHeader = 16;
    if (image.size() >= 4 && readAt<std::uint32_t>(image, 0) == kFatbinWrapperMagic)
        return "the image is a fatbin wrapper (__fatBinC_Wrapper_t), which holds a pointer into the program that "
               "embedded it rather than code: pass the fatbin it points to";
    if (image.size() < kHeader)
        return "a fatbin of " + std::to_string(image.size()) + " bytes is shorter than its 16-byte header";
    if (readAt<std::uint32_t>(image, 0) != kFatbinMagic)
        return "the image is not a fatbin: it does not start with the fatbin magic";
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
    case ImageKind::ptx:
        if (isPtx(image))
            return {};
        return image.empty() ? "the image is empty" : "the image is not PTX (no .version directive first)";
    case ImageKind::unknown: break;
    }
    if (image.empty())
        return "the image is empty";
    return "the image is not PTX (no .version directive first), a cubin (ELF) or a fatbin";
}

} // namespace cuctx

// libFuzzer target: image-kind detection and bounds checking, through the public entry points, for
// every kind. Any bytes must be safe to detect and to check as any kind (no read outside them, no
// undefined behaviour); what passes the check of its detected kind must be what that kind says.
//
// clang++-14 -std=c++20 -fsanitize=fuzzer,address,undefined -Iinclude test/fuzz/fuzz_image.cpp
//     src/module/image_kind.cpp -o fuzz-image && ./fuzz-image test/fuzz/corpus/image

#include "fuzz_target.hpp"

#include "cuctx/image_kind.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    // A copy of exactly `size` bytes, so that AddressSanitizer sees any read past them.
    std::vector<std::byte> copy(size);
    if (size != 0)
        std::memcpy(copy.data(), data, size);
    const std::span<const std::byte> image(copy.data(), copy.size());

    const cuctx::ImageKind detected = cuctx::detectImageKind(image);
    if (std::strlen(cuctx::imageKindName(detected)) == 0)
        std::abort();
    for (const cuctx::ImageKind kind :
         {cuctx::ImageKind::ptx, cuctx::ImageKind::cubin, cuctx::ImageKind::fatbin, cuctx::ImageKind::unknown}) {
        const std::string problem = cuctx::checkImageBounds(image, kind);
        const bool accepted = problem.empty();
        if (kind == cuctx::ImageKind::unknown && accepted)
            std::abort(); // nothing of no kind can be loaded
        if (accepted && kind != detected)
            std::abort(); // a check accepts only its own kind
        if (accepted && size == 0)
            std::abort();
    }
    // An accepted fatbin one byte shorter than its header says must fail.
    if (detected == cuctx::ImageKind::fatbin && cuctx::checkImageBounds(image, detected).empty()) {
        std::uint16_t headerSize = 0;
        std::uint64_t fatSize = 0;
        std::memcpy(&headerSize, data + 6, sizeof headerSize);
        std::memcpy(&fatSize, data + 8, sizeof fatSize);
        if (cuctx::checkImageBounds(image.first(headerSize + fatSize - 1), detected).empty())
            std::abort();
    }
    return 0;
}

// SPDX-License-Identifier: MIT
#pragma once

// Test images for the module tests of both suites: test/data/kernels.ptx (hand-written PTX), and
// the cubins and fatbin built from it by the toolkit's ptxas and fatbinary where the build found
// them. CUCTX_TEST_DATA overrides where they are (the GPU machine runs a staged copy).

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace cuctx::test {

inline std::filesystem::path testDataDir(const char* builtIn)
{
    if (const char* dir = std::getenv("CUCTX_TEST_DATA"); dir != nullptr && dir[0] != '\0')
        return dir;
    return builtIn;
}

inline std::filesystem::path testPtxPath()
{
    if (const char* dir = std::getenv("CUCTX_TEST_DATA"); dir != nullptr && dir[0] != '\0')
        return std::filesystem::path(dir) / "kernels.ptx";
    return CUCTX_TEST_PTX_PATH;
}

/// A built image (kernels_sm90.cubin, kernels_sm80.cubin, kernels.fatbin), if the build made it.
inline std::optional<std::filesystem::path> testImage(const char* name)
{
    const std::filesystem::path p = testDataDir(CUCTX_TEST_IMAGE_DIR) / name;
    return std::filesystem::exists(p) ? std::optional(p) : std::nullopt;
}

inline std::vector<std::byte> readBytes(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(chars.size());
    for (std::size_t i = 0; i < chars.size(); ++i)
        bytes[i] = static_cast<std::byte>(chars[i]);
    return bytes;
}

inline std::string readText(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// PTX that the JIT rejects, with the offending instruction on line 7.
inline const char* malformedPtx()
{
    return ".version 8.0\n"
           ".target sm_80\n"
           ".address_size 64\n"
           "\n"
           ".visible .entry broken()\n"
           "{\n"
           "    bogus.u32 %r1, 7;\n"
           "    ret;\n"
           "}\n";
}

} // namespace cuctx::test

// SPDX-License-Identifier: MIT
#pragma once

// libFuzzer's entry point, declared once so that each target's definition has its prototype
// (-Wmissing-prototypes, -Wmissing-declarations).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace cuctx::fuzz {

/// A command line from fuzz input: the arguments separated by NUL bytes; no input, no arguments.
inline std::vector<std::string> splitArguments(const std::uint8_t* data, std::size_t size)
{
    std::vector<std::string> args;
    if (size == 0)
        return args;
    args.emplace_back();
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == 0)
            args.emplace_back();
        else
            args.back() += static_cast<char>(data[i]);
    }
    return args;
}

} // namespace cuctx::fuzz

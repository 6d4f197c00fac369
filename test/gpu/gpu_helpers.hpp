// SPDX-License-Identifier: MIT
#pragma once

// Helpers shared by the GPU tests.

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <string>

namespace cuctx::test {

/// Runs a shell command and returns what it printed; empty when it cannot run.
inline std::string commandOutput(const std::string& command)
{
    std::string out;
    if (FILE* pipe = popen(command.c_str(), "r")) {
        std::array<char, 4096> buffer{};
        std::size_t n = 0;
        while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
            out.append(buffer.data(), n);
        pclose(pipe);
    }
    return out;
}

} // namespace cuctx::test

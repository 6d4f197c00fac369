// SPDX-License-Identifier: MIT
#pragma once

// libFuzzer's entry point, declared once so that each target's definition has its prototype
// (-Wmissing-prototypes, -Wmissing-declarations).

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

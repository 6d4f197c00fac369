// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// cuctx's own table of CUresult names and descriptions: the stub driver answers cuGetErrorName
// with CUDA_ERROR_STUB_LIBRARY and no string, and an error message must not depend on the driver.

#include <span>

namespace cuctx::detail {

struct ResultName {
    int value;
    const char* name;
    const char* description;
};

/// The entry for a CUresult value, or nullptr for a value cuda.h does not define.
const ResultName* findResultName(int result) noexcept;

/// Every entry, sorted by value.
std::span<const ResultName> allResultNames() noexcept;

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// Which CUresults are sticky: after one, the device is unusable for the rest of the process.

namespace cuctx::detail {

/// Whether `result` is a sticky fault (CUDA_ERROR_ILLEGAL_ADDRESS, ...): see sticky.cpp for the list
/// and why each entry is there.
bool isStickyResult(int result) noexcept;

} // namespace cuctx::detail

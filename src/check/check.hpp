// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The checking layer: a CUresult becomes a cuctx::Error, composed only on failure.

#include "cuctx/error.hpp"

#include <cuda.h>

#include "cuctx/source_location.hpp"
#include <cstdint>

namespace cuctx::detail {

/// What a driver call was made on, for the error message. Cheap to build on the success path: the
/// text is composed only when a call fails.
struct Subject {
    int device = -1;               ///< device ordinal, -1 when none
    std::uint64_t contextId = 0;   ///< cuCtxGetId, 0 when unknown
    const void* context = nullptr; ///< the CUcontext handle, when the id is unknown
    const char* name = nullptr;    ///< a file, module or symbol name
};

/// "context 3 on device 0", "device 1", "file kernels.ptx"...; empty for an empty Subject.
std::string describe(const Subject& subject);

/// Throws the Error for a failed driver call: classifies the CUresult (stub library, no device, a
/// fork after initialisation) and adds what to do about it.
[[noreturn]] void throwDriverError(CUresult result, const char* call, const Subject& subject, SourceLocation where);

/// The same, with what cuctx found (a JIT log, the kernels a module has) and what to do.
[[noreturn]] void throwDriverError(CUresult result, const char* call, const Subject& subject, SourceLocation where,
                                   std::string detail, std::string hint = {});

inline void check(CUresult result, const char* call, const Subject& subject = {},
                  SourceLocation where = SourceLocation::current())
{
    if (result != CUDA_SUCCESS) [[unlikely]]
        throwDriverError(result, call, subject, where);
}

/// Throws a cuctx-level Error (no CUresult).
[[noreturn]] void throwError(Errc condition, std::string call, std::string detail, std::string hint = {},
                             const Subject& subject = {}, SourceLocation where = SourceLocation::current());

} // namespace cuctx::detail

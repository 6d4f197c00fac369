// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::JitOptions: how the driver compiles PTX when a module is loaded.

#include <cstddef>
#include <optional>

namespace cuctx {

/// CU_JIT_CACHE_MODE: how global memory loads are cached.
enum class JitCacheMode {
    none,    ///< CU_JIT_CACHE_OPTION_NONE
    l2Only,  ///< CU_JIT_CACHE_OPTION_CG: cache in L2 only
    l1AndL2, ///< CU_JIT_CACHE_OPTION_CA: cache in L1 and L2
};

/// Options for loading a module. Every field left unset keeps the driver's default. cuctx builds
/// fresh driver option arrays for every load (the log-size options are in/out: reused arrays would
/// silently give empty logs).
///
/// \par Threading
/// Thread-compatible value type.
struct JitOptions {
    std::optional<int> optimizationLevel; ///< CU_JIT_OPTIMIZATION_LEVEL, 0-4 (driver default 4)
    /// CU_JIT_TARGET as a compute capability times ten plus minor (90 for sm_90); unset: the
    /// context's device (CU_JIT_TARGET_FROM_CUCONTEXT).
    std::optional<int> target;
    bool debugInfo = false;                ///< CU_JIT_GENERATE_DEBUG_INFO (-G)
    bool lineInfo = false;                 ///< CU_JIT_GENERATE_LINE_INFO (-lineinfo)
    std::optional<unsigned> maxRegisters;  ///< CU_JIT_MAX_REGISTERS per thread
    std::optional<JitCacheMode> cacheMode; ///< CU_JIT_CACHE_MODE
    bool verboseLog = false;               ///< CU_JIT_LOG_VERBOSE: the info log lists resource use
    std::size_t logBytes = 16384;          ///< size of each of the info and error log buffers
    /// Load every kernel when the module loads (cuFuncLoad), so that failures and latency do not
    /// surface at the first launch under lazy loading (CUDA_MODULE_LOADING=LAZY, the default).
    bool loadAllKernels = false;
};

} // namespace cuctx

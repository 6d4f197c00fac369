// SPDX-License-Identifier: MIT
#pragma once

// The few driver entry points the tools call directly (to compare cuctx with the raw driver, or to
// break a thread's stack on purpose), taken from the driver library cuctx loaded: the tools use
// cuctx's public API only, so they look the entry points up themselves (cuGetProcAddress_v2 of
// the library Driver::status() names), at the versions whose typedefs they are called through.

#include <cuda.h>
#include <cudaTypedefs.h>

namespace cuctx::tools {

struct RawDriver {
    PFN_cuCtxCreate_v3020 cuCtxCreate_v2 = nullptr;
    PFN_cuCtxCreate_v12050 cuCtxCreate_v4 = nullptr; ///< null where the driver lacks it (before 12.5)
    PFN_cuCtxDestroy_v4000 cuCtxDestroy = nullptr;
    PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent = nullptr;
    PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent = nullptr;
    PFN_cuCtxPushCurrent_v4000 cuCtxPushCurrent = nullptr;
    PFN_cuCtxPopCurrent_v4000 cuCtxPopCurrent = nullptr;
    PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain = nullptr;
    PFN_cuDevicePrimaryCtxRelease_v11000 cuDevicePrimaryCtxRelease = nullptr;
    PFN_cuModuleLoadDataEx_v2010 cuModuleLoadDataEx = nullptr;
    PFN_cuModuleUnload_v2000 cuModuleUnload = nullptr;
    PFN_cuLaunchKernel_v4000 cuLaunchKernel = nullptr;
    PFN_cuMemcpyPeerAsync_v4000 cuMemcpyPeerAsync = nullptr;
};

/// The entry points of the driver cuctx loaded (loading it through cuctx first). Throws
/// std::runtime_error where the library or a required entry point cannot be found.
const RawDriver& rawDriver();

} // namespace cuctx::tools

// SPDX-License-Identifier: MIT
#pragma once

// cuctx::LaunchConfig: the shape of a kernel launch. A value type.

#include <cuda.h>

namespace cuctx {

struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
};

/// Grid, block, dynamic shared memory and stream of a launch, and the cuLaunchKernelEx attributes
/// cuctx supports. A cluster of {0,0,0} means none.
struct LaunchConfig {
    Dim3 grid;
    Dim3 block;
    unsigned sharedBytes = 0;  ///< dynamic shared memory per block
    CUstream stream = nullptr; ///< nullptr: the context's default stream
    Dim3 cluster{0, 0, 0};     ///< thread-block cluster dimensions (sm_90+), via cuLaunchKernelEx
    bool cooperative = false;  ///< a cooperative launch (grid-wide sync), via cuLaunchKernelEx
};

} // namespace cuctx

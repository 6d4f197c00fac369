// SPDX-License-Identifier: MIT
#include "check/sticky.hpp"

#include <cuda.h>

namespace cuctx::detail {

bool isStickyResult(int result) noexcept
{
    switch (static_cast<CUresult>(result)) {
    // cuda.h: "This leaves the process in an inconsistent state and any further CUDA work will return
    // the same error. To continue using CUDA, the process must be terminated and relaunched."
    case CUDA_ERROR_ILLEGAL_ADDRESS:       // 700, measured on the H200: every context of the device
    case CUDA_ERROR_LAUNCH_TIMEOUT:        // 702, a watchdog killed the kernel
    case CUDA_ERROR_HARDWARE_STACK_ERROR:  // 714, stack corruption or overflow
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:   // 715
    case CUDA_ERROR_MISALIGNED_ADDRESS:    // 716
    case CUDA_ERROR_INVALID_ADDRESS_SPACE: // 717
    case CUDA_ERROR_INVALID_PC:            // 718
    case CUDA_ERROR_LAUNCH_FAILED:         // 719, also what a device-side `trap` gives (there is no TRAP code)
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:    // 721
    case CUDA_ERROR_CONTAINED:             // 226, a contained hardware or NVLink fault
    case CUDA_ERROR_EXTERNAL_DEVICE:       // 911, an external device signalled bad data
    // cuda.h says only that the context "cannot be used anymore, and must be destroyed", but a
    // device-side assert is a trap underneath and drivers since CUDA 11 report it on every later call
    // of the process: treated as sticky, so that cuctx stops instead of flooding.
    case CUDA_ERROR_ASSERT: // 710
    // Uncorrectable memory or link errors: cuda.h states no scope, but the data on the device is gone
    // and NVIDIA's XID guidance is to restart the application: sticky.
    case CUDA_ERROR_ECC_UNCORRECTABLE:    // 214
    case CUDA_ERROR_NVLINK_UNCORRECTABLE: // 220
        return true;
    // Not sticky, though they look alike: LAUNCH_OUT_OF_RESOURCES (701) and
    // COOPERATIVE_LAUNCH_TOO_LARGE (720) refuse a launch before it runs; CONTEXT_IS_DESTROYED (709)
    // is one context's state; UNKNOWN (999) says nothing about the device.
    default: return false;
    }
}

} // namespace cuctx::detail

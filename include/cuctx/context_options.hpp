// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::ContextOptions: how Context::create makes a context.

#include "cuctx/export.hpp"

namespace cuctx {

/// How a host thread waits for the GPU in this context (the CU_CTX_SCHED_* flags).
enum class SchedulePolicy {
    automatic,    ///< CU_CTX_SCHED_AUTO: spin while there are fewer active contexts than cores, else yield
    spin,         ///< CU_CTX_SCHED_SPIN: lowest latency, a busy core
    yield,        ///< CU_CTX_SCHED_YIELD
    blockingSync, ///< CU_CTX_SCHED_BLOCKING_SYNC: sleep on a synchronisation primitive
};

/// How Context::create (or Context::primary, for its flags) makes a context. Every field left as it is
/// keeps the driver's default.
///
/// \par Threading
/// Thread-compatible value type.
struct CUCTX_API ContextOptions {
    SchedulePolicy schedule = SchedulePolicy::automatic; ///< how host threads wait for the GPU
    bool keepLocalMemory = false;                        ///< CU_CTX_LMEM_RESIZE_TO_MAX
    bool coredump = false;                               ///< CU_CTX_COREDUMP_ENABLE
    bool userCoredump = false;                           ///< CU_CTX_USER_COREDUMP_ENABLE
    bool syncMemops = false;                             ///< CU_CTX_SYNC_MEMOPS
    /// Limit the context to this many SMs (an execution-affinity parameter, CUDA 12.5 and a device that
    /// supports it); 0 for no limit.
    int smCount = 0;

    /// The CU_CTX_* flag word these options stand for.
    unsigned flags() const noexcept;
};

} // namespace cuctx

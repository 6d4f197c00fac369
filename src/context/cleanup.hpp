// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// Driver calls made from destructors, which must run with a given context current and must not
// throw: a failure is logged (there is nobody to tell), and the calling thread's stack is left as
// it was, whatever cuctx's record of it says.

#include "check/device_faults.hpp"
#include "context/context_state.hpp"
#include "context/described.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"

namespace cuctx::detail {

// Runs `call` (a driver call returning CUresult) with `context` current, from a destructor: no
// cuctx record is touched, nothing throws; failures are logged. Returns false, having done nothing,
// where the driver refuses context calls (CUDA_ERROR_NOT_PERMITTED: a host callback), so that the
// caller can defer the work (deferred_cleanup.hpp); true otherwise.
template <typename Call>
bool inContextForCleanup(ContextState& context, const char* what, Call call) noexcept
{
    const DriverApi* d = g_activeApi.load(std::memory_order_acquire);
    if (d == nullptr)
        return true;         // a forked child: the driver refuses everything, and the parent still owns it
    CUcontext now = nullptr; // the driver's view, not cuctx's record: other code may have changed it
    const CUresult got = d->cuCtxGetCurrent(&now);
    if (got == CUDA_ERROR_NOT_PERMITTED)
        return false;
    const bool current = got == CUDA_SUCCESS && now == context.handle;
    if (!current) {
        if (const CUresult r = d->cuCtxPushCurrent(context.handle); r != CUDA_SUCCESS) {
            if (r == CUDA_ERROR_NOT_PERMITTED)
                return false;
            logError("{}: cuCtxPushCurrent of {} failed with {}", what, described(context), resultName(r));
            return true;
        }
    }
    if (const CUresult r = call(*d); r != CUDA_SUCCESS) {
        // On a poisoned device every destroy fails (measured): cuctx forgets the object quietly, the
        // poisoning itself was reported once (check/device_faults.cpp).
        if (devicePoisoned(context.ordinal))
            logDebug("{} in {} failed with {} on a poisoned device: forgotten", what, described(context),
                     resultName(r));
        else
            logError("{} in {} failed with {} ({})", what, described(context), resultName(r), static_cast<int>(r));
    }
    if (!current) {
        CUcontext popped = nullptr;
        if (const CUresult r = d->cuCtxPopCurrent(&popped); r != CUDA_SUCCESS || popped != context.handle)
            logError("{}: popping {} after the call gave {} and {}", what, described(context), resultName(r),
                     static_cast<const void*>(popped));
    }
    return true;
}

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#pragma once

// What the parts of the fake driver share (fake_driver.cpp: contexts and stacks; fake_modules.cpp:
// modules, kernels, launches, memory).

#include <cuda.h>

#include <atomic>
#include <span>

namespace fake {

struct FakeContext {
    unsigned long long id;
    int device;
    unsigned flags;
    bool primary;
    std::atomic<bool> destroyed{false};
};

/// Counts the call, applies injected failures and the fork/initialisation rules; CUDA_SUCCESS to go on.
CUresult enter(const char* name, bool needsInit = true);
/// This thread's current context, or nullptr.
FakeContext* top();
/// The current context for calls that need one; 201 without, 709 if it was destroyed.
CUresult currentForWork(FakeContext** out);

struct Export {
    const char* symbol;
    int version; // the CUDA version that introduced this ABI
    void* function;
};

/// Whether this thread is the fake's host-callback thread, where the driver refuses context calls
/// (CUDA_ERROR_NOT_PERMITTED, driver-facts.md "Sticky errors and host callbacks").
bool onCallbackThread();
/// Waits until every host callback queued so far on `stream` (any stream: nullptr) has returned.
void waitForCallbacks(const void* stream);

/// A new stream of context `c` (fake_streams.cpp), for cuGreenCtxStreamCreate.
CUstream newStream(FakeContext* c, unsigned flags, int priority);
/// The context of a live stream, or nullptr.
FakeContext* streamContext(CUstream stream);

std::span<const Export> moduleExports();
std::span<const Export> streamExports();
void resetModules(); // under cuctx_fake_reset

} // namespace fake

namespace fake {
/// This thread is inside a call of the fake driver while one lives (cuctx_fake_inside_call): a test
/// that makes allocations fail leaves the fake's own alone, as the real driver allocates no C++ memory.
struct InsideCall {
    InsideCall() noexcept;
    ~InsideCall();
    InsideCall(const InsideCall&) = delete;
    InsideCall& operator=(const InsideCall&) = delete;
};
} // namespace fake

// At the top of every entry point's body: marks the call (to its end) and counts it.
#define FAKE_ENTER(...)                                                                                                \
    const ::fake::InsideCall fakeInsideCall_;                                                                          \
    if (CUresult entered_ = ::fake::enter(__VA_ARGS__); entered_ != CUDA_SUCCESS)                                      \
    return entered_

#define FAKE_EXPORT(symbol, version, fn)                                                                               \
    ::fake::Export                                                                                                     \
    {                                                                                                                  \
        symbol, version, reinterpret_cast<void*>(&fn)                                                                  \
    }

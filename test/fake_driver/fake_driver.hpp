// SPDX-License-Identifier: MIT
#pragma once

// Control of the fake CUDA driver (libcuctx-fake-cuda.so), a test double of the driver that cuctx
// loads through its ordinary loader (Driver::setLibraryPath or CUCTX_DRIVER_PATH). It models the
// semantics measured in shared/design/driver-facts.md: per-thread context stacks (a thread-local
// that may be destroyed before or after the program's other thread-locals), push/pop/set,
// destroy while current elsewhere, primary-context reference counts, fork poisoning, sticky faults
// that poison a device. Every
// behaviour it models has a conformance test that runs against the real driver on the GPU.
//
// Configuration read at each cuInit: CUCTX_FAKE_DEVICES (default 2), CUCTX_FAKE_DRIVER_VERSION
// (default 13000), CUCTX_FAKE_HIDE (comma-separated entry points the fake pretends not to have),
// CUCTX_FAKE_MPS (comma-separated ordinals whose CU_DEVICE_ATTRIBUTE_MPS_ENABLED is 1),
// CUCTX_FAKE_EXCLUSIVE_PROCESS (ordinals in compute mode Exclusive Process), CUCTX_FAKE_DRIVER_THREAD
// (1: the first cuInit starts an idle thread named cuda-EvtHandlr, as the real driver starts its own).
//
// Kernels that go wrong, by name (any module's .entry): launching `cuctx_fake_illegal_address`
// returns CUDA_ERROR_ILLEGAL_ADDRESS (a store to address 0 on a real device); launching
// `cuctx_fake_never_ends` never returns (a kernel that never ends): for worker processes only.

extern "C" {

/// Forgets all state (devices, contexts, counters, injected failures) and rereads the environment.
/// Whether cuInit was called survives (a real process cannot undo it); with CUCTX_FAKE_DEVICES=0
/// cuInit then answers CUDA_ERROR_NO_DEVICE. Every thread's stack is cleared (lazily, at its next
/// call).
void cuctx_fake_reset();

/// Makes the `nth` next call (1 = the very next) of the entry point `symbol` return `result`
/// without doing anything.
void cuctx_fake_fail(const char* symbol, int result, int nth);

/// Runs fn(arg) once, at the start of the next call of the entry point `symbol` (on the thread that
/// makes it, before the call does anything, injected failures included, and outside the fake's lock,
/// so that fn may wait for other threads' calls): a test's way to act while a call is in flight.
void cuctx_fake_on_call(const char* symbol, void (*fn)(void*), void* arg);

/// The sticky CUresult that poisoned `device` for the rest of the process (until a reset), 0 if none.
/// An injected failure (cuctx_fake_fail) with a sticky result (CUDA_ERROR_ILLEGAL_ADDRESS, ...) poisons
/// the device of the calling thread's current context, as the real driver does after a kernel fault:
/// from then on every call doing work in any context of that device, and cuCtxCreate on it, returns
/// that result; the context stack, device queries and cuCtxDestroy keep working.
int cuctx_fake_device_poisoned(int device);

/// How many times `symbol` has been called since the last reset.
long cuctx_fake_calls(const char* symbol);
/// Whether this thread is inside a call of the fake driver (for a test that makes allocations fail:
/// the fake's own are not cuctx's).
int cuctx_fake_inside_call();

/// Calls of every entry point since the last reset.
long cuctx_fake_total_calls();

/// Contexts created (cuCtxCreate) and not yet destroyed.
int cuctx_fake_live_contexts();

/// The primary context's retain count on `device`.
int cuctx_fake_primary_refcount(int device);

/// How many SMs two green contexts (CUgreenCtx handles) share. The real driver reports SM counts
/// only; the fake knows which SMs each split gave (see the green-context section of fake_driver.cpp).
int cuctx_fake_green_overlap(const void* a, const void* b);
/// Contexts that hold memory on `device`: its primary context when retained, and every created
/// (or green) context not yet destroyed. The fake NVML lists this process by it.
int cuctx_fake_device_contexts(int device);

} // extern "C"

extern "C" {

/// Modules loaded (cuModuleLoad*) and not yet unloaded.
int cuctx_fake_live_modules();

/// Whether the last module load was given JIT option `option` (a CUjit_option), and its value as
/// passed in (before the driver wrote back into in/out options).
int cuctx_fake_last_jit_option(int option, unsigned long long* value);

} // extern "C"

extern "C" {

/// Streams and events created and not yet destroyed.
int cuctx_fake_live_streams();
int cuctx_fake_live_events();

/// Device memory allocated (cuMemAlloc) and not yet freed.
int cuctx_fake_live_allocations();

} // extern "C"

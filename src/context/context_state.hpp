// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The shared state behind every cuctx::Context handle, and the registry of threads that use
// contexts. The lifetime rule (docs/contexts.md):
//
//   A context is destroyed (or its primary retain released) when its last handle is gone AND no
//   thread has it entered (a guard, a binding, a ContextStack push). Dropping the last handle while
//   a thread still uses it defers destruction to the moment that use ends; it never happens under
//   a thread that has the context current through cuctx.
//
// Handles count in `handles` (atomic, touched only when a handle is copied or dropped). Uses are
// the entries in each thread's record (cuctx/detail/thread_record.hpp), which only its thread
// writes, so entering and leaving a context costs no atomic read-modify-write on a line that other
// threads share. The thread that drops the last handle reads every thread's record after an
// asymmetric fence (asymmetric_fence.hpp); a thread that leaves an orphaned context rechecks under
// the registry's mutex. One of the two always sees the other, and whichever finds no use left
// destroys the context, once.

#include "cuctx/detail/context_state.hpp"
#include "cuctx/error.hpp"

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cuctx::detail {

/// The registry of contexts cuctx has made (created, retained or green) and not yet destroyed or
/// released: how many, and the description of one by its handle.
long liveContexts() noexcept;
/// Registering either does all of it (the journal attached, the state listed) or, when an allocation
/// fails, throws std::bad_alloc and changes nothing: the caller then frees what it made.
void registerContext(ContextState* state);
void registerContextLocked(ContextState* state); // under registryMutex()
std::optional<std::string> describeLiveContext(CUcontext handle);

/// "context 3 on device 0" (what error messages call it).
std::string describeContext(const ContextState& state);

/// Records an error on the context for its next fallible call, and logs it.
void recordSticky(ContextState& state, Error error) noexcept;
/// Throws the recorded error and clears it.
[[gnu::cold]] void throwRecorded(ContextState& state);
/// Throws the recorded error, if any, and clears it.
inline void throwSticky(ContextState& state)
{
    if (state.hasSticky.load(std::memory_order_acquire)) [[unlikely]]
        throwRecorded(state);
}

/// Drops one handle; the last one orphans the context and destroys it once no thread uses it.
void releaseHandle(ContextState* state) noexcept;

/// Called by a thread that left an orphaned context: destroys it if no thread has it entered.
void destroyIfUnused(ContextState* state) noexcept;

/// The threads (kernel ids) that have `state` entered right now.
std::vector<long> threadsUsing(const ContextState& state);

/// Every live context, in the order they were registered. Under registryMutex().
const std::vector<ContextState*>& liveContextsLocked();

/// What a layer above keeps per context (the module cache) goes through this hook: called once per
/// context, just before its driver object is destroyed, on the thread that destroys it, with no lock
/// of cuctx held. The module layer sets it when it first gives a context a cache; none is called
/// before. Thread-safe.
using ContextDestroyHook = void (*)(ContextState& state) noexcept;
void setContextDestroyHook(ContextDestroyHook hook) noexcept;

/// The live (not destroyed) state of `handle` with one more Context handle, or nullptr. An orphaned
/// state (its last handle gone while a thread uses it) is revived. The second under registryMutex().
ContextState* acquireLiveContext(CUcontext handle);
ContextState* acquireLiveContextLocked(CUcontext handle) noexcept;

/// Primary contexts are interned per device. Under registryMutex(): the live state of device
/// `ordinal`'s primary context with one more handle, or nullptr; and recording a new one.
ContextState* acquirePrimaryLocked(int ordinal) noexcept;
/// Room for device `ordinal`'s primary context (may throw std::bad_alloc, changing nothing), so that
/// remembering it afterwards cannot fail.
void reservePrimaryLocked(int ordinal);
void rememberPrimaryLocked(ContextState* state) noexcept; // after reservePrimaryLocked(state->ordinal)

} // namespace cuctx::detail

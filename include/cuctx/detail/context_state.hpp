// SPDX-License-Identifier: MIT
#pragma once

// Internal, not an API: the shared state behind every cuctx::Context handle. Its definition is
// here, not beside its source, because ContextGuard's inline code reads the handle and the leave
// flags straight from it. The rules that govern
// it are in src/context/context_state.hpp.

#include "cuctx/error.hpp"

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

namespace cuctx::detail {

struct ModuleCacheTable; // src/module/module_cache.cpp
struct LaunchJournal;    // src/context/launch_journal.hpp

/// `borrowed`: a context cuctx did not make (Context::borrow): never destroyed or released by cuctx.
enum class ContextKind : std::uint8_t { created, primary, green, borrowed };

struct ContextState {
    CUcontext handle = nullptr;
    // What the inline switching guard pushes: the handle, or null where entering must go out of line
    // (a green context, whose entry claims it for the thread). Set before the state is published and
    // never changed, so that entering loads one word beside the handle and tests nothing else of the
    // context's. The leave flags need no test there: the slow entry does nothing more for an orphaned
    // context (entered through a handle that counts nothing, a Module::cached reference's, or revived
    // with the flag still set) or an abandoned guard's, and every end of an entry, a failed push's
    // included, checks them.
    CUcontext inlineHandle = nullptr;
    CUdevice device = 0;
    int ordinal = -1;
    std::uint64_t id = 0; // cuCtxGetId, 0 where the driver lacks it
    // Atomic for one change after registration: a borrowed primary context becomes `primary` when
    // Context::primary retains it (under the registry mutex), while other threads may ask its kind.
    std::atomic<ContextKind> kind{ContextKind::created};
    CUgreenCtx green = nullptr; // for kind == green

    // What leaving the context must do beyond the thread's record, in one byte on the handle's line,
    // so that a switching guard reads it with the handle: kOrphaned (no handle left: the last use may
    // destroy it), kGreen (a green context: the thread's last entry of it releases it), kAbandonedGuard
    // (below). Any sends the guard's exit out of line; entering tests inlineHandle instead, since only
    // a green context needs more than the record there. Kept off the line below.
    static constexpr std::uint8_t kOrphaned = 1;
    static constexpr std::uint8_t kGreen = 2;
    // kAbandonedGuard: a guard of it outlived its thread (AbandonedEntry) and has not ended yet. Its
    // inline exit, on a thread that reuses the exited one's storage, may end that thread's entry of the
    // context at the same place; leaving looks (leftFlaggedContext).
    static constexpr std::uint8_t kAbandonedGuard = 4;
    std::atomic<std::uint8_t> leaveFlags{0};
    // A failure seen where it could not be thrown (a destructor), recorded in `sticky` for the next
    // fallible call, which reads this flag: kept off the line that every Context copy writes, so that
    // calls such as a module-cache hit do not slow down while other threads copy handles.
    std::atomic<bool> hasSticky{false};

    // Written on every copy of a Context, by any thread: on a cache line of its own.
    alignas(64) std::atomic<long> handles{1};
    bool destroyed = false; // guarded by the registry mutex

    // Green contexts may be current on one thread at a time: the owner's ThreadState::serial, 0 if none.
    std::atomic<std::uint64_t> greenOwner{0};

    // The recorded failure itself (hasSticky says whether there is one), under its mutex.
    std::mutex stickyMutex;
    std::optional<Error> sticky;

    // The launch journal (docs/faults.md): made when the context is registered, freed with it.
    LaunchJournal* journal = nullptr;

    // The context's module cache, made at its first use; emptied before the context is destroyed.
    std::atomic<ModuleCacheTable*> moduleCache{nullptr};

    // Once destroyed: the state retired before it (src/context/context_state.cpp keeps them all, in
    // a list that needs no allocation).
    ContextState* retiredBefore = nullptr;

    bool isGreen() const noexcept { return kind == ContextKind::green; }
    bool orphaned() const noexcept { return (leaveFlags.load(std::memory_order_relaxed) & kOrphaned) != 0; }
};

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#pragma once

// What cuctx knows about the calling thread: its frames (cuctx/detail/thread_top.hpp) above a `base`
// it found current, and one Slot per context the thread has entered, counting its uses. Thread-bound,
// except that Slots are read by the thread that orphans a context (context_state.hpp).

#include "context/context_state.hpp"
#include "context/fence.hpp"
#include "cuctx/context.hpp"
#include "cuctx/detail/thread_top.hpp"

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace cuctx::detail {

/// A thread's count of uses of one context. Written only by its thread; `state` and `uses` are
/// atomics so that an orphaning thread may read them.
struct Slot {
    std::atomic<ContextState*> state{nullptr};
    std::atomic<std::uint32_t> uses{0};
};

/// Slots live in blocks that never move, appended as a thread meets more contexts.
struct SlotBlock {
    static constexpr std::size_t kSize = 16;
    std::array<Slot, kSize> slots;
    std::atomic<SlotBlock*> next{nullptr};
};

struct ThreadState {
    ThreadState();
    ~ThreadState();
    ThreadState(const ThreadState&) = delete;
    ThreadState& operator=(const ThreadState&) = delete;

    /// What is current as cuctx believes: the top frame's context, else the base.
    CUcontext current() const noexcept;

    /// The slot counting this thread's uses of `state`, made if needed. No allocation unless the
    /// thread meets more than 16 contexts at once.
    Slot& slotFor(ContextState* state)
    {
        if (lastSlot != nullptr && lastSlot->state.load(std::memory_order_relaxed) == state) [[likely]]
            return *lastSlot;
        return findSlot(state);
    }
    Slot& findSlot(ContextState* state);

    /// Registers a use of `state` on this thread (a green context checks it is free here).
    void beginUse(Slot& slot, ContextState* state)
    {
        if (state->exclusive()) [[unlikely]]
            claimExclusive(slot, state);
        countUse(slot.uses);
    }
    /// Takes a green context for this thread at its first use here; Errc::context_busy if another
    /// thread has it.
    void claimExclusive(Slot& slot, ContextState* state);
    /// Ends a use; the last use of an orphaned context may destroy it (context_state.hpp).
    static void endUse(std::atomic<std::uint32_t>& uses, ContextState* state) noexcept
    {
        const std::uint32_t after = uses.load(std::memory_order_relaxed) - 1;
        uses.store(after, std::memory_order_release);
        if (after == 0)
            lastUseOnThread(state);
    }

    long tid;                 // gettid()
    std::uint64_t number;     // a process-unique thread number (green-context ownership)
    ThreadTop* top;           // this thread's t_top: a thread destroying a context resets its recent one
    CUcontext base = nullptr; // what was current below cuctx's entries when it first looked
    bool baseKnown = false;
    SlotBlock firstBlock;
    Slot* lastSlot = nullptr; // the slot found last: most threads use one context
};

/// Reads the driver's current context once, to learn what cuctx's entries sit on.
void learnBase(ThreadState& ts);

/// Every live ThreadState, under the registry mutex.
std::mutex& registryMutex();
std::vector<ThreadState*>& registeredThreads();

} // namespace cuctx::detail

namespace cuctx::detail {

extern constinit thread_local ThreadState* t_threadState;
/// Set once the thread's C++ thread-locals are being destroyed (it is exiting): the driver's own
/// per-thread stack may be gone already, so a pop that finds nothing is no mismatch.
extern constinit thread_local bool t_threadExiting;
ThreadState& makeThreadState();

inline ThreadState& threadState()
{
    if (ThreadState* ts = t_threadState) [[likely]]
        return *ts;
    return makeThreadState();
}

} // namespace cuctx::detail

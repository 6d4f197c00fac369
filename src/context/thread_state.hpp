// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// What cuctx knows about the calling thread: its frames (cuctx/detail/thread_record.hpp) above a `base`
// it found current, and one Slot per context the thread has entered, counting its uses (in t_record's
// slot table, or beyond it in blocks). Thread-bound, except that Slots are read by the thread that
// orphans a context (context_state.hpp).

#include "context/asymmetric_fence.hpp"
#include "context/context_state.hpp"
#include "cuctx/context.hpp"
#include "cuctx/detail/thread_record.hpp"

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace cuctx::detail {

/// Slots beyond the slot table (a green context's, or one whose table slot another context holds
/// in use) live in blocks that never move, appended as a thread meets more contexts.
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

    /// The slot counting this thread's uses of `state`, claimed if needed: its slot in the table where
    /// that is free (then the guard's inline path finds it), else one in the overflow blocks. A thread
    /// has at most one slot in use per context. No allocation unless the thread has more than 16
    /// contexts entered beyond its table at once.
    Slot& slotFor(ContextState* state)
    {
        Slot& slot = record->slots[state->slotIndex];
        if (slot.state.load(std::memory_order_relaxed) == state) [[likely]]
            return slot;
        return findSlot(state);
    }
    Slot& findSlot(ContextState* state);

    /// Calls f(slot) for each of this thread's slots, the table's first. A thread other than this
    /// one calls it only under the registry mutex.
    template <typename F>
    void forEachSlot(F f) const
    {
        for (const Slot& slot : record->slots)
            f(const_cast<Slot&>(slot));
        for (const SlotBlock* b = &firstBlock; b != nullptr; b = b->next.load(std::memory_order_acquire))
            for (const Slot& slot : b->slots)
                f(const_cast<Slot&>(slot));
    }

    /// Registers a use of `state` on this thread (a green context checks it is free here).
    void beginUse(Slot& slot, ContextState* state)
    {
        if (state->isGreen()) [[unlikely]]
            claimGreen(slot, state);
        countUse(slot.uses);
    }
    /// Takes a green context for this thread at its first use here; Errc::context_busy if another
    /// thread has it.
    void claimGreen(Slot& slot, ContextState* state);
    /// Ends a use; the last use of an orphaned context may destroy it (context_state.hpp).
    static void endUse(std::atomic<std::uint32_t>& uses, ContextState* state) noexcept
    {
        const std::uint32_t after = uses.load(std::memory_order_relaxed) - 1;
        uses.store(after, std::memory_order_release);
        if (after == 0)
            lastUseOnThread(state);
    }

    long tid;                 // gettid()
    std::uint64_t serial;     // unique in the process, never reused as kernel tids are (green-context ownership)
    ThreadRecord* record;     // this thread's t_record: a thread destroying a context clears its slots there
    CUcontext base = nullptr; // what was current below cuctx's entries when it first looked
    bool baseKnown = false;
    SlotBlock firstBlock;
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

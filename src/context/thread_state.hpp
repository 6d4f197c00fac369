// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// What cuctx knows about the calling thread beyond its record (cuctx/detail/thread_record.hpp): which
// entries keep a handle (pushes and an adoption), and the `base` it found current below its entries.
// Thread-bound, except that a thread destroying a context reads the record (under the registry mutex).

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

/// What an entry is: a guard's keeps no handle (the guard's caller holds one); a push's or adoption's
/// keeps one until it is popped or released.
enum class StackEntryKind : std::uint8_t { guard, push, adopted };

struct ThreadState {
    ThreadState();
    ~ThreadState();
    ThreadState(const ThreadState&) = delete;
    ThreadState& operator=(const ThreadState&) = delete;

    /// What is current as cuctx believes: the top entry's context, else the base.
    CUcontext current() const noexcept;

    /// Whether `state` is one of this thread's entries. A thread other than this one calls it only
    /// under the registry mutex, after the fence that pairs with the leaving thread's (context_state.hpp).
    bool hasEntry(const ContextState* state) const noexcept;

    /// What entry `k` (1 to the depth) is.
    StackEntryKind kindOf(std::uint32_t k) const noexcept;

    /// Claims a green context for this thread at its first entry here; Errc::context_busy if another
    /// thread has it. True if this call claimed it (it had no entry of it here).
    bool claimGreen(ContextState* state);

    long tid;                 // gettid()
    std::uint64_t serial;     // unique in the process, never reused as kernel tids are (green-context ownership)
    ThreadRecord* record;     // this thread's t_record, which threads destroying a context read
    CUcontext base = nullptr; // what was current below cuctx's entries when it first looked
    bool baseKnown = false;
    // Bit k: entry k keeps a handle (a push, or the adoption). Written by this thread, and by a thread
    // that ends one of this thread's guards (misuse), which turns its entry into a push.
    std::atomic<std::uint32_t> owned{0};
    bool adopted = false; // entry 1 is an adoption
};

/// Where a record's top points (&g_offRecord[0]) while the inline guard must go out of line
/// (unregistered, exited, forked child): an entry outside every record, holding the placeholder, and
/// above it a null slot, where the inline guard finds no room. Never written.
extern RecordEntry g_offRecord[2];

/// The depth `top` stands for in `record`: the index of the entry it points to, 0 off the record.
inline std::uint32_t depthAt(const ThreadRecord& record, const RecordEntry* top) noexcept
{
    return top == &g_offRecord[0] ? 0 : static_cast<std::uint32_t>(top - record.entries);
}

/// Another thread's depth, for a thread reading its record under the registry mutex (acquire: the
/// entries up to it are written).
inline std::uint32_t publishedDepth(const ThreadRecord& record) noexcept
{
    return depthAt(record, record.top.load(std::memory_order_acquire));
}

/// The entries of this thread's record in use (the hidden ones in a forked child): 0 if none.
inline std::uint32_t recordDepth() noexcept
{
    const ThreadRecord& record = t_record;
    return record.forked ? record.hiddenDepth : depthAt(record, record.top.load(std::memory_order_relaxed));
}

/// Sets the depth after the entries up to it are written (on a registered thread).
inline void setRecordDepth(std::uint32_t depth) noexcept
{
    ThreadRecord& record = t_record;
    if (record.forked) [[unlikely]]
        record.hiddenDepth = depth;
    else
        record.top.store(&record.entries[depth], std::memory_order_release);
}

/// The context of this thread's entry `k` (1 to the depth).
inline ContextState* entryAt(std::uint32_t k) noexcept
{
    return t_record.entries[k].load(std::memory_order_relaxed);
}

/// Reads the driver's current context once, to learn what cuctx's entries sit on.
void learnBase(ThreadState& ts);

/// Every live ThreadState, under the registry mutex.
std::mutex& registryMutex();
std::vector<ThreadState*>& registeredThreads();

/// A guard's entry whose thread exited while the guard lived (handed to another thread, which has
/// not destroyed it yet): it keeps its context in use, as the entry did in the thread's record, until
/// the guard is destroyed. Matched by the entry's address and context, since a thread started later
/// may reuse the exited one's thread-local storage. Under the registry mutex.
struct AbandonedEntry {
    const RecordEntry* entry;
    ContextState* state;
};
std::vector<AbandonedEntry>& abandonedEntries();

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

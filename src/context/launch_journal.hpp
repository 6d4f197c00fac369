// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The launch journal (docs/faults.md): per context, the last kSlots launches in a ring that
// cuctx::launch writes with a handful of relaxed stores, no allocation and no lock. A slot is a
// seqlock: its sequence word is odd while the launching thread writes it, and 2 * (n + 1) once it
// holds launch n; a reader keeps a slot only when it reads the same even word before and after the
// fields. Every field is an atomic, so concurrent writers and readers are data-race free (and clean
// under ThreadSanitizer): a torn slot is detected and skipped, never undefined behaviour. (Two
// writers on one slot, 32 launches apart, racing within one slot's few stores could leave a mixed
// entry; it would only mislabel a suspect.)

#include "context/context_state.hpp"

#include "cuctx/launch_config.hpp"
#include "cuctx/source_location.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace cuctx::detail {

struct JournalSlot {
    std::atomic<std::uint64_t> sequence{0};
    std::atomic<const char*> kernel{nullptr}; // interned (internKernelName): never freed
    std::atomic<std::uint64_t> gridXY{0}, gridZBlockX{0}, blockYZ{0};
    std::atomic<std::uintptr_t> stream{0};
    std::atomic<long> thread{0};
    std::atomic<const char*> file{nullptr}; // a string literal of the caller's source location
    std::atomic<std::uint32_t> line{0};
};

struct LaunchJournal {
    static constexpr std::size_t kSlots = 32;
    static constexpr std::size_t kStreams = 16;

    const ContextState* context = nullptr; // its owner (for describing it), set once

    // Launch numbers: taken by every launching thread of the context, on a line of its own.
    alignas(64) std::atomic<std::uint64_t> next{0};
    // Launches numbered below this were retired by a successful Context::synchronize.
    std::atomic<std::uint64_t> contextSynced{0};
    // Per stream, launches numbered below its mark were retired by a successful Stream::synchronize
    // (a small table, replaced round-robin; the sync path may lock, the launch path never does).
    std::mutex streamsMutex;
    std::array<std::pair<std::uintptr_t, std::uint64_t>, kStreams> streamSynced{};
    std::size_t nextStreamRow = 0;

    std::array<JournalSlot, kSlots> slots;
};

/// Whether cuctx::launch journals (cuctx::setLaunchJournal; CUCTX_LAUNCH_JOURNAL=0 turns it off).
extern std::atomic<bool> g_journalOn;

/// A stable copy of "kernel 'k' of 'module'" for journal slots: interned once per kernel, never freed.
const char* internKernelName(const std::string& kernel, const std::string& module);

/// Makes `state`'s journal (at registration) and forgets it (before the state is freed).
void attachJournal(ContextState& state);
void detachJournal(ContextState& state) noexcept;

/// The launch path: a fetch-add and a few stores into the next slot.
inline void recordLaunch(LaunchJournal& j, const char* kernel, const LaunchConfig& c, const SourceLocation& where,
                         long thread) noexcept
{
    const std::uint64_t n = j.next.fetch_add(1, std::memory_order_relaxed);
    JournalSlot& s = j.slots[n % LaunchJournal::kSlots];
    // Release stores of the fields (plain stores on x86, and no fence, which ThreadSanitizer does not
    // model): a reader that sees a new field value sees the odd sequence word before it too.
    s.sequence.store(2 * n + 1, std::memory_order_relaxed);
    s.kernel.store(kernel, std::memory_order_release);
    s.gridXY.store(std::uint64_t{c.grid.x} | std::uint64_t{c.grid.y} << 32, std::memory_order_release);
    s.gridZBlockX.store(std::uint64_t{c.grid.z} | std::uint64_t{c.block.x} << 32, std::memory_order_release);
    s.blockYZ.store(std::uint64_t{c.block.y} | std::uint64_t{c.block.z} << 32, std::memory_order_release);
    s.stream.store(reinterpret_cast<std::uintptr_t>(c.stream.native()), std::memory_order_release);
    s.thread.store(thread, std::memory_order_release);
    s.file.store(where.file_name(), std::memory_order_release);
    s.line.store(where.line(), std::memory_order_release);
    s.sequence.store(2 * n + 2, std::memory_order_release);
}

/// Launch numbering as a synchronisation starts, and its retirement once it succeeded.
inline std::uint64_t journalMark(const ContextState& state) noexcept
{
    return state.journal != nullptr ? state.journal->next.load(std::memory_order_acquire) : 0;
}
void journalContextSynced(ContextState& state, std::uint64_t mark) noexcept;
void journalStreamSynced(ContextState& state, CUstream stream, std::uint64_t mark) noexcept;

/// The journalled launches of `state`, oldest first; with `pendingOnly`, those not yet retired by a
/// synchronisation.
std::vector<std::string> journalEntries(const ContextState& state, bool pendingOnly);

/// This thread's kernel id, cached.
long journalThreadId() noexcept;

} // namespace cuctx::detail

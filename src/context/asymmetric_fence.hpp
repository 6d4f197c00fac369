// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// An asymmetric fence: the rare side (orphaning a context) pays for a full barrier on every thread of
// the process (membarrier(2) PRIVATE_EXPEDITED, or on x86 an mprotect TLB shootdown where containers
// filter membarrier), so that the frequent side (leaving a context) needs only a compiler barrier.
// Where neither works the frequent side falls back to a real fence; under ThreadSanitizer, which models neither, both
// sides make a seq_cst read-modify-write of one shared atomic, which orders them in a way it understands.

#include "cuctx/detail/thread_record.hpp"

#include <atomic>

#if defined(__SANITIZE_THREAD__)
#define CUCTX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CUCTX_TSAN 1
#endif
#endif

namespace cuctx::detail {

enum class FenceMode { membarrier, mprotect, none };
/// How the two sides are ordered. An atomic, read relaxed by the frequent side (a plain load on every
/// target cuctx runs on), because heavyFence() may switch it to `none` while other threads read it,
/// and tests switch it: race-free by construction, in the ThreadSanitizer build too, which reads it
/// on both sides like the others (it merely adds an RMW that it understands).
extern std::atomic<FenceMode> g_fenceMode;
/// Changes the mode (and what the inline leave path of ContextGuard relies on); tests use it.
void setFenceMode(FenceMode mode) noexcept;
/// Whether leaving a context needs only a compiler barrier (the orphaning side pays for an
/// asymmetric fence). Where it does not, g_pop diverts (thread_record.hpp): guards leave out of line.
bool leaveFenceIsCompilerOnly() noexcept;
extern std::atomic<unsigned> g_fenceWord;

/// "membarrier", "mprotect" or "seq_cst fences": how this process orders the two sides.
const char* fenceModeName() noexcept;

/// The frequent side: ordered against heavyFence() on any other thread.
inline void lightFence() noexcept
{
    const FenceMode mode = g_fenceMode.load(std::memory_order_relaxed);
#ifdef CUCTX_TSAN
    (void)mode; // ThreadSanitizer sees the read, and an ordering it models:
    g_fenceWord.fetch_add(1, std::memory_order_seq_cst);
#else
    if (mode != FenceMode::none) [[likely]]
        std::atomic_signal_fence(std::memory_order_seq_cst);
    else
        std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

/// The rare side: a full barrier on every running thread of the process.
void heavyFence() noexcept;

} // namespace cuctx::detail

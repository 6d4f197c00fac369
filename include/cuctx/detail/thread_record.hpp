// SPDX-License-Identifier: MIT
#pragma once

// Internal, not an API: cuctx's record of a thread's context stack, as ContextGuard's inline code
// needs it. Each entry cuctx makes is a Frame: a switching guard's lives inside the guard object (so
// a guard allocates nothing and touches no container), a push's or adoption's on the heap. Frames
// link to the one below; t_record names the top one and holds the thread's use counters of the
// contexts it enters (its slot table), so that a guard costs, inlined into the caller, a compare and
// an increment when its context is current, and little more than the driver's push and pop when it
// must switch, whichever context it switches to. The switching path is measured part by part
// (cuctx-bench-guard-anatomy): on the H200 every store and test it makes around the driver's calls
// shows (the driver's own atomics wait for them), so it writes and tests as little as it can: what a
// frame can read from its context's state, it does not copy; the top is one pointer; the driver's
// entry points are never null.
//
// Words used here and in src/context/:
//   record       t_record, a thread's ThreadRecord: its top frame and its slot table; "top" always
//                means the top frame
//   frame        one entry cuctx made on this thread's stack (a guard, a push, an adoption); an
//                elided guard's frame is never linked
//   bottom frame g_bottomFrame, where the frames end; the top names it when cuctx has no entry
//   placeholder  g_placeholderContext, the bottom frame's context: matches no guard's context
//   base         what the driver had current below cuctx's entries when cuctx last looked
//   slot         a thread's count of its uses of one context; only its thread writes it, a thread
//                destroying the context reads it (context/context_state.hpp)
//   slot table   the slots in t_record, one per slot index (ContextState::slotIndex): a guard finds
//                its context's slot with one load; more contexts at once, and green contexts, take
//                slots in ThreadState's overflow blocks, out of line
//   diversion    what g_push/g_pop point to where the inline path must not call the driver
//   orphaned     a context whose last handle is gone while a thread still uses it
//   hidden       a forked child's frames, moved out of the guards' sight

#include "cuctx/export.hpp"
#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

// The guard's fast paths are a few dozen instructions: inlined, they cost no call and no saved
// registers around the driver's own call.
#if defined(__GNUC__) || defined(__clang__)
#define CUCTX_ALWAYS_INLINE [[gnu::always_inline]] inline
#else
#define CUCTX_ALWAYS_INLINE inline
#endif

namespace cuctx::detail {

struct ContextState;

/// `elided` marks a guard that entered the context already current: its frame is never linked.
enum class FrameKind : std::uint8_t { guard, push, adopted, elided };

// No default member initialisers: a guard sets only what its path uses (an elided guard two fields),
// so that entering costs no dead stores. `Frame{}` zeroes everything, as heap frames want.
struct Frame {
    ContextState* state;
    std::atomic<std::uint32_t>* uses; ///< this thread's use count of `state`
    Frame* below;
    FrameKind kind;
};

/// Counts a use on this thread's own counter of a context: only this thread writes it, so a plain
/// load and store do (no atomic read-modify-write); other threads only read it.
inline void countUse(std::atomic<std::uint32_t>& uses) noexcept
{
    uses.store(uses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

/// A push or adoption keeps one count of the context's handles; a guard relies on its caller's.
inline bool ownsHandle(const Frame& frame) noexcept
{
    return frame.kind == FrameKind::push || frame.kind == FrameKind::adopted;
}

/// A placeholder context no Context refers to (only its address is used): the bottom frame's, so that
/// it never matches a guard's context (an empty Context's included) and the elided check needs no
/// test for null.
extern CUCTX_API ContextState g_placeholderContext;
/// Where a thread's frames end: the top names it when cuctx has no entry on the thread, so that the
/// top is never null. Its context is the placeholder.
extern CUCTX_API Frame g_bottomFrame;

/// A thread's count of its uses of one context. Written only by its thread; `state` and `uses` are
/// atomics so that a thread destroying the context may read them (under the registry mutex).
struct Slot {
    std::atomic<ContextState*> state{nullptr};
    std::atomic<std::uint32_t> uses{0};
};

/// Slots in a thread's table. Each context takes the index the fewest live contexts have, so a
/// process with up to this many contexts never has two share a slot, and every guard finds its
/// context's slot inline. 16 slots are 256 bytes of each thread's static TLS.
inline constexpr std::size_t kSlotTableSize = 16;

struct ThreadRecord {
    // The top frame; the elided guard's check reads its context through it (a dependent load, which
    // saves the switching guard a store on entry and one on exit). A child forked after CUDA was
    // initialised moves its frames to `hidden` and points this at the bottom, which sends every
    // guard there out of line; the frames stay linked so that scopes the parent opened can unwind.
    Frame* frame = &g_bottomFrame;
    // In a forked child: the real top, and that the frames live there.
    Frame* hidden = &g_bottomFrame;
    bool forked = false;
    // The slot table: slots[i] counts this thread's uses of a context whose slotIndex is i, when it
    // holds that context. Only this thread claims a slot for a context (out of line); a thread that
    // destroys a context clears its slots (to nullptr) before the state is freed, so an address reused
    // by a later context never matches a stale slot. Green contexts never live here: their first use
    // on a thread must claim them, which the out-of-line path does.
    Slot slots[kSlotTableSize];
};

// constinit: no TLS init wrapper on the hot path. The initial-exec model, declared here so that it
// holds in every program that inlines a guard: position-independent code (a backend's own shared
// library, a static library built with -fPIC) would otherwise reach t_record through __tls_get_addr,
// a call per access. cuctx's thread-locals are under 300 bytes, so programs loading it with dlopen
// do not run short of static TLS (glibc keeps 512 bytes for them).
#if defined(__GNUC__) || defined(__clang__)
#define CUCTX_TLS_INITIAL_EXEC __attribute__((tls_model("initial-exec")))
#else
#define CUCTX_TLS_INITIAL_EXEC
#endif
extern CUCTX_API constinit thread_local ThreadRecord t_record CUCTX_TLS_INITIAL_EXEC;

/// The driver's push and pop for the inline switching guard, set once the driver is loaded. Where
/// that guard must not call the driver itself, they are cuctx's diversions, which return kDiverted
/// and send the guard out of line: before the driver is loaded, in a child forked after CUDA was
/// initialised (the slow path reports the fork), while cuctx logs at trace level (the slow path logs
/// every switch) and, for the pop, where a thread leaving a context needs a real fence (no
/// asymmetric fence available, ThreadSanitizer builds). Never null: the inline guard tests nothing
/// before calling. Two plain pointers rather than one to a pair: each costs one load.
using PushFn = CUresult(CUDAAPI*)(CUcontext);
using PopFn = CUresult(CUDAAPI*)(CUcontext*);
extern CUCTX_API constinit std::atomic<PushFn> g_push;
extern CUCTX_API constinit std::atomic<PopFn> g_pop;
/// Returned by the diversions; within CUresult's range, and no driver result.
inline constexpr CUresult kDiverted = static_cast<CUresult>(1000);

/// cuctx's top frame on this thread, nullptr if none (in a forked child, the hidden one).
inline Frame* topFrame() noexcept
{
    const ThreadRecord& record = t_record;
    Frame* frame = record.forked ? record.hidden : record.frame;
    return frame != &g_bottomFrame ? frame : nullptr;
}

/// The frame below `frame`, nullptr at the bottom.
inline Frame* frameBelow(const Frame& frame) noexcept
{
    return frame.below != &g_bottomFrame ? frame.below : nullptr;
}

/// Makes `frame` the top; nullptr or &g_bottomFrame for none.
inline void setTop(Frame* frame) noexcept
{
    ThreadRecord& record = t_record;
    Frame* const f = frame != nullptr ? frame : &g_bottomFrame;
    if (record.forked) [[unlikely]]
        record.hidden = f;
    else
        record.frame = f;
}

/// Out of line, rare: the last use of a context on this thread ended (a green context releases its
/// owner; an orphaned one is destroyed if no other thread uses it).
// Marked cold so that their call sites, inlined into every guard, cost the hot path nothing (no
// registers kept for them, no code in the way): measured, 0.5-1 ns of a switching guard.
[[gnu::cold]] CUCTX_API void lastUseOnThread(ContextState* state) noexcept;

} // namespace cuctx::detail

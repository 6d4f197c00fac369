// SPDX-License-Identifier: MIT
#pragma once

// Internal, not an API: cuctx's record of a thread's context stack, as ContextGuard's inline code
// needs it. The record is an array in static TLS: entries[k] is the context of cuctx's k-th entry on
// this thread's stack (a switching guard, a push, an adoption), bottom first, and `top` points to the
// last of them (entries[0] when there is none). A switching guard writes its context and the new top,
// and on exit the old top: two stores and one, all to one thread's own lines, and no counter
// anywhere. Threads that destroy a context read the others' records (under the registry mutex, after
// an asymmetric fence): a context is in use on a thread while it is one of that thread's entries, so
// the record both says what is current and keeps what it names alive. The guard's own members (the
// context and its entry) do not escape it, so the compiler keeps them in registers. Measured part by
// part (cuctx-bench-guard-anatomy): every store around the driver's calls shows, since the driver's
// own atomics wait for them; a frame linked through guard objects with a use counter per context cost
// three times what this costs, and a depth beside the entries (the top's index instead of its
// address, which the guard then keeps across the pop and turns into an address) 1-2% more.
//
// Words used here and in src/context/:
//   record       t_record, a thread's ThreadRecord; "top" is the entry its `top` points to, "depth"
//                that entry's index
//   entry        one context cuctx made current on this thread (a guard, a push, an adoption); an
//                elided guard (its context already on top) makes none
//   placeholder  g_placeholderContext, entries[0]: matches no guard's context (an empty Context's
//                included), so the elided check needs no test for null or for an empty stack
//   end slot     entries[kRecordEntries], null forever: the inline guard loads the slot it is about
//                to write and goes out of line if it is null, which costs one load from a line the
//                thread already holds instead of the thread pointer (a load from %fs:0) to compute
//                where the slot lies; every other slot holds the placeholder until written, and no
//                writer stores null
//   off record   g_offRecord, where `top` points while the inline guard must go out of line: until
//                the thread is registered (a destroyer must see its entries before it makes any),
//                after it exits, and in a forked child; its first slot holds the placeholder, its
//                second null, so that a guard finds no room above it
//   base         what the driver had current below cuctx's entries when cuctx last looked
//   diversion    what g_push/g_pop point to where the inline path must not call the driver
//   orphaned     a context whose last handle is gone while a thread still uses it
//   hidden       a forked child's entries, moved out of the guards' sight (hiddenDepth)

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

/// A placeholder context no Context refers to (only its address is used): every record's entries[0],
/// so that it never matches a guard's context, an empty Context's included.
extern CUCTX_API ContextState g_placeholderContext;

/// Entries in a thread's record, the placeholder included: cuctx keeps at most kRecordEntries - 1
/// contexts entered at once on one thread (Errc::invalid_state beyond). 32 entries and the end slot
/// are 264 bytes of each thread's static TLS.
inline constexpr std::uint32_t kRecordEntries = 32;

/// One entry: the context, written only by the record's thread.
using RecordEntry = std::atomic<ContextState*>;

struct ThreadRecord {
    /// cuctx's entries on this thread are entries[1] up to the one `top` points to (entries[0]: none),
    /// or none while it points off the record (g_offRecord, in src/context/thread_state.hpp). Written only by its
    /// thread (a release store after the entry it covers); read by threads destroying a context.
    std::atomic<RecordEntry*> top;
    /// entries[kRecordEntries] is the end slot: null, never written.
    RecordEntry entries[kRecordEntries + 1];
    /// In a child forked after CUDA was initialised: the parent's depth, moved out of the guards'
    /// sight (the top is off the record there, so every guard goes out of line and reports the fork),
    /// and that it was. The entries stay, so that scopes the parent opened can unwind.
    std::uint32_t hiddenDepth;
    bool forked;
};

// constinit: no TLS init wrapper on the hot path. The initial-exec model, declared here so that it
// holds in every program that inlines a guard: position-independent code (a backend's own shared
// library, a static library built with -fPIC) would otherwise reach t_record through __tls_get_addr,
// a call per access. cuctx's thread-locals take 328 bytes (test/consumers/check_symbols.py keeps
// them under 384), so programs loading it with dlopen do not run short of static TLS (glibc keeps
// 512 bytes for them).
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

/// Out of line, rare: this thread left an entry of a context with leave flags (green: if it was the
/// thread's last entry of it, it releases its owner; orphaned: it is destroyed if no thread uses it).
// Marked cold so that their call sites, inlined into every guard, cost the hot path nothing (no
// registers kept for them, no code in the way): measured, 0.5-1 ns of a switching guard.
[[gnu::cold]] CUCTX_API void leftFlaggedContext(ContextState* state) noexcept;

} // namespace cuctx::detail

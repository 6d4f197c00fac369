#pragma once

// Internal, not an API: cuctx's record of a thread's context stack, as ContextGuard's inline code
// needs it. Each entry cuctx makes is a Frame: a switching guard's lives inside the guard object (so
// a guard allocates nothing and touches no container), a push's or adoption's on the heap. Frames
// link to the one below; t_top names the top one and caches its context, plus the context this
// thread switched to last, so that a guard costs, inlined into the caller, a compare
// and an increment when its context is current, and little more than the driver's push and pop when
// it must switch. Measured on the H200, every store the guard makes around the driver's calls costs
// about 0.2 ns (the driver's own atomics wait for them to drain), so the switching path writes as few
// as it can: what a frame can read from its context's state, it does not copy.

#include <cuda.h>

#include <atomic>
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

/// A push or adoption keeps one count of the context's handles; a guard relies on its caller's.
inline bool ownsHandle(const Frame& frame) noexcept
{
    return frame.kind == FrameKind::push || frame.kind == FrameKind::adopted;
}

struct ThreadTop {
    // The top frame's context (copied out of it so that an elided guard's check is one load), and
    // the frame. A forked child clears `state` alone, which sends every guard out of line. The top
    // frame's use counter is not copied: an elided guard reads it from the frame, which costs it a
    // dependent load and saves a switching guard two stores.
    ContextState* state = nullptr;
    Frame* frame = nullptr;
    // The context this thread last pushed, when it is a plain one (not green): a guard switching to
    // it again needs nothing from cuctx's tables. Valid while its slot still names it: a destroyed
    // context's slot is cleared before its state is freed, so an address reused by a later context
    // never matches a stale entry.
    ContextState* recentState = nullptr;
    std::atomic<ContextState*>* recentSlot = nullptr;
    std::atomic<std::uint32_t>* recentUses = nullptr;
};

// constinit: no TLS init wrapper on the hot path. The initial-exec model, declared here so that it
// holds in every program that inlines a guard: position-independent code (a backend's own shared
// library, a static library built with -fPIC) would otherwise reach t_top through __tls_get_addr,
// a call per access. cuctx's thread-locals are a few dozen bytes, so programs loading it with dlopen
// do not run short of static TLS.
#if defined(__GNUC__) || defined(__clang__)
#define CUCTX_TLS_INITIAL_EXEC __attribute__((tls_model("initial-exec")))
#else
#define CUCTX_TLS_INITIAL_EXEC
#endif
extern constinit thread_local ThreadTop t_top CUCTX_TLS_INITIAL_EXEC;

/// The driver's push and pop for the inline switching guard: set once the driver is loaded, and
/// nullptr before, in a child forked after CUDA was initialised (so that guards there take the path
/// that reports the fork) and while cuctx logs at trace level (so that the out-of-line path logs
/// every switch, and the inline one needs no check of the level). g_pop is also nullptr where a
/// thread leaving a context needs a real fence (no asymmetric fence available, ThreadSanitizer
/// builds): the inline exit then needs no check of the fence mode. Two plain pointers rather than
/// one to a pair: each costs one load.
using PushFn = CUresult(CUDAAPI*)(CUcontext);
using PopFn = CUresult(CUDAAPI*)(CUcontext*);
extern constinit std::atomic<PushFn> g_push;
extern constinit std::atomic<PopFn> g_pop;

/// Makes `frame` (or nothing) the top.
inline void setTop(Frame* frame) noexcept
{
    ThreadTop& top = t_top;
    top.state = frame != nullptr ? frame->state : nullptr;
    top.frame = frame;
}

/// Out of line, rare: the last use of a context on this thread ended; a guard's push failed
/// (throws); a guard's pop found another context or failed.
// Marked cold so that their call sites, inlined into every guard, cost the hot path nothing (no
// registers kept for them, no code in the way): measured, 0.5-1 ns of a switching guard.
[[gnu::cold]] void lastUseOnThread(ContextState* state) noexcept;
[[gnu::cold]] void lastUseEnded(ContextState* state) noexcept;
[[gnu::cold, noreturn]] void guardPushFailed(Frame& frame, CUresult result);
[[gnu::cold]] void guardPopFailed(Frame& frame, CUresult result, CUcontext popped) noexcept;

} // namespace cuctx::detail

#pragma once

// Internal, not an API: cuctx's record of a thread's context stack, as ContextGuard's inline code
// needs it. Each entry cuctx makes is a Frame: a switching guard's lives inside the guard object (so
// a guard allocates nothing and touches no container), a push's or adoption's on the heap. Frames
// link to the one below; t_top names the top one and caches its context and use counter, so that a
// guard on the current context costs a thread-local compare and an increment, inlined into the caller.

#include <atomic>
#include <cstdint>

namespace cuctx::detail {

struct ContextState;

enum class FrameKind : std::uint8_t { guard, push, adopted };

struct Frame {
    ContextState* state = nullptr;
    std::atomic<std::uint32_t>* uses = nullptr; ///< this thread's use count of `state`
    Frame* below = nullptr;
    std::uint32_t depth = 0; ///< 1 for the bottom frame
    FrameKind kind = FrameKind::guard;
    bool ownsHandle = false; ///< a push or adoption keeps one count of the context's handles
};

struct ThreadTop {
    ContextState* state = nullptr;
    std::atomic<std::uint32_t>* uses = nullptr;
    Frame* frame = nullptr;
};

// constinit: no TLS init wrapper on the hot path. cuctx's thread-locals are a few dozen bytes, so
// that programs loading it with dlopen do not run short of static TLS.
extern constinit thread_local ThreadTop t_top;

/// Makes `frame` (or nothing) the top.
inline void setTop(Frame* frame) noexcept
{
    t_top = frame != nullptr ? ThreadTop{frame->state, frame->uses, frame} : ThreadTop{};
}

/// What happens when this thread's last use of a context ends (out of line: rare).
void lastUseOnThread(ContextState* state) noexcept;

} // namespace cuctx::detail

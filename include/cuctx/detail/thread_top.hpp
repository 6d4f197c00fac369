#pragma once

// Internal: the one piece of per-thread state that ContextGuard's inline fast path reads, so that a
// guard on the context already current costs a thread-local compare and an increment, inlined into
// the caller. Maintained by cuctx whenever its entries on this thread change. Not an API.

#include <atomic>
#include <cstdint>

namespace cuctx::detail {

struct ContextState;

struct ThreadTop {
    const ContextState* state = nullptr;          ///< cuctx's top entry on this thread, if any
    std::atomic<std::uint32_t>* uses = nullptr;  ///< that context's use count on this thread
};

// constinit: no TLS init wrapper on the hot path. Only this small object is thread-local in cuctx,
// so that programs loading cuctx with dlopen do not run short of static TLS.
extern constinit thread_local ThreadTop t_top;

/// What a guard does when its thread's last use of a context ends (out of line: rare).
void lastUseOnThread(ContextState* state) noexcept;

} // namespace cuctx::detail

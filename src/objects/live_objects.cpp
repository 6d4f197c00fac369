// SPDX-License-Identifier: MIT
#include "cuctx/live_objects.hpp"

#include "context/context_state.hpp"
#include "objects/live_objects.hpp"

namespace cuctx {

namespace detail {
std::atomic<long> g_liveModules{0};
std::atomic<long> g_liveStreams{0};
std::atomic<long> g_liveEvents{0};
std::atomic<long> g_liveBuffers{0};
} // namespace detail

LiveObjects liveObjects() noexcept
{
    return {detail::liveContexts(), detail::g_liveModules.load(std::memory_order_relaxed),
            detail::g_liveStreams.load(std::memory_order_relaxed), detail::g_liveEvents.load(std::memory_order_relaxed),
            detail::g_liveBuffers.load(std::memory_order_relaxed)};
}

} // namespace cuctx

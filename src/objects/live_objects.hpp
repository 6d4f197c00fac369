// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The counters behind cuctx::liveObjects(): incremented when a driver object is made, decremented
// when it is destroyed (whether or not the driver's destroy call succeeded).

#include <atomic>

namespace cuctx::detail {

extern std::atomic<long> g_liveModules;
extern std::atomic<long> g_liveStreams;
extern std::atomic<long> g_liveEvents;
extern std::atomic<long> g_liveBuffers;

} // namespace cuctx::detail

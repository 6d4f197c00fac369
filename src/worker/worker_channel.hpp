#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// Whole messages over a stream socket, with a deadline: what GpuWorker and its worker program share.

#include "worker/worker_protocol.hpp"

#include <chrono>
#include <cstddef>
#include <span>
#include <vector>

namespace cuctx::detail::worker {

using Clock = std::chrono::steady_clock;

enum class IoStatus {
    ok,
    closed,    ///< the other end closed the socket (or reset it)
    timeout,   ///< the deadline passed
    malformed, ///< a header that is not ours (wrong magic, version, type or length)
    failed,    ///< a system error (errno says which)
};

/// Writes all of `bytes` (never raising SIGPIPE).
IoStatus sendAll(int fd, std::span<const std::byte> bytes, Clock::time_point deadline);

/// Reads one message: its header into `header`, its payload into `payload`.
IoStatus receive(int fd, Header& header, std::vector<std::byte>& payload, Clock::time_point deadline);

} // namespace cuctx::detail::worker

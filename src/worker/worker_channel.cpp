// SPDX-License-Identifier: MIT
#include "worker/worker_channel.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace cuctx::detail::worker {

namespace {

// Waits until `fd` is ready for `events` or the deadline passes.
IoStatus waitFor(int fd, short events, Clock::time_point deadline)
{
    for (;;) {
        int timeoutMs = -1;
        if (deadline != Clock::time_point::max()) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
            if (left <= 0)
                return IoStatus::timeout;
            timeoutMs = left > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(left);
        }
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, timeoutMs);
        if (n > 0)
            return IoStatus::ok; // readable, writable, or hung up: the read or write says which
        if (n == 0)
            continue; // re-check the deadline
        if (errno != EINTR)
            return IoStatus::failed;
    }
}

IoStatus receiveExactly(int fd, std::byte* out, std::size_t bytes, Clock::time_point deadline)
{
    std::size_t done = 0;
    while (done < bytes) {
        if (IoStatus s = waitFor(fd, POLLIN, deadline); s != IoStatus::ok)
            return s;
        const ssize_t n = ::recv(fd, out + done, bytes - done, 0);
        if (n == 0)
            return IoStatus::closed;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return errno == ECONNRESET ? IoStatus::closed : IoStatus::failed;
        }
        done += static_cast<std::size_t>(n);
    }
    return IoStatus::ok;
}

} // namespace

IoStatus sendAll(int fd, std::span<const std::byte> bytes, Clock::time_point deadline)
{
    std::size_t done = 0;
    while (done < bytes.size()) {
        if (IoStatus s = waitFor(fd, POLLOUT, deadline); s != IoStatus::ok)
            return s;
        const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return (errno == EPIPE || errno == ECONNRESET) ? IoStatus::closed : IoStatus::failed;
        }
        done += static_cast<std::size_t>(n);
    }
    return IoStatus::ok;
}

IoStatus receive(int fd, Header& header, std::vector<std::byte>& payload, Clock::time_point deadline)
{
    std::byte raw[kHeaderBytes];
    if (IoStatus s = receiveExactly(fd, raw, kHeaderBytes, deadline); s != IoStatus::ok)
        return s;
    const auto decoded = decodeHeader(raw);
    if (!decoded)
        return IoStatus::malformed;
    header = *decoded;
    payload.resize(header.length);
    return receiveExactly(fd, payload.data(), payload.size(), deadline);
}

} // namespace cuctx::detail::worker

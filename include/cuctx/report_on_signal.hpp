// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::ReportOnSignal: a cuctx::processReport() whenever the process receives a signal.

#include "cuctx/export.hpp"
#include "cuctx/process_report.hpp"

#include <atomic>
#include <csignal>
#include <cstdint>
#include <functional>
#include <thread>

namespace cuctx {

/// Takes a cuctx::processReport() whenever the process receives a signal (SIGUSR1 by default) and
/// hands it to a sink: by default its text goes to stderr. The signal handler only writes one byte to
/// a pipe (async-signal-safe); a thread of its own takes the report, so the sink may allocate, lock
/// and log. One at a time per process. Not movable.
///
/// \par Threading
/// Thread-compatible: it may be made on one thread and destroyed on another, but never from its own
/// sink (the destructor joins the reporting thread, which would be the caller: std::terminate).
/// reportsTaken() is thread-safe. The sink is reentrant: it runs on the reporting thread, one report
/// at a time, with no lock of cuctx's held, and may call cuctx.
class CUCTX_API ReportOnSignal {
public:
    /// Receives each report, on the reporting thread. A std::exception it throws is written to
    /// stderr and the thread goes on; any other exception ends the process (std::terminate).
    using Sink = std::function<void(const ProcessReport&)>;

    /// Installs the handler for `signal` and starts the reporting thread. Errc::invalid_state if
    /// another ReportOnSignal is active; Errc::invalid_argument for a signal that cannot be caught.
    explicit ReportOnSignal(int signal = SIGUSR1, Sink sink = {}, ReportOptions options = {});
    /// Puts the previous handler back and stops the thread (a report in progress finishes first).
    /// In a forked child, which has a copy of this object but neither its thread nor its own pipe,
    /// it only puts the handler back and closes the child's copies of the pipe: the parent's
    /// reporter keeps running.
    ~ReportOnSignal();
    ReportOnSignal(const ReportOnSignal&) = delete;
    ReportOnSignal& operator=(const ReportOnSignal&) = delete;

    /// How many reports have been taken so far (counted as each is handed to the sink, before the
    /// sink returns).
    std::uint64_t reportsTaken() const noexcept;

private:
    void serve();
    void stop(bool restoreHandler) noexcept;

    int signal_;
    int pid_; // the process that made it (and runs its thread)
    Sink sink_;
    ReportOptions options_;
    int pipe_[2] = {-1, -1};
    struct sigaction previous_ {};
    std::atomic<std::uint64_t> taken_{0};
    std::thread thread_;
};

} // namespace cuctx

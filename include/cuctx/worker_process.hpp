// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::WorkerProcess: a child process started safely for CUDA work.

#include "cuctx/export.hpp"
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace cuctx {

/// A child process started safely for CUDA work. A child made by fork() after CUDA was initialised
/// cannot use CUDA at all (driver-facts.md), so workers are started by exec (posix_spawn): a fresh
/// program that initialises CUDA itself. Move-only; the destructor waits for a child not waited for.
///
/// \par Threading
/// Thread-compatible: any thread of the process may wait() for the child or destroy the object (the
/// child belongs to the process, not to the thread that spawned it), one at a time.
class CUCTX_API WorkerProcess {
public:
    WorkerProcess() = default; ///< no child
    /// Starts `argv[0]` (searched in PATH) with `argv`, this environment plus `extraEnvironment`.
    /// The child gets `passFds[i]` of this process as its descriptor 3 + i (no other descriptor
    /// opened with O_CLOEXEC leaks into it). Throws Errc::invalid_argument naming the program when it
    /// cannot be started.
    static WorkerProcess spawn(const std::vector<std::string>& argv,
                               const std::map<std::string, std::string>& extraEnvironment = {},
                               const std::vector<int>& passFds = {});
    /// Takes over `other`'s child; `other` is left with none.
    WorkerProcess(WorkerProcess&& other) noexcept;
    /// Waits for this object's child (if not waited for), then takes over `other`'s.
    WorkerProcess& operator=(WorkerProcess&& other) noexcept;
    /// Waits for a child that was not waited for (never leaves a zombie); never throws.
    ~WorkerProcess();

    /// Waits for the child; its exit status, or 128 + the signal that ended it; -1 when there is no
    /// child to wait for (or waitpid failed).
    int wait();
    /// Sends `signal` to the child (not waited for yet); false when there is none or kill failed.
    bool kill(int signal) noexcept;
    /// The child's process id; -1 when there is none or it was waited for.
    pid_t pid() const noexcept { return pid_; }

    /// The program that is running now (/proc/self/exe), to start a copy of oneself as a worker.
    static std::string selfExecutable();

private:
    explicit WorkerProcess(pid_t pid) noexcept : pid_(pid) {}
    pid_t pid_ = -1;
};

} // namespace cuctx

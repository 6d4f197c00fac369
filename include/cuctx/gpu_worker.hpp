// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::GpuWorker: GPU work in a supervised child process, so that a faulting kernel costs a
/// worker, not the calling process.

#include "cuctx/export.hpp"
#include "cuctx/launch_config.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace cuctx {

/// One kernel launch for a GpuWorker: the image, the kernel, the launch shape, device buffers the
/// worker allocates (filled from the request or zeroed, copied back when asked) and the kernel's
/// arguments in order (scalars by value, or a buffer's device address).
///
/// \par Threading
/// Thread-compatible value type.
struct CUCTX_API WorkRequest {
    std::vector<std::byte> image;              ///< PTX text, a cubin or a fatbin; or a path when imageIsPath
    bool imageIsPath = false;                  ///< image holds a file name the worker loads
    std::string kernel;                        ///< the kernel's (mangled) name
    Dim3 grid;                                 ///< blocks in the grid
    Dim3 block;                                ///< threads in a block
    unsigned sharedBytes = 0;                  ///< dynamic shared memory per block
    std::chrono::milliseconds deadline{30000}; ///< a worker that has not answered by then is killed

    /// The image from PTX text (or cubin/fatbin bytes in a string).
    static WorkRequest fromImage(std::string_view image, std::string kernel);
    /// The image from a file the worker loads (it must see the same file system).
    static WorkRequest fromFile(const std::string& path, std::string kernel);

    /// Adds a device buffer of `contents.size()` bytes filled with them; its index.
    std::uint32_t addBuffer(std::span<const std::byte> contents, bool copyBack = true);
    /// Adds a device buffer of `bytes` zero bytes; its index.
    std::uint32_t addZeroBuffer(std::size_t bytes, bool copyBack = true);
    /// Appends buffer `index`'s device address to the kernel's arguments.
    void argBuffer(std::uint32_t index);
    /// Appends a scalar argument, copied bytewise (at most 256 bytes).
    template <typename T>
    void arg(const T& value)
    {
        static_assert(std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>,
                      "cuctx::WorkRequest::arg: a trivially copyable scalar or struct; pass buffers with argBuffer");
        std::vector<std::byte> bytes(sizeof(T));
        std::memcpy(bytes.data(), &value, sizeof(T));
        argBytes(std::move(bytes));
    }
    /// Appends a scalar argument given as its bytes.
    void argBytes(std::vector<std::byte> bytes);

    /// A device buffer the worker allocates for the request.
    ///
    /// \par Threading
    /// Thread-compatible value type.
    struct Buffer {
        std::size_t bytes = 0;           ///< its size
        std::vector<std::byte> contents; ///< its initial bytes (`bytes` of them); empty: zeroed on the device
        bool copyBack = true;            ///< whether WorkResult::buffers brings it back
    };
    /// A kernel argument: a scalar's bytes, or a buffer's device address.
    ///
    /// \par Threading
    /// Thread-compatible value type.
    struct Argument {
        bool isBuffer = false;         ///< a buffer's address (else a scalar)
        std::vector<std::byte> scalar; ///< the scalar's bytes
        std::uint32_t buffer = 0;      ///< the buffer's index in `buffers`
    };
    std::vector<Buffer> buffers;     ///< the device buffers, by index
    std::vector<Argument> arguments; ///< the kernel's arguments, in order
};

/// What a request brought back.
///
/// \par Threading
/// Thread-compatible value type.
struct WorkResult {
    std::vector<std::vector<std::byte>> buffers; ///< per buffer of the request; empty where not copied back
    pid_t worker = -1;                           ///< the worker that ran it
    std::chrono::microseconds elapsed{0};        ///< from sending the request to its reply
};

/// A launch a worker ran or was running (a worker's own journal, or what the supervisor sent to a
/// worker that died without answering).
///
/// \par Threading
/// Thread-compatible value type.
struct WorkerLaunch {
    std::uint64_t request = 0; ///< the request's number (GpuWorker counts from 1)
    std::string kernel;        ///< its kernel
    Dim3 grid;                 ///< its grid
    Dim3 block;                ///< its block
    int result = 0;            ///< the CUresult it ended with (0: success; -1: not a driver failure or unknown)
};

/// Why a worker was replaced.
enum class WorkerFaultKind {
    sticky_error, ///< a CUDA error that leaves the worker's device unusable (illegal address...)
    died,         ///< the worker exited or was killed by a signal without answering
    deadline,     ///< the worker did not answer by the request's deadline and was killed
    protocol,     ///< the worker sent something that is not a valid message
};

/// What happened to a worker that was replaced.
///
/// \par Threading
/// Thread-compatible value type.
struct WorkerFault {
    WorkerFaultKind kind = WorkerFaultKind::died; ///< what happened
    pid_t pid = -1;                               ///< the faulted worker
    std::uint64_t request = 0;                    ///< the request it was running
    std::string kernel;                           ///< that request's kernel
    int result = 0;                               ///< the CUresult (sticky_error), else 0
    std::string call;                             ///< the call that failed in the worker, when it said
    int exitStatus = -1;                          ///< exit status, or 128 + signal; -1 when not known
    std::string message;                          ///< what the worker said, when it said something
    std::vector<WorkerLaunch> lastLaunches;       ///< the worker's last launches, oldest first
    pid_t replacement = -1;                       ///< the fresh worker started in its place (-1: none could be)
};

/// How to start workers.
///
/// \par Threading
/// Thread-compatible value type.
struct GpuWorkerOptions {
    /// The worker program. Empty: $CUCTX_GPU_WORKER, else cuctx-gpu-worker next to libcuctx.so or in
    /// ../libexec/cuctx/ from it, else the one installed with cuctx (GpuWorker::defaultProgram()).
    std::string program;
    int device = 0;                                 ///< the device ordinal the worker uses
    std::map<std::string, std::string> environment; ///< added to this process's environment
    std::chrono::milliseconds startDeadline{60000}; ///< for cuInit and the worker's context
};

/// A GPU worker process under supervision: requests go to it over a socket, it runs each on its own
/// context (cuCtxCreate on its device) and answers. If a request ends in a sticky CUDA error (one
/// that poisons the device for the process: illegal address, launch failure, trap...), the worker
/// dies or misses the request's deadline, run() throws Errc::worker_fault naming the worker's pid,
/// the request, the CUresult and the worker's last launches, and a fresh worker is started (spawned
/// at once, ready by the next request). This process's own contexts and other workers are not
/// touched. Other failures (bad PTX, a missing kernel) are thrown as the worker saw them, and the
/// worker keeps serving. The worker is started with posix_spawn (never fork after cuInit).
///
/// \par Threading
/// Thread-safe: requests from several threads are run one at a time, in turn.
class CUCTX_API GpuWorker {
public:
    /// Starts the worker process (it initialises CUDA in the background; run() waits for it).
    explicit GpuWorker(GpuWorkerOptions options = {});
    GpuWorker(const GpuWorker&) = delete;
    GpuWorker& operator=(const GpuWorker&) = delete;
    /// Tells the worker to exit (it releases its context), and kills it if it has not after a grace
    /// period; never throws.
    ~GpuWorker();

    /// Runs `request` in the worker; see the class comment for faults.
    WorkResult run(const WorkRequest& request);

    /// The current worker's pid (-1 while none is running).
    pid_t pid() const;
    /// How many times the worker was replaced after a fault.
    unsigned restarts() const;
    /// The last fault, if any.
    std::optional<WorkerFault> lastFault() const;

    /// Where the worker program is looked for when GpuWorkerOptions::program is empty.
    static std::string defaultProgram();

private:
    struct State;
    std::unique_ptr<State> state_;
};

/// The worker program's main(): cuctx-gpu-worker is this function. Arguments: --fd N (the socket,
/// default 3), --device D (default 0). Returns the process's exit status.
CUCTX_API int gpuWorkerMain(int argc, char** argv);

/// Whether `result` (a CUresult) leaves the device unusable in the process that saw it.
CUCTX_API bool isStickyResult(int result) noexcept;

} // namespace cuctx

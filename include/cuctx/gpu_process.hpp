// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::processes(): every process with a context on this machine's GPUs, as NVML sees them.

#include "cuctx/export.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuctx {

/// One device a GpuProcess holds a context on.
///
/// \par Threading
/// Thread-compatible value type.
struct GpuProcessDevice {
    int ordinal = 0;                              ///< the device as this process's CUDA numbers it
    std::string uuid;                             ///< "GPU-..." (or "MIG-...")
    std::optional<std::uint64_t> usedMemoryBytes; ///< its device memory there; absent where NVML cannot say
    bool mpsClient = false;                       ///< listed as an MPS client rather than a process of its own
};

/// A process with a context on at least one GPU that this process can see.
///
/// \par Threading
/// Thread-compatible value type.
struct GpuProcess {
    unsigned pid = 0;                             ///< its process id, as the kernel (and nvidia-smi) gives it
    std::string name;                             ///< /proc/PID/comm, else NVML's name, else ""
    std::optional<std::string> commandLine;       ///< /proc/PID/cmdline, spaces between arguments, when readable
    std::optional<std::uint64_t> usedMemoryBytes; ///< the sum over `devices`; absent if any is unknown
    std::vector<GpuProcessDevice> devices;        ///< in ordinal order
    bool self = false;                            ///< this process
    /// Its binding, from /proc/PID/environ when readable (the same user, or root): its
    /// CUDA_VISIBLE_DEVICES and the launcher's local rank (OMPI_COMM_WORLD_LOCAL_RANK,
    /// MPI_LOCALRANKID, SLURM_LOCALID, LOCAL_RANK), as cuctx::bindRank reads them.
    bool environmentReadable = false;
    std::optional<std::string> cudaVisibleDevices; ///< its CUDA_VISIBLE_DEVICES, when set and readable
    std::optional<int> localRank;                  ///< its launcher's local rank, when set and readable
    std::string localRankSource;                   ///< the variable it came from
    std::vector<int> boundDevices;                 ///< the ordinals its binding allows; empty when it says nothing
    /// Why it is a stray, empty when it is not: it holds a context on a device its binding does not
    /// allow (more devices than it should use, or device 0 while bound elsewhere: the extra ~500 MiB
    /// context that a rank leaves on GPU 0 when it touched the device before choosing its own).
    std::string stray;
};

/// Every process with a context on a device this process sees (CUDA_VISIBLE_DEVICES applies),
/// ordered by pid, through NVML (libnvidia-ml.so.1, or $CUCTX_NVML_PATH, loaded at the first call
/// and kept). Does not create a context. A device NVML does not know, or whose process list it does
/// not support, gives no process: processes(unlisted) names it. Throws Error: Errc::nvml_unavailable
/// when NVML cannot be loaded or initialised, Errc::driver_error when it refuses a device's handle or
/// list (a process of another user without the permission), and the driver's load errors.
///
/// Thread-safe.
CUCTX_API std::vector<GpuProcess> processes();

/// A visible device whose processes NVML could not list.
///
/// \par Threading
/// Thread-compatible value type.
struct UnlistedDevice {
    int ordinal = 0;      ///< the device as this process numbers it
    std::string why;      ///< "NVML does not know GPU-...", the list not supported, or the call NVML refused
    std::string hint;     ///< what to do
    bool refused = false; ///< NVML refused a call for it (an error), rather than not knowing it or its list
};

/// processes(), except that a device NVML cannot list (it does not know it, does not support its list,
/// or refuses its handle or list) is passed over and named in `unlisted` (cleared first), in ordinal
/// order, instead of failing the call; one whose MPS client list NVML refuses keeps its compute
/// processes and is named too. Throws Error: Errc::nvml_unavailable, and the driver's load errors.
///
/// Thread-safe.
CUCTX_API std::vector<GpuProcess> processes(std::vector<UnlistedDevice>& unlisted);

} // namespace cuctx

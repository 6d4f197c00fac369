// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::RankBinding: which device a process of a multi-process job (MPI, Slurm, torchrun) should
/// use, from its launcher's environment. The functions are thread-safe.

#include "cuctx/context.hpp"
#include "cuctx/export.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cuctx {

/// Which device this process should use, and why. See bindRank().
///
/// \par Threading
/// Thread-compatible value type.
struct CUCTX_API RankBinding {
    int localRank = 0;      ///< this process's rank on this node
    std::string source;     ///< the variable it came from, e.g. "OMPI_COMM_WORLD_LOCAL_RANK"
    int ordinal = 0;        ///< the device to use, as the driver numbers the visible devices
    int visibleDevices = 0; ///< how many the driver sees
    /// The CUDA_VISIBLE_DEVICES entry behind `ordinal`, when that variable is set.
    std::optional<std::string> physicalDevice;
    std::string describe() const; ///< "local rank 2 (SLURM_LOCALID) -> device 2 of 4 (CUDA_VISIBLE_DEVICES entry 6)"
};

/// The launcher variables cuctx reads, in the order it reads them: Open MPI, MPICH/Hydra (and Intel
/// MPI), Slurm, torchrun and similar.
CUCTX_API const std::vector<std::string>& localRankVariables();

/// The binding for `environment` (name -> value) and `visibleDevices` devices. CUDA_VISIBLE_DEVICES
/// is read as the driver reads it: up to the first entry that is no index or UUID (an empty entry
/// included), which it ignores with every entry after it. Where it names exactly one device (the
/// launcher gave each rank its own), every rank
/// uses ordinal 0; otherwise the local rank is the ordinal, and a local rank with no device of its
/// own is an Errc::invalid_argument error that says how many there are and what to do. No launcher
/// variable: local rank 0, from "(none)".
CUCTX_API RankBinding bindRank(const std::map<std::string, std::string>& environment, int visibleDevices);

/// bindRank over this process's environment and the driver's device count. It reads the
/// environment when called: see docs/threading.md for setenv on other threads.
CUCTX_API RankBinding bindRank();

/// Devices other than `ownOrdinal` whose primary context is active in this process: a rank that
/// touched another rank's device (a stray cudaSetDevice, a library's default of device 0) costs that
/// device memory and may break exclusive compute modes.
CUCTX_API std::vector<int> strayPrimaryContexts(int ownOrdinal);

} // namespace cuctx

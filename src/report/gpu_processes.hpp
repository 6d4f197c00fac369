// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// cuctx::processes() over a given NVML, for the tests of each NVML (the fake, its old variant).

#include "cuctx/gpu_process.hpp"
#include "driver/nvml.hpp"

#include <string>
#include <vector>

namespace cuctx::detail {

/// Why NVML could not list one device's processes, and what to do.
struct Unlisted {
    std::string why; ///< empty where it listed them all
    std::string hint;
    bool refused = false; ///< NVML refused a call (an error), rather than not knowing the device or its list
};

/// cuctx::processes() through `api`. With `unlisted`, a device whose processes NVML cannot list (no
/// handle for it, its compute list refused or not supported) is passed over instead of failing the
/// call, one whose MPS client list is refused keeps what its compute list gave, and `(*unlisted)[ordinal]`
/// says why.
std::vector<GpuProcess> processesFrom(const NvmlApi& api, std::vector<Unlisted>* unlisted = nullptr);

/// The NVML handle of each device UUID ("GPU-..."; a MIG instance's as "MIG-..."), nullptr for
/// one NVML gives none; with `problems`, why for each of those (NVML does not know it, or the error
/// NVML gave), empty for the others.
std::vector<NvmlDevice> nvmlHandlesOf(const NvmlApi& api, const std::vector<std::string>& uuids,
                                      std::vector<std::string>* problems = nullptr);

/// Fills p.boundDevices and p.stray from its CUDA_VISIBLE_DEVICES and local rank (set by the
/// caller), given the UUIDs of the devices this process sees, by ordinal.
void judgeBinding(GpuProcess& p, const NvmlApi& api, const std::vector<std::string>& visibleUuids);

} // namespace cuctx::detail

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

/// cuctx::processes() through `api`. With `unlisted`, a device whose processes NVML cannot list (no
/// handle for it, a list refused) is passed over instead of failing the call, and `(*unlisted)[ordinal]`
/// says why (empty for each device listed).
std::vector<GpuProcess> processesFrom(const NvmlApi& api, std::vector<std::string>* unlisted = nullptr);

/// Why NVML gave no handle for the device with `uuid` (nvmlHandlesOf's nullptr): NVML's error where it
/// gave one other than "not found".
std::string nvmlHandleProblem(const NvmlApi& api, const std::string& uuid);

/// The NVML handle of each device UUID ("GPU-..."; a MIG instance's as "MIG-..."), nullptr for
/// one NVML does not know.
std::vector<NvmlDevice> nvmlHandlesOf(const NvmlApi& api, const std::vector<std::string>& uuids);

/// Fills p.boundDevices and p.stray from its CUDA_VISIBLE_DEVICES and local rank (set by the
/// caller), given the UUIDs of the devices this process sees, by ordinal.
void judgeBinding(GpuProcess& p, const NvmlApi& api, const std::vector<std::string>& visibleUuids);

} // namespace cuctx::detail

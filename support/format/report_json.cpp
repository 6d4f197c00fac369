// SPDX-License-Identifier: MIT
#include "format/report_json.hpp"

#include "cuctx/device.hpp"
#include "cuctx/error.hpp"
#include "cuctx/module.hpp"
#include "format/cuda_version.hpp"
#include "format/report_format.hpp"

#include <optional>
#include <string>

namespace cuctx::detail {

const char* moduleLoadingName()
{
    try {
        switch (Module::loadingMode()) {
        case ModuleLoadingMode::lazy: return "lazy";
        case ModuleLoadingMode::eager: return "eager";
        case ModuleLoadingMode::unknown: break;
        }
    } catch (const Error&) {
    }
    return "unknown";
}

void writeDriverJson(JsonWriter& j, const Driver::Status& st)
{
    const bool answered = st.driverVersion != 0;
    j.key("driver").beginObject();
    j.key("version").value(answered ? std::optional<int>(st.driverVersion) : std::nullopt);
    j.key("version_string")
        .value(answered ? std::optional<std::string>(formatCudaVersion(st.driverVersion)) : std::nullopt);
    j.key("requested_path").value(st.requestedPath);
    j.key("resolved_path").value(st.resolvedPath.empty() ? std::nullopt : std::optional<std::string>(st.resolvedPath));
    j.key("header_version").value(Driver::headerVersion());
    const std::string loading = st.loaded ? moduleLoadingName() : "unknown";
    j.key("module_loading").value(loading != "unknown" ? std::optional<std::string>(loading) : std::nullopt);
    j.endObject();
}

void writeDeviceJson(JsonWriter& j, const DeviceSnapshot& r, const DeviceMode* mode)
{
    const DeviceProperties& p = r.properties;
    std::string cc = std::to_string(p.computeCapabilityMajor);
    cc += '.';
    cc += std::to_string(p.computeCapabilityMinor);
    j.beginObject();
    j.key("ordinal").value(p.ordinal);
    j.key("name").value(p.name);
    j.key("uuid").value(p.uuid);
    j.key("pci_bus_id").value(p.pciBusId);
    j.key("compute_capability").value(cc);
    j.key("total_memory_bytes").value(static_cast<std::uint64_t>(p.totalMemory));
    j.key("free_memory_bytes").value(r.freeMemory ? std::optional<std::uint64_t>(*r.freeMemory) : std::nullopt);
    j.key("multiprocessors").value(p.multiprocessors);
    j.key("max_threads_per_block").value(p.maxThreadsPerBlock);
    j.key("max_threads_per_multiprocessor").value(p.maxThreadsPerMultiprocessor);
    j.key("max_block_dim")
        .beginArray()
        .value(p.maxBlockDim[0])
        .value(p.maxBlockDim[1])
        .value(p.maxBlockDim[2])
        .endArray();
    j.key("max_grid_dim").beginArray().value(p.maxGridDim[0]).value(p.maxGridDim[1]).value(p.maxGridDim[2]).endArray();
    j.key("warp_size").value(p.warpSize);
    j.key("registers_per_block").value(p.registersPerBlock);
    j.key("registers_per_multiprocessor").value(p.registersPerMultiprocessor);
    j.key("shared_memory_per_block_bytes").value(p.sharedMemoryPerBlock);
    j.key("shared_memory_per_block_optin_bytes").value(p.sharedMemoryPerBlockOptin);
    j.key("shared_memory_per_multiprocessor_bytes").value(p.sharedMemoryPerMultiprocessor);
    j.key("l2_cache_bytes").value(p.l2CacheSize);
    j.key("memory_bus_width_bits").value(p.memoryBusWidth);
    j.key("memory_clock_khz").value(p.memoryClockRate);
    j.key("clock_khz").value(p.clockRate);
    j.key("compute_mode").value(p.computeModeName());
    j.key("async_engines").value(p.asyncEngines);
    j.key("unified_addressing").value(p.unifiedAddressing);
    j.key("managed_memory").value(p.managedMemory);
    j.key("concurrent_kernels").value(p.concurrentKernels);
    j.key("cooperative_launch").value(p.cooperativeLaunch);
    j.key("ecc_enabled").value(p.eccEnabled);
    j.key("integrated").value(p.integrated);
    j.key("memory_pools").value(p.memoryPools);
    j.key("primary_context").beginObject();
    j.key("active").value(r.primary.active);
    j.key("flags").value(r.primary.flags);
    j.endObject();
    if (mode != nullptr) {
        j.key("modes").beginObject();
        j.key("mps").value(mode->mps);
        j.key("mps_client_processes").value(mode->mpsClients);
        j.key("persistence_mode").value(mode->persistence);
        j.key("mig").value(mode->mig);
        j.key("mig_instances").value(mode->migInstances);
        j.key("nvml_problem")
            .value(mode->nvmlProblem.empty() ? std::nullopt : std::optional<std::string>(mode->nvmlProblem));
        j.endObject();
    }
    j.endObject();
}

void writePeerLinkJson(JsonWriter& j, const PeerLink& l)
{
    j.beginObject();
    j.key("from").value(l.from);
    j.key("to").value(l.to);
    j.key("can_access_peer").value(l.canAccess);
    j.key("access_supported").value(l.accessSupported);
    j.key("native_atomics").value(l.nativeAtomics);
    j.key("cuda_array_access").value(l.arrayAccess);
    j.key("performance_rank").value(l.performanceRank);
    j.endObject();
}

void writeFindingJson(JsonWriter& j, const Finding& f)
{
    j.beginObject();
    j.key("check").value(f.check);
    j.key("severity").value(severityName(f.severity));
    j.key("summary").value(f.summary);
    j.key("advice").value(f.advice.empty() ? std::nullopt : std::optional<std::string>(f.advice));
    j.endObject();
}

std::vector<DeviceSnapshot> snapshotDevices(bool measureFreeMemory)
{
    std::vector<DeviceSnapshot> devices;
    for (const Device& device : Device::all()) {
        DeviceSnapshot d{device.properties(), device.primaryContextState(), std::nullopt};
        // Free memory needs a context: measured only where that changes nothing, or when asked.
        if (measureFreeMemory || d.primary.active)
            d.freeMemory = device.memoryInfo().free;
        devices.push_back(std::move(d));
    }
    return devices;
}

} // namespace cuctx::detail

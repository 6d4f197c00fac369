// SPDX-License-Identifier: MIT
#include "report/device_modes.hpp"

#include "cuctx/device.hpp"
#include "cuctx/error.hpp"

#include "driver/nvml.hpp"
#include "report/gpu_processes.hpp"

#include <cuda.h>

namespace cuctx {
namespace detail {
namespace {

// NVML's part of `m`, through the device's handle `h`, each query's failure into `p`.
void askNvml(const NvmlApi& api, NvmlDevice h, DeviceMode& m)
{
    NvmlModeProblems& p = m.nvmlProblems;
    // A query the device does not support leaves its field absent with nothing said; one that fails
    // otherwise says why, so that an absent field is never unexplained.
    auto answered = [&](std::string& problem, const char* call, NvmlReturn r) {
        if (r != kNvmlSuccess && r != kNvmlNotSupported)
            problem = nvmlFailure(api, call, r);
        return r == kNvmlSuccess;
    };
    int persistence = 0;
    if (api.nvmlDeviceGetPersistenceMode != nullptr &&
        answered(p.persistence, "nvmlDeviceGetPersistenceMode", api.nvmlDeviceGetPersistenceMode(h, &persistence)))
        m.persistence = persistence != 0;
    unsigned current = 0, pending = 0, count = 0;
    if (api.nvmlDeviceGetMigMode != nullptr &&
        answered(p.mig, "nvmlDeviceGetMigMode", api.nvmlDeviceGetMigMode(h, &current, &pending)))
        m.mig = current != 0;
    if (m.mig == true && api.nvmlDeviceGetMaxMigDeviceCount != nullptr &&
        api.nvmlDeviceGetMigDeviceHandleByIndex != nullptr &&
        answered(p.migInstances, "nvmlDeviceGetMaxMigDeviceCount", api.nvmlDeviceGetMaxMigDeviceCount(h, &count))) {
        // NVML_ERROR_NOT_FOUND: no instance in that slot; any other failure leaves the count unknown.
        int present = 0;
        for (unsigned k = 0; k < count && p.migInstances.empty(); ++k) {
            NvmlDevice instance = nullptr;
            const NvmlReturn r = api.nvmlDeviceGetMigDeviceHandleByIndex(h, k, &instance);
            present += r == kNvmlSuccess;
            if (r != kNvmlSuccess && r != kNvmlNotFound)
                p.migInstances = nvmlFailure(api, "nvmlDeviceGetMigDeviceHandleByIndex", r);
        }
        if (p.migInstances.empty())
            m.migInstances = present;
    }
    if (m.mps && (api.mpsProcessesV2 != nullptr || api.mpsProcessesV1 != nullptr)) {
        bool listed = false;
        NvmlReturn refused = kNvmlSuccess;
        const std::size_t clients = nvmlProcesses(api, h, true, &listed, &refused).size();
        if (refused != kNvmlSuccess)
            p.mpsClients = nvmlFailure(api, nvmlListCall(true), refused);
        else if (listed) // else not supported here: absent, nothing to say
            m.mpsClients = static_cast<int>(clients);
    }
}

} // namespace

ModesReport deviceModesReport()
{
    const std::vector<Device> devices = Device::all();
    ModesReport report;
    std::vector<std::string> uuids;
    for (const Device& d : devices) {
        DeviceMode m;
        m.ordinal = d.ordinal();
        m.computeMode = d.nativeAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
        m.mps = d.nativeAttribute(CU_DEVICE_ATTRIBUTE_MPS_ENABLED) != 0;
        report.modes.push_back(m);
        uuids.push_back(d.uuid());
    }
    try {
        const NvmlApi& api = nvml("cuctx::deviceModes");
        report.nvmlLoaded = true;
        std::vector<std::string> handleProblems;
        const std::vector<NvmlDevice> handles = nvmlHandlesOf(api, uuids, &handleProblems);
        for (std::size_t i = 0; i < report.modes.size(); ++i) {
            if (handles[i] == nullptr) {
                report.modes[i].nvmlProblems.device = handleProblems[i];
                continue;
            }
            report.modes[i].nvmlAnswered = true;
            askNvml(api, handles[i], report.modes[i]);
        }
    } catch (const Error& e) {
        if (e.condition() != Errc::nvml_unavailable)
            throw;
        for (DeviceMode& m : report.modes)
            m.nvmlProblems.device = e.detail();
        report.nvmlHint = e.hint();
    }
    for (DeviceMode& m : report.modes) {
        const NvmlModeProblems& p = m.nvmlProblems;
        std::string& joined = m.nvmlProblem;
        for (const std::string* part : {&p.device, &p.persistence, &p.mig, &p.migInstances, &p.mpsClients})
            if (!part->empty())
                joined += (joined.empty() ? "" : "; ") + *part;
    }
    return report;
}

} // namespace detail

std::vector<DeviceMode> deviceModes()
{
    return detail::deviceModesReport().modes;
}

} // namespace cuctx

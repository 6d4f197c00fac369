// SPDX-License-Identifier: MIT
#include "cuctx/device_mode.hpp"

#include "cuctx/device.hpp"
#include "cuctx/error.hpp"

#include "driver/nvml.hpp"
#include "report/gpu_processes.hpp"

#include <cuda.h>

namespace cuctx {

std::vector<DeviceMode> deviceModes()
{
    const std::vector<Device> devices = Device::all();
    std::vector<DeviceMode> modes;
    std::vector<std::string> uuids;
    for (const Device& d : devices) {
        DeviceMode m;
        m.ordinal = d.ordinal();
        m.computeMode = d.nativeAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
        m.mps = d.nativeAttribute(CU_DEVICE_ATTRIBUTE_MPS_ENABLED) != 0;
        modes.push_back(m);
        uuids.push_back(d.uuid());
    }
    try {
        const detail::NvmlApi& api = detail::nvml("cuctx::deviceModes");
        const std::vector<detail::NvmlDevice> handles = detail::nvmlHandlesOf(api, uuids);
        for (std::size_t i = 0; i < modes.size(); ++i) {
            DeviceMode& m = modes[i];
            const detail::NvmlDevice h = handles[i];
            if (h == nullptr) {
                m.nvmlProblem = "NVML does not know " + uuids[i];
                continue;
            }
            // A query NVML refuses for this device (not supported: the device does not say) leaves its
            // field absent; one that fails otherwise says why in nvmlProblem, so that an absent field is
            // never unexplained.
            m.nvmlAnswered = true;
            auto answered = [&](const char* call, detail::NvmlReturn r) {
                if (r != detail::kNvmlSuccess && r != detail::kNvmlNotSupported)
                    m.nvmlProblem += std::string(m.nvmlProblem.empty() ? "" : "; ") + call + " failed with " +
                                     detail::nvmlResultText(api, r);
                return r == detail::kNvmlSuccess;
            };
            int persistence = 0;
            if (api.nvmlDeviceGetPersistenceMode != nullptr &&
                answered("nvmlDeviceGetPersistenceMode", api.nvmlDeviceGetPersistenceMode(h, &persistence)))
                m.persistence = persistence != 0;
            unsigned current = 0, pending = 0, count = 0;
            if (api.nvmlDeviceGetMigMode != nullptr &&
                answered("nvmlDeviceGetMigMode", api.nvmlDeviceGetMigMode(h, &current, &pending)))
                m.mig = current != 0;
            if (m.mig == true && api.nvmlDeviceGetMaxMigDeviceCount != nullptr &&
                api.nvmlDeviceGetMigDeviceHandleByIndex != nullptr &&
                answered("nvmlDeviceGetMaxMigDeviceCount", api.nvmlDeviceGetMaxMigDeviceCount(h, &count))) {
                int present = 0;
                for (unsigned k = 0; k < count; ++k) {
                    detail::NvmlDevice instance = nullptr;
                    present += api.nvmlDeviceGetMigDeviceHandleByIndex(h, k, &instance) == detail::kNvmlSuccess;
                }
                m.migInstances = present;
            }
            if (m.mps && (api.mpsProcessesV2 != nullptr || api.mpsProcessesV1 != nullptr)) {
                try {
                    m.mpsClients = static_cast<int>(detail::nvmlProcesses(api, h, true).size());
                } catch (const Error& e) {
                    m.nvmlProblem += (m.nvmlProblem.empty() ? "" : "; ") + e.detail();
                }
            }
        }
    } catch (const Error& e) {
        if (e.condition() != Errc::nvml_unavailable)
            throw;
        for (DeviceMode& m : modes)
            m.nvmlProblem = e.detail();
    }
    return modes;
}

} // namespace cuctx

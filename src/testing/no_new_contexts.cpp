// SPDX-License-Identifier: MIT
// cuctx::testing::expectNoNewContexts: what holds a context on each device before and after the
// code under test, from the driver (primary-context state), NVML (this process's entry) and cuctx's
// own count.

#include "cuctx/testing.hpp"

#include "cuctx/device.hpp"
#include "cuctx/live_objects.hpp"

#include "check/check.hpp"
#include "driver/nvml.hpp"
#include "report/gpu_processes.hpp"

#include <unistd.h>

namespace cuctx::testing {
namespace {

struct Footprint {
    std::vector<bool> primaryActive;
    std::vector<bool> inNvml; // empty where NVML cannot say
    long cuctxContexts = 0;
};

Footprint footprint()
{
    Footprint f;
    const std::vector<Device> devices = Device::all();
    std::vector<std::string> uuids;
    for (const Device& d : devices) {
        f.primaryActive.push_back(d.primaryContextState().active);
        uuids.push_back(d.uuid());
    }
    try {
        const cuctx::detail::NvmlApi& nvml = cuctx::detail::nvml("cuctx::testing::expectNoNewContexts");
        const auto self = static_cast<unsigned>(getpid());
        std::vector<bool> listed;
        for (cuctx::detail::NvmlDevice h : cuctx::detail::nvmlHandlesOf(nvml, uuids)) {
            bool found = false;
            if (h != nullptr)
                for (const bool mps : {false, true})
                    for (const auto& p : cuctx::detail::nvmlProcesses(nvml, h, mps))
                        found = found || p.pid == self;
            listed.push_back(found);
        }
        f.inNvml = std::move(listed);
    } catch (const Error&) {
        // No NVML, or it refuses the list: the driver's and cuctx's views still count.
    }
    f.cuctxContexts = liveObjects().contexts;
    return f;
}

} // namespace

void expectNoNewContexts(const std::function<void()>& f)
{
    const Footprint before = footprint();
    f();
    const Footprint after = footprint();
    std::string found;
    auto add = [&](const std::string& what) { found += (found.empty() ? "" : "; ") + what; };
    for (std::size_t d = 0; d < after.primaryActive.size() && d < before.primaryActive.size(); ++d)
        if (after.primaryActive[d] && !before.primaryActive[d])
            add("device " + std::to_string(d) + "'s primary context became active (retained)");
    if (!before.inNvml.empty() && before.inNvml.size() == after.inNvml.size())
        for (std::size_t d = 0; d < after.inNvml.size(); ++d)
            if (after.inNvml[d] && !before.inNvml[d])
                add("NVML now lists this process on device " + std::to_string(d) + " (a context holds memory there)");
    if (after.cuctxContexts > before.cuctxContexts)
        add(std::to_string(after.cuctxContexts - before.cuctxContexts) +
            " more context(s) made through cuctx are alive");
    if (found.empty())
        return;
    cuctx::detail::throwError(Errc::invalid_state, "cuctx::testing::expectNoNewContexts",
                              "the code created or retained a context: " + found,
                              "Defer CUDA work until it is asked for (import without touching the GPU); release "
                              "what was retained before returning");
}

} // namespace cuctx::testing

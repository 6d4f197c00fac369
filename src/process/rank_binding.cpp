// SPDX-License-Identifier: MIT
#include "cuctx/rank_binding.hpp"

#include "cuctx/device.hpp"

#include "check/check.hpp"
#include "process/environment.hpp"

#include <cstdlib>

extern char** environ;

namespace cuctx {

const std::vector<std::string>& localRankVariables()
{
    static const std::vector<std::string> names = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                                                   "LOCAL_RANK"};
    return names;
}

std::string RankBinding::describe() const
{
    std::string text = "local rank " + std::to_string(localRank) + " (" + source + ") -> device " +
                       std::to_string(ordinal) + " of " + std::to_string(visibleDevices);
    if (physicalDevice)
        text += " (CUDA_VISIBLE_DEVICES entry " + *physicalDevice + ")";
    return text;
}

RankBinding bindRank(const std::map<std::string, std::string>& environment, int visibleDevices)
{
    RankBinding b;
    b.source = "(none)";
    b.visibleDevices = visibleDevices;
    for (const std::string& name : localRankVariables()) {
        const auto it = environment.find(name);
        if (it == environment.end())
            continue;
        const std::optional<int> rank = detail::parseLocalRank(it->second);
        if (!rank)
            detail::throwError(Errc::invalid_argument, "cuctx::bindRank",
                               name + " is '" + it->second + "', not a local rank (a number from 0)",
                               "Check the launcher's environment");
        b.localRank = *rank;
        b.source = name;
        break;
    }
    if (visibleDevices <= 0)
        detail::throwError(Errc::no_device, "cuctx::bindRank",
                           "local rank " + std::to_string(b.localRank) + " (" + b.source +
                               ") has no device to bind: the "
                               "driver sees none",
                           "Check nvidia-smi and CUDA_VISIBLE_DEVICES");
    // As the driver reads it: the entries before the first that is no device (an empty one included).
    std::vector<std::string> visible;
    std::string cvdText;
    const auto cvd = environment.find("CUDA_VISIBLE_DEVICES");
    if (cvd != environment.end()) {
        const detail::VisibleDevices parsed = detail::parseVisibleDevices(cvd->second);
        visible = parsed.used;
        cvdText = " (CUDA_VISIBLE_DEVICES=" + cvd->second;
        if (parsed.stoppedAt)
            cvdText += ", where the driver stops at entry " + std::to_string(*parsed.stoppedAt + 1) + " \"" +
                       parsed.entries[*parsed.stoppedAt] + "\" and uses the " + std::to_string(visible.size()) +
                       " before it";
        cvdText += ")";
    }
    if (cvd != environment.end() && visible.size() == 1 && visibleDevices == 1) {
        b.ordinal = 0; // the launcher gave this rank a device of its own
    } else if (b.localRank < visibleDevices) {
        b.ordinal = b.localRank;
    } else {
        detail::throwError(Errc::invalid_argument, "cuctx::bindRank",
                           "local rank " + std::to_string(b.localRank) + " (" + b.source +
                               ") has no device of its own: " + std::to_string(visibleDevices) + " visible" + cvdText,
                           "Start at most one process per GPU on each node, or give each rank its own device "
                           "through CUDA_VISIBLE_DEVICES (srun --gpus-per-task=1, mpirun -x)");
    }
    if (static_cast<std::size_t>(b.ordinal) < visible.size())
        b.physicalDevice = visible[static_cast<std::size_t>(b.ordinal)];
    return b;
}

RankBinding bindRank()
{
    std::map<std::string, std::string> environment;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        const std::string entry = *e;
        const auto eq = entry.find('=');
        if (eq != std::string::npos)
            environment.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    }
    return bindRank(environment, Device::count());
}

std::vector<int> strayPrimaryContexts(int ownOrdinal)
{
    std::vector<int> stray;
    for (const Device& d : Device::all())
        if (d.ordinal() != ownOrdinal && d.primaryContextState().active)
            stray.push_back(d.ordinal());
    return stray;
}

} // namespace cuctx

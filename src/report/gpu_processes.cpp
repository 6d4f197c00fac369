// SPDX-License-Identifier: MIT
// cuctx::processes(): NVML's per-device process lists, joined by pid, with what /proc says about
// each process (name, command line, its binding) and whether it strays from that binding.

#include "cuctx/gpu_process.hpp"

#include "cuctx/device.hpp"
#include "cuctx/rank_binding.hpp"

#include "driver/nvml.hpp"
#include "process/environment.hpp"
#include "report/gpu_processes.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

namespace cuctx {
namespace detail {
namespace {

std::optional<std::string> readProcFile(unsigned pid, const char* file)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/" + file, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        return std::nullopt;
    return text;
}

// NUL-separated "NAME=value" records.
std::map<std::string, std::string> parseEnviron(const std::string& text)
{
    std::map<std::string, std::string> env;
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\0', at);
        if (end == std::string::npos)
            end = text.size();
        const std::string record = text.substr(at, end - at);
        if (const auto eq = record.find('='); eq != std::string::npos)
            env.emplace(record.substr(0, eq), record.substr(eq + 1));
        at = end + 1;
    }
    return env;
}

std::string joinOrdinals(const std::vector<int>& ordinals)
{
    std::string text;
    for (int o : ordinals)
        text += (text.empty() ? "" : ", ") + std::to_string(o);
    return text;
}

} // namespace

std::vector<NvmlDevice> nvmlHandlesOf(const NvmlApi& api, const std::vector<std::string>& uuids,
                                      std::vector<std::string>* problems)
{
    std::vector<NvmlDevice> handles;
    if (problems != nullptr)
        problems->assign(uuids.size(), std::string());
    for (std::size_t i = 0; i < uuids.size(); ++i) {
        const std::string& uuid = uuids[i];
        NvmlDevice d = nullptr;
        std::string refused; // the first error other than "not found", with the UUID it was for
        // A MIG instance: the same digits, "MIG-".
        for (const std::string& name : {uuid, uuid.starts_with("GPU-") ? "MIG-" + uuid.substr(4) : std::string()}) {
            if (name.empty())
                break;
            const NvmlReturn r = api.nvmlDeviceGetHandleByUUID(name.c_str(), &d);
            if (r == kNvmlSuccess)
                break;
            d = nullptr;
            // NVML answers a UUID it does not know with NOT_FOUND, or for the MIG- guess INVALID_ARGUMENT.
            if (r != kNvmlNotFound && !(r == kNvmlInvalidArgument && name != uuid) && refused.empty())
                refused = nvmlFailure(api, "nvmlDeviceGetHandleByUUID(" + name + ")", r);
        }
        if (d == nullptr && problems != nullptr)
            (*problems)[i] = refused.empty() ? "NVML does not know " + uuid : refused;
        handles.push_back(d);
    }
    return handles;
}

void judgeBinding(GpuProcess& p, const NvmlApi& api, const std::vector<std::string>& visibleUuids)
{
    // The physical devices its CUDA_VISIBLE_DEVICES names, as NVML's UUIDs, in its order.
    std::vector<std::string> physical;
    std::vector<std::string> all;
    unsigned count = 0;
    if (api.nvmlDeviceGetCount_v2(&count) == kNvmlSuccess)
        for (unsigned i = 0; i < count; ++i) {
            NvmlDevice d = nullptr;
            all.push_back(api.nvmlDeviceGetHandleByIndex_v2(i, &d) == kNvmlSuccess ? nvmlUuidOf(api, d) : "");
        }
    std::string binding;
    if (p.cudaVisibleDevices) {
        for (const std::string& entry : parseVisibleDevices(*p.cudaVisibleDevices).used) {
            std::string uuid;
            if (entry.starts_with("GPU-") || entry.starts_with("MIG-")) { // a UUID, or a prefix of one
                for (const std::string& u : all)
                    if (u.starts_with(entry))
                        uuid = u;
                if (uuid.empty())
                    uuid = entry;
            } else {
                std::size_t i = 0;
                const auto [end, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), i);
                if (ec == std::errc{} && i < all.size())
                    uuid = all[i];
            }
            physical.push_back(uuid);
        }
        binding = "CUDA_VISIBLE_DEVICES=" + *p.cudaVisibleDevices;
    } else {
        physical = all;
    }
    std::vector<std::string> bound;
    if (p.localRank) {
        const auto rank = static_cast<std::size_t>(*p.localRank);
        // One visible device is the rank's whatever its number; else the rank picks among them.
        const bool picks = !(p.cudaVisibleDevices && physical.size() == 1) && rank < physical.size();
        bound = picks ? std::vector<std::string>{physical[rank]} : physical;
        binding += std::string(binding.empty() ? "" : ", ") + "local rank " + std::to_string(*p.localRank) + " (" +
                   p.localRankSource + ")";
    } else if (p.cudaVisibleDevices) {
        bound = physical;
    }
    if (binding.empty())
        return; // nothing says which devices it should use
    // cuctx spells every device's UUID "GPU-..." (Device::uuid), a MIG instance's included, where a
    // binding names the instance "MIG-...": the same digits.
    const auto digits = [](std::string_view uuid) {
        return uuid.starts_with("GPU-") || uuid.starts_with("MIG-") ? uuid.substr(4) : uuid;
    };
    const auto isBound = [&](std::string_view uuid) {
        return std::any_of(bound.begin(), bound.end(), [&](const std::string& b) { return digits(b) == digits(uuid); });
    };
    for (std::size_t o = 0; o < visibleUuids.size(); ++o)
        if (isBound(visibleUuids[o]))
            p.boundDevices.push_back(static_cast<int>(o));
    std::vector<int> held;
    std::vector<int> outside;
    for (const GpuProcessDevice& d : p.devices) {
        held.push_back(d.ordinal);
        if (!isBound(d.uuid))
            outside.push_back(d.ordinal);
    }
    if (outside.empty())
        return;
    const std::string allows =
        p.boundDevices.empty()
            ? "no device this process sees"
            : "device" + std::string(p.boundDevices.size() == 1 ? " " : "s ") + joinOrdinals(p.boundDevices);
    const bool onZero = std::find(outside.begin(), outside.end(), 0) != outside.end();
    if (onZero && held.size() > 1)
        p.stray = "holds a context on device 0 though its binding (" + binding + ") is " + allows +
                  ": it touched device 0 before choosing its own (set the device before any CUDA call)";
    else
        p.stray = "holds contexts on device" + std::string(held.size() == 1 ? " " : "s ") + joinOrdinals(held) +
                  " though its binding (" + binding + ") allows " + allows;
}

std::vector<GpuProcess> processesFrom(const NvmlApi& api, std::vector<Unlisted>* unlisted)
{
    const std::vector<Device> devices = Device::all();
    std::vector<std::string> uuids;
    uuids.reserve(devices.size());
    for (const Device& d : devices)
        uuids.push_back(d.uuid());
    std::vector<std::string> handleProblems;
    const std::vector<NvmlDevice> handles = nvmlHandlesOf(api, uuids, &handleProblems);
    if (unlisted != nullptr)
        unlisted->assign(handles.size(), Unlisted{});
    const char* const listHint = "nvidia-smi -q -d PIDS lists a device's processes where NVML can";
    std::map<unsigned, GpuProcess> byPid;
    for (std::size_t o = 0; o < handles.size(); ++o) {
        if (handles[o] == nullptr) {
            // NVML does not know it (another driver install): nothing to list. Or it refused the lookup.
            const bool refused = !handleProblems[o].starts_with("NVML does not know");
            if (unlisted != nullptr) {
                (*unlisted)[o] = {handleProblems[o], listHint, refused};
            } else if (refused) {
                ErrorInfo info;
                info.condition = Errc::driver_error;
                info.call = "nvmlDeviceGetHandleByUUID";
                info.object = "device " + std::to_string(o);
                info.detail = handleProblems[o];
                info.hint = listHint;
                throw Error(std::move(info));
            }
            continue;
        }
        // Without `unlisted` a refused list fails the call; with it, the device's compute processes are
        // what it must have (an empty list, refused or not supported, passes the device over), its MPS
        // clients what it can (a refused list keeps the compute ones, and says so).
        std::vector<NvmlProcess> lists[2];
        for (const bool mps : {false, true}) {
            bool listed = true;
            NvmlReturn refused = kNvmlSuccess; // only with `unlisted`: else a refusal throws
            lists[mps ? 1 : 0] = nvmlProcesses(api, handles[o], mps, &listed, unlisted != nullptr ? &refused : nullptr);
            if (refused != kNvmlSuccess) {
                (*unlisted)[o] = {nvmlFailure(api, nvmlListCall(mps), refused), nvmlListHint(refused), true};
                if (!mps)
                    break;
            } else if (!mps && !listed && unlisted != nullptr) {
                (*unlisted)[o] = {"NVML does not list this device's compute processes (not supported)", listHint};
                break;
            }
        }
        std::set<unsigned> seen;
        for (const bool mps : {false, true}) {
            for (const NvmlProcess& n : lists[mps ? 1 : 0]) {
                if (!seen.insert(n.pid).second)
                    continue; // listed as a process and as an MPS client: once
                GpuProcess& p = byPid[n.pid];
                p.pid = n.pid;
                p.devices.push_back({static_cast<int>(o), uuids[o], n.usedMemory, mps});
            }
        }
    }
    const auto self = static_cast<unsigned>(getpid());
    std::vector<GpuProcess> out;
    for (auto& [pid, p] : byPid) {
        p.self = pid == self;
        std::uint64_t sum = 0;
        bool known = true;
        for (const GpuProcessDevice& d : p.devices) {
            known = known && d.usedMemoryBytes.has_value();
            sum += d.usedMemoryBytes.value_or(0);
        }
        if (known)
            p.usedMemoryBytes = sum;
        if (auto comm = readProcFile(pid, "comm")) {
            while (!comm->empty() && comm->back() == '\n')
                comm->pop_back();
            p.name = *comm;
        } else if (api.nvmlSystemGetProcessName != nullptr) {
            char name[256] = {};
            if (api.nvmlSystemGetProcessName(pid, name, sizeof name - 1) == kNvmlSuccess)
                p.name = name;
        }
        if (auto cmdline = readProcFile(pid, "cmdline"); cmdline && !cmdline->empty()) {
            while (!cmdline->empty() && cmdline->back() == '\0')
                cmdline->pop_back();
            std::replace(cmdline->begin(), cmdline->end(), '\0', ' ');
            p.commandLine = *cmdline;
        }
        if (const auto environ = readProcFile(pid, "environ")) {
            p.environmentReadable = true;
            const auto env = parseEnviron(*environ);
            if (const auto it = env.find("CUDA_VISIBLE_DEVICES"); it != env.end())
                p.cudaVisibleDevices = it->second;
            for (const std::string& name : localRankVariables())
                if (const auto it = env.find(name); it != env.end())
                    if (const auto rank = parseLocalRank(it->second)) {
                        p.localRank = rank;
                        p.localRankSource = name;
                        break;
                    }
            judgeBinding(p, api, uuids);
        }
        out.push_back(std::move(p));
    }
    return out;
}

} // namespace detail

std::vector<GpuProcess> processes()
{
    return detail::processesFrom(detail::nvml("cuctx::processes"));
}

std::vector<GpuProcess> processes(std::vector<UnlistedDevice>& unlisted)
{
    unlisted.clear(); // a failed call leaves no earlier call's devices behind
    std::vector<detail::Unlisted> each;
    std::vector<GpuProcess> list = detail::processesFrom(detail::nvml("cuctx::processes"), &each);
    for (std::size_t o = 0; o < each.size(); ++o)
        if (!each[o].why.empty())
            unlisted.push_back({static_cast<int>(o), each[o].why, each[o].hint, each[o].refused});
    return list;
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
// cuctx-inspect devices: the driver and every device (docs/schema/inspect-devices.schema.json).

#include "command_line.hpp"
#include "format/cuda_version.hpp"
#include "format/printable.hpp"
#include "format/report_format.hpp"
#include "format/report_json.hpp"
#include "query.hpp"

#include "cuctx/cuctx.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace cuctx::tools {
namespace {

using detail::formatCudaVersion;
using detail::gibText;

std::optional<std::string> visibleDevices()
{
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"))
        return std::string(v);
    return std::nullopt;
}

void writeMembers(JsonWriter& j, const std::vector<DeviceSnapshot>& devices, const std::vector<DeviceMode>& modes)
{
    j.key("cuda_visible_devices").value(visibleDevices());
    j.key("devices").beginArray();
    for (const DeviceSnapshot& d : devices) {
        const auto mode = std::find_if(modes.begin(), modes.end(),
                                       [&](const DeviceMode& m) { return m.ordinal == d.properties.ordinal; });
        detail::writeDeviceJson(j, d, mode != modes.end() ? &*mode : nullptr);
    }
    j.endArray();
}

void printVerbose(const DeviceSnapshot& r)
{
    const DeviceProperties& p = r.properties;
    std::printf("\ndevice %d: %s\n", p.ordinal, p.name.c_str());
    auto row = [](const char* name, const std::string& value) { std::printf("  %-34s %s\n", name, value.c_str()); };
    auto num = [&](const char* name, long long v) { row(name, std::to_string(v)); };
    row("uuid", p.uuid);
    row("pci bus id", p.pciBusId);
    row("compute mode", p.computeModeName());
    num("multiprocessors", p.multiprocessors);
    num("max threads per block", p.maxThreadsPerBlock);
    num("max threads per multiprocessor", p.maxThreadsPerMultiprocessor);
    num("warp size", p.warpSize);
    num("registers per block", p.registersPerBlock);
    num("shared memory per block (bytes)", p.sharedMemoryPerBlock);
    num("shared memory per block, opt-in", p.sharedMemoryPerBlockOptin);
    num("shared memory per multiprocessor", p.sharedMemoryPerMultiprocessor);
    num("L2 cache (bytes)", p.l2CacheSize);
    num("memory bus width (bits)", p.memoryBusWidth);
    num("memory clock (kHz)", p.memoryClockRate);
    num("clock (kHz)", p.clockRate);
    num("async engines", p.asyncEngines);
    row("unified addressing", p.unifiedAddressing ? "yes" : "no");
    row("managed memory", p.managedMemory ? "yes" : "no");
    row("cooperative launch", p.cooperativeLaunch ? "yes" : "no");
    row("ECC", p.eccEnabled ? "on" : "off");
    std::string primary = r.primary.active ? "active" : "inactive";
    primary += ", flags ";
    primary += std::to_string(r.primary.flags);
    row("primary context", primary);
}

void printTable(const Driver::Status& st, const std::vector<DeviceSnapshot>& devices,
                const std::vector<DeviceMode>& modes, bool verbose)
{
    std::printf("cuctx-inspect %s, CUDA driver %s (%d), CUDA headers %s\n", CUCTX_VERSION_STRING,
                formatCudaVersion(st.driverVersion).c_str(), st.driverVersion,
                formatCudaVersion(Driver::headerVersion()).c_str());
    std::printf("libcuda: %s\n", st.resolvedPath.empty() ? st.requestedPath.c_str() : st.resolvedPath.c_str());
    const std::string loading = detail::moduleLoadingName();
    std::printf("module loading: %s\n", loading == "lazy"    ? "lazy (kernels load at first use)"
                                        : loading == "eager" ? "eager (kernels load with their module)"
                                                             : "unknown");
    const auto visible = visibleDevices();
    std::printf("CUDA_VISIBLE_DEVICES: %s\n\n", visible ? visible->c_str() : "not set");

    std::size_t nameWidth = 4;
    for (const DeviceSnapshot& r : devices)
        nameWidth = std::max(nameWidth, r.properties.name.size());
    nameWidth = std::min<std::size_t>(nameWidth, 24);
    std::printf("%-2s  %-*s  %-4s  %4s  %10s  %10s  %-12s  %s\n", "#", static_cast<int>(nameWidth), "Name", "CC", "SMs",
                "Memory", "Free", "Bus id", "Primary");
    for (const DeviceSnapshot& r : devices) {
        const DeviceProperties& p = r.properties;
        const std::string cc =
            std::to_string(p.computeCapabilityMajor) + "." + std::to_string(p.computeCapabilityMinor);
        std::printf("%-2d  %-*.*s  %-4s  %4d  %10s  %10s  %-12s  %s\n", p.ordinal, static_cast<int>(nameWidth),
                    static_cast<int>(nameWidth), p.name.c_str(), cc.c_str(), p.multiprocessors,
                    gibText(p.totalMemory).c_str(), r.freeMemory ? gibText(*r.freeMemory).c_str() : "-",
                    p.pciBusId.c_str(), r.primary.active ? "active" : "inactive");
    }
    if (!verbose)
        return;
    for (const DeviceSnapshot& r : devices) {
        printVerbose(r);
        for (const DeviceMode& m : modes) {
            if (m.ordinal != r.properties.ordinal)
                continue;
            auto row = [](const char* name, const std::string& value) {
                std::printf("  %-34s %s\n", name, value.c_str());
            };
            // A field not known: NVML said why (its own problem or the device's), or the device does not say.
            auto nvml = [&](std::optional<bool> on, const std::string& problem) {
                if (on)
                    return *on ? "on" : "off";
                return m.nvmlProblems.about(problem).empty() ? "unknown (the device does not say)"
                                                             : "unknown (see NVML problem)";
            };
            const NvmlModeProblems& p = m.nvmlProblems;
            row("MPS", m.mps ? "on (at most 60 client contexts per device)" : "off");
            if (m.mps)
                row("MPS client processes",
                    m.mpsClients ? std::to_string(*m.mpsClients) : nvml(std::nullopt, p.mpsClients));
            row("persistence mode", nvml(m.persistence, p.persistence));
            const std::string instances =
                m.migInstances ? std::to_string(*m.migInstances) + " instances" : "instances not counted";
            row("MIG", m.mig == true ? "on, " + instances + " (CUDA shows one per process)" : nvml(m.mig, p.mig));
            if (!m.nvmlProblem.empty())
                row("NVML problem", detail::printableText(m.nvmlProblem)); // NVML's error strings
        }
    }
}

} // namespace

int runDevices(const CommandLine& c)
{
    auto empty = [](JsonWriter& j) { writeMembers(j, {}, {}); };
    if (const auto failed = requireDriver(c, empty))
        return *failed;
    Query query;
    if (!c.query.empty())
        (void)parseQuery("devices", c.query, c.format.empty() ? "csv" : c.format, query); // checked when parsed
    int prints = 0;
    return repeatEvery(c.watch, c.count, [&]() -> int {
        std::vector<DeviceSnapshot> devices;
        std::vector<DeviceMode> modes;
        try {
            devices = detail::snapshotDevices(c.memory);
            if (!c.select.empty()) {
                const std::vector<int> chosen = selectDevices(c.select, devices);
                std::erase_if(devices, [&](const DeviceSnapshot& d) {
                    return std::find(chosen.begin(), chosen.end(), d.properties.ordinal) == chosen.end();
                });
            }
            if (c.json || !c.query.empty() || c.verbose)
                modes = deviceModes();
        } catch (const Error& e) {
            return reportFailure(c, outcomeFor(e.condition()), e.what(), empty);
        }
        if (!c.query.empty()) {
            query.header = query.header && prints == 0; // a watch prints the header once
            std::fputs(formatCsv("devices", query, deviceRows(devices, modes)).c_str(), stdout);
        } else if (c.json) {
            printJson(c, "ok", std::nullopt, [&](JsonWriter& j) { writeMembers(j, devices, modes); });
        } else {
            std::printf("%s", prints > 0 ? "\n" : "");
            printTable(Driver::status(), devices, modes, c.verbose);
        }
        ++prints;
        return exitOk;
    });
}

} // namespace cuctx::tools

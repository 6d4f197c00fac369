// SPDX-License-Identifier: MIT
// cuctx-inspect processes: every process with a context on each visible GPU, its memory, and the
// strays (docs/schema/inspect-processes.schema.json), through cuctx::processes() (NVML). What a
// process says of itself (its name, command line, CUDA_VISIBLE_DEVICES) is any bytes its owner
// chose: the table shows it through printableText, so that it cannot drive the operator's terminal.

#include "command_line.hpp"
#include "format/printable.hpp"
#include "format/report_format.hpp"
#include "format/report_json.hpp"
#include "query.hpp"

#include <algorithm>

#include "cuctx/cuctx.hpp"

#include <cstdio>

namespace cuctx::tools {
namespace {

std::string unlistedText(const UnlistedDevice& u)
{
    return "device " + std::to_string(u.ordinal) + ": its processes are not listed (" + detail::printableText(u.why) +
           ")";
}

void writeMembers(JsonWriter& j, const std::vector<GpuProcess>& list, const std::vector<UnlistedDevice>& unlisted)
{
    j.key("processes").beginArray();
    for (const GpuProcess& p : list) {
        j.beginObject();
        j.key("pid").value(static_cast<std::int64_t>(p.pid));
        j.key("name").value(p.name);
        j.key("command_line").value(p.commandLine);
        j.key("used_memory_bytes").value(p.usedMemoryBytes);
        j.key("self").value(p.self);
        j.key("devices").beginArray();
        for (const GpuProcessDevice& d : p.devices) {
            j.beginObject();
            j.key("ordinal").value(d.ordinal);
            j.key("uuid").value(d.uuid);
            j.key("used_memory_bytes").value(d.usedMemoryBytes);
            j.key("mps_client").value(d.mpsClient);
            j.endObject();
        }
        j.endArray();
        j.key("environment_readable").value(p.environmentReadable);
        j.key("cuda_visible_devices").value(p.cudaVisibleDevices);
        j.key("local_rank").value(p.localRank);
        j.key("local_rank_source").value(p.localRank ? std::optional<std::string>(p.localRankSource) : std::nullopt);
        j.key("bound_devices").beginArray();
        for (int o : p.boundDevices)
            j.value(o);
        j.endArray();
        j.key("stray").value(p.stray.empty() ? std::nullopt : std::optional<std::string>(p.stray));
        j.endObject();
    }
    j.endArray();
    j.key("unlisted_devices").beginArray();
    for (const UnlistedDevice& u : unlisted) {
        j.beginObject();
        j.key("ordinal").value(u.ordinal);
        j.key("why").value(u.why);
        j.endObject();
    }
    j.endArray();
}

std::string mibText(const std::optional<std::uint64_t>& bytes)
{
    return bytes ? std::to_string(*bytes >> 20) + " MiB" : "-";
}

std::string bindingText(const GpuProcess& p)
{
    if (!p.environmentReadable)
        return "(unreadable)";
    std::string text;
    if (p.cudaVisibleDevices)
        text = "CVD=" + detail::printableText(*p.cudaVisibleDevices);
    if (p.localRank)
        text += (text.empty() ? "" : " ") + std::string("rank ") + std::to_string(*p.localRank);
    return text.empty() ? "-" : text;
}

void printTable(const std::vector<GpuProcess>& list, const std::vector<UnlistedDevice>& unlisted, bool verbose)
{
    int strays = 0;
    for (const GpuProcess& p : list)
        strays += p.stray.empty() ? 0 : 1;
    std::printf("cuctx-inspect processes: %zu process%s with a context, %d stray%s\n\n", list.size(),
                list.size() == 1 ? "" : "es", strays, strays == 1 ? "" : "s");
    std::printf("%-8s  %-16s  %-9s  %10s  %-20s  %s\n", "PID", "Name", "Devices", "Memory", "Binding", "Stray");
    for (const GpuProcess& p : list) {
        std::string devices;
        for (const GpuProcessDevice& d : p.devices)
            devices += (devices.empty() ? "" : ",") + std::to_string(d.ordinal) + (d.mpsClient ? "m" : "");
        std::string name = detail::printableText(p.name) + (p.self ? "*" : "");
        std::printf("%-8u  %-16.16s  %-9.9s  %10s  %-20.20s  %s\n", p.pid, name.c_str(), devices.c_str(),
                    mibText(p.usedMemoryBytes).c_str(), bindingText(p).c_str(), p.stray.empty() ? "-" : "yes");
    }
    if (list.empty())
        std::printf("(none)\n");
    std::printf("\n*  this process    m  an MPS client    CVD  CUDA_VISIBLE_DEVICES\n");
    for (const UnlistedDevice& u : unlisted)
        std::printf("\n%s\n", detail::wrapText(unlistedText(u) + ".", 80, 2).c_str());
    for (const GpuProcess& p : list)
        if (!p.stray.empty())
            std::printf(
                "\n%s\n",
                detail::wrapText("stray " + std::to_string(p.pid) + ": " + detail::printableText(p.stray) + ".", 80, 2)
                    .c_str());
    if (!verbose)
        return;
    for (const GpuProcess& p : list) {
        std::printf("\n%u %s\n", p.pid, detail::printableText(p.name).c_str());
        std::printf("  command line  %s\n",
                    p.commandLine ? detail::printableText(*p.commandLine).c_str() : "(unreadable)");
        for (const GpuProcessDevice& d : p.devices)
            std::printf("  device %d      %s, %s%s\n", d.ordinal, d.uuid.c_str(), mibText(d.usedMemoryBytes).c_str(),
                        d.mpsClient ? ", MPS client" : "");
    }
}

} // namespace

int runProcesses(const CommandLine& c)
{
    auto empty = [](JsonWriter& j) { writeMembers(j, {}, {}); };
    if (const auto failed = requireDriver(c, empty))
        return *failed;
    Query query;
    if (!c.query.empty())
        (void)parseQuery("processes", c.query, c.format.empty() ? "csv" : c.format, query); // checked when parsed
    int prints = 0;
    return repeatEvery(c.watch, c.count, [&]() -> int {
        std::vector<GpuProcess> list;
        std::vector<DeviceSnapshot> devices;
        std::vector<UnlistedDevice> unlisted;
        try {
            devices = detail::snapshotDevices(false);
            list = processes(unlisted);
            if (!c.select.empty()) {
                const std::vector<int> chosen = selectDevices(c.select, devices);
                for (GpuProcess& p : list)
                    std::erase_if(p.devices, [&](const GpuProcessDevice& d) {
                        return std::find(chosen.begin(), chosen.end(), d.ordinal) == chosen.end();
                    });
                std::erase_if(list, [](const GpuProcess& p) { return p.devices.empty(); });
                std::erase_if(unlisted, [&](const UnlistedDevice& u) {
                    return std::find(chosen.begin(), chosen.end(), u.ordinal) == chosen.end();
                });
            }
        } catch (const Error& e) {
            return reportFailure(c, outcomeFor(e.condition()), e.what(), empty);
        }
        // A device NVML refused to list fails the command, as a refused list always has (exit 8): the list
        // without it would look whole to a script. One NVML does not know or cannot list is named below.
        for (const UnlistedDevice& u : unlisted)
            if (u.refused)
                return reportFailure(c, outcomeFor(Errc::driver_error),
                                     "NVML could not list device " + std::to_string(u.ordinal) +
                                         "'s processes: " + detail::printableText(u.why) + " (" + u.hint + ")",
                                     empty);
        if (!c.query.empty()) {
            query.header = query.header && prints == 0; // a watch prints the header once
            std::fputs(formatCsv("processes", query, processRows(list, devices)).c_str(), stdout);
            for (const UnlistedDevice& u : unlisted) // the CSV holds rows only
                std::fprintf(stderr, "cuctx-inspect processes: %s\n", unlistedText(u).c_str());
        } else if (c.json) {
            printJson(c, "ok", std::nullopt, [&](JsonWriter& j) { writeMembers(j, list, unlisted); });
        } else {
            std::printf("%s", prints > 0 ? "\n" : "");
            printTable(list, unlisted, c.verbose);
        }
        ++prints;
        return exitOk;
    });
}

} // namespace cuctx::tools

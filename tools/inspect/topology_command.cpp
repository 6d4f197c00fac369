// SPDX-License-Identifier: MIT
// cuctx-inspect topology: which devices reach each other's memory, and how
// (docs/schema/inspect-topology.schema.json).

#include "command_line.hpp"
#include "format/report_json.hpp"

#include "cuctx/cuctx.hpp"

#include <cstdio>

namespace cuctx::tools {
namespace {

struct Topology {
    std::vector<DeviceProperties> devices;
    std::vector<PeerLink> links; // every ordered pair of distinct devices
};

void writeMembers(JsonWriter& j, const Topology& t)
{
    j.key("devices").beginArray();
    for (const DeviceProperties& d : t.devices) {
        j.beginObject();
        j.key("ordinal").value(d.ordinal);
        j.key("name").value(d.name);
        j.key("pci_bus_id").value(d.pciBusId);
        j.endObject();
    }
    j.endArray();
    j.key("links").beginArray();
    for (const PeerLink& l : t.links)
        detail::writePeerLinkJson(j, l);
    j.endArray();
}

// "GPU3", "P0": built with += (GCC 12's -O3 warns, wrongly, on a literal + std::to_string).
std::string label(const char* prefix, int n)
{
    std::string text = prefix;
    text += std::to_string(n);
    return text;
}

// A matrix cell: "-" for the device itself, "no" without peer access, else "P" and the
// performance rank, with "A" for native atomics.
std::string cell(const Topology& t, int from, int to)
{
    if (from == to)
        return "-";
    for (const PeerLink& l : t.links) {
        if (l.from != from || l.to != to)
            continue;
        if (!l.canAccess)
            return "no";
        std::string text = label("P", l.performanceRank);
        if (l.nativeAtomics)
            text += 'A';
        return text;
    }
    return "?";
}

void printTable(const Topology& t, bool verbose)
{
    const int n = static_cast<int>(t.devices.size());
    std::printf("%d device%s; peer access from row to column (cuDeviceCanAccessPeer)\n\n", n, n == 1 ? "" : "s");
    std::printf("%-6s", "");
    for (int to = 0; to < n; ++to)
        std::printf("  %-5s", label("GPU", to).c_str());
    std::printf("  %s\n", "Bus id");
    for (int from = 0; from < n; ++from) {
        std::printf("%-6s", label("GPU", from).c_str());
        for (int to = 0; to < n; ++to)
            std::printf("  %-5s", cell(t, from, to).c_str());
        std::printf("  %s\n", t.devices[static_cast<std::size_t>(from)].pciBusId.c_str());
    }
    std::printf("\n-  the device itself    no  no peer access\n"
                "Pn peer access, performance rank n (lower is faster)    A  native atomics\n");
    if (n < 2)
        std::printf("One device has no peer links: peer copies need two.\n");
    if (!verbose)
        return;
    for (const PeerLink& l : t.links)
        std::printf("\nGPU%d -> GPU%d: can access peer %s, access supported %s, native atomics %s, CUDA arrays %s, "
                    "performance rank %d",
                    l.from, l.to, l.canAccess ? "yes" : "no", l.accessSupported ? "yes" : "no",
                    l.nativeAtomics ? "yes" : "no", l.arrayAccess ? "yes" : "no", l.performanceRank);
    if (!t.links.empty())
        std::printf("\n");
}

} // namespace

int runTopology(const CommandLine& c)
{
    auto empty = [](JsonWriter& j) { writeMembers(j, {}); };
    if (const auto failed = requireDriver(c, empty))
        return *failed;
    Topology t;
    try {
        for (const Device& d : Device::all())
            t.devices.push_back(d.properties());
        t.links = PeerAccess::matrix();
    } catch (const Error& e) {
        return reportFailure(c, outcomeFor(e.condition()), e.what(), empty);
    }
    if (c.json) {
        printJson(c, "ok", std::nullopt, [&](JsonWriter& j) { writeMembers(j, t); });
    } else {
        printTable(t, c.verbose);
    }
    return exitOk;
}

} // namespace cuctx::tools

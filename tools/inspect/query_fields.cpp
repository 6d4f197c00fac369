// SPDX-License-Identifier: MIT
#include "query_fields.hpp"

#include <algorithm>

namespace cuctx::tools {
namespace {

const std::vector<QueryField> kDeviceFields = {
    {"index", "", "the device's ordinal"},
    {"name", "", "its name"},
    {"uuid", "", "GPU-... (MIG-... for a MIG instance)"},
    {"pci.bus_id", "", "domain:bus:device.function"},
    {"compute_cap", "", "compute capability, 9.0"},
    {"multiprocessors", "", "streaming multiprocessors"},
    {"memory.total", "MiB", "device memory"},
    {"compute_mode", "", "Default, Exclusive_Process or Prohibited"},
    {"primary_context", "", "active or inactive (this process)"},
    {"mps", "", "Enabled when contexts are MPS clients"},
    {"persistence_mode", "", "Enabled or Disabled (NVML)"},
    {"mig.mode.current", "", "Enabled or Disabled (NVML)"},
};

const std::vector<QueryField> kProcessFields = {
    {"pid", "", "process id"},
    {"process_name", "", "its name (/proc/PID/comm)"},
    {"used_memory", "MiB", "its memory on this device"},
    {"gpu_index", "", "the device's ordinal"},
    {"gpu_uuid", "", "the device's UUID"},
    {"gpu_bus_id", "", "the device's PCI bus id"},
    {"mps_client", "", "yes for an MPS client"},
    {"cuda_visible_devices", "", "its CUDA_VISIBLE_DEVICES"},
    {"local_rank", "", "its launcher's local rank"},
    {"stray", "", "yes when it holds a context outside its binding"},
    {"command_line", "", "its command line"},
};

} // namespace

std::vector<std::string> splitList(const std::string& text)
{
    std::vector<std::string> parts;
    std::string item;
    for (char ch : text + ",") {
        if (ch == ',') {
            const auto b = item.find_first_not_of(' ');
            const auto e = item.find_last_not_of(' ');
            parts.push_back(b == std::string::npos ? "" : item.substr(b, e - b + 1));
            item.clear();
        } else {
            item += ch;
        }
    }
    return parts;
}

const std::vector<QueryField>& queryFields(const std::string& command)
{
    return command == "processes" ? kProcessFields : kDeviceFields;
}

std::optional<std::string> parseQuery(const std::string& command, const std::string& fields, const std::string& format,
                                      Query& out)
{
    const auto& known = queryFields(command);
    for (const std::string& f : splitList(fields)) {
        const bool found = std::any_of(known.begin(), known.end(), [&](const QueryField& k) { return f == k.name; });
        if (!found) {
            std::string names;
            for (const QueryField& k : known)
                names += (names.empty() ? "" : ", ") + std::string(k.name);
            return "--query: '" + f + "' is no field of " + command + " (fields: " + names + ")";
        }
        out.fields.push_back(f);
    }
    const std::vector<std::string> words = splitList(format);
    if (words.empty() || words[0] != "csv")
        return "--format: '" + format + "' is not csv, csv,noheader, csv,nounits or csv,noheader,nounits";
    for (std::size_t i = 1; i < words.size(); ++i) {
        if (words[i] == "noheader")
            out.header = false;
        else if (words[i] == "nounits")
            out.units = false;
        else
            return "--format: '" + words[i] + "' is neither noheader nor nounits";
    }
    return std::nullopt;
}

} // namespace cuctx::tools

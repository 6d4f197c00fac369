// SPDX-License-Identifier: MIT
#pragma once

// nvidia-smi-like queries for `devices` and `processes`: --query FIELDS --format csv[,noheader]
// [,nounits], -i ID (an ordinal, a UUID or its prefix, a PCI bus id), and --watch SECONDS.

#include "query_fields.hpp"

#include "cuctx/cuctx.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cuctx::tools {

/// One row: a value per field name, without its unit; "[N/A]" where there is none.
using QueryRow = std::map<std::string, std::string>;

/// The rows as CSV in nvidia-smi's form (", " between values; a value with a comma or a quote is quoted).
std::string formatCsv(const std::string& command, const Query& q, const std::vector<QueryRow>& rows);

std::vector<QueryRow> deviceRows(const std::vector<DeviceSnapshot>& devices, const std::vector<DeviceMode>& modes);
std::vector<QueryRow> processRows(const std::vector<GpuProcess>& list, const std::vector<DeviceSnapshot>& devices);

/// The ordinals that -i selects (comma-separated ordinals, UUIDs or prefixes, PCI bus ids in
/// either NVML's or CUDA's spelling), or throws Errc::invalid_argument naming the id that matches none.
std::vector<int> selectDevices(const std::string& ids, const std::vector<DeviceSnapshot>& devices);

/// Calls `print` once, or with a watch every `seconds` until SIGINT (or SIGTERM) or `count` calls.
/// Returns the last status `print` returned; stops early on a nonzero one.
int repeatEvery(double seconds, long count, const std::function<int()>& print);

} // namespace cuctx::tools

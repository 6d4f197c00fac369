// SPDX-License-Identifier: MIT
#pragma once

// The JSON members that cuctx-inspect's documents and cuctx::ProcessReport::json() share, so that a
// device or a finding reads the same in each (docs/schema/*.schema.json).

#include "cuctx/device_mode.hpp"
#include "cuctx/diagnosis.hpp"
#include "cuctx/driver.hpp"
#include "cuctx/peer_access.hpp"
#include "cuctx/process_report.hpp"
#include "format/json_writer.hpp"

#include <vector>

namespace cuctx::detail {

/// The "driver" member: version, paths, header version, module loading mode.
void writeDriverJson(JsonWriter& j, const Driver::Status& status);
/// One device object, as in the "devices" array; with `mode`, its "modes" member too (MPS,
/// persistence, MIG: what `cuctx-inspect devices -v` shows).
void writeDeviceJson(JsonWriter& j, const DeviceSnapshot& device, const DeviceMode* mode = nullptr);
/// One peer link object, as in the "links" array.
void writePeerLinkJson(JsonWriter& j, const PeerLink& link);
/// One finding object, as in the "findings" array.
void writeFindingJson(JsonWriter& j, const Finding& finding);

/// The devices as cuctx-inspect and the report show them; free memory only where the primary
/// context is active, or everywhere with `measureFreeMemory` (which activates them).
std::vector<DeviceSnapshot> snapshotDevices(bool measureFreeMemory);

/// "lazy", "eager" or "unknown" (also when the driver is not loaded).
const char* moduleLoadingName();

} // namespace cuctx::detail

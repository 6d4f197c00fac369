// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::DeviceFault: the sticky fault that poisoned a device for the rest of the process
/// (docs/faults.md).

#include "cuctx/export.hpp"

#include <optional>
#include <string>
#include <vector>

namespace cuctx {

/// The first sticky fault (CUDA_ERROR_ILLEGAL_ADDRESS, a trap, a misaligned access...) cuctx saw on
/// a device. After it, every context of the device is unusable in this process, and every cuctx call
/// on the device fails fast with Errc::device_poisoned naming this fault; only a new process
/// recovers (use an isolated worker process for code that may fault: docs/faults.md).
///
/// \par Threading
/// Thread-compatible value type.
struct DeviceFault {
    int device = -1;        ///< the device's ordinal
    int result = 0;         ///< the sticky CUresult
    std::string call;       ///< the driver call that returned it
    std::string object;     ///< what that call was made on: "context 3 on device 0"
    long threadId = 0;      ///< the thread that saw it (kernel id)
    std::string threadName; ///< its name
    std::string time;       ///< when, UTC, ISO 8601
    std::string where;      ///< the source location of the failing call: "file:line"
    std::vector<std::string>
        suspects; ///< journalled launches not yet synchronised then: per context, its last 8, oldest first
};

/// The fault that poisoned device `ordinal`, or nothing while the device is usable. Thread-safe.
CUCTX_API std::optional<DeviceFault> deviceFault(int ordinal);
/// Every poisoned device's fault, by ordinal. Thread-safe.
CUCTX_API std::vector<DeviceFault> deviceFaults();

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::diagnose: checks of this process's CUDA set-up, each explained in one sentence with what to
/// do about it (what `cuctx-inspect doctor` prints). The functions are thread-safe; diagnose() never
/// throws cuctx::Error.

#include "cuctx/export.hpp"
#include <string>
#include <vector>

namespace cuctx {

/// How bad a finding is. `note` is worth knowing but wrong in no way; `warning` works, but slower or
/// other than the user probably meant; `error` stops CUDA from working here.
enum class Severity { ok, note, warning, error };

/// "ok", "note", "warning", "error".
CUCTX_API const char* severityName(Severity severity) noexcept;

/// One check's result.
///
/// \par Threading
/// Thread-compatible value type.
struct Finding {
    std::string check;                ///< which check: "driver", "loader-path", "devices", "visible-devices",
                                      ///< "driver-version", "compute-mode", "module-loading", "jit-cache", "fork"
    Severity severity = Severity::ok; ///< how bad it is
    std::string summary;              ///< what was found
    std::string advice;               ///< what to do about it (empty when there is nothing to do)
};

/// What diagnose() looks at.
///
/// \par Threading
/// Thread-compatible value type.
struct DiagnosisOptions {
    /// Where the NVIDIA kernel driver lists the machine's GPUs, one folder each (all of them,
    /// whatever CUDA_VISIBLE_DEVICES says): what the visible-devices check compares with.
    std::string gpuListDir = "/proc/driver/nvidia/gpus";
};

/// Runs every check, in the order of Finding::check's list. Loads the driver if nobody has yet;
/// creates no context. Thread-safe (it reads the environment: see docs/threading.md).
CUCTX_API std::vector<Finding> diagnose(const DiagnosisOptions& options = {});

/// The worst severity among `findings` (ok for none).
CUCTX_API Severity worstSeverity(const std::vector<Finding>& findings) noexcept;

} // namespace cuctx

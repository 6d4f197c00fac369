// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::processReport: what cuctx-inspect shows, for the running process, plus cuctx's registry:
/// which contexts live, which threads have them entered and how deep. For a backend's log, a
/// diagnostics endpoint, or a dump on a signal (cuctx/report_on_signal.hpp). The structs are
/// thread-compatible value types.

#include "cuctx/device.hpp"
#include "cuctx/device_fault.hpp"
#include "cuctx/device_properties.hpp"
#include "cuctx/diagnosis.hpp"
#include "cuctx/driver.hpp"
#include "cuctx/export.hpp"
#include "cuctx/live_objects.hpp"
#include "cuctx/peer_access.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuctx {

/// One device, as processReport() found it. A value type.
struct DeviceSnapshot {
    DeviceProperties properties;           ///< Device::properties()
    Device::PrimaryContextState primary;   ///< Device::primaryContextState()
    std::optional<std::size_t> freeMemory; ///< measured where the primary context was active
};

/// A context cuctx made (created, retained primary, green) or borrowed, and has not destroyed or
/// forgotten. A value type.
struct ContextSnapshot {
    std::uint64_t id = 0;             ///< cuCtxGetId (0 where the driver lacks it)
    int device = -1;                  ///< ordinal
    std::string kind;                 ///< "created", "primary", "green", "borrowed"
    std::string description;          ///< "context 3 on device 0", as cuctx's errors name it
    long handles = 0;                 ///< cuctx::Context handles that own it
    bool destructionDeferred = false; ///< no handle left: destroyed when the last thread's use ends
    std::vector<long> threads;        ///< threads (kernel ids) that have it entered
};

/// A thread that has at least one context entered through cuctx. A value type.
struct ThreadSnapshot {
    long tid = 0;     ///< its kernel thread id (gettid)
    std::string name; ///< /proc/self/task/TID/comm
    /// One context the thread has entered. A value type.
    struct Use {
        std::uint64_t contextId = 0; ///< the context's cuCtxGetId (0 where the driver lacks it)
        std::string context;         ///< its description
        unsigned entries = 0;        ///< switching guards, pushes and bindings of it on this thread now
    };
    std::vector<Use> uses; ///< each context it has entered
    unsigned depth = 0;    ///< all of this thread's entries: how deep its cuctx stack is
};

/// What processReport() found: the driver, the devices, cuctx's contexts and the threads that have
/// them entered, and the live object counts.
///
/// \par Threading
/// Thread-compatible value type.
struct CUCTX_API ProcessReport {
    long pid = 0;                                  ///< the process (getpid)
    std::string time;                              ///< when it was taken, UTC, ISO 8601
    std::string cuctxVersion;                      ///< CUCTX_VERSION_STRING
    Driver::Status driver;                         ///< Driver::status()
    std::string moduleLoading;                     ///< "lazy", "eager" or "unknown"
    std::optional<std::string> cudaVisibleDevices; ///< CUDA_VISIBLE_DEVICES, when set
    std::vector<DeviceSnapshot> devices;           ///< every device, when ReportOptions::devices
    std::vector<PeerLink> peers;                   ///< every ordered pair of devices, when there are several
    std::vector<ContextSnapshot> contexts;         ///< every context in cuctx's registry
    std::vector<ThreadSnapshot> threads;           ///< every thread with a context entered through cuctx
    LiveObjects live;                              ///< liveObjects()
    std::vector<DeviceFault> poisonedDevices;      ///< deviceFaults(): devices a sticky fault poisoned
    std::vector<Finding> findings;                 ///< diagnose()'s, when asked for
    std::vector<std::string> errors;               ///< what could not be collected, and why

    /// Lines for people (a log, a terminal), under 80 columns where the names allow.
    std::string text() const;
    /// The same as JSON, following docs/schema/process-report.schema.json.
    std::string json() const;
};

/// What processReport() collects beyond cuctx's own state. A value type.
struct ReportOptions {
    bool devices = true;   ///< the driver's devices and peer links (driver calls, no context made)
    bool diagnose = false; ///< run cuctx::diagnose() too (reads the JIT cache folder's size)
};

/// Takes the report. Loads the driver if nobody has yet; creates no context and changes no
/// thread's stack. In a child forked after CUDA was initialised it reports the fork as the driver's
/// state, and reads the registry only if no thread held its lock at the fork (never waits).
/// Thread-safe: callable from any thread while others use contexts, from a log sink or a
/// ReportOnSignal sink too; never throws cuctx::Error (what fails is reported in
/// ProcessReport::errors).
CUCTX_API ProcessReport processReport(const ReportOptions& options = {});

} // namespace cuctx

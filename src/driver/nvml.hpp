// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// NVML (libnvidia-ml.so.1), the driver's management library, loaded at run time like libcuda: what
// cuctx needs to see other processes' contexts and the machine's modes (MPS, MIG, persistence).
// The toolkit does not always ship nvml.h, so the few types used are declared here from NVML's
// documented C ABI (stable since R450): a return code, an opaque device handle, process records.

#include "cuctx/error.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuctx::detail {

using NvmlReturn = int; // nvmlReturn_t
inline constexpr NvmlReturn kNvmlSuccess = 0;
inline constexpr NvmlReturn kNvmlInvalidArgument = 2;
inline constexpr NvmlReturn kNvmlNotSupported = 3;
inline constexpr NvmlReturn kNvmlNotFound = 6;
inline constexpr NvmlReturn kNvmlInsufficientSize = 7;
inline constexpr NvmlReturn kNvmlFunctionNotFound = 13;
inline constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL; // NVML_VALUE_NOT_AVAILABLE

struct NvmlDeviceRecord; // nvmlDevice_st, never defined
using NvmlDevice = NvmlDeviceRecord*;

/// nvmlProcessInfo_v1_t: what the unversioned nvmlDeviceGetComputeRunningProcesses fills.
struct NvmlProcessInfoV1 {
    unsigned pid;
    unsigned long long usedGpuMemory;
};
/// nvmlProcessInfo_t (v2): what the _v2 and _v3 entry points fill.
struct NvmlProcessInfoV2 {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId;
    unsigned computeInstanceId;
};

/// The entry points cuctx uses; every entry nullptr until loaded. The required ones are checked at
/// load, the others where they are used (an older driver's NVML lacks some).
struct NvmlApi {
    NvmlReturn (*nvmlInit_v2)() = nullptr;
    NvmlReturn (*nvmlShutdown)() = nullptr;
    const char* (*nvmlErrorString)(NvmlReturn) = nullptr;
    NvmlReturn (*nvmlDeviceGetCount_v2)(unsigned*) = nullptr;
    NvmlReturn (*nvmlDeviceGetHandleByIndex_v2)(unsigned, NvmlDevice*) = nullptr;
    NvmlReturn (*nvmlDeviceGetHandleByUUID)(const char*, NvmlDevice*) = nullptr;
    NvmlReturn (*nvmlDeviceGetUUID)(NvmlDevice, char*, unsigned) = nullptr;
    // Optional.
    NvmlReturn (*nvmlDeviceGetPersistenceMode)(NvmlDevice, int*) = nullptr;
    NvmlReturn (*nvmlDeviceGetComputeMode)(NvmlDevice, int*) = nullptr;
    NvmlReturn (*nvmlDeviceGetMigMode)(NvmlDevice, unsigned*, unsigned*) = nullptr;
    NvmlReturn (*nvmlDeviceGetMaxMigDeviceCount)(NvmlDevice, unsigned*) = nullptr;
    NvmlReturn (*nvmlDeviceGetMigDeviceHandleByIndex)(NvmlDevice, unsigned, NvmlDevice*) = nullptr;
    NvmlReturn (*nvmlSystemGetProcessName)(unsigned, char*, unsigned) = nullptr;
    // The process lists, at the newest version the library has: 3 and 2 fill NvmlProcessInfoV2,
    // 1 (the unversioned name) NvmlProcessInfoV1.
    using ProcessesV2 = NvmlReturn (*)(NvmlDevice, unsigned*, NvmlProcessInfoV2*);
    using ProcessesV1 = NvmlReturn (*)(NvmlDevice, unsigned*, NvmlProcessInfoV1*);
    ProcessesV2 computeProcessesV2 = nullptr;
    ProcessesV1 computeProcessesV1 = nullptr;
    ProcessesV2 mpsProcessesV2 = nullptr;
    ProcessesV1 mpsProcessesV1 = nullptr;
    int computeProcessesVersion = 0; ///< 3, 2 or 1: which symbol was found
    std::string resolvedPath;        ///< the file the dynamic loader opened
};

/// An opened and initialised NVML. The destructor shuts NVML down and closes the library.
class LoadedNvml {
public:
    explicit LoadedNvml(void* handle) noexcept : handle_(handle) {}
    ~LoadedNvml();
    LoadedNvml(const LoadedNvml&) = delete;
    LoadedNvml& operator=(const LoadedNvml&) = delete;

    NvmlApi api;
    bool initialised = false;
    /// Keeps the library mapped and initialised for the life of the process.
    void leak() noexcept { handle_ = nullptr; }

private:
    void* handle_;
};

struct NvmlAttempt {
    std::unique_ptr<LoadedNvml> nvml;
    std::optional<Error> error; ///< Errc::nvml_unavailable
};

/// dlopen(path), dlsym of every entry (versioned ones newest first), nvmlInit_v2. Stateless: the
/// process-wide NVML calls it once, and tests call it directly for each failure mode.
NvmlAttempt loadNvml(const std::string& path);

/// Where the process-wide NVML is loaded from: $CUCTX_NVML_PATH, else "libnvidia-ml.so.1".
std::string nvmlLibraryPath();

/// The process-wide NVML, loaded on first use (once; a failure is remembered). Throws
/// Errc::nvml_unavailable naming `who`.
const NvmlApi& nvml(const char* who);

/// "NVML_ERROR_NO_PERMISSION (4): Insufficient Permissions" and the like.
std::string nvmlResultText(const NvmlApi& api, NvmlReturn r);

/// "CALL failed with NAME (N): TEXT": how a refused NVML call reads wherever cuctx reports it, the form
/// NvmlModeProblems documents (and doctor reads the name back from).
std::string nvmlFailure(const NvmlApi& api, std::string_view call, NvmlReturn r);

/// One process of nvmlDeviceGet{Compute,MPSCompute}RunningProcesses.
struct NvmlProcess {
    unsigned pid = 0;
    std::optional<std::uint64_t> usedMemory; ///< absent where NVML cannot say (NVML_VALUE_NOT_AVAILABLE)
};

/// The compute processes (or, with `mps`, the MPS clients) on `device`, growing the buffer as NVML
/// asks. An absent entry point, or a device that does not support the list (not a compute device, no
/// MPS server), gives no process, and false in `*listed` where given. Where NVML refuses the list, or
/// keeps saying it grew: with `refused`, its error there (NVML_ERROR_INSUFFICIENT_SIZE for the latter) and
/// no process; without, throws Errc::driver_error naming the call.
std::vector<NvmlProcess> nvmlProcesses(const NvmlApi& api, NvmlDevice device, bool mps, bool* listed = nullptr,
                                       NvmlReturn* refused = nullptr);

/// The call that lists a device's compute processes, or with `mps` its MPS clients.
const char* nvmlListCall(bool mps);

/// What to do where nvmlProcesses() reports `refused`.
std::string nvmlListHint(NvmlReturn refused);

/// The UUID NVML reports for `device`, or "" when it cannot say.
std::string nvmlUuidOf(const NvmlApi& api, NvmlDevice device);

} // namespace cuctx::detail

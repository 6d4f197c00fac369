// SPDX-License-Identifier: MIT
#include "driver/nvml.hpp"

#include "check/check.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace cuctx::detail {
namespace {

Error nvmlError(Errc condition, std::string call, std::string object, std::string detail, std::string hint,
                SourceLocation where = SourceLocation::current())
{
    ErrorInfo info;
    info.condition = condition;
    info.call = std::move(call);
    info.object = std::move(object);
    info.detail = std::move(detail);
    info.hint = std::move(hint);
    return Error(std::move(info), where);
}

const char* nvmlResultName(NvmlReturn r)
{
    switch (r) {
    case 0: return "NVML_SUCCESS";
    case 1: return "NVML_ERROR_UNINITIALIZED";
    case 2: return "NVML_ERROR_INVALID_ARGUMENT";
    case 3: return "NVML_ERROR_NOT_SUPPORTED";
    case 4: return "NVML_ERROR_NO_PERMISSION";
    case 5: return "NVML_ERROR_ALREADY_INITIALIZED";
    case 6: return "NVML_ERROR_NOT_FOUND";
    case 7: return "NVML_ERROR_INSUFFICIENT_SIZE";
    case 8: return "NVML_ERROR_INSUFFICIENT_POWER";
    case 9: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case 10: return "NVML_ERROR_TIMEOUT";
    case 11: return "NVML_ERROR_IRQ_ISSUE";
    case 12: return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case 13: return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case 14: return "NVML_ERROR_CORRUPTED_INFOROM";
    case 15: return "NVML_ERROR_GPU_IS_LOST";
    case 16: return "NVML_ERROR_RESET_REQUIRED";
    case 17: return "NVML_ERROR_OPERATING_SYSTEM";
    case 18: return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case 19: return "NVML_ERROR_IN_USE";
    case 20: return "NVML_ERROR_MEMORY";
    case 21: return "NVML_ERROR_NO_DATA";
    case 22: return "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED";
    case 23: return "NVML_ERROR_INSUFFICIENT_RESOURCES";
    case 24: return "NVML_ERROR_FREQ_NOT_SUPPORTED";
    case 25: return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case 26: return "NVML_ERROR_DEPRECATED";
    case 27: return "NVML_ERROR_NOT_READY";
    case 28: return "NVML_ERROR_GPU_NOT_FOUND";
    case 29: return "NVML_ERROR_INVALID_STATE";
    case 30: return "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED";
    case 999: return "NVML_ERROR_UNKNOWN";
    default: return "NVML error";
    }
}

template <typename Fn>
void symbol(void* handle, Fn& slot, const char* name)
{
    slot = reinterpret_cast<Fn>(dlsym(handle, name));
}

const char* const kHint = "Install the NVIDIA driver's NVML (libnvidia-ml.so.1 comes with the driver), or point "
                          "CUCTX_NVML_PATH at it";

} // namespace

LoadedNvml::~LoadedNvml()
{
    if (handle_ == nullptr)
        return;
    if (initialised && api.nvmlShutdown != nullptr)
        api.nvmlShutdown();
    dlclose(handle_);
}

std::string nvmlResultText(const NvmlApi& api, NvmlReturn r)
{
    std::string text = nvmlResultName(r);
    text += " (" + std::to_string(r) + ")";
    if (api.nvmlErrorString != nullptr)
        if (const char* s = api.nvmlErrorString(r); s != nullptr && s[0] != '\0')
            text += std::string(": ") + s;
    return text;
}

NvmlAttempt loadNvml(const std::string& path)
{
    NvmlAttempt attempt;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* reason = dlerror();
        std::string why = reason != nullptr ? reason : "no reason given";
        if (why.starts_with(path + ": "))
            why.erase(0, path.size() + 2);
        attempt.error = nvmlError(Errc::nvml_unavailable, "dlopen", path,
                                  "the NVIDIA management library could not be loaded (" + why + ")", kHint);
        return attempt;
    }
    auto loaded = std::make_unique<LoadedNvml>(handle);
    NvmlApi& a = loaded->api;
    link_map* map = nullptr;
    a.resolvedPath = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr
                         ? std::string(map->l_name)
                         : path;
    symbol(handle, a.nvmlInit_v2, "nvmlInit_v2");
    symbol(handle, a.nvmlShutdown, "nvmlShutdown");
    symbol(handle, a.nvmlErrorString, "nvmlErrorString");
    symbol(handle, a.nvmlDeviceGetCount_v2, "nvmlDeviceGetCount_v2");
    symbol(handle, a.nvmlDeviceGetHandleByIndex_v2, "nvmlDeviceGetHandleByIndex_v2");
    symbol(handle, a.nvmlDeviceGetHandleByUUID, "nvmlDeviceGetHandleByUUID");
    symbol(handle, a.nvmlDeviceGetUUID, "nvmlDeviceGetUUID");
    symbol(handle, a.nvmlDeviceGetPersistenceMode, "nvmlDeviceGetPersistenceMode");
    symbol(handle, a.nvmlDeviceGetComputeMode, "nvmlDeviceGetComputeMode");
    symbol(handle, a.nvmlDeviceGetMigMode, "nvmlDeviceGetMigMode");
    symbol(handle, a.nvmlDeviceGetMaxMigDeviceCount, "nvmlDeviceGetMaxMigDeviceCount");
    symbol(handle, a.nvmlDeviceGetMigDeviceHandleByIndex, "nvmlDeviceGetMigDeviceHandleByIndex");
    symbol(handle, a.nvmlSystemGetProcessName, "nvmlSystemGetProcessName");
    // The process lists: _v2 first. Its record (pid, memory, instance ids: 24 bytes) is the same in
    // every library that has it (R470 on); some R535 libraries write a longer record through _v3
    // without a new version, which a caller sizing 24-byte records cannot read (and would overflow
    // without the slack nvmlProcesses leaves). _v3 only where _v2 is missing; the unversioned one
    // fills the short v1 record.
    if (symbol(handle, a.computeProcessesV2, "nvmlDeviceGetComputeRunningProcesses_v2"); a.computeProcessesV2)
        a.computeProcessesVersion = 2;
    else if (symbol(handle, a.computeProcessesV2, "nvmlDeviceGetComputeRunningProcesses_v3"); a.computeProcessesV2)
        a.computeProcessesVersion = 3;
    else if (symbol(handle, a.computeProcessesV1, "nvmlDeviceGetComputeRunningProcesses"); a.computeProcessesV1)
        a.computeProcessesVersion = 1;
    symbol(handle, a.mpsProcessesV2, "nvmlDeviceGetMPSComputeRunningProcesses_v2");
    if (a.mpsProcessesV2 == nullptr)
        symbol(handle, a.mpsProcessesV2, "nvmlDeviceGetMPSComputeRunningProcesses_v3");
    if (a.mpsProcessesV2 == nullptr)
        symbol(handle, a.mpsProcessesV1, "nvmlDeviceGetMPSComputeRunningProcesses");

    std::string missing;
    auto need = [&](const void* p, const char* name) {
        if (p == nullptr)
            missing += (missing.empty() ? "" : ", ") + std::string(name);
    };
    need(reinterpret_cast<const void*>(a.nvmlInit_v2), "nvmlInit_v2");
    need(reinterpret_cast<const void*>(a.nvmlShutdown), "nvmlShutdown");
    need(reinterpret_cast<const void*>(a.nvmlDeviceGetCount_v2), "nvmlDeviceGetCount_v2");
    need(reinterpret_cast<const void*>(a.nvmlDeviceGetHandleByIndex_v2), "nvmlDeviceGetHandleByIndex_v2");
    need(reinterpret_cast<const void*>(a.nvmlDeviceGetHandleByUUID), "nvmlDeviceGetHandleByUUID");
    need(reinterpret_cast<const void*>(a.nvmlDeviceGetUUID), "nvmlDeviceGetUUID");
    if (a.computeProcessesVersion == 0)
        missing += (missing.empty() ? "" : ", ") + std::string("nvmlDeviceGetComputeRunningProcesses");
    if (!missing.empty()) {
        attempt.error = nvmlError(Errc::nvml_unavailable, "dlsym", a.resolvedPath,
                                  "the NVIDIA management library lacks entry points cuctx needs: " + missing,
                                  "Install a newer NVIDIA driver (R450 or newer)");
        return attempt;
    }
    if (const NvmlReturn r = a.nvmlInit_v2(); r != kNvmlSuccess) {
        attempt.error =
            nvmlError(Errc::nvml_unavailable, "nvmlInit_v2", a.resolvedPath,
                      "the NVIDIA management library did not initialise: " + nvmlResultText(a, r),
                      r == 9    ? "Load the NVIDIA kernel module (nvidia-smi says whether it is)"
                      : r == 18 ? "The driver and its libraries differ in version: reboot, or reinstall the driver"
                                : "Check that nvidia-smi works on this machine");
        return attempt;
    }
    loaded->initialised = true;
    attempt.nvml = std::move(loaded);
    return attempt;
}

std::string nvmlLibraryPath()
{
    if (const char* env = std::getenv("CUCTX_NVML_PATH"); env != nullptr && env[0] != '\0')
        return env;
    return "libnvidia-ml.so.1";
}

const NvmlApi& nvml(const char* who)
{
    struct State {
        std::once_flag once;
        std::unique_ptr<LoadedNvml> nvml; // never closed: other threads may call into it
        std::optional<Error> failure;
    };
    static auto* s = new State; // never destroyed: threads may outlive static destructors
    std::call_once(s->once, [] {
        NvmlAttempt attempt = loadNvml(nvmlLibraryPath());
        s->failure = std::move(attempt.error);
        s->nvml = std::move(attempt.nvml);
        if (s->nvml)
            s->nvml->leak();
    });
    if (!s->nvml) {
        ErrorInfo info;
        info.condition = Errc::nvml_unavailable;
        info.call = who;
        info.object = s->failure->object();
        info.detail = s->failure->detail();
        info.hint = s->failure->hint();
        throw Error(std::move(info));
    }
    return s->nvml->api;
}

std::string nvmlFailure(const NvmlApi& api, std::string_view call, NvmlReturn r)
{
    return std::string(call) + " failed with " + nvmlResultText(api, r);
}

const char* nvmlListCall(bool mps)
{
    return mps ? "nvmlDeviceGetMPSComputeRunningProcesses" : "nvmlDeviceGetComputeRunningProcesses";
}

std::string nvmlListHint(NvmlReturn refused)
{
    if (refused == 4) // NVML_ERROR_NO_PERMISSION
        return "Run as a user allowed to see the GPU's processes (root, or with NVreg_RestrictProfilingToAdminUsers=0)";
    if (refused == kNvmlInsufficientSize) // the list kept growing
        return "Try again; processes were starting on the device faster than cuctx could list them";
    return "Check that nvidia-smi lists the processes";
}

std::vector<NvmlProcess> nvmlProcesses(const NvmlApi& api, NvmlDevice device, bool mps, bool* listed,
                                       NvmlReturn* refused)
{
    if (listed != nullptr)
        *listed = false;
    if (refused != nullptr)
        *refused = kNvmlSuccess;
    const auto v2 = mps ? api.mpsProcessesV2 : api.computeProcessesV2;
    const auto v1 = mps ? api.mpsProcessesV1 : api.computeProcessesV1;
    const char* call = nvmlListCall(mps);
    std::vector<NvmlProcess> out;
    if (v2 == nullptr && v1 == nullptr)
        return out;
    auto fill = [&](auto fn, auto record) {
        using Record = decltype(record);
        // Twice the records NVML is told of: a library whose record is longer than cuctx's (see
        // the loader) writes past what cuctx reads, never past the buffer.
        std::vector<Record> buffer(32);
        for (int attempt = 0; attempt < 8; ++attempt) { // a process may start between two calls
            auto count = static_cast<unsigned>(buffer.size() / 2);
            const NvmlReturn r = fn(device, &count, buffer.data());
            if (r == kNvmlInsufficientSize) {
                buffer.resize(std::max<std::size_t>(count, buffer.size()) * 4);
                continue;
            }
            if (r == kNvmlNotSupported || r == kNvmlNotFound)
                return; // not a compute device, or no MPS here
            if (r != kNvmlSuccess && refused != nullptr) {
                *refused = r;
                return;
            }
            if (r != kNvmlSuccess) {
                ErrorInfo info;
                info.condition = Errc::driver_error;
                info.call = call;
                info.detail = "NVML refused the process list: " + nvmlResultText(api, r);
                info.hint = nvmlListHint(r);
                throw Error(std::move(info));
            }
            if (listed != nullptr)
                *listed = true;
            for (unsigned i = 0; i < count && i < buffer.size() / 2; ++i) {
                NvmlProcess p;
                p.pid = buffer[i].pid;
                if (buffer[i].usedGpuMemory != kNvmlValueNotAvailable)
                    p.usedMemory = buffer[i].usedGpuMemory;
                out.push_back(p);
            }
            return;
        }
        if (refused != nullptr) { // never an empty list that looks like "no process"
            *refused = kNvmlInsufficientSize;
            return;
        }
        ErrorInfo info;
        info.condition = Errc::driver_error;
        info.call = call;
        info.detail = "NVML kept answering that the list grew (8 tries)";
        info.hint = nvmlListHint(kNvmlInsufficientSize);
        throw Error(std::move(info));
    };
    if (v2 != nullptr)
        fill(v2, NvmlProcessInfoV2{});
    else
        fill(v1, NvmlProcessInfoV1{});
    return out;
}

std::string nvmlUuidOf(const NvmlApi& api, NvmlDevice device)
{
    char text[96] = {};
    if (api.nvmlDeviceGetUUID(device, text, sizeof text - 1) != kNvmlSuccess)
        return {};
    return text;
}

} // namespace cuctx::detail

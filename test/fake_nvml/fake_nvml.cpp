// SPDX-License-Identifier: MIT
// The fake NVML (libcuctx-fake-nvml.so): a test double of libnvidia-ml.so.1 with the entry points
// cuctx loads, describing the same GPUs as the fake driver (UUIDs, count). Configuration, read at
// each nvmlInit_v2:
//   CUCTX_FAKE_NVML_DEVICES          devices (default: CUCTX_FAKE_DEVICES, else 2)
//   CUCTX_FAKE_NVML_PROCESSES        other processes' contexts: "PID@DEVICE:MIB,..." (one entry per
//                                    process and device)
//   CUCTX_FAKE_NVML_MPS_PROCESSES    MPS clients, the same form
//   CUCTX_FAKE_NVML_PERSISTENCE      devices with persistence mode on: "0,1" or "all"
//   CUCTX_FAKE_NVML_MIG              devices in MIG mode ("0,1"), each with
//                                    CUCTX_FAKE_NVML_MIG_INSTANCES instances (default 2)
//   CUCTX_FAKE_NVML_COMPUTE_MODE     "DEVICE:MODE,..." (0 default, 2 prohibited, 3 exclusive process)
//   CUCTX_FAKE_NVML_INIT_RESULT      what nvmlInit_v2 returns (default 0, NVML_SUCCESS)
//   CUCTX_FAKE_NVML_PROCESS_RESULT   what the process lists return (default 0)
//   CUCTX_FAKE_NVML_PERSISTENCE_RESULT  "DEVICE:RESULT,...": what nvmlDeviceGetPersistenceMode returns
//                                    there instead of success
//   CUCTX_FAKE_NVML_MIG_RESULT       the same for nvmlDeviceGetMigMode
//   CUCTX_FAKE_NVML_LIST_RESULT      the same for the compute process list (after CUCTX_FAKE_NVML_PROCESS_RESULT)
//   CUCTX_FAKE_NVML_MPS_LIST_RESULT  the same for the MPS client list
//   CUCTX_FAKE_NVML_HANDLE_RESULT    the same for nvmlDeviceGetHandleByUUID (a GPU's UUID and its MIG- form)
//   CUCTX_FAKE_NVML_ERROR_TEXT       "RESULT:TEXT": what nvmlErrorString gives for RESULT (TEXT may be empty,
//                                    or hold any character but NUL)
// This process appears on every device where the fake driver (when loaded in it) holds a context:
// an active primary context or a created one, CUCTX_FAKE_NVML_SELF_MIB (default 520) each, as the
// real NVML lists a process once its context exists.
// Built twice: libcuctx-fake-nvml.so has the versioned process lists (_v3, _v2), and
// libcuctx-fake-nvml-old.so (FAKE_NVML_OLD) only the unversioned ones, as an R450 driver's.

#include <dlfcn.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace fake_nvml {
// nvmlProcessInfo_v1_t and nvmlProcessInfo_t (v2), as NVML's documented ABI lays them out.
struct InfoV1 {
    unsigned pid;
    unsigned long long usedGpuMemory;
};
struct InfoV2 {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId;
    unsigned computeInstanceId;
};
} // namespace fake_nvml
using fake_nvml::InfoV1;
using fake_nvml::InfoV2;

extern "C" {
int nvmlInit_v2();
int nvmlShutdown();
const char* nvmlErrorString(int r);
int nvmlDeviceGetCount_v2(unsigned* count);
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device);
int nvmlDeviceGetHandleByUUID(const char* uuid, void** device);
int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length);
int nvmlDeviceGetPersistenceMode(void* device, int* mode);
int nvmlDeviceGetComputeMode(void* device, int* mode);
int nvmlDeviceGetMigMode(void* device, unsigned* current, unsigned* pending);
int nvmlDeviceGetMaxMigDeviceCount(void* device, unsigned* count);
int nvmlDeviceGetMigDeviceHandleByIndex(void* device, unsigned index, void** mig);
int nvmlSystemGetProcessName(unsigned pid, char* name, unsigned length);
int nvmlDeviceGetComputeRunningProcesses(void* device, unsigned* count, InfoV1* infos);
int nvmlDeviceGetMPSComputeRunningProcesses(void* device, unsigned* count, InfoV1* infos);
int nvmlDeviceGetComputeRunningProcesses_v2(void* device, unsigned* count, InfoV2* infos);
int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned* count, InfoV2* infos);
int nvmlDeviceGetMPSComputeRunningProcesses_v3(void* device, unsigned* count, InfoV2* infos);
}

namespace {

using Return = int;
constexpr Return kSuccess = 0;
constexpr Return kUninitialized = 1;
constexpr Return kInvalidArgument = 2;
constexpr Return kNotSupported = 3;
constexpr Return kNotFound = 6;
constexpr Return kInsufficientSize = 7;

struct FakeDevice {
    int index;       // the GPU's index; for a MIG instance, its parent's
    int migInstance; // -1 for a GPU
    std::string uuid;
};

struct Entry {
    unsigned pid;
    int device;
    unsigned long long bytes;
};

struct State {
    std::mutex mutex;
    int initCount = 0;
    std::vector<FakeDevice*> devices;  // GPUs, then MIG instances (immortal: handles stay valid)
    std::vector<FakeDevice*> retired;  // earlier configurations' records, kept reachable
    std::vector<Entry> processes, mps; // configured, other processes
    std::vector<bool> persistence, mig;
    std::vector<int> computeMode;
    std::vector<int> persistenceResult;
    std::vector<int> migResult;
    std::vector<int> listResult;
    std::vector<int> mpsListResult;
    std::vector<int> handleResult;
    int migInstances = 2;
    unsigned long long selfBytes = 520ULL << 20;
    Return processResult = kSuccess;
};

State& state()
{
    static auto* s = new State;
    return *s;
}

int envInt(const char* name, int fallback)
{
    const char* v = std::getenv(name);
    if (v == nullptr || v[0] == '\0')
        return fallback;
    int value = 0;
    const std::string_view text(v);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc{} && end == text.data() + text.size() ? value : fallback;
}

std::vector<std::string> split(const char* v, char sep)
{
    std::vector<std::string> parts;
    if (v == nullptr)
        return parts;
    std::string item;
    for (const char* p = v;; ++p) {
        if (*p == sep || *p == '\0') {
            if (!item.empty())
                parts.push_back(item);
            item.clear();
            if (*p == '\0')
                break;
        } else {
            item += *p;
        }
    }
    return parts;
}

std::vector<Entry> parseProcesses(const char* name)
{
    std::vector<Entry> out;
    for (const std::string& item : split(std::getenv(name), ',')) {
        unsigned pid = 0;
        int device = 0;
        unsigned long long mib = 0;
        if (std::sscanf(item.c_str(), "%u@%d:%llu", &pid, &device, &mib) == 3)
            out.push_back({pid, device, mib << 20});
    }
    return out;
}

std::vector<bool> deviceSet(const char* name, int n)
{
    std::vector<bool> on(static_cast<std::size_t>(n), false);
    const char* v = std::getenv(name);
    if (v != nullptr && std::string_view(v) == "all")
        return std::vector<bool>(static_cast<std::size_t>(n), true);
    for (const std::string& item : split(v, ','))
        if (const int d = std::atoi(item.c_str()); d >= 0 && d < n)
            on[static_cast<std::size_t>(d)] = true;
    return on;
}

// The same UUIDs as the fake driver's cuDeviceGetUuid: byte i of device d is 0x10 * d + i.
std::string uuidOf(int d)
{
    unsigned char b[16];
    for (int i = 0; i < 16; ++i)
        b[i] = static_cast<unsigned char>(0x10 * d + i);
    char text[64];
    std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return text;
}

void configure(State& s)
{
    const int n = envInt("CUCTX_FAKE_NVML_DEVICES", envInt("CUCTX_FAKE_DEVICES", 2));
    // The old records stay allocated (a stale handle stays readable) and reachable (LeakSanitizer).
    s.retired.insert(s.retired.end(), s.devices.begin(), s.devices.end());
    s.devices.clear();
    for (int d = 0; d < n; ++d)
        s.devices.push_back(new FakeDevice{d, -1, uuidOf(d)});
    s.processes = parseProcesses("CUCTX_FAKE_NVML_PROCESSES");
    s.mps = parseProcesses("CUCTX_FAKE_NVML_MPS_PROCESSES");
    s.persistence = deviceSet("CUCTX_FAKE_NVML_PERSISTENCE", n);
    s.mig = deviceSet("CUCTX_FAKE_NVML_MIG", n);
    s.migInstances = envInt("CUCTX_FAKE_NVML_MIG_INSTANCES", 2);
    // "DEVICE:VALUE,..." into `values`, one for each device (0 where the list names none).
    auto perDevice = [&](const char* name, std::vector<int>& values) {
        values.assign(static_cast<std::size_t>(n), 0);
        for (const std::string& item : split(std::getenv(name), ',')) {
            int d = 0, value = 0;
            if (std::sscanf(item.c_str(), "%d:%d", &d, &value) == 2 && d >= 0 && d < n)
                values[static_cast<std::size_t>(d)] = value;
        }
    };
    perDevice("CUCTX_FAKE_NVML_COMPUTE_MODE", s.computeMode);
    perDevice("CUCTX_FAKE_NVML_PERSISTENCE_RESULT", s.persistenceResult);
    perDevice("CUCTX_FAKE_NVML_MIG_RESULT", s.migResult);
    perDevice("CUCTX_FAKE_NVML_LIST_RESULT", s.listResult);
    perDevice("CUCTX_FAKE_NVML_MPS_LIST_RESULT", s.mpsListResult);
    perDevice("CUCTX_FAKE_NVML_HANDLE_RESULT", s.handleResult);
    for (int d = 0; d < n; ++d)
        if (s.mig[static_cast<std::size_t>(d)])
            for (int k = 0; k < s.migInstances; ++k) {
                std::string uuid = "MIG-" + uuidOf(d).substr(4);
                uuid.back() = static_cast<char>('a' + k);
                s.devices.push_back(new FakeDevice{d, k, uuid});
            }
    s.selfBytes = static_cast<unsigned long long>(envInt("CUCTX_FAKE_NVML_SELF_MIB", 520)) << 20;
    s.processResult = envInt("CUCTX_FAKE_NVML_PROCESS_RESULT", kSuccess);
}

FakeDevice* deviceOf(void* handle)
{
    State& s = state();
    for (FakeDevice* d : s.devices)
        if (d == handle)
            return d;
    return nullptr;
}

// How many contexts the fake driver holds on `device` in this process, when it is loaded here.
int selfContexts(int device)
{
    using Count = int (*)(int);
    auto count = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "cuctx_fake_device_contexts"));
    if (count == nullptr)
        if (const char* path = std::getenv("CUCTX_DRIVER_PATH"); path != nullptr)
            if (void* h = dlopen(path, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL)) {
                count = reinterpret_cast<Count>(dlsym(h, "cuctx_fake_device_contexts"));
                dlclose(h); // drops the reference RTLD_NOLOAD took; the driver stays loaded
            }
    return count != nullptr ? count(device) : 0;
}

template <typename Record>
Return listProcesses(void* handle, unsigned* count, Record* records, bool mps)
{
    State& s = state();
    std::vector<Entry> entries;
    {
        std::lock_guard lock(s.mutex);
        if (s.initCount == 0)
            return kUninitialized;
        if (count == nullptr)
            return kInvalidArgument;
        const FakeDevice* d = deviceOf(handle);
        if (d == nullptr)
            return kInvalidArgument;
        if (s.processResult != kSuccess)
            return s.processResult;
        if (d->migInstance < 0)
            if (const int r = (mps ? s.mpsListResult : s.listResult)[static_cast<std::size_t>(d->index)]; r != kSuccess)
                return r;
        if (d->migInstance >= 0) { // processes in MIG instances are not modelled
            *count = 0;
            return kSuccess;
        }
        for (const Entry& e : mps ? s.mps : s.processes)
            if (e.device == d->index)
                entries.push_back(e);
    }
    if (!mps)
        if (const int n = selfContexts(deviceOf(handle)->index); n > 0)
            entries.push_back({static_cast<unsigned>(getpid()), 0, state().selfBytes * static_cast<unsigned>(n)});
    if (*count < entries.size()) {
        *count = static_cast<unsigned>(entries.size());
        return kInsufficientSize;
    }
    *count = static_cast<unsigned>(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
        records[i] = Record{};
        records[i].pid = entries[i].pid;
        records[i].usedGpuMemory = entries[i].bytes;
    }
    return kSuccess;
}

} // namespace

extern "C" {

Return nvmlInit_v2()
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (const int r = envInt("CUCTX_FAKE_NVML_INIT_RESULT", kSuccess); r != kSuccess)
        return r;
    ++s.initCount;
    configure(s); // at every init, not only the first: tests reconfigure while another user keeps NVML open
    return kSuccess;
}

Return nvmlShutdown()
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.initCount == 0)
        return kUninitialized;
    --s.initCount;
    return kSuccess;
}

const char* nvmlErrorString(Return r)
{
    // The environment's string itself: it lives as long as the variable is not set again.
    if (const char* v = std::getenv("CUCTX_FAKE_NVML_ERROR_TEXT"); v != nullptr)
        if (const char* colon = std::strchr(v, ':'); colon != nullptr && std::atoi(v) == r)
            return colon + 1;
    switch (r) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
    }
}

Return nvmlDeviceGetCount_v2(unsigned* count)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.initCount == 0)
        return kUninitialized;
    unsigned n = 0;
    for (const FakeDevice* d : s.devices)
        n += d->migInstance < 0 ? 1 : 0;
    *count = n;
    return kSuccess;
}

Return nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.initCount == 0)
        return kUninitialized;
    for (FakeDevice* d : s.devices)
        if (d->migInstance < 0 && d->index == static_cast<int>(index)) {
            *device = d;
            return kSuccess;
        }
    return kInvalidArgument;
}

Return nvmlDeviceGetHandleByUUID(const char* uuid, void** device)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.initCount == 0)
        return kUninitialized;
    for (FakeDevice* d : s.devices)
        if (d->uuid == uuid) {
            if (const int r = s.handleResult[static_cast<std::size_t>(d->index)]; r != kSuccess)
                return r;
            *device = d;
            return kSuccess;
        }
    return kNotFound;
}

Return nvmlDeviceGetUUID(void* device, char* uuid, unsigned length)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    const FakeDevice* d = deviceOf(device);
    if (d == nullptr)
        return kInvalidArgument;
    if (length < d->uuid.size() + 1)
        return kInsufficientSize;
    std::memcpy(uuid, d->uuid.c_str(), d->uuid.size() + 1);
    return kSuccess;
}

Return nvmlDeviceGetPersistenceMode(void* device, int* mode)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    const FakeDevice* d = deviceOf(device);
    if (d == nullptr)
        return kInvalidArgument;
    if (const int r = s.persistenceResult[static_cast<std::size_t>(d->index)]; r != kSuccess)
        return r;
    *mode = s.persistence[static_cast<std::size_t>(d->index)] ? 1 : 0;
    return kSuccess;
}

Return nvmlDeviceGetComputeMode(void* device, int* mode)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    const FakeDevice* d = deviceOf(device);
    if (d == nullptr)
        return kInvalidArgument;
    *mode = s.computeMode[static_cast<std::size_t>(d->index)];
    return kSuccess;
}

Return nvmlDeviceGetMigMode(void* device, unsigned* current, unsigned* pending)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    const FakeDevice* d = deviceOf(device);
    if (d == nullptr)
        return kInvalidArgument;
    if (d->migInstance >= 0)
        return kNotSupported;
    if (const int r = s.migResult[static_cast<std::size_t>(d->index)]; r != kSuccess)
        return r;
    *current = *pending = s.mig[static_cast<std::size_t>(d->index)] ? 1 : 0;
    return kSuccess;
}

Return nvmlDeviceGetMaxMigDeviceCount(void* device, unsigned* count)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    const FakeDevice* d = deviceOf(device);
    if (d == nullptr)
        return kInvalidArgument;
    *count = s.mig[static_cast<std::size_t>(d->index)] ? static_cast<unsigned>(s.migInstances) : 0;
    return kSuccess;
}

Return nvmlDeviceGetMigDeviceHandleByIndex(void* device, unsigned index, void** mig)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    const FakeDevice* d = deviceOf(device);
    if (d == nullptr)
        return kInvalidArgument;
    for (FakeDevice* m : s.devices)
        if (m->migInstance == static_cast<int>(index) && m->index == d->index) {
            *mig = m;
            return kSuccess;
        }
    return kNotFound;
}

Return nvmlSystemGetProcessName(unsigned pid, char* name, unsigned length)
{
    char text[32];
    std::snprintf(text, sizeof text, "fake-%u", pid);
    if (length < std::strlen(text) + 1)
        return kInsufficientSize;
    std::strcpy(name, text);
    return kSuccess;
}

Return nvmlDeviceGetComputeRunningProcesses(void* device, unsigned* count, InfoV1* infos)
{
    return listProcesses(device, count, infos, false);
}
Return nvmlDeviceGetMPSComputeRunningProcesses(void* device, unsigned* count, InfoV1* infos)
{
    return listProcesses(device, count, infos, true);
}

#ifndef FAKE_NVML_OLD
Return nvmlDeviceGetComputeRunningProcesses_v2(void* device, unsigned* count, InfoV2* infos)
{
    return listProcesses(device, count, infos, false);
}
Return nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned* count, InfoV2* infos)
{
    return listProcesses(device, count, infos, false);
}
Return nvmlDeviceGetMPSComputeRunningProcesses_v3(void* device, unsigned* count, InfoV2* infos)
{
    return listProcesses(device, count, infos, true);
}
#endif

} // extern "C"

// SPDX-License-Identifier: MIT
#include "cuctx/diagnosis.hpp"

#include "cuctx/device.hpp"
#include "cuctx/device_mode.hpp"
#include "cuctx/driver.hpp"
#include "cuctx/error.hpp"
#include "cuctx/gpu_process.hpp"
#include "cuctx/module.hpp"
#include "cuctx/rank_binding.hpp"
#include "driver/driver_api.hpp"
#include "driver/fork_state.hpp"
#include "format/printable.hpp"
#include "format/report_format.hpp"
#include "process/environment.hpp"
#include "report/device_modes.hpp"
#include "report/gpu_processes.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace cuctx {
namespace {

namespace fs = std::filesystem;

// The JIT cache's documented defaults (CUDA Programming Guide, "CUDA Environment Variables").
constexpr std::uint64_t kDefaultCacheLimit = std::uint64_t{256} << 20;
constexpr std::uint64_t kLargestCacheLimit = std::uint64_t{4} << 30;

struct Findings {
    std::vector<Finding> list;
    void add(const char* check, Severity severity, std::string summary, std::string advice = {})
    {
        list.push_back({check, severity, std::move(summary), std::move(advice)});
    }
};

std::vector<std::string> split(std::string_view text, char separator)
{
    std::vector<std::string> parts;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const std::size_t end = std::min(text.find(separator, pos), text.size());
        parts.emplace_back(text.substr(pos, end - pos));
        pos = end + 1;
    }
    return parts;
}

void checkDriver(Findings& f, const Driver::Status& st)
{
    if (st.loaded) {
        f.add("driver", Severity::ok,
              "CUDA " + detail::formatCudaVersion(st.driverVersion) + " driver loaded from " +
                  (st.resolvedPath.empty() ? st.requestedPath : st.resolvedPath));
        return;
    }
    switch (st.condition) {
    case Errc::driver_not_found:
        f.add("driver", Severity::error, "no CUDA driver: " + st.requestedPath + " could not be loaded",
              "install the NVIDIA driver (it provides libcuda.so.1), or point CUCTX_DRIVER_PATH at its libcuda");
        break;
    case Errc::stub_driver:
        f.add("driver", Severity::error,
              "the CUDA toolkit's stub libcuda was loaded (" + st.resolvedPath + "): every call fails",
              "take the toolkit's lib64/stubs folder out of LD_LIBRARY_PATH; the stub is for linking only");
        break;
    case Errc::no_device:
        // The devices check says why.
        f.add("driver", Severity::ok,
              "CUDA " + detail::formatCudaVersion(st.driverVersion) + " driver loaded from " + st.resolvedPath);
        break;
    case Errc::driver_too_old:
        f.add("driver", Severity::error, st.message, "install an NVIDIA driver for CUDA 12.0 or newer");
        break;
    case Errc::forked_after_init: break; // the fork check reports it
    default:
        f.add("driver", Severity::error, st.message, "see the driver error above; nvidia-smi should work first");
        break;
    }
}

// A toolkit's stubs folder on LD_LIBRARY_PATH: harmless while the driver's own libcuda.so.1 comes
// first, but whoever dlopens "libcuda.so" (or finds a stub renamed libcuda.so.1 there) gets the stub.
void checkLoaderPath(Findings& f, const Driver::Status& st)
{
    const char* path = std::getenv("LD_LIBRARY_PATH");
    bool found = false;
    for (const std::string& dir : split(path != nullptr ? path : "", ':')) {
        if (dir.empty())
            continue;
        std::error_code ec;
        const bool hasCuda =
            fs::exists(fs::path(dir) / "libcuda.so.1", ec) || fs::exists(fs::path(dir) / "libcuda.so", ec);
        if (!hasCuda || fs::path(dir).filename() != "stubs")
            continue;
        found = true;
        const bool loadedIt = st.resolvedPath.rfind(dir, 0) == 0;
        f.add("loader-path", loadedIt ? Severity::error : Severity::warning,
              "LD_LIBRARY_PATH holds a CUDA stubs folder with a libcuda (" + dir + ")" +
                  (loadedIt ? ", and the stub is what loaded" : ""),
              "remove " + dir + " from LD_LIBRARY_PATH: link against the stub with -L, never run with it");
    }
    if (!found)
        f.add("loader-path", Severity::ok, "no CUDA stub library on LD_LIBRARY_PATH");
}

int physicalGpus(const std::string& listDir)
{
    std::error_code ec;
    int n = 0;
    for (fs::directory_iterator it(listDir, ec), end; !ec && it != end; it.increment(ec))
        ++n;
    return ec ? -1 : n;
}

void checkDevices(Findings& f, const Driver::Status& st, const DiagnosisOptions& options, int visible)
{
    const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
    const int physical = physicalGpus(options.gpuListDir);
    if (st.loaded) {
        f.add("devices", Severity::ok, std::to_string(visible) + (visible == 1 ? " device" : " devices") + " visible");
    } else if (st.condition == Errc::no_device) {
        std::string advice =
            cvd != nullptr
                ? "CUDA_VISIBLE_DEVICES=\"" + std::string(cvd) + "\" may hide them all: unset it or list valid devices"
                : "check that nvidia-smi lists a GPU and that this user may open /dev/nvidia*";
        f.add("devices", Severity::error,
              "the driver sees no CUDA device" +
                  (cvd != nullptr ? " (CUDA_VISIBLE_DEVICES=\"" + std::string(cvd) + "\")" : std::string()),
              std::move(advice));
    }

    if (cvd == nullptr) {
        f.add("visible-devices", Severity::ok, "CUDA_VISIBLE_DEVICES is not set: every GPU is visible");
        return;
    }
    const std::string value = cvd;
    if (value.empty()) {
        f.add("visible-devices", Severity::error, "CUDA_VISIBLE_DEVICES is set but empty: it hides every GPU",
              "unset CUDA_VISIBLE_DEVICES, or list the devices to use (\"0,1\" or UUIDs)");
        return;
    }
    bool problem = false;
    const detail::VisibleDevices parsed = detail::parseVisibleDevices(value);
    if (parsed.stoppedAt) {
        const std::size_t i = *parsed.stoppedAt;
        f.add("visible-devices", parsed.used.empty() ? Severity::error : Severity::warning,
              "CUDA_VISIBLE_DEVICES entry " + std::to_string(i + 1) + " (\"" + parsed.entries[i] +
                  "\") is no device index or UUID: the driver stops there" +
                  (i + 1 < parsed.entries.size() ? " and ignores every entry after it" : "") +
                  (parsed.used.empty() ? ", so it hides every GPU"
                                       : ", using the " + std::to_string(parsed.used.size()) + " before it"),
              "write indices (\"0,2\") or UUIDs as nvidia-smi -L prints them (\"GPU-...\"), with no empty entry");
        problem = true;
    }
    for (const std::string& e : parsed.used) {
        if (physical > 0 && e[0] != 'G' && e[0] != 'M' &&
            (e.size() > 9 || std::stoul(e) >= static_cast<unsigned long>(physical))) {
            f.add("visible-devices", Severity::warning,
                  "CUDA_VISIBLE_DEVICES entry " + e + " names no GPU (this machine has " + std::to_string(physical) +
                      (problem ? ")" : "): the driver stops there"),
                  "use indices below " + std::to_string(physical) + ", as nvidia-smi numbers them");
            problem = true;
        }
    }
    // Without the driver's GPU list (/proc/driver/nvidia/gpus), the driver's own count tells: it uses
    // the entries up to the first that names no GPU.
    const bool counted = st.loaded || st.condition == Errc::no_device; // then `visible` is the driver's count
    if (!problem && counted && static_cast<std::size_t>(visible) < parsed.used.size()) {
        f.add("visible-devices", Severity::warning,
              "CUDA_VISIBLE_DEVICES=" + value + " lists " + std::to_string(parsed.used.size()) +
                  " devices but the driver sees " + std::to_string(visible) +
                  ": an entry names no GPU of this machine, and the driver stops at it",
              "list only the GPUs nvidia-smi -L shows");
        problem = true;
    }
    if (physical > 0 && visible < physical) {
        f.add("visible-devices", Severity::warning,
              "CUDA_VISIBLE_DEVICES=" + value + " hides " + std::to_string(physical - visible) + " of the " +
                  std::to_string(physical) + " GPUs: this process sees " + std::to_string(visible),
              "expected under a launcher that binds each rank to its GPUs; otherwise unset CUDA_VISIBLE_DEVICES");
        problem = true;
    }
    if (!problem)
        f.add("visible-devices", Severity::ok, "CUDA_VISIBLE_DEVICES=" + value);
}

void checkDriverVersion(Findings& f, const Driver::Status& st)
{
    if (st.driverVersion == 0)
        return;
    const int headers = Driver::headerVersion();
    if (st.driverVersion < headers)
        f.add("driver-version", Severity::warning,
              "the driver supports CUDA " + detail::formatCudaVersion(st.driverVersion) + ", older than the CUDA " +
                  detail::formatCudaVersion(headers) +
                  " headers cuctx was built with: newer features fail with "
                  "CUDA_ERROR_NOT_SUPPORTED or fall back",
              "update the NVIDIA driver to one for CUDA " + detail::formatCudaVersion(headers) + " or newer");
    else
        f.add("driver-version", Severity::ok,
              "the driver (CUDA " + detail::formatCudaVersion(st.driverVersion) +
                  ") is as new as cuctx's headers (CUDA " + detail::formatCudaVersion(headers) + ")");
}

void checkComputeModes(Findings& f)
{
    bool any = false;
    for (const Device& d : Device::all()) {
        const int mode = d.nativeAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
        const std::string which = "device " + std::to_string(d.ordinal());
        if (mode == CU_COMPUTEMODE_PROHIBITED) {
            f.add("compute-mode", Severity::error,
                  which + " is in compute mode Prohibited: no context can be made on it",
                  "nvidia-smi -i " + std::to_string(d.ordinal()) + " -c DEFAULT (as root), or use another device");
            any = true;
        } else if (mode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS) {
            f.add("compute-mode", Severity::note,
                  which + " is in compute mode Exclusive Process: one process at a time may have a context on it",
                  "one process per GPU works; a second process's context creation fails with CUDA_ERROR_DEVICE_BUSY");
            any = true;
        }
    }
    if (!any)
        f.add("compute-mode", Severity::ok, "every device is in compute mode Default");
}

// MPS, MIG and persistence (deviceModes), and Exclusive Process devices another process holds.
void checkModes(Findings& f)
{
    const detail::ModesReport report = detail::deviceModesReport();
    const std::vector<DeviceMode>& modes = report.modes;
    // NVML answered where it did for any device: a device it does not know, or a query it refused, leaves
    // the others checked, and says what it could not check.
    const bool nvmlAnswered =
        modes.empty() || std::ranges::any_of(modes, [](const DeviceMode& m) { return m.nvmlAnswered; });
    bool anyMps = false;
    for (const DeviceMode& m : modes) {
        if (!m.mps)
            continue;
        anyMps = true;
        const std::string& problem = m.nvmlProblems.about(m.nvmlProblems.mpsClients);
        const std::string which = "device " + std::to_string(m.ordinal);
        const std::string clients = m.mpsClients      ? std::to_string(*m.mpsClients) + " client process(es) now"
                                    : problem.empty() ? "clients not counted"
                                                      : "clients not counted: " + detail::printableText(problem);
        const bool full = m.mpsClients && *m.mpsClients >= kMpsClientContextLimit;
        f.add("mps", full ? Severity::warning : Severity::note,
              which + " is shared through MPS (" + clients + "): the server allows at most " +
                  std::to_string(kMpsClientContextLimit) + " client contexts per device, across every client",
              "keep one context per process under MPS (Context::primary), and set CUDA_MPS_ACTIVE_THREAD_PERCENTAGE "
              "to divide the SMs; a context past the limit fails to create");
    }
    if (!anyMps)
        f.add("mps", Severity::ok, "no device is shared through MPS");

    // What to do about one field's (or device's) problem: the advice that fits its cause, read from the
    // error's name where NVML refused a call (nvmlFailure's "CALL failed with NAME (N): TEXT"), never from
    // NVML's text.
    auto nvmlFix = [](const std::string& why) -> std::string {
        constexpr std::string_view failed = " failed with ";
        const std::size_t at = why.find(failed);
        auto failedWith = [&](std::string_view name) { // the first error's name only, never NVML's text after it
            const std::string_view rest =
                at == std::string::npos ? std::string_view() : std::string_view(why).substr(at + failed.size());
            return rest.starts_with(name) && rest.substr(name.size()).starts_with(" (");
        };
        if (why.starts_with("NVML does not know"))
            return "nvidia-smi -L lists the GPUs NVML sees; where this one is missing, NVML and the CUDA driver see "
                   "different GPUs (a driver and its libraries of different installs)";
        if (failedWith("NVML_ERROR_NO_PERMISSION"))
            return "run as a user allowed to query the GPU";
        if (failedWith("NVML_ERROR_GPU_IS_LOST") || failedWith("NVML_ERROR_RESET_REQUIRED"))
            return "the GPU needs a reset or a reboot (the kernel log says why)";
        return "nvidia-smi -q shows what NVML reads there";
    };
    if (!nvmlAnswered) {
        // Unavailable: one reason for every device. Loaded: each device's own (not known, or refused).
        std::string why = modes.front().nvmlProblems.device;
        if (report.nvmlLoaded) {
            why.clear();
            for (const DeviceMode& m : modes)
                why +=
                    (why.empty() ? "" : "; ") + ("device " + std::to_string(m.ordinal) + ": ") + m.nvmlProblems.device;
        }
        why = detail::printableText(why); // NVML's error strings, shown on a terminal
        const std::string summary = report.nvmlLoaded ? "not checked: NVML answered for no device (" + why + ")"
                                                      : "not checked: NVML is unavailable (" + why + ")";
        // Loaded: the advice for each device's cause, once each.
        std::string fix;
        std::vector<std::string> fixes;
        if (report.nvmlLoaded)
            for (const DeviceMode& m : modes)
                if (std::string each = nvmlFix(m.nvmlProblems.device); std::ranges::find(fixes, each) == fixes.end()) {
                    fix += (fix.empty() ? "" : "; ") + each;
                    fixes.push_back(std::move(each));
                }
        if (!report.nvmlLoaded)
            fix = report.nvmlHint.empty() ? "install the driver's libnvidia-ml.so.1, or point CUCTX_NVML_PATH at it"
                                          : report.nvmlHint;
        f.add("mig", Severity::note, summary, fix);
        f.add("persistence", Severity::note, summary, fix);
    } else {
        // A field NVML could not read on a device: a note naming the device and the call that failed.
        auto unknown = [&](const char* check, const char* what, std::size_t i, const std::string& problem) {
            const std::string& why = modes[i].nvmlProblems.about(problem);
            if (why.empty())
                return false; // the device does not support the query: nothing to say
            f.add(check, Severity::note,
                  std::string(what) + " not known on device " + std::to_string(modes[i].ordinal) + ": " +
                      detail::printableText(why),
                  nvmlFix(why));
            return true;
        };
        bool anyMig = false;
        bool migUnknown = false;
        for (std::size_t i = 0; i < modes.size(); ++i) {
            const DeviceMode& m = modes[i];
            if (m.mig == true) {
                anyMig = true;
                const std::string& countProblem = m.nvmlProblems.migInstances;
                const std::string instances = m.migInstances ? std::to_string(*m.migInstances) + " instances"
                                              : countProblem.empty()
                                                  ? "instances not counted"
                                                  : "instances not counted: " + detail::printableText(countProblem);
                f.add("mig", Severity::note,
                      "device " + std::to_string(m.ordinal) + " is on a GPU in MIG mode (" + instances +
                          "); CUDA enumerates only one MIG instance per process",
                      "give each process its own instance: CUDA_VISIBLE_DEVICES=MIG-<uuid> (nvidia-smi -L lists them)");
            } else if (!m.mig) {
                migUnknown = unknown("mig", "MIG mode", i, m.nvmlProblems.mig) || migUnknown;
            }
        }
        int migEntries = 0;
        if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES"))
            for (const std::string& e : split(cvd, ','))
                migEntries += e.rfind("MIG-", 0) == 0 ? 1 : 0;
        if (migEntries > 1)
            f.add("mig", Severity::warning,
                  "CUDA_VISIBLE_DEVICES names " + std::to_string(migEntries) +
                      " MIG instances, but CUDA uses only the first in a process",
                  "start one process per MIG instance, each with its own CUDA_VISIBLE_DEVICES");
        else if (!anyMig && !migUnknown)
            f.add("mig", Severity::ok, "no GPU is in MIG mode");
        std::string off;
        bool persistenceUnknown = false;
        bool anyKnown = false;
        for (std::size_t i = 0; i < modes.size(); ++i) {
            const DeviceMode& m = modes[i];
            anyKnown = anyKnown || m.persistence.has_value();
            if (m.persistence == false)
                off += (off.empty() ? "" : ", ") + std::to_string(m.ordinal);
            else if (!m.persistence)
                persistenceUnknown =
                    unknown("persistence", "persistence mode", i, m.nvmlProblems.persistence) || persistenceUnknown;
        }
        if (!off.empty())
            f.add("persistence", Severity::note,
                  "persistence mode is off on device(s) " + off +
                      ": the driver tears the GPU down when its last process exits, and each start pays for "
                      "bringing it up again",
                  "nvidia-smi -pm 1 (as root), or run nvidia-persistenced");
        else if (anyKnown && !persistenceUnknown)
            f.add("persistence", Severity::ok, "persistence mode is on wherever NVML says");
        else if (!persistenceUnknown)
            f.add("persistence", Severity::note,
                  "no device says whether persistence mode is on (NVML does not "
                  "support the query here)");
    }

    // Exclusive Process: another process holding the device means this one cannot make a context there.
    // Its name is what its owner chose: printable in the finding, which doctor shows on a terminal. Each
    // device's list on its own: one NVML cannot give leaves that device unchecked, said so, not the others.
    std::vector<detail::Unlisted> unlisted(modes.size());
    std::vector<GpuProcess> others;
    try {
        for (GpuProcess& p : detail::processesFrom(detail::nvml("cuctx-inspect doctor"), &unlisted))
            if (!p.self)
                others.push_back(std::move(p));
    } catch (const Error& e) { // NVML unavailable (noted above for MIG and persistence), or the driver
        std::ranges::fill(unlisted, detail::Unlisted{e.detail(), e.hint()});
    }
    for (std::size_t i = 0; i < modes.size() && i < unlisted.size(); ++i)
        if (modes[i].computeMode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS && !unlisted[i].why.empty())
            f.add("compute-mode", Severity::note,
                  "device " + std::to_string(modes[i].ordinal) +
                      " is in compute mode Exclusive Process, and NVML could not list every process that holds it: " +
                      detail::printableText(unlisted[i].why),
                  unlisted[i].hint.empty() ? "nvidia-smi -q -d PIDS lists them" : unlisted[i].hint);
    std::optional<int> bound;
    std::string boundWhy;
    try {
        std::map<std::string, std::string> env;
        for (const std::string& name : localRankVariables())
            if (const char* v = std::getenv(name.c_str()))
                env[name] = v;
        if (!env.empty()) {
            if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES"))
                env["CUDA_VISIBLE_DEVICES"] = cvd;
            const RankBinding b = bindRank(env, static_cast<int>(modes.size()));
            bound = b.ordinal;
            boundWhy = b.describe();
        }
    } catch (const Error&) {
    }
    for (const DeviceMode& m : modes) {
        if (m.computeMode != CU_COMPUTEMODE_EXCLUSIVE_PROCESS)
            continue;
        for (const GpuProcess& p : others)
            for (const GpuProcessDevice& d : p.devices)
                if (d.ordinal == m.ordinal) {
                    const bool mine = bound && *bound == m.ordinal;
                    f.add("compute-mode", mine ? Severity::error : Severity::warning,
                          "device " + std::to_string(m.ordinal) + " is in compute mode Exclusive Process and process " +
                              std::to_string(p.pid) + " (" + detail::printableText(p.name) + ") holds it" +
                              (mine ? ", yet this process's binding chooses it (" + boundWhy + ")" : "") +
                              ": a context here fails with CUDA_ERROR_DEVICE_BUSY",
                          "give each process a device of its own (CUDA_VISIBLE_DEVICES), or set compute mode "
                          "Default: nvidia-smi -i " +
                              std::to_string(m.ordinal) + " -c DEFAULT (as root)");
                }
    }
}

void checkModuleLoading(Findings& f)
{
    const ModuleLoadingMode mode = Module::loadingMode();
    const char* set = std::getenv("CUDA_MODULE_LOADING");
    if (mode == ModuleLoadingMode::eager)
        f.add("module-loading", Severity::note,
              std::string("modules load eagerly") +
                  (set != nullptr ? " (CUDA_MODULE_LOADING=" + std::string(set) + ")" : "") +
                  ": every kernel loads with its module, which costs start-up time and device memory",
              "unset CUDA_MODULE_LOADING (lazy is the default since CUDA 12.2) unless you need load-time errors");
    else if (mode == ModuleLoadingMode::lazy)
        f.add("module-loading", Severity::ok, "modules load lazily: kernels load at their first use");
    else
        f.add("module-loading", Severity::note, "the driver does not say how it loads modules");
}

struct FolderSize {
    std::uint64_t bytes = 0;
    bool complete = true; ///< false when a part could not be read, or the walk gave up (a lower bound)
};

// The bytes of the regular files under `dir`, not following symbolic links. It goes on past what it
// cannot read (the result then says it is a lower bound) and gives up after kMaxEntries entries, so
// that CUDA_CACHE_PATH=/ neither stops at the first unreadable folder nor walks the whole disk.
FolderSize folderSize(const fs::path& dir)
{
    constexpr std::size_t kMaxEntries = 200'000;
    FolderSize size;
    std::size_t entries = 0;
    std::vector<fs::path> pending{dir};
    while (!pending.empty()) {
        const fs::path folder = std::move(pending.back());
        pending.pop_back();
        std::error_code ec;
        fs::directory_iterator it(folder, ec);
        for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
            if (++entries > kMaxEntries) {
                size.complete = false;
                return size;
            }
            std::error_code entryEc;
            const fs::file_status status = it->symlink_status(entryEc);
            if (entryEc) {
                size.complete = false;
            } else if (fs::is_directory(status)) {
                pending.push_back(it->path());
            } else if (fs::is_regular_file(status)) {
                const std::uintmax_t bytes = it->file_size(entryEc);
                if (entryEc)
                    size.complete = false;
                else
                    size.bytes += bytes;
            }
        }
        if (ec)
            size.complete = false;
    }
    return size;
}

void checkJitCache(Findings& f)
{
    const char* disable = std::getenv("CUDA_CACHE_DISABLE");
    if (disable != nullptr && detail::cacheDisabled(disable)) {
        f.add("jit-cache", Severity::warning,
              "the JIT cache is disabled (CUDA_CACHE_DISABLE=1): every PTX load compiles again",
              "unset CUDA_CACHE_DISABLE, unless you are timing the JIT itself");
        return;
    }
    const char* pathVar = std::getenv("CUDA_CACHE_PATH");
    const char* home = std::getenv("HOME");
    if ((pathVar == nullptr || pathVar[0] == '\0') && home == nullptr) {
        f.add("jit-cache", Severity::warning, "neither CUDA_CACHE_PATH nor HOME is set: the JIT cache has no folder",
              "set CUDA_CACHE_PATH to a writable folder");
        return;
    }
    const bool pathSet = pathVar != nullptr && pathVar[0] != '\0';
    fs::path dir = pathSet ? fs::path(pathVar) : fs::path(home) / ".nv" / "ComputeCache";
    std::error_code ec;
    if (dir.is_relative()) // the driver takes it from the working folder too
        dir = fs::absolute(dir, ec);
    dir = dir.lexically_normal();
    std::uint64_t limit = kDefaultCacheLimit;
    bool limitSet = false;
    if (const char* max = std::getenv("CUDA_CACHE_MAXSIZE"); max != nullptr && max[0] != '\0') {
        if (const auto bytes = detail::parseCacheMaxSize(max)) {
            limit = *bytes;
            limitSet = true;
        } else {
            f.add("jit-cache", Severity::warning,
                  "CUDA_CACHE_MAXSIZE=\"" + std::string(max) +
                      "\" is not a number of bytes (digits only): the driver ignores it",
                  "write the size in bytes, up to 4294967296 (4 GiB)");
        }
    }
    if (limit > kLargestCacheLimit) {
        f.add("jit-cache", Severity::warning,
              "CUDA_CACHE_MAXSIZE=" + std::to_string(limit) + " is above the driver's largest, 4 GiB",
              "set it to 4294967296 or less");
        limit = kLargestCacheLimit;
    }
    const std::string where = dir.string() + (pathSet ? " (CUDA_CACHE_PATH)" : " (the default)");
    const std::string limitText =
        detail::bytesText(static_cast<std::size_t>(limit)) + (limitSet ? " (CUDA_CACHE_MAXSIZE)" : " (the default)");
    if (!fs::exists(dir, ec)) {
        fs::path parent = dir.parent_path();
        while (!parent.empty() && !fs::exists(parent, ec) && parent != parent.parent_path())
            parent = parent.parent_path();
        const bool isFolder = fs::is_directory(parent, ec);
        if (!isFolder || access(parent.c_str(), W_OK) != 0)
            f.add("jit-cache", Severity::warning,
                  "the JIT cache folder " + where + " does not exist and cannot be made: " + parent.string() +
                      (isFolder ? " is not writable" : " is no folder"),
                  "set CUDA_CACHE_PATH to a writable folder");
        else
            f.add("jit-cache", Severity::ok,
                  "JIT cache " + where + ", limit " + limitText + ": made at the first JIT compilation");
        return;
    }
    if (!fs::is_directory(dir, ec)) {
        f.add("jit-cache", Severity::warning, "the JIT cache path " + where + " is no folder: nothing is kept",
              "set CUDA_CACHE_PATH to a folder (or unset it for ~/.nv/ComputeCache)");
        return;
    }
    if (access(dir.c_str(), W_OK) != 0) {
        f.add("jit-cache", Severity::warning, "the JIT cache folder " + where + " is not writable: nothing is kept",
              "make it writable for this user, or set CUDA_CACHE_PATH to a folder that is");
        return;
    }
    const FolderSize used = folderSize(dir);
    const std::string usedText = (used.complete ? "" : "at least ") +
                                 detail::bytesText(static_cast<std::size_t>(used.bytes)) +
                                 (used.complete ? "" : " (not all of it could be read)");
    if (used.bytes >= limit / 10 * 9)
        f.add("jit-cache", Severity::warning,
              "the JIT cache " + where + " holds " + usedText + " of its " + limitText +
                  " limit: older kernels are evicted and compiled again",
              "raise CUDA_CACHE_MAXSIZE (up to 4 GiB) or clear the folder");
    else
        f.add("jit-cache", Severity::ok, "JIT cache " + where + ": " + usedText + " used of " + limitText);
}

void checkFork(Findings& f)
{
    if (detail::forkedAfterInit())
        f.add("fork", Severity::error,
              "this process (pid " + std::to_string(getpid()) + ") was forked after its parent (pid " +
                  std::to_string(detail::initialisingPid()) + ") initialised CUDA: every driver call fails here",
              "initialise CUDA after forking, or start workers with posix_spawn or fork+exec (cuctx::WorkerProcess)");
    else
        f.add("fork", Severity::ok, "not a child forked after CUDA was initialised");
}

} // namespace

const char* severityName(Severity severity) noexcept
{
    switch (severity) {
    case Severity::ok: return "ok";
    case Severity::note: return "note";
    case Severity::warning: return "warning";
    case Severity::error: return "error";
    }
    return "?";
}

Severity worstSeverity(const std::vector<Finding>& findings) noexcept
{
    Severity worst = Severity::ok;
    for (const Finding& f : findings)
        worst = std::max(worst, f.severity);
    return worst;
}

std::vector<Finding> diagnose(const DiagnosisOptions& options)
{
    Findings f;
    const Driver::Status st = Driver::status();
    checkDriver(f, st);
    checkLoaderPath(f, st);
    int visible = 0;
    if (st.loaded) {
        try {
            visible = Device::count();
        } catch (const Error&) {
        }
    }
    checkDevices(f, st, options, visible);
    checkDriverVersion(f, st);
    if (st.loaded) {
        try {
            checkComputeModes(f);
            checkModes(f);
            checkModuleLoading(f);
        } catch (const Error& e) {
            f.add("devices", Severity::error, std::string("a driver call failed while checking: ") + e.what(),
                  "see the driver error; nvidia-smi should work first");
        }
    }
    checkJitCache(f);
    checkFork(f);
    return std::move(f.list);
}

} // namespace cuctx

// cuctx-inspect: what this machine's CUDA driver and devices are, for people (an aligned table)
// and for programs (--json, schema in docs/schema/inspect-devices.schema.json).

#include "exit_codes.hpp"
#include "json_writer.hpp"
#include "module_command.hpp"

#include "cuctx/cuctx.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace cuctx;
using namespace cuctx::tools;

constexpr int kSchemaVersion = 1;

struct Options {
    bool json = false;
    bool verbose = false;
    bool memory = false;
};

struct DeviceReport {
    DeviceProperties props;
    Device::PrimaryContextState primary;
    std::optional<std::size_t> freeMemory;
};

void printUsage(std::FILE* to)
{
    std::fprintf(to,
                 "usage: cuctx-inspect [devices] [--json] [--memory] [--verbose]\n"
                 "       cuctx-inspect module FILE [--device N] [--primary] [--json] [--verbose]\n"
                 "\n"
                 "Shows the CUDA driver cuctx loads and the devices it sees, or what a module holds.\n"
                 "\n"
                 "  devices      the driver and every device (the default)\n"
                 "  module FILE  load a PTX, cubin or fatbin and list its kernels with their attributes\n"
                 "               and occupancy; print the JIT's log when it does not load\n"
                 "  --json       machine-readable output (docs/schema/inspect-*.schema.json)\n"
                 "  --memory     also measure free memory (activates each primary context)\n"
                 "  --device N   the device to load the module on (default 0)\n"
                 "  --primary    load it into the primary context instead of a new one\n"
                 "  -v, --verbose  every attribute of every device or kernel\n"
                 "  --help, --version\n"
                 "\n"
                 "Environment: CUCTX_DRIVER_PATH (the libcuda to load), CUDA_VISIBLE_DEVICES.\n"
                 "Exit status: 0 ok, 1 internal error, 2 usage, 3 no driver, 4 stub driver,\n"
                 "5 no device, 6 driver too old, 7 forked after CUDA init, 8 driver error,\n"
                 "9 the module did not load (module FILE).\n");
}

std::string cudaVersionText(int v)
{
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string gib(std::size_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return text;
}

std::optional<std::string> visibleDevices()
{
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"))
        return std::string(v);
    return std::nullopt;
}

std::vector<DeviceReport> collect(const Options& options)
{
    std::vector<DeviceReport> reports;
    for (const Device& device : Device::all()) {
        DeviceReport r{device.properties(), device.primaryContextState(), std::nullopt};
        // Free memory needs a context: measure it only where that changes nothing, or when asked.
        if (options.memory || r.primary.active)
            r.freeMemory = device.memoryInfo().free;
        reports.push_back(std::move(r));
    }
    return reports;
}

void writeDriver(JsonWriter& j, const Driver::Status& st)
{
    j.key("driver").beginObject();
    j.key("version").value(st.driverVersion != 0 ? std::optional<int>(st.driverVersion) : std::nullopt);
    j.key("version_string")
        .value(st.driverVersion != 0 ? std::optional<std::string>(cudaVersionText(st.driverVersion)) : std::nullopt);
    j.key("requested_path").value(st.requestedPath);
    j.key("resolved_path")
        .value(st.resolvedPath.empty() ? std::nullopt : std::optional<std::string>(st.resolvedPath));
    j.key("header_version").value(Driver::headerVersion());
    std::optional<std::string> loading;
    if (st.loaded) {
        try {
            const ModuleLoadingMode mode = Module::loadingMode();
            if (mode != ModuleLoadingMode::unknown)
                loading = mode == ModuleLoadingMode::lazy ? "lazy" : "eager";
        } catch (const Error&) {
        }
    }
    j.key("module_loading").value(loading);
    j.endObject();
}

void writeDevice(JsonWriter& j, const DeviceReport& r)
{
    const DeviceProperties& p = r.props;
    j.beginObject();
    j.key("ordinal").value(p.ordinal);
    j.key("name").value(p.name);
    j.key("uuid").value(p.uuid);
    j.key("pci_bus_id").value(p.pciBusId);
    j.key("compute_capability")
        .value(std::to_string(p.computeCapabilityMajor) + "." + std::to_string(p.computeCapabilityMinor));
    j.key("total_memory_bytes").value(static_cast<std::uint64_t>(p.totalMemory));
    j.key("free_memory_bytes").value(r.freeMemory ? std::optional<std::uint64_t>(*r.freeMemory) : std::nullopt);
    j.key("multiprocessors").value(p.multiprocessors);
    j.key("max_threads_per_block").value(p.maxThreadsPerBlock);
    j.key("max_threads_per_multiprocessor").value(p.maxThreadsPerMultiprocessor);
    j.key("max_block_dim").beginArray().value(p.maxBlockDim[0]).value(p.maxBlockDim[1]).value(p.maxBlockDim[2]).endArray();
    j.key("max_grid_dim").beginArray().value(p.maxGridDim[0]).value(p.maxGridDim[1]).value(p.maxGridDim[2]).endArray();
    j.key("warp_size").value(p.warpSize);
    j.key("registers_per_block").value(p.registersPerBlock);
    j.key("registers_per_multiprocessor").value(p.registersPerMultiprocessor);
    j.key("shared_memory_per_block_bytes").value(p.sharedMemoryPerBlock);
    j.key("shared_memory_per_block_optin_bytes").value(p.sharedMemoryPerBlockOptin);
    j.key("shared_memory_per_multiprocessor_bytes").value(p.sharedMemoryPerMultiprocessor);
    j.key("l2_cache_bytes").value(p.l2CacheSize);
    j.key("memory_bus_width_bits").value(p.memoryBusWidth);
    j.key("memory_clock_khz").value(p.memoryClockRate);
    j.key("clock_khz").value(p.clockRate);
    j.key("compute_mode").value(p.computeModeName());
    j.key("async_engines").value(p.asyncEngines);
    j.key("unified_addressing").value(p.unifiedAddressing);
    j.key("managed_memory").value(p.managedMemory);
    j.key("concurrent_kernels").value(p.concurrentKernels);
    j.key("cooperative_launch").value(p.cooperativeLaunch);
    j.key("ecc_enabled").value(p.eccEnabled);
    j.key("integrated").value(p.integrated);
    j.key("memory_pools").value(p.memoryPools);
    j.key("primary_context").beginObject();
    j.key("active").value(r.primary.active);
    j.key("flags").value(r.primary.flags);
    j.endObject();
    j.endObject();
}

void writeJson(const Driver::Status& st, const char* status, const std::string* message,
               const std::vector<DeviceReport>& devices)
{
    JsonWriter j;
    j.beginObject();
    j.key("schema_version").value(kSchemaVersion);
    j.key("tool").value("cuctx-inspect");
    j.key("cuctx_version").value(CUCTX_VERSION_STRING);
    j.key("status").value(status);
    j.key("message").value(message != nullptr ? std::optional<std::string>(*message) : std::nullopt);
    writeDriver(j, st);
    j.key("cuda_visible_devices").value(visibleDevices());
    j.key("devices").beginArray();
    for (const DeviceReport& r : devices)
        writeDevice(j, r);
    j.endArray();
    j.endObject();
    std::fputs(j.text().c_str(), stdout);
}

void printTable(const Driver::Status& st, const std::vector<DeviceReport>& devices, bool verbose)
{
    std::printf("cuctx-inspect %s, CUDA driver %s (%d), CUDA headers %s\n", CUCTX_VERSION_STRING,
                cudaVersionText(st.driverVersion).c_str(), st.driverVersion,
                cudaVersionText(Driver::headerVersion()).c_str());
    std::printf("libcuda: %s\n", st.resolvedPath.empty() ? st.requestedPath.c_str() : st.resolvedPath.c_str());
    const ModuleLoadingMode loading = Module::loadingMode();
    std::printf("module loading: %s\n", loading == ModuleLoadingMode::lazy    ? "lazy (kernels load at first use)"
                                         : loading == ModuleLoadingMode::eager ? "eager (kernels load with their module)"
                                                                               : "unknown");
    const auto visible = visibleDevices();
    std::printf("CUDA_VISIBLE_DEVICES: %s\n\n", visible ? visible->c_str() : "not set");

    std::size_t nameWidth = 4;
    for (const DeviceReport& r : devices)
        nameWidth = std::max(nameWidth, r.props.name.size());
    nameWidth = std::min<std::size_t>(nameWidth, 24);
    std::printf("%-2s  %-*s  %-4s  %4s  %10s  %10s  %-12s  %s\n", "#", static_cast<int>(nameWidth), "Name", "CC",
                "SMs", "Memory", "Free", "Bus id", "Primary");
    for (const DeviceReport& r : devices) {
        const DeviceProperties& p = r.props;
        const std::string cc = std::to_string(p.computeCapabilityMajor) + "." + std::to_string(p.computeCapabilityMinor);
        std::printf("%-2d  %-*.*s  %-4s  %4d  %10s  %10s  %-12s  %s\n", p.ordinal, static_cast<int>(nameWidth),
                    static_cast<int>(nameWidth), p.name.c_str(), cc.c_str(), p.multiprocessors,
                    gib(p.totalMemory).c_str(), r.freeMemory ? gib(*r.freeMemory).c_str() : "-",
                    p.pciBusId.c_str(), r.primary.active ? "active" : "inactive");
    }
    if (!verbose)
        return;
    for (const DeviceReport& r : devices) {
        const DeviceProperties& p = r.props;
        std::printf("\ndevice %d: %s\n", p.ordinal, p.name.c_str());
        auto row = [](const char* name, const std::string& value) { std::printf("  %-34s %s\n", name, value.c_str()); };
        auto num = [&](const char* name, long long v) { row(name, std::to_string(v)); };
        row("uuid", p.uuid);
        row("pci bus id", p.pciBusId);
        row("compute mode", p.computeModeName());
        num("multiprocessors", p.multiprocessors);
        num("max threads per block", p.maxThreadsPerBlock);
        num("max threads per multiprocessor", p.maxThreadsPerMultiprocessor);
        num("warp size", p.warpSize);
        num("registers per block", p.registersPerBlock);
        num("shared memory per block (bytes)", p.sharedMemoryPerBlock);
        num("shared memory per block, opt-in", p.sharedMemoryPerBlockOptin);
        num("shared memory per multiprocessor", p.sharedMemoryPerMultiprocessor);
        num("L2 cache (bytes)", p.l2CacheSize);
        num("memory bus width (bits)", p.memoryBusWidth);
        num("memory clock (kHz)", p.memoryClockRate);
        num("clock (kHz)", p.clockRate);
        num("async engines", p.asyncEngines);
        row("unified addressing", p.unifiedAddressing ? "yes" : "no");
        row("managed memory", p.managedMemory ? "yes" : "no");
        row("cooperative launch", p.cooperativeLaunch ? "yes" : "no");
        row("ECC", p.eccEnabled ? "on" : "off");
        row("primary context", std::string(r.primary.active ? "active" : "inactive") + ", flags " +
                                   std::to_string(r.primary.flags));
    }
}

// Reports a failure in the form asked for (one line on stderr, or the JSON document) and gives the
// exit status that goes with it.
int reportFailure(const Options& options, const Driver::Status& st, Errc condition, const std::string& message)
{
    const Outcome outcome = outcomeFor(condition);
    if (options.json)
        writeJson(st, outcome.status, &message, {});
    else
        std::fprintf(stderr, "cuctx-inspect: %s: %s\n", outcome.label, message.c_str());
    return outcome.code;
}

int run(const Options& options)
{
    const Driver::Status st = Driver::status();
    if (!st.loaded)
        return reportFailure(options, st, st.condition, st.message);
    std::vector<DeviceReport> devices;
    try {
        devices = collect(options);
    } catch (const Error& e) {
        return reportFailure(options, st, e.condition(), e.what());
    }
    if (options.json)
        writeJson(st, "ok", nullptr, devices);
    else
        printTable(st, devices, options.verbose);
    return exitOk;
}

} // namespace

int main(int argc, char** argv)
{
    Options options;
    std::optional<ModuleCommand> module;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--json")
            options.json = true;
        else if (arg == "--memory")
            options.memory = true;
        else if (arg == "-v" || arg == "--verbose")
            options.verbose = true;
        else if (arg == "devices" && i == 1)
            continue;
        else if (arg == "module" && i == 1)
            module.emplace();
        else if (module && arg == "--device" && i + 1 < argc)
            module->device = std::atoi(argv[++i]);
        else if (module && arg == "--primary")
            module->primary = true;
        else if (module && module->file.empty() && !arg.empty() && arg[0] != '-')
            module->file = arg;
        else if (arg == "-h" || arg == "--help") {
            printUsage(stdout);
            return exitOk;
        } else if (arg == "--version") {
            std::printf("cuctx-inspect %s (CUDA %d headers)\n", CUCTX_VERSION_STRING, Driver::headerVersion());
            return exitOk;
        } else {
            std::fprintf(stderr, "cuctx-inspect: unknown argument '%s'\n", argv[i]);
            printUsage(stderr);
            return exitUsage;
        }
    }
    try {
        if (module) {
            if (module->file.empty()) {
                std::fprintf(stderr, "cuctx-inspect: module needs a FILE (a .ptx, .cubin or .fatbin)\n");
                printUsage(stderr);
                return exitUsage;
            }
            module->json = options.json;
            module->verbose = options.verbose;
            return runModuleCommand(*module);
        }
        return run(options);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cuctx-inspect: internal error: %s\n", e.what());
        return exitInternal;
    }
}

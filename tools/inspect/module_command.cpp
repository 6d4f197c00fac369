// SPDX-License-Identifier: MIT
// cuctx-inspect module FILE: load a PTX, cubin or fatbin into a context and list its kernels
// (docs/schema/inspect-module.schema.json).

#include "command_line.hpp"
#include "format/report_json.hpp"

#include "cuctx/cuctx.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace cuctx::tools {
namespace {

constexpr int kBlockSizes[] = {128, 256, 512, 1024};

struct KernelReport {
    std::string name;
    FunctionAttributes attributes;
    std::optional<std::vector<ParamInfo>> parameters;
    std::vector<int> blocksPerSm; // at kBlockSizes; 0 where the block is larger than the kernel allows
    BlockSizeSuggestion suggestion;
};

struct ModuleReport {
    std::string kind;
    std::string deviceName;
    std::string context;
    double loadMilliseconds = 0;
    std::string infoLog;
    std::vector<KernelReport> kernels;
};

ModuleReport inspect(const CommandLine& c)
{
    const Device device = Device::get(c.device);
    const Context context = c.primary ? Context::primary(device) : Context::create(device);
    JitOptions options;
    options.verboseLog = true;
    const Module module = Module::fromFile(context, c.file, options);
    ModuleReport r;
    r.kind = imageKindName(module.kind());
    r.deviceName = device.name();
    r.context = c.primary ? "the primary context" : "a new context";
    r.loadMilliseconds = module.loadMilliseconds();
    r.infoLog = module.infoLog();
    std::vector<std::string> names = module.kernelNames();
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
        const Function f = module.function(name);
        KernelReport k{name, f.attributes(), f.parameters(), {}, f.maxPotentialBlockSize()};
        for (int block : kBlockSizes)
            k.blocksPerSm.push_back(block <= k.attributes.maxThreadsPerBlock ? f.maxActiveBlocksPerMultiprocessor(block)
                                                                             : 0);
        r.kernels.push_back(std::move(k));
    }
    return r;
}

std::string version(int v)
{
    return std::to_string(v / 10) + "." + std::to_string(v % 10);
}

void printTable(const CommandLine& c, const ModuleReport& r)
{
    std::printf("%s\n", c.file.c_str());
    std::printf("%s, %zu kernel%s; module loading: %s (CUDA_MODULE_LOADING)\n", r.kind.c_str(), r.kernels.size(),
                r.kernels.size() == 1 ? "" : "s", detail::moduleLoadingName());
    std::printf("loaded into %s on device %d (%s) in %.1f ms\n\n", r.context.c_str(), c.device, r.deviceName.c_str(),
                r.loadMilliseconds);
    std::size_t width = 6;
    for (const KernelReport& k : r.kernels)
        width = std::max(width, k.name.size());
    width = std::min<std::size_t>(width, 16); // 80 columns; --verbose and --json give whole names
    std::printf("%-*s  %4s  %6s  %5s  %4s  %4s  %s\n", static_cast<int>(width), "kernel", "regs", "shared", "local",
                "max", "SASS", "blocks/SM @128 256 512 1024");
    for (const KernelReport& k : r.kernels) {
        const FunctionAttributes& a = k.attributes;
        std::printf("%-*.*s  %4d  %6d  %5d  %4d  %4s  %14d %3d %3d %4d\n", static_cast<int>(width),
                    static_cast<int>(width), k.name.c_str(), a.registers, a.staticSharedBytes, a.localBytes,
                    a.maxThreadsPerBlock, version(a.binaryVersion).c_str(), k.blocksPerSm[0], k.blocksPerSm[1],
                    k.blocksPerSm[2], k.blocksPerSm[3]);
    }
    if (!c.verbose)
        return;
    for (const KernelReport& k : r.kernels) {
        std::printf("\nkernel %s\n", k.name.c_str());
        std::printf("  PTX version                 %s\n", version(k.attributes.ptxVersion).c_str());
        std::printf("  constant memory (bytes)     %d\n", k.attributes.constBytes);
        std::printf("  max dynamic shared (bytes)  %d\n", k.attributes.maxDynamicSharedBytes);
        std::printf("  best block size             %d (grid of at least %d blocks fills the device)\n",
                    k.suggestion.blockSize, k.suggestion.minGridSize);
        if (k.parameters) {
            std::string params;
            for (const ParamInfo& p : *k.parameters)
                params += (params.empty() ? "" : ", ") + std::to_string(p.bytes) + " at " + std::to_string(p.offset);
            std::printf("  parameters (bytes at offset) %s\n", params.empty() ? "none" : params.c_str());
        }
    }
    if (!r.infoLog.empty())
        std::printf("\nJIT log:\n%s\n", r.infoLog.c_str());
}

// The command's own members, after the envelope and the driver.
void writeMembers(JsonWriter& j, const CommandLine& c, const std::optional<std::string>& jitLog, const ModuleReport* r)
{
    j.key("file").value(c.file);
    j.key("device").value(c.device);
    j.key("jit_log").value(jitLog);
    if (r != nullptr) {
        j.key("kind").value(r->kind);
        j.key("load_ms").value(r->loadMilliseconds);
        j.key("loading_mode").value(detail::moduleLoadingName());
    }
    j.key("kernels").beginArray();
    if (r != nullptr) {
        for (const KernelReport& k : r->kernels) {
            const FunctionAttributes& a = k.attributes;
            j.beginObject();
            j.key("name").value(k.name);
            j.key("registers").value(a.registers);
            j.key("static_shared_bytes").value(a.staticSharedBytes);
            j.key("local_bytes").value(a.localBytes);
            j.key("const_bytes").value(a.constBytes);
            j.key("max_threads_per_block").value(a.maxThreadsPerBlock);
            j.key("ptx_version").value(a.ptxVersion);
            j.key("binary_version").value(a.binaryVersion);
            j.key("max_dynamic_shared_bytes").value(a.maxDynamicSharedBytes);
            j.key("parameters");
            if (k.parameters) {
                j.beginArray();
                for (const ParamInfo& p : *k.parameters) {
                    j.beginObject();
                    j.key("offset").value(static_cast<std::uint64_t>(p.offset));
                    j.key("bytes").value(static_cast<std::uint64_t>(p.bytes));
                    j.endObject();
                }
                j.endArray();
            } else {
                j.null();
            }
            j.key("occupancy").beginArray();
            for (std::size_t i = 0; i < std::size(kBlockSizes); ++i) {
                j.beginObject();
                j.key("block_size").value(kBlockSizes[i]);
                j.key("blocks_per_multiprocessor").value(k.blocksPerSm[i]);
                j.endObject();
            }
            j.endArray();
            j.key("suggested_block_size").value(k.suggestion.blockSize);
            j.key("suggested_min_grid_size").value(k.suggestion.minGridSize);
            j.endObject();
        }
    }
    j.endArray();
}

// The JIT's log is the part of a load error after this marker (module.cpp writes it).
std::optional<std::string> jitLogOf(const Error& e)
{
    constexpr std::string_view marker = "; the JIT's log:\n";
    const std::string& detail = e.detail();
    const auto at = detail.find(marker);
    if (at == std::string::npos)
        return std::nullopt;
    return detail.substr(at + marker.size());
}

bool isModuleFailure(const Error& e)
{
    const std::string& call = e.call();
    return call.rfind("cuModule", 0) == 0 || call.rfind("cuctx::Module", 0) == 0 || call == "cuFuncLoad";
}

} // namespace

int runModule(const CommandLine& c)
{
    if (const auto failed = requireDriver(c, [&](JsonWriter& j) { writeMembers(j, c, std::nullopt, nullptr); }))
        return *failed;
    try {
        const ModuleReport r = inspect(c);
        if (c.json) {
            printJson(c, "ok", std::nullopt, [&](JsonWriter& j) { writeMembers(j, c, std::nullopt, &r); });
        } else {
            printTable(c, r);
        }
        return exitOk;
    } catch (const Error& e) {
        const Outcome outcome = isModuleFailure(e) ? Outcome{exitModuleError, "module_error", "module did not load"}
                                                   : outcomeFor(e.condition());
        const std::optional<std::string> log = jitLogOf(e);
        return reportFailure(c, outcome, e.what(), [&](JsonWriter& j) { writeMembers(j, c, log, nullptr); });
    }
}

} // namespace cuctx::tools

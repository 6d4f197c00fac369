// SPDX-License-Identifier: MIT
// cuctx-inspect context: make a context (or retain the primary one) on a device and show what it
// reports and what it cost (docs/schema/inspect-context.schema.json).

#include "bench_common.hpp"
#include "command_line.hpp"
#include "format/report_format.hpp"
#include "format/report_json.hpp"

#include "cuctx/cuctx.hpp"

#include <chrono>
#include <cstdio>
#include <optional>

namespace cuctx::tools {
namespace {

using bench::Clock;
using bench::msSince;

struct LimitRow {
    const char* key;  // JSON
    const char* name; // table
    CUlimit limit;
};

constexpr LimitRow kLimits[] = {
    {"stack_size", "stack size per thread (bytes)", CU_LIMIT_STACK_SIZE},
    {"printf_fifo_size", "printf FIFO (bytes)", CU_LIMIT_PRINTF_FIFO_SIZE},
    {"malloc_heap_size", "device malloc heap (bytes)", CU_LIMIT_MALLOC_HEAP_SIZE},
    {"dev_runtime_sync_depth", "device runtime sync depth", CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH},
    {"dev_runtime_pending_launch_count", "device runtime pending launches", CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT},
    {"max_l2_fetch_granularity", "L2 fetch granularity (bytes)", CU_LIMIT_MAX_L2_FETCH_GRANULARITY},
    {"persisting_l2_cache_size", "persisting L2 cache (bytes)", CU_LIMIT_PERSISTING_L2_CACHE_SIZE},
};

struct ContextReport {
    int device = 0;
    std::string deviceName;
    bool primary = false;
    std::uint64_t id = 0;
    unsigned apiVersion = 0;
    unsigned flags = 0;
    std::vector<std::optional<std::size_t>> limits; // kLimits' order; nothing where the driver refuses
    Context::StreamPriorityRange priorities;
    CUfunc_cache cacheConfig = CU_FUNC_CACHE_PREFER_NONE;
    Device::MemoryInfo memory; // while the context exists
    double firstContextMs = 0; // the probe: the first context this process made on the device
    double createMs = 0;       // the inspected context
    double destroyMs = 0;
    std::optional<std::size_t> memoryCost; // what free memory lost when it was made
};

std::string scheduleName(unsigned flags)
{
    switch (flags & CU_CTX_SCHED_MASK) {
    case CU_CTX_SCHED_SPIN: return "spin";
    case CU_CTX_SCHED_YIELD: return "yield";
    case CU_CTX_SCHED_BLOCKING_SYNC: return "blocking sync";
    default: return "auto";
    }
}

std::vector<std::string> flagNames(unsigned flags)
{
    std::vector<std::string> names{"sched " + scheduleName(flags)};
    if ((flags & CU_CTX_MAP_HOST) != 0)
        names.emplace_back("map host");
    if ((flags & CU_CTX_LMEM_RESIZE_TO_MAX) != 0)
        names.emplace_back("lmem resize to max");
    if ((flags & CU_CTX_COREDUMP_ENABLE) != 0)
        names.emplace_back("coredump");
    if ((flags & CU_CTX_USER_COREDUMP_ENABLE) != 0)
        names.emplace_back("user coredump");
    if ((flags & CU_CTX_SYNC_MEMOPS) != 0)
        names.emplace_back("sync memops");
    return names;
}

const char* cacheConfigName(CUfunc_cache config)
{
    switch (config) {
    case CU_FUNC_CACHE_PREFER_SHARED: return "prefer shared";
    case CU_FUNC_CACHE_PREFER_L1: return "prefer L1";
    case CU_FUNC_CACHE_PREFER_EQUAL: return "prefer equal";
    default: return "prefer none";
    }
}

ContextReport inspect(const CommandLine& c)
{
    ContextReport r;
    const Device device = Device::get(c.device);
    r.device = c.device;
    r.deviceName = device.name();
    r.primary = c.primary;
    // Free memory can only be read through a context: a probe context made first reads it before
    // and after the inspected one exists (free memory is device-wide).
    auto t0 = Clock::now();
    const Context probe = Context::create(device);
    r.firstContextMs = msSince(t0);
    const std::size_t freeBefore = probe.memoryInfo().free;
    t0 = Clock::now();
    Context context = c.primary ? Context::primary(device) : Context::create(device);
    r.createMs = msSince(t0);
    const std::size_t freeAfter = probe.memoryInfo().free;
    if (freeAfter <= freeBefore)
        r.memoryCost = freeBefore - freeAfter;
    r.id = context.id();
    r.apiVersion = context.apiVersion();
    r.flags = context.flags();
    for (const LimitRow& l : kLimits) {
        try {
            r.limits.emplace_back(context.limit(l.limit));
        } catch (const Error&) {
            r.limits.emplace_back(std::nullopt);
        }
    }
    r.priorities = context.streamPriorityRange();
    r.cacheConfig = context.cacheConfig();
    r.memory = context.memoryInfo();
    t0 = Clock::now();
    context.reset();
    r.destroyMs = msSince(t0);
    return r;
}

void writeMembers(JsonWriter& j, const CommandLine& c, const ContextReport* r)
{
    j.key("device").value(c.device);
    j.key("primary").value(c.primary);
    j.key("context");
    if (r == nullptr) {
        j.null();
        return;
    }
    j.beginObject();
    j.key("device_name").value(r->deviceName);
    j.key("id").value(r->id);
    j.key("api_version").value(r->apiVersion);
    j.key("flags").value(r->flags);
    j.key("flag_names").beginArray();
    for (const std::string& f : flagNames(r->flags))
        j.value(f);
    j.endArray();
    j.key("limits").beginObject();
    for (std::size_t i = 0; i < std::size(kLimits); ++i)
        j.key(kLimits[i].key).value(r->limits[i] ? std::optional<std::uint64_t>(*r->limits[i]) : std::nullopt);
    j.endObject();
    j.key("stream_priorities").beginObject();
    j.key("least").value(r->priorities.least);
    j.key("greatest").value(r->priorities.greatest);
    j.endObject();
    j.key("cache_config").value(cacheConfigName(r->cacheConfig));
    j.key("free_memory_bytes").value(static_cast<std::uint64_t>(r->memory.free));
    j.key("total_memory_bytes").value(static_cast<std::uint64_t>(r->memory.total));
    j.endObject();
    j.key("cost").beginObject();
    j.key("first_context_ms").value(r->firstContextMs);
    j.key("create_ms").value(r->createMs);
    j.key("destroy_ms").value(r->destroyMs);
    j.key("device_memory_bytes").value(r->memoryCost ? std::optional<std::uint64_t>(*r->memoryCost) : std::nullopt);
    j.endObject();
}

void printTable(const ContextReport& r)
{
    auto row = [](const char* name, const std::string& value) { std::printf("  %-34s %s\n", name, value.c_str()); };
    std::printf("%s on device %d (%s)\n\n", r.primary ? "the primary context" : "a new context", r.device,
                r.deviceName.c_str());
    row("id (cuCtxGetId)", std::to_string(r.id));
    row("API version", std::to_string(r.apiVersion));
    std::string flags;
    for (const std::string& f : flagNames(r.flags))
        flags += (flags.empty() ? "" : ", ") + f;
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%x", r.flags);
    row("flags", std::string(hex) + " (" + flags + ")");
    for (std::size_t i = 0; i < std::size(kLimits); ++i)
        row(kLimits[i].name, r.limits[i] ? std::to_string(*r.limits[i]) : "not supported");
    row("stream priorities",
        std::to_string(r.priorities.greatest) + " (greatest) to " + std::to_string(r.priorities.least) + " (least)");
    row("cache configuration", cacheConfigName(r.cacheConfig));
    row("memory while it exists", detail::gibText(r.memory.free) + " free of " + detail::gibText(r.memory.total));
    std::printf("\ncost\n");
    char text[64];
    std::snprintf(text, sizeof text, "%.1f ms", r.firstContextMs);
    row("first context in this process", text);
    std::snprintf(text, sizeof text, "%.1f ms", r.createMs);
    row(r.primary ? "retaining it" : "creating it", text);
    std::snprintf(text, sizeof text, "%.1f ms", r.destroyMs);
    row(r.primary ? "releasing it" : "destroying it", text);
    row("device memory it took", r.memoryCost ? detail::bytesText(*r.memoryCost) : "unknown (free memory grew)");
}

} // namespace

int runContext(const CommandLine& c)
{
    if (const auto failed = requireDriver(c, [&](JsonWriter& j) { writeMembers(j, c, nullptr); }))
        return *failed;
    ContextReport r;
    try {
        r = inspect(c);
    } catch (const Error& e) {
        return reportFailure(c, outcomeFor(e.condition()), e.what(),
                             [&](JsonWriter& j) { writeMembers(j, c, nullptr); });
    }
    if (c.json) {
        printJson(c, "ok", std::nullopt, [&](JsonWriter& j) { writeMembers(j, c, &r); });
    } else {
        printTable(r);
    }
    return exitOk;
}

} // namespace cuctx::tools

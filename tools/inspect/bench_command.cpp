// SPDX-License-Identifier: MIT
// cuctx-inspect bench: what context switching, guards, launches and module loads cost on this
// machine, raw driver against cuctx in the same run (docs/schema/inspect-bench.schema.json).

#include "command_line.hpp"
#include "format/cuda_version.hpp"
#include "format/json_writer.hpp"
#include "format/report_format.hpp"
#include "format/report_json.hpp"
#include "measure.hpp"

#include "cuctx/cuctx.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace cuctx::tools {
namespace {

struct Row {
    std::string name;
    const char* unit; // "ns", "us", "ms" (time: lower is better) or "Mops/s" (higher is better)
    double raw;
    std::optional<double> cuctx;

    bool throughput() const { return std::string_view(unit) == "Mops/s"; }
    /// How many times faster cuctx is than the raw driver (below 1: slower).
    std::optional<double> speedup() const
    {
        if (!cuctx || *cuctx <= 0 || raw <= 0)
            return std::nullopt;
        return throughput() ? *cuctx / raw : raw / *cuctx;
    }
};

struct Settings {
    int threads;
    long iterations;
    int repeats = 5;
};

std::vector<Row> measure(const CommandLine& c, const Settings& s)
{
    using namespace cuctx::bench;
    const Device device = Device::get(c.device);
    const Context home = Context::create(device);
    const Context other = Context::create(device);
    std::vector<Row> rows;
    const GuardCosts g = measureGuards(home, other, s.iterations, s.repeats);
    rows.push_back({"push+pop pair / switching guard", "ns", g.rawPair, g.switching});
    rows.push_back({"push+pop pair / guard on current", "ns", g.rawPairAgain, g.elided});
    rows.push_back({"cuCtxGetCurrent / guard on current", "ns", g.getCurrent, g.elidedAgain});
    const SharedCosts shared = measureShared(home, s.threads, s.iterations, true);
    const std::string threads = std::to_string(s.threads) + " threads";
    rows.push_back({threads + ", 1 shared context", "Mops/s", shared.raw / 1e6, shared.cuctx / 1e6});
    rows.push_back({threads + ", a context each", "Mops/s", shared.rawOwnContexts / 1e6, std::nullopt});
    const std::string ptx = kEmptyKernelPtx;
    const auto image = std::as_bytes(std::span(ptx.data(), ptx.size()));
    const Function empty = Module::cached(home, image, {}, "bench").function("empty");
    const LaunchCosts l = measureLaunch(home, empty, std::max(1000L, s.iterations / 10), 1000);
    rows.push_back({"empty kernel launch (enqueue)", "us", l.raw / 1e3, l.cuctx / 1e3});
    const CacheCosts m = measureModuleCache(home, image, s.iterations / 10, 11);
    rows.push_back({"module load / cuctx cache hit", "us", m.load / 1e3, m.hit / 1e3});
    const LifetimeCosts t = measureLifetimes(device, 3);
    rows.push_back({"context create+destroy", "ms", t.rawCreateDestroy / 1e6, t.cuctxCreateDestroy / 1e6});
    rows.push_back(
        {"primary retain+release (warm)", "us", t.rawPrimaryRetainRelease / 1e3, t.cuctxPrimaryRetainRelease / 1e3});
    return rows;
}

std::string number(double v)
{
    char text[32];
    std::snprintf(text, sizeof text, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
    return text;
}

void printTable(const std::vector<Row>& rows, const Settings& s, const std::string& deviceName)
{
    std::printf("cuctx-inspect bench: %s, CUDA driver %s\n%d threads, %ld iterations (best of %d)\n",
                deviceName.c_str(), detail::formatCudaVersion(Driver::version()).c_str(), s.threads, s.iterations,
                s.repeats);
    std::printf("speed-up: how many times faster cuctx is than the raw driver call\n\n");
    std::printf("%-35s %15s %15s %9s\n", "measurement", "raw driver", "cuctx", "speed-up");
    for (const Row& r : rows) {
        const std::string raw = number(r.raw) + " " + r.unit;
        const std::string wrapped = r.cuctx ? number(*r.cuctx) + " " + r.unit : "-";
        const auto speedup = r.speedup();
        std::printf("%-35.35s %15s %15s %9s\n", r.name.c_str(), raw.c_str(), wrapped.c_str(),
                    speedup ? (number(*speedup) + "x").c_str() : "-");
    }
}

void printCsv(const std::vector<Row>& rows)
{
    std::printf("measurement,unit,raw,cuctx,speedup\n");
    for (const Row& r : rows) {
        const auto speedup = r.speedup();
        // RFC 4180: a name is quoted (some hold commas).
        // Exact figures, as in --json (a fixed number of decimals turned 0.00004 ms into 0.0000).
        std::printf("\"%s\",%s,%s,%s,%s\n", r.name.c_str(), r.unit, detail::exactNumber(r.raw).c_str(),
                    r.cuctx ? detail::exactNumber(*r.cuctx).c_str() : "",
                    speedup ? detail::exactNumber(*speedup).c_str() : "");
    }
}

void writeMembers(JsonWriter& j, const std::vector<Row>& rows, const Settings& s, int device)
{
    j.key("device").value(device);
    j.key("threads").value(s.threads);
    j.key("iterations").value(static_cast<std::int64_t>(s.iterations));
    j.key("rows").beginArray();
    for (const Row& r : rows) {
        j.beginObject();
        j.key("name").value(r.name);
        j.key("unit").value(r.unit);
        j.key("raw").value(r.raw);
        j.key("cuctx").value(r.cuctx);
        j.key("speedup").value(r.speedup());
        j.endObject();
    }
    j.endArray();
}

} // namespace

int runBench(const CommandLine& c)
{
    Settings s{c.threads > 0 ? c.threads : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 2u, 16u)),
               c.iterations > 0 ? c.iterations : 200'000};
    if (const auto failed = requireDriver(c, [&](JsonWriter& j) { writeMembers(j, {}, s, c.device); }))
        return *failed;
    std::vector<Row> rows;
    std::string deviceName;
    try {
        deviceName = Device::get(c.device).name();
        rows = measure(c, s);
    } catch (const Error& e) {
        return reportFailure(c, outcomeFor(e.condition()), e.what(),
                             [&](JsonWriter& j) { writeMembers(j, {}, s, c.device); });
    } catch (const std::system_error& e) { // the system refused a thread
        return reportFailure(c, Outcome{exitNoResources, "no_resources", "cannot start the threads"}, e.what(),
                             [&](JsonWriter& j) { writeMembers(j, {}, s, c.device); });
    } catch (const std::runtime_error& e) { // a raw driver call of the measurement failed
        return reportFailure(c, outcomeFor(Errc::driver_error), e.what(),
                             [&](JsonWriter& j) { writeMembers(j, {}, s, c.device); });
    }
    if (c.json) {
        printJson(c, "ok", std::nullopt, [&](JsonWriter& j) { writeMembers(j, rows, s, c.device); });
    } else if (c.csv) {
        printCsv(rows);
    } else {
        printTable(rows, s, deviceName);
    }
    return exitOk;
}

} // namespace cuctx::tools

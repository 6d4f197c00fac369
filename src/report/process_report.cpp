// SPDX-License-Identifier: MIT
#include "cuctx/process_report.hpp"

#include "cuctx/error.hpp"
#include "cuctx/version.hpp"
#include "driver/driver_api.hpp"
#include "driver/fork_state.hpp"
#include "format/json_writer.hpp"
#include "format/report_format.hpp"
#include "format/report_json.hpp"
#include "log/utc_time.hpp"
#include "report/registry_snapshot.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

namespace cuctx {
namespace {

std::string threadName(long tid)
{
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
    std::string name;
    std::getline(in, name);
    return name;
}

std::string liveText(const LiveObjects& l)
{
    std::string text = std::to_string(l.contexts) + " contexts, ";
    text += std::to_string(l.modules) + " modules, ";
    text += std::to_string(l.streams) + " streams, ";
    text += std::to_string(l.events) + " events, ";
    text += std::to_string(l.buffers) + " buffers";
    return text;
}

} // namespace

ProcessReport processReport(const ReportOptions& options)
{
    ProcessReport r;
    r.pid = static_cast<long>(getpid());
    r.time = detail::utcNow();
    r.cuctxVersion = CUCTX_VERSION_STRING;
    r.driver = Driver::status();
    if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES"))
        r.cudaVisibleDevices = cvd;
    r.moduleLoading = r.driver.loaded ? detail::moduleLoadingName() : "unknown";
    if (options.devices && r.driver.loaded) {
        try {
            r.devices = detail::snapshotDevices(false);
            if (r.devices.size() > 1)
                r.peers = PeerAccess::matrix();
        } catch (const Error& e) {
            r.errors.emplace_back(std::string("devices: ") + e.what());
        }
    }
    if (!detail::snapshotRegistry(r.contexts, r.threads, detail::forkedAfterInit()))
        r.errors.emplace_back("registry: locked when this process was forked; not read");
    for (ThreadSnapshot& t : r.threads)
        t.name = threadName(t.tid);
    r.live = liveObjects();
    r.poisonedDevices = deviceFaults();
    if (options.diagnose)
        r.findings = diagnose();
    return r;
}

std::string ProcessReport::text() const
{
    std::string out = "cuctx " + cuctxVersion + " report, pid " + std::to_string(pid) + ", " + time + "\n";
    if (driver.loaded) {
        out += "driver: CUDA " + detail::formatCudaVersion(driver.driverVersion) + " from " + driver.resolvedPath +
               ", module loading " + moduleLoading + "\n";
    } else {
        out += "driver: not loaded: " + driver.message + "\n";
    }
    out += "CUDA_VISIBLE_DEVICES: " + (cudaVisibleDevices ? *cudaVisibleDevices : std::string("not set")) + "\n";
    for (const DeviceSnapshot& d : devices) {
        char line[160];
        std::snprintf(line, sizeof line, "device %d: %s, %d.%d, %s%s%s, primary context %s\n", d.properties.ordinal,
                      d.properties.name.c_str(), d.properties.computeCapabilityMajor,
                      d.properties.computeCapabilityMinor, detail::gibText(d.properties.totalMemory).c_str(),
                      d.freeMemory ? ", free " : "", d.freeMemory ? detail::gibText(*d.freeMemory).c_str() : "",
                      d.primary.active ? "active" : "inactive");
        out += line;
    }
    for (const PeerLink& l : peers) {
        out += "peer " + std::to_string(l.from) + " -> " + std::to_string(l.to) + ": " +
               (l.canAccess ? "access, rank " + std::to_string(l.performanceRank) : std::string("no access")) +
               (l.nativeAtomics ? ", native atomics" : "") + "\n";
    }
    out += "contexts: " + std::to_string(contexts.size()) + " live\n";
    for (const ContextSnapshot& c : contexts) {
        out += "  " + c.description + ": " + std::to_string(c.handles) + (c.handles == 1 ? " handle" : " handles");
        if (c.destructionDeferred)
            out += ", destruction deferred";
        if (!c.threads.empty()) {
            out += ", entered on thread";
            out += c.threads.size() == 1 ? " " : "s ";
            for (std::size_t i = 0; i < c.threads.size(); ++i)
                out += (i > 0 ? ", " : "") + std::to_string(c.threads[i]);
        }
        out += "\n";
    }
    out += "threads with a context entered: " + std::to_string(threads.size()) + "\n";
    for (const ThreadSnapshot& t : threads) {
        out += "  thread " + std::to_string(t.tid) + (t.name.empty() ? "" : " (" + t.name + ")") + ", depth " +
               std::to_string(t.depth) + ":";
        for (const ThreadSnapshot::Use& u : t.uses)
            out += " " + u.context + " x" + std::to_string(u.entries) + ";";
        out.back() = '\n';
    }
    out += "live objects: " + liveText(live) + "\n";
    for (const DeviceFault& f : poisonedDevices) {
        std::string line = "device " + std::to_string(f.device) + " POISONED by " + std::string(resultName(f.result)) +
                           " (" + std::to_string(f.result) + ") from " + f.call + " on " + f.object + ", thread " +
                           std::to_string(f.threadId) + ", " + f.time + ": restart the process (docs/faults.md)";
        out += detail::wrapText(line, 100, 4) + "\n";
        for (const std::string& s : f.suspects)
            out += detail::wrapText("suspect: " + s, 100, 4) + "\n";
    }
    for (const Finding& f : findings) {
        if (f.severity == Severity::ok)
            continue;
        std::string line = std::string(severityName(f.severity)) + " " + f.check + ": " + f.summary;
        if (!f.advice.empty())
            line += "; " + f.advice;
        out += detail::wrapText(line, 100, 4) + "\n";
    }
    for (const std::string& e : errors)
        out += "not collected: " + e + "\n";
    return out;
}

std::string ProcessReport::json() const
{
    detail::JsonWriter j;
    j.beginObject();
    j.key("schema_version").value(1);
    j.key("pid").value(static_cast<std::int64_t>(pid));
    j.key("time").value(time);
    j.key("cuctx_version").value(cuctxVersion);
    detail::writeDriverJson(j, driver);
    j.key("driver_message").value(driver.loaded ? std::nullopt : std::optional<std::string>(driver.message));
    j.key("cuda_visible_devices").value(cudaVisibleDevices);
    j.key("devices").beginArray();
    for (const DeviceSnapshot& d : devices)
        detail::writeDeviceJson(j, d);
    j.endArray();
    j.key("peer_links").beginArray();
    for (const PeerLink& l : peers)
        detail::writePeerLinkJson(j, l);
    j.endArray();
    j.key("contexts").beginArray();
    for (const ContextSnapshot& c : contexts) {
        j.beginObject();
        j.key("id").value(c.id);
        j.key("device").value(c.device);
        j.key("kind").value(c.kind);
        j.key("description").value(c.description);
        j.key("handles").value(static_cast<std::int64_t>(c.handles));
        j.key("destruction_deferred").value(c.destructionDeferred);
        j.key("threads").beginArray();
        for (const long t : c.threads)
            j.value(static_cast<std::int64_t>(t));
        j.endArray();
        j.endObject();
    }
    j.endArray();
    j.key("threads").beginArray();
    for (const ThreadSnapshot& t : threads) {
        j.beginObject();
        j.key("tid").value(static_cast<std::int64_t>(t.tid));
        j.key("name").value(t.name);
        j.key("depth").value(t.depth);
        j.key("uses").beginArray();
        for (const ThreadSnapshot::Use& u : t.uses) {
            j.beginObject();
            j.key("context_id").value(u.contextId);
            j.key("context").value(u.context);
            j.key("entries").value(u.entries);
            j.endObject();
        }
        j.endArray();
        j.endObject();
    }
    j.endArray();
    j.key("live_objects").beginObject();
    j.key("contexts").value(static_cast<std::int64_t>(live.contexts));
    j.key("modules").value(static_cast<std::int64_t>(live.modules));
    j.key("streams").value(static_cast<std::int64_t>(live.streams));
    j.key("events").value(static_cast<std::int64_t>(live.events));
    j.key("buffers").value(static_cast<std::int64_t>(live.buffers));
    j.endObject();
    j.key("poisoned_devices").beginArray();
    for (const DeviceFault& f : poisonedDevices) {
        j.beginObject();
        j.key("device").value(f.device);
        j.key("result").value(f.result);
        j.key("result_name").value(resultName(f.result));
        j.key("call").value(f.call);
        j.key("object").value(f.object);
        j.key("thread_id").value(static_cast<std::int64_t>(f.threadId));
        j.key("thread_name").value(f.threadName);
        j.key("time").value(f.time);
        j.key("where").value(f.where);
        j.key("suspects").beginArray();
        for (const std::string& s : f.suspects)
            j.value(s);
        j.endArray();
        j.endObject();
    }
    j.endArray();
    j.key("findings").beginArray();
    for (const Finding& f : findings)
        detail::writeFindingJson(j, f);
    j.endArray();
    j.key("errors").beginArray();
    for (const std::string& e : errors)
        j.value(e);
    j.endArray();
    j.endObject();
    return j.text();
}

} // namespace cuctx

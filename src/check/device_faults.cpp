// SPDX-License-Identifier: MIT
#include "check/device_faults.hpp"

#include "cuctx/device_fault.hpp"

#include "log/log.hpp"
#include "log/utc_time.hpp"

#include <pthread.h>
#include <unistd.h>

#include <ctime>
#include <map>
#include <mutex>

namespace cuctx::detail {

std::atomic<std::uint64_t> g_poisonedDevices{0};

namespace {

std::atomic<SuspectsProvider> g_suspects{nullptr};

struct Faults {
    std::mutex mutex; // a leaf: nothing else is locked, no log sink is called under it
    std::map<int, DeviceFault> byDevice;
};

Faults& faults()
{
    static auto* f = new Faults; // never destroyed: destructors of other statics may ask
    return *f;
}

std::string threadName()
{
    char name[64] = {};
    if (pthread_getname_np(pthread_self(), name, sizeof name) != 0)
        return {};
    return name;
}

std::string locationOf(const SourceLocation& where)
{
    std::string_view file = where.file_name() != nullptr ? where.file_name() : "";
    while (file.starts_with("../"))
        file.remove_prefix(3);
    if (file.empty())
        return {};
    return std::string(file) + ":" + std::to_string(where.line());
}

std::string summary(const DeviceFault& f)
{
    std::string text = std::string(resultName(f.result)) + " (" + std::to_string(f.result) + ") from " + f.call;
    if (!f.object.empty())
        text += " on " + f.object;
    text += ", seen by thread " + std::to_string(f.threadId);
    if (!f.threadName.empty())
        text += " \"" + f.threadName + "\"";
    text += " at " + f.time;
    if (!f.where.empty())
        text += " (" + f.where + ")";
    return text;
}

} // namespace

bool devicePoisoned(int ordinal) noexcept
{
    if (!maybePoisoned(ordinal))
        return false;
    if (ordinal < 63)
        return true;
    Faults& f = faults();
    std::lock_guard lock(f.mutex);
    return f.byDevice.count(ordinal) != 0;
}

void setSuspectsProvider(SuspectsProvider provider) noexcept
{
    g_suspects.store(provider, std::memory_order_release);
}

void throwPoisoned(int ordinal, const char* call, const Subject& subject, SourceLocation where, int resultSeen)
{
    std::optional<DeviceFault> first = deviceFault(ordinal);
    ErrorInfo info;
    info.condition = Errc::device_poisoned;
    info.call = call;
    info.object = describe(subject);
    info.detail = "device " + std::to_string(ordinal) +
                  " is poisoned for the rest of this process by its first sticky "
                  "fault: " +
                  (first ? summary(*first) : std::string("(forgotten)"));
    if (resultSeen != 0)
        info.detail += "; this call got " + std::string(resultName(resultSeen)) + " too";
    if (first && !first->suspects.empty()) {
        info.detail += "; suspects (launches not yet synchronised then, oldest first): ";
        for (std::size_t i = 0; i < first->suspects.size(); ++i)
            info.detail += (i == 0 ? "" : "; ") + first->suspects[i];
    }
    info.hint = "No call on this device can succeed again in this process: restart the process. Run code that may "
                "fault in an isolated worker process (see docs/faults.md)";
    throw Error(std::move(info), where);
}

std::vector<std::string> recordFault(int ordinal, int result, const char* call, const Subject& subject,
                                     SourceLocation where)
{
    if (ordinal < 0)
        return {}; // no device known: reported as a plain driver error
    if (devicePoisoned(ordinal))
        throwPoisoned(ordinal, call, subject, where, result);
    // Gathered before the lock: the provider takes the journal's own lock.
    std::vector<std::string> suspects;
    if (SuspectsProvider provider = g_suspects.load(std::memory_order_acquire))
        suspects = provider(ordinal);
    DeviceFault fault;
    fault.device = ordinal;
    fault.result = result;
    fault.call = call;
    fault.object = describe(subject);
    fault.threadId = static_cast<long>(gettid());
    fault.threadName = threadName();
    fault.time = utcNow();
    fault.where = locationOf(where);
    fault.suspects = suspects;
    bool first = false;
    {
        Faults& f = faults();
        std::lock_guard lock(f.mutex);
        first = f.byDevice.emplace(ordinal, fault).second;
        g_poisonedDevices.fetch_or(std::uint64_t{1} << (ordinal < 63 ? ordinal : 63), std::memory_order_release);
    }
    if (!first) // another thread recorded the device's first fault meanwhile: this one is a later call
        throwPoisoned(ordinal, call, subject, where, result);
    logWarn("device {} is poisoned for the rest of this process: {}; every later call on it fails with "
            "device_poisoned, and cleanup failures on it are not logged",
            ordinal, summary(fault));
    return suspects;
}

void forgetFaults() noexcept
{
    Faults& f = faults();
    std::lock_guard lock(f.mutex);
    f.byDevice.clear();
    g_poisonedDevices.store(0, std::memory_order_release);
}

} // namespace cuctx::detail

namespace cuctx {

std::optional<DeviceFault> deviceFault(int ordinal)
{
    if (!detail::maybePoisoned(ordinal))
        return std::nullopt;
    detail::Faults& f = detail::faults();
    std::lock_guard lock(f.mutex);
    auto it = f.byDevice.find(ordinal);
    if (it == f.byDevice.end())
        return std::nullopt;
    return it->second;
}

std::vector<DeviceFault> deviceFaults()
{
    std::vector<DeviceFault> all;
    if (detail::g_poisonedDevices.load(std::memory_order_relaxed) == 0)
        return all;
    detail::Faults& f = detail::faults();
    std::lock_guard lock(f.mutex);
    for (const auto& [ordinal, fault] : f.byDevice)
        all.push_back(fault);
    return all;
}

} // namespace cuctx

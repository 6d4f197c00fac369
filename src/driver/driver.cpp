// SPDX-License-Identifier: MIT
#include "cuctx/driver.hpp"

#include "check/check.hpp"
#include "cuctx/error.hpp"
#include "driver/driver_state.hpp"
#include "driver/fork_state.hpp"
#include "driver/loader.hpp"
#include "log/log.hpp"

#include <cstdlib>
#include <mutex>
#include <optional>

namespace cuctx::detail {

std::atomic<const DriverApi*> g_activeApi{nullptr};

namespace {

constinit std::atomic<DriverListener> g_listener{nullptr};

void notify(DriverEvent event) noexcept
{
    if (const DriverListener listener = g_listener.load(std::memory_order_acquire))
        listener(event);
}

} // namespace

void setDriverListener(DriverListener listener) noexcept
{
    g_listener.store(listener, std::memory_order_release);
}

void notifyDriverReplaced() noexcept
{
    notify(DriverEvent::loaded);
}

namespace {

struct DriverState {
    std::mutex mutex;
    std::optional<std::string> pathOverride;
    bool attempted = false;
    std::unique_ptr<LoadedDriver> driver; // never closed once loaded: other threads may call into it
    std::optional<Error> failure;
    std::string resolvedPath;
    int driverVersion = 0;
};

DriverState& state()
{
    static auto* s = new DriverState; // never destroyed: threads may outlive static destructors
    return *s;
}

// In a child forked after initialisation: route every call to the slow path, which reports the fork.
void dropApiInChild()
{
    g_activeApi.store(nullptr, std::memory_order_relaxed);
    notify(DriverEvent::forkedChild);
}

std::string requestedPath(const DriverState& s)
{
    if (s.pathOverride)
        return *s.pathOverride;
    if (const char* env = std::getenv("CUCTX_DRIVER_PATH"); env != nullptr && env[0] != '\0')
        return env;
    return "libcuda.so.1";
}

// Loads once (under the mutex); later calls see the remembered outcome. Returns what to log about
// the attempt, for the caller to log once it has released the mutex (cuctx calls no log sink while
// holding a lock of its own).
std::string ensureAttempted(DriverState& s)
{
    if (s.attempted)
        return {};
    s.attempted = true;
    const std::string path = requestedPath(s);
    LoadAttempt attempt = loadDriver(path);
    s.resolvedPath = attempt.resolvedPath;
    s.driverVersion = attempt.driverVersion;
    if (attempt.error) {
        s.failure = std::move(attempt.error);
        return "driver not loaded from " + path + ": " + s.failure->what(); // the caller reports it
    }
    s.driver = std::move(attempt.driver);
    s.driver->leak();
    noteDriverInitialised(dropApiInChild);
    g_activeApi.store(&s.driver->api, std::memory_order_release);
    notify(DriverEvent::loaded);
    return "driver loaded from " + s.resolvedPath + " (CUDA " + formatCudaVersion(s.driverVersion) + ")";
}

void logAttempt(const std::string& note)
{
    if (!note.empty())
        logDebug("{}", note);
}

} // namespace

const DriverApi& loadActiveApi(const char* who, SourceLocation where)
{
    if (forkedAfterInit()) // before the mutex: a parent's thread may have held it at fork time
        throwForkedAfterInit(who != nullptr ? who : "cuctx", where);
    DriverState& s = state();
    std::string note;
    const DriverApi* loaded = nullptr;
    std::optional<Error> failure;
    {
        std::lock_guard lock(s.mutex);
        note = ensureAttempted(s);
        if (s.failure)
            failure = s.failure;
        else
            loaded = &s.driver->api;
    }
    logAttempt(note);
    if (failure)
        throw *failure;
    return *loaded;
}

void requireEntry(const void* entry, const char* field, SourceLocation where)
{
    if (entry != nullptr) [[likely]]
        return;
    const DriverEntry* row = findDriverEntry(field);
    const int needs = row != nullptr ? row->version : 0;
    const int has = state().driverVersion;
    throwError(Errc::driver_too_old, row != nullptr ? row->symbol : field,
               "this needs a driver that supports CUDA " + formatCudaVersion(needs) +
                   "; the installed driver supports CUDA " + formatCudaVersion(has),
               "Install a newer NVIDIA driver", {}, where);
}

} // namespace cuctx::detail

namespace cuctx {

using detail::state;

std::string Driver::libraryPath()
{
    auto& s = state();
    std::lock_guard lock(s.mutex);
    return detail::requestedPath(s);
}

void Driver::setLibraryPath(std::string path)
{
    auto& s = state();
    std::lock_guard lock(s.mutex);
    if (s.driver) {
        if (path == detail::requestedPath(s))
            return;
        detail::throwError(Errc::invalid_state, "cuctx::Driver::setLibraryPath",
                           "the driver is already loaded from " + s.resolvedPath + "; it cannot be replaced by " + path,
                           "Set the library path before the first call that uses the driver");
    }
    s.pathOverride = std::move(path);
    s.attempted = false; // a failed attempt is forgotten: the new path gets its own try
    s.failure.reset();
    s.resolvedPath.clear();
    s.driverVersion = 0;
}

void Driver::load()
{
    (void)detail::api("cuctx::Driver::load");
}

bool Driver::available() noexcept
{
    return status().loaded;
}

int Driver::version()
{
    (void)detail::api("cuctx::Driver::version");
    return state().driverVersion;
}

int Driver::headerVersion() noexcept
{
    return CUDA_VERSION;
}

Driver::Status Driver::status() noexcept
{
    Status st;
    try {
        if (detail::forkedAfterInit())
            detail::throwForkedAfterInit("cuctx::Driver::status");
        auto& s = state();
        std::string note;
        {
            std::lock_guard lock(s.mutex);
            note = detail::ensureAttempted(s);
            st.loaded = s.driver != nullptr;
            st.requestedPath = detail::requestedPath(s);
            st.resolvedPath = s.resolvedPath;
            st.driverVersion = s.driverVersion;
            if (s.failure) {
                st.condition = s.failure->condition();
                st.result = s.failure->result();
                st.message = s.failure->what();
            }
        }
        detail::logAttempt(note);
    } catch (const Error& e) {
        st.loaded = false;
        st.condition = e.condition();
        st.result = e.result();
        st.message = e.what();
    } catch (...) {
        st.loaded = false;
        st.condition = Errc::invalid_state;
        st.message = "cuctx: unexpected failure while loading the driver";
    }
    return st;
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
#include "context/context_state.hpp"

#include "check/check.hpp"
#include "check/device_faults.hpp"
#include "context/asymmetric_fence.hpp"
#include "context/deferred_cleanup.hpp"
#include "context/described.hpp"
#include "context/launch_journal.hpp"
#include "context/thread_state.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace cuctx::detail {
namespace {

// Every live state, under the registry mutex.
std::vector<ContextState*>& liveStatesLocked()
{
    static auto* states = new std::vector<ContextState*>;
    return *states;
}

std::atomic<ContextDestroyHook> g_destroyHook{nullptr};

// Destroys the driver object behind a state nobody uses any more. Never throws: a failure is logged
// (there is no caller left to tell).
void destroyDriverObject(const ContextState& state) noexcept
{
    try {
        const DriverApi& d = api();
        CUresult r = CUDA_SUCCESS;
        const char* call = "";
        switch (state.kind) {
        case ContextKind::created:
            call = "cuCtxDestroy";
            r = d.cuCtxDestroy(state.handle);
            break;
        case ContextKind::primary:
            call = "cuDevicePrimaryCtxRelease";
            r = d.cuDevicePrimaryCtxRelease(state.device);
            break;
        case ContextKind::green:
            call = "cuGreenCtxDestroy";
            r = d.cuGreenCtxDestroy(state.green);
            break;
        case ContextKind::borrowed:
            // Its owner destroys it; cuctx only forgets it.
            logTrace("thread {}: forgot {}", gettid(), described(state));
            return;
        }
        if (r != CUDA_SUCCESS && devicePoisoned(state.ordinal))
            logDebug("{} failed with {} on {}, on a poisoned device: forgotten", call, resultName(r), described(state));
        else if (r != CUDA_SUCCESS)
            logError("{} failed with {} ({}) on {}", call, resultName(r), static_cast<int>(r), described(state));
        else
            logTrace("thread {}: {} {}", gettid(), call, described(state));
    } catch (const Error& e) {
        logError("destroying {}: {}", described(state), e.what());
    } catch (...) {
        // Out of memory while making the error: nothing more to say.
    }
}

// Whether any registered thread has `state` among its entries. Under the registry mutex.
bool usedLocked(const ContextState* state) noexcept
{
    for (const ThreadState* ts : registeredThreads())
        if (ts->hasEntry(state))
            return true;
    for (const AbandonedEntry& abandoned : abandonedEntries())
        if (abandoned.state == state)
            return true;
    return false;
}

// Primary contexts are interned: one state per device, so that two Context::primary() calls share it.
std::vector<ContextState*>& primariesLocked()
{
    static auto* primaries = new std::vector<ContextState*>;
    return *primaries;
}

void forgetPrimaryLocked(const ContextState* state)
{
    if (state->kind != ContextKind::primary)
        return;
    auto& primaries = primariesLocked();
    if (static_cast<std::size_t>(state->ordinal) < primaries.size() && primaries[state->ordinal] == state)
        primaries[state->ordinal] = nullptr;
}

// A destroyed context's state is kept, never freed: a thread leaving it (a guard's exit, a pop) lowers
// its top and only then reads the state's leave flags, so a thread that drops the last handle in
// between finds the context unused and destroys it while that read is still to come. Freeing the
// state there was a use after free (and a second destruction, had the memory been reused). What it
// costs: one ContextState per destroyed context for the life of the process, with its recorded error
// dropped; contexts take about 140 ms each to create (driver-facts.md). Listed through the states
// themselves, so that retiring allocates nothing (it runs in destructors) and they stay reachable.
void retire(ContextState* state) noexcept
{
    {
        std::lock_guard lock(state->stickyMutex);
        state->sticky.reset();
    }
    static constinit std::mutex mutex;
    static constinit ContextState* last = nullptr;
    std::lock_guard lock(mutex);
    state->retiredBefore = last;
    last = state;
}

// Under the registry mutex: one more handle of `state`. One that had none (orphaned, its last handle
// gone while a thread still uses it) is no longer orphaned: tryDestroy checks the handles under this
// mutex before it destroys, so the new handle keeps it alive; guards on it go inline again, and its
// next last handle orphans it anew (a release that raced to zero may set the flag again after this:
// harmless, as tryDestroy checks).
void reviveLocked(ContextState* state) noexcept
{
    if (state->handles.fetch_add(1, std::memory_order_acq_rel) == 0)
        state->leaveFlags.fetch_and(static_cast<std::uint8_t>(~ContextState::kOrphaned), std::memory_order_relaxed);
}

// Whether the driver refuses context calls on this thread: inside a host callback, cuctx's
// (Stream::hostCallback) or one launched without cuctx (cuLaunchHostFunc, cudaLaunchHostFunc), where
// it answers CUDA_ERROR_NOT_PERMITTED (driver-facts.md). The probe for the latter is a push and a pop
// of the context, which is alive (the caller holds the registry mutex and found it not destroyed).
bool contextCallsRefusedHere(const ContextState& state) noexcept
{
    if (inHostCallback())
        return true;
    const DriverApi* d = g_activeApi.load(std::memory_order_acquire);
    if (d == nullptr)
        return false; // a forked child: the destruction reports it
    const CUresult r = d->cuCtxPushCurrent(state.handle);
    if (r == CUDA_SUCCESS) {
        CUcontext popped = nullptr;
        (void)d->cuCtxPopCurrent(&popped);
    }
    return r == CUDA_ERROR_NOT_PERMITTED;
}

void tryDestroy(ContextState* state) noexcept
{
    // Logged after the lock is released: cuctx never calls a log sink while holding a lock of its own
    // (a sink may call back into cuctx, or take a lock that a thread calling cuctx holds). The state
    // may be freed by the thread that uses it as soon as the lock is released: describe it before.
    std::string deferred;
    bool refusedHere = false;
    {
        std::lock_guard lock(registryMutex());
        if (state->destroyed)
            return;
        const bool used = usedLocked(state);
        if (used) {
            try {
                deferred = logEnabled(LogLevel::debug) ? describeContext(*state) : "?";
            } catch (...) {
                deferred = "?";
            }
        } else if (state->handles.load(std::memory_order_acquire) > 0) {
            // A handle again: a thread that had it entered copied the module cache's uncounted handle
            // (a Module::cached reference) after the last one went. That copy keeps it alive; its
            // release orphans it again. (Read after the uses: the copier counted before it left.)
            return;
        } else if (contextCallsRefusedHere(*state)) {
            // In a host callback (cuctx's or one launched without it), where the driver refuses the
            // destruction: the deferred-cleanup queue takes a handle, as a revival does, and its release
            // on an ordinary thread destroys the context then if nothing uses it.
            reviveLocked(state);
            refusedHere = true;
        } else {
            // No thread's record names it (entries above a thread's depth are never read): its address
            // may be reused as soon as it is freed.
            state->destroyed = true;
            forgetPrimaryLocked(state);
            auto& states = liveStatesLocked();
            states.erase(std::remove(states.begin(), states.end(), state), states.end());
        }
    }
    if (refusedHere) {
        deferCountedHandle(state);
        return;
    }
    if (!deferred.empty()) {
        logDebug("last handle of {} dropped while in use: destruction deferred to the end of that use", deferred);
        return;
    }
    if (ContextDestroyHook hook = g_destroyHook.load(std::memory_order_acquire))
        hook(*state); // the module cache unloads its modules while the context still exists
    destroyDriverObject(*state);
    detachJournal(*state);
    retire(state);
}

} // namespace

const std::vector<ContextState*>& liveContextsLocked()
{
    return liveStatesLocked();
}

void setContextDestroyHook(ContextDestroyHook hook) noexcept
{
    g_destroyHook.store(hook, std::memory_order_release);
}

long liveContexts() noexcept
{
    std::lock_guard lock(registryMutex());
    return static_cast<long>(liveStatesLocked().size());
}

void registerContext(ContextState* state)
{
    std::lock_guard lock(registryMutex());
    registerContextLocked(state);
}

void registerContextLocked(ContextState* state)
{
    auto& live = liveStatesLocked();
    if (live.size() == live.capacity()) // the only allocation left after the journal's; grown as push_back would
        live.reserve(std::max<std::size_t>(8, 2 * live.size()));
    if (state->journal == nullptr)
        attachJournal(*state);
    live.push_back(state);
}

std::optional<std::string> describeLiveContext(CUcontext handle)
{
    std::lock_guard lock(registryMutex());
    for (const ContextState* state : liveStatesLocked())
        if (state->handle == handle)
            return describeContext(*state);
    return std::nullopt;
}

ContextState* acquireLiveContextLocked(CUcontext handle) noexcept
{
    for (ContextState* state : liveStatesLocked()) {
        if (state->handle != handle || state->destroyed)
            continue;
        // An orphaned context (its last handle gone, a thread still using it) gets a handle again:
        // a second state for the same CUcontext would be destroyed under this one.
        reviveLocked(state);
        return state;
    }
    return nullptr;
}

ContextState* acquireLiveContext(CUcontext handle)
{
    std::lock_guard lock(registryMutex());
    return acquireLiveContextLocked(handle);
}

std::string describeContext(const ContextState& state)
{
    std::string text = "context ";
    if (state.id != 0) {
        text += std::to_string(state.id);
    } else {
        char handle[32];
        std::snprintf(handle, sizeof handle, "%p", static_cast<void*>(state.handle));
        text += handle;
    }
    if (state.kind == ContextKind::primary)
        text += " (primary)";
    else if (state.kind == ContextKind::green)
        text += " (green)";
    else if (state.kind == ContextKind::borrowed)
        text += " (borrowed)";
    text += " on device " + std::to_string(state.ordinal);
    return text;
}

void recordSticky(ContextState& state, Error error) noexcept
{
    try {
        logError("{}", error.what());
        std::lock_guard lock(state.stickyMutex);
        if (!state.sticky) // the first failure is the one worth reporting
            state.sticky.emplace(std::move(error));
        state.hasSticky.store(true, std::memory_order_release);
    } catch (...) {
        // Out of memory while recording an error: nothing better to do than to drop it.
    }
}

void throwRecorded(ContextState& state)
{
    std::optional<Error> error;
    {
        std::lock_guard lock(state.stickyMutex);
        error.swap(state.sticky);
        state.hasSticky.store(false, std::memory_order_release);
    }
    if (error)
        throw *error;
}

void releaseHandle(ContextState* state) noexcept
{
    if (state->handles.fetch_sub(1, std::memory_order_acq_rel) != 1)
        return;
    if (inHostCallback()) [[unlikely]] {
        deferRelease(state); // the driver refuses the destruction here: later, on another thread
        return;
    }
    // The last handle: from now on only the uses that threads have counted can keep it alive.
    state->leaveFlags.fetch_or(ContextState::kOrphaned, std::memory_order_seq_cst);
    heavyFence();
    tryDestroy(state);
}

void destroyIfUnused(ContextState* state) noexcept
{
    tryDestroy(state); // which defers where the driver refuses it (a host callback)
}

std::vector<long> threadsUsing(const ContextState& state)
{
    std::vector<long> tids;
    std::lock_guard lock(registryMutex());
    for (const ThreadState* ts : registeredThreads())
        if (ts->hasEntry(&state))
            tids.push_back(ts->tid);
    return tids;
}

ContextState* acquirePrimaryLocked(int ordinal) noexcept
{
    auto& primaries = primariesLocked();
    if (static_cast<std::size_t>(ordinal) >= primaries.size() || primaries[ordinal] == nullptr)
        return nullptr;
    ContextState* state = primaries[ordinal];
    // A state whose last handle is already gone is not revived: the caller retains anew.
    long handles = state->handles.load(std::memory_order_relaxed);
    while (handles > 0)
        if (state->handles.compare_exchange_weak(handles, handles + 1, std::memory_order_acq_rel))
            return state;
    return nullptr;
}

void reservePrimaryLocked(int ordinal)
{
    auto& primaries = primariesLocked();
    if (primaries.size() <= static_cast<std::size_t>(ordinal))
        primaries.resize(static_cast<std::size_t>(ordinal) + 1, nullptr);
}

void rememberPrimaryLocked(ContextState* state) noexcept
{
    primariesLocked()[static_cast<std::size_t>(state->ordinal)] = state;
}

} // namespace cuctx::detail

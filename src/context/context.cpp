// SPDX-License-Identifier: MIT
#include "cuctx/context.hpp"

#include "check/check.hpp"
#include "check/device_faults.hpp"
#include "context/context_access.hpp"
#include "context/deferred_cleanup.hpp"
#include "context/described.hpp"
#include "context/launch_journal.hpp"
#include "context/thread_state.hpp"
#include "cuctx/context_guard.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace cuctx {

using detail::api;
using detail::check;
using detail::ContextState;
using detail::subjectOf;

namespace detail {

namespace {

// The state of a non-empty handle, in a process that may use the driver, with what host callbacks
// deferred done.
ContextState& usableState(const Context& context, const char* call)
{
    ContextState* state = ContextAccess::state(context);
    if (state == nullptr)
        throwError(Errc::invalid_argument, call, "the Context handle is empty",
                   "Make one with Context::create, Context::primary or Context::green");
    if (g_activeApi.load(std::memory_order_acquire) == nullptr) [[unlikely]]
        (void)api(call);  // a forked child: says so, naming this call
    runDeferredCleanup(); // what host callbacks dropped (deferred_cleanup.hpp)
    return *state;
}

// checkedState without the poisoned-device check: for the accessors of cuctx's own record (id,
// device, kind), which a report or a log line may read after a fault.
ContextState& recordedState(const Context& context, const char* call)
{
    ContextState& state = usableState(context, call);
    throwSticky(state);
    return state;
}

} // namespace

ContextState& checkedState(const Context& context, const char* call)
{
    ContextState& state = recordedState(context, call);
    failIfPoisoned(state.ordinal, call, subjectOf(state)); // a sticky fault on its device: fail fast
    return state;
}

ContextState& stateToEnter(const Context& context, const char* call)
{
    ContextState& state = usableState(context, call);
    failIfPoisoned(state.ordinal, call, subjectOf(state));
    return state;
}

} // namespace detail

namespace {

std::uint64_t contextIdOf(CUcontext handle)
{
    const detail::DriverApi& d = api();
    unsigned long long id = 0;
    if (d.cuCtxGetId != nullptr && d.cuCtxGetId(handle, &id) == CUDA_SUCCESS)
        return id;
    return 0;
}

ContextState* newState(CUcontext handle, const Device& device, detail::ContextKind kind)
{
    auto* state = new ContextState;
    state->handle = handle;
    state->device = device.native();
    state->ordinal = device.ordinal();
    state->id = contextIdOf(handle);
    state->kind = kind;
    if (kind == detail::ContextKind::green)
        state->leaveFlags.store(ContextState::kGreen, std::memory_order_relaxed);
    else
        state->inlineHandle = handle;
    return state;
}

} // namespace

unsigned ContextOptions::flags() const noexcept
{
    unsigned f = 0;
    switch (schedule) {
    case SchedulePolicy::automatic: f = CU_CTX_SCHED_AUTO; break;
    case SchedulePolicy::spin: f = CU_CTX_SCHED_SPIN; break;
    case SchedulePolicy::yield: f = CU_CTX_SCHED_YIELD; break;
    case SchedulePolicy::blockingSync: f = CU_CTX_SCHED_BLOCKING_SYNC; break;
    }
    if (keepLocalMemory)
        f |= CU_CTX_LMEM_RESIZE_TO_MAX;
    if (coredump)
        f |= CU_CTX_COREDUMP_ENABLE;
    if (userCoredump)
        f |= CU_CTX_USER_COREDUMP_ENABLE;
    if (syncMemops)
        f |= CU_CTX_SYNC_MEMOPS;
    return f;
}

Context::Context(const Context& other) noexcept : state_(other.state_)
{
    if (state_ != nullptr)
        state_->handles.fetch_add(1, std::memory_order_relaxed);
}

Context& Context::operator=(const Context& other) noexcept
{
    if (this != &other) {
        Context copy(other);
        *this = std::move(copy);
    }
    return *this;
}

Context& Context::operator=(Context&& other) noexcept
{
    if (this != &other) {
        reset();
        state_ = other.state_;
        other.state_ = nullptr;
    }
    return *this;
}

void Context::reset() noexcept
{
    if (ContextState* state = std::exchange(state_, nullptr))
        detail::releaseHandle(state);
}

Context Context::create(const Device& device, const ContextOptions& options)
{
    const detail::DriverApi& d = api("cuctx::Context::create");
    const detail::Subject subject{.device = device.ordinal()};
    detail::failIfPoisoned(device.ordinal(), "cuctx::Context::create", subject);
    CUcontext handle = nullptr;
    if (options.smCount > 0) {
        detail::requireEntry(reinterpret_cast<const void*>(d.cuCtxCreate_v4), "cuCtxCreate_v4");
        CUexecAffinityParam affinity{};
        affinity.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
        affinity.param.smCount.val = static_cast<unsigned>(options.smCount);
        CUctxCreateParams params{};
        params.execAffinityParams = &affinity;
        params.numExecAffinityParams = 1;
        check(d.cuCtxCreate_v4(&handle, &params, options.flags(), device.native()), "cuCtxCreate_v4", subject);
    } else if (d.cuCtxCreate_v4 != nullptr) {
        check(d.cuCtxCreate_v4(&handle, nullptr, options.flags(), device.native()), "cuCtxCreate_v4", subject);
    } else {
        check(d.cuCtxCreate_v2(&handle, options.flags(), device.native()), "cuCtxCreate_v2", subject);
    }
    // cuCtxCreate pushed the new context: pop it, so the caller's stack is as it was.
    CUcontext popped = nullptr;
    const CUresult pop = d.cuCtxPopCurrent(&popped);
    if (pop != CUDA_SUCCESS || popped != handle) {
        (void)d.cuCtxDestroy(handle);
        if (pop != CUDA_SUCCESS)
            check(pop, "cuCtxPopCurrent", subject);
        detail::throwError(Errc::stack_mismatch, "cuCtxCreate",
                           "the driver did not leave the new context on top of this thread's stack", {}, subject);
    }
    ContextState* state = nullptr;
    try {
        state = newState(handle, device, detail::ContextKind::created);
        detail::registerContext(state); // all or nothing
    } catch (...) {
        delete state; // out of memory: the new context goes with it
        (void)d.cuCtxDestroy(handle);
        throw;
    }
    Context context(state); // owns it before anything else may throw (the log line allocates)
    detail::logTrace("thread {}: created {}", gettid(), detail::described(*state));
    return context;
}

Context Context::primary(const Device& device)
{
    const detail::DriverApi& d = api("cuctx::Context::primary");
    detail::failIfPoisoned(device.ordinal(), "cuctx::Context::primary", detail::Subject{.device = device.ordinal()});
    {
        std::lock_guard lock(detail::registryMutex());
        if (ContextState* existing = detail::acquirePrimaryLocked(device.ordinal()))
            return Context(existing);
    }
    CUcontext handle = nullptr;
    check(d.cuDevicePrimaryCtxRetain(&handle, device.native()), "cuDevicePrimaryCtxRetain",
          detail::Subject{.device = device.ordinal()});
    ContextState* state = nullptr;
    try {
        state = newState(handle, device, detail::ContextKind::primary);
    } catch (...) {
        (void)d.cuDevicePrimaryCtxRelease(device.native());
        throw;
    }
    {
        std::lock_guard lock(detail::registryMutex());
        // The allocations first, so that a failed one leaves the registry as it was.
        try {
            detail::reservePrimaryLocked(device.ordinal());
        } catch (...) {
            (void)d.cuDevicePrimaryCtxRelease(device.native());
            delete state;
            throw;
        }
        // Another thread may have retained it meanwhile: keep one state, drop the second retain.
        if (ContextState* existing = detail::acquirePrimaryLocked(device.ordinal())) {
            (void)d.cuDevicePrimaryCtxRelease(device.native());
            delete state;
            return Context(existing);
        }
        // A state that has the handle already: borrowed before (the runtime's context, Context::borrow
        // of cuCtxGetCurrent), it becomes the primary one and owns this retain, so that the context has
        // one identity (guards on either handle elide, one module cache) and its last handle releases
        // what cuctx retained; cuctx's own primary state, orphaned (its last handle gone while a thread
        // still uses it), is revived and keeps the retain it has.
        if (ContextState* known = detail::acquireLiveContextLocked(handle)) {
            if (known->kind == detail::ContextKind::primary)
                (void)d.cuDevicePrimaryCtxRelease(device.native());
            else
                known->kind.store(detail::ContextKind::primary, std::memory_order_relaxed);
            detail::rememberPrimaryLocked(known);
            delete state;
            return Context(known);
        }
        try {
            detail::registerContextLocked(state); // all or nothing
        } catch (...) {
            (void)d.cuDevicePrimaryCtxRelease(device.native());
            delete state;
            throw;
        }
        detail::rememberPrimaryLocked(state);
    }
    Context context(state); // holds the state alive for the log line, made without the lock
    detail::logTrace("thread {}: retained {}", gettid(), detail::described(*state));
    return context;
}

Context Context::primary(const Device& device, const ContextOptions& options)
{
    check(api().cuDevicePrimaryCtxSetFlags(device.native(), options.flags()), "cuDevicePrimaryCtxSetFlags",
          detail::Subject{.device = device.ordinal()});
    return primary(device);
}

namespace {

const detail::DriverApi& greenApi(const char* who)
{
    const detail::DriverApi& d = api(who);
    for (auto [entry, name] :
         {std::pair{reinterpret_cast<const void*>(d.cuGreenCtxCreate), "cuGreenCtxCreate"},
          {reinterpret_cast<const void*>(d.cuDeviceGetDevResource), "cuDeviceGetDevResource"},
          {reinterpret_cast<const void*>(d.cuDevSmResourceSplitByCount), "cuDevSmResourceSplitByCount"},
          {reinterpret_cast<const void*>(d.cuDevResourceGenerateDesc), "cuDevResourceGenerateDesc"},
          {reinterpret_cast<const void*>(d.cuCtxFromGreenCtx), "cuCtxFromGreenCtx"},
          {reinterpret_cast<const void*>(d.cuGreenCtxGetDevResource), "cuGreenCtxGetDevResource"},
          {reinterpret_cast<const void*>(d.cuGreenCtxDestroy), "cuGreenCtxDestroy"}})
        detail::requireEntry(entry, name);
    return d;
}

// "{24, 40}": how error messages show a request.
std::string listOf(const std::vector<unsigned>& counts)
{
    std::string text = "{";
    for (std::size_t i = 0; i < counts.size(); ++i)
        text += (i == 0 ? "" : ", ") + std::to_string(counts[i]);
    return text + "}";
}

// A green context that is not yet owned by a ContextState: destroyed if what follows fails.
struct PendingGreen {
    CUgreenCtx handle = nullptr;
    PendingGreen() = default;
    PendingGreen(const PendingGreen&) = delete;
    PendingGreen& operator=(const PendingGreen&) = delete;
    ~PendingGreen()
    {
        if (handle != nullptr)
            (void)api().cuGreenCtxDestroy(handle);
    }
};

} // namespace

std::vector<Context> Context::greenPartition(const Device& device, const std::vector<unsigned>& smCounts)
{
    constexpr const char* who = "cuctx::Context::greenPartition";
    const detail::DriverApi& d = greenApi(who);
    const detail::Subject subject{.device = device.ordinal()};
    CUdevResource all{};
    check(d.cuDeviceGetDevResource(device.native(), &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource", subject);
    const unsigned available = all.sm.smCount;
    const std::string asked = "partition " + listOf(smCounts) + " of device " + std::to_string(device.ordinal());
    if (smCounts.empty())
        detail::throwError(Errc::invalid_argument, who, "no partition asked for (the list of SM counts is empty)",
                           "Pass one SM count per green context", subject);
    std::uint64_t total = 0;
    unsigned unit = 0; // the largest group size every request is a whole number of
    for (unsigned n : smCounts) {
        if (n == 0)
            detail::throwError(Errc::invalid_argument, who, asked + ": a partition of 0 SMs",
                               "Ask for at least one SM per partition (the driver rounds up to its minimum, " +
                                   std::to_string(all.sm.minSmPartitionSize) + " here)",
                               subject);
        total += n;
        unit = std::gcd(unit, n);
    }
    if (total > available)
        detail::throwError(Errc::invalid_argument, who,
                           asked + " asks for " + std::to_string(total) + " SMs; the device has " +
                               std::to_string(available),
                           "Ask for fewer SMs in all", subject);

    // One split of the whole device into groups of `unit` SMs (rounded up by the driver to its
    // granularity); each partition gets whole groups. All groups come from this one split, which
    // the driver guarantees disjoint, and a descriptor may combine outputs of one split.
    std::vector<CUdevResource> groups(available);
    unsigned made = available;
    CUdevResource remaining{};
    if (const CUresult r = d.cuDevSmResourceSplitByCount(groups.data(), &made, &all, &remaining, 0, unit);
        r != CUDA_SUCCESS)
        detail::throwDriverError(r, "cuDevSmResourceSplitByCount", subject, SourceLocation::current(),
                                 asked + ": splitting its " + std::to_string(available) + " SMs into groups of " +
                                     std::to_string(unit) + " failed",
                                 "Ask for multiples of the device's partition granularity (minimum " +
                                     std::to_string(all.sm.minSmPartitionSize) + " SMs)");
    made = std::min(made, available);
    std::vector<std::pair<unsigned, unsigned>> ranges; // first group, group count, per partition
    std::vector<unsigned> expected;                    // SMs per partition, as the split gave them
    unsigned next = 0;
    for (unsigned n : smCounts) {
        const unsigned first = next;
        unsigned sms = 0;
        while (sms < n && next < made)
            sms += groups[next++].sm.smCount;
        if (sms < n) {
            const unsigned size = std::max(1u, made > 0 ? groups[0].sm.smCount : unit);
            std::uint64_t rounded = 0;
            for (unsigned m : smCounts)
                rounded += (m + size - 1) / size * std::uint64_t{size};
            detail::throwError(Errc::invalid_argument, who,
                               asked + " asks for " + std::to_string(total) + " SMs, " + std::to_string(rounded) +
                                   " once each is rounded up to whole groups of " + std::to_string(size) +
                                   " SMs (the driver's granularity: minimum " +
                                   std::to_string(all.sm.minSmPartitionSize) + ", alignment " +
                                   std::to_string(all.sm.smCoscheduledAlignment) + "); the device has " +
                                   std::to_string(available) + " SMs, and one split of them gives " +
                                   std::to_string(made) + " such groups (" + std::to_string(made * size) + " SMs)",
                               "Ask for fewer SMs, or for multiples of " + std::to_string(size), subject);
        }
        ranges.emplace_back(first, next - first);
        expected.push_back(sms);
    }

    std::vector<Context> partitions; // dropping it on an error destroys the green contexts made so far
    partitions.reserve(smCounts.size());
    for (std::size_t i = 0; i < smCounts.size(); ++i) {
        CUdevResourceDesc desc = nullptr; // the driver's (CUDA 13.0 has no call that frees one)
        check(d.cuDevResourceGenerateDesc(&desc, &groups[ranges[i].first], ranges[i].second),
              "cuDevResourceGenerateDesc", subject);
        PendingGreen green;
        check(d.cuGreenCtxCreate(&green.handle, desc, device.native(), CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate",
              subject);
        CUcontext handle = nullptr;
        check(d.cuCtxFromGreenCtx(&handle, green.handle), "cuCtxFromGreenCtx", subject);
        ContextState* state = newState(handle, device, detail::ContextKind::green);
        state->green = green.handle;
        try {
            detail::registerContext(state);
        } catch (...) {
            delete state; // `green` still destroys the green context
            throw;
        }
        green.handle = nullptr;
        partitions.push_back(Context(state)); // reserved: cannot throw
    }

    // What the driver says each green context has: the counts the split gave, and no more than the
    // device in all. (The driver reports SM counts, not which SMs: disjointness itself is the
    // split's guarantee, docs/contexts.md.)
    std::uint64_t reported = 0;
    for (std::size_t i = 0; i < partitions.size(); ++i) {
        const unsigned got = partitions[i].smCount();
        reported += got;
        if (got != expected[i])
            detail::throwError(Errc::invalid_argument, who,
                               asked + ": the driver reports " + std::to_string(got) + " SMs for partition " +
                                   std::to_string(i) + ", whose split groups held " + std::to_string(expected[i]),
                               "Report this: the driver's green-context resources disagree with its split", subject);
    }
    if (reported > available)
        detail::throwError(Errc::invalid_argument, who,
                           asked + ": the partitions report " + std::to_string(reported) +
                               " SMs in all; the device has " + std::to_string(available),
                           "Report this: the driver's green contexts overlap", subject);
    for (std::size_t i = 0; i < partitions.size(); ++i)
        detail::logTrace("thread {}: created {} with {} SMs (asked for {})", gettid(),
                         detail::described(*detail::ContextAccess::state(partitions[i])), expected[i], smCounts[i]);
    return partitions;
}

Context Context::green(const Device& device, unsigned smCount)
{
    return std::move(greenPartition(device, {smCount}).front());
}

unsigned Context::smCount() const
{
    ContextState& s = detail::checkedState(*this, "cuctx::Context::smCount");
    const detail::DriverApi& d = api();
    CUdevResource resource{};
    if (s.kind == detail::ContextKind::green) {
        detail::requireEntry(reinterpret_cast<const void*>(d.cuGreenCtxGetDevResource), "cuGreenCtxGetDevResource");
        check(d.cuGreenCtxGetDevResource(s.green, &resource, CU_DEV_RESOURCE_TYPE_SM), "cuGreenCtxGetDevResource",
              subjectOf(s));
    } else {
        detail::requireEntry(reinterpret_cast<const void*>(d.cuCtxGetDevResource), "cuCtxGetDevResource");
        check(d.cuCtxGetDevResource(s.handle, &resource, CU_DEV_RESOURCE_TYPE_SM), "cuCtxGetDevResource", subjectOf(s));
    }
    return resource.sm.smCount;
}

CUgreenCtx Context::nativeGreen() const noexcept
{
    return state_ != nullptr && state_->kind == detail::ContextKind::green ? state_->green : nullptr;
}

Context Context::borrow(CUcontext handle)
{
    constexpr const char* who = "cuctx::Context::borrow";
    if (handle == nullptr)
        detail::throwError(Errc::invalid_argument, who, "the CUcontext handle is null",
                           "Pass a context that exists (cuCtxGetCurrent, cuCtxCreate, cuDevicePrimaryCtxRetain)");
    const detail::DriverApi& d = api();
    if (ContextState* known = detail::acquireLiveContext(handle))
        return Context(known);
    // Its device: the driver answers for the current context only, so enter it for a moment.
    const detail::Subject subject{.context = handle};
    check(d.cuCtxPushCurrent(handle), "cuCtxPushCurrent", subject);
    CUdevice device = 0;
    const CUresult r = d.cuCtxGetDevice(&device);
    CUcontext popped = nullptr;
    const CUresult pop = d.cuCtxPopCurrent(&popped);
    check(r, "cuCtxGetDevice", subject);
    check(pop, "cuCtxPopCurrent", subject);
    if (popped != handle)
        detail::throwError(Errc::stack_mismatch, who, "the driver popped another context than the one borrowed", {},
                           subject);
    int ordinal = -1;
    for (int i = 0; i < Device::count() && ordinal < 0; ++i)
        if (Device::get(i).native() == device)
            ordinal = i;
    if (ordinal < 0)
        detail::throwError(Errc::invalid_argument, who, "the context's device is not one the driver enumerates",
                           "Borrow a context of a visible device (CUDA_VISIBLE_DEVICES)", subject);
    ContextState* state = newState(handle, Device::get(ordinal), detail::ContextKind::borrowed);
    std::lock_guard lock(detail::registryMutex());
    // Another thread may have borrowed or made it meanwhile: keep one state.
    if (ContextState* known = detail::acquireLiveContextLocked(handle)) {
        delete state;
        return Context(known);
    }
    try {
        detail::registerContextLocked(state); // all or nothing
    } catch (...) {
        delete state;
        throw;
    }
    return Context(state);
}

Device Context::device() const
{
    return Device::get(detail::recordedState(*this, "cuctx::Context::device").ordinal);
}

std::uint64_t Context::id() const
{
    return detail::recordedState(*this, "cuctx::Context::id").id;
}

bool Context::isPrimary() const
{
    return detail::recordedState(*this, "cuctx::Context::isPrimary").kind == detail::ContextKind::primary;
}

bool Context::isGreen() const
{
    return detail::recordedState(*this, "cuctx::Context::isGreen").kind == detail::ContextKind::green;
}

bool Context::isBorrowed() const
{
    return detail::recordedState(*this, "cuctx::Context::isBorrowed").kind == detail::ContextKind::borrowed;
}

unsigned Context::apiVersion() const
{
    ContextState& s = detail::checkedState(*this, "cuctx::Context::apiVersion");
    unsigned version = 0;
    check(api().cuCtxGetApiVersion(s.handle, &version), "cuCtxGetApiVersion", subjectOf(s));
    return version;
}

unsigned Context::flags() const
{
    ContextState& s = detail::checkedState(*this, "cuctx::Context::flags");
    ContextGuard guard(*this);
    unsigned f = 0;
    check(api().cuCtxGetFlags(&f), "cuCtxGetFlags", subjectOf(s));
    return f;
}

std::size_t Context::limit(CUlimit which) const
{
    ContextState& s = detail::checkedState(*this, "cuctx::Context::limit");
    ContextGuard guard(*this);
    std::size_t value = 0;
    check(api().cuCtxGetLimit(&value, which), "cuCtxGetLimit", subjectOf(s));
    return value;
}

void Context::setLimit(CUlimit which, std::size_t value) const
{
    ContextState& s = detail::checkedState(*this, "cuctx::Context::setLimit");
    ContextGuard guard(*this);
    check(api().cuCtxSetLimit(which, value), "cuCtxSetLimit", subjectOf(s));
}

Context::StreamPriorityRange Context::streamPriorityRange() const
{
    ContextState& s = detail::checkedState(*this, "cuctx::Context::streamPriorityRange");
    ContextGuard guard(*this);
    StreamPriorityRange range;
    check(api().cuCtxGetStreamPriorityRange(&range.least, &range.greatest), "cuCtxGetStreamPriorityRange",
          subjectOf(s));
    return range;
}

CUfunc_cache Context::cacheConfig() const
{
    ContextState& s = detail::checkedState(*this, "cuctx::Context::cacheConfig");
    ContextGuard guard(*this);
    CUfunc_cache config = CU_FUNC_CACHE_PREFER_NONE;
    check(api().cuCtxGetCacheConfig(&config), "cuCtxGetCacheConfig", subjectOf(s));
    return config;
}

Device::MemoryInfo Context::memoryInfo() const
{
    ContextState& s = detail::checkedState(*this, "cuctx::Context::memoryInfo");
    ContextGuard guard(*this);
    Device::MemoryInfo info;
    check(api().cuMemGetInfo(&info.free, &info.total), "cuMemGetInfo", subjectOf(s));
    return info;
}

void Context::synchronize() const
{
    ContextState& s = detail::checkedState(*this, "cuctx::Context::synchronize");
    ContextGuard guard(*this);
    const std::uint64_t mark = detail::journalMark(s);
    check(api().cuCtxSynchronize(), "cuCtxSynchronize", subjectOf(s));
    detail::journalContextSynced(s, mark); // the launches before it are no suspects any more
    detail::runDeferredCleanup();          // what the host callbacks that just ended dropped
}

void Context::checkRecordedError() const
{
    (void)detail::checkedState(*this, "cuctx::Context::checkRecordedError");
}

std::vector<long> Context::threadsUsing() const
{
    if (state_ == nullptr)
        return {};
    return detail::threadsUsing(*state_);
}

CUcontext Context::native() const noexcept
{
    return state_ != nullptr ? state_->handle : nullptr;
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
#include "context/entries.hpp"

#include "check/check.hpp"
#include "context/context_access.hpp"
#include "context/described.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"

#include <algorithm>
#include <cstdio>

namespace cuctx::detail {
namespace {

Error mismatchError(std::string who, std::string detail, std::string hint, const ContextState& state,
                    SourceLocation where = SourceLocation::current())
{
    ErrorInfo info;
    info.condition = Errc::stack_mismatch;
    info.call = std::move(who);
    info.object = describeContext(state);
    info.detail = std::move(detail);
    info.hint = std::move(hint);
    return Error(std::move(info), where);
}

constexpr std::uint32_t bit(std::uint32_t k) noexcept
{
    return 1U << k;
}

} // namespace

const char* kindName(StackEntryKind kind) noexcept
{
    switch (kind) {
    case StackEntryKind::guard: return "guard";
    case StackEntryKind::push: return "push";
    case StackEntryKind::adopted: return "adopted";
    }
    return "?";
}

std::string describeHandle(CUcontext handle)
{
    if (handle == nullptr)
        return "no context";
    if (auto known = describeLiveContext(handle))
        return *known;
    char text[64];
    unsigned long long id = 0;
    const DriverApi* d = g_activeApi.load(std::memory_order_acquire);
    if (d != nullptr && d->cuCtxGetId != nullptr && d->cuCtxGetId(handle, &id) == CUDA_SUCCESS)
        std::snprintf(text, sizeof text, "context %llu (handle %p, not cuctx's)", id, static_cast<void*>(handle));
    else
        std::snprintf(text, sizeof text, "context handle %p (not cuctx's)", static_cast<void*>(handle));
    return text;
}

std::vector<std::pair<ContextState*, StackEntryKind>> entriesBottomUp(const ThreadState& ts)
{
    std::vector<std::pair<ContextState*, StackEntryKind>> entries;
    const std::uint32_t depth = recordDepth();
    for (std::uint32_t k = 1; k <= depth; ++k)
        entries.emplace_back(entryAt(k), ts.kindOf(k));
    return entries;
}

RecordEntry* pushEntry(ThreadState& ts, ContextState* state, StackEntryKind kind, const char* who)
{
    (void)api(who); // in a forked child: says so, before anything changes
    const std::uint32_t depth = recordDepth();
    if (depth + 1 >= kRecordEntries)
        throwError(Errc::invalid_state, who,
                   "this thread has " + std::to_string(depth) + " contexts entered through cuctx already, the most " +
                       "it keeps at once on one thread",
                   "End guards, pops or releases before entering more; a loop that pushes without popping, or "
                   "guards nested without end, is the likely cause",
                   subjectOf(*state));
    // What lies below cuctx's entries: read again on every entry from an empty record, since code
    // outside cuctx (cuCtxSetCurrent, cudaSetDevice) may have changed it since cuctx last looked. A
    // failed pop repairs the stack down to exactly this (finishFailedPop).
    if (depth == 0)
        learnBase(ts);
    if (state->isGreen())
        (void)ts.claimGreen(state); // released by the thread's last entry of it, or below on failure
    const std::uint32_t mine = depth + 1;
    t_record.entries[mine].store(state, std::memory_order_relaxed);
    setRecordDepth(mine);
    return pushRecorded(ts, state, kind, mine);
}

void takeBackEntry(ContextState* state) noexcept
{
    // Through the depth, not the top: a child forked between the entry and the push (from a signal
    // handler) has its entries hidden, this one among them, and its top off the record.
    setRecordDepth(recordDepth() - 1);
    lightFence(); // pairs with the heavy fence of a thread dropping the last handle
    if (state->leaveFlags.load(std::memory_order_relaxed) != 0)
        leftFlaggedContext(state);
}

RecordEntry* pushRecorded(ThreadState& ts, ContextState* state, StackEntryKind kind, std::uint32_t mine)
{
    const CUresult r = api().cuCtxPushCurrent(state->handle);
    if (r != CUDA_SUCCESS) [[unlikely]] {
        takeBackEntry(state);
        throwDriverError(r, "cuCtxPushCurrent", subjectOf(*state), SourceLocation::current());
    }
    if (kind != StackEntryKind::guard) {
        ts.owned.fetch_or(bit(mine), std::memory_order_relaxed);
        if (mine == 1) // an adoption is always entry 1; a push above it must not end it
            ts.adopted = kind == StackEntryKind::adopted;
        state->handles.fetch_add(1, std::memory_order_relaxed); // the caller holds one: not a revival
    }
    if (logEnabled(LogLevel::trace)) [[unlikely]]
        logTrace("thread {}: push {} ({}), depth {}", ts.tid, described(*state), kindName(kind), mine);
    return &t_record.entries[mine];
}

namespace {

// Ends this thread's top entry `k`, of `state`, in the record (the driver has popped it): returns the
// handle it kept.
Context endTop(ThreadState& ts, std::uint32_t k, ContextState* state) noexcept
{
    const bool owns = (ts.owned.load(std::memory_order_relaxed) & bit(k)) != 0;
    if (owns) {
        ts.owned.fetch_and(~bit(k), std::memory_order_relaxed);
        if (k == 1)
            ts.adopted = false;
    }
    setRecordDepth(k - 1);
    lightFence(); // pairs with the heavy fence of a thread dropping the last handle
    if (state->leaveFlags.load(std::memory_order_relaxed) != 0)
        leftFlaggedContext(state);
    return owns ? ContextAccess::fromCountedState(state) : Context{};
}

// Entry `k` of `owner`'s record, of `state`, stays on that thread's driver stack as a push: it keeps a
// handle, and that thread may pop it, or it is released when the thread exits.
void keepAsPush(ThreadState& owner, std::uint32_t k, ContextState* state) noexcept
{
    if ((owner.owned.fetch_or(bit(k), std::memory_order_relaxed) & bit(k)) == 0)
        state->handles.fetch_add(1, std::memory_order_relaxed);
}

// Under the registry mutex: whether (entry, state) is a guard's entry that its thread left when it
// exited (abandonedEntries); if so it is taken off the list, and the context's kAbandonedGuard flag
// with its last such entry.
bool takeAbandonedLocked(const RecordEntry* entry, ContextState* state) noexcept
{
    auto& entries = abandonedEntries();
    const auto it = std::find_if(entries.begin(), entries.end(),
                                 [&](const AbandonedEntry& e) { return e.entry == entry && e.state == state; });
    if (it == entries.end())
        return false;
    entries.erase(it);
    if (std::none_of(entries.begin(), entries.end(), [&](const AbandonedEntry& e) { return e.state == state; }))
        state->leaveFlags.fetch_and(static_cast<std::uint8_t>(~ContextState::kAbandonedGuard),
                                    std::memory_order_relaxed);
    return true;
}

// A guard ended on a thread other than the one that made it: records Errc::invalid_state on its
// context, naming both threads (ownerTid 0: the maker has exited).
void recordForeignEnd(const ThreadState& ts, ContextState* state, long ownerTid, const char* who) noexcept
{
    try {
        std::string detail = "a ContextGuard is thread-bound, but this one was made on thread " +
                             (ownerTid != 0 ? std::to_string(ownerTid) : std::string("(one that has exited)")) +
                             " and destroyed on thread " + std::to_string(ts.tid);
        detail += ownerTid != 0 ? "; its context stays pushed on the stack of the thread that made it, recorded there "
                                  "as a ContextStack::push (pop it there, or it is released when that thread "
                                  "exits); this thread's stack is untouched"
                                : "; neither thread's stack was touched";
        ErrorInfo info;
        info.condition = Errc::invalid_state;
        info.call = who;
        info.object = describeContext(*state);
        info.detail = std::move(detail);
        info.hint = "Destroy a ContextGuard on the thread that made it, in scope order";
        recordSticky(*state, Error(std::move(info)));
    } catch (...) {
        logError("{}: a ContextGuard was destroyed on another thread than the one that made it", who);
    }
}

// The end of an abandoned guard's use of its context (taken off the list): its last use, if its
// handles are gone.
void endAbandonedUse(ContextState* state) noexcept
{
    lightFence(); // pairs with the heavy fence of the thread that drops the last handle
    if (state->orphaned())
        destroyIfUnused(state);
}

// Ends (entry, state) as a guard whose thread exited, if it is one (abandonedEntries): takes it off the
// list, records Errc::invalid_state on the context and ends the guard's use. Whether it was one.
bool endIfAbandoned(const ThreadState& ts, const RecordEntry* entry, ContextState* state, const char* who) noexcept
{
    bool abandoned = false;
    {
        std::lock_guard lock(registryMutex());
        abandoned = takeAbandonedLocked(entry, state);
    }
    if (abandoned) {
        recordForeignEnd(ts, state, 0, who);
        endAbandonedUse(state);
    }
    return abandoned;
}

// A guard ended on a thread other than the one that made it (ContextGuard is thread-bound). Its
// context stays pushed on the driver's stack of the thread that made it, which this thread cannot
// touch; its entry there becomes a push, as if that thread had called ContextStack::push. This
// thread's stack and record are left alone. (Safe while the thread that made the guard is not itself
// entering or leaving contexts at that moment, which a program that hands a guard over has to ensure
// anyway.)
Context endForeignEntry(ThreadState& ts, RecordEntry* entry, ContextState* state, const char* who) noexcept
{
    long ownerTid = 0;
    bool abandoned = false;
    {
        std::lock_guard lock(registryMutex());
        // A guard whose thread has exited first: a thread started since may have reused that thread's
        // storage, so its record may lie where the guard's entry did. One critical section with the
        // search below: the maker cannot exit between the two.
        abandoned = takeAbandonedLocked(entry, state);
        for (ThreadState* owner : registeredThreads()) {
            if (abandoned)
                break;
            RecordEntry* first = &owner->record->entries[1];
            RecordEntry* end = &owner->record->entries[kRecordEntries];
            if (owner != &ts && entry >= first && entry < end) {
                const auto k = static_cast<std::uint32_t>(entry - owner->record->entries);
                if (k > publishedDepth(*owner->record) || entry->load(std::memory_order_relaxed) != state)
                    break; // not this guard's entry: another thread's at the same address
                ownerTid = owner->tid;
                keepAsPush(*owner, k, state);
                break;
            }
        }
    }
    recordForeignEnd(ts, state, ownerTid, who);
    if (abandoned)
        endAbandonedUse(state);
    return {};
}

} // namespace

Context popEntry(ThreadState& ts, RecordEntry* entry, ContextState* state, const char* who) noexcept
{
    ThreadRecord& record = t_record;
    if (entry < &record.entries[1] || entry >= &record.entries[kRecordEntries]) [[unlikely]]
        return endForeignEntry(ts, entry, state, who);
    const auto k = static_cast<std::uint32_t>(entry - record.entries);
    const std::uint32_t depth = recordDepth();
    if (k != depth || entry->load(std::memory_order_relaxed) != state) [[unlikely]] {
        if (k > depth || entry->load(std::memory_order_relaxed) != state) {
            // Not this thread's entry of that context (a guard's whose thread exited, its storage reused
            // here, and not found among the abandoned ones): nothing of this thread's is undone.
            logError("{}: {} ended where this thread's stack holds no entry of it (depth {}, its entry {}); nothing "
                     "to undo",
                     who, described(*state), depth, k);
            return {};
        }
        // Something entered later is still above this entry: leave the driver's stack alone.
        keepAsPush(ts, k, state);
        try {
            const ContextState& top = *entryAt(depth);
            recordSticky(*state,
                         mismatchError(who,
                                       "it ends while " + describeContext(top) + " (a " + kindName(ts.kindOf(depth)) +
                                           " made after it) is still on top of this thread's stack; its own context "
                                           "stays on the driver's stack below that, recorded as a ContextStack::push "
                                           "(pop it once what is above it ends, or it is released when the thread "
                                           "exits)",
                                       "End what you push or adopt inside a guard's scope before the scope ends",
                                       *state));
        } catch (...) {
            logError("{}: a guard ended before what was entered after it", who);
        }
        return {};
    }
    const DriverApi* d = g_activeApi.load(std::memory_order_acquire);
    if (d == nullptr) [[unlikely]] {
        // A child forked after initialisation, unwinding an entry its parent made: the driver refuses
        // every call here, so only cuctx's record is undone (and guards keep taking the slow path,
        // which reports the fork).
        return endTop(ts, k, state);
    }
    CUcontext popped = nullptr;
    const CUresult r = d->cuCtxPopCurrent(&popped);
    if (r != CUDA_SUCCESS || popped != state->handle) [[unlikely]]
        return finishFailedPop(ts, k, r, popped, who);
    if (logEnabled(LogLevel::trace)) [[unlikely]]
        logTrace("thread {}: pop {} ({}), depth {}", ts.tid, described(*state), kindName(ts.kindOf(k)), k - 1);
    return endTop(ts, k, state);
}

Context endGuardEntry(ThreadState& ts, RecordEntry* entry, ContextState* state, const char* who) noexcept
{
    ThreadRecord& record = t_record;
    if (entry >= &record.entries[1] && entry < &record.entries[kRecordEntries]) {
        // In this thread's record, yet not a live guard entry of this context: a guard whose thread
        // exited, this thread reusing its storage? (A guard entry of the same context at the same
        // place cannot be told from this thread's own, and is taken for it.)
        const auto k = static_cast<std::uint32_t>(entry - record.entries);
        const bool own = k <= recordDepth() && entry->load(std::memory_order_relaxed) == state &&
                         ts.kindOf(k) == StackEntryKind::guard;
        if (!own && endIfAbandoned(ts, entry, state, who))
            return {};
    }
    return popEntry(ts, entry, state, who);
}

bool restoreEntryEndedByAbandonedGuard(ThreadState& ts, ContextState* state) noexcept
{
    const std::uint32_t k = recordDepth() + 1;
    if (k >= kRecordEntries || (ts.owned.load(std::memory_order_relaxed) & bit(k)) == 0 || entryAt(k) != state)
        return false;
    constexpr const char* who = "cuctx::ContextGuard";
    // The entry still holds the context (an inline exit only lowers the top): the driver's push and
    // the raised top put it back, with its handle and its kind.
    const DriverApi* d = g_activeApi.load(std::memory_order_acquire);
    const CUresult r = d != nullptr ? d->cuCtxPushCurrent(state->handle) : CUDA_ERROR_NOT_INITIALIZED;
    setRecordDepth(k);
    if (r != CUDA_SUCCESS) {
        logError("{}: a guard that outlived its thread ended this thread's {} of {}, and pushing it back failed "
                 "with {}: the entry ends here",
                 who, kindName(ts.kindOf(k)), described(*state), resultName(r));
        (void)endTop(ts, k, state); // drops the handle it kept
    }
    if (!endIfAbandoned(ts, &t_record.entries[k], state, who))
        logError("{}: a guard that is not this thread's ended its {} of {}; put back", who, kindName(ts.kindOf(k)),
                 described(*state));
    return true;
}

namespace {

// Pushes again what cuctx knows lay below entry `k` (the base, then entries 1 to k - 1), after code
// inside the entry's scope popped them; false if a push fails.
bool repushBelow(const DriverApi& d, const ThreadState& ts, std::uint32_t k) noexcept
{
    if (ts.base != nullptr && d.cuCtxPushCurrent(ts.base) != CUDA_SUCCESS)
        return false;
    for (std::uint32_t i = 1; i < k; ++i)
        if (d.cuCtxPushCurrent(entryAt(i)->handle) != CUDA_SUCCESS)
            return false;
    return true;
}

} // namespace

Context finishFailedPop(ThreadState& ts, std::uint32_t k, CUresult r, CUcontext popped, const char* who) noexcept
{
    ContextState* const state = entryAt(k);
    if (r != CUDA_SUCCESS && t_threadExiting) {
        // A thread-local (a ContextBinding) ends after the driver's per-thread stack did: nothing left
        // to pop, and nothing anyone did wrong.
        logDebug("{}: thread {} exits after the driver forgot its stack; nothing to pop", who, ts.tid);
        return endTop(ts, k, state);
    }
    const DriverApi* const api = g_activeApi.load(std::memory_order_acquire);
    if (api == nullptr) [[unlikely]] {
        // A child forked between a guard's load of the driver's pop and its call (a signal handler
        // that forks): the driver refuses every call here, so only cuctx's record is undone.
        return endTop(ts, k, state);
    }
    const CUcontext mine = state->handle;
    const DriverApi& d = *api;
    // What was below the entry when it was made: the entry below it, else the base (read when the
    // first entry was made on an empty record).
    const CUcontext expected = k > 1 ? entryAt(k - 1)->handle : ts.base;
    try {
        std::string detail;
        std::string repair;
        CUcontext now = nullptr;
        if (r != CUDA_SUCCESS) {
            detail = std::string("cuCtxPopCurrent failed with ") + std::string(resultName(r)) +
                     ": code inside the scope popped the context it pushed";
        } else {
            detail = "the driver popped " + describeHandle(popped) + " instead of the context it pushed";
            (void)d.cuCtxGetCurrent(&now);
            if (now == expected && mine == expected) {
                repair = "; (had the code pushed " + describeHandle(popped) +
                         " rather than replacing the top, a second entry of " + describeHandle(mine) +
                         " is left above the first: a guard that enters the context below it cannot tell the two "
                         "apart)";
            } else if (now == mine && mine != expected) {
                // Code inside pushed another context and left it: the guard's own entry is still on top.
                CUcontext again = nullptr;
                if (d.cuCtxPopCurrent(&again) == CUDA_SUCCESS)
                    repair = "; code inside left a push of its own: popped the guard's context too";
            } else if (now != expected && popped == expected && expected != nullptr) {
                // Code inside popped the guard's entry, so the pop took the caller's: put it back.
                if (d.cuCtxPushCurrent(expected) == CUDA_SUCCESS)
                    repair = "; code inside popped the context the guard pushed, so its pop took the caller's "
                             "entry: pushed that back";
            }
        }
        // Whatever else code inside left above the caller's entries: pop it, and if that empties the
        // stack, push back what cuctx knows was below. Only above an entry of cuctx's own, which
        // cuctx knows is there: a base read earlier may have been changed since by code outside.
        (void)d.cuCtxGetCurrent(&now);
        int extra = 0;
        for (; k > 1 && now != expected && now != nullptr && extra < 64; ++extra) {
            CUcontext dropped = nullptr;
            if (d.cuCtxPopCurrent(&dropped) != CUDA_SUCCESS || d.cuCtxGetCurrent(&now) != CUDA_SUCCESS)
                break;
        }
        if (extra > 0)
            repair += "; popped " + std::to_string(extra) + " more entr" + (extra == 1 ? "y" : "ies") +
                      " that code inside left above the caller's";
        if (now == nullptr && expected != nullptr)
            repair += repushBelow(d, ts, k)
                          ? "; pushed back what cuctx knew lay below (" + std::to_string(k - 1 + (ts.base ? 1 : 0)) +
                                " entries, top " + describeHandle(expected) + ")"
                          : "; pushing back what lay below failed";
        (void)d.cuCtxGetCurrent(&now);
        if (now == expected)
            detail += repair + "; the stack below it is as it was (current: " + describeHandle(now) + ")";
        else
            detail += repair + "; cuctx could not restore the stack: the driver's current context is now " +
                      describeHandle(now) + ", where it was " + describeHandle(expected) + " before the scope";
        recordSticky(*state, mismatchError(who, detail,
                                           "Code inside the scope changed the current context "
                                           "(cuCtxSetCurrent, cudaSetDevice, an unbalanced cuCtxPushCurrent "
                                           "or cuCtxPopCurrent) without restoring it",
                                           *state));
    } catch (...) {
        logError("{}: the context stack changed behind cuctx's back (and describing it failed)", who);
    }
    return endTop(ts, k, state);
}

std::optional<std::string> describeDrift(ThreadState& ts, CUcontext* actualOut)
{
    CUcontext actual = nullptr;
    check(api().cuCtxGetCurrent(&actual), "cuCtxGetCurrent");
    if (recordDepth() == 0) {
        // cuctx has no entry here: what is current is the base, whoever set it (no drift, and the
        // next repair starts from the truth).
        ts.base = actual;
        ts.baseKnown = true;
    }
    if (actualOut != nullptr)
        *actualOut = actual;
    if (actual == ts.current())
        return std::nullopt;
    std::string text = "the driver's current context is " + describeHandle(actual) + ", but cuctx recorded " +
                       describeHandle(ts.current()) + " (cuctx's entries, bottom first: ";
    const auto entries = entriesBottomUp(ts);
    if (entries.empty())
        text += "none";
    for (std::size_t i = 0; i < entries.size(); ++i)
        text += (i ? ", " : "") + describeContext(*entries[i].first) + " [" + kindName(entries[i].second) + "]";
    text += ")";
    return text;
}

void verifyStack(ThreadState& ts, const char* who)
{
    (void)api(who); // in a forked child: says so, naming the call
    if (auto drift = describeDrift(ts))
        throwError(Errc::stack_mismatch, who, *drift,
                   "Other code (cuCtxSetCurrent, cudaSetDevice, an unbalanced push) changed this thread's "
                   "current context; restore it, or call ContextStack::resync() when cuctx has no entries");
}

} // namespace cuctx::detail

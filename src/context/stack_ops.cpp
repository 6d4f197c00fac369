#include "context/stack_ops.hpp"

#include "context/context_access.hpp"
#include "driver/check.hpp"
#include "driver/driver_state.hpp"
#include "log.hpp"

#include <cstdio>

namespace cuctx::detail {
namespace {

Error mismatchError(std::string who, std::string detail, std::string hint, const ContextState& state,
                    std::source_location where = std::source_location::current())
{
    ErrorInfo info;
    info.condition = Errc::stack_mismatch;
    info.call = std::move(who);
    info.object = describeContext(state);
    info.detail = std::move(detail);
    info.hint = std::move(hint);
    return Error(std::move(info), where);
}

} // namespace

const char* kindName(StackEntryKind kind) noexcept
{
    switch (kind) {
    case StackEntryKind::guard: return "guard";
    case StackEntryKind::push: return "push";
    case StackEntryKind::binding: return "adopted";
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

const StackEntry& pushEntry(ThreadState& ts, ContextState* state, StackEntryKind kind)
{
    Slot& slot = ts.slotFor(state);
    ts.beginUse(slot, state);
    const CUresult r = api().cuCtxPushCurrent(state->handle);
    if (r != CUDA_SUCCESS) [[unlikely]] {
        ThreadState::endUse(slot, state);
        throwDriverError(r, "cuCtxPushCurrent", subjectOf(*state), std::source_location::current());
    }
    const bool ownsHandle = kind != StackEntryKind::guard;
    if (ownsHandle)
        state->handles.fetch_add(1, std::memory_order_relaxed); // the caller holds one: not a revival
    ts.entries.push_back(StackEntry{state->handle, state, &slot, kind, ownsHandle});
    ts.refreshTop();
    if (logEnabled(LogLevel::trace)) [[unlikely]]
        logTrace("thread {}: push {} ({}), depth {}", ts.tid, describeContext(*state), kindName(kind),
                 ts.entries.size());
    return ts.entries.back();
}

Context popEntry(ThreadState& ts, std::size_t index, const char* who) noexcept
{
    StackEntry& top = ts.entries.back();
    if (index + 1 != ts.entries.size()) [[unlikely]] {
        // Something cuctx pushed later is still above this entry: leave the driver's stack alone.
        StackEntry mine = ts.entries[index];
        recordSticky(*mine.state,
                     mismatchError(who,
                                   std::string("it ends while ") + describeContext(*top.state) + " (a " +
                                       kindName(top.kind) +
                                       " made after it) is still on top of this thread's stack; its own context "
                                       "stays on the driver's stack below that",
                                   "End what you push or adopt inside a guard's scope before the scope ends",
                                   *mine.state));
        ts.entries.erase(ts.entries.begin() + static_cast<std::ptrdiff_t>(index));
        ts.refreshTop();
        ThreadState::endUse(*mine.slot, mine.state);
        return mine.ownsHandle ? ContextAccess::adopt(mine.state) : Context{};
    }
    const StackEntry mine = top;
    CUcontext popped = nullptr;
    const CUresult r = g_activeApi.load(std::memory_order_acquire)->cuCtxPopCurrent(&popped); // loaded: pushed
    if (r != CUDA_SUCCESS || popped != mine.handle) [[unlikely]]
        return finishFailedPop(ts, r, popped, who);
    ts.entries.pop_back();
    ts.refreshTop();
    if (logEnabled(LogLevel::trace)) [[unlikely]]
        logTrace("thread {}: pop {} ({}), depth {}", ts.tid, describeContext(*mine.state), kindName(mine.kind),
                 ts.entries.size());
    ThreadState::endUse(*mine.slot, mine.state);
    return mine.ownsHandle ? ContextAccess::adopt(mine.state) : Context{};
}

Context finishFailedPop(ThreadState& ts, CUresult r, CUcontext popped, const char* who) noexcept
{
    const StackEntry mine = ts.entries.back();
    ts.entries.pop_back();
    ts.refreshTop();
    const DriverApi& d = *g_activeApi.load(std::memory_order_acquire);
    try {
        std::string detail;
        if (r != CUDA_SUCCESS)
            detail = std::string("cuCtxPopCurrent failed with ") + std::string(resultName(r));
        else
            detail = "the driver popped " + describeHandle(popped) + " instead of the context it pushed";
        // Code inside the scope pushed another context and left it: then ours is still on top.
        CUcontext now = nullptr;
        if (r == CUDA_SUCCESS && d.cuCtxGetCurrent(&now) == CUDA_SUCCESS && now == mine.handle &&
            ts.current() != mine.handle) {
            CUcontext again = nullptr;
            if (d.cuCtxPopCurrent(&again) == CUDA_SUCCESS)
                detail += "; popped its own context too, so the stack is as it was before it";
        }
        (void)d.cuCtxGetCurrent(&now);
        if (now != ts.current())
            detail += "; the driver's current context is now " + describeHandle(now) + ", where cuctx expected " +
                      describeHandle(ts.current());
        recordSticky(*mine.state, mismatchError(who, detail,
                                                "Code inside the scope changed the current context "
                                                "(cuCtxSetCurrent, cudaSetDevice, an unbalanced cuCtxPushCurrent) "
                                                "without restoring it",
                                                *mine.state));
    } catch (...) {
        logError("{}: the context stack changed behind cuctx's back (and describing it failed)", who);
    }
    ThreadState::endUse(*mine.slot, mine.state);
    return mine.ownsHandle ? ContextAccess::adopt(mine.state) : Context{};
}

std::optional<std::string> describeDrift(ThreadState& ts, CUcontext* actualOut)
{
    if (!ts.baseKnown && ts.entries.empty())
        learnBase(ts);
    CUcontext actual = nullptr;
    check(api().cuCtxGetCurrent(&actual), "cuCtxGetCurrent");
    if (actualOut != nullptr)
        *actualOut = actual;
    if (actual == ts.current())
        return std::nullopt;
    std::string text = "the driver's current context is " + describeHandle(actual) + ", but cuctx recorded " +
                       describeHandle(ts.current()) + " (cuctx's entries, bottom first: ";
    if (ts.entries.empty())
        text += "none";
    for (std::size_t i = 0; i < ts.entries.size(); ++i)
        text += (i ? ", " : "") + describeContext(*ts.entries[i].state) + " [" + kindName(ts.entries[i].kind) + "]";
    text += ")";
    return text;
}

void verifyStack(ThreadState& ts, const char* who)
{
    if (auto drift = describeDrift(ts))
        throwError(Errc::stack_mismatch, who, *drift,
                   "Other code (cuCtxSetCurrent, cudaSetDevice, an unbalanced push) changed this thread's "
                   "current context; restore it, or call ContextStack::resync() when cuctx has no entries");
}

} // namespace cuctx::detail

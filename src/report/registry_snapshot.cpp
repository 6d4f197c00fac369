// SPDX-License-Identifier: MIT
#include "report/registry_snapshot.hpp"

#include "context/context_state.hpp"
#include "context/thread_state.hpp"

#include <algorithm>
#include <cstdint>
#include <mutex>

namespace cuctx::detail {

bool snapshotRegistry(std::vector<ContextSnapshot>& contexts, std::vector<ThreadSnapshot>& threads, bool tryOnly)
{
    static const char* const kinds[] = {"created", "primary", "green", "borrowed"};
    std::unique_lock lock(registryMutex(), std::defer_lock);
    if (!tryOnly)
        lock.lock();
    else if (!lock.try_lock())
        return false;
    const std::vector<ContextState*>& live = liveContextsLocked();
    const std::size_t first = contexts.size();
    for (const ContextState* state : live) {
        ContextSnapshot c;
        c.id = state->id;
        c.device = state->ordinal;
        c.kind = kinds[static_cast<int>(state->kind)];
        c.description = describeContext(*state);
        c.handles = state->handles.load(std::memory_order_relaxed);
        c.destructionDeferred = state->orphaned();
        contexts.push_back(std::move(c));
    }
    for (ThreadState* ts : registeredThreads()) {
        ThreadSnapshot t;
        t.tid = ts->tid;
        ts->forEachSlot([&](const Slot& slot) {
            // A slot's state is cleared (under this mutex) before its context is freed.
            const ContextState* state = slot.state.load(std::memory_order_acquire);
            const std::uint32_t uses = slot.uses.load(std::memory_order_acquire);
            if (state == nullptr || uses == 0)
                return;
            t.uses.push_back({state->id, describeContext(*state), uses});
            t.depth += uses;
            const auto at = std::find(live.begin(), live.end(), state);
            if (at != live.end())
                contexts[first + static_cast<std::size_t>(at - live.begin())].threads.push_back(ts->tid);
        });
        if (!t.uses.empty())
            threads.push_back(std::move(t));
    }
    return true;
}

} // namespace cuctx::detail

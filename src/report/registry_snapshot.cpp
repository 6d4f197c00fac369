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
        c.kind = kinds[static_cast<int>(state->kind.load(std::memory_order_relaxed))];
        c.description = describeContext(*state);
        c.handles = state->handles.load(std::memory_order_relaxed);
        c.destructionDeferred = state->orphaned();
        contexts.push_back(std::move(c));
    }
    for (ThreadState* ts : registeredThreads()) {
        ThreadSnapshot t;
        t.tid = ts->tid;
        // Entries are read under this mutex, which a context's destruction takes after no record names it.
        std::vector<const ContextState*> entered;
        const std::uint32_t depth = std::min(publishedDepth(*ts->record), kRecordEntries - 1);
        for (std::uint32_t k = 1; k <= depth; ++k)
            entered.push_back(ts->record->entries[k].load(std::memory_order_acquire));
        for (std::size_t i = 0; i < entered.size(); ++i) {
            const ContextState* state = entered[i];
            if (std::find(entered.begin(), entered.begin() + static_cast<long>(i), state) !=
                entered.begin() + static_cast<long>(i))
                continue; // counted at its first entry
            const auto uses = static_cast<std::uint32_t>(std::count(entered.begin(), entered.end(), state));
            t.uses.push_back({state->id, describeContext(*state), uses});
            const auto at = std::find(live.begin(), live.end(), state);
            if (at != live.end())
                contexts[first + static_cast<std::size_t>(at - live.begin())].threads.push_back(ts->tid);
        }
        t.depth = static_cast<unsigned>(entered.size());
        if (!t.uses.empty())
            threads.push_back(std::move(t));
    }
    return true;
}

} // namespace cuctx::detail

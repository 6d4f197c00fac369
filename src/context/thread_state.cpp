#include "context/thread_state.hpp"

#include "context/fence.hpp"
#include "driver/check.hpp"
#include "driver/driver_state.hpp"
#include "log.hpp"

#include <unistd.h>

#include <algorithm>

namespace cuctx::detail {
namespace {

std::atomic<std::uint64_t> g_threadNumbers{0};

// Owns the calling thread's state; its destructor runs at thread exit.
struct ThreadStateHolder {
    ThreadState state;
};

} // namespace

std::mutex& registryMutex()
{
    static auto* mutex = new std::mutex; // never destroyed: threads may exit during static destruction
    return *mutex;
}

std::vector<ThreadState*>& registeredThreads()
{
    static auto* threads = new std::vector<ThreadState*>;
    return *threads;
}

[[gnu::tls_model("initial-exec")]] thread_local ThreadState* t_threadState = nullptr;

ThreadState& makeThreadState()
{
    thread_local ThreadStateHolder holder;
    t_threadState = &holder.state;
    return holder.state;
}

ThreadState::ThreadState()
    : tid(static_cast<long>(gettid())), number(g_threadNumbers.fetch_add(1, std::memory_order_relaxed) + 1)
{
    entries.reserve(64);
    std::lock_guard lock(registryMutex());
    registeredThreads().push_back(this);
}

ThreadState::~ThreadState()
{
    {
        std::lock_guard lock(registryMutex());
        auto& threads = registeredThreads();
        threads.erase(std::remove(threads.begin(), threads.end(), this), threads.end());
    }
    t_threadState = nullptr;
    // Adoptions and pushes left at thread exit: the driver forgets this thread's stack by itself;
    // cuctx drops the handles they kept, which may destroy their contexts.
    std::vector<Context> owners;
    for (StackEntry& e : entries)
        if (e.owner)
            owners.push_back(std::move(e.owner));
    if (!owners.empty())
        logDebug("thread {} exits with {} context(s) still adopted or pushed; releasing them", tid, owners.size());
    entries.clear();
    owners.clear();
    for (SlotBlock* b = firstBlock.next.load(std::memory_order_relaxed); b != nullptr;) {
        SlotBlock* next = b->next.load(std::memory_order_relaxed);
        delete b;
        b = next;
    }
}

Slot& ThreadState::slotFor(ContextState* state)
{
    if (lastSlot != nullptr && lastSlot->state.load(std::memory_order_relaxed) == state) [[likely]]
        return *lastSlot;
    Slot* free = nullptr;
    SlotBlock* last = &firstBlock;
    for (SlotBlock* b = &firstBlock; b != nullptr; b = b->next.load(std::memory_order_relaxed)) {
        for (Slot& slot : b->slots) {
            ContextState* s = slot.state.load(std::memory_order_relaxed);
            if (s == state)
                return *(lastSlot = &slot);
            if (free == nullptr && s == nullptr)
                free = &slot;
            else if (free == nullptr && slot.uses.load(std::memory_order_relaxed) == 0) {
                // A slot of a context this thread no longer uses: reclaim it (only this thread writes
                // `uses`, and a destroyer only ever clears `state`).
                ContextState* expected = s;
                if (slot.state.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel))
                    free = &slot;
            }
        }
        last = b;
    }
    if (free == nullptr) {
        auto* block = new SlotBlock;
        free = &block->slots[0];
        last->next.store(block, std::memory_order_release);
    }
    free->state.store(state, std::memory_order_release);
    return *(lastSlot = free);
}

void ThreadState::beginUse(Slot& slot, ContextState* state)
{
    const std::uint32_t before = slot.uses.load(std::memory_order_relaxed);
    if (state->exclusive() && before == 0) {
        std::uint64_t expected = 0;
        if (!state->exclusiveOwner.compare_exchange_strong(expected, number, std::memory_order_acq_rel)) {
            long ownerTid = 0;
            {
                std::lock_guard lock(registryMutex());
                for (const ThreadState* ts : registeredThreads())
                    if (ts->number == expected)
                        ownerTid = ts->tid;
            }
            throwError(Errc::context_busy, "cuctx::ContextGuard",
                       describeContext(*state) + " is a green context, which may be current on one thread at a "
                                                 "time, and thread " +
                           std::to_string(ownerTid) + " has it entered",
                       "Give each thread its own green context, or leave it on the other thread first");
        }
    }
    slot.uses.store(before + 1, std::memory_order_relaxed);
}

void ThreadState::endUse(Slot& slot, ContextState* state) noexcept
{
    const std::uint32_t after = slot.uses.load(std::memory_order_relaxed) - 1;
    slot.uses.store(after, std::memory_order_release);
    if (after != 0) [[likely]]
        return;
    if (state->exclusive())
        state->exclusiveOwner.store(0, std::memory_order_release);
    lightFence(); // pairs with the heavy fence of the thread that drops the last handle
    if (state->orphaned.load(std::memory_order_relaxed)) [[unlikely]]
        lastUseEnded(state);
}

void learnBase(ThreadState& ts)
{
    CUcontext current = nullptr;
    check(api().cuCtxGetCurrent(&current), "cuCtxGetCurrent");
    ts.base = current;
    ts.baseKnown = true;
}

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#include "context/thread_state.hpp"

#include "context/context_access.hpp"

#include "check/check.hpp"
#include "driver/driver_state.hpp"
#include "driver/fork_state.hpp"
#include "log/log.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

namespace cuctx::detail {
namespace {

std::atomic<std::uint64_t> g_threadSerials{0};

// A thread's state lives on the heap (to keep cuctx's static TLS small) and is freed by a pthread
// key's destructor. glibc runs those after every C++ thread_local destructor of the thread, so that
// thread-locals of the program (a ContextBinding, a guard) may end in any order and still find
// cuctx's state intact. A state made again by a later key destructor is freed in the next round.
pthread_key_t g_stateKey;

void freeThreadState(void* state)
{
    delete static_cast<ThreadState*>(state);
}

// A C++ thread_local made with the thread's first state: its destructor says that the thread's
// thread-locals are being destroyed, among them possibly the driver's own per-thread stack.
constinit thread_local bool t_sentinelMade = false;
struct ExitSentinel {
    ExitSentinel() = default;
    ExitSentinel(const ExitSentinel&) = delete;
    ExitSentinel& operator=(const ExitSentinel&) = delete;
    ~ExitSentinel() { t_threadExiting = true; }
};

} // namespace

constinit thread_local bool t_threadExiting = false;

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

constinit ContextState g_placeholderContext{};
constinit Frame g_bottomFrame{&g_placeholderContext, nullptr, nullptr, FrameKind::push};

constinit thread_local ThreadState* t_threadState = nullptr;
constinit thread_local ThreadRecord t_record{};

// In a child forked after CUDA was initialised: the forking thread's guards must take the slow
// path, which reports the fork, instead of trusting the inherited top. The frames move out of the
// guards' sight but stay linked, so that scopes the parent opened can still unwind in the child.
static void clearTopInChild()
{
    if (initialisingPid() != 0) {
        ThreadRecord& record = t_record;
        record.hidden = record.frame;
        record.frame = &g_bottomFrame;
        record.forked = true; // g_push diverts there too: the slot table is never used in the child
    }
}

std::once_flag g_atforkOnce;

ThreadState& makeThreadState()
{
    std::call_once(g_atforkOnce, [] {
        pthread_atfork(nullptr, nullptr, clearTopInChild);
        if (pthread_key_create(&g_stateKey, freeThreadState) != 0)
            throwError(Errc::invalid_state, "cuctx",
                       "pthread_key_create failed: no key left for cuctx's per-thread state",
                       "The process has used up its pthread keys (PTHREAD_KEYS_MAX)");
    });
    if (!t_sentinelMade) {
        t_sentinelMade = true;
        thread_local ExitSentinel sentinel;
        (void)sentinel;
    }
    auto state = std::make_unique<ThreadState>();
    if (pthread_setspecific(g_stateKey, state.get()) != 0)
        throwError(Errc::invalid_state, "cuctx", "pthread_setspecific failed for cuctx's per-thread state",
                   "Out of memory?");
    t_threadState = state.get();
    return *state.release();
}

ThreadState::ThreadState()
    : tid(static_cast<long>(gettid())), serial(g_threadSerials.fetch_add(1, std::memory_order_relaxed) + 1),
      record(&t_record)
{
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
    // Adoptions and pushes left at thread exit (guards cannot be: they are scoped): the driver forgets
    // this thread's stack by itself; cuctx ends their uses (a green context becomes free for other
    // threads), drops the handles they kept, which may destroy their contexts, and frees their frames.
    std::vector<Context> owners;
    for (Frame* f = topFrame(); f != nullptr;) {
        Frame* below = frameBelow(*f);
        if (ownsHandle(*f))
            owners.push_back(ContextAccess::fromCountedState(f->state));
        if (f->kind != FrameKind::guard) {
            endUse(*f->uses, f->state);
            delete f;
        }
        f = below;
    }
    t_threadState = nullptr;
    ThreadRecord& mine = t_record; // no longer registered: no other thread touches it now
    mine.frame = &g_bottomFrame;
    mine.hidden = &g_bottomFrame;
    mine.forked = false;
    // Without a registered state, no destroyer would see this thread's slots: empty the table, so
    // that a later guard here (a thread-local's destructor) takes the slow path and registers anew.
    for (Slot& slot : mine.slots) {
        slot.state.store(nullptr, std::memory_order_release);
        slot.uses.store(0, std::memory_order_relaxed);
    }
    if (!owners.empty())
        logDebug("thread {} exits with {} context(s) still adopted or pushed; releasing them", tid, owners.size());
    owners.clear();
    for (SlotBlock* b = firstBlock.next.load(std::memory_order_relaxed); b != nullptr;) {
        SlotBlock* next = b->next.load(std::memory_order_relaxed);
        delete b;
        b = next;
    }
}

CUcontext ThreadState::current() const noexcept
{
    const Frame* frame = topFrame();
    return frame != nullptr ? frame->state->handle : base;
}

namespace {

// Takes `slot` for `state` if no context of this thread's is counted there; a slot of a context the
// thread no longer uses is taken too (only this thread writes `uses`, and a destroyer only ever
// clears `state`).
bool claimSlot(Slot& slot, ContextState* state) noexcept
{
    ContextState* held = slot.state.load(std::memory_order_relaxed);
    if (held != nullptr && slot.uses.load(std::memory_order_relaxed) != 0)
        return false;
    if (held != nullptr && !slot.state.compare_exchange_strong(held, nullptr, std::memory_order_acq_rel))
        return held == nullptr && claimSlot(slot, state); // a destroyer cleared it meanwhile
    slot.state.store(state, std::memory_order_release);
    return true;
}

} // namespace

Slot& ThreadState::findSlot(ContextState* state)
{
    // A slot in the blocks that still counts uses of `state` (its table slot was taken when it was
    // entered) stays its slot until those uses end: one slot per context in use.
    Slot* free = nullptr;
    SlotBlock* last = &firstBlock;
    for (SlotBlock* b = &firstBlock; b != nullptr; b = b->next.load(std::memory_order_relaxed)) {
        for (Slot& slot : b->slots) {
            ContextState* s = slot.state.load(std::memory_order_relaxed);
            if (s == state && slot.uses.load(std::memory_order_relaxed) != 0)
                return slot;
            if (s == state)
                slot.state.compare_exchange_strong(s, nullptr, std::memory_order_acq_rel); // moves to the table
            else if (free == nullptr && s == nullptr)
                free = &slot;
        }
        last = b;
    }
    if (!state->isGreen() && claimSlot(record->slots[state->slotIndex], state))
        return record->slots[state->slotIndex];
    if (free == nullptr) {
        // Every block slot holds a context: reclaim one this thread no longer uses, else add a block.
        for (SlotBlock* b = &firstBlock; b != nullptr && free == nullptr; b = b->next.load(std::memory_order_relaxed))
            for (Slot& slot : b->slots)
                if (claimSlot(slot, state)) {
                    free = &slot;
                    break;
                }
        if (free != nullptr)
            return *free;
        auto* block = new SlotBlock;
        free = &block->slots[0];
        last->next.store(block, std::memory_order_release);
    }
    free->state.store(state, std::memory_order_release);
    return *free;
}

void ThreadState::claimGreen(Slot& slot, ContextState* state)
{
    if (slot.uses.load(std::memory_order_relaxed) == 0) {
        std::uint64_t expected = 0;
        if (!state->greenOwner.compare_exchange_strong(expected, serial, std::memory_order_acq_rel)) {
            long ownerTid = 0;
            {
                std::lock_guard lock(registryMutex());
                for (const ThreadState* ts : registeredThreads())
                    if (ts->serial == expected)
                        ownerTid = ts->tid;
            }
            throwError(Errc::context_busy, "cuctx::ContextGuard",
                       describeContext(*state) +
                           " is a green context, which may be current on one thread at a "
                           "time, and thread " +
                           std::to_string(ownerTid) + " has it entered",
                       "Give each thread its own green context, or leave it on the other thread first");
        }
    }
}

void lastUseOnThread(ContextState* state) noexcept
{
    if (state->isGreen())
        state->greenOwner.store(0, std::memory_order_release);
    lightFence(); // pairs with the heavy fence of the thread that drops the last handle
    if (state->orphaned()) [[unlikely]]
        destroyIfUnused(state);
}

void learnBase(ThreadState& ts)
{
    CUcontext current = nullptr;
    check(api().cuCtxGetCurrent(&current), "cuCtxGetCurrent");
    ts.base = current;
    ts.baseKnown = true;
}

} // namespace cuctx::detail

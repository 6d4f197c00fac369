// SPDX-License-Identifier: MIT
#include "context/thread_state.hpp"

#include "context/context_access.hpp"
#include "context/entries.hpp"

#include "check/check.hpp"
#include "driver/driver_state.hpp"
#include "driver/fork_state.hpp"
#include "log/log.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <utility>

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

namespace {

// fork() copies the registry mutex as it is: held by another thread at that moment, it stays locked
// in the child, whose next release of a context (a destructor) would wait for ever. So fork waits for
// it (prepare), and both sides release it after.
void lockRegistryForFork() noexcept
{
    registryMutex().lock();
}

void unlockRegistryAfterFork() noexcept
{
    registryMutex().unlock();
}

} // namespace

std::mutex& registryMutex()
{
    // Never destroyed: threads may exit during static destruction.
    static auto* mutex = [] {
        auto* m = new std::mutex;
        pthread_atfork(lockRegistryForFork, unlockRegistryAfterFork, unlockRegistryAfterFork);
        return m;
    }();
    return *mutex;
}

std::vector<ThreadState*>& registeredThreads()
{
    static auto* threads = new std::vector<ThreadState*>;
    return *threads;
}

std::vector<AbandonedEntry>& abandonedEntries()
{
    static auto* entries = new std::vector<AbandonedEntry>;
    return *entries;
}

constinit ContextState g_placeholderContext{};

constinit thread_local ThreadState* t_threadState = nullptr;
constinit RecordEntry g_offRecord[2]{&g_placeholderContext, nullptr};

// A record with nothing entered and its top off the record (the inline guard goes out of line
// until the thread registers): every slot the placeholder, the end slot null.
template <std::size_t... K>
constexpr ThreadRecord initialRecord(std::index_sequence<K...> /*slots*/)
{
    return ThreadRecord{&g_offRecord[0], {((void)K, &g_placeholderContext)..., nullptr}, 0, false};
}
constinit thread_local ThreadRecord t_record = initialRecord(std::make_index_sequence<kRecordEntries>());

// In a child forked after CUDA was initialised: the forking thread's guards must take the slow
// path, which reports the fork, instead of trusting the inherited top. The entries move out of the
// guards' sight but stay, so that scopes the parent opened can still unwind in the child. A child
// of a forked child inherits them hidden already: the top is off the record there, and the depth
// is the hidden one.
static void clearTopInChild()
{
    if (initialisingPid() != 0 && !t_record.forked) {
        ThreadRecord& record = t_record;
        record.hiddenDepth = depthAt(record, record.top.load(std::memory_order_relaxed));
        record.top.store(&g_offRecord[0], std::memory_order_relaxed);
        record.forked = true;
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
    {
        std::lock_guard lock(registryMutex());
        registeredThreads().push_back(this);
    }
    // Registered first: a thread destroying a context must see this thread before it makes entries.
    if (!record->forked)
        record->top.store(&record->entries[0], std::memory_order_release);
}

ThreadState::~ThreadState()
{
    {
        // Guards' entries still here belong to guards that outlive the thread (its own thread-locals
        // have ended): they keep their contexts in use until those guards are destroyed elsewhere.
        // Moved in the same critical section, so that no thread destroying a context misses them.
        std::lock_guard lock(registryMutex());
        auto& threads = registeredThreads();
        threads.erase(std::remove(threads.begin(), threads.end(), this), threads.end());
        const std::uint32_t depth = recordDepth();
        try {
            for (std::uint32_t k = 1; k <= depth; ++k)
                if (kindOf(k) == StackEntryKind::guard) {
                    abandonedEntries().push_back({&record->entries[k], entryAt(k)});
                    entryAt(k)->leaveFlags.fetch_or(ContextState::kAbandonedGuard, std::memory_order_relaxed);
                }
        } catch (...) {
            // Out of memory: such a guard's context may then be destroyed before the guard ends.
        }
    }
    // Adoptions and pushes left at thread exit (and entries of guards that ended on another thread,
    // which became pushes): the driver forgets this thread's stack by itself; cuctx drops the handles
    // they kept, which may destroy their contexts, and a green context becomes free for other threads.
    ThreadRecord& mine = t_record; // no longer registered: no other thread reads it now
    std::vector<Context> owners;
    std::vector<ContextState*> left;
    const std::uint32_t depth = recordDepth();
    for (std::uint32_t k = depth; k >= 1; --k) {
        ContextState* state = mine.entries[k].load(std::memory_order_relaxed);
        if (kindOf(k) != StackEntryKind::guard)
            owners.push_back(ContextAccess::fromCountedState(state));
        else
            left.push_back(state);
    }
    // A later guard here (a thread-local's destructor) takes the slow path and registers anew.
    mine.top.store(&g_offRecord[0], std::memory_order_relaxed);
    mine.hiddenDepth = 0;
    mine.forked = false;
    t_threadState = nullptr;
    for (std::uint32_t k = 1; k <= depth; ++k) {
        ContextState* state = mine.entries[k].load(std::memory_order_relaxed);
        if (state->isGreen() && state->greenOwner.load(std::memory_order_relaxed) == serial)
            state->greenOwner.store(0, std::memory_order_release);
    }
    std::sort(left.begin(), left.end());
    left.erase(std::unique(left.begin(), left.end()), left.end());
    lightFence(); // pairs with the heavy fence of the thread that drops the last handle
    for (ContextState* state : left)
        if (state->orphaned())
            destroyIfUnused(state);
    if (!owners.empty())
        logDebug("thread {} exits with {} context(s) still adopted or pushed; releasing them", tid, owners.size());
    owners.clear();
}

CUcontext ThreadState::current() const noexcept
{
    const std::uint32_t depth = recordDepth();
    return depth != 0 ? entryAt(depth)->handle : base;
}

bool ThreadState::hasEntry(const ContextState* state) const noexcept
{
    std::uint32_t depth = publishedDepth(*record);
    if (record->forked) // only in a forked child, which has this one thread
        depth = std::max(depth, record->hiddenDepth);
    depth = std::min(depth, kRecordEntries - 1);
    for (std::uint32_t k = 1; k <= depth; ++k)
        if (record->entries[k].load(std::memory_order_acquire) == state)
            return true;
    return false;
}

StackEntryKind ThreadState::kindOf(std::uint32_t k) const noexcept
{
    if ((owned.load(std::memory_order_relaxed) & (1U << k)) == 0)
        return StackEntryKind::guard;
    return k == 1 && adopted ? StackEntryKind::adopted : StackEntryKind::push;
}

bool ThreadState::claimGreen(ContextState* state)
{
    std::uint64_t expected = 0;
    if (state->greenOwner.compare_exchange_strong(expected, serial, std::memory_order_acq_rel))
        return true;
    if (expected == serial)
        return false; // an entry of it here already
    long ownerTid = 0;
    {
        std::lock_guard lock(registryMutex());
        for (const ThreadState* ts : registeredThreads())
            if (ts->serial == expected)
                ownerTid = ts->tid;
    }
    throwError(Errc::context_busy, "cuctx::ContextGuard",
               describeContext(*state) +
                   " is a green context, which may be current on one thread at a time, and thread " +
                   std::to_string(ownerTid) + " has it entered",
               "Give each thread its own green context, or leave it on the other thread first");
}

void leftFlaggedContext(ContextState* state) noexcept
{
    // First, before anything ends: a guard that outlived its thread may just have ended this thread's
    // push or adoption of the context, lying where the guard's entry did (entries.hpp).
    if (ThreadState* ts = t_threadState;
        ts != nullptr && (state->leaveFlags.load(std::memory_order_relaxed) & ContextState::kAbandonedGuard) != 0 &&
        restoreEntryEndedByAbandonedGuard(*ts, state))
        return;
    // Still entered lower on this thread's stack: nothing ends yet.
    if (const ThreadState* ts = t_threadState; ts != nullptr && ts->hasEntry(state))
        return;
    if (state->isGreen()) {
        std::uint64_t mine = t_threadState != nullptr ? t_threadState->serial : 0;
        if (mine != 0)
            state->greenOwner.compare_exchange_strong(mine, 0, std::memory_order_acq_rel);
    }
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

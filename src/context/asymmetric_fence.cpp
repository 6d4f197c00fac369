// SPDX-License-Identifier: MIT
#include "context/asymmetric_fence.hpp"

#include "context/guard_dispatch.hpp"

#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>

namespace cuctx::detail {
namespace {

FenceMode chooseMode() noexcept
{
#ifdef CUCTX_TSAN
    return FenceMode::none;
#else
    const long supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (supported >= 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
        return FenceMode::membarrier;
#if defined(__x86_64__)
    // Containers often filter membarrier. On x86, lowering a page's protection makes the kernel shoot
    // down that page's TLB entries with an interrupt on every CPU running this process, and an
    // interrupt drains the store buffer: the same effect (the technique of .NET's
    // FlushProcessWriteBuffers).
    return FenceMode::mprotect;
#else
    return FenceMode::none;
#endif
#endif
}

[[maybe_unused]] void* dummyPage() noexcept
{
    static void* page = [] {
        void* p = mmap(nullptr, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return static_cast<void*>(nullptr);
        (void)mlock(p, static_cast<std::size_t>(sysconf(_SC_PAGESIZE))); // keep it resident
        return p;
    }();
    return page;
}

} // namespace

// Chosen during static initialisation; an atomic because heavyFence() and tests change it later.
std::atomic<FenceMode> g_fenceMode{chooseMode()};

bool leaveFenceIsCompilerOnly() noexcept
{
    const FenceMode mode = g_fenceMode.load(std::memory_order_relaxed);
#ifdef CUCTX_TSAN
    (void)mode;
    return false; // ThreadSanitizer models neither asymmetric fence
#else
    return mode != FenceMode::none;
#endif
}

void setFenceMode(FenceMode mode) noexcept
{
    g_fenceMode.store(mode, std::memory_order_seq_cst);
    refreshInlineDriver(); // the inline leave path relies on the mode
}
std::atomic<unsigned> g_fenceWord{0};

const char* fenceModeName() noexcept
{
    switch (g_fenceMode.load(std::memory_order_relaxed)) {
    case FenceMode::membarrier: return "membarrier";
    case FenceMode::mprotect: return "mprotect";
    case FenceMode::none: return "seq_cst fences";
    }
    return "?";
}

void heavyFence() noexcept
{
    const FenceMode mode = g_fenceMode.load(std::memory_order_relaxed);
#ifdef CUCTX_TSAN
    (void)mode;
    g_fenceWord.fetch_add(1, std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
    switch (mode) {
    case FenceMode::membarrier: syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0); break;
    case FenceMode::mprotect: {
        static std::mutex mutex; // one page, toggled by one thread at a time
        std::lock_guard lock(mutex);
        auto* page = static_cast<volatile char*>(dummyPage());
        const auto size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        if (page == nullptr || mprotect(const_cast<char*>(page), size, PROT_READ | PROT_WRITE) != 0) {
            setFenceMode(FenceMode::none); // cannot happen in practice; fall back for good
            break;
        }
        *page = 0; // make the page present in this CPU's TLB, so that lowering it needs a shootdown
        (void)mprotect(const_cast<char*>(page), size, PROT_READ);
        break;
    }
    case FenceMode::none: break;
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

} // namespace cuctx::detail

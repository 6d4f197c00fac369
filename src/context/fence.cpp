#include "context/fence.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace cuctx::detail {
namespace {

bool registerMembarrier() noexcept
{
#ifdef CUCTX_TSAN
    return false;
#else
    const long supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return false;
    return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
}

} // namespace

bool g_heavyFenceAvailable = registerMembarrier();
std::atomic<unsigned> g_fenceWord{0};

void heavyFence() noexcept
{
#ifdef CUCTX_TSAN
    g_fenceWord.fetch_add(1, std::memory_order_seq_cst);
#else
    if (g_heavyFenceAvailable)
        syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#include "cuctx/launch.hpp"

#include "cuctx/context_guard.hpp"
#include "cuctx/stream.hpp"

#include "check/check.hpp"
#include "check/device_faults.hpp"
#include "context/context_access.hpp"
#include "context/launch_journal.hpp"
#include "driver/driver_state.hpp"
#include "module/module_state.hpp"

namespace cuctx::detail {
namespace {

std::string dims(const Dim3& d)
{
    std::string text = "(";
    text += std::to_string(d.x);
    text += ", ";
    text += std::to_string(d.y);
    text += ", ";
    text += std::to_string(d.z);
    return text + ")";
}

[[noreturn]] void argumentMismatch(const FunctionData& f, const std::size_t* sizes, std::size_t count)
{
    const std::vector<ParamInfo>& params = *f.parameters;
    std::string detail;
    if (count != params.size()) {
        detail = "kernel '" + f.name + "' takes " + std::to_string(params.size()) + " parameters, " +
                 std::to_string(count) + " arguments were given";
    } else {
        for (std::size_t i = 0; i < count; ++i)
            if (sizes[i] != params[i].bytes) {
                detail = "argument " + std::to_string(i) + " of kernel '" + f.name + "' is " +
                         std::to_string(sizes[i]) + " bytes, the kernel's parameter " + std::to_string(i) + " is " +
                         std::to_string(params[i].bytes) + " bytes (at offset " + std::to_string(params[i].offset) +
                         ")";
                break;
            }
    }
    throwError(Errc::invalid_argument, "cuctx::launch", detail,
               "Pass one argument per kernel parameter, of its exact type (a float literal is 2.0f, not 2.0)",
               moduleSubject(*ContextAccess::state(f.context), f.name));
}

const char* launchHint(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_INVALID_VALUE:
        return "Check the block size against Function::attributes().maxThreadsPerBlock and the dynamic shared "
               "memory against its limit (Function::setMaxDynamicSharedMemory)";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
        return "Too many registers or too much shared memory for this block size: launch smaller blocks";
    case CUDA_ERROR_INVALID_HANDLE: return "The stream belongs to another context than the kernel's";
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
        return "A cooperative grid must fit on the device at once: see Function::maxActiveBlocksPerMultiprocessor";
    default: return "";
    }
}

} // namespace

void launchPacked(const LaunchSite& site, const LaunchConfig& c, void** arguments, const std::size_t* sizes,
                  std::size_t count)
{
    const Function& function = site.function;
    if (!function)
        throwError(Errc::invalid_argument, "cuctx::launch", "the Function is empty",
                   "Get one from Module::function or Library::function");
    const FunctionData& f = *FunctionData::of(function);
    if (f.parameters) {
        const std::vector<ParamInfo>& params = *f.parameters;
        bool same = params.size() == count;
        for (std::size_t i = 0; same && i < count; ++i)
            same = params[i].bytes == sizes[i];
        if (!same) [[unlikely]]
            argumentMismatch(f, sizes, count);
    }
    if (c.stream.nullHandle()) [[unlikely]]
        throwError(Errc::invalid_argument, "cuctx::launch",
                   "the launch's stream is a null handle: an empty Stream (default-constructed or moved from), "
                   "which would have launched kernel '" +
                       f.name + "' on the default stream",
                   "Pass a Stream that exists; for the default stream leave LaunchConfig::stream out or set nullptr",
                   moduleSubject(*ContextAccess::state(f.context), f.name));
    const ContextState& cs = *ContextAccess::state(f.context);
    failIfPoisoned(cs.ordinal, "cuctx::launch", moduleSubject(cs, f.name));
    const DriverApi& d = api();
    ContextGuard guard(f.context); // no driver call when the kernel's context is current
    CUresult r;
    const char* call = "cuLaunchKernel";
    if (c.cluster.x == 0 && !c.cooperative) [[likely]] {
        r = d.cuLaunchKernel(f.function, c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z, c.sharedBytes,
                             c.stream.native(), arguments, nullptr);
    } else {
        call = "cuLaunchKernelEx";
        requireEntry(reinterpret_cast<const void*>(d.cuLaunchKernelEx), "cuLaunchKernelEx");
        CUlaunchAttribute attributes[2] = {};
        unsigned n = 0;
        if (c.cluster.x != 0) {
            attributes[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            attributes[n].value.clusterDim.x = c.cluster.x;
            attributes[n].value.clusterDim.y = c.cluster.y;
            attributes[n].value.clusterDim.z = c.cluster.z;
            ++n;
        }
        if (c.cooperative) {
            attributes[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
            attributes[n].value.cooperative = 1;
            ++n;
        }
        CUlaunchConfig config{};
        config.gridDimX = c.grid.x;
        config.gridDimY = c.grid.y;
        config.gridDimZ = c.grid.z;
        config.blockDimX = c.block.x;
        config.blockDimY = c.block.y;
        config.blockDimZ = c.block.z;
        config.sharedMemBytes = c.sharedBytes;
        config.hStream = c.stream.native();
        config.attrs = attributes;
        config.numAttrs = n;
        r = d.cuLaunchKernelEx(&config, f.function, arguments, nullptr);
    }
    if (r == CUDA_SUCCESS) [[likely]] {
        if (g_journalOn.load(std::memory_order_relaxed) && cs.journal != nullptr) [[likely]]
            recordLaunch(*cs.journal, f.journalName, c, site.where, journalThreadId());
        return;
    }
    throwDriverError(r, call, moduleSubject(*ContextAccess::state(f.context), f.name), SourceLocation::current(),
                     "launching kernel '" + f.name + "' of '" + f.label + "' with grid " + dims(c.grid) + ", block " +
                         dims(c.block) + ", " + std::to_string(c.sharedBytes) + " bytes of dynamic shared memory",
                     launchHint(r));
}

} // namespace cuctx::detail

namespace cuctx {

LaunchStream::LaunchStream(const Stream& stream) noexcept : stream_(stream.native()), nullHandle_(!stream) {}

} // namespace cuctx

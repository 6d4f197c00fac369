// SPDX-License-Identifier: MIT
#include "check/check.hpp"

#include "check/device_faults.hpp"
#include "check/sticky.hpp"
#include "driver/driver_state.hpp"
#include "driver/fork_state.hpp"

#include <cstdio>
#include <string>

namespace cuctx::detail {
namespace {

// What to do, for the results a context library meets most often.
const char* hintFor(CUresult result)
{
    switch (result) {
    case CUDA_ERROR_STUB_LIBRARY:
        return "The CUDA toolkit's stub libcuda.so was loaded instead of the driver: take "
               "/usr/local/cuda/lib64/stubs out of LD_LIBRARY_PATH, or install the NVIDIA driver";
    case CUDA_ERROR_NO_DEVICE:
        return "The driver sees no GPU: check nvidia-smi, and that CUDA_VISIBLE_DEVICES does not hide "
               "every device";
    case CUDA_ERROR_NOT_INITIALIZED:
        return "The driver is not initialised: call cuctx::Driver::load() first; in a forked child, "
               "start the child before CUDA is initialised or exec a fresh program";
    case CUDA_ERROR_INVALID_CONTEXT:
        return "No valid context is current on this thread: enter one with cuctx::ContextGuard";
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return "The context was destroyed while this thread still used it";
    case CUDA_ERROR_INVALID_DEVICE: return "The device ordinal is not one the driver sees (see cuctx-inspect devices)";
    case CUDA_ERROR_OUT_OF_MEMORY: return "The device is out of memory: free memory or use a smaller working set";
    default: return "";
    }
}

// The device of the calling thread's current context, for a sticky fault whose Subject names none.
int currentDeviceOrdinal() noexcept
{
    const DriverApi* d = g_activeApi.load(std::memory_order_acquire);
    CUdevice device = -1;
    if (d == nullptr || d->cuCtxGetDevice == nullptr || d->cuCtxGetDevice(&device) != CUDA_SUCCESS)
        return -1;
    return static_cast<int>(device); // a CUdevice is its ordinal
}

} // namespace

std::string describe(const Subject& subject)
{
    std::string text;
    if (subject.name != nullptr)
        text = subject.name;
    if (subject.contextId != 0 || subject.context != nullptr) {
        if (!text.empty())
            text += " in ";
        if (subject.contextId != 0) {
            text += "context " + std::to_string(subject.contextId);
        } else {
            char handle[32];
            std::snprintf(handle, sizeof handle, "%p", subject.context);
            text += std::string("context ") + handle;
        }
    }
    if (subject.device >= 0) {
        text += text.empty() ? "device " : " on device ";
        text += std::to_string(subject.device);
    }
    return text;
}

void throwDriverError(CUresult result, const char* call, const Subject& subject, SourceLocation where)
{
    throwDriverError(result, call, subject, where, {}, {});
}

void throwDriverError(CUresult result, const char* call, const Subject& subject, SourceLocation where,
                      std::string detail, std::string hint)
{
    ErrorInfo info;
    info.result = static_cast<int>(result);
    info.call = call;
    info.object = describe(subject);
    info.detail = std::move(detail);
    info.hint = hint.empty() ? hintFor(result) : std::move(hint);
    if (isStickyResult(result)) [[unlikely]] {
        // The first sticky fault poisons the device (a later one throws device_poisoned from here).
        const int ordinal = subject.device >= 0 ? subject.device : currentDeviceOrdinal();
        if (ordinal >= 0) {
            const std::vector<std::string> suspects =
                recordFault(ordinal, static_cast<int>(result), call, subject, where);
            info.condition = Errc::device_poisoned;
            if (info.detail.empty())
                info.detail = std::string(resultDescription(static_cast<int>(result)));
            info.detail += "; this sticky fault poisons device " + std::to_string(ordinal) +
                           ": every context of it is unusable for the rest of this process";
            if (!suspects.empty()) {
                info.detail += "; suspects (launches not yet synchronised, oldest first): ";
                for (std::size_t i = 0; i < suspects.size(); ++i)
                    info.detail += (i == 0 ? "" : "; ") + suspects[i];
            }
            info.hint = "The fault happened in a kernel that ran before this call (see the suspects); restart the "
                        "process, and run code that may fault in an isolated worker process (see docs/faults.md)";
            throw Error(std::move(info), where);
        }
    }
    switch (result) {
    case CUDA_ERROR_STUB_LIBRARY: info.condition = Errc::stub_driver; break;
    case CUDA_ERROR_NO_DEVICE: info.condition = Errc::no_device; break;
    case CUDA_ERROR_NOT_INITIALIZED:
        if (forkedAfterInit())
            throwForkedAfterInit(call);
        info.condition = Errc::driver_error;
        break;
    default: info.condition = Errc::driver_error; break;
    }
    throw Error(std::move(info), where);
}

void throwError(Errc condition, std::string call, std::string detail, std::string hint, const Subject& subject,
                SourceLocation where)
{
    ErrorInfo info;
    info.condition = condition;
    info.call = std::move(call);
    info.object = describe(subject);
    info.detail = std::move(detail);
    info.hint = std::move(hint);
    throw Error(std::move(info), where);
}

} // namespace cuctx::detail

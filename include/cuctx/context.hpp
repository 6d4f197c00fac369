// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::Context: shared ownership of a CUDA context.

#include "cuctx/context_options.hpp"
#include "cuctx/device.hpp"
#include "cuctx/export.hpp"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cuctx {

namespace detail {
struct ContextState;
class ContextAccess;
} // namespace detail

class ContextGuard;

/// A created context (Context::create), a retained primary context (Context::primary), a green
/// context (Context::green) or a borrowed one that other code owns (Context::borrow). Copies share one context; the
/// last owner destroys it (or releases its primary retain), but never while a thread has it entered through cuctx: then
/// the destruction waits for that use to end (docs/contexts.md). A copy costs an atomic increment on a line that every
/// owner shares, so hot paths should take `const Context&`.
///
/// \par Threading
/// Thread-safe shared handle: handles of one context may be copied, used and dropped on any threads at
/// once, and one Context object may be read (copied, queried) by several threads at once; assigning to
/// or resetting an object that another thread reads is a data race, as for std::shared_ptr. A green
/// context may be entered (a guard, a binding, or a member below that enters it) on one thread at a
/// time: a second thread gets Errc::context_busy until the first leaves it. An error recorded on the
/// context is reported once, by the next fallible call on whichever thread makes it.
class CUCTX_API Context {
public:
    /// An empty handle.
    Context() noexcept = default;
    /// Another handle of the same context (an atomic increment).
    Context(const Context& other) noexcept;
    /// Takes over `other`'s handle; `other` is left empty.
    Context(Context&& other) noexcept : state_(other.state_) { other.state_ = nullptr; }
    /// Drops this handle (see reset()), then shares `other`'s context.
    Context& operator=(const Context& other) noexcept;
    /// Drops this handle (see reset()), then takes over `other`'s; `other` is left empty.
    Context& operator=(Context&& other) noexcept;
    /// Drops this handle (see reset()). Never throws.
    ~Context()
    {
        if (state_ != nullptr)
            reset();
    }

    /// Creates a context on `device` (cuCtxCreate_v4, or _v2 on drivers before CUDA 12.5). The calling
    /// thread's stack is left as it was: the driver pushes a new context, cuctx pops it again.
    static Context create(const Device& device, const ContextOptions& options = {});
    /// Retains the device's primary context (the one the runtime API uses). Not pushed. Every call
    /// gives the same context, one identity to cuctx: where that context was borrowed first
    /// (Context::borrow of the runtime's current context), the borrowed Context becomes the primary
    /// one (isPrimary(), no longer isBorrowed()) and owns this retain, which its last handle releases.
    static Context primary(const Device& device);
    /// Sets the primary context's flags (cuDevicePrimaryCtxSetFlags), then retains it.
    static Context primary(const Device& device, const ContextOptions& options);
    /// A green context: at least `smCount` SMs of the device (greenPartition(device, {smCount})).
    /// Each call splits the whole device anew, so green contexts made by separate calls may share SMs
    /// (nothing keeps them apart): for contexts that must not overlap, make them
    /// together with greenPartition. It may be current on one thread at a time: a guard on a second
    /// thread fails with Errc::context_busy.
    static Context green(const Device& device, unsigned smCount);
    /// Green contexts that share no SM, one per entry of `smCounts`, in that order: the device's
    /// SMs are split once (cuDevSmResourceSplitByCount, CUDA 12.4) into groups of the requests'
    /// greatest common divisor, which the driver rounds up to its granularity (on compute
    /// capability 9.0, a multiple of 8: {24, 40} gives 24 and 40 SMs, {20} gives 24), and each
    /// partition gets whole groups of that one split. Each count is then checked with
    /// cuGreenCtxGetDevResource; smCount() tells what each got. An empty list, a 0, a sum over the
    /// device's SMs, or requests that the rounding makes too large are an Errc::invalid_argument
    /// error naming the device, the request and what the device has; on any error no green context
    /// is left behind. See docs/contexts.md, "Green contexts".
    static std::vector<Context> greenPartition(const Device& device, const std::vector<unsigned>& smCounts);
    /// A context that other code made (the runtime API, a framework, another library), for cuctx's
    /// guards, registry, modules, streams and launches. cuctx never destroys or releases it: its owner
    /// must keep it alive while any Context handle of it, or anything made in it through cuctx (a
    /// Module, a Stream, a DeviceBuffer), still exists. A handle that cuctx already knows (a context
    /// it created or a primary context it retained) gives that Context, with its ownership, even
    /// where its last handle is gone and a thread still has it entered (the new handle keeps it). The
    /// context is pushed once to learn its device. A green context's handle must not be borrowed
    /// (cuctx could not keep it to one thread at a time).
    static Context borrow(CUcontext handle);

    /// Whether this handle refers to a context (false when default-constructed, moved from or reset).
    explicit operator bool() const noexcept { return state_ != nullptr; }
    /// Drops this handle. The last handle destroys the context (or releases its primary retain)
    /// here, or, while a thread still has it entered, on that thread when its use ends; inside a
    /// stream host callback (cuctx's, or one launched with cuLaunchHostFunc), where the driver refuses
    /// it, later on an ordinary thread. A borrowed context is never destroyed.
    void reset() noexcept;

    /// The context's device.
    Device device() const;
    /// cuCtxGetId: unique for the life of the process (0 where the driver lacks it, before CUDA 12.0).
    std::uint64_t id() const;
    /// Whether it is a device's primary context (Context::primary).
    bool isPrimary() const;
    /// Whether it is a green context (Context::green).
    bool isGreen() const;
    /// The SMs this context's kernels may run on: a green context's share (cuGreenCtxGetDevResource),
    /// else the device's (cuCtxGetDevResource). Needs CUDA 12.4.
    unsigned smCount() const;
    /// Whether cuctx borrowed it (Context::borrow) and did not retain it since (a primary context, by
    /// Context::primary): its owner, not cuctx, destroys it. Like every query
    /// here, it first reports (throws) an error recorded on the context (checkRecordedError).
    bool isBorrowed() const;
    /// cuCtxGetApiVersion.
    unsigned apiVersion() const;
    /// cuCtxGetFlags.
    unsigned flags() const;
    /// cuCtxGetLimit.
    std::size_t limit(CUlimit limit) const;
    /// cuCtxSetLimit: for the whole context, whichever thread sets it.
    void setLimit(CUlimit limit, std::size_t value) const;
    /// The stream priorities the context allows. Lower numbers are higher priorities. A value type.
    struct StreamPriorityRange {
        int least = 0;    ///< the lowest priority (the largest number)
        int greatest = 0; ///< the highest priority (the smallest number)
    };
    /// cuCtxGetStreamPriorityRange.
    StreamPriorityRange streamPriorityRange() const;
    /// cuCtxGetCacheConfig.
    CUfunc_cache cacheConfig() const;
    /// Device memory as this context sees it (cuMemGetInfo).
    Device::MemoryInfo memoryInfo() const;
    /// Waits for all work in the context (cuCtxSynchronize).
    void synchronize() const;

    /// Reports (throws) an error recorded where it could not be thrown, such as a guard that found
    /// the stack changed behind its back as it left. Every fallible call above checks this first.
    /// The error is thrown once, by the first such call on any thread, and then forgotten.
    void checkRecordedError() const;

    /// The threads (kernel thread ids) that have this context entered right now.
    std::vector<long> threadsUsing() const;

    /// The driver's handle, or nullptr for an empty Context. It stays valid while this handle lives.
    CUcontext native() const noexcept;

    /// A green context's driver handle (for cuGreenCtx* calls), nullptr for any other context. It
    /// stays valid while this handle lives.
    CUgreenCtx nativeGreen() const noexcept;

    /// Whether both handles refer to the same context (or both are empty).
    friend bool operator==(const Context& a, const Context& b) noexcept { return a.state_ == b.state_; }

private:
    explicit Context(detail::ContextState* state) noexcept : state_(state) {}
    friend class detail::ContextAccess;
    friend class ContextGuard; // its inline fast path compares states

    detail::ContextState* state_ = nullptr;
};

} // namespace cuctx

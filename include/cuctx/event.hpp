// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::Event: a CUDA event of one context.

#include "cuctx/context.hpp"
#include "cuctx/detail/context_owned.hpp"
#include "cuctx/export.hpp"
#include "cuctx/ipc_handle.hpp"

#include <cuda.h>

namespace cuctx {

class Stream;

namespace detail {
struct CUCTX_API EventTraits {
    using Handle = CUevent;
    static void destroy(const Context& context, CUevent event) noexcept; // cuEventDestroy
};
} // namespace detail

/// How an Event is made.
///
/// \par Threading
/// Thread-compatible value type.
struct EventOptions {
    /// Timing costs a little on every record; leave it off unless elapsedMilliseconds is wanted.
    bool timing = false;
    /// CU_EVENT_BLOCKING_SYNC: synchronize() sleeps instead of spinning.
    bool blockingSync = false;
    /// CU_EVENT_INTERPROCESS, to share the event with another process (ipcHandle). Needs timing
    /// off. Not needed to wait on the event from another context or device of this process.
    bool interprocess = false;
};

/// A CUDA event of one context (cuEventCreate), destroyed in that context when it goes. Move-only
/// RAII; it keeps its context alive. Streams of any context or device may wait on it.
///
/// \par Threading
/// Thread-safe for every const member: recording, waiting and querying from any threads at once
/// (the driver orders them; a record replaces what an earlier one captured). Moving or destroying an
/// event must not overlap with other use of it; it may be destroyed on any thread.
class CUCTX_API Event {
public:
    Event() = default; ///< empty
    /// A new event in `context` (cuEventCreate); an interprocess event with timing is refused.
    explicit Event(const Context& context, const EventOptions& options = {});
    /// Takes over `other`'s event; `other` is left empty.
    Event(Event&& other) noexcept = default;
    /// Destroys this event, then takes over `other`'s; `other` is left empty.
    Event& operator=(Event&& other) noexcept = default;
    ~Event() = default; ///< destroys the event in its context; never throws

    /// Whether it holds an event (false when default-constructed or moved from).
    explicit operator bool() const noexcept { return static_cast<bool>(owned_); }

    /// Captures the work queued on `stream` so far.
    void record(const Stream& stream) const;
    /// Captures all work queued in `context` so far, on every stream (cuCtxRecordEvent, CUDA 12.5+).
    void recordContext(const Context& context) const;
    /// Makes all work queued in `context` from now on wait for this event (cuCtxWaitEvent, 12.5+).
    void waitInContext(const Context& context) const;
    /// Whether the captured work is done.
    bool ready() const;
    /// Waits on this thread until the captured work is done (cuEventSynchronize).
    void synchronize() const;
    /// Milliseconds between two recorded timing events (cuEventElapsedTime).
    static float elapsedMilliseconds(const Event& start, const Event& end);

    /// The handle another process opens with Event::openIpc (the event must be interprocess).
    IpcEventHandle ipcHandle() const;
    /// Opens another process's interprocess event in `context`.
    static Event openIpc(const Context& context, const IpcEventHandle& handle);

    /// The context the event belongs to.
    const Context& context() const;
    /// The driver's handle (nullptr when empty).
    CUevent native() const noexcept { return owned_.get(); }

private:
    void requireEvent(const char* call) const;

    detail::ContextOwned<detail::EventTraits> owned_;
    bool interprocess_ = false;
    bool timing_ = false;
};

} // namespace cuctx

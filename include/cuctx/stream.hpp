// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::Stream: a CUDA stream of one context.

#include "cuctx/context.hpp"
#include "cuctx/detail/context_owned.hpp"
#include "cuctx/export.hpp"

#include <cuda.h>

#include <exception>
#include <functional>
#include <memory>

namespace cuctx {

class Event;

namespace detail {
struct StreamCallbacks;
struct CUCTX_API StreamTraits {
    using Handle = CUstream;
    static void destroy(const Context& context, CUstream stream) noexcept; // cuStreamDestroy
};
} // namespace detail

/// How a Stream is made.
///
/// \par Threading
/// Thread-compatible value type.
struct StreamOptions {
    /// CU_STREAM_NON_BLOCKING: no implicit synchronisation with the context's legacy default stream.
    bool nonBlocking = true;
    /// Within the context's range (Context::streamPriorityRange()): lower numbers run first.
    int priority = 0;
};

/// A CUDA stream of one context (cuStreamCreateWithPriority), destroyed in that context when it goes.
/// Move-only RAII; it keeps its context alive.
///
/// \par Threading
/// Thread-safe for every const member: any threads may enqueue on one stream, wait on it and query
/// it at once (each call enters the stream's context on its own thread; the driver orders the work
/// in the order the calls reach it). An exception a host callback threw is rethrown once, by one
/// synchronize() on whichever thread calls it. Moving or destroying a stream must not overlap with
/// other use of it; it may be destroyed on any thread. The host callbacks themselves: see
/// hostCallback().
class CUCTX_API Stream {
public:
    Stream() = default; ///< empty
    /// A new stream in `context`; a priority outside the context's range is an error naming it. In
    /// a green context it is made with cuGreenCtxStreamCreate (CUDA 12.5), which requires a
    /// non-blocking stream: `options.nonBlocking == false` is then an Errc::invalid_argument error.
    explicit Stream(const Context& context, const StreamOptions& options = {});
    /// Takes over `other`'s stream; `other` is left empty.
    Stream(Stream&& other) noexcept = default;
    /// Destroys this stream, then takes over `other`'s; `other` is left empty.
    Stream& operator=(Stream&& other) noexcept = default;
    /// Destroys the stream in its context (queued work still completes). Never throws.
    ~Stream() = default;

    /// Whether it holds a stream (false when default-constructed or moved from).
    explicit operator bool() const noexcept { return static_cast<bool>(owned_); }

    /// Waits for the stream's work; then rethrows the oldest exception a host callback on it threw
    /// that no synchronize() has rethrown yet (one per call: with two failed callbacks, the next two
    /// calls throw, in order).
    void synchronize() const;
    /// Whether all work queued so far is done (an error of that work throws).
    bool ready() const;
    /// Makes work queued after this wait for `event` (which may belong to any context or device).
    void wait(const Event& event) const;
    /// Runs `callback` on a driver thread once the work queued before it is done. It must not call
    /// CUDA. Every exception it throws is kept and rethrown by a later synchronize(), never lost.
    /// The driver refuses context calls there, so when the callback (or what it captured) drops the
    /// last handle of a context, module, library, stream, event or buffer, cuctx does not destroy it
    /// there: it is cleaned up later on an ordinary thread, by the next cuctx call that takes a
    /// context, by Stream::synchronize, Event::synchronize or Context::synchronize (after the
    /// wait), or at exit. Until then cuctx::liveObjects() still counts it.
    ///
    /// \par Threading
    /// The callback is reentrant as far as cuctx goes: it runs on a driver thread with no lock of
    /// cuctx's held, after the callbacks queued before it on this stream. It may drop cuctx handles and
    /// call what needs no context (liveObjects(), for one); anything that needs a context fails there (the driver
    /// returns CUDA_ERROR_NOT_PERMITTED, and the Error is rethrown by synchronize()).
    void hostCallback(std::function<void()> callback) const;

    /// The stream's priority (cuStreamGetPriority): lower numbers run first.
    int priority() const;
    /// Whether it was made with CU_STREAM_NON_BLOCKING (no implicit synchronisation with the legacy
    /// default stream).
    bool nonBlocking() const;
    /// The context the stream belongs to.
    const Context& context() const;
    /// The device of the stream's context.
    Device device() const;
    /// The driver's handle (nullptr when empty; a launch refuses that rather than use the default stream).
    CUstream native() const noexcept { return owned_.get(); }

private:
    void requireStream(const char* call) const;

    std::shared_ptr<detail::StreamCallbacks> callbacks_; // queued callbacks hold it too
    detail::ContextOwned<detail::StreamTraits> owned_;   // declared last: destroyed first
};

} // namespace cuctx

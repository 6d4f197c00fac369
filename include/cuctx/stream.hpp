// SPDX-License-Identifier: MIT
#pragma once

// cuctx::Stream: a CUDA stream of one context. Move-only RAII; thread-safe for enqueueing (as the
// driver is), but moving or destroying it must not race with its use.

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

struct StreamOptions {
    /// CU_STREAM_NON_BLOCKING: no implicit synchronisation with the context's legacy default stream.
    bool nonBlocking = true;
    /// Within the context's range (Context::streamPriorityRange()): lower numbers run first.
    int priority = 0;
};

class CUCTX_API Stream {
public:
    Stream() = default; ///< empty
    /// A new stream in `context`; a priority outside the context's range is an error naming it.
    explicit Stream(const Context& context, const StreamOptions& options = {});
    Stream(Stream&& other) noexcept = default;
    Stream& operator=(Stream&& other) noexcept = default;
    /// Destroys the stream in its context (queued work still completes). Never throws.
    ~Stream() = default;

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
    void hostCallback(std::function<void()> callback) const;

    int priority() const;
    bool nonBlocking() const;
    const Context& context() const;
    Device device() const;
    CUstream native() const noexcept { return owned_.get(); }

private:
    void requireStream(const char* call) const;

    std::shared_ptr<detail::StreamCallbacks> callbacks_; // queued callbacks hold it too
    detail::ContextOwned<detail::StreamTraits> owned_;   // declared last: destroyed first
};

} // namespace cuctx

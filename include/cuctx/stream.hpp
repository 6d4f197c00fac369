#pragma once

// cuctx::Stream: a CUDA stream of one context. Move-only RAII; thread-safe for enqueueing (as the
// driver is), but moving or destroying it must not race with its use.

#include "cuctx/context.hpp"

#include <cuda.h>

#include <exception>
#include <functional>
#include <memory>

namespace cuctx {

class Event;

namespace detail {
struct StreamCallbacks;
}

struct StreamOptions {
    /// CU_STREAM_NON_BLOCKING: no implicit synchronisation with the context's legacy default stream.
    bool nonBlocking = true;
    /// Within the context's range (Context::streamPriorityRange()): lower numbers run first.
    int priority = 0;
};

class Stream {
public:
    Stream() = default; ///< empty
    /// A new stream in `context`; a priority outside the context's range is an error naming it.
    explicit Stream(const Context& context, const StreamOptions& options = {});
    Stream(Stream&& other) noexcept;
    Stream& operator=(Stream&& other) noexcept;
    /// Destroys the stream in its context (queued work still completes). Never throws.
    ~Stream();

    explicit operator bool() const noexcept { return stream_ != nullptr; }

    /// Waits for the stream's work; rethrows the first exception a host callback on it threw.
    void synchronize() const;
    /// Whether all work queued so far is done (an error of that work throws).
    bool ready() const;
    /// Makes work queued after this wait for `event` (which may belong to any context or device).
    void wait(const Event& event) const;
    /// Runs `callback` on a driver thread once the work queued before it is done. It must not call
    /// CUDA. An exception it throws is kept and rethrown by the next synchronize(), never lost.
    void hostCallback(std::function<void()> callback) const;

    int priority() const;
    bool nonBlocking() const;
    const Context& context() const;
    Device device() const;
    CUstream native() const noexcept { return stream_; }

private:
    void reset() noexcept;
    void requireStream(const char* call) const;

    Context context_;
    CUstream stream_ = nullptr;
    std::shared_ptr<detail::StreamCallbacks> callbacks_; // outlives the stream while callbacks are queued
};

} // namespace cuctx

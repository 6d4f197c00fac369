// SPDX-License-Identifier: MIT
#include "cuctx/stream.hpp"

#include "cuctx/context_guard.hpp"
#include "cuctx/event.hpp"

#include "check/check.hpp"
#include "context/cleanup.hpp"
#include "context/context_access.hpp"
#include "context/deferred_cleanup.hpp"
#include "context/launch_journal.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"
#include "objects/live_objects.hpp"

#include <deque>
#include <mutex>
#include <utility>

namespace cuctx {

namespace detail {

// What a stream's host callbacks share with it: the exceptions they threw and synchronize() has
// not rethrown yet, oldest first. Held by every queued callback, so it outlives a stream destroyed
// while callbacks are pending.
struct StreamCallbacks {
    std::mutex mutex;
    std::deque<std::exception_ptr> failed;
};

namespace {

struct CallbackPayload {
    std::function<void()> callback;
    std::shared_ptr<StreamCallbacks> owner;
};

void CUDA_CB runCallback(void* data) noexcept
{
    // First: the scope covers destroying what the callback captured, whose cleanup is deferred.
    const HostCallbackScope inCallback;
    std::unique_ptr<CallbackPayload> payload(static_cast<CallbackPayload*>(data));
    try {
        payload->callback();
    } catch (...) {
        try {
            std::lock_guard lock(payload->owner->mutex);
            payload->owner->failed.push_back(std::current_exception());
        } catch (...) {
            logError("a host callback's exception could not be kept (out of memory)");
        }
    }
}

} // namespace

void StreamTraits::destroy(const Context& context, CUstream stream) noexcept
{
    ContextState* cs = ContextAccess::state(context);
    cleanupInContext(*cs, [cs, stream] {
        if (!inContextForCleanup(*cs, "cuStreamDestroy",
                                 [stream](const DriverApi& d) { return d.cuStreamDestroy(stream); }))
            return false;
        g_liveStreams.fetch_sub(1, std::memory_order_relaxed);
        return true;
    });
}

} // namespace detail

Stream::Stream(const Context& context, const StreamOptions& options)
    : callbacks_(std::make_shared<detail::StreamCallbacks>())
{
    detail::ContextState& cs = detail::checkedState(context, "cuctx::Stream");
    const Context::StreamPriorityRange range = context.streamPriorityRange();
    if (options.priority > range.least || options.priority < range.greatest)
        detail::throwError(
            Errc::invalid_argument, "cuctx::Stream",
            "priority " + std::to_string(options.priority) + " is outside this context's range, " +
                std::to_string(range.least) + " (lowest) to " + std::to_string(range.greatest) + " (highest)",
            "Use Context::streamPriorityRange(): lower numbers are higher priorities", detail::subjectOf(cs));
    CUstream stream = nullptr;
    if (cs.kind == detail::ContextKind::green) {
        // A green context's streams come from cuGreenCtxStreamCreate, which needs no current context
        // and accepts only non-blocking streams.
        if (!options.nonBlocking)
            detail::throwError(Errc::invalid_argument, "cuctx::Stream",
                               "a stream of a green context must be non-blocking (cuGreenCtxStreamCreate "
                               "requires CU_STREAM_NON_BLOCKING)",
                               "Leave StreamOptions::nonBlocking at true", detail::subjectOf(cs));
        const detail::DriverApi& d = detail::api();
        detail::requireEntry(reinterpret_cast<const void*>(d.cuGreenCtxStreamCreate), "cuGreenCtxStreamCreate");
        detail::check(d.cuGreenCtxStreamCreate(&stream, cs.green, CU_STREAM_NON_BLOCKING, options.priority),
                      "cuGreenCtxStreamCreate", detail::subjectOf(cs));
    } else {
        ContextGuard guard(context);
        detail::check(detail::api().cuStreamCreateWithPriority(
                          &stream, options.nonBlocking ? CU_STREAM_NON_BLOCKING : 0, options.priority),
                      "cuStreamCreateWithPriority", detail::subjectOf(cs));
    }
    owned_ = detail::ContextOwned<detail::StreamTraits>(context, stream);
    detail::g_liveStreams.fetch_add(1, std::memory_order_relaxed);
}

void Stream::requireStream(const char* call) const
{
    if (owned_.get() == nullptr)
        detail::throwError(Errc::invalid_argument, call, "the Stream is empty (default-constructed or moved from)",
                           "Create one: cuctx::Stream(context)");
}

void Stream::synchronize() const
{
    requireStream("cuctx::Stream::synchronize");
    ContextGuard guard(owned_.context());
    detail::ContextState& cs = *detail::ContextAccess::state(owned_.context());
    const std::uint64_t mark = detail::journalMark(cs);
    detail::check(detail::api().cuStreamSynchronize(owned_.get()), "cuStreamSynchronize", detail::subjectOf(cs));
    detail::journalStreamSynced(cs, owned_.get(), mark); // its launches before it are no suspects any more
    detail::runDeferredCleanup();                        // what the callbacks that just ended dropped
    std::exception_ptr failed;
    {
        std::lock_guard lock(callbacks_->mutex);
        if (!callbacks_->failed.empty()) {
            failed = std::move(callbacks_->failed.front());
            callbacks_->failed.pop_front();
        }
    }
    if (failed)
        std::rethrow_exception(failed);
}

bool Stream::ready() const
{
    requireStream("cuctx::Stream::ready");
    ContextGuard guard(owned_.context());
    const CUresult r = detail::api().cuStreamQuery(owned_.get());
    if (r == CUDA_ERROR_NOT_READY)
        return false;
    detail::check(r, "cuStreamQuery", detail::subjectOf(*detail::ContextAccess::state(owned_.context())));
    return true;
}

void Stream::wait(const Event& event) const
{
    requireStream("cuctx::Stream::wait");
    if (!event)
        detail::throwError(Errc::invalid_argument, "cuctx::Stream::wait", "the Event is empty");
    ContextGuard guard(owned_.context());
    detail::check(detail::api().cuStreamWaitEvent(owned_.get(), event.native(), 0), "cuStreamWaitEvent",
                  detail::subjectOf(*detail::ContextAccess::state(owned_.context())));
}

void Stream::hostCallback(std::function<void()> callback) const
{
    requireStream("cuctx::Stream::hostCallback");
    auto payload = std::make_unique<detail::CallbackPayload>(detail::CallbackPayload{std::move(callback), callbacks_});
    ContextGuard guard(owned_.context());
    detail::check(detail::api().cuLaunchHostFunc(owned_.get(), detail::runCallback, payload.get()), "cuLaunchHostFunc",
                  detail::subjectOf(*detail::ContextAccess::state(owned_.context())));
    (void)payload.release(); // the callback owns it now
}

int Stream::priority() const
{
    requireStream("cuctx::Stream::priority");
    int p = 0;
    detail::check(detail::api().cuStreamGetPriority(owned_.get(), &p), "cuStreamGetPriority");
    return p;
}

bool Stream::nonBlocking() const
{
    requireStream("cuctx::Stream::nonBlocking");
    unsigned flags = 0;
    detail::check(detail::api().cuStreamGetFlags(owned_.get(), &flags), "cuStreamGetFlags");
    return (flags & CU_STREAM_NON_BLOCKING) != 0;
}

const Context& Stream::context() const
{
    requireStream("cuctx::Stream::context");
    return owned_.context();
}

Device Stream::device() const
{
    return context().device();
}

} // namespace cuctx

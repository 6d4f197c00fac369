#include "cuctx/stream.hpp"

#include "cuctx/context_guard.hpp"
#include "cuctx/event.hpp"

#include "context/cleanup.hpp"
#include "context/context_access.hpp"
#include "driver/check.hpp"
#include "driver/driver_state.hpp"
#include "live_counters.hpp"
#include "log.hpp"

#include <mutex>
#include <utility>

namespace cuctx {

namespace detail {

// What a stream's host callbacks share with it: the first exception one threw. Held by every
// queued callback, so it outlives a stream destroyed while callbacks are pending.
struct StreamCallbacks {
    std::mutex mutex;
    std::exception_ptr first;
    long failures = 0;
};

namespace {

struct CallbackPayload {
    std::function<void()> callback;
    std::shared_ptr<StreamCallbacks> owner;
};

void CUDA_CB runCallback(void* data) noexcept
{
    std::unique_ptr<CallbackPayload> payload(static_cast<CallbackPayload*>(data));
    try {
        payload->callback();
    } catch (...) {
        std::lock_guard lock(payload->owner->mutex);
        if (!payload->owner->first)
            payload->owner->first = std::current_exception();
        ++payload->owner->failures;
    }
}

} // namespace
} // namespace detail

Stream::Stream(const Context& context, const StreamOptions& options)
    : context_(context), callbacks_(std::make_shared<detail::StreamCallbacks>())
{
    detail::ContextState& cs = detail::checkedState(context, "cuctx::Stream");
    const Context::StreamPriorityRange range = context.streamPriorityRange();
    if (options.priority > range.least || options.priority < range.greatest)
        detail::throwError(Errc::invalid_argument, "cuctx::Stream",
                           "priority " + std::to_string(options.priority) + " is outside this context's range, " +
                               std::to_string(range.least) + " (lowest) to " + std::to_string(range.greatest) +
                               " (highest)",
                           "Use Context::streamPriorityRange(): lower numbers are higher priorities",
                           detail::subjectOf(cs));
    ContextGuard guard(context);
    detail::check(detail::api().cuStreamCreateWithPriority(&stream_, options.nonBlocking ? CU_STREAM_NON_BLOCKING : 0,
                                                          options.priority),
                  "cuStreamCreateWithPriority", detail::subjectOf(cs));
    detail::g_liveStreams.fetch_add(1, std::memory_order_relaxed);
}

Stream::Stream(Stream&& other) noexcept
    : context_(std::move(other.context_)), stream_(other.stream_), callbacks_(std::move(other.callbacks_))
{
    other.stream_ = nullptr;
}

Stream& Stream::operator=(Stream&& other) noexcept
{
    if (this != &other) {
        reset();
        context_ = std::move(other.context_);
        stream_ = other.stream_;
        callbacks_ = std::move(other.callbacks_);
        other.stream_ = nullptr;
    }
    return *this;
}

Stream::~Stream()
{
    reset();
}

void Stream::reset() noexcept
{
    if (stream_ != nullptr) {
        CUstream s = stream_;
        detail::inContextForCleanup(*detail::ContextAccess::state(context_), "cuStreamDestroy",
                                    [s](const detail::DriverApi& d) { return d.cuStreamDestroy(s); });
        detail::g_liveStreams.fetch_sub(1, std::memory_order_relaxed);
        stream_ = nullptr;
    }
    callbacks_.reset();
    context_.reset();
}

void Stream::requireStream(const char* call) const
{
    if (stream_ == nullptr)
        detail::throwError(Errc::invalid_argument, call, "the Stream is empty (default-constructed or moved from)",
                           "Create one: cuctx::Stream(context)");
}

void Stream::synchronize() const
{
    requireStream("cuctx::Stream::synchronize");
    ContextGuard guard(context_);
    detail::check(detail::api().cuStreamSynchronize(stream_), "cuStreamSynchronize",
                  detail::subjectOf(*detail::ContextAccess::state(context_)));
    std::exception_ptr failed;
    {
        std::lock_guard lock(callbacks_->mutex);
        failed = std::exchange(callbacks_->first, nullptr);
    }
    if (failed)
        std::rethrow_exception(failed);
}

bool Stream::ready() const
{
    requireStream("cuctx::Stream::ready");
    ContextGuard guard(context_);
    const CUresult r = detail::api().cuStreamQuery(stream_);
    if (r == CUDA_ERROR_NOT_READY)
        return false;
    detail::check(r, "cuStreamQuery", detail::subjectOf(*detail::ContextAccess::state(context_)));
    return true;
}

void Stream::wait(const Event& event) const
{
    requireStream("cuctx::Stream::wait");
    if (!event)
        detail::throwError(Errc::invalid_argument, "cuctx::Stream::wait", "the Event is empty");
    ContextGuard guard(context_);
    detail::check(detail::api().cuStreamWaitEvent(stream_, event.native(), 0), "cuStreamWaitEvent",
                  detail::subjectOf(*detail::ContextAccess::state(context_)));
}

void Stream::hostCallback(std::function<void()> callback) const
{
    requireStream("cuctx::Stream::hostCallback");
    auto payload = std::make_unique<detail::CallbackPayload>(detail::CallbackPayload{std::move(callback), callbacks_});
    ContextGuard guard(context_);
    detail::check(detail::api().cuLaunchHostFunc(stream_, detail::runCallback, payload.get()), "cuLaunchHostFunc",
                  detail::subjectOf(*detail::ContextAccess::state(context_)));
    (void)payload.release(); // the callback owns it now
}

int Stream::priority() const
{
    requireStream("cuctx::Stream::priority");
    int p = 0;
    detail::check(detail::api().cuStreamGetPriority(stream_, &p), "cuStreamGetPriority");
    return p;
}

bool Stream::nonBlocking() const
{
    requireStream("cuctx::Stream::nonBlocking");
    unsigned flags = 0;
    detail::check(detail::api().cuStreamGetFlags(stream_, &flags), "cuStreamGetFlags");
    return (flags & CU_STREAM_NON_BLOCKING) != 0;
}

const Context& Stream::context() const
{
    requireStream("cuctx::Stream::context");
    return context_;
}

Device Stream::device() const
{
    return context().device();
}

} // namespace cuctx

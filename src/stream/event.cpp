// SPDX-License-Identifier: MIT
#include "cuctx/event.hpp"

#include "cuctx/context_guard.hpp"
#include "cuctx/stream.hpp"

#include "check/check.hpp"
#include "context/cleanup.hpp"
#include "context/context_access.hpp"
#include "context/deferred_cleanup.hpp"
#include "driver/driver_state.hpp"
#include "objects/live_objects.hpp"

#include <cstring>

namespace cuctx {

namespace detail {

void EventTraits::destroy(const Context& context, CUevent event) noexcept
{
    ContextState* cs = ContextAccess::state(context);
    cleanupInContext(*cs, [cs, event] {
        if (!inContextForCleanup(*cs, "cuEventDestroy",
                                 [event](const DriverApi& d) { return d.cuEventDestroy(event); }))
            return false;
        g_liveEvents.fetch_sub(1, std::memory_order_relaxed);
        return true;
    });
}

} // namespace detail

Event::Event(const Context& context, const EventOptions& options)
    : interprocess_(options.interprocess), timing_(options.timing)
{
    detail::ContextState& cs = detail::checkedState(context, "cuctx::Event");
    if (options.interprocess && options.timing)
        detail::throwError(Errc::invalid_argument, "cuctx::Event",
                           "an interprocess event cannot record timing (the driver requires CU_EVENT_DISABLE_TIMING "
                           "with CU_EVENT_INTERPROCESS)",
                           "Set EventOptions::timing = false, or use a second, local event for timing",
                           detail::subjectOf(cs));
    unsigned flags = 0;
    flags |= options.timing ? 0u : static_cast<unsigned>(CU_EVENT_DISABLE_TIMING);
    flags |= options.blockingSync ? static_cast<unsigned>(CU_EVENT_BLOCKING_SYNC) : 0u;
    flags |= options.interprocess ? static_cast<unsigned>(CU_EVENT_INTERPROCESS) : 0u;
    ContextGuard guard(context);
    CUevent event = nullptr;
    detail::check(detail::api().cuEventCreate(&event, flags), "cuEventCreate", detail::subjectOf(cs));
    owned_ = detail::ContextOwned<detail::EventTraits>(context, event);
    detail::g_liveEvents.fetch_add(1, std::memory_order_relaxed);
}

void Event::requireEvent(const char* call) const
{
    if (owned_.get() == nullptr)
        detail::throwError(Errc::invalid_argument, call, "the Event is empty (default-constructed or moved from)",
                           "Create one: cuctx::Event(context)");
}

void Event::record(const Stream& stream) const
{
    requireEvent("cuctx::Event::record");
    if (!stream)
        detail::throwError(Errc::invalid_argument, "cuctx::Event::record", "the Stream is empty");
    ContextGuard guard(stream.context());
    const CUresult r = detail::api().cuEventRecord(owned_.get(), stream.native());
    if (r != CUDA_SUCCESS)
        detail::throwDriverError(
            r, "cuEventRecord", detail::subjectOf(*detail::ContextAccess::state(stream.context())),
            SourceLocation::current(),
            "recording an event of " + detail::describeContext(*detail::ContextAccess::state(owned_.context())) +
                " on a stream of " + detail::describeContext(*detail::ContextAccess::state(stream.context())),
            "An event is recorded on a stream of its own context; other contexts wait on it "
            "with Stream::wait");
}

void Event::recordContext(const Context& context) const
{
    requireEvent("cuctx::Event::recordContext");
    const detail::DriverApi& d = detail::api();
    detail::requireEntry(reinterpret_cast<const void*>(d.cuCtxRecordEvent), "cuCtxRecordEvent");
    detail::ContextState& cs = detail::checkedState(context, "cuctx::Event::recordContext");
    detail::check(d.cuCtxRecordEvent(cs.handle, owned_.get()), "cuCtxRecordEvent", detail::subjectOf(cs));
}

void Event::waitInContext(const Context& context) const
{
    requireEvent("cuctx::Event::waitInContext");
    const detail::DriverApi& d = detail::api();
    detail::requireEntry(reinterpret_cast<const void*>(d.cuCtxWaitEvent), "cuCtxWaitEvent");
    detail::ContextState& cs = detail::checkedState(context, "cuctx::Event::waitInContext");
    detail::check(d.cuCtxWaitEvent(cs.handle, owned_.get()), "cuCtxWaitEvent", detail::subjectOf(cs));
}

bool Event::ready() const
{
    requireEvent("cuctx::Event::ready");
    ContextGuard guard(owned_.context());
    const CUresult r = detail::api().cuEventQuery(owned_.get());
    if (r == CUDA_ERROR_NOT_READY)
        return false;
    detail::check(r, "cuEventQuery", detail::subjectOf(*detail::ContextAccess::state(owned_.context())));
    return true;
}

void Event::synchronize() const
{
    requireEvent("cuctx::Event::synchronize");
    ContextGuard guard(owned_.context());
    detail::check(detail::api().cuEventSynchronize(owned_.get()), "cuEventSynchronize",
                  detail::subjectOf(*detail::ContextAccess::state(owned_.context())));
    detail::runDeferredCleanup(); // what the host callbacks that just ended dropped
}

float Event::elapsedMilliseconds(const Event& start, const Event& end)
{
    start.requireEvent("cuctx::Event::elapsedMilliseconds");
    end.requireEvent("cuctx::Event::elapsedMilliseconds");
    if (!start.timing_ || !end.timing_)
        detail::throwError(Errc::invalid_argument, "cuctx::Event::elapsedMilliseconds",
                           "both events need timing (EventOptions::timing = true)");
    const detail::DriverApi& d = detail::api();
    const auto elapsed = d.cuEventElapsedTime_v2 != nullptr ? d.cuEventElapsedTime_v2 : d.cuEventElapsedTime_v1;
    detail::requireEntry(reinterpret_cast<const void*>(elapsed), "cuEventElapsedTime");
    float ms = 0;
    ContextGuard guard(start.owned_.context());
    detail::check(elapsed(&ms, start.owned_.get(), end.owned_.get()), "cuEventElapsedTime",
                  detail::subjectOf(*detail::ContextAccess::state(start.owned_.context())));
    return ms;
}

IpcEventHandle Event::ipcHandle() const
{
    requireEvent("cuctx::Event::ipcHandle");
    if (!interprocess_)
        detail::throwError(Errc::invalid_argument, "cuctx::Event::ipcHandle", "the event was not created interprocess",
                           "Create it with EventOptions::interprocess = true (and timing off)");
    CUipcEventHandle h{};
    ContextGuard guard(owned_.context());
    detail::check(detail::api().cuIpcGetEventHandle(&h, owned_.get()), "cuIpcGetEventHandle",
                  detail::subjectOf(*detail::ContextAccess::state(owned_.context())));
    IpcEventHandle out;
    static_assert(sizeof h.reserved == sizeof out.bytes);
    std::memcpy(out.bytes.data(), h.reserved, sizeof h.reserved);
    return out;
}

Event Event::openIpc(const Context& context, const IpcEventHandle& handle)
{
    detail::ContextState& cs = detail::checkedState(context, "cuctx::Event::openIpc");
    CUipcEventHandle h{};
    std::memcpy(h.reserved, handle.bytes.data(), sizeof h.reserved);
    Event e;
    ContextGuard guard(context);
    CUevent event = nullptr;
    detail::check(detail::api().cuIpcOpenEventHandle(&event, h), "cuIpcOpenEventHandle", detail::subjectOf(cs));
    e.owned_ = detail::ContextOwned<detail::EventTraits>(context, event);
    detail::g_liveEvents.fetch_add(1, std::memory_order_relaxed);
    e.interprocess_ = true;
    return e;
}

const Context& Event::context() const
{
    requireEvent("cuctx::Event::context");
    return owned_.context();
}

} // namespace cuctx

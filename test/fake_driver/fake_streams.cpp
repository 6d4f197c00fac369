// SPDX-License-Identifier: MIT
// The fake driver's streams, events, asynchronous copies, peers and IPC handles. Work is done at
// once, in order, when it is queued (there is no device), so a stream is always idle and an event
// is complete once recorded; what is modelled is the bookkeeping cuctx must get right: which
// context each object belongs to, destruction, the flag rules (interprocess needs timing off), and
// host callbacks, which run in order on a thread of their own, where every context call is refused
// (CUDA_ERROR_NOT_PERMITTED, as measured on the H200); synchronising waits for them.

#include "fake_driver.hpp"
#include "fake_internal.hpp"

#include <cuda.h>

#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

using namespace fake;

namespace {

struct FakeStream {
    FakeContext* context;
    unsigned flags;
    int priority;
};

struct FakeEvent {
    FakeContext* context;
    unsigned flags;
    bool recorded = false;
    float stamp = 0;
};

struct Streams {
    std::mutex mutex;
    std::set<FakeStream*> streams;
    std::set<FakeEvent*> events;
    float clock = 0;
};

Streams& streams()
{
    static auto* s = new Streams;
    return *s;
}

// The host-callback thread: started at the first callback (again in a forked child), never joined.
struct Callbacks {
    struct Item {
        const void* stream;
        CUhostFn fn;
        void* data;
    };
    std::mutex mutex;
    std::condition_variable queued;
    std::condition_variable ran;
    std::deque<Item> items;
    std::map<const void*, long> pending; // per stream: queued or running
    long enqueued = 0;
    long finished = 0;
    pid_t pid = 0;
};

thread_local bool t_callbackThread = false;

Callbacks& callbacks()
{
    static auto* c = new Callbacks; // immortal: its thread runs until the process ends
    return *c;
}

void serveCallbacks(Callbacks* c)
{
    t_callbackThread = true;
    std::unique_lock lock(c->mutex);
    for (;;) {
        c->queued.wait(lock, [c] { return !c->items.empty(); });
        const Callbacks::Item item = c->items.front();
        c->items.pop_front();
        lock.unlock();
        item.fn(item.data);
        lock.lock();
        if (--c->pending[item.stream] == 0)
            c->pending.erase(item.stream);
        ++c->finished;
        c->ran.notify_all();
    }
}

void queueCallback(const void* stream, CUhostFn fn, void* data)
{
    Callbacks& c = callbacks();
    std::lock_guard lock(c.mutex);
    if (c.pid != getpid()) { // the first callback, or the first in a forked child (threads do not fork)
        c.pid = getpid();
        c.items.clear();
        c.pending.clear();
        c.enqueued = c.finished = 0;
        std::thread(serveCallbacks, &c).detach();
    }
    c.items.push_back({stream, fn, data});
    ++c.pending[stream];
    ++c.enqueued;
    c.queued.notify_one();
}

bool callbacksPending(const void* stream)
{
    Callbacks& c = callbacks();
    std::lock_guard lock(c.mutex);
    return c.pid == getpid() && c.pending.count(stream) != 0;
}

bool liveStream(CUstream s)
{
    if (s == nullptr)
        return true; // the default stream
    Streams& st = streams();
    std::lock_guard lock(st.mutex);
    return st.streams.count(reinterpret_cast<FakeStream*>(s)) != 0;
}

FakeEvent* liveEvent(CUevent e)
{
    Streams& st = streams();
    std::lock_guard lock(st.mutex);
    auto* ev = reinterpret_cast<FakeEvent*>(e);
    return st.events.count(ev) != 0 ? ev : nullptr;
}

} // namespace

CUstream fake::newStream(FakeContext* c, unsigned flags, int priority)
{
    if (priority > 0 || priority < -5)
        priority = priority > 0 ? 0 : -5; // the driver clamps to the range
    auto* s = new FakeStream{c, flags, priority};
    Streams& st = streams();
    std::lock_guard lock(st.mutex);
    st.streams.insert(s);
    return reinterpret_cast<CUstream>(s);
}

FakeContext* fake::streamContext(CUstream stream)
{
    Streams& st = streams();
    std::lock_guard lock(st.mutex);
    auto* fs = reinterpret_cast<FakeStream*>(stream);
    return st.streams.count(fs) != 0 ? fs->context : nullptr;
}

namespace {

CUresult CUDAAPI fakeStreamCreateWithPriority(CUstream* out, unsigned flags, int priority)
{
    FAKE_ENTER("cuStreamCreateWithPriority");
    FakeContext* c = nullptr;
    if (CUresult r = currentForWork(&c); r != CUDA_SUCCESS)
        return r;
    *out = newStream(c, flags, priority);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeStreamDestroy(CUstream s)
{
    FAKE_ENTER("cuStreamDestroy");
    Streams& st = streams();
    std::lock_guard lock(st.mutex);
    auto* fs = reinterpret_cast<FakeStream*>(s);
    if (st.streams.erase(fs) == 0)
        return CUDA_ERROR_INVALID_HANDLE;
    delete fs;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeStreamSynchronize(CUstream s)
{
    FAKE_ENTER("cuStreamSynchronize");
    if (!liveStream(s))
        return CUDA_ERROR_INVALID_HANDLE;
    waitForCallbacks(s == nullptr ? nullptr : s);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeStreamQuery(CUstream s)
{
    FAKE_ENTER("cuStreamQuery");
    if (!liveStream(s))
        return CUDA_ERROR_INVALID_HANDLE;
    return callbacksPending(s) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult CUDAAPI fakeStreamWaitEvent(CUstream s, CUevent e, unsigned)
{
    FAKE_ENTER("cuStreamWaitEvent");
    if (!liveStream(s) || liveEvent(e) == nullptr)
        return CUDA_ERROR_INVALID_HANDLE; // an event of any context is fine, as in the driver
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeStreamGetPriority(CUstream s, int* priority)
{
    FAKE_ENTER("cuStreamGetPriority");
    if (s == nullptr || !liveStream(s))
        return CUDA_ERROR_INVALID_HANDLE;
    *priority = reinterpret_cast<FakeStream*>(s)->priority;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeStreamGetFlags(CUstream s, unsigned* flags)
{
    FAKE_ENTER("cuStreamGetFlags");
    if (s == nullptr || !liveStream(s))
        return CUDA_ERROR_INVALID_HANDLE;
    *flags = reinterpret_cast<FakeStream*>(s)->flags;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeLaunchHostFunc(CUstream s, CUhostFn fn, void* data)
{
    FAKE_ENTER("cuLaunchHostFunc");
    if (!liveStream(s) || fn == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    queueCallback(s, fn, data); // the work before it is done already
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeEventCreate(CUevent* out, unsigned flags)
{
    FAKE_ENTER("cuEventCreate");
    FakeContext* c = nullptr;
    if (CUresult r = currentForWork(&c); r != CUDA_SUCCESS)
        return r;
    if ((flags & CU_EVENT_INTERPROCESS) != 0 && (flags & CU_EVENT_DISABLE_TIMING) == 0)
        return CUDA_ERROR_INVALID_VALUE; // driver-facts.md
    auto* e = new FakeEvent{c, flags};
    Streams& st = streams();
    std::lock_guard lock(st.mutex);
    st.events.insert(e);
    *out = reinterpret_cast<CUevent>(e);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeEventDestroy(CUevent e)
{
    FAKE_ENTER("cuEventDestroy");
    Streams& st = streams();
    std::lock_guard lock(st.mutex);
    auto* ev = reinterpret_cast<FakeEvent*>(e);
    if (st.events.erase(ev) == 0)
        return CUDA_ERROR_INVALID_HANDLE;
    delete ev;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeEventRecord(CUevent e, CUstream s)
{
    FAKE_ENTER("cuEventRecord");
    FakeEvent* ev = liveEvent(e);
    if (ev == nullptr || !liveStream(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (s != nullptr && reinterpret_cast<FakeStream*>(s)->context != ev->context)
        return CUDA_ERROR_INVALID_HANDLE; // recorded on a stream of another context
    Streams& st = streams();
    std::lock_guard lock(st.mutex);
    ev->recorded = true;
    ev->stamp = st.clock += 0.5f;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeEventQuery(CUevent e)
{
    FAKE_ENTER("cuEventQuery");
    return liveEvent(e) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI fakeEventSynchronize(CUevent e)
{
    FAKE_ENTER("cuEventSynchronize");
    if (liveEvent(e) == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    waitForCallbacks(nullptr); // (events do not record which callbacks came before them)
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeEventElapsedTime(float* ms, CUevent a, CUevent b)
{
    FAKE_ENTER("cuEventElapsedTime");
    FakeEvent* s = liveEvent(a);
    FakeEvent* e = liveEvent(b);
    if (s == nullptr || e == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((s->flags & CU_EVENT_DISABLE_TIMING) != 0 || (e->flags & CU_EVENT_DISABLE_TIMING) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!s->recorded || !e->recorded)
        return CUDA_ERROR_NOT_READY;
    *ms = e->stamp - s->stamp;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxRecordEvent(CUcontext, CUevent e)
{
    FAKE_ENTER("cuCtxRecordEvent");
    FakeEvent* ev = liveEvent(e);
    if (ev == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    ev->recorded = true;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxWaitEvent(CUcontext, CUevent e)
{
    FAKE_ENTER("cuCtxWaitEvent");
    return liveEvent(e) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI fakeMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s)
{
    FAKE_ENTER("cuMemcpyDtoDAsync");
    if (!liveStream(s))
        return CUDA_ERROR_INVALID_HANDLE;
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    FAKE_ENTER("cuMemcpyDtoD");
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream s)
{
    FAKE_ENTER("cuMemcpyHtoDAsync");
    if (!liveStream(s))
        return CUDA_ERROR_INVALID_HANDLE;
    std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream s)
{
    FAKE_ENTER("cuMemcpyDtoHAsync");
    if (!liveStream(s))
        return CUDA_ERROR_INVALID_HANDLE;
    std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeMemcpyPeerAsync(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t bytes,
                                     CUstream s)
{
    FAKE_ENTER("cuMemcpyPeerAsync");
    if (dstCtx == nullptr || srcCtx == nullptr || !liveStream(s))
        return CUDA_ERROR_INVALID_VALUE;
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count, CUstream s)
{
    FAKE_ENTER("cuMemsetD32Async");
    if (!liveStream(s))
        return CUDA_ERROR_INVALID_HANDLE;
    auto* p = reinterpret_cast<unsigned*>(dst);
    for (size_t i = 0; i < count; ++i)
        p[i] = value;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeMemsetD8(CUdeviceptr dst, unsigned char value, size_t count)
{
    FAKE_ENTER("cuMemsetD8");
    std::memset(reinterpret_cast<void*>(dst), value, count);
    return CUDA_SUCCESS;
}

// Peers: the fake's devices cannot reach each other (as on a machine without NVLink or P2P).
CUresult CUDAAPI fakeDeviceCanAccessPeer(int* can, CUdevice, CUdevice)
{
    FAKE_ENTER("cuDeviceCanAccessPeer");
    *can = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute, CUdevice, CUdevice)
{
    FAKE_ENTER("cuDeviceGetP2PAttribute");
    *value = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxEnablePeerAccess(CUcontext, unsigned)
{
    FAKE_ENTER("cuCtxEnablePeerAccess");
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
}

CUresult CUDAAPI fakeCtxDisablePeerAccess(CUcontext)
{
    FAKE_ENTER("cuCtxDisablePeerAccess");
    return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

// IPC handles: the fake has one process, so opening a handle is refused as the driver refuses a
// process opening its own.
CUresult CUDAAPI fakeIpcGetEventHandle(CUipcEventHandle* h, CUevent e)
{
    FAKE_ENTER("cuIpcGetEventHandle");
    FakeEvent* ev = liveEvent(e);
    if (ev == nullptr || (ev->flags & CU_EVENT_INTERPROCESS) == 0)
        return CUDA_ERROR_INVALID_VALUE;
    std::memset(h->reserved, 0, sizeof h->reserved);
    const auto address = reinterpret_cast<std::uintptr_t>(ev);
    std::memcpy(h->reserved, &address, sizeof address);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeIpcOpenEventHandle(CUevent*, CUipcEventHandle)
{
    FAKE_ENTER("cuIpcOpenEventHandle");
    return CUDA_ERROR_INVALID_CONTEXT;
}

CUresult CUDAAPI fakeIpcGetMemHandle(CUipcMemHandle* h, CUdeviceptr p)
{
    FAKE_ENTER("cuIpcGetMemHandle");
    std::memset(h->reserved, 0, sizeof h->reserved);
    std::memcpy(h->reserved, &p, sizeof p);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeIpcOpenMemHandle(CUdeviceptr*, CUipcMemHandle, unsigned)
{
    FAKE_ENTER("cuIpcOpenMemHandle");
    return CUDA_ERROR_INVALID_CONTEXT;
}

CUresult CUDAAPI fakeIpcCloseMemHandle(CUdeviceptr)
{
    FAKE_ENTER("cuIpcCloseMemHandle");
    return CUDA_ERROR_INVALID_VALUE;
}

const Export kStreamExports[] = {
    FAKE_EXPORT("cuStreamCreateWithPriority", 5050, fakeStreamCreateWithPriority),
    FAKE_EXPORT("cuStreamDestroy", 4000, fakeStreamDestroy),
    FAKE_EXPORT("cuStreamSynchronize", 2000, fakeStreamSynchronize),
    FAKE_EXPORT("cuStreamQuery", 2000, fakeStreamQuery),
    FAKE_EXPORT("cuStreamWaitEvent", 3020, fakeStreamWaitEvent),
    FAKE_EXPORT("cuStreamGetPriority", 5050, fakeStreamGetPriority),
    FAKE_EXPORT("cuStreamGetFlags", 5050, fakeStreamGetFlags),
    FAKE_EXPORT("cuLaunchHostFunc", 10000, fakeLaunchHostFunc),
    FAKE_EXPORT("cuEventCreate", 2000, fakeEventCreate),
    FAKE_EXPORT("cuEventDestroy", 4000, fakeEventDestroy),
    FAKE_EXPORT("cuEventRecord", 2000, fakeEventRecord),
    FAKE_EXPORT("cuEventQuery", 2000, fakeEventQuery),
    FAKE_EXPORT("cuEventSynchronize", 2000, fakeEventSynchronize),
    FAKE_EXPORT("cuEventElapsedTime", 12080, fakeEventElapsedTime),
    FAKE_EXPORT("cuEventElapsedTime", 2000, fakeEventElapsedTime),
    FAKE_EXPORT("cuCtxRecordEvent", 12050, fakeCtxRecordEvent),
    FAKE_EXPORT("cuCtxWaitEvent", 12050, fakeCtxWaitEvent),
    FAKE_EXPORT("cuMemcpyDtoD", 3020, fakeMemcpyDtoD),
    FAKE_EXPORT("cuMemsetD8", 3020, fakeMemsetD8),
    FAKE_EXPORT("cuMemcpyHtoDAsync", 3020, fakeMemcpyHtoDAsync),
    FAKE_EXPORT("cuMemcpyDtoHAsync", 3020, fakeMemcpyDtoHAsync),
    FAKE_EXPORT("cuMemcpyDtoDAsync", 3020, fakeMemcpyAsync),
    FAKE_EXPORT("cuMemcpyPeerAsync", 4000, fakeMemcpyPeerAsync),
    FAKE_EXPORT("cuMemsetD32Async", 3020, fakeMemsetD32Async),
    FAKE_EXPORT("cuDeviceCanAccessPeer", 4000, fakeDeviceCanAccessPeer),
    FAKE_EXPORT("cuDeviceGetP2PAttribute", 8000, fakeDeviceGetP2PAttribute),
    FAKE_EXPORT("cuCtxEnablePeerAccess", 4000, fakeCtxEnablePeerAccess),
    FAKE_EXPORT("cuCtxDisablePeerAccess", 4000, fakeCtxDisablePeerAccess),
    FAKE_EXPORT("cuIpcGetEventHandle", 4010, fakeIpcGetEventHandle),
    FAKE_EXPORT("cuIpcOpenEventHandle", 4010, fakeIpcOpenEventHandle),
    FAKE_EXPORT("cuIpcGetMemHandle", 4010, fakeIpcGetMemHandle),
    FAKE_EXPORT("cuIpcOpenMemHandle", 11000, fakeIpcOpenMemHandle),
    FAKE_EXPORT("cuIpcCloseMemHandle", 4010, fakeIpcCloseMemHandle),
};

} // namespace

bool fake::onCallbackThread()
{
    return t_callbackThread;
}

void fake::waitForCallbacks(const void* stream)
{
    if (t_callbackThread)
        return; // refused there anyway; waiting would wait for itself
    Callbacks& c = callbacks();
    std::unique_lock lock(c.mutex);
    if (c.pid != getpid())
        return;
    if (stream != nullptr) {
        c.ran.wait(lock, [&] { return c.pending.count(stream) == 0; });
        return;
    }
    const long target = c.enqueued;
    c.ran.wait(lock, [&] { return c.finished >= target; });
}

std::span<const Export> fake::streamExports()
{
    return kStreamExports;
}

extern "C" {

int cuctx_fake_live_streams()
{
    Streams& st = streams();
    std::lock_guard lock(st.mutex);
    return static_cast<int>(st.streams.size());
}

int cuctx_fake_live_events()
{
    Streams& st = streams();
    std::lock_guard lock(st.mutex);
    return static_cast<int>(st.events.size());
}

} // extern "C"

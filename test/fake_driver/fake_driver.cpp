// SPDX-License-Identifier: MIT
// The fake CUDA driver: see fake_driver.hpp for what it models and how it is controlled.

#include "fake_driver.hpp"
#include "fake_internal.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace fake;

namespace {

constexpr std::size_t kTotalMemory = 80ull << 30;
constexpr std::size_t kContextMemory = 512ull << 20;

struct PrimaryState {
    int refcount = 0;
    unsigned flags = 0;
    FakeContext* context = nullptr;
};

struct Injection {
    int result;
    int countdown;
};

// cuctx_fake_on_call: what to run at the start of a symbol's next call.
struct Hook {
    std::string symbol;
    void (*fn)(void*);
    void* arg;
};

struct State {
    std::mutex mutex;
    bool initialised = false;
    bool initFailed = false;
    pid_t initPid = 0;
    int devices = 2;
    int version = 13000;
    std::set<std::string> hidden;
    unsigned long long nextId = 1;
    std::vector<PrimaryState> primaries;
    std::set<FakeContext*> liveCreated;
    // Every context ever made, never freed: a stale handle must stay readable, as in the driver.
    std::vector<std::unique_ptr<FakeContext>> allContexts;
    std::vector<std::unique_ptr<struct FakeGreen>> greens;
    std::vector<std::unique_ptr<struct FakeDesc>> descs; // the driver's: CUDA 13.0 cannot free one
    // Transparent comparators: counting a call must not allocate (guards are tested for that).
    std::map<std::string, long, std::less<>> calls;
    std::map<std::string, std::vector<Injection>, std::less<>> injections;
    std::vector<Hook> hooks;
    std::atomic<bool> hooked{false}; // hooks is not empty: read before taking the mutex
    long totalCalls = 0;
    // Per device: the sticky CUresult that poisoned it for the rest of the process, 0 if none.
    std::vector<int> poisoned;
};

State& state()
{
    static auto* s = new State; // never destroyed: stale handles stay readable
    return *s;
}

std::atomic<unsigned> g_generation{1};

struct ThreadStack {
    unsigned generation = 0;
    std::vector<FakeContext*> contexts;
};

// A thread's stack is a C++ thread-local made at its first driver call, so that it is destroyed
// before the program's thread-locals made earlier and after those made later: cuctx must cope with
// either order. A call after it is gone finds the stack empty (the driver forgot it) and starts a new
// one, which a pthread key frees at the end of the thread's exit.
constinit thread_local ThreadStack* t_stack = nullptr;
constinit thread_local bool t_stackOwnerMade = false;

struct StackOwner {
    StackOwner() = default;
    StackOwner(const StackOwner&) = delete;
    StackOwner& operator=(const StackOwner&) = delete;
    ~StackOwner()
    {
        delete t_stack;
        t_stack = nullptr;
    }
};

pthread_key_t lateStackKey()
{
    static const pthread_key_t key = [] {
        pthread_key_t k{};
        pthread_key_create(&k, [](void* stack) {
            delete static_cast<ThreadStack*>(stack);
            t_stack = nullptr;
        });
        return k;
    }();
    return key;
}

std::vector<FakeContext*>& stack()
{
    if (t_stack == nullptr) {
        t_stack = new ThreadStack;
        if (!t_stackOwnerMade) {
            t_stackOwnerMade = true;
            thread_local StackOwner owner;
            (void)owner;
        } else {
            pthread_setspecific(lateStackKey(), t_stack);
        }
    }
    ThreadStack& t = *t_stack;
    const unsigned g = g_generation.load(std::memory_order_acquire);
    if (t.generation != g) {
        t.generation = g;
        t.contexts.clear();
    }
    return t.contexts;
}

} // namespace

FakeContext* fake::top()
{
    auto& s = stack();
    return s.empty() ? nullptr : s.back();
}

namespace {

// The results that the CUDA documentation says leave the process unusable ("any further CUDA work
// will return the same error"); see src/check/sticky.cpp for why each is there.
bool stickyResult(int r)
{
    switch (r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_EXTERNAL_DEVICE: return true;
    default: return false;
    }
}

// The calls that still work on a poisoned device, as far as measured or harmless to assume: the
// thread's context stack, device queries, and destroying a context (its objects' destroy calls fail).
bool survivesPoison(std::string_view name)
{
    static constexpr std::string_view kSurvivors[] = {
        "cuInit",
        "cuDriverGetVersion",
        "cuGetErrorName",
        "cuGetErrorString",
        "cuCtxPushCurrent",
        "cuCtxPopCurrent",
        "cuCtxGetCurrent",
        "cuCtxSetCurrent",
        "cuCtxGetDevice",
        "cuCtxGetId",
        "cuCtxGetApiVersion",
        "cuCtxDestroy",
        "cuGreenCtxDestroy",
        "cuCtxFromGreenCtx",
        "cuModuleGetLoadingMode",
    };
    if (name.starts_with("cuDevice") || name.starts_with("cuDevSmResource") || name.starts_with("cuDevResource"))
        return true;
    return std::find(std::begin(kSurvivors), std::end(kSurvivors), name) != std::end(kSurvivors);
}

// An integer from the environment; unset, empty or not a number: the fallback.
int envInt(const char* name, int fallback)
{
    const char* v = std::getenv(name);
    if (v == nullptr)
        return fallback;
    int value = 0;
    const std::string_view text(v);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return (ec == std::errc{} && end == text.data() + text.size()) ? value : fallback;
}

} // namespace

// Every entry point starts here: counts the call, applies an injected failure, and models the
// states in which the real driver refuses everything (fork after init, failed or missing cuInit).
namespace {
thread_local int t_insideCalls = 0;
} // namespace

fake::InsideCall::InsideCall() noexcept
{
    ++t_insideCalls;
}

fake::InsideCall::~InsideCall()
{
    --t_insideCalls;
}

namespace {

// The hook waiting for `name`'s next call, taken off the list; fn null if none.
Hook takeHook(State& s, const char* name)
{
    if (!s.hooked.load(std::memory_order_acquire))
        return {};
    std::lock_guard lock(s.mutex);
    const auto it = std::find_if(s.hooks.begin(), s.hooks.end(), [&](const Hook& h) { return h.symbol == name; });
    if (it == s.hooks.end())
        return {};
    Hook h = *it;
    s.hooks.erase(it);
    s.hooked.store(!s.hooks.empty(), std::memory_order_release);
    return h;
}

} // namespace

CUresult fake::enter(const char* name, bool needsInit)
{
    State& s = state();
    // Outside the mutex: a hook may wait for other threads' calls.
    if (const Hook hook = takeHook(s, name); hook.fn != nullptr)
        hook.fn(hook.arg);
    std::lock_guard lock(s.mutex);
    auto counter = s.calls.find(std::string_view(name));
    if (counter == s.calls.end())
        counter = s.calls.emplace(name, 0).first;
    ++counter->second;
    ++s.totalCalls;
    auto it = s.injections.find(std::string_view(name));
    if (it != s.injections.end()) {
        for (auto inj = it->second.begin(); inj != it->second.end(); ++inj) {
            if (--inj->countdown == 0) {
                const int r = inj->result;
                it->second.erase(inj);
                // A sticky fault poisons the device of the current context for the rest of the
                // process, every context of it (driver-facts.md "Sticky errors").
                if (stickyResult(r))
                    if (const FakeContext* c = top(); c != nullptr && c->device >= 0 &&
                                                      static_cast<std::size_t>(c->device) < s.poisoned.size() &&
                                                      s.poisoned[static_cast<std::size_t>(c->device)] == 0)
                        s.poisoned[static_cast<std::size_t>(c->device)] = r;
                return static_cast<CUresult>(r);
            }
        }
    }
    if (!s.poisoned.empty() && !survivesPoison(name))
        if (const FakeContext* c = top(); c != nullptr && static_cast<std::size_t>(c->device) < s.poisoned.size())
            if (const int sticky = s.poisoned[static_cast<std::size_t>(c->device)]; sticky != 0)
                return static_cast<CUresult>(sticky); // work in any context of a poisoned device
    if (s.initPid != 0 && s.initPid != getpid())
        return CUDA_ERROR_NOT_INITIALIZED; // a child forked after cuInit: poisoned for good
    if (onCallbackThread() && name != std::string_view("cuDriverGetVersion") &&
        name != std::string_view("cuGetErrorName") && name != std::string_view("cuGetErrorString"))
        return CUDA_ERROR_NOT_PERMITTED; // inside a host callback: no CUDA calls
    if (needsInit && (!s.initialised || s.initFailed))
        return CUDA_ERROR_NOT_INITIALIZED;
    return CUDA_SUCCESS;
}

namespace {

FakeContext* newContext(State& s, int device, unsigned flags, bool primary)
{
    auto context = std::make_unique<FakeContext>(); // not an aggregate init: clang 14 lacks P0960
    context->id = s.nextId++;
    context->device = device;
    context->flags = flags;
    context->primary = primary;
    s.allContexts.push_back(std::move(context));
    return s.allContexts.back().get();
}

bool validDevice(CUdevice d)
{
    return d >= 0 && d < state().devices;
}

} // namespace

CUresult fake::currentForWork(FakeContext** out)
{
    FakeContext* c = top();
    if (c == nullptr)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (c->destroyed.load())
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *out = c;
    return CUDA_SUCCESS;
}

namespace {

// CUCTX_FAKE_DRIVER_THREAD=1: cuInit starts a thread of the driver's own, as the real driver does
// ("cuda-EvtHandlr"), which waits forever with no signal blocked: a process-directed signal may run
// its handler there, not on the thread that waits for it.
void* idleDriverThread(void*)
{
    for (;;)
        pause();
}

void startDriverThread()
{
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    if (pthread_create(&thread, &attributes, &idleDriverThread, nullptr) == 0)
        pthread_setname_np(thread, "cuda-EvtHandlr");
    pthread_attr_destroy(&attributes);
}

CUresult CUDAAPI fakeInit(unsigned int flags)
{
    FAKE_ENTER("cuInit", false);
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.initialised)
        return s.initFailed ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
    s.initialised = true;
    s.initPid = getpid();
    if (envInt("CUCTX_FAKE_DRIVER_THREAD", 0) == 1)
        startDriverThread();
    if (s.devices == 0) {
        s.initFailed = true;
        return CUDA_ERROR_NO_DEVICE;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeDriverGetVersion(int* version)
{
    FAKE_ENTER("cuDriverGetVersion", false);
    if (version == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    *version = state().version;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeGetErrorName(CUresult, const char** text)
{
    FAKE_ENTER("cuGetErrorName", false);
    *text = nullptr; // like the stub: cuctx must not depend on the driver's strings
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI fakeGetErrorString(CUresult, const char** text)
{
    FAKE_ENTER("cuGetErrorString", false);
    *text = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI fakeDeviceGet(CUdevice* device, int ordinal)
{
    FAKE_ENTER("cuDeviceGet");
    if (!validDevice(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeDeviceGetCount(int* count)
{
    FAKE_ENTER("cuDeviceGetCount");
    *count = state().devices;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeDeviceGetName(char* name, int len, CUdevice device)
{
    FAKE_ENTER("cuDeviceGetName");
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    const std::string text = "cuctx Fake GPU " + std::to_string(device);
    std::strncpy(name, text.c_str(), static_cast<std::size_t>(len));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeDeviceGetUuid(CUuuid* uuid, CUdevice device)
{
    FAKE_ENTER("cuDeviceGetUuid");
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    for (int i = 0; i < 16; ++i)
        uuid->bytes[i] = static_cast<char>(0x10 * device + i);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeDeviceGetPCIBusId(char* id, int len, CUdevice device)
{
    FAKE_ENTER("cuDeviceGetPCIBusId");
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    char text[32];
    std::snprintf(text, sizeof text, "0000:%02x:00.0", 0x10 + device);
    std::strncpy(id, text, static_cast<std::size_t>(len));
    return CUDA_SUCCESS;
}

// Whether `device` is in the comma-separated list of ordinals in the environment variable `name`.
bool listedIn(const char* name, int device)
{
    const char* v = std::getenv(name);
    if (v == nullptr)
        return false;
    const std::string text = std::string(",") + v + ",";
    return text.find("," + std::to_string(device) + ",") != std::string::npos;
}

CUresult CUDAAPI fakeDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device)
{
    FAKE_ENTER("cuDeviceGetAttribute");
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 50 << 20; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *value = 5120; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
        *value = listedIn("CUCTX_FAKE_EXCLUSIVE_PROCESS", device) ? CU_COMPUTEMODE_EXCLUSIVE_PROCESS
                                                                  : CU_COMPUTEMODE_DEFAULT;
        break;
    case CU_DEVICE_ATTRIBUTE_MPS_ENABLED: *value = listedIn("CUCTX_FAKE_MPS", device) ? 1 : 0; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = 0x10 + device; break;
    default: *value = 1; break;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeDeviceTotalMem(size_t* bytes, CUdevice device)
{
    FAKE_ENTER("cuDeviceTotalMem");
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = kTotalMemory;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakePrimaryGetState(CUdevice device, unsigned int* flags, int* active)
{
    FAKE_ENTER("cuDevicePrimaryCtxGetState");
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    State& s = state();
    std::lock_guard lock(s.mutex);
    const PrimaryState& p = s.primaries[static_cast<std::size_t>(device)];
    *flags = p.flags;
    *active = p.refcount > 0 ? 1 : 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakePrimaryRetain(CUcontext* out, CUdevice device)
{
    FAKE_ENTER("cuDevicePrimaryCtxRetain");
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    State& s = state();
    std::lock_guard lock(s.mutex);
    PrimaryState& p = s.primaries[static_cast<std::size_t>(device)];
    if (p.refcount++ == 0)
        p.context = newContext(s, device, p.flags, true);
    *out = reinterpret_cast<CUcontext>(p.context);
    return CUDA_SUCCESS; // retaining does not push (driver-facts.md)
}

CUresult CUDAAPI fakePrimaryRelease(CUdevice device)
{
    FAKE_ENTER("cuDevicePrimaryCtxRelease");
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    State& s = state();
    std::lock_guard lock(s.mutex);
    PrimaryState& p = s.primaries[static_cast<std::size_t>(device)];
    if (p.refcount == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (--p.refcount == 0) {
        p.context->destroyed = true;
        p.context = nullptr;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakePrimarySetFlags(CUdevice device, unsigned int flags)
{
    FAKE_ENTER("cuDevicePrimaryCtxSetFlags");
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.primaries[static_cast<std::size_t>(device)].flags = flags;
    return CUDA_SUCCESS;
}

CUresult createContext(const char* name, CUcontext* out, unsigned flags, CUdevice device)
{
    FAKE_ENTER(name);
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    State& s = state();
    FakeContext* c = nullptr;
    {
        std::lock_guard lock(s.mutex);
        if (const int sticky = s.poisoned[static_cast<std::size_t>(device)]; sticky != 0)
            return static_cast<CUresult>(sticky); // measured: cuCtxCreate on a poisoned device gives 700
        c = newContext(s, device, flags, false);
        s.liveCreated.insert(c);
    }
    stack().push_back(c); // creating pushes (driver-facts.md)
    *out = reinterpret_cast<CUcontext>(c);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxCreateV2(CUcontext* out, unsigned int flags, CUdevice device)
{
    return createContext("cuCtxCreate_v2", out, flags, device);
}

CUresult CUDAAPI fakeCtxCreateV4(CUcontext* out, CUctxCreateParams*, unsigned int flags, CUdevice device)
{
    return createContext("cuCtxCreate_v4", out, flags, device);
}

CUresult CUDAAPI fakeCtxDestroy(CUcontext ctx)
{
    FAKE_ENTER("cuCtxDestroy");
    auto* c = reinterpret_cast<FakeContext*>(ctx);
    if (c == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (c->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (c->destroyed.exchange(true))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    {
        State& s = state();
        std::lock_guard lock(s.mutex);
        s.liveCreated.erase(c);
    }
    // Current on the calling thread: popped. Current elsewhere: stays there, stale (driver-facts.md).
    auto& st = stack();
    if (!st.empty() && st.back() == c)
        st.pop_back();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxPush(CUcontext ctx)
{
    FAKE_ENTER("cuCtxPushCurrent");
    if (ctx == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    stack().push_back(reinterpret_cast<FakeContext*>(ctx)); // a duplicate push is allowed
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxPop(CUcontext* out)
{
    FAKE_ENTER("cuCtxPopCurrent");
    auto& st = stack();
    if (st.empty())
        return CUDA_ERROR_INVALID_CONTEXT;
    if (out != nullptr)
        *out = reinterpret_cast<CUcontext>(st.back());
    st.pop_back();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxGetCurrent(CUcontext* out)
{
    FAKE_ENTER("cuCtxGetCurrent");
    *out = reinterpret_cast<CUcontext>(top());
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxSetCurrent(CUcontext ctx)
{
    FAKE_ENTER("cuCtxSetCurrent");
    auto& st = stack();
    if (ctx == nullptr) {
        if (!st.empty())
            st.pop_back();
        return CUDA_SUCCESS;
    }
    if (st.empty())
        st.push_back(reinterpret_cast<FakeContext*>(ctx));
    else
        st.back() = reinterpret_cast<FakeContext*>(ctx); // replaces the top, does not push
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxGetDevice(CUdevice* device)
{
    FAKE_ENTER("cuCtxGetDevice");
    FakeContext* c = top();
    if (c == nullptr)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = c->device; // still answers for a destroyed context (driver-facts.md)
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxSynchronize()
{
    FAKE_ENTER("cuCtxSynchronize");
    FakeContext* c = nullptr;
    if (CUresult r = currentForWork(&c); r != CUDA_SUCCESS)
        return r;
    waitForCallbacks(nullptr); // (the fake's streams do not record their contexts' callbacks apart)
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxGetApiVersion(CUcontext ctx, unsigned int* version)
{
    FAKE_ENTER("cuCtxGetApiVersion");
    if (ctx == nullptr && top() == nullptr)
        return CUDA_ERROR_INVALID_CONTEXT;
    *version = 3020;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxGetFlags(unsigned int* flags)
{
    FAKE_ENTER("cuCtxGetFlags");
    FakeContext* c = nullptr;
    if (CUresult r = currentForWork(&c); r != CUDA_SUCCESS)
        return r;
    *flags = c->flags;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxGetLimit(size_t* value, CUlimit limit)
{
    FAKE_ENTER("cuCtxGetLimit");
    FakeContext* c = nullptr;
    if (CUresult r = currentForWork(&c); r != CUDA_SUCCESS)
        return r;
    *value = limit == CU_LIMIT_STACK_SIZE ? 1024 : 1 << 20;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxSetLimit(CUlimit, size_t)
{
    FAKE_ENTER("cuCtxSetLimit");
    FakeContext* c = nullptr;
    return currentForWork(&c);
}

CUresult CUDAAPI fakeCtxGetStreamPriorityRange(int* least, int* greatest)
{
    FAKE_ENTER("cuCtxGetStreamPriorityRange");
    FakeContext* c = nullptr;
    if (CUresult r = currentForWork(&c); r != CUDA_SUCCESS)
        return r;
    *least = 0;
    *greatest = -5;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxGetCacheConfig(CUfunc_cache* config)
{
    FAKE_ENTER("cuCtxGetCacheConfig");
    FakeContext* c = nullptr;
    if (CUresult r = currentForWork(&c); r != CUDA_SUCCESS)
        return r;
    *config = CU_FUNC_CACHE_PREFER_NONE;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxGetId(CUcontext ctx, unsigned long long* id)
{
    FAKE_ENTER("cuCtxGetId");
    FakeContext* c = ctx != nullptr ? reinterpret_cast<FakeContext*>(ctx) : top();
    if (c == nullptr)
        return CUDA_ERROR_INVALID_CONTEXT;
    *id = c->id;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeMemGetInfo(size_t* free, size_t* total)
{
    FAKE_ENTER("cuMemGetInfo");
    FakeContext* c = nullptr;
    if (CUresult r = currentForWork(&c); r != CUDA_SUCCESS)
        return r;
    State& s = state();
    std::lock_guard lock(s.mutex);
    std::size_t used = 0;
    for (const FakeContext* live : s.liveCreated)
        used += live->device == c->device ? kContextMemory : 0;
    if (s.primaries[static_cast<std::size_t>(c->device)].refcount > 0)
        used += kContextMemory;
    *free = kTotalMemory - used;
    *total = kTotalMemory;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeModuleGetLoadingMode(CUmoduleLoadingMode* mode)
{
    FAKE_ENTER("cuModuleGetLoadingMode");
    // As the real driver: lazy unless CUDA_MODULE_LOADING says EAGER.
    const char* loading = std::getenv("CUDA_MODULE_LOADING");
    *mode =
        loading != nullptr && std::string_view(loading) == "EAGER" ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
    return CUDA_SUCCESS;
}

// Green contexts: SM resources, splits, descriptors and green contexts, modelled on what cuda.h
// (CUDA 13.0, "Green Contexts") documents for compute capability 9.0 (the H200: 132 SMs). The real
// driver tells its users SM counts only; the fake also keeps which SMs each resource holds (in the
// resource's internal padding, as a driver may), so that CPU tests can see two green contexts
// overlap (cuctx_fake_green_overlap). What it models:
// - a split's groups hold at least 8 SMs and a multiple of 8 (minCount is rounded up to that
//   granularity), taken from the input's SMs in order; what is left goes to `remaining`;
// - a split's outputs (groups and remainder) cannot be split again, only turned into a
//   descriptor (CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION); a green context's own resource can;
// - one descriptor may hold several resources only if they come from one split instance;
// - descriptors belong to the driver (CUDA 13.0 has no call that frees one);
// - a green context's streams: cuGreenCtxStreamCreate requires CU_STREAM_NON_BLOCKING.
constexpr unsigned kSmCount = 132;
constexpr unsigned kSmGranularity = 8;
constexpr std::uint32_t kResourceMagic = 0x67726e31; // "grn1"

struct SmSet {
    std::uint64_t bits[4] = {};
    void add(unsigned sm) { bits[sm / 64] |= std::uint64_t{1} << (sm % 64); }
    bool has(unsigned sm) const { return (bits[sm / 64] >> (sm % 64) & 1) != 0; }
    unsigned count() const
    {
        unsigned n = 0;
        for (std::uint64_t b : bits)
            n += static_cast<unsigned>(__builtin_popcountll(b));
        return n;
    }
    bool overlaps(const SmSet& o) const
    {
        for (int i = 0; i < 4; ++i)
            if ((bits[i] & o.bits[i]) != 0)
                return true;
        return false;
    }
    void merge(const SmSet& o)
    {
        for (int i = 0; i < 4; ++i)
            bits[i] |= o.bits[i];
    }
};

// What the fake keeps in a CUdevResource's internal padding.
struct ResourceTag {
    std::uint32_t magic;
    std::int32_t device;
    std::uint64_t split; // the split instance that made it; 0 for a device's or a context's own
    SmSet sms;
};
static_assert(sizeof(ResourceTag) <= sizeof(CUdevResource::_internal_padding));

void writeResource(CUdevResource* out, int device, std::uint64_t split, const SmSet& sms)
{
    *out = CUdevResource{};
    out->type = CU_DEV_RESOURCE_TYPE_SM;
    const ResourceTag tag{kResourceMagic, device, split, sms};
    std::memcpy(out->_internal_padding, &tag, sizeof tag);
    out->sm.smCount = sms.count();
    out->sm.minSmPartitionSize = kSmGranularity;
    out->sm.smCoscheduledAlignment = split == 0 ? 2 : kSmGranularity;
}

bool readResource(const CUdevResource& in, ResourceTag* tag)
{
    if (in.type != CU_DEV_RESOURCE_TYPE_SM)
        return false;
    std::memcpy(tag, in._internal_padding, sizeof *tag);
    return tag->magic == kResourceMagic;
}

SmSet wholeDevice()
{
    SmSet all;
    for (unsigned sm = 0; sm < kSmCount; ++sm)
        all.add(sm);
    return all;
}

struct FakeDesc {
    int device;
    SmSet sms;
};

struct FakeGreen {
    FakeContext* context;
    SmSet sms;
    bool destroyed = false;
};

std::atomic<std::uint64_t> g_nextSplit{1};

// The green context whose converted context is `c`, or nullptr. Under the state's mutex.
FakeGreen* greenOf(State& s, const FakeContext* c)
{
    for (const auto& g : s.greens)
        if (g->context == c)
            return g.get();
    return nullptr;
}

CUresult CUDAAPI fakeDeviceGetDevResource(CUdevice device, CUdevResource* resource, CUdevResourceType type)
{
    FAKE_ENTER("cuDeviceGetDevResource");
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    if (resource == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    writeResource(resource, device, 0, wholeDevice());
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeDevSmResourceSplitByCount(CUdevResource* result, unsigned int* groups, const CUdevResource* input,
                                               CUdevResource* remaining, unsigned int, unsigned int minCount)
{
    FAKE_ENTER("cuDevSmResourceSplitByCount");
    ResourceTag in{};
    if (input == nullptr || groups == nullptr || (result != nullptr && *groups == 0))
        return CUDA_ERROR_INVALID_VALUE;
    if (!readResource(*input, &in))
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (in.split != 0)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION; // a split's output: make a green context first
    const unsigned available = in.sms.count();
    if (minCount == 0 || minCount > available)
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned size = (std::max(minCount, kSmGranularity) + kSmGranularity - 1) / kSmGranularity * kSmGranularity;
    const unsigned possible = available / size;
    if (result == nullptr) {
        *groups = possible;
        return CUDA_SUCCESS;
    }
    *groups = std::min(*groups, possible);
    const std::uint64_t split = g_nextSplit.fetch_add(1);
    unsigned sm = 0;
    for (unsigned i = 0; i < *groups; ++i) {
        SmSet group;
        for (unsigned taken = 0; taken < size; ++sm)
            if (in.sms.has(sm)) {
                group.add(sm);
                ++taken;
            }
        writeResource(&result[i], in.device, split, group);
    }
    if (remaining != nullptr) {
        SmSet rest;
        for (; sm < 256; ++sm)
            if (in.sms.has(sm))
                rest.add(sm);
        writeResource(remaining, in.device, split, rest);
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeDevResourceGenerateDesc(CUdevResourceDesc* desc, CUdevResource* resources, unsigned int count)
{
    FAKE_ENTER("cuDevResourceGenerateDesc");
    if (desc == nullptr || resources == nullptr || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    auto made = std::make_unique<FakeDesc>();
    for (unsigned i = 0; i < count; ++i) {
        ResourceTag tag{};
        if (!readResource(resources[i], &tag))
            return CUDA_ERROR_INVALID_RESOURCE_TYPE;
        ResourceTag first{};
        (void)readResource(resources[0], &first);
        if (tag.device != first.device || (count > 1 && (tag.split == 0 || tag.split != first.split)) ||
            made->sms.overlaps(tag.sms))
            return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION; // several resources: outputs of one split
        made->device = tag.device;
        made->sms.merge(tag.sms);
    }
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.descs.push_back(std::move(made)); // the driver's, never freed (there is no call to free one)
    *desc = reinterpret_cast<CUdevResourceDesc>(s.descs.back().get());
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeGreenCtxCreate(CUgreenCtx* out, CUdevResourceDesc desc, CUdevice device, unsigned int flags)
{
    FAKE_ENTER("cuGreenCtxCreate");
    if (!validDevice(device))
        return CUDA_ERROR_INVALID_DEVICE;
    if ((flags & CU_GREEN_CTX_DEFAULT_STREAM) == 0 || desc == nullptr || out == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    const auto* d = reinterpret_cast<const FakeDesc*>(desc);
    if (d->device != device)
        return CUDA_ERROR_INVALID_VALUE;
    State& s = state();
    std::lock_guard lock(s.mutex);
    FakeContext* c = newContext(s, device, 0, false);
    s.liveCreated.insert(c);
    s.greens.push_back(std::make_unique<FakeGreen>(FakeGreen{c, d->sms}));
    *out = reinterpret_cast<CUgreenCtx>(s.greens.back().get());
    return CUDA_SUCCESS; // a green context is not pushed
}

CUresult CUDAAPI fakeCtxFromGreenCtx(CUcontext* out, CUgreenCtx green)
{
    FAKE_ENTER("cuCtxFromGreenCtx");
    if (green == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    *out = reinterpret_cast<CUcontext>(reinterpret_cast<FakeGreen*>(green)->context);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeGreenCtxGetDevResource(CUgreenCtx handle, CUdevResource* resource, CUdevResourceType type)
{
    FAKE_ENTER("cuGreenCtxGetDevResource");
    auto* green = reinterpret_cast<FakeGreen*>(handle);
    if (green == nullptr || resource == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (green->destroyed)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    writeResource(resource, green->context->device, 0, green->sms);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeCtxGetDevResource(CUcontext ctx, CUdevResource* resource, CUdevResourceType type)
{
    FAKE_ENTER("cuCtxGetDevResource");
    auto* c = reinterpret_cast<FakeContext*>(ctx);
    if (c == nullptr)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (resource == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (c->destroyed.load())
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    State& s = state();
    std::lock_guard lock(s.mutex);
    const FakeGreen* green = greenOf(s, c);
    writeResource(resource, c->device, 0, green != nullptr ? green->sms : wholeDevice());
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeGreenCtxStreamCreate(CUstream* out, CUgreenCtx handle, unsigned int flags, int priority)
{
    FAKE_ENTER("cuGreenCtxStreamCreate");
    auto* green = reinterpret_cast<FakeGreen*>(handle);
    if (green == nullptr)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (out == nullptr || (flags & CU_STREAM_NON_BLOCKING) == 0)
        return CUDA_ERROR_INVALID_VALUE; // "CU_STREAM_NON_BLOCKING must be specified"
    {
        State& s = state();
        std::lock_guard lock(s.mutex);
        if (green->destroyed)
            return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    *out = newStream(green->context, flags, priority); // ignores the current context, as the driver does
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeStreamGetGreenCtx(CUstream stream, CUgreenCtx* out)
{
    FAKE_ENTER("cuStreamGetGreenCtx");
    if (out == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    const FakeContext* c = stream != nullptr ? streamContext(stream) : top();
    if (stream != nullptr && c == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    State& s = state();
    std::lock_guard lock(s.mutex);
    *out = reinterpret_cast<CUgreenCtx>(c != nullptr ? greenOf(s, c) : nullptr);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeGreenCtxDestroy(CUgreenCtx handle)
{
    FAKE_ENTER("cuGreenCtxDestroy");
    auto* green = reinterpret_cast<FakeGreen*>(handle);
    if (green == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (green->destroyed)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    green->destroyed = true;
    green->context->destroyed = true;
    s.liveCreated.erase(green->context);
    return CUDA_SUCCESS;
}

const Export kExports[] = {
    FAKE_EXPORT("cuInit", 2000, fakeInit),
    FAKE_EXPORT("cuDriverGetVersion", 2020, fakeDriverGetVersion),
    FAKE_EXPORT("cuGetErrorName", 6000, fakeGetErrorName),
    FAKE_EXPORT("cuGetErrorString", 6000, fakeGetErrorString),
    FAKE_EXPORT("cuDeviceGet", 2000, fakeDeviceGet),
    FAKE_EXPORT("cuDeviceGetCount", 2000, fakeDeviceGetCount),
    FAKE_EXPORT("cuDeviceGetName", 2000, fakeDeviceGetName),
    FAKE_EXPORT("cuDeviceGetUuid", 11040, fakeDeviceGetUuid),
    FAKE_EXPORT("cuDeviceGetPCIBusId", 4010, fakeDeviceGetPCIBusId),
    FAKE_EXPORT("cuDeviceGetAttribute", 2000, fakeDeviceGetAttribute),
    FAKE_EXPORT("cuDeviceTotalMem", 3020, fakeDeviceTotalMem),
    FAKE_EXPORT("cuDevicePrimaryCtxGetState", 7000, fakePrimaryGetState),
    FAKE_EXPORT("cuDevicePrimaryCtxRetain", 7000, fakePrimaryRetain),
    FAKE_EXPORT("cuDevicePrimaryCtxRelease", 11000, fakePrimaryRelease),
    FAKE_EXPORT("cuDevicePrimaryCtxSetFlags", 11000, fakePrimarySetFlags),
    FAKE_EXPORT("cuCtxCreate", 12050, fakeCtxCreateV4),
    FAKE_EXPORT("cuCtxCreate", 3020, fakeCtxCreateV2),
    FAKE_EXPORT("cuCtxDestroy", 4000, fakeCtxDestroy),
    FAKE_EXPORT("cuCtxPushCurrent", 4000, fakeCtxPush),
    FAKE_EXPORT("cuCtxPopCurrent", 4000, fakeCtxPop),
    FAKE_EXPORT("cuCtxGetCurrent", 4000, fakeCtxGetCurrent),
    FAKE_EXPORT("cuCtxSetCurrent", 4000, fakeCtxSetCurrent),
    FAKE_EXPORT("cuCtxGetDevice", 2000, fakeCtxGetDevice),
    FAKE_EXPORT("cuCtxSynchronize", 2000, fakeCtxSynchronize),
    FAKE_EXPORT("cuCtxGetApiVersion", 3020, fakeCtxGetApiVersion),
    FAKE_EXPORT("cuCtxGetFlags", 7000, fakeCtxGetFlags),
    FAKE_EXPORT("cuCtxGetLimit", 3010, fakeCtxGetLimit),
    FAKE_EXPORT("cuCtxSetLimit", 3010, fakeCtxSetLimit),
    FAKE_EXPORT("cuCtxGetStreamPriorityRange", 5050, fakeCtxGetStreamPriorityRange),
    FAKE_EXPORT("cuCtxGetCacheConfig", 3020, fakeCtxGetCacheConfig),
    FAKE_EXPORT("cuCtxGetId", 12000, fakeCtxGetId),
    FAKE_EXPORT("cuMemGetInfo", 3020, fakeMemGetInfo),
    FAKE_EXPORT("cuModuleGetLoadingMode", 11070, fakeModuleGetLoadingMode),
    FAKE_EXPORT("cuDeviceGetDevResource", 12040, fakeDeviceGetDevResource),
    FAKE_EXPORT("cuDevSmResourceSplitByCount", 12040, fakeDevSmResourceSplitByCount),
    FAKE_EXPORT("cuDevResourceGenerateDesc", 12040, fakeDevResourceGenerateDesc),
    FAKE_EXPORT("cuGreenCtxCreate", 12040, fakeGreenCtxCreate),
    FAKE_EXPORT("cuCtxFromGreenCtx", 12040, fakeCtxFromGreenCtx),
    FAKE_EXPORT("cuGreenCtxDestroy", 12040, fakeGreenCtxDestroy),
    FAKE_EXPORT("cuGreenCtxGetDevResource", 12040, fakeGreenCtxGetDevResource),
    FAKE_EXPORT("cuCtxGetDevResource", 12040, fakeCtxGetDevResource),
    FAKE_EXPORT("cuGreenCtxStreamCreate", 12050, fakeGreenCtxStreamCreate),
    FAKE_EXPORT("cuStreamGetGreenCtx", 12040, fakeStreamGetGreenCtx),
};
#undef FAKE_EXPORT

void configureFromEnvironment(State& s)
{
    s.devices = envInt("CUCTX_FAKE_DEVICES", 2);
    s.version = envInt("CUCTX_FAKE_DRIVER_VERSION", 13000);
    s.hidden.clear();
    if (const char* hide = std::getenv("CUCTX_FAKE_HIDE")) {
        std::string list = hide;
        std::size_t start = 0;
        while (start <= list.size()) {
            const std::size_t comma = list.find(',', start);
            const std::string name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            if (!name.empty())
                s.hidden.insert(name);
            if (comma == std::string::npos)
                break;
            start = comma + 1;
        }
    }
    s.primaries.assign(static_cast<std::size_t>(s.devices > 0 ? s.devices : 0), PrimaryState{});
    s.poisoned.assign(s.primaries.size(), 0);
}

[[gnu::constructor]] void initialiseFake()
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    configureFromEnvironment(s);
}

} // namespace

extern "C" {

// The one symbol cuctx looks up with dlsym; everything else is reached through it.
[[gnu::visibility("default")]] CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                                                    cuuint64_t, CUdriverProcAddressQueryResult* found)
{
    State& s = state();
    {
        std::lock_guard lock(s.mutex);
        ++s.calls["cuGetProcAddress_v2"]; // not a hot path: allocating here is fine
        if (cudaVersion > s.version)
            return CUDA_ERROR_INVALID_VALUE; // asked for a newer ABI than this driver has
    }
    *pfn = nullptr;
    if (found != nullptr)
        *found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (s.hidden.count(symbol) != 0)
        return CUDA_SUCCESS; // success with a NULL pointer, as the real driver does for unknown names
    // The newest ABI introduced at or before the requested version (driver-facts.md).
    const Export* best = nullptr;
    for (const Export& e : kExports)
        if (std::strcmp(e.symbol, symbol) == 0 && e.version <= cudaVersion &&
            (best == nullptr || e.version > best->version))
            best = &e;
    for (std::span<const Export> table : {moduleExports(), streamExports()})
        for (const Export& e : table)
            if (std::strcmp(e.symbol, symbol) == 0 && e.version <= cudaVersion &&
                (best == nullptr || e.version > best->version))
                best = &e;
    if (best == nullptr) {
        if (found != nullptr)
            *found = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        return CUDA_SUCCESS;
    }
    *pfn = best->function;
    if (found != nullptr)
        *found = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

void cuctx_fake_reset()
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    // Initialisation survives a reset (as it does in a real process, and so that a loaded cuctx
    // keeps working), but its outcome follows the new device count.
    s.liveCreated.clear();
    s.calls.clear();
    s.injections.clear();
    s.hooks.clear();
    s.hooked.store(false, std::memory_order_release);
    s.totalCalls = 0;
    configureFromEnvironment(s);
    resetModules();
    s.initFailed = s.initialised && s.devices == 0;
    g_generation.fetch_add(1, std::memory_order_release);
}

void cuctx_fake_fail(const char* symbol, int result, int nth)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.injections[symbol].push_back(Injection{result, nth});
}

void cuctx_fake_on_call(const char* symbol, void (*fn)(void*), void* arg)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.hooks.push_back(Hook{symbol, fn, arg});
    s.hooked.store(true, std::memory_order_release);
}

int cuctx_fake_device_poisoned(int device)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (device < 0 || static_cast<std::size_t>(device) >= s.poisoned.size())
        return 0;
    return s.poisoned[static_cast<std::size_t>(device)];
}

int cuctx_fake_inside_call()
{
    return t_insideCalls > 0 ? 1 : 0;
}

long cuctx_fake_calls(const char* symbol)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    auto it = s.calls.find(std::string_view(symbol));
    return it == s.calls.end() ? 0 : it->second;
}

long cuctx_fake_total_calls()
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    return s.totalCalls;
}

int cuctx_fake_live_contexts()
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    return static_cast<int>(s.liveCreated.size());
}

int cuctx_fake_green_overlap(const void* a, const void* b)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    const auto* x = reinterpret_cast<const FakeGreen*>(a);
    const auto* y = reinterpret_cast<const FakeGreen*>(b);
    unsigned shared = 0;
    for (unsigned sm = 0; sm < 256; ++sm)
        shared += x->sms.has(sm) && y->sms.has(sm) ? 1 : 0;
    return static_cast<int>(shared);
}

int cuctx_fake_primary_refcount(int device)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (device < 0 || static_cast<std::size_t>(device) >= s.primaries.size())
        return -1;
    return s.primaries[static_cast<std::size_t>(device)].refcount;
}

int cuctx_fake_device_contexts(int device)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (device < 0 || static_cast<std::size_t>(device) >= s.primaries.size())
        return 0;
    int n = s.primaries[static_cast<std::size_t>(device)].refcount > 0 ? 1 : 0;
    for (const FakeContext* c : s.liveCreated)
        n += c->device == device ? 1 : 0;
    return n;
}

} // extern "C"

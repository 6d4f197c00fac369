// Contexts that other code made (the runtime API, a framework, another library), borrowed with
// Context::borrow: guarded, registered and used like cuctx's own, never destroyed or released by
// cuctx. Runs in both suites: against the fake driver on the CPU and against the real driver on the GPU.

#include "driver_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/device_buffer.hpp"
#include "cuctx/error.hpp"
#include "cuctx/live_objects.hpp"
#include "cuctx/process_report.hpp"

#include <optional>
#include <thread>
#include <vector>

using cuctx::Context;
using cuctx::ContextGuard;
using cuctx::Device;
using cuctx::Errc;
using cuctx::test::drainRawStack;
using cuctx::test::raw;
using cuctx::test::rawCurrent;

namespace {

// A context made by "other code": the raw driver, popped so that nothing is current.
CUcontext foreignCreate()
{
    const CUcontext handle = cuctx::test::rawCreate();
    CUcontext popped = nullptr;
    REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
    REQUIRE(popped == handle);
    return handle;
}

// Whether the driver still has `handle` alive: real work in it succeeds.
bool stillAlive(CUcontext handle)
{
    const auto& d = raw();
    if (d.cuCtxPushCurrent(handle) != CUDA_SUCCESS)
        return false;
    CUdeviceptr p = 0;
    const CUresult r = d.cuMemAlloc(&p, 256);
    if (r == CUDA_SUCCESS)
        (void)d.cuMemFree(p);
    CUcontext popped = nullptr;
    (void)d.cuCtxPopCurrent(&popped);
    return r == CUDA_SUCCESS;
}

} // namespace

TEST_CASE("A borrowed context guards, allocates and is never destroyed by cuctx", "[borrow]")
{
    drainRawStack();
    const long before = cuctx::liveObjects().contexts;
    const CUcontext handle = foreignCreate();
    {
        const Context borrowed = Context::borrow(handle);
        CHECK(borrowed.isBorrowed());
        CHECK_FALSE(borrowed.isPrimary());
        CHECK(borrowed.native() == handle);
        CHECK(borrowed.device().ordinal() == 0);
        CHECK(cuctx::liveObjects().contexts == before + 1);
        {
            ContextGuard guard(borrowed);
            CHECK(guard.switched());
            CHECK(rawCurrent() == handle);
            cuctx::DeviceBuffer buffer(borrowed, 1024);
            buffer.fill32(7);
            CHECK(buffer.download<unsigned>()[255] == 7u);
        }
        CHECK(rawCurrent() == nullptr);
        // A worker thread enters it too.
        std::thread worker([&] {
            ContextGuard guard(borrowed);
            CHECK(rawCurrent() == handle);
        });
        worker.join();
    }
    // The last handle is gone: cuctx forgot it, and the context lives on for its owner.
    CHECK(cuctx::liveObjects().contexts == before);
    CHECK(stillAlive(handle));
    REQUIRE(raw().cuCtxDestroy(handle) == CUDA_SUCCESS);
    CHECK(rawCurrent() == nullptr);
}

TEST_CASE("Borrowing a context cuctx already has gives cuctx's own handle", "[borrow]")
{
    drainRawStack();
    const Context created = Context::create(Device::get(0));
    const Context again = Context::borrow(created.native());
    CHECK(again == created);
    CHECK_FALSE(again.isBorrowed());

    const Context primary = Context::primary(Device::get(0));
    const Context primaryAgain = Context::borrow(primary.native());
    CHECK(primaryAgain == primary);
    CHECK(primaryAgain.isPrimary());
}

TEST_CASE("Borrowing the same foreign handle twice shares one Context", "[borrow]")
{
    drainRawStack();
    const CUcontext handle = foreignCreate();
    {
        const Context a = Context::borrow(handle);
        const Context b = Context::borrow(handle);
        CHECK(a == b);
        // A guard on one elides inside a guard on the other: they are the same context to cuctx.
        ContextGuard outer(a);
        ContextGuard inner(b);
        CHECK_FALSE(inner.switched());
    }
    CHECK(stillAlive(handle));
    REQUIRE(raw().cuCtxDestroy(handle) == CUDA_SUCCESS);
}

TEST_CASE("A borrowed primary context the runtime retained is not released by cuctx", "[borrow]")
{
    drainRawStack();
    const auto& d = raw();
    const CUdevice device = Device::get(0).native();
    CUcontext primary = nullptr;
    REQUIRE(d.cuDevicePrimaryCtxRetain(&primary, device) == CUDA_SUCCESS); // what the runtime does
    {
        const Context borrowed = Context::borrow(primary);
        CHECK(borrowed.isBorrowed());
        ContextGuard guard(borrowed);
        CHECK(rawCurrent() == primary);
    }
    unsigned flags = 0;
    int active = 0;
    REQUIRE(d.cuDevicePrimaryCtxGetState(device, &flags, &active) == CUDA_SUCCESS);
    CHECK(active == 1); // still retained by its owner
    REQUIRE(d.cuDevicePrimaryCtxRelease(device) == CUDA_SUCCESS);
}

TEST_CASE("Context::primary of a primary context borrowed first is the same Context, primary from then on", "[borrow]")
{
    drainRawStack();
    const auto& d = raw();
    const Device device = Device::get(0);
    CUcontext handle = nullptr;
    REQUIRE(d.cuDevicePrimaryCtxRetain(&handle, device.native()) == CUDA_SUCCESS); // what the runtime does
    const long before = cuctx::liveObjects().contexts;
    {
        const Context borrowed = Context::borrow(handle);
        REQUIRE(borrowed.isBorrowed());
        const Context primary = Context::primary(device);
        CHECK(primary == borrowed);
        CHECK(primary.native() == handle);
        CHECK(borrowed.isPrimary());
        CHECK_FALSE(borrowed.isBorrowed());
        CHECK(cuctx::liveObjects().contexts == before + 1);
        // One identity: a guard on one handle elides inside a guard on the other.
        ContextGuard outer(borrowed);
        ContextGuard inner(primary);
        CHECK(outer.switched());
        CHECK_FALSE(inner.switched());
        // Later calls find the same state either way.
        CHECK(Context::primary(device) == borrowed);
        CHECK(Context::borrow(handle) == borrowed);
    }
    CHECK(cuctx::liveObjects().contexts == before);
    // cuctx released the retain that Context::primary took, once: the owner's retain is the last.
    unsigned flags = 0;
    int active = 0;
    REQUIRE(d.cuDevicePrimaryCtxGetState(device.native(), &flags, &active) == CUDA_SUCCESS);
    CHECK(active == 1);
    REQUIRE(d.cuDevicePrimaryCtxRelease(device.native()) == CUDA_SUCCESS);
    REQUIRE(d.cuDevicePrimaryCtxGetState(device.native(), &flags, &active) == CUDA_SUCCESS);
    CHECK(active == 0);
}

TEST_CASE("Context::primary while its last handle is gone but a guard uses it revives the same state", "[borrow]")
{
    drainRawStack();
    const auto& d = raw();
    const Device device = Device::get(0);
    unsigned flags = 0;
    int activeBefore = 0;
    REQUIRE(d.cuDevicePrimaryCtxGetState(device.native(), &flags, &activeBefore) == CUDA_SUCCESS);
    const long before = cuctx::liveObjects().contexts;
    {
        std::optional<Context> first = Context::primary(device);
        const CUcontext handle = first->native();
        ContextGuard guard(*first);
        first.reset(); // orphaned: the guard still has it entered
        const Context again = Context::primary(device);
        CHECK(again.native() == handle);
        CHECK(cuctx::liveObjects().contexts == before + 1);
        ContextGuard inner(again);
        CHECK_FALSE(inner.switched());
    }
    // One retain was left to release, and was: the primary context is as it was before.
    CHECK(cuctx::liveObjects().contexts == before);
    int active = 0;
    REQUIRE(d.cuDevicePrimaryCtxGetState(device.native(), &flags, &active) == CUDA_SUCCESS);
    CHECK(active == activeBefore);
}

TEST_CASE("A borrowed context appears in the process report", "[borrow]")
{
    drainRawStack();
    const CUcontext handle = foreignCreate();
    {
        const Context borrowed = Context::borrow(handle);
        const cuctx::ProcessReport report = cuctx::processReport();
        bool found = false;
        for (const auto& c : report.contexts)
            found = found || (c.kind == "borrowed" && c.description.find("(borrowed)") != std::string::npos);
        CHECK(found);
    }
    REQUIRE(raw().cuCtxDestroy(handle) == CUDA_SUCCESS);
}

TEST_CASE("Borrowing a null handle is an error that leaves nothing behind", "[borrow]")
{
    drainRawStack();
    const auto before = cuctx::liveObjects();
    try {
        (void)Context::borrow(nullptr);
        FAIL("borrowing a null handle succeeded");
    } catch (const cuctx::Error& e) {
        CHECK(e.code() == Errc::invalid_argument);
        CHECK(std::string(e.what()).find("cuctx::Context::borrow") != std::string::npos);
    }
    CHECK(cuctx::liveObjects() == before);
    CHECK(rawCurrent() == nullptr);
}

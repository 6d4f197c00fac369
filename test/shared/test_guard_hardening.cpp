// Guards against hostile surroundings: foreign changes of the stack inside a guard, thread-locals
// destroyed in any order, threads that exit holding contexts, log sinks that call back into cuctx.
// Runs in both suites: against the fake driver on the CPU and against the real driver on the GPU.

#include "driver_helpers.hpp"
#include "process_helpers.hpp"
#include "thread_helpers.hpp"

#include "context/asymmetric_fence.hpp"
#include "context/thread_state.hpp"
#include "cuctx/context.hpp"
#include "cuctx/context_binding.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/error.hpp"
#include "cuctx/live_objects.hpp"
#include "cuctx/log.hpp"
#include "cuctx/process_report.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

using cuctx::Context;
using cuctx::ContextGuard;
using cuctx::ContextStack;
using cuctx::Device;
using cuctx::Errc;
using cuctx::test::errcOf;
using cuctx::test::onNewThread;
using cuctx::test::raw;
using cuctx::test::rawCurrent;

namespace {

// The driver's whole stack on this thread, bottom first, read by popping it (and left empty).
std::vector<CUcontext> drainAndRead()
{
    std::vector<CUcontext> top;
    CUcontext c = nullptr;
    for (int i = 0; i < 64 && raw().cuCtxGetCurrent(&c) == CUDA_SUCCESS && c != nullptr; ++i) {
        REQUIRE(raw().cuCtxPopCurrent(&c) == CUDA_SUCCESS);
        top.push_back(c);
    }
    return {top.rbegin(), top.rend()};
}

enum class Foreign { none, setCurrent, pushLeft, pop, popThenPush, setTwiceThenPush };
enum class Base { nothing, primarySetOutside, cuctxGuard };

const char* name(Foreign f)
{
    switch (f) {
    case Foreign::none: return "nothing";
    case Foreign::setCurrent: return "cuCtxSetCurrent(X)";
    case Foreign::pushLeft: return "cuCtxPushCurrent(X) left";
    case Foreign::pop: return "cuCtxPopCurrent";
    case Foreign::popThenPush: return "cuCtxPopCurrent, cuCtxPushCurrent(X)";
    case Foreign::setTwiceThenPush: return "cuCtxSetCurrent(X), cuCtxPushCurrent(X)";
    }
    return "?";
}

const char* name(Base b)
{
    switch (b) {
    case Base::nothing: return "nothing below";
    case Base::primarySetOutside: return "P set outside cuctx";
    case Base::cuctxGuard: return "an outer cuctx guard";
    }
    return "?";
}

void act(Foreign f, CUcontext x)
{
    CUcontext popped = nullptr;
    switch (f) {
    case Foreign::none: break;
    case Foreign::setCurrent: REQUIRE(raw().cuCtxSetCurrent(x) == CUDA_SUCCESS); break;
    case Foreign::pushLeft: REQUIRE(raw().cuCtxPushCurrent(x) == CUDA_SUCCESS); break;
    case Foreign::pop: REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS); break;
    case Foreign::popThenPush:
        REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
        REQUIRE(raw().cuCtxPushCurrent(x) == CUDA_SUCCESS);
        break;
    case Foreign::setTwiceThenPush:
        REQUIRE(raw().cuCtxSetCurrent(x) == CUDA_SUCCESS);
        REQUIRE(raw().cuCtxPushCurrent(x) == CUDA_SUCCESS);
        break;
    }
}

} // namespace

TEST_CASE("after a guard the driver's stack below it is exactly what it was, whatever foreign code did inside",
          "[guard]")
{
    const Context p = Context::primary(Device::get(0));
    const Context a = Context::create(Device::get(0));
    const Context outer = Context::create(Device::get(0));
    const Context x = Context::create(Device::get(0));
    for (Base base : {Base::nothing, Base::primarySetOutside, Base::cuctxGuard}) {
        for (const Context* guarded : {&p, &a}) {
            for (Foreign foreign : {Foreign::none, Foreign::setCurrent, Foreign::pushLeft, Foreign::pop,
                                    Foreign::popThenPush, Foreign::setTwiceThenPush}) {
                // A guard on the very context below it cannot see a foreign pop (it pops the
                // caller's entry, which is the same context) nor tell a push left behind from a
                // replaced top; those two are checked for what the error says, below.
                const bool sameAsBelow = base == Base::primarySetOutside && guarded == &p;
                if (sameAsBelow && (foreign == Foreign::pop || foreign == Foreign::pushLeft))
                    continue;
                for (bool warm : {false, true}) { // warm: the guard takes the inline switching path
                    DYNAMIC_SECTION(name(base) << ", guard on " << (guarded == &p ? "P" : "A") << ", foreign "
                                               << name(foreign) << (warm ? ", inline path" : ""))
                    {
                        onNewThread([&] {
                            std::vector<CUcontext> expected;
                            std::optional<ContextGuard> og;
                            if (base == Base::primarySetOutside) {
                                REQUIRE(raw().cuCtxSetCurrent(p.native()) == CUDA_SUCCESS);
                                expected = {p.native()};
                            } else if (base == Base::cuctxGuard) {
                                og.emplace(outer);
                                expected = {outer.native()};
                            }
                            if (warm)
                                ContextGuard once(*guarded);
                            {
                                ContextGuard g(*guarded);
                                CHECK(g.switched());
                                act(foreign, x.native());
                            }
                            // Two entries left above the caller's with nothing of cuctx's below: cuctx
                            // pops only down to entries it knows are there, and says what is left.
                            const bool unknowable = foreign == Foreign::setTwiceThenPush && base != Base::cuctxGuard;
                            const std::vector<CUcontext> after = drainAndRead();
                            if (!unknowable)
                                CHECK(after == expected);
                            if (unknowable) {
                                try {
                                    guarded->checkRecordedError();
                                    FAIL("the foreign change was not recorded");
                                } catch (const cuctx::Error& e) {
                                    CHECK_THAT(e.what(), Catch::Contains("could not restore the stack: the driver's "
                                                                         "current context is now context"));
                                }
                                REQUIRE(after.size() == expected.size() + 1);
                                CHECK(after.back() == x.native());
                                expected.push_back(x.native());
                            } else if (foreign == Foreign::none) {
                                CHECK_NOTHROW(guarded->checkRecordedError());
                            } else {
                                try {
                                    guarded->checkRecordedError();
                                    FAIL("the foreign change was not recorded");
                                } catch (const cuctx::Error& e) {
                                    CHECK(e.condition() == Errc::stack_mismatch);
                                    CHECK_THAT(e.what(), Catch::Contains("the stack below it is as it was"));
                                }
                            }
                            for (CUcontext c : expected) // put it back for the outer guard's exit
                                REQUIRE(raw().cuCtxPushCurrent(c) == CUDA_SUCCESS);
                            og.reset();
                            CHECK_NOTHROW(outer.checkRecordedError());
                        });
                    }
                }
            }
        }
    }
}

TEST_CASE("a guard on the context below it that meets a push left behind says what is left", "[guard]")
{
    const Context p = Context::primary(Device::get(0));
    const Context x = Context::create(Device::get(0));
    onNewThread([&] {
        REQUIRE(raw().cuCtxSetCurrent(p.native()) == CUDA_SUCCESS);
        {
            ContextGuard g(p);
            REQUIRE(raw().cuCtxPushCurrent(x.native()) == CUDA_SUCCESS);
        }
        CHECK(rawCurrent() == p.native());
        try {
            p.checkRecordedError();
            FAIL("the foreign push was not recorded");
        } catch (const cuctx::Error& e) {
            CHECK(e.condition() == Errc::stack_mismatch);
            CHECK_THAT(e.what(), Catch::Contains("a second entry of"));
        }
        cuctx::test::drainRawStack();
    });
}

TEST_CASE("a thread that exits holding a green context frees it for the next thread", "[green]")
{
    if (raw().cuGreenCtxCreate == nullptr) {
        WARN("this driver has no green contexts (CUDA 12.4); nothing to check");
        return;
    }
    const Context green = Context::green(Device::get(0), 8);
    onNewThread([&] { ContextStack::adopt(green); });     // ends with the adoption in place
    onNewThread([&] { ContextStack::push(green); });      // ends with a push in place
    onNewThread([&] { cuctx::ContextBinding b(green); }); // for comparison: a scoped binding
    bool entered = false;
    onNewThread([&] {
        ContextGuard g(green); // context_busy naming "thread 0" before the fix
        entered = rawCurrent() == green.native();
    });
    CHECK(entered);
    CHECK(green.threadsUsing().empty());
}

namespace {

// Captures what cuctx logs at warn and above while it lives.
struct CapturedWarnings {
    CapturedWarnings()
    {
        cuctx::setLogSink([this](cuctx::LogLevel level, std::string_view message) {
            if (level < cuctx::LogLevel::warn)
                return;
            std::lock_guard lock(mutex);
            lines.emplace_back(message);
        });
    }
    CapturedWarnings(const CapturedWarnings&) = delete;
    CapturedWarnings& operator=(const CapturedWarnings&) = delete;
    ~CapturedWarnings() { cuctx::setLogSink({}); }
    std::vector<std::string> take()
    {
        std::lock_guard lock(mutex);
        return std::move(lines);
    }
    std::mutex mutex;
    std::vector<std::string> lines;
};

bool registered(long tid)
{
    std::lock_guard lock(cuctx::detail::registryMutex());
    for (const cuctx::detail::ThreadState* ts : cuctx::detail::registeredThreads())
        if (ts->tid == tid)
            return true;
    return false;
}

// A thread-local binding, made before (or after) cuctx's own per-thread state and the driver's.
thread_local std::unique_ptr<cuctx::ContextBinding> t_binding;

} // namespace

TEST_CASE("a thread-local ContextBinding is safe in either order of thread-local destruction", "[adopt][registry]")
{
    const long before = cuctx::detail::liveContexts();
    for (bool bindingFirst : {true, false}) {
        DYNAMIC_SECTION((bindingFirst ? "binding's holder made first, destroyed last" : "binding's holder made last"))
        {
            CapturedWarnings warnings;
            long tid = 0;
            {
                Context ctx = Context::create(Device::get(0));
                std::thread([&, bindingFirst] {
                    tid = static_cast<long>(gettid());
                    if (bindingFirst)
                        t_binding.reset(); // the holder exists before anything of cuctx's or the driver's
                    else
                        (void)ContextStack::current(); // cuctx's state and the driver's stack first
                    t_binding = std::make_unique<cuctx::ContextBinding>(ctx);
                    REQUIRE(rawCurrent() == ctx.native());
                }).join();
                CHECK_FALSE(registered(tid)); // the dead thread's record is gone
                CHECK(ctx.threadsUsing().empty());
                CHECK_NOTHROW(ctx.checkRecordedError());
            }
            CHECK(cuctx::detail::liveContexts() == before); // the last handle destroyed it
            CHECK(warnings.take().empty());
        }
    }
}

TEST_CASE("a log sink may call back into cuctx: cuctx holds no lock of its own while it runs", "[registry]")
{
    const Context observed = Context::create(Device::get(0));
    std::atomic<long> delivered{0};
    cuctx::setLogSink([&](cuctx::LogLevel, std::string_view) {
        static thread_local bool inside = false; // what the calls below log comes back here
        ++delivered;
        if (inside)
            return;
        inside = true;
        (void)cuctx::liveObjects();
        (void)observed.threadsUsing();
        (void)cuctx::processReport({});
        inside = false;
    });
    const cuctx::LogLevel level = cuctx::logLevel();
    cuctx::setLogLevel(cuctx::LogLevel::trace);
    std::promise<void> finished;
    std::future<void> done = finished.get_future();
    std::thread worker([&] {
        try {
            // Logs while retaining and interning the primary context, and (below) while deferring
            // the destruction of a context another thread uses: both under the registry's lock before.
            Context p = Context::primary(Device::get(Device::count() - 1));
            Context c = Context::create(Device::get(0));
            std::promise<void> entered;
            std::promise<void> dropped;
            std::thread user([&, c]() mutable {
                ContextGuard g(c);
                c.reset();
                entered.set_value();
                dropped.get_future().wait();
            });
            entered.get_future().wait();
            c.reset(); // the last handle, while `user` has it entered
            dropped.set_value();
            user.join();
            finished.set_value();
        } catch (...) {
            finished.set_exception(std::current_exception());
        }
    });
    const bool finishedInTime = done.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
    if (!finishedInTime) {
        worker.detach(); // deadlocked: it can never be joined
        FAIL("a log sink that calls back into cuctx deadlocked");
    }
    worker.join();
    cuctx::setLogLevel(level);
    cuctx::setLogSink({});
    done.get();
    CHECK(delivered.load() > 0);
}

TEST_CASE("a guard destroyed on another thread is reported and leaves both threads' records intact", "[guard]")
{
    const Context ctx = Context::create(Device::get(0));
    const Context other = Context::create(Device::get(0));
    onNewThread([&] {
        auto guard = std::make_unique<ContextGuard>(ctx); // switching: its frame is in this thread's record
        REQUIRE(guard->switched());
        bool otherThreadIntact = false;
        std::thread([&] {
            const CUcontext before = rawCurrent();
            guard.reset(); // the misuse: a thread-bound guard ends on another thread
            otherThreadIntact = rawCurrent() == before && ContextStack::depth() == 0;
        }).join();
        CHECK(otherThreadIntact);
        // This thread's record still shows the context, which is still on its driver stack, as an
        // entry of its own that it may pop; its guards keep working on top of it.
        REQUIRE(ContextStack::depth() == 1);
        CHECK(ContextStack::snapshot()[0].handle == ctx.native());
        CHECK(rawCurrent() == ctx.native());
        {
            ContextGuard g(other);
            CHECK(rawCurrent() == other.native());
        }
        {
            ContextGuard g(ctx);
            CHECK_FALSE(g.switched());
        }
        try {
            ctx.checkRecordedError();
            FAIL("the misuse was not reported");
        } catch (const cuctx::Error& e) {
            CHECK(e.condition() == Errc::invalid_state);
            CHECK_THAT(e.what(), Catch::Contains("thread-bound"));
        }
        CHECK(ContextStack::pop() == ctx);
        CHECK(rawCurrent() == nullptr);
    });
    CHECK(ctx.threadsUsing().empty());
}

TEST_CASE("a guard ended out of order or on another thread leaves the ending thread's own context current", "[guard]")
{
    // Whatever lies on top of the ending thread's stack, an entry of cuctx's or a context that code
    // outside cuctx pushed, is still current there after the misuse. (An exit that popped before it
    // checked its entry, a layout measured in docs/switching-runs.md, would have to put it back.)
    const Context ctx = Context::create(Device::get(0));
    const Context mine = Context::create(Device::get(0));
    const Context theirs = Context::create(Device::get(0));
    onNewThread([&] {
        auto guard = std::make_unique<ContextGuard>(ctx);
        REQUIRE(guard->switched());
        CUcontext afterCuctx = nullptr;
        CUcontext afterForeign = nullptr;
        std::size_t depthAfter = 99;
        onNewThread([&] {
            {
                ContextGuard own(mine); // this thread's own entry on top of its stack
                guard.reset();
                afterCuctx = rawCurrent();
                depthAfter = ContextStack::depth();
            }
            ContextGuard second(ctx);
            auto handed = std::make_unique<ContextGuard>(mine);
            onNewThread([&] {
                // A context pushed by code outside cuctx on top of the ending thread's stack.
                REQUIRE(raw().cuCtxPushCurrent(theirs.native()) == CUDA_SUCCESS);
                handed.reset();
                afterForeign = rawCurrent();
                CUcontext popped = nullptr;
                CHECK(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
            });
            CHECK(rawCurrent() == mine.native()); // the handed guard's context stays pushed here
            CHECK(errcOf([&] { mine.checkRecordedError(); }) == Errc::invalid_state);
            CHECK(ContextStack::pop() == mine);
        });
        CHECK(afterCuctx == mine.native());
        CHECK(depthAfter == 1);
        CHECK(afterForeign == theirs.native());
        CHECK(rawCurrent() == ctx.native()); // still pushed on the making thread
        CHECK(errcOf([&] { ctx.checkRecordedError(); }) == Errc::invalid_state);
        CHECK(ContextStack::pop() == ctx);
    });
    onNewThread([&] { // out of order on one thread, under a context pushed outside cuctx
        auto first = std::make_unique<ContextGuard>(ctx);
        {
            ContextGuard second(mine);
            REQUIRE(raw().cuCtxPushCurrent(theirs.native()) == CUDA_SUCCESS);
            first.reset(); // before `second`, made after it
            CHECK(rawCurrent() == theirs.native());
            CUcontext popped = nullptr;
            CHECK(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
            CHECK(popped == theirs.native());
        }
        CHECK(rawCurrent() == ctx.native()); // the first guard's entry, kept as a push
        CHECK(errcOf([&] { ctx.checkRecordedError(); }) == Errc::stack_mismatch);
        CHECK(ContextStack::pop() == ctx);
        CHECK(rawCurrent() == nullptr);
    });
}

TEST_CASE("guards never report a recorded error, on the inline path or out of line; the next fallible call does",
          "[guard]")
{
    const Context ctx = Context::create(Device::get(0));
    const Context x = Context::create(Device::get(0));
    const auto record = [&] { // a foreign change inside a guard records a mismatch on ctx
        ContextGuard g(ctx);
        REQUIRE(raw().cuCtxSetCurrent(x.native()) == CUDA_SUCCESS);
    };
    onNewThread([&] {
        record();
        CHECK_NOTHROW(ContextGuard(ctx)); // inline: ctx is the context this thread switched to last
    });
    onNewThread([&] {
        CHECK_NOTHROW(ContextGuard(ctx)); // out of line: a thread new to cuctx
        CHECK_NOTHROW(ContextGuard(ctx, cuctx::verifyCurrent));
        {
            ContextGuard outer(x);
            CHECK_NOTHROW(ContextGuard(ctx)); // out of line: not the last context switched to
        }
    });
    CHECK(cuctx::test::rawCurrent() == nullptr);
    CHECK(errcOf([&] { ctx.synchronize(); }) == Errc::stack_mismatch); // reported once, here
    CHECK_NOTHROW(ctx.checkRecordedError());
}

TEST_CASE("in a forked child the fork error names the cuctx call that met it", "[fork]")
{
    const Context ctx = Context::create(Device::get(0));
    const Context other = Context::create(Device::get(0));
    {
        ContextGuard warm(other); // the parent's inline paths are ready: the child must not take them
    }
    // Each call in a child of its own (exit 0: the error names `call`; 1: no error; 2: another name).
    const auto names = [](const char* call, auto body) {
        return cuctx::test::inChild([&] {
            try {
                body();
                return 1;
            } catch (const cuctx::Error& e) {
                const std::string what = e.what();
                return e.condition() == Errc::forked_after_init && what.rfind(call, 0) == 0 &&
                               what.find("Driver::load") == std::string::npos
                           ? 0
                           : 2;
            }
        });
    };
    CHECK(names("cuctx::ContextGuard", [&] { ContextGuard g(ctx); }) == 0);
    CHECK(names("cuctx::ContextGuard", [&] { ContextGuard g(other); }) == 0);
    CHECK(names("cuctx::ContextGuard", [&] { ContextGuard g(ctx, cuctx::verifyCurrent); }) == 0);
    CHECK(names("cuctx::ContextStack::push", [&] { ContextStack::push(ctx); }) == 0);
    CHECK(names("cuctx::ContextStack::adopt", [&] { ContextStack::adopt(ctx); }) == 0);
    CHECK(names("cuctx::ContextStack::verify", [] { ContextStack::verify(); }) == 0);
    CHECK(names("cuctx::Context::synchronize", [&] { ctx.synchronize(); }) == 0);
    const Device dev = Device::get(0);
    CHECK(names("cuctx::Context::create", [&] { (void)Context::create(dev); }) == 0);
}

TEST_CASE("the fence mode may change while threads leave contexts and drop handles", "[registry]")
{
    using cuctx::detail::FenceMode;
    const FenceMode original = cuctx::detail::g_fenceMode.load();
    // Both modes asymmetric (or both not), so that switching keeps the destruction protocol sound
    // for the threads racing it; ThreadSanitizer checks the accesses to the mode itself.
#if defined(__x86_64__)
    const FenceMode alternate = original == FenceMode::none ? FenceMode::none : FenceMode::mprotect;
#else
    const FenceMode alternate = original;
#endif
    const Context shared = Context::create(Device::get(0));
    const long before = cuctx::detail::liveContexts();
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    threads.reserve(2);
    for (int t = 0; t < 2; ++t)
        threads.emplace_back([&] {
            while (!stop.load()) {
                ContextGuard g(shared); // its last use ends at every exit: the frequent side
            }
        });
    threads.emplace_back([&] {
        while (!stop.load()) {
            Context c = Context::create(Device::get(0));
            ContextGuard g(c);
            c.reset(); // the last handle, dropped while in use: the rare side, then the deferred end
        }
    });
    for (int i = 0; i < 2000; ++i)
        cuctx::detail::setFenceMode(i % 2 == 0 ? alternate : original);
    stop.store(true);
    for (std::thread& t : threads)
        t.join();
    cuctx::detail::setFenceMode(original);
    CHECK(cuctx::detail::liveContexts() == before);
    CHECK_NOTHROW(shared.checkRecordedError());
}

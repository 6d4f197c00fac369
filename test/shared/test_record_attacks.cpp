// SPDX-License-Identifier: MIT
// Adversarial uses of the per-thread context record (guards, pushes, an adoption, green contexts,
// misuse across threads, lifetime races), as users will write them. Runs in both suites.

#include "driver_helpers.hpp"
#include "process_helpers.hpp"
#include "thread_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_binding.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/error.hpp"
#include "cuctx/live_objects.hpp"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using cuctx::Context;
using cuctx::ContextGuard;
using cuctx::ContextStack;
using cuctx::Device;
using cuctx::Errc;
using cuctx::test::errcOf;
using cuctx::test::Event;
using cuctx::test::onNewThread;
using cuctx::test::raw;
using cuctx::test::rawCurrent;

namespace {

long live()
{
    return cuctx::liveObjects().contexts;
}

// What the driver has current, without Catch's assertions (not thread-safe): for the stress threads.
// nullptr where the call fails, which no entered context equals.
CUcontext currentUnchecked()
{
    CUcontext c = nullptr;
    return raw().cuCtxGetCurrent(&c) == CUDA_SUCCESS ? c : nullptr;
}

// The driver still has the context (a use after destroy would fail with 709 or worse).
bool usable()
{
    return raw().cuCtxSynchronize() == CUDA_SUCCESS;
}

// Nothing changed: the same depth, the same top, and cuctx agrees with the driver.
void checkUnchanged(std::size_t depth, CUcontext top)
{
    CHECK(ContextStack::depth() == depth);
    CHECK(rawCurrent() == top);
    CHECK_FALSE(ContextStack::drift().has_value());
}

// An empty handle, in each way of entering, at the current depth: invalid_argument, nothing changed.
void checkEmptyRefused(bool full)
{
    const std::size_t depth = ContextStack::depth();
    const CUcontext top = rawCurrent();
    const Context empty;
    const auto ok = [full](Errc e) { return e == Errc::invalid_argument || (full && e == Errc::invalid_state); };
    CHECK(ok(errcOf([&] { ContextGuard g(empty); })));
    checkUnchanged(depth, top);
    CHECK(ok(errcOf([&] { ContextGuard g(empty, cuctx::verifyCurrent); })));
    checkUnchanged(depth, top);
    CHECK(ok(errcOf([&] { ContextStack::push(empty); })));
    checkUnchanged(depth, top);
    const Errc adoptErr = errcOf([&] { ContextStack::adopt(empty); });
    CHECK((adoptErr == Errc::invalid_argument || adoptErr == Errc::invalid_state));
    checkUnchanged(depth, top);
    const Errc bindErr = errcOf([&] { cuctx::ContextBinding b(empty); });
    CHECK((bindErr == Errc::invalid_argument || bindErr == Errc::invalid_state));
    checkUnchanged(depth, top);
}

} // namespace

TEST_CASE("31 entries mixing guards, pushes and an adoption; the 32nd changes nothing; all unwinds", "[record]")
{
    const long before = live();
    onNewThread([&] {
        constexpr std::size_t most = cuctx::detail::kRecordEntries - 1;
        Context home = Context::create(Device::get(0));
        Context b = Context::create(Device::get(0));
        Context c = Context::create(Device::get(0));
        checkEmptyRefused(false); // depth 0
        ContextStack::adopt(home);
        checkEmptyRefused(false); // depth 1
        // Entry k (2..31): a push every third, else a guard; b and c alternate so each switches.
        std::vector<std::unique_ptr<ContextGuard>> guards(most + 1);
        std::vector<bool> pushed(most + 1, false);
        for (std::size_t k = 2; k <= most; ++k) {
            const Context& ctx = k % 2 == 0 ? b : c;
            if (k % 3 == 0) {
                ContextStack::push(ctx);
                pushed[k] = true;
            } else {
                guards[k] = std::make_unique<ContextGuard>(ctx);
                REQUIRE(guards[k]->switched());
            }
            REQUIRE(ContextStack::depth() == k);
            REQUIRE(rawCurrent() == ctx.native());
            if (k == most - 1)
                checkEmptyRefused(false); // depth 30
        }
        const auto snap = ContextStack::snapshot();
        REQUIRE(snap.size() == most);
        CHECK(snap[0].kind == "adopted");
        CHECK(snap[2].kind == "push");
        CHECK(snap[3].kind == "guard");
        const CUcontext top = rawCurrent();
        const Context& onTop = most % 2 == 0 ? b : c;
        const Context& below = most % 2 == 0 ? c : b;
        checkEmptyRefused(true); // depth 31
        CHECK(errcOf([&] { ContextGuard g(below); }) == Errc::invalid_state);
        checkUnchanged(most, top);
        CHECK(errcOf([&] { ContextGuard g(below, cuctx::verifyCurrent); }) == Errc::invalid_state);
        checkUnchanged(most, top);
        CHECK(errcOf([&] { ContextGuard g(home); }) == Errc::invalid_state); // the adopted one, not on top
        checkUnchanged(most, top);
        CHECK(errcOf([&] { ContextStack::push(onTop); }) == Errc::invalid_state); // a duplicate push is an entry
        checkUnchanged(most, top);
        CHECK(errcOf([&] { ContextStack::push(below); }) == Errc::invalid_state);
        checkUnchanged(most, top);
        CHECK(errcOf([&] { ContextStack::adopt(below); }) == Errc::invalid_state);
        checkUnchanged(most, top);
        {
            ContextGuard elided(onTop);
            CHECK_FALSE(elided.switched());
        }
        checkUnchanged(most, top);
        // The top's pop() must refuse a guard's entry, and release() anything but the adoption on top.
        if (!pushed[most])
            CHECK(errcOf([] { (void)ContextStack::pop(); }) == Errc::invalid_state);
        CHECK(errcOf([] { ContextStack::release(); }) == Errc::invalid_state);
        checkUnchanged(most, top);
        // Drop every handle: the entries keep the contexts alive.
        b = Context();
        c = Context();
        CHECK(live() == before + 3);
        for (std::size_t k = most; k >= 2; --k) {
            if (pushed[k])
                CHECK(ContextStack::pop().native() == snap[k - 1].handle);
            else
                guards[k].reset();
            REQUIRE(ContextStack::depth() == k - 1);
            REQUIRE(rawCurrent() == snap[k - 2].handle);
            CHECK_FALSE(ContextStack::drift().has_value());
        }
        CHECK(live() == before + 1); // b and c went with their last entries
        ContextStack::release();
        checkUnchanged(0, nullptr);
        CHECK(ContextStack::adopted() == Context());
    });
    CHECK(live() == before);
}

TEST_CASE("ContextStack::pop and release refuse a guard's entry on top and change nothing", "[record]")
{
    onNewThread([] {
        Context a = Context::create(Device::get(0));
        Context b = Context::create(Device::get(0));
        ContextStack::adopt(a);
        ContextStack::push(b);
        {
            ContextGuard g(a);
            REQUIRE(g.switched());
            CHECK(errcOf([] { (void)ContextStack::pop(); }) == Errc::invalid_state);
            CHECK(errcOf([] { ContextStack::release(); }) == Errc::invalid_state);
            checkUnchanged(3, a.native());
        }
        CHECK(errcOf([] { ContextStack::release(); }) == Errc::invalid_state); // the push is on top
        checkUnchanged(2, b.native());
        CHECK(ContextStack::pop() == b);
        ContextStack::release();
        checkUnchanged(0, nullptr);
    });
}

TEST_CASE("guards destroyed out of order leave pushes that unwind, release and destroy exactly once", "[record]")
{
    const long before = live();
    onNewThread([&] {
        Context a = Context::create(Device::get(0));
        Context b = Context::create(Device::get(0));
        std::optional<ContextGuard> g1(std::in_place, a);
        auto g2 = std::make_unique<ContextGuard>(b);
        std::optional<ContextGuard> g3(std::in_place, a); // inline switching: the second guard on a here
        REQUIRE(g3->switched());
        a = Context(); // the last handles go; the entries hold both
        b = Context();
        g1.reset(); // out of order: stays a push of this thread
        CHECK(ContextStack::depth() == 3);
        CHECK_FALSE(ContextStack::drift().has_value());
        CHECK(usable());
        g2.reset(); // out of order too
        CHECK(ContextStack::depth() == 3);
        CHECK(live() == before + 2);
        g3.reset(); // on top: pops
        CHECK(ContextStack::depth() == 2);
        CHECK_FALSE(ContextStack::drift().has_value());
        CHECK(live() == before + 2);
        const auto snap = ContextStack::snapshot();
        REQUIRE(snap.size() == 2);
        CHECK(snap[0].kind == "push");
        CHECK(snap[1].kind == "push");
        // Pops b (its last entry and handle) and reports g2's misuse, recorded on b.
        CHECK(errcOf([] { (void)ContextStack::pop(); }) == Errc::stack_mismatch);
        CHECK(ContextStack::depth() == 1);
        CHECK(rawCurrent() == snap[0].handle);
        CHECK_FALSE(ContextStack::drift().has_value());
        CHECK(live() == before + 1);
        CHECK(usable()); // a is still current and alive
        // The thread exits with a's push left: its exit releases and destroys it.
    });
    CHECK(live() == before);
}

TEST_CASE("a switching guard destroyed on another thread becomes the maker's push, released at its exit", "[record]")
{
    const long before = live();
    std::unique_ptr<ContextGuard> handed;
    Event made, destroyed;
    Context b = Context::create(Device::get(0));
    std::thread maker([&] {
        {
            Context a = Context::create(Device::get(0));
            handed = std::make_unique<ContextGuard>(a); // depth 1, holds a's only handle below
        }
        ContextGuard inner(b); // depth 2: pushed after it
        made.set();
        destroyed.wait();
        CHECK(ContextStack::depth() == 2);
        CHECK(rawCurrent() == b.native());
        CHECK(usable());
        CHECK_FALSE(ContextStack::drift().has_value());
    });
    made.wait();
    {
        ContextGuard mine(b); // this thread is inside a guard of its own meanwhile
        handed.reset();
        CHECK(ContextStack::depth() == 1);
        CHECK(rawCurrent() == b.native());
    }
    CHECK(ContextStack::depth() == 0);
    destroyed.set();
    maker.join();
    CHECK(live() == before + 1); // a, released at the maker's exit
}

TEST_CASE("an elided guard destroyed on another thread changes neither thread's record", "[record]")
{
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    std::unique_ptr<ContextGuard> handed;
    Event made, destroyed;
    std::thread maker([&] {
        ContextGuard outer(a);
        handed = std::make_unique<ContextGuard>(a);
        REQUIRE_FALSE(handed->switched());
        made.set();
        destroyed.wait();
        CHECK(ContextStack::depth() == 1);
        CHECK(rawCurrent() == a.native());
        CHECK(a.threadsUsing().size() == 1);
    });
    made.wait();
    {
        ContextGuard mine(a); // the same context entered here too
        ContextGuard other(b);
        handed.reset();
        checkUnchanged(2, b.native());
    }
    destroyed.set();
    maker.join();
    CHECK(a.threadsUsing().empty());
}

TEST_CASE("a guard that outlives its thread is destroyed safely on another thread", "[record]")
{
    const long before = live();
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    for (bool sameContext : {false, true}) {
        DYNAMIC_SECTION("the next thread enters " << (sameContext ? "the same context" : "another context"))
        {
            std::unique_ptr<ContextGuard> orphan;
            std::thread([&] { orphan = std::make_unique<ContextGuard>(a); }).join(); // its thread is gone
            CHECK(a.threadsUsing().empty());
            // A new thread likely reuses the dead one's TLS: its entry at depth 1 lies where the
            // orphan's did.
            Event entered, destroyed;
            std::thread next([&] {
                const Context& ctx = sameContext ? a : b;
                {
                    ContextGuard g(ctx);
                    REQUIRE(g.switched());
                    entered.set();
                    destroyed.wait();
                    CHECK(ContextStack::depth() == 1);
                    CHECK(rawCurrent() == ctx.native());
                    CHECK_FALSE(ContextStack::drift().has_value());
                }
                checkUnchanged(0, nullptr);
                CHECK(ContextStack::snapshot().empty());
                {
                    ContextGuard again(ctx); // the record still works
                    CHECK(again.switched());
                }
                checkUnchanged(0, nullptr);
            });
            entered.wait();
            orphan.reset();
            destroyed.set();
            next.join();
            checkUnchanged(0, nullptr);
        }
    }
    a = Context();
    b = Context();
    CHECK(live() == before);
    // Its context's last handle gone with its thread: the guard still has it in use until it ends.
    std::unique_ptr<ContextGuard> orphan;
    std::thread([&] {
        Context c = Context::create(Device::get(0));
        orphan = std::make_unique<ContextGuard>(c);
    }).join();
    CHECK(live() == before + 1);
    orphan.reset();
    CHECK(live() == before);
}

TEST_CASE("a guard that outlived its thread, ended where a later thread reuses its storage, is told apart", "[record]")
{
    const long before = live();
    for (int own = 0; own <= 2; ++own) { // the later thread's own guards when it ends the orphan: 0, 1 or 2
        DYNAMIC_SECTION("the later thread is " << own << " deep")
        {
            std::optional<Context> x(Context::create(Device::get(0)));
            Context y = Context::create(Device::get(0));
            Context z = Context::create(Device::get(0));
            std::unique_ptr<ContextGuard> orphan;
            const void* makerRecord = nullptr;
            std::thread([&] {
                makerRecord = &cuctx::detail::t_record;
                orphan = std::make_unique<ContextGuard>(*x); // entry 1 of a record that is about to go
            }).join();
            bool reused = false;
            std::thread([&] {
                reused = &cuctx::detail::t_record == makerRecord; // glibc reuses a joined thread's stack
                std::optional<ContextGuard> gy;
                std::optional<ContextGuard> gz;
                if (own >= 1)
                    gy.emplace(y);
                if (own >= 2)
                    gz.emplace(z); // entry 2, above where the orphan's entry 1 lies (own == 1: the same place)
                const std::size_t depth = ContextStack::depth();
                const CUcontext top = rawCurrent();
                const auto snapshot = ContextStack::snapshot();
                orphan.reset();
                {
                    // Nothing of this thread's changed, and the misuse is recorded on the orphan's context
                    // (own == 1: this thread's entry of y lies where the orphan's of x did; the inline
                    // exit pops y, and the slow path puts it back).
                    checkUnchanged(depth, top);
                    const auto after = ContextStack::snapshot();
                    REQUIRE(after.size() == snapshot.size());
                    for (std::size_t i = 0; i < after.size(); ++i) {
                        CHECK(after[i].kind == snapshot[i].kind);
                        CHECK(after[i].handle == snapshot[i].handle);
                    }
                    CHECK(errcOf([&] { x->checkRecordedError(); }) == Errc::invalid_state);
                    CHECK_NOTHROW(y.checkRecordedError());
                }
                gz.reset();
                gy.reset();
                checkUnchanged(0, nullptr);
                ContextGuard again(y);
                CHECK(again.switched());
                CHECK(usable());
            }).join();
            if (!reused)
                WARN("the later thread did not reuse the exited one's storage: the other-thread path ran");
            x.reset();
            CHECK(live() == before + 2); // the orphan's use ended: x destroyed with its last handle
        }
    }
    CHECK(live() == before);
}

TEST_CASE("a guard that outlived its thread leaves alone a push, adoption or binding of its context where it lay",
          "[record]")
{
    // The later thread's own entry of the same context lies where the exited thread's guard's did: the
    // guard's inline exit finds its place on top and the driver pops its context, yet the entry is
    // not the guard's. Taken for the guard's, the entry's handle leaked, and the mark that says it
    // keeps one stayed on its place, so that a later guard there was popped as a push, dropping a
    // handle it never took (its context destroyed under a live Context). With code outside cuctx
    // having pushed another context over that entry (drift), the guard's pop takes that one instead.
    const long before = live();
    for (int kind = 0; kind < 6; ++kind) {
        const bool drift = kind >= 3;
        DYNAMIC_SECTION("the later thread's entry: " << (kind % 3 == 0   ? "push"
                                                         : kind % 3 == 1 ? "adoption"
                                                                         : "binding")
                                                     << (drift ? ", a raw push over it" : ""))
        {
            std::optional<Context> x(Context::create(Device::get(0)));
            Context y = Context::create(Device::get(0));
            std::unique_ptr<ContextGuard> orphan;
            const void* makerRecord = nullptr;
            onNewThread([&] {
                makerRecord = &cuctx::detail::t_record;
                {
                    ContextGuard warm(*x); // registers the thread: the next guard takes the inline path
                }
                orphan = std::make_unique<ContextGuard>(*x); // entry 1 of a record that is about to go
            });
            bool reused = false;
            onNewThread([&] {
                reused = &cuctx::detail::t_record == makerRecord; // glibc reuses a joined thread's stack
                {
                    std::optional<cuctx::ContextBinding> binding;
                    if (kind % 3 == 0)
                        ContextStack::push(*x);
                    else if (kind % 3 == 1)
                        ContextStack::adopt(*x);
                    else
                        binding.emplace(*x);
                    const auto snapshot = ContextStack::snapshot();
                    REQUIRE(snapshot.size() == 1);
                    if (drift)
                        REQUIRE(raw().cuCtxPushCurrent(y.native()) == CUDA_SUCCESS);
                    orphan.reset();
                    // This thread's entry is still there, of its kind, and the driver's stack as it was;
                    // the misuse is recorded.
                    const auto after = ContextStack::snapshot();
                    REQUIRE(after.size() == 1);
                    CHECK(after[0].kind == snapshot[0].kind);
                    CHECK(after[0].handle == x->native());
                    CHECK(rawCurrent() == (drift ? y.native() : x->native()));
                    CHECK(errcOf([&] { x->checkRecordedError(); }) == Errc::invalid_state);
                    CHECK(usable());
                    if (drift) {
                        CUcontext popped = nullptr;
                        REQUIRE(raw().cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
                        CHECK(popped == y.native());
                    }
                    if (kind % 3 == 0)
                        CHECK(ContextStack::pop() == *x);
                    else if (kind % 3 == 1)
                        ContextStack::release();
                }
                checkUnchanged(0, nullptr);
                // A guard on another context where the entry lay is a guard, not a push or adoption.
                ContextGuard gy(y);
                const auto snapshot = ContextStack::snapshot();
                REQUIRE(snapshot.size() == 1);
                CHECK(snapshot[0].kind == "guard");
                CHECK(errcOf([] { (void)ContextStack::pop(); }) == Errc::invalid_state);
                CHECK(usable());
            });
            if (!reused)
                WARN("the later thread did not reuse the exited one's storage: the other-thread path ran");
            CHECK(live() == before + 2);
            x.reset();
            CHECK(live() == before + 1); // x's handles are all gone: destroyed, none leaked
            ContextGuard gy(y);
            CHECK(usable());
        }
    }
    CHECK(live() == before);
}

TEST_CASE("the last handle dropped under nested entries goes with the thread's last entry of it", "[record]")
{
    const long before = live();
    for (int kind = 0; kind < 3; ++kind) {
        DYNAMIC_SECTION("outermost entry: " << (kind == 0 ? "guard" : kind == 1 ? "push" : "adoption"))
        {
            onNewThread([&] {
                Context a = Context::create(Device::get(0));
                Context b = Context::create(Device::get(0));
                {
                    ContextGuard warm(a); // so that the next guards on a take the inline path
                }
                std::optional<ContextGuard> outer;
                if (kind == 0)
                    outer.emplace(a);
                else if (kind == 1)
                    ContextStack::push(a);
                else
                    ContextStack::adopt(a);
                {
                    ContextGuard mid(b);
                    {
                        ContextGuard inner(a); // inline switching: the thread's second entry of a
                        REQUIRE(inner.switched());
                        {
                            ContextGuard elided(a);
                            a = Context(); // the last handle
                            CHECK(live() == before + 2);
                        }
                        CHECK(live() == before + 2); // the elided guard's end changes nothing
                        CHECK(usable());
                    }
                    CHECK(live() == before + 2); // still the outer entry of a
                    {
                        ContextGuard again(b);
                        CHECK_FALSE(again.switched());
                    }
                }
                CHECK(usable());
                CHECK(live() == before + 2);
                if (kind == 0)
                    outer.reset();
                else if (kind == 1)
                    (void)ContextStack::pop();
                else
                    ContextStack::release();
                CHECK(live() == before + 1);
                checkUnchanged(0, nullptr);
            });
            CHECK(live() == before);
        }
    }
}

TEST_CASE("the last handle dropped by another thread inside a thread's inline guard defers destruction", "[record]")
{
    const long before = live();
    Context a = Context::create(Device::get(0));
    Event entered, dropped;
    long liveInside = -1, liveAfter = -1;
    bool workedAfterDrop = false;
    std::thread user([&] {
        Context mine = a;
        {
            ContextGuard warm(mine);
        }
        {
            ContextGuard g(mine); // inline switching
            REQUIRE(g.switched());
            mine = Context(); // the user's own handle goes too (its guard's ref stays)
            entered.set();
            dropped.wait();
            workedAfterDrop = usable();
            liveInside = live();
        }
        liveAfter = live();
    });
    entered.wait();
    a = Context();
    dropped.set();
    user.join();
    CHECK(workedAfterDrop);
    CHECK(liveInside == before + 1);
    CHECK(liveAfter == before);
}

TEST_CASE("borrowing a context whose last handle is gone while it is entered revives cuctx's own", "[record]")
{
    const long before = live();
    onNewThread([&] {
        Context x = Context::create(Device::get(0));
        const CUcontext handle = x.native();
        for (int round = 0; round < 2; ++round) { // the second time on the inline path
            std::optional<Context> borrowed;
            {
                ContextGuard g(x);
                x.reset(); // the last handle: destruction waits for the guard
                borrowed.emplace(Context::borrow(ContextStack::current()));
                CHECK(live() == before + 1); // one state, not a second one for the same CUcontext
                CHECK(borrowed->native() == handle);
                CHECK_FALSE(borrowed->isBorrowed()); // cuctx's own, which cuctx destroys
            }
            CHECK(live() == before + 1); // the revived handle keeps it
            {
                ContextGuard again(*borrowed);
                CHECK(again.switched());
                CHECK(usable());
            }
            x = std::move(*borrowed);
        }
        x.reset();
        CHECK(live() == before);
        checkUnchanged(0, nullptr);
    });
    CHECK(live() == before);
}

TEST_CASE("threads entering, dropping and replacing shared contexts at random destroy each once, never early",
          "[record][stress]")
{
    const long before = live();
    constexpr int kThreads = 8;
    constexpr int kSlots = 4;
    // On a GPU a context takes 100-200 ms to create: fewer rounds there, the same patterns.
    constexpr int kRounds = cuctx::test::kFakeDriver ? 300 : 6;
    std::mutex mutex;
    std::vector<Context> slots;
    slots.reserve(kSlots);
    for (int i = 0; i < kSlots; ++i)
        slots.push_back(Context::create(Device::get(0)));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(static_cast<unsigned>(1234 + t));
            auto pick = [&] {
                std::lock_guard lock(mutex);
                return slots[rng() % kSlots];
            };
            try {
                for (int round = 0; round < kRounds; ++round) {
                    std::vector<std::unique_ptr<ContextGuard>> guards;
                    std::vector<int> kinds; // 0 guard, 1 push, 2 adoption
                    std::vector<CUcontext> natives;
                    std::vector<std::size_t> depths{0}; // cuctx's depth after each enter (an elided guard adds none)
                    const int depth = 1 + static_cast<int>(rng() % 6);
                    for (int d = 0; d < depth; ++d) {
                        Context ctx = pick();
                        const unsigned k = rng() % 5;
                        if (k == 0 && d == 0) {
                            ContextStack::adopt(ctx);
                            kinds.push_back(2);
                        } else if (k == 1) {
                            ContextStack::push(ctx);
                            kinds.push_back(1);
                        } else {
                            guards.push_back(std::make_unique<ContextGuard>(ctx));
                            kinds.push_back(0);
                        }
                        natives.push_back(ctx.native());
                        depths.push_back(ContextStack::depth());
                        if (currentUnchecked() != ctx.native() || !usable())
                            ++failures;
                        if (rng() % 3 == 0) { // replace a shared context: maybe the last handle of one in use
                            Context fresh = Context::create(Device::get(0));
                            std::lock_guard lock(mutex);
                            slots[rng() % kSlots] = std::move(fresh);
                        }
                    } // this thread's own handles go: only the entries and the slots keep them now
                    for (int d = depth - 1; d >= 0; --d) {
                        if (currentUnchecked() != natives[static_cast<std::size_t>(d)] || !usable())
                            ++failures;
                        if (kinds[static_cast<std::size_t>(d)] == 0)
                            guards.pop_back();
                        else if (kinds[static_cast<std::size_t>(d)] == 1)
                            (void)ContextStack::pop();
                        else
                            ContextStack::release();
                        if (ContextStack::drift().has_value() ||
                            ContextStack::depth() != depths[static_cast<std::size_t>(d)])
                            ++failures;
                    }
                }
            } catch (...) {
                ++failures;
            }
        });
    }
    for (std::thread& t : threads)
        t.join();
    CHECK(failures.load() == 0);
    slots.clear();
    CHECK(live() == before);
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_live_contexts() == static_cast<int>(before));
#endif
}

TEST_CASE("a green context: one thread at a time, nested guards, free after the last entry", "[record][green]")
{
    if (raw().cuGreenCtxCreate == nullptr) {
        WARN("this driver has no green contexts (CUDA 12.4); nothing to check");
        return;
    }
    const Context green = Context::green(Device::get(0), 8);
    const Context plain = Context::create(Device::get(0));
    Event step1, step2, step3, checked1, checked2, checked3;
    std::thread owner([&] {
        std::optional<ContextGuard> g1(std::in_place, green);
        std::optional<ContextGuard> mid(std::in_place, plain);
        std::optional<ContextGuard> g2(std::in_place, green); // nested on the same thread: fine
        CHECK(g2->switched());
        {
            ContextGuard elided(green);
            CHECK_FALSE(elided.switched());
        }
        step1.set();
        checked1.wait();
        g2.reset(); // not the last entry: still this thread's
        mid.reset();
        step2.set();
        checked2.wait();
        g1.reset(); // the last entry: free
        step3.set();
        checked3.wait();
    });
    step1.wait();
    CHECK(errcOf([&] { ContextGuard g(green); }) == Errc::context_busy);
    CHECK(errcOf([&] { ContextStack::push(green); }) == Errc::context_busy);
    CHECK(errcOf([&] { ContextStack::adopt(green); }) == Errc::context_busy);
    checkUnchanged(0, nullptr);
    checked1.set();
    step2.wait();
    CHECK(errcOf([&] { ContextGuard g(green); }) == Errc::context_busy);
    checkUnchanged(0, nullptr);
    checked2.set();
    step3.wait();
    {
        ContextGuard g(green);
        CHECK(rawCurrent() == green.native());
    }
    checked3.set();
    owner.join();
    checkUnchanged(0, nullptr);
}

TEST_CASE("a green guard destroyed on another thread keeps the context its maker's until it pops", "[record][green]")
{
    if (raw().cuGreenCtxCreate == nullptr) {
        WARN("this driver has no green contexts (CUDA 12.4); nothing to check");
        return;
    }
    const Context green = Context::green(Device::get(0), 8);
    std::unique_ptr<ContextGuard> handed;
    Event made, destroyed, popped, checked;
    std::thread maker([&] {
        handed = std::make_unique<ContextGuard>(green);
        made.set();
        destroyed.wait();
        CHECK(ContextStack::depth() == 1);
        CHECK(rawCurrent() == green.native());
        // Pops it, then reports the misuse recorded on it (ContextStack::pop throws recorded errors).
        CHECK(errcOf([] { (void)ContextStack::pop(); }) == Errc::invalid_state);
        CHECK(ContextStack::depth() == 0);
        CHECK(rawCurrent() == nullptr);
        popped.set();
        checked.wait();
    });
    made.wait();
    handed.reset();
    CHECK(errcOf([&] { ContextGuard g(green); }) == Errc::context_busy); // still the maker's
    checkUnchanged(0, nullptr);
    destroyed.set();
    popped.wait();
    {
        ContextGuard g(green);
        CHECK(rawCurrent() == green.native());
    }
    checked.set();
    maker.join();
}

TEST_CASE("a thread's first cuctx call a guard on the context the driver already has current", "[record]")
{
    const Context a = Context::create(Device::get(0));
    onNewThread([&] {
        REQUIRE(raw().cuCtxPushCurrent(a.native()) == CUDA_SUCCESS);
        {
            ContextGuard g(a);
            CHECK(rawCurrent() == a.native());
            CHECK_FALSE(ContextStack::drift().has_value());
            ContextGuard nested(a);
            CHECK_FALSE(nested.switched());
        }
        CHECK(ContextStack::depth() == 0);
        CHECK(rawCurrent() == a.native()); // what was there before, exactly once
        CHECK_FALSE(ContextStack::drift().has_value());
        CUcontext c = nullptr;
        REQUIRE(raw().cuCtxPopCurrent(&c) == CUDA_SUCCESS);
        CHECK(c == a.native());
        CHECK(rawCurrent() == nullptr);
        CHECK(a.threadsUsing().empty());
    });
}

TEST_CASE("a child forked under guards, a push and an adoption unwinds them all without the driver", "[record][fork]")
{
    Context home = Context::create(Device::get(0));
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    onNewThread([&] {
        ContextStack::adopt(home);
        {
            ContextGuard warm(a);
        }
        pid_t pid = -1;
        {
            ContextStack::push(b);
            ContextGuard g1(a);
            ContextGuard g3(b);
            ContextGuard g2(a); // inline switching
            REQUIRE(g2.switched());
            ContextGuard elided(a);
            pid = fork();
            REQUIRE(pid >= 0);
            if (pid == 0) {
                int code = 0;
                try {
                    (void)ContextStack::pop(); // a guard on top, and in any case a forked child
                    code = 10;
                } catch (const cuctx::Error& e) {
                    if (e.condition() != Errc::forked_after_init && e.condition() != Errc::invalid_state)
                        code = 11;
                }
                try {
                    ContextGuard g(b);
                    code = 12;
                } catch (const cuctx::Error& e) {
                    if (e.condition() != Errc::forked_after_init)
                        code = 13;
                }
                if (code != 0)
                    _exit(code);
            }
        }
        if (pid == 0)
            _exit(0); // the child unwound the guards; the push and the adoption die with it
        int st = 0;
        REQUIRE(waitpid(pid, &st, 0) == pid);
        REQUIRE(WIFEXITED(st));
        CHECK(WEXITSTATUS(st) == 0);
        CHECK(ContextStack::depth() == 2);
        CHECK_FALSE(ContextStack::drift().has_value());
        CHECK(ContextStack::pop() == b);
        ContextStack::release();
        checkUnchanged(0, nullptr);
    });
}

namespace {
thread_local std::optional<ContextGuard> t_guard;
} // namespace

TEST_CASE("a child forked while other threads hold cuctx's registry drops its last handle without hanging",
          "[record][fork]")
{
    // Threads that take the registry's mutex again and again (as anything asking which threads use a
    // context does); a child forked meanwhile must not inherit it locked. Before fork waited for it,
    // most children hung in the destructor (caught here by the alarm: SIGALRM).
#if defined(__SANITIZE_THREAD__)
    WARN("skipped under ThreadSanitizer: it restricts fork() while other threads run");
    return;
#endif
    Context shared = Context::create(Device::get(0));
    std::atomic<bool> stop{false};
    std::vector<std::thread> churn;
    churn.reserve(2);
    for (int t = 0; t < 2; ++t)
        churn.emplace_back([&] {
            while (!stop.load(std::memory_order_relaxed)) {
                (void)shared.threadsUsing();
                (void)cuctx::liveObjects();
            }
        });
    int normal = 0;
#ifdef CUCTX_TEST_FAKE_DRIVER
    constexpr int kChildren = 100;
#else
    constexpr int kChildren = 10; // a real context takes 0.1 s to make
#endif
    for (int i = 0; i < kChildren; ++i) {
        std::optional<Context> mine(Context::create(Device::get(0)));
        const pid_t pid = fork();
        if (pid == 0) {
            alarm(20);    // a watchdog, not a wait: a hung child dies of SIGALRM
            mine.reset(); // the child's last handle: the registry's mutex
            _exit(0);
        }
        int status = 0;
        if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
            ++normal;
    }
    stop.store(true);
    for (std::thread& t : churn)
        t.join();
    CHECK(normal == kChildren);
}

TEST_CASE("an error another thread recorded on a context does not stop a push, an adoption or a binding", "[record]")
{
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    for (int way = 0; way < 3; ++way) {
        DYNAMIC_SECTION((way == 0 ? "push" : way == 1 ? "adopt" : "ContextBinding"))
        {
            // Another thread's misuse: a guard on a ended out of order, recorded on a as stack_mismatch
            // (the entry it left, now a push, is released as that thread exits).
            onNewThread([&] {
                auto first = std::make_unique<ContextGuard>(a);
                ContextGuard second(b);
                first.reset();
            });
            onNewThread([&] {
                if (way == 0) {
                    CHECK_NOTHROW(ContextStack::push(a));
                    CHECK(rawCurrent() == a.native());
                    // The next fallible call on the context reports it: here the pop, after popping.
                    CHECK(errcOf([] { (void)ContextStack::pop(); }) == Errc::stack_mismatch);
                } else if (way == 1) {
                    CHECK_NOTHROW(ContextStack::adopt(a));
                    CHECK(rawCurrent() == a.native());
                    CHECK(errcOf([] { ContextStack::release(); }) == Errc::stack_mismatch);
                } else {
                    {
                        std::optional<cuctx::ContextBinding> binding;
                        CHECK_NOTHROW(binding.emplace(a));
                        CHECK(rawCurrent() == a.native());
                    }
                    // Its end leaves it recorded (a destructor cannot throw it, and logging it would
                    // lose it): the context's next fallible call reports it.
                    CHECK(errcOf([&] { a.checkRecordedError(); }) == Errc::stack_mismatch);
                }
                checkUnchanged(0, nullptr);
            });
        }
    }
}

TEST_CASE("an error recorded on a context while a binding has it adopted outlives the binding", "[record]")
{
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    onNewThread([&] {
        {
            cuctx::ContextBinding binding(a); // a worker's binding (runOnEach makes the same)
            onNewThread([&] {
                auto first = std::make_unique<ContextGuard>(a);
                ContextGuard second(b);
                first.reset(); // out of order: stack_mismatch recorded on a
            });
            CHECK(rawCurrent() == a.native());
        }
        checkUnchanged(0, nullptr);
    });
    CHECK(errcOf([&] { a.checkRecordedError(); }) == Errc::stack_mismatch);
    CHECK_NOTHROW(a.checkRecordedError()); // reported once
}

TEST_CASE("a thread-local guard left open at thread exit is safe and releases its context", "[record]")
{
    const long before = live();
    onNewThread([&] {
        Context a = Context::create(Device::get(0));
        Context b = Context::create(Device::get(0));
        ContextStack::push(b);
        t_guard.emplace(a); // ends at thread exit, in whatever order against cuctx's own state
        a = Context();
        b = Context();
    });
    CHECK(live() == before);
}

// SPDX-License-Identifier: MIT
// Green contexts: current on one thread at a time.

#include "driver_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/error.hpp"

#include <thread>

using cuctx::Context;
using cuctx::ContextGuard;
using cuctx::Device;

TEST_CASE("a green context is current on one thread at a time", "[green]")
{
    cuctx::test::drainRawStack();
    if (cuctx::test::raw().cuGreenCtxCreate == nullptr) {
        WARN("this driver has no green contexts (CUDA 12.4); nothing to check");
        return;
    }
    const long before = cuctx::detail::liveContexts();
    {
        Context green = Context::green(Device::get(0), 8);
        CHECK(green.isGreen());
        cuctx::Errc elsewhere{};
        {
            ContextGuard here(green);
            CHECK(cuctx::test::rawCurrent() == green.native());
            ContextGuard nested(green); // the same thread again: fine
            std::thread([&] {
                try {
                    ContextGuard there(green);
                } catch (const cuctx::Error& e) {
                    elsewhere = e.condition();
                }
            }).join();
        }
        CHECK(elsewhere == cuctx::Errc::context_busy);
        bool enteredLater = false;
        std::thread([&] {
            ContextGuard there(green); // free again once this thread left it
            enteredLater = cuctx::test::rawCurrent() == green.native();
        }).join();
        CHECK(enteredLater);
    }
    CHECK(cuctx::detail::liveContexts() == before);
}

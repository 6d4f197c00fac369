// SPDX-License-Identifier: MIT
// fork() after CUDA was initialised, on whichever driver the suite runs against.

#include "driver_helpers.hpp"
#include "process_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/device.hpp"
#include "cuctx/error.hpp"

#include <sys/wait.h>
#include <unistd.h>

TEST_CASE("in a forked child even a guard on the adopted context reports the fork", "[fork]")
{
    cuctx::Context ctx = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::ContextStack::adopt(ctx);
    {
        cuctx::ContextGuard elided(ctx); // in the parent: free
        CHECK_FALSE(elided.switched());
    }
    const int status = cuctx::test::inChild([&ctx] {
        try {
            cuctx::ContextGuard g(ctx);
            return 1;
        } catch (const cuctx::Error& e) {
            return e.condition() == cuctx::Errc::forked_after_init ? 0 : 2;
        }
    });
    CHECK(status == 0);
    cuctx::ContextStack::release();
}

TEST_CASE("a child forked inside a guard can unwind it without the driver", "[fork]")
{
    cuctx::Context home = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::Context other = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::ContextStack::adopt(home);
    pid_t pid = -1;
    {
        cuctx::ContextGuard g(other);
        REQUIRE(g.switched());
        pid = fork();
        REQUIRE(pid >= 0);
    } // the child runs this guard's exit too, with no driver to pop
    if (pid == 0) {
        if (cuctx::ContextStack::depth() != 1) // only the adoption below is left
            _exit(1);
        try {
            cuctx::ContextGuard g(home); // would be free in the parent; here it must report the fork
            _exit(2);
        } catch (const cuctx::Error& e) {
            _exit(e.condition() == cuctx::Errc::forked_after_init ? 0 : 3);
        }
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(cuctx::ContextStack::depth() == 1);
    cuctx::ContextStack::release();
}

// fork() after CUDA was initialised, on whichever driver the suite runs against.

#include "driver_helpers.hpp"
#include "process_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/device.hpp"
#include "cuctx/error.hpp"

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

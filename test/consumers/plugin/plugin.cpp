// SPDX-License-Identifier: MIT
// A plugin (a framework backend's shared library) that links cuctx; its host does not. It enters a
// created context with a guard on the calling thread and on a second thread, as a backend would.
// cuctx_plugin_run returns 0 when everything held, a small number naming the first failure.

#include <cuctx/cuctx.hpp>

#include <cstdio>
#include <thread>

extern "C" __attribute__((visibility("default"))) int cuctx_plugin_run()
{
    try {
        const cuctx::Context context = cuctx::Context::create(cuctx::Device::get(0));
        {
            cuctx::ContextGuard guard(context);
            if (cuctx::ContextStack::current() != context.native())
                return 2;
            cuctx::ContextGuard nested(context); // already current: no driver call
            if (nested.switched())
                return 3;
        }
        if (cuctx::ContextStack::current() == context.native())
            return 4;
        int result = 0;
        std::thread worker([&] {
            cuctx::ContextGuard guard(context);
            cuctx::Stream stream(context);
            stream.synchronize();
            result = cuctx::ContextStack::current() == context.native() ? 0 : 5;
        });
        worker.join();
        return result;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "plugin: %s\n", e.what());
        return 1;
    }
}

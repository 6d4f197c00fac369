// SPDX-License-Identifier: MIT
// A program that uses cuctx as an installed package: only <cuctx/...> and <cuda.h> on its include
// path. It enters a created context with a guard, makes a stream and checks that an Error names
// where it was thrown. Exits 0 when everything holds (run against the fake driver).

#include <cuctx/cuctx.hpp>

#include <cstdio>
#include <cstring>

int main()
{
    try {
        const cuctx::Device device = cuctx::Device::get(0);
        const cuctx::Context context = cuctx::Context::create(device);
        {
            cuctx::ContextGuard guard(context);
            cuctx::Stream stream(context);
            stream.synchronize();
            if (cuctx::ContextStack::current() != context.native()) {
                std::fprintf(stderr, "public_api: the guard's context is not current\n");
                return 1;
            }
        }
        try {
            (void)cuctx::Device::get(1000);
            std::fprintf(stderr, "public_api: Device::get(1000) did not throw\n");
            return 1;
        } catch (const cuctx::Error& e) {
            if (e.where().line() == 0 || std::strlen(e.where().file_name()) == 0) {
                std::fprintf(stderr, "public_api: the error has no location: %s\n", e.what());
                return 1;
            }
        }
        std::printf("public_api: cuctx %s, device %s\n", CUCTX_VERSION_STRING, device.name().c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "public_api: %s\n", e.what());
        return 1;
    }
}

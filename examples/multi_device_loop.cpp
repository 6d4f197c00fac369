// SPDX-License-Identifier: MIT
// One process driving every device by explicit context switching: the first of the three models.
// Each device's work is queued inside a guard on its primary context; the host waits at the end.
//
// usage: cuctx-example-multi-device-loop [PTX]   (default: the repository's test/data/kernels.ptx)

#include "cuctx/cuctx.hpp"

#include <cstdio>
#include <vector>

int main(int argc, char** argv)
{
    if (!cuctx::Driver::available()) {
        std::fprintf(stderr, "%s\n", cuctx::Driver::status().message.c_str());
        return 3;
    }
    const char* ptx = argc > 1 ? argv[1] : CUCTX_EXAMPLE_PTX;
    constexpr unsigned n = 1 << 20;
    struct PerDevice {
        cuctx::Context context;
        cuctx::Module kernels;
        cuctx::Stream stream;
        cuctx::DeviceBuffer in, out;
    };
    std::vector<PerDevice> devices;
    for (const cuctx::Device& device : cuctx::Device::all()) {
        cuctx::Context ctx = cuctx::Context::primary(device);
        devices.push_back({ctx, cuctx::Module::fromFile(ctx, ptx), cuctx::Stream(ctx),
                           cuctx::DeviceBuffer(ctx, n * sizeof(float)), cuctx::DeviceBuffer(ctx, n * sizeof(float))});
        devices.back().in.fill32(0x40000000u); // 2.0f
    }
    for (std::size_t i = 0; i < devices.size(); ++i) { // queue on every device, switching explicitly
        PerDevice& d = devices[i];
        cuctx::ContextGuard guard(d.context);
        cuctx::launch(d.kernels.function("scale"),
                      {.grid = {(n + 255) / 256, 1, 1}, .block = {256, 1, 1}, .stream = d.stream.native()},
                      d.out.address(), d.in.address(), static_cast<float>(i + 1), n);
    }
    int failures = 0;
    for (std::size_t i = 0; i < devices.size(); ++i) { // then wait for each
        devices[i].stream.synchronize();
        const std::vector<float> result = devices[i].out.download<float>();
        const bool ok = result.front() == 2.0f * static_cast<float>(i + 1) && result.back() == result.front();
        std::printf("device %zu (%s): %s\n", i, devices[i].context.device().name().c_str(), ok ? "ok" : "WRONG");
        failures += ok ? 0 : 1;
    }
    return failures == 0 ? 0 : 1;
}

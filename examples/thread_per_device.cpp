// SPDX-License-Identifier: MIT
// One worker thread per device (SPMD): the second model. Each worker has its device's primary
// context bound for its whole life, so its launches and guards make no context switch; a worker
// that fails stops the others and its exception reaches main.
//
// usage: cuctx-example-thread-per-device [PTX]

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
    try {
        const std::vector<float> firsts =
            cuctx::runOnEachDevice([&](const cuctx::Context& ctx, std::size_t index, std::stop_token) {
                const cuctx::Module kernels = cuctx::Module::fromFile(ctx, ptx);
                cuctx::DeviceBuffer in(ctx, n * sizeof(float)), out(ctx, n * sizeof(float));
                in.fill32(0x40000000u); // 2.0f
                cuctx::launch(kernels.function("scale"), {.grid = {(n + 255) / 256, 1, 1}, .block = {256, 1, 1}},
                              out.address(), in.address(), static_cast<float>(index + 1), n);
                ctx.synchronize();
                return out.download<float>().front();
            });
        int failures = 0;
        for (std::size_t i = 0; i < firsts.size(); ++i) {
            const bool ok = firsts[i] == 2.0f * static_cast<float>(i + 1);
            std::printf("device %zu: %s\n", i, ok ? "ok" : "WRONG");
            failures += ok ? 0 : 1;
        }
        return failures == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "a worker failed: %s\n", e.what());
        return 1;
    }
    return 0;
}

// SPDX-License-Identifier: MIT
// A pipeline of stages on different contexts (one per device, or several on one device), chained by
// events: each stage waits for the previous one's event for the same item, never for the host.
//
// usage: cuctx-example-event-pipeline [PTX] [STAGES]

#include "cuctx/cuctx.hpp"

#include <charconv>
#include <cstdio>
#include <string_view>
#include <vector>

int main(int argc, char** argv)
{
    if (!cuctx::Driver::available()) {
        std::fprintf(stderr, "%s\n", cuctx::Driver::status().message.c_str());
        return 3;
    }
    const char* ptx = argc > 1 ? argv[1] : CUCTX_EXAMPLE_PTX;
    int stageCount = 4;
    if (argc > 2) {
        const std::string_view arg(argv[2]);
        const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), stageCount);
        if (ec != std::errc{} || end != arg.data() + arg.size() || stageCount < 1) {
            std::fprintf(stderr, "STAGES must be a positive integer, not \"%s\"\n", argv[2]);
            return 2;
        }
    }
    constexpr unsigned n = 1 << 16;
    constexpr std::size_t items = 8;
    std::vector<cuctx::Context> contexts;
    std::vector<cuctx::Module> kernels;
    std::vector<std::vector<cuctx::DeviceBuffer>> in(static_cast<std::size_t>(stageCount)),
        out(static_cast<std::size_t>(stageCount));
    for (int s = 0; s < stageCount; ++s) {
        contexts.push_back(cuctx::Context::create(cuctx::Device::get(s % cuctx::Device::count())));
        kernels.push_back(cuctx::Module::fromFile(contexts.back(), ptx));
        for (std::size_t i = 0; i < items; ++i) {
            in[static_cast<std::size_t>(s)].emplace_back(contexts.back(), n * sizeof(float));
            out[static_cast<std::size_t>(s)].emplace_back(contexts.back(), n * sizeof(float));
        }
    }
    for (std::size_t i = 0; i < items; ++i)
        in[0][i].fill32(0x3f800000u); // 1.0f
    std::vector<cuctx::Pipeline::Stage> stages;
    for (int s = 0; s < stageCount; ++s) {
        const auto st = static_cast<std::size_t>(s);
        stages.push_back({contexts[st], [&, st](const cuctx::Stream& stream, std::size_t item) {
                              if (st > 0)
                                  in[st][item].copyFrom(out[st - 1][item], stream); // from the previous context
                              cuctx::launch(
                                  kernels[st].function("scale"),
                                  {.grid = {(n + 255) / 256, 1, 1}, .block = {256, 1, 1}, .stream = stream.native()},
                                  out[st][item].address(), in[st][item].address(), 2.0f, n);
                          }});
    }
    cuctx::Pipeline pipeline(std::move(stages));
    for (std::size_t i = 0; i < items; ++i)
        pipeline.submit(i); // returns at once: the device orders the work
    pipeline.synchronize();
    float expected = 1.0f;
    for (int s = 0; s < stageCount; ++s)
        expected *= 2.0f;
    const std::vector<float> last = out.back().back().download<float>();
    const bool ok = last.front() == expected && last.back() == expected;
    std::printf("%zu items through %d stages: %s (%g, expected %g)\n", items, stageCount, ok ? "ok" : "WRONG",
                static_cast<double>(last.front()), static_cast<double>(expected));
    return ok ? 0 : 1;
}

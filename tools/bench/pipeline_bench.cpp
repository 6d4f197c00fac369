// SPDX-License-Identifier: MIT
// cuctx-bench-pipeline: a pipeline of stages on different contexts chained by events (cuctx::Pipeline)
// against the same stages with the host synchronising after each one, in the same run.
//
// Each of --stages contexts copies the previous stage's output (a peer copy between contexts) and
// doubles it with a kernel; --items items of --floats floats flow through, and every item's result
// is checked (2 to the number of stages) after the runs. Stage k runs on device k mod the number of
// devices, so --stages N spreads a pipeline over N GPUs. The kernels come from
// test/data/kernels.ptx (CUCTX_BENCH_PTX overrides where it is).
//
// usage: cuctx-bench-pipeline [--stages N, 1-31] [--items N, 1-1000000] [--floats N, 1-268435456]
//                             [--repeats N, 1-1000000] [--csv]

#include "bench_common.hpp"
#include "cuctx/cuctx.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

using namespace cuctx;
using namespace cuctx::bench;
using Clock = std::chrono::steady_clock;

struct Options {
    int stages = 4;
    std::size_t items = 64;
    std::size_t floats = 1 << 18;
    int repeats = 5;
    bool csv = false;
};

struct Setup {
    std::vector<Context> contexts;
    std::vector<Module> kernels;
    std::vector<std::vector<DeviceBuffer>> received, computed; // [stage][item]
};

void stageWork(const Setup& s, std::size_t stage, const Stream& stream, std::size_t item, std::size_t floats)
{
    if (stage > 0)
        s.received[stage][item].copyFrom(s.computed[stage - 1][item], stream);
    const auto n = static_cast<unsigned>(floats);
    launch(s.kernels[stage].function("scale"),
           {.grid = {(n + 255) / 256, 1, 1}, .block = {256, 1, 1}, .stream = stream.native()},
           s.computed[stage][item].address(), s.received[stage][item].address(), 2.0f, n);
}

} // namespace

int main(int argc, char** argv)
{
    Options o;
    if (!parseFlags("cuctx-bench-pipeline", argc, argv,
                    // Bounded where a count would overflow what it feeds: the expected value 2^stages in
                    // 32 bits, the kernel's element count (unsigned) and the buffers' bytes, repeats + 1.
                    {{"--stages", &o.stages, 1, 31},
                     {"--items", &o.items, 1, 1'000'000},
                     {"--floats", &o.floats, 1, 1 << 28},
                     {"--repeats", &o.repeats, 1, 1'000'000},
                     {"--csv", &o.csv}})) {
        std::fprintf(stderr, "usage: cuctx-bench-pipeline [--stages N, 1-31] [--items N, 1-1000000] "
                             "[--floats N, 1-268435456] [--repeats N, 1-1000000] [--csv]\n");
        return 2;
    }
    if (!driverReady("cuctx-bench-pipeline"))
        return 77;
    try {
        const char* ptxEnv = std::getenv("CUCTX_BENCH_PTX");
        const std::string ptx = ptxEnv != nullptr && ptxEnv[0] != '\0' ? ptxEnv : CUCTX_BENCH_PTX;
        const Device device = Device::get(0);
        Setup s;
        const std::size_t bytes = o.floats * sizeof(float);
        for (int i = 0; i < o.stages; ++i) {
            s.contexts.push_back(Context::create(Device::get(i % Device::count())));
            s.kernels.push_back(Module::fromFile(s.contexts.back(), ptx));
            s.received.emplace_back();
            s.computed.emplace_back();
            for (std::size_t item = 0; item < o.items; ++item) {
                s.received.back().emplace_back(s.contexts.back(), bytes);
                s.computed.back().emplace_back(s.contexts.back(), bytes);
            }
        }
        for (std::size_t item = 0; item < o.items; ++item)
            s.received[0][item].fill32(0x3f800000u); // 1.0f
        std::vector<Pipeline::Stage> stages;
        for (int i = 0; i < o.stages; ++i)
            stages.push_back({s.contexts[static_cast<std::size_t>(i)], [&, i](const Stream& stream, std::size_t item) {
                                  stageWork(s, static_cast<std::size_t>(i), stream, item, o.floats);
                              }});
        Pipeline pipeline(std::move(stages));

        double chained = 1e300, synced = 1e300;
        for (int r = 0; r < o.repeats + 1; ++r) { // round 0 warms up (lazy kernel loading, first copies)
            auto t0 = Clock::now();
            for (std::size_t item = 0; item < o.items; ++item)
                pipeline.submit(item);
            pipeline.synchronize();
            const double a = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            t0 = Clock::now();
            for (std::size_t item = 0; item < o.items; ++item)
                for (int i = 0; i < o.stages; ++i) {
                    stageWork(s, static_cast<std::size_t>(i), pipeline.stream(static_cast<std::size_t>(i)), item,
                              o.floats);
                    pipeline.stream(static_cast<std::size_t>(i)).synchronize(); // the host waits for each stage
                }
            const double b = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            if (r > 0) {
                chained = std::min(chained, a);
                synced = std::min(synced, b);
            }
        }
        // Every item went through every stage: 1.0 doubled once per stage.
        const auto expected = static_cast<float>(1u << o.stages);
        std::size_t wrong = 0;
        for (std::size_t item = 0; item < o.items; ++item)
            for (const float v : s.computed.back()[item].download<float>())
                wrong += v != expected ? 1 : 0;
        char ra[32], rb[32];
        std::snprintf(ra, sizeof ra, "%.2f ms", synced);
        std::snprintf(rb, sizeof rb, "%.2f ms", chained);
        if (!o.csv)
            std::printf("cuctx-bench-pipeline: %s, %d stages on %d contexts over %d device(s), %zu items of %zu floats "
                        "(best of %d);\n"
                        "the first column synchronises the host after every stage, the second chains the stages by "
                        "events\n\n",
                        device.name().c_str(), o.stages, o.stages, std::min(o.stages, Device::count()), o.items,
                        o.floats, o.repeats);
        print({Row{wrong == 0 ? "pipeline: events vs host sync" : "pipeline: WRONG RESULTS", ra, rb, synced / chained,
                   "correct, faster", wrong == 0 && chained <= synced}},
              o.csv);
        if (wrong != 0)
            std::fprintf(stderr, "cuctx-bench-pipeline: %zu values differ from %g\n", wrong,
                         static_cast<double>(expected));
        return wrong == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        return stopped("cuctx-bench-pipeline", {}, o.csv, e);
    }
}

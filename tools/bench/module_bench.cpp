// cuctx-bench-modules: what launching and the module cache cost through cuctx against the raw
// driver calls, measured in the same run (ratios matter; absolute times drift between machines).
//
//   launch   cuctx::launch of an empty kernel       vs  cuLaunchKernel of the same CUfunction
//            (rounds of --batch enqueues, raw and cuctx in turn, each round ending in an untimed
//             cuCtxSynchronize so that neither fills the launch queue for the other)
//   cache    Module::cached hit                      vs  loading the same PTX again with
//                                                         cuModuleLoadDataEx and no options (what
//                                                         cuModuleLoadData does; the driver's disk
//                                                         cache answers it when enabled)
//
// usage: cuctx-bench-modules [--launches N] [--batch N] [--hits N] [--loads N] [--csv] [PTX]

#include "bench_common.hpp"
#include "cuctx/cuctx.hpp"
#include "driver/driver_state.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using namespace cuctx::bench;
using Clock = std::chrono::steady_clock;

struct Options {
    long launches = 100'000;
    long batch = 1000;
    long hits = 100'000;
    int loads = 51;
    bool csv = false;
    std::string ptx;
};

double nsSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

} // namespace

int main(int argc, char** argv)
{
    Options o;
    if (!parseFlags(argc, argv,
                    {{"--launches", &o.launches},
                     {"--batch", &o.batch},
                     {"--hits", &o.hits},
                     {"--loads", &o.loads},
                     {"--csv", &o.csv}},
                    &o.ptx)) {
        std::fprintf(
            stderr,
            "usage: cuctx-bench-modules [--launches N] [--batch N] [--hits N] [--loads N] [--csv] [PTX]\n");
        return 2;
    }
    if (!driverReady("cuctx-bench-modules"))
        return 77;
    // The PTX to load: a file, or an empty kernel of our own.
    std::string ptx =
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry empty()\n{\n    ret;\n}\n";
    if (!o.ptx.empty()) {
        std::ifstream in(o.ptx, std::ios::binary);
        if (!in) {
            std::fprintf(stderr, "cuctx-bench-modules: cannot read %s\n", o.ptx.c_str());
            return 2;
        }
        ptx.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    const auto& d = cuctx::detail::api();
    const cuctx::Device device = cuctx::Device::get(0);
    cuctx::Context ctx = cuctx::Context::create(device);
    cuctx::ContextBinding binding(ctx); // a worker with its context bound, as a backend runs kernels
    const auto bytes = std::as_bytes(std::span(ptx.data(), ptx.size()));
    const cuctx::Module module = cuctx::Module::cached(ctx, bytes, {}, "bench");
    const cuctx::Function empty = module.function("empty");
    const CUfunction raw = empty.native();
    const cuctx::LaunchConfig config{.grid = {1, 1, 1}, .block = {1, 1, 1}};
    std::vector<Row> rows;

    // Launch enqueue time, interleaved rounds.
    double rawNs = 0, cuctxNs = 0;
    const long rounds = std::max(1L, o.launches / o.batch);
    ctx.synchronize();
    for (long r = 0; r < rounds; ++r) {
        for (int which = 0; which < 2; ++which) {
            const auto t0 = Clock::now();
            if (which == 0) {
                for (long i = 0; i < o.batch; ++i)
                    d.cuLaunchKernel(raw, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
            } else {
                for (long i = 0; i < o.batch; ++i)
                    cuctx::launch(empty, config);
            }
            (which == 0 ? rawNs : cuctxNs) += nsSince(t0);
            ctx.synchronize();
        }
    }
    const double launches = static_cast<double>(rounds * o.batch);
    rows.push_back({"empty-kernel launch (enqueue)", ns(rawNs / launches), ns(cuctxNs / launches),
                    cuctxNs / rawNs, "<= 1.02x raw", cuctxNs / rawNs <= 1.02});

    // Cache hits against loading again.
    const auto t0 = Clock::now();
    for (long i = 0; i < o.hits; ++i) {
        const cuctx::Module hit = cuctx::Module::cached(ctx, bytes, {}, "bench");
        keep(hit);
    }
    const double hitNs = nsSince(t0) / static_cast<double>(o.hits);
    std::vector<double> loads;
    std::string cstr = ptx; // NUL-terminated for the driver
    for (int i = 0; i < o.loads + 1; ++i) {
        CUmodule m = nullptr;
        const auto l0 = Clock::now();
        const CUresult r = d.cuModuleLoadDataEx(&m, cstr.c_str(), 0, nullptr, nullptr);
        const double elapsed = nsSince(l0);
        if (r != CUDA_SUCCESS) {
            std::fprintf(stderr, "cuctx-bench-modules: cuModuleLoadDataEx failed with %d\n",
                         static_cast<int>(r));
            return 1;
        }
        d.cuModuleUnload(m);
        if (i > 0) // the first may be the cold JIT, if the disk cache was empty
            loads.push_back(elapsed);
    }
    std::sort(loads.begin(), loads.end());
    const double loadNs = loads[loads.size() / 2];
    char us[32];
    std::snprintf(us, sizeof us, "%.3f us", hitNs / 1000);
    char loadUs[32];
    std::snprintf(loadUs, sizeof loadUs, "%.1f us", loadNs / 1000);
    rows.push_back({"module cache hit vs load again", loadUs, us, loadNs / hitNs, "<= 1 us, >= 50x faster",
                    hitNs <= 1000 && loadNs / hitNs >= 50});

    if (!o.csv) {
        const char* cacheOff = std::getenv("CUDA_CACHE_DISABLE");
        std::printf("cuctx-bench-modules: %s, driver %d, %.0f launches in rounds of %ld, %ld cache hits, "
                    "median of %d "
                    "loads (driver disk cache %s)\n\n",
                    device.name().c_str(), cuctx::Driver::version(), launches, o.batch, o.hits, o.loads,
                    cacheOff != nullptr && std::string(cacheOff) == "1" ? "DISABLED" : "enabled");
    }
    print(rows, o.csv);
    return 0;
}

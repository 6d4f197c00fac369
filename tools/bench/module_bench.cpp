// SPDX-License-Identifier: MIT
// cuctx-bench-modules: what launching and the module cache cost through cuctx against the raw
// driver calls, measured in the same run (ratios matter; absolute times drift between machines).
//
//   launch   cuctx::launch of an empty kernel       vs  cuLaunchKernel of the same CUfunction
//            (pairs of --batch enqueues, alternating which side goes first, each batch followed by
//             an untimed cuCtxSynchronize so that neither fills the launch queue for the other;
//             each side's median, and the median of the pairs' ratios)
//   cache    Module::cached hit                      vs  loading the same PTX again with
//                                                         cuModuleLoadDataEx and no options (what
//                                                         cuModuleLoadData does; the driver's disk
//                                                         cache answers it when enabled)
//   image    Module::cached(ctx, ModuleImage) hit    vs  Module::cached(ctx, span) hit of the same
//            for PTX of 1 KiB, 64 KiB, 1 MiB, 16 MiB      image, which digests and compares it per
//                                                         call (the "raw" column holds that one here)
//   threads  the same image hits, --threads threads  vs  one thread alone (hits/s, each side's best;
//            at once (aggregate)                          ratio: the median over pairs of windows of
//                                                         the aggregate over one thread's rate)
//   ceiling  --threads threads looking ids up in indexes of their own, over one thread: what
//            the machine gives threads that share nothing (where its CPUs share cores or clock
//            down, less than --threads)
//
// usage: cuctx-bench-modules [--launches N] [--batch N] [--hits N] [--loads N] [--threads N, 1-1024]
//                            [--max-image-kib N] [--csv] [PTX]

#include "bench_common.hpp"
#include "cuctx/cuctx.hpp"
#include "measure.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace cuctx::bench;

struct Options {
    long launches = 100'000;
    long batch = 1000;
    long hits = 100'000;
    int loads = 51;
    int threads = 16;
    std::size_t maxImageKib = std::size_t{16} * 1024;
    bool csv = false;
    std::string ptx;
};

} // namespace

int main(int argc, char** argv)
{
    Options o;
    if (!parseFlags("cuctx-bench-modules", argc, argv,
                    // Bounded so that the counts and the image's bytes cannot overflow.
                    {{"--launches", &o.launches, 1, 1'000'000'000},
                     {"--batch", &o.batch, 1, 1'000'000},
                     {"--hits", &o.hits, 1, 1'000'000'000},
                     {"--loads", &o.loads, 1, 1'000'000},
                     {"--threads", &o.threads, 1, kMaxThreads},
                     {"--max-image-kib", &o.maxImageKib, 1, 1 << 20},
                     {"--csv", &o.csv}},
                    &o.ptx)) {
        std::fprintf(stderr, "usage: cuctx-bench-modules [--launches N] [--batch N] [--hits N] [--loads N] "
                             "[--threads N, 1-1024] [--max-image-kib N] [--csv] [PTX]\n");
        return 2;
    }
    if (!driverReady("cuctx-bench-modules"))
        return 77;
    std::vector<Row> rows;
    try {
        // The module to load: a file, or an empty kernel of our own. The file is read as the library reads
        // a module file (only a regular file of at most Module::kMaxImageFileBytes, not empty, of a kind
        // it knows), so that a path it would refuse is a usage error with the library's reason (its
        // detail: the hint is for programs that call it), not a failed measurement (exit 1) or a FIFO
        // that blocks; its name labels the module in later errors.
        std::optional<cuctx::ModuleImage> file;
        if (!o.ptx.empty()) {
            try {
                file = cuctx::ModuleImage::fromFile(o.ptx);
            } catch (const cuctx::Error& e) {
                std::fprintf(stderr, "cuctx-bench-modules: %s\n", e.detail().c_str());
                return 2;
            }
        }
        const std::string_view ownPtx = kEmptyKernelPtx;
        const std::span<const std::byte> bytes =
            file ? file->bytes() : std::as_bytes(std::span(ownPtx.data(), ownPtx.size()));
        const cuctx::Device device = cuctx::Device::get(0);
        cuctx::Context ctx = cuctx::Context::create(device);
        const cuctx::Function empty =
            cuctx::Module::cached(ctx, bytes, {}, file ? file->label() : "bench").function("empty");

        const LaunchCosts l = measureLaunch(ctx, empty, o.launches, o.batch);
        const auto launches = static_cast<double>(l.launches);
        rows.push_back(
            {"empty-kernel launch (enqueue)", ns(l.raw), ns(l.cuctx), l.ratio, "<= 1.02x raw", l.ratio <= 1.02});

        const CacheCosts c = measureModuleCache(ctx, bytes, o.hits, o.loads);
        char us[32];
        std::snprintf(us, sizeof us, "%.3f us", c.hit / 1000);
        char loadUs[32];
        std::snprintf(loadUs, sizeof loadUs, "%.1f us", c.load / 1000);
        rows.push_back({"module cache hit vs load again", loadUs, us, c.load / c.hit, "<= 1 us, >= 50x faster",
                        c.hit <= 1000 && c.load / c.hit >= 50});

        for (const std::size_t kib : {std::size_t{1}, std::size_t{64}, std::size_t{1024}, std::size_t{16} * 1024}) {
            if (kib > o.maxImageKib)
                break;
            // The one-thread row goes in before the threads start: a thread the system refuses stops the
            // run (stopped, below) with the rows finished so far.
            const ImageCacheCosts m = measureImageCache(ctx, kib * 1024, o.hits);
            const std::string size = kib < 1024 ? std::to_string(kib) + " KiB" : std::to_string(kib / 1024) + " MiB";
            rows.push_back({"image cache hit, " + size + " PTX", ns(m.spanHit), ns(m.imageHit), m.spanHit / m.imageHit,
                            "<= 100 ns", m.imageHit <= 100});
            const Scaling s = measureImageScaling(ctx, m.image, o.hits, std::max(1, o.threads));
            // The target is 10x for 16 threads; other thread counts get the same share of theirs.
            const double scaling = s.ratio;
            const double wanted = 10.0 * std::max(1, o.threads) / 16;
            char target[32];
            std::snprintf(target, sizeof target, ">= %.3gx one thread", wanted);
            rows.push_back({"  " + std::to_string(o.threads) + " threads at once, " + size, mops(s.one), mops(s.many),
                            scaling, target, scaling >= wanted});
        }

        // The same windows with nothing shared: what this machine gives 16 threads at most.
        const double ceiling = unsharedScaling(std::max(1, o.threads), o.hits);
        rows.push_back({"  " + std::to_string(o.threads) + " threads, nothing shared", "", "", ceiling,
                        "(this machine's ceiling)", std::isfinite(ceiling)});

        if (!o.csv) {
            const char* cacheOff = std::getenv("CUDA_CACHE_DISABLE");
            std::printf("cuctx-bench-modules: %s, driver %d, %.0f launches a side in paired batches of %ld, %ld cache "
                        "hits, median of %d loads (driver disk cache %s)\n\n",
                        device.name().c_str(), cuctx::Driver::version(), launches, o.batch, o.hits, o.loads,
                        cacheOff != nullptr && std::string(cacheOff) == "1" ? "DISABLED" : "enabled");
        }
        print(rows, o.csv);
        return 0;
    } catch (const std::exception& e) {
        return stopped("cuctx-bench-modules", rows, o.csv, e);
    }
}

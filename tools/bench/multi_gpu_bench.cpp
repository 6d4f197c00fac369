// SPDX-License-Identifier: MIT
// cuctx-bench-multi-gpu: the multi-GPU programming models on every device of this machine, each
// checked for correct results and timed (raw driver against cuctx where both exist):
//
//   peers    peer access enabled between every pair; a peer copy between each ordered pair of devices
//            (on one device: between two of its contexts), cuMemcpyPeerAsync against
//            DeviceBuffer::copyFrom, content verified, bandwidth in GB/s
//   spmd     one worker thread per device (runOnEachDevice), each running the same compute-bound
//            kernel workload; its time against one device doing one share alone: speed-up over one
//            GPU, target at least 0.95 x the number of GPUs; every device's results must equal
//            device 0's
//   ranks    one process per GPU (spawned copies of this program, LOCAL_RANK set as a launcher
//            would): each binds its own device (bindRank) and must leave every other device's
//            primary context untouched (strayPrimaryContexts)
//
// The pipeline over all GPUs is cuctx-bench-pipeline --stages N (stage k on device k mod N).
//
// usage: cuctx-bench-multi-gpu [--megabytes N, 1-1048576] [--copies N, 1-1000000] [--launches N, 1-1000000]
//                              [--csv]

#include "bench_common.hpp"
#include "cuctx/cuctx.hpp"
#include "raw_driver.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

using namespace cuctx;
using namespace cuctx::bench;

struct Options {
    std::size_t megabytes = 256;    // per peer copy
    int copies = 10;                // per pair and method; the best counts
    unsigned iterations = 1u << 20; // FMA iterations per thread of the compute kernel
    int launches = 8;               // compute launches per device
    bool csv = false;
};

// A compute-bound kernel: each thread iterates an FMA `iters` times from its own index and
// stores the result, so that every device must produce the same numbers.
constexpr const char* kSpinPtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry spin(.param .u64 out, .param .u32 iters)
{
    .reg .pred %p;
    .reg .b32 %r<6>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [iters];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mad.lo.u32 %r5, %r3, %r4, %r2;
    cvt.rn.f32.u32 %f1, %r5;
    mov.f32 %f2, 0f3F800000;
LOOP:
    fma.rn.f32 %f1, %f1, 0f3F7FFFF0, %f2;
    sub.u32 %r1, %r1, 1;
    setp.ne.u32 %p, %r1, 0;
    @%p bra LOOP;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.u64 %rd2, %rd2, %rd3;
    st.global.f32 [%rd2], %f1;
    ret;
}
)";

std::string text(const char* format, double v)
{
    char out[48];
    std::snprintf(out, sizeof out, format, v);
    return out;
}

// A worker of the ranks check: bind, use the device, look for strays. Exit 0 when all is well.
int rankWorker()
{
    const RankBinding b = bindRank();
    const Context ctx = Context::primary(Device::get(b.ordinal));
    DeviceBuffer probe(ctx, 4096);
    probe.fill32(static_cast<unsigned>(b.localRank));
    const auto values = probe.download<unsigned>();
    const std::vector<int> stray = strayPrimaryContexts(b.ordinal);
    std::fprintf(stderr, "rank %d (%s): device %d of %d, %s, stray primary contexts: %zu\n", b.localRank,
                 b.source.c_str(), b.ordinal, b.visibleDevices, Device::get(b.ordinal).uuid().c_str(), stray.size());
    if (values.front() != static_cast<unsigned>(b.localRank))
        return 4;
    return stray.empty() ? 0 : 3;
}

// Peer copies between every ordered pair: best GB/s raw and through cuctx, content verified.
void peerCopies(const Options& o, std::vector<Row>& rows, bool& allCorrect)
{
    const int n = Device::count();
    std::vector<Context> contexts;
    for (int d = 0; d < n; ++d)
        contexts.push_back(Context::primary(Device::get(d)));
    if (n == 1)
        contexts.push_back(Context::create(Device::get(0))); // two contexts of the one device
    const std::size_t bytes = o.megabytes << 20;
    const auto& api = tools::rawDriver();
    for (std::size_t from = 0; from < contexts.size(); ++from) {
        for (std::size_t to = 0; to < contexts.size(); ++to) {
            if (from == to)
                continue;
            const Context& src = contexts[from];
            const Context& dst = contexts[to];
            if (src.device() != dst.device() && !PeerAccess::link(src.device(), dst.device()).canAccess)
                continue; // staged through the host by the driver: not a peer copy
            if (src.device() != dst.device())
                PeerAccess::enable(dst, src);
            DeviceBuffer a(src, bytes);
            DeviceBuffer b(dst, bytes);
            const unsigned pattern = 0x01020304u + static_cast<unsigned>(from * 16 + to);
            a.fill32(pattern);
            b.fill32(0);
            const Stream stream(dst);
            double raw = 1e300, wrapped = 1e300;
            for (int i = 0; i < o.copies; ++i) {
                auto t0 = Clock::now();
                api.cuMemcpyPeerAsync(b.address(), dst.native(), a.address(), src.native(), bytes, stream.native());
                stream.synchronize();
                raw = std::min(raw, msSince(t0));
                t0 = Clock::now();
                b.copyFrom(a, stream);
                stream.synchronize();
                wrapped = std::min(wrapped, msSince(t0));
            }
            const auto copied = b.download<unsigned>();
            const bool correct = std::all_of(copied.begin(), copied.end(), [&](unsigned v) { return v == pattern; });
            allCorrect = allCorrect && correct;
            const double gb = static_cast<double>(bytes) / 1e9;
            std::string name = "peer copy ";
            name += n == 1 ? (from == 0 ? "ctx A -> ctx B (1 GPU)" : "ctx B -> ctx A (1 GPU)")
                           : std::to_string(from) + " -> " + std::to_string(to);
            name += correct ? "" : " WRONG DATA";
            rows.push_back({name, text("%.1f GB/s", gb / (raw / 1e3)), text("%.1f GB/s", gb / (wrapped / 1e3)),
                            raw / wrapped, ">= 0.98x raw, correct", correct && raw / wrapped >= 0.98});
        }
    }
}

// Runs the compute workload on `contexts`, one worker each; returns the time and each one's output.
double spmd(const Options& o, const std::vector<Context>& contexts, std::vector<std::vector<float>>& outputs)
{
    constexpr unsigned kBlocks = 1056, kThreads = 256;
    std::vector<Module> modules;
    std::vector<DeviceBuffer> out;
    for (const Context& c : contexts) {
        modules.push_back(Module::fromPtx(c, kSpinPtx));
        out.emplace_back(c, std::size_t{kBlocks} * kThreads * sizeof(float));
        launch(modules.back().function("spin"), {.grid = {kBlocks, 1, 1}, .block = {kThreads, 1, 1}},
               out.back().address(), 1u); // warm up: the kernel loads lazily
        c.synchronize();
    }
    const auto t0 = Clock::now();
    runOnEach(contexts, [&](const Context& c, std::size_t i, std::stop_token) {
        const Function spin = modules[i].function("spin");
        for (int l = 0; l < o.launches; ++l)
            launch(spin, {.grid = {kBlocks, 1, 1}, .block = {kThreads, 1, 1}}, out[i].address(), o.iterations);
        c.synchronize();
    });
    const double ms = msSince(t0);
    outputs.clear();
    for (const DeviceBuffer& b : out)
        outputs.push_back(b.download<float>());
    return ms;
}

int ranks(std::vector<Row>& rows)
{
    const int n = Device::count();
    std::vector<WorkerProcess> workers;
    for (int r = 0; r < n; ++r)
        workers.push_back(WorkerProcess::spawn({WorkerProcess::selfExecutable(), "--rank-worker"},
                                               {{"LOCAL_RANK", std::to_string(r)}}));
    int failed = 0;
    for (WorkerProcess& w : workers)
        failed += w.wait() != 0 ? 1 : 0;
    rows.push_back({std::to_string(n) + " processes, one per GPU", "-", std::to_string(n - failed) + " bound, clean",
                    static_cast<double>(n - failed) / n, "each its own device", failed == 0});
    return failed;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc == 2 && std::strcmp(argv[1], "--rank-worker") == 0) {
        try {
            return rankWorker();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "cuctx-bench-multi-gpu --rank-worker: stopped: %s\n", e.what());
            return 1;
        }
    }
    Options o;
    if (!parseFlags("cuctx-bench-multi-gpu", argc, argv,
                    // Bounded so that the bytes (megabytes << 20) and the loops' counts cannot overflow.
                    {{"--megabytes", &o.megabytes, 1, 1 << 20},
                     {"--copies", &o.copies, 1, 1'000'000},
                     {"--launches", &o.launches, 1, 1'000'000},
                     {"--csv", &o.csv}})) {
        std::fprintf(stderr, "usage: cuctx-bench-multi-gpu [--megabytes N, 1-1048576] [--copies N, 1-1000000] "
                             "[--launches N, 1-1000000] [--csv]\n");
        return 2;
    }
    if (!driverReady("cuctx-bench-multi-gpu"))
        return 77;
    std::vector<Row> rows;
    try {
        const int n = Device::count();
        // Processes first: this parent has touched no device yet, as a launcher would not.
        const int rankFailures = ranks(rows);

        bool copiesCorrect = true;
        peerCopies(o, rows, copiesCorrect);

        std::vector<Context> all;
        for (const Device& d : Device::all())
            all.push_back(Context::primary(d));
        std::vector<std::vector<float>> one, every;
        const double t1 = spmd(o, {all.front()}, one);
        const double tn = spmd(o, all, every);
        bool same = true;
        for (const auto& out : every)
            same = same && out == one.front();
        const double speedup = n * t1 / tn;
        rows.push_back({"SPMD compute, " + std::to_string(n) + " GPU(s)" + (same ? "" : " WRONG DATA"),
                        text("1 GPU %.1f ms", t1), text("all %.1f ms", tn), speedup,
                        ">= " + text("%.2f", 0.95 * n) + " (0.95 x GPUs)", same && speedup >= 0.95 * n});

        if (!o.csv)
            std::printf(
                "cuctx-bench-multi-gpu: %d x %s, driver %d; peer copies of %zu MiB (best of %d), %d launches of "
                "%u FMA iterations per thread per GPU\n\n",
                n, Device::get(0).name().c_str(), Driver::version(), o.megabytes, o.copies, o.launches, o.iterations);
        print(rows, o.csv);
        return rankFailures == 0 && copiesCorrect && same ? 0 : 1;
    } catch (const std::exception& e) {
        return stopped("cuctx-bench-multi-gpu", rows, o.csv, e);
    }
}

// SPDX-License-Identifier: MIT
// cuctx-stress: N threads run a random but reproducible mix of cuctx operations against a few shared
// contexts, then check invariants. Exit status 0 when nothing was violated, 1 when something was.
//
// Operations (each thread draws from them with its own seeded generator):
//   nest      nested guards of random depth over random contexts; the driver's current context is
//             checked at every level, and the stack after unwinding
//   adopt     adopt a context for a batch of guarded tasks, then release it
//   module    Module::cached on a random context, of the PTX's bytes or of a ModuleImage of them:
//             always the same module for that context, whichever way it is asked
//   launch    a kernel on random input, result checked element by element (copies only on the fake
//             driver, which runs no kernels)
//   wait      a stream of one context waits on an event of another, copies across, result checked
//   churn     replace the shared "churn" context while other threads use it
//   exit      a short-lived thread adopts a context and exits without releasing it
// Afterwards: every thread's stack is empty, the churned contexts are all destroyed, and cuctx's
// live objects (contexts, modules, streams, events, buffers) are back where they started.
// A thread the system refuses to start is an error of the run (exit 4), not a violation.
//
// usage: see stress_options.cpp (--help) and docs/stress.md.

#include "cuctx/cuctx.hpp"
#include "format/json_writer.hpp"
#include "raw_driver.hpp"
#include "stress_options.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace cuctx;
using Clock = std::chrono::steady_clock;

enum Op { opNest, opAdopt, opModule, opLaunch, opWait, opChurn, opExit, opCount };
constexpr const char* kOpNames[opCount] = {"nest", "adopt", "module", "launch", "wait", "churn", "exit"};
constexpr int kOpWeights[opCount] = {40, 20, 15, 10, 8, 4, 3};

using tools::Bug;
using Options = tools::StressOptions;

// The kernels when --ptx is not given: beside the executable in the build tree, else where the
// install puts them relative to it (CUCTX_STRESS_PTX: ../share/cuctx/kernels.ptx from bin/). No
// path of the machine that built it is compiled in.
std::string defaultPtx()
{
    std::error_code error;
    const std::filesystem::path dir = std::filesystem::read_symlink("/proc/self/exe", error).parent_path();
    if (error)
        return "kernels.ptx";
    if (std::filesystem::exists(dir / "kernels.ptx", error))
        return dir / "kernels.ptx";
    return (dir / CUCTX_STRESS_PTX).lexically_normal();
}

constexpr int kExitViolations = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDriver = 3;
constexpr int kExitNotRun = 4; // the run could not be carried out: a thread was refused

struct Shared {
    explicit Shared(const Options& o) : options(o) {}
    const Options& options;
    std::vector<Context> contexts;
    std::string ptx;
    ModuleImage image;      // of ptx
    bool kernelsRun = true; // false on the fake driver
    std::mutex churnMutex;
    Context churn; // replaced by `churn` operations while others use it
    std::atomic<long> churned{0};
    // Creating and destroying a context takes the driver a third of a second and stalls every thread's
    // driver calls: at most one churn per interval, or it is all the run measures.
    std::atomic<long long> lastChurnNs{0};
    std::atomic<bool> stop{false};
    std::atomic<long> done[opCount]{};
    std::atomic<long> violations{0};
    std::atomic<long> errors{0}; // the run's own failures (a thread refused), not cuctx's
    std::mutex messagesMutex;
    std::vector<std::string> messages;
    std::vector<std::string> errorMessages;

    void violation(const std::string& what)
    {
        violations.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard lock(messagesMutex);
        if (messages.size() < 20)
            messages.push_back(what);
    }
    void error(const std::string& what)
    {
        errors.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard lock(messagesMutex);
        if (errorMessages.size() < 20)
            errorMessages.push_back(what);
    }
};

CUcontext driverCurrent()
{
    CUcontext c = nullptr;
    (void)tools::rawDriver().cuCtxGetCurrent(&c);
    return c;
}

// A deliberately broken guard, to show that the harness finds real bugs: it enters like a guard and
// leaves wrongly (restores another context, or forgets to pop).
class BrokenGuard {
public:
    BrokenGuard(const Context& context, Context wrong, Bug bug) : bug_(bug), wrong_(std::move(wrong))
    {
        (void)tools::rawDriver().cuCtxPushCurrent(context.native());
    }
    ~BrokenGuard()
    {
        CUcontext popped = nullptr;
        if (bug_ == Bug::wrongRestore) {
            (void)tools::rawDriver().cuCtxPopCurrent(&popped);
            (void)tools::rawDriver().cuCtxSetCurrent(wrong_.native()); // "restores" the wrong context
        }
        // Bug::noPop: leaves its push on the stack
    }
    BrokenGuard(const BrokenGuard&) = delete;
    BrokenGuard& operator=(const BrokenGuard&) = delete;

private:
    Bug bug_;
    Context wrong_;
};

class Worker {
public:
    Worker(Shared& shared, unsigned index) : s_(shared), rng_(shared.options.seed * 1000003u + index), index_(index) {}

    void run()
    {
        std::discrete_distribution<int> pick(std::begin(kOpWeights), std::end(kOpWeights));
        for (long n = 0; !s_.stop.load(std::memory_order_relaxed); ++n) {
            if (s_.options.ops > 0 && n >= s_.options.ops)
                break;
            const Op op = static_cast<Op>(pick(rng_));
            try {
                perform(op);
            } catch (const std::exception& e) {
                s_.violation(std::string(kOpNames[op]) + " on thread " + std::to_string(index_) + ": " + e.what());
            }
            s_.done[op].fetch_add(1, std::memory_order_relaxed);
        }
        if (ContextStack::depth() != 0 || driverCurrent() != nullptr)
            s_.violation("thread " + std::to_string(index_) + " ends with a non-empty stack (depth " +
                         std::to_string(ContextStack::depth()) + ")");
    }

private:
    const Context& anyContext() { return s_.contexts[rng_() % s_.contexts.size()]; }

    void expectCurrent(const Context& ctx, const char* where)
    {
        if (driverCurrent() != ctx.native())
            s_.violation(std::string(where) + ": the driver's current context is not the one entered");
    }

    void nest(int depth)
    {
        if (depth == 0)
            return;
        const Context& ctx = anyContext();
        if (s_.options.bug != Bug::none && rng_() % 16 == 0) {
            const CUcontext before = driverCurrent();
            {
                BrokenGuard g(ctx, anyContext(), s_.options.bug);
                nest(depth - 1);
            }
            if (driverCurrent() != before) {
                s_.violation("nest: a guard left another context current than it found");
                while (driverCurrent() != before && ContextStack::depth() == 0 && driverCurrent() != nullptr) {
                    CUcontext c = nullptr;
                    (void)tools::rawDriver().cuCtxPopCurrent(&c); // repair, so that the run goes on
                }
                if (before == nullptr)
                    (void)tools::rawDriver().cuCtxSetCurrent(nullptr);
            }
            return;
        }
        const CUcontext before = driverCurrent();
        {
            ContextGuard g(ctx);
            expectCurrent(ctx, "nest");
            nest(depth - 1);
            expectCurrent(ctx, "nest, after the inner guards");
        }
        if (driverCurrent() != before)
            s_.violation("nest: a guard did not restore the context it found");
    }

    void perform(Op op)
    {
        switch (op) {
        case opNest: nest(1 + static_cast<int>(rng_() % 4)); break;
        case opAdopt: {
            if (ContextStack::depth() != 0)
                break;
            const Context& ctx = anyContext();
            ContextBinding binding(ctx);
            for (int i = 0; i < 8; ++i) {
                ContextGuard g(ctx);
                if (g.switched())
                    s_.violation("adopt: a guard on the adopted context switched");
            }
            break;
        }
        case opModule: {
            const std::size_t i = rng_() % s_.contexts.size();
            const CUmodule m =
                rng_() % 2 == 0 ? Module::cached(s_.contexts[i], s_.image).native()
                                : Module::cached(s_.contexts[i], std::as_bytes(std::span(s_.ptx.data(), s_.ptx.size())),
                                                 {}, "stress")
                                      .native();
            if (firstModules_.empty())
                firstModules_.resize(s_.contexts.size());
            if (firstModules_[i] == nullptr)
                firstModules_[i] = m;
            else if (firstModules_[i] != m)
                s_.violation("module: the cache gave two modules for one image and context");
            break;
        }
        case opLaunch: launchChecked(anyContext()); break;
        case opWait: waitAcross(); break;
        case opChurn: {
            const long long now =
                std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
            long long last = s_.lastChurnNs.load();
            if (now - last < s_.options.churnIntervalMs * 1'000'000LL ||
                !s_.lastChurnNs.compare_exchange_strong(last, now))
                break; // another thread churned recently
            Context fresh = Context::create(Device::get(0));
            std::lock_guard lock(s_.churnMutex);
            s_.churn = std::move(fresh); // the old one goes once its users are done
            s_.churned.fetch_add(1, std::memory_order_relaxed);
            break;
        }
        case opExit: {
            Context ctx = anyContext();
            std::string failure;
            std::thread t;
            try {
                t = std::thread([&ctx, &failure] { // exits holding it
                    try {
                        ContextStack::adopt(ctx);
                    } catch (const std::exception& e) {
                        failure = e.what();
                    }
                });
            } catch (const std::system_error& e) { // the system's limit, not cuctx's fault
                s_.error("exit on thread " + std::to_string(index_) + ": could not start a thread: " + e.what());
                break;
            }
            t.join();
            if (!failure.empty())
                s_.violation("exit: " + failure);
            break;
        }
        case opCount: break;
        }
        // Use the churn context too, racing its replacement.
        if (op == opNest && rng_() % 4 == 0) {
            Context ctx;
            {
                std::lock_guard lock(s_.churnMutex);
                ctx = s_.churn;
            }
            ContextGuard g(ctx);
            expectCurrent(ctx, "churn use");
        }
    }

    void launchChecked(const Context& ctx)
    {
        constexpr unsigned n = 256;
        std::vector<float> input(n), output(n);
        std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
        for (float& x : input)
            x = dist(rng_);
        Resources& r = resources(ctx);
        r.in.uploadAsync(input.data(), n * sizeof(float), r.stream);
        const auto factor = static_cast<float>(1 + rng_() % 4);
        if (s_.kernelsRun) {
            launch(r.scale, {.grid = {1, 1, 1}, .block = {n, 1, 1}, .stream = r.stream.native()}, r.out.address(),
                   r.in.address(), factor, n);
        } else {
            launch(r.empty, {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = r.stream.native()});
            r.out.copyFrom(r.in, r.stream); // (the whole buffer: what was uploaded and the rest)
        }
        r.out.downloadAsync(output.data(), n * sizeof(float), r.stream);
        r.stream.synchronize();
        const float expect = s_.kernelsRun ? factor : 1.0f;
        for (unsigned i = 0; i < n; ++i)
            if (output[i] != input[i] * expect) {
                s_.violation("launch: element " + std::to_string(i) + " is wrong");
                break;
            }
    }

    void waitAcross()
    {
        constexpr unsigned n = kBytes / 4;
        const Context& a = anyContext();
        const Context& b = anyContext();
        std::vector<unsigned> got(n);
        const auto value = static_cast<unsigned>(rng_());
        Resources& ra = resources(a);
        Resources& rb = resources(b);
        ra.in.fill32(value, ra.stream);
        ra.event.record(ra.stream);
        rb.stream.wait(ra.event); // the consumer's stream waits for the producer's, no host wait
        rb.out.copyFrom(ra.in, rb.stream);
        rb.out.downloadAsync(got.data(), kBytes, rb.stream);
        rb.stream.synchronize();
        if (std::count(got.begin(), got.end(), value) != static_cast<long>(n))
            s_.violation("wait: the consumer read data the producer had not written");
    }

    // What a worker keeps per context between operations (as a backend's worker would): a stream,
    // an event, buffers and the kernel, so that operations measure cuctx and the driver's work, not
    // allocation.
    struct Resources {
        Stream stream;
        Event event;
        DeviceBuffer in, out;
        Function scale, empty;
    };
    Resources& resources(const Context& ctx)
    {
        std::size_t i = 0;
        while (i < s_.contexts.size() && !(s_.contexts[i] == ctx))
            ++i;
        if (resources_.size() < s_.contexts.size())
            resources_.resize(s_.contexts.size());
        if (!resources_[i]) {
            const Module m = Module::cached(ctx, std::as_bytes(std::span(s_.ptx.data(), s_.ptx.size())), {}, "stress");
            resources_[i] = std::make_unique<Resources>(Resources{Stream(ctx), Event(ctx), DeviceBuffer(ctx, kBytes),
                                                                  DeviceBuffer(ctx, kBytes), m.function("scale"),
                                                                  m.function("empty")});
        }
        return *resources_[i];
    }
    static constexpr std::size_t kBytes = std::size_t{1024} * 4;

    Shared& s_;
    std::mt19937_64 rng_;
    unsigned index_;
    std::vector<CUmodule> firstModules_;
    std::vector<std::unique_ptr<Resources>> resources_;
};

} // namespace

int main(int argc, char** argv)
{
    const tools::ParsedStressOptions parsed =
        tools::parseStressOptions(std::vector<std::string>(argv + 1, argv + argc), defaultPtx());
    if (parsed.action == tools::ParsedStressOptions::Action::help) {
        std::fputs(parsed.text.c_str(), stdout);
        return 0;
    }
    if (parsed.action == tools::ParsedStressOptions::Action::usage) {
        std::fputs(parsed.text.c_str(), stderr);
        return kExitUsage;
    }
    Options o = parsed.options;
    if (o.threads == 0)
        o.threads = std::clamp(std::thread::hardware_concurrency(), 1u, tools::kMaxStressThreads);
    const auto status = Driver::status();
    if (!status.loaded) {
        std::fprintf(stderr, "cuctx-stress: %s\n", status.message.c_str());
        return kExitNoDriver;
    }
    // The same rule as Module::fromFile: a regular file of at most Module::kMaxImageFileBytes (a FIFO,
    // a device or a directory would block, grow without end or throw).
    std::error_code fileError;
    const bool regular = std::filesystem::is_regular_file(o.ptx, fileError);
    const std::uintmax_t size = regular ? std::filesystem::file_size(o.ptx, fileError) : 0;
    if (!regular || fileError || size > Module::kMaxImageFileBytes) {
        std::fprintf(stderr, "cuctx-stress: %s (--ptx) is not a regular file of at most %ju bytes\n", o.ptx.c_str(),
                     static_cast<std::uintmax_t>(Module::kMaxImageFileBytes));
        return kExitUsage;
    }
    std::ifstream in(o.ptx, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cuctx-stress: cannot read the kernels from %s (--ptx)\n", o.ptx.c_str());
        return kExitUsage;
    }
    // Violations are the report; cuctx's own log of them (at error level) would drown it.
    if (std::getenv("CUCTX_LOG_LEVEL") == nullptr)
        setLogLevel(LogLevel::off);
    const LiveObjects before = liveObjects();
    Shared s(o);
    s.ptx.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
        s.image = ModuleImage::fromPtx(s.ptx, {}, "stress");
    } catch (const Error& e) {
        std::fprintf(stderr, "cuctx-stress: %s (--ptx) is not a module image: %s\n", o.ptx.c_str(), e.what());
        return kExitUsage;
    }
    s.kernelsRun = Device::get(0).name().rfind("cuctx Fake", 0) != 0;
    for (int i = 0; i < o.contexts; ++i)
        s.contexts.push_back(i == 0 ? Context::primary(Device::get(0)) : Context::create(Device::get(0)));
    s.churn = Context::create(Device::get(0));

    const auto t0 = Clock::now();
    std::vector<std::thread> threads;
    threads.reserve(o.threads);
    try {
        for (unsigned t = 0; t < o.threads; ++t)
            threads.emplace_back([&s, t] { Worker(s, t).run(); });
    } catch (const std::system_error& e) {
        // Stop and join the workers that started (a joinable std::thread must never be destroyed).
        s.error("could not start worker thread " + std::to_string(threads.size() + 1) + " of " +
                std::to_string(o.threads) + ": " + e.what() + " (use fewer --threads, or raise the limit)");
        s.stop = true;
    }
    const bool progress = !o.json && isatty(STDERR_FILENO) != 0;
    while (!s.stop) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
        if (o.ops == 0 && elapsed >= o.seconds)
            break;
        if (o.ops > 0) {
            long total = 0;
            for (const auto& d : s.done)
                total += d.load();
            if (total >= o.ops * static_cast<long>(o.threads))
                break;
        }
        if (progress) {
            long total = 0;
            for (const auto& d : s.done)
                total += d.load();
            std::fprintf(stderr, "\r%7.1f s  %12ld ops  %8.2f Mops/s  violations %ld ", elapsed, total,
                         static_cast<double>(total) / std::max(elapsed, 1e-9) / 1e6, s.violations.load());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100)); // a progress display, not synchronisation
    }
    s.stop = true;
    for (auto& t : threads)
        t.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (progress)
        std::fprintf(stderr, "\n");

    // Invariants after the run: drop everything, then nothing may be left.
    for (const Context& ctx : s.contexts) {
        try {
            // A guard that found the stack changed under it recorded that on its context, and the
            // context's next fallible call reports it: here, once more, as a violation.
            ctx.checkRecordedError();
        } catch (const std::exception& e) {
            s.violation(std::string("recorded on a context: ") + e.what());
        }
        try {
            if (const auto users = ctx.threadsUsing(); !users.empty())
                s.violation("a context is still used by " + std::to_string(users.size()) +
                            " threads after every worker ended");
            Module::clearCache(ctx);
        } catch (const std::exception& e) {
            s.violation(std::string("after the run: ") + e.what());
        }
    }
    s.contexts.clear();
    s.churn.reset();
    const LiveObjects after = liveObjects();
    if (!(after == before))
        s.violation("left alive: " + std::to_string(after.contexts - before.contexts) + " contexts, " +
                    std::to_string(after.modules - before.modules) + " modules, " +
                    std::to_string(after.streams - before.streams) + " streams, " +
                    std::to_string(after.events - before.events) + " events, " +
                    std::to_string(after.buffers - before.buffers) + " buffers");

    long total = 0;
    for (const auto& d : s.done)
        total += d.load();
    if (o.json) { // through cuctx's JSON writer: escaped, valid UTF-8, '.' decimals in any locale
        detail::JsonWriter j;
        j.beginObject();
        j.key("tool").value("cuctx-stress");
        j.key("seed").value(static_cast<std::uint64_t>(o.seed));
        j.key("threads").value(o.threads);
        j.key("seconds").value(seconds);
        j.key("operations").value(static_cast<std::int64_t>(total));
        j.key("operations_per_second").value(static_cast<double>(total) / seconds);
        j.key("by_kind").beginObject();
        for (int k = 0; k < opCount; ++k) {
            j.key(kOpNames[k]).beginObject();
            j.key("operations").value(static_cast<std::int64_t>(s.done[k].load()));
            j.key("per_second").value(static_cast<double>(s.done[k].load()) / seconds);
            j.endObject();
        }
        j.endObject();
        j.key("contexts_churned").value(static_cast<std::int64_t>(s.churned.load()));
        j.key("errors").value(static_cast<std::int64_t>(s.errors.load()));
        j.key("violations").value(static_cast<std::int64_t>(s.violations.load()));
        j.key("messages").beginArray();
        for (const std::string& m : s.messages)
            j.value(m);
        j.endArray();
        j.key("error_messages").beginArray();
        for (const std::string& m : s.errorMessages)
            j.value(m);
        j.endArray();
        j.endObject();
        std::fputs(j.text().c_str(), stdout);
    } else {
        std::printf("cuctx-stress: %u threads, %.1f s, seed %lu, %s: %ld operations (%.2f M/s), %ld violations\n",
                    o.threads, seconds, o.seed, Device::get(0).name().c_str(), total,
                    static_cast<double>(total) / seconds / 1e6, s.violations.load());
        std::printf("%-8s %14s %14s\n", "kind", "operations", "per second");
        for (int k = 0; k < opCount; ++k)
            std::printf("%-8s %14ld %14.0f\n", kOpNames[k], s.done[k].load(),
                        static_cast<double>(s.done[k].load()) / seconds);
        std::printf("contexts churned while in use: %ld\n", s.churned.load());
        for (const std::string& m : s.messages)
            std::printf("violation: %s\n", m.c_str());
    }
    for (const std::string& m : s.errorMessages)
        std::fprintf(stderr, "cuctx-stress: error: %s\n", m.c_str());
    const bool flushed = std::fflush(stdout) == 0;
    const int error = errno;
    if (!flushed || std::ferror(stdout) != 0) { // > /dev/full: the report is lost, never exit 0
        std::fprintf(stderr, "cuctx-stress: cannot write the report to stdout: %s\n",
                     flushed ? "a write failed" : std::strerror(error));
        return s.violations.load() != 0 ? kExitViolations : kExitNotRun;
    }
    if (s.violations.load() != 0)
        return kExitViolations;
    return s.errors.load() == 0 ? 0 : kExitNotRun;
}

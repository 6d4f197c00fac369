// SPDX-License-Identifier: MIT
// cuctx::GpuWorker on the fake driver: requests run in a worker process (cuctx-gpu-worker, which
// loads the fake too); a sticky fault, a death and a missed deadline are reported and the worker is
// replaced, while this process's own context and other workers keep working. The fake's kernels
// cuctx_fake_illegal_address and cuctx_fake_never_ends stand for a store to address 0 and a kernel
// that never ends (fake_driver.hpp). tests/gpu/test_isolation_gpu.cpp runs a real fault.

#include <catch2/catch.hpp>

#include "module_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/device.hpp"
#include "cuctx/device_buffer.hpp"
#include "cuctx/error.hpp"
#include "cuctx/gpu_worker.hpp"
#include "worker/worker_protocol.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using cuctx::Errc;
using cuctx::GpuWorker;
using cuctx::WorkRequest;

const char* kFaultPtx = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry cuctx_fake_illegal_address()
{
    ret;
}
.visible .entry cuctx_fake_never_ends()
{
    ret;
}
)";

cuctx::GpuWorkerOptions options()
{
    cuctx::GpuWorkerOptions o;
    o.program = CUCTX_GPU_WORKER_PATH;
    return o;
}

std::string kernelsPtx()
{
    std::ifstream in(cuctx::test::testPtxPath());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<std::byte> floats(std::size_t n, float first)
{
    std::vector<std::byte> bytes(n * sizeof(float));
    for (std::size_t i = 0; i < n; ++i) {
        const float v = first + static_cast<float>(i);
        std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof v);
    }
    return bytes;
}

// scale(out, in, 2.0f, n): on the fake nothing computes, so `out` comes back zeroed and `in` as sent.
WorkRequest scaleRequest(const std::vector<std::byte>& input)
{
    WorkRequest r = WorkRequest::fromImage(kernelsPtx(), "scale");
    r.grid = {1, 1, 1};
    r.block = {64, 1, 1};
    const std::uint32_t out = r.addZeroBuffer(input.size());
    const std::uint32_t in = r.addBuffer(input);
    r.argBuffer(out);
    r.argBuffer(in);
    r.arg(2.0f);
    r.arg(static_cast<std::uint32_t>(input.size() / sizeof(float)));
    return r;
}

WorkRequest faultRequest(const char* kernel)
{
    WorkRequest r = WorkRequest::fromImage(kFaultPtx, kernel);
    r.block = {32, 1, 1};
    return r;
}

void requireServes(GpuWorker& worker)
{
    const std::vector<std::byte> input = floats(64, 1.0f);
    const cuctx::WorkResult result = worker.run(scaleRequest(input));
    REQUIRE(result.buffers.size() == 2);
    CHECK(result.buffers[0].size() == input.size());
    CHECK(result.buffers[1] == input); // copied in, and back
    CHECK(result.worker == worker.pid());
}

// This process's own context: a round trip through device memory.
void requireParentContextWorks(const cuctx::Context& context)
{
    cuctx::DeviceBuffer b(context, 16);
    const unsigned values[4] = {1, 2, 3, 4};
    b.upload(values, sizeof values);
    unsigned back[4] = {};
    b.download(back, sizeof back);
    CHECK(std::memcmp(values, back, sizeof values) == 0);
}

} // namespace

TEST_CASE("a GpuWorker runs a kernel in another process and copies its buffers back", "[worker]")
{
    GpuWorker worker(options());
    requireServes(worker);
    CHECK(worker.pid() > 0);
    CHECK(worker.pid() != ::getpid());
    CHECK(worker.restarts() == 0);
    CHECK_FALSE(worker.lastFault());
    requireServes(worker); // the same worker serves again
}

TEST_CASE("a sticky fault in a worker is reported and the worker replaced", "[worker]")
{
    const cuctx::Context parent = cuctx::Context::create(cuctx::Device::get(0));
    GpuWorker worker(options());
    requireServes(worker);
    const pid_t first = worker.pid();
    try {
        (void)worker.run(faultRequest("cuctx_fake_illegal_address"));
        FAIL("the faulting request returned");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == Errc::worker_fault);
        CHECK(e.code() == Errc::worker_fault);
        CHECK_FALSE(e.code() == Errc::device_poisoned); // this process's device is fine
        CHECK(e.result() == 0);                         // the 700 was the worker's driver's
        const std::string what = e.what();
        CHECK_THAT(what, Catch::Contains("pid " + std::to_string(first)));
        CHECK_THAT(what, Catch::Contains("request 2"));
        CHECK_THAT(what, Catch::Contains("CUDA_ERROR_ILLEGAL_ADDRESS"));
        CHECK_THAT(what, Catch::Contains("'cuctx_fake_illegal_address'"));
        CHECK_THAT(what, Catch::Contains("'scale'")); // the launch before it, from the worker's journal
    }
    const auto fault = worker.lastFault();
    REQUIRE(fault);
    CHECK(fault->result == 700); // CUDA_ERROR_ILLEGAL_ADDRESS, as the worker saw it
    CHECK(fault->kind == cuctx::WorkerFaultKind::sticky_error);
    CHECK(fault->pid == first);
    CHECK(fault->request == 2);
    CHECK(fault->exitStatus == 3); // the worker left by itself after its answer
    CHECK_THAT(fault->call, Catch::Contains("cuLaunchKernel"));
    REQUIRE(fault->lastLaunches.size() == 2);
    CHECK(fault->lastLaunches[0].kernel == "scale");
    CHECK(fault->lastLaunches[0].result == 0);
    CHECK(fault->lastLaunches[1].result == 700);
    CHECK(fault->replacement == worker.pid());
    CHECK(worker.pid() != first);
    CHECK(worker.restarts() == 1);
    requireServes(worker);
    requireParentContextWorks(parent);
}

TEST_CASE("a worker that misses its deadline is killed and replaced", "[worker]")
{
    GpuWorker worker(options());
    requireServes(worker);
    const pid_t first = worker.pid();
    WorkRequest hang = faultRequest("cuctx_fake_never_ends"); // the worker blocks in the launch for good
    hang.deadline = std::chrono::milliseconds(300);
    try {
        (void)worker.run(hang);
        FAIL("the hung request returned");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == Errc::worker_fault);
        CHECK_THAT(e.what(), Catch::Contains("missed its deadline"));
        CHECK_THAT(e.what(), Catch::Contains("pid " + std::to_string(first)));
    }
    const auto fault = worker.lastFault();
    REQUIRE(fault);
    CHECK(fault->kind == cuctx::WorkerFaultKind::deadline);
    CHECK(fault->exitStatus == 128 + SIGKILL);
    REQUIRE_FALSE(fault->lastLaunches.empty());
    CHECK(fault->lastLaunches.back().kernel == "cuctx_fake_never_ends");
    CHECK(worker.pid() != first);
    requireServes(worker);
}

TEST_CASE("a worker that dies is reported and replaced; other workers keep running", "[worker]")
{
    GpuWorker victim(options());
    GpuWorker bystander(options());
    requireServes(victim);
    requireServes(bystander);
    const pid_t first = victim.pid();
    const pid_t other = bystander.pid();
    REQUIRE(::kill(first, SIGKILL) == 0);
    CHECK_THROWS_MATCHES(
        victim.run(scaleRequest(floats(4, 0.0f))), cuctx::Error,
        Catch::Predicate<cuctx::Error>([](const cuctx::Error& e) { return e.condition() == Errc::worker_fault; }));
    const auto fault = victim.lastFault();
    REQUIRE(fault);
    CHECK(fault->kind == cuctx::WorkerFaultKind::died);
    CHECK(fault->exitStatus == 128 + SIGKILL);
    CHECK(victim.pid() != first);
    requireServes(victim);
    CHECK(bystander.pid() == other);
    CHECK(bystander.restarts() == 0);
    requireServes(bystander);
}

TEST_CASE("an ordinary error in a worker is thrown and the worker keeps serving", "[worker]")
{
    GpuWorker worker(options());
    requireServes(worker);
    const pid_t first = worker.pid();
    WorkRequest missing = faultRequest("no_such_kernel");
    try {
        (void)worker.run(missing);
        FAIL("a missing kernel was launched");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() != Errc::worker_fault);
        CHECK(e.result() == 500); // CUDA_ERROR_NOT_FOUND
        CHECK_THAT(e.what(), Catch::Contains("no_such_kernel"));
    }
    CHECK(worker.pid() == first);
    CHECK(worker.restarts() == 0);
    requireServes(worker);
}

TEST_CASE("a malformed request is refused before it reaches the worker", "[worker]")
{
    GpuWorker worker(options());
    WorkRequest r = faultRequest("scale");
    r.argBuffer(3); // no such buffer
    CHECK_THROWS_MATCHES(worker.run(r), cuctx::Error, Catch::Predicate<cuctx::Error>([](const cuctx::Error& e) {
                             return e.condition() == Errc::invalid_argument;
                         }));
    r = faultRequest("scale");
    r.grid = {0, 1, 1};
    CHECK_THROWS_AS(worker.run(r), cuctx::Error);
    const auto refused = [](const char* words) {
        return Catch::Predicate<cuctx::Error>([words](const cuctx::Error& e) {
            return e.condition() == Errc::invalid_argument && std::string(e.what()).find(words) != std::string::npos;
        });
    };
    r = faultRequest("scale");
    r.deadline = std::chrono::milliseconds::zero();
    CHECK_THROWS_MATCHES(worker.run(r), cuctx::Error, refused("deadline of 0 ms"));
    // A reply larger than a message can hold (a zeroed buffer costs no memory here: only its size
    // travels) is refused before it is sent, not found out as a garbled reply from a killed worker.
    r = faultRequest("scale");
    (void)r.addZeroBuffer(std::size_t{3} << 29);
    CHECK_THROWS_MATCHES(worker.run(r), cuctx::Error, refused("copies back 1610612736"));
    CHECK(worker.restarts() == 0);
    requireServes(worker);
}

TEST_CASE("a request with no deadline to speak of runs", "[worker]")
{
    GpuWorker worker(options());
    const std::vector<std::byte> input = floats(64, 1.0f);
    WorkRequest r = scaleRequest(input);
    r.deadline = std::chrono::milliseconds::max(); // overflowed the clock: killed at once, as "missed"
    const cuctx::WorkResult result = worker.run(r);
    CHECK(result.buffers.size() == 2);
    CHECK(worker.restarts() == 0);
}

TEST_CASE("a GpuWorker whose program cannot start says so", "[worker]")
{
    cuctx::GpuWorkerOptions o;
    o.program = "/nonexistent/cuctx-gpu-worker";
    CHECK_THROWS_MATCHES(GpuWorker(o), cuctx::Error, Catch::Predicate<cuctx::Error>([](const cuctx::Error& e) {
                             return e.condition() == Errc::invalid_argument &&
                                    std::string(e.what()).find("/nonexistent/cuctx-gpu-worker") != std::string::npos;
                         }));
    o.program = "/bin/true"; // starts, but is no worker: it exits before its hello
    GpuWorker notAWorker(o);
    CHECK_THROWS_MATCHES(notAWorker.run(faultRequest("scale")), cuctx::Error,
                         Catch::Predicate<cuctx::Error>([](const cuctx::Error& e) {
                             return std::string(e.what()).find("did not start") != std::string::npos;
                         }));
}

TEST_CASE("the worker protocol decodes what it encodes and refuses anything else", "[worker]")
{
    namespace wk = cuctx::detail::worker;
    wk::Run run;
    run.id = 9;
    run.image = {std::byte{'x'}};
    run.kernel = "k";
    run.buffers.push_back(
        wk::Buffer{4, wk::copyIn | wk::copyBack, {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}}});
    run.arguments.push_back(wk::Argument{true, {}, 0});
    run.arguments.push_back(wk::Argument{false, {std::byte{7}}, 0});
    const std::vector<std::byte> message = wk::encode(run);
    const auto header = wk::decodeHeader(std::span(message).first(wk::kHeaderBytes));
    REQUIRE(header);
    CHECK(header->type == wk::Type::run);
    REQUIRE(header->length == message.size() - wk::kHeaderBytes);
    const auto payload = std::span(message).subspan(wk::kHeaderBytes);
    const auto back = wk::decodeRun(payload);
    REQUIRE(back);
    CHECK(back->id == 9);
    CHECK(back->kernel == "k");
    CHECK(back->buffers.at(0).contents == run.buffers[0].contents);
    CHECK(back->arguments.at(1).scalar == run.arguments[1].scalar);
    // Every shorter payload, and one byte more, is refused.
    for (std::size_t n = 0; n < payload.size(); ++n)
        CHECK_FALSE(wk::decodeRun(payload.first(n)));
    std::vector<std::byte> longer(payload.begin(), payload.end());
    longer.push_back(std::byte{0});
    CHECK_FALSE(wk::decodeRun(longer));
    // An argument naming a buffer that does not exist.
    run.arguments[0].buffer = 1;
    const std::vector<std::byte> badArgument = wk::encode(run);
    CHECK_FALSE(wk::decodeRun(std::span(badArgument).subspan(wk::kHeaderBytes)));
    // Another version, another magic.
    std::vector<std::byte> other = message;
    other[4] = std::byte{2};
    CHECK_FALSE(wk::decodeHeader(std::span(other).first(wk::kHeaderBytes)));
    other = message;
    other[0] = std::byte{0};
    CHECK_FALSE(wk::decodeHeader(std::span(other).first(wk::kHeaderBytes)));

    wk::Reply reply;
    reply.id = 3;
    reply.result = 700;
    reply.sticky = true;
    reply.journal.push_back(wk::Launch{3, "k", {1, 2, 3}, {4, 5, 6}, 700});
    const std::vector<std::byte> replyBytes = wk::encode(reply);
    const auto decoded = wk::decodeReply(std::span(replyBytes).subspan(wk::kHeaderBytes));
    REQUIRE(decoded);
    CHECK(decoded->sticky);
    REQUIRE(decoded->journal.size() == 1);
    CHECK(decoded->journal[0].block[2] == 6);
}

TEST_CASE("GpuWorker finds its program through CUCTX_GPU_WORKER first", "[worker]")
{
    const char* old = std::getenv("CUCTX_GPU_WORKER");
    const std::string saved = old != nullptr ? old : "";
    ::setenv("CUCTX_GPU_WORKER", CUCTX_GPU_WORKER_PATH, 1);
    CHECK(GpuWorker::defaultProgram() == CUCTX_GPU_WORKER_PATH);
    {
        GpuWorker worker; // no program named: the variable's
        requireServes(worker);
    }
    ::unsetenv("CUCTX_GPU_WORKER");
    // This test links cuctx statically, so there is no libcuctx.so to look beside: the installed path.
    CHECK_THAT(GpuWorker::defaultProgram(), Catch::EndsWith("cuctx/cuctx-gpu-worker"));
    if (old != nullptr)
        ::setenv("CUCTX_GPU_WORKER", saved.c_str(), 1);
}

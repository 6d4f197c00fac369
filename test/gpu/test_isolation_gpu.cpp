// SPDX-License-Identifier: MIT
// A real sticky fault in a GpuWorker: a kernel that stores to address 0 (CUDA_ERROR_ILLEGAL_ADDRESS,
// test/data/faults.ptx) runs in the worker while this process's own kernel runs on its own context.
// This process's results stay correct, the supervisor replaces the worker, the fresh worker computes
// correctly, and the time from the fault to a working worker is printed ("fault-recovery: N ms").

#include <catch2/catch.hpp>

#include "module_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/device.hpp"
#include "cuctx/device_buffer.hpp"
#include "cuctx/error.hpp"
#include "cuctx/gpu_worker.hpp"
#include "cuctx/launch.hpp"
#include "cuctx/module.hpp"
#include "cuctx/stream.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

std::string workerProgram()
{
    if (const char* env = std::getenv("CUCTX_GPU_WORKER"); env != nullptr && env[0] != '\0')
        return env;
    return CUCTX_GPU_WORKER_PATH;
}

std::string readText(const std::filesystem::path& path)
{
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

constexpr unsigned kN = 1u << 16;

std::vector<float> inputs()
{
    std::vector<float> v(kN);
    for (unsigned i = 0; i < kN; ++i)
        v[i] = static_cast<float>(i % 1000) * 0.5f;
    return v;
}

cuctx::WorkRequest scaleInWorker(const std::vector<float>& in, float factor)
{
    cuctx::WorkRequest r = cuctx::WorkRequest::fromImage(readText(cuctx::test::testPtxPath()), "scale");
    r.grid = {kN / 256, 1, 1};
    r.block = {256, 1, 1};
    r.deadline = std::chrono::seconds(60);
    const std::uint32_t out = r.addZeroBuffer(kN * sizeof(float));
    const std::uint32_t input = r.addBuffer(std::as_bytes(std::span(in)), false);
    r.argBuffer(out);
    r.argBuffer(input);
    r.arg(factor);
    r.arg(kN);
    return r;
}

void checkScaled(const std::vector<std::byte>& bytes, const std::vector<float>& in, float factor)
{
    REQUIRE(bytes.size() == kN * sizeof(float));
    std::vector<float> out(kN);
    std::memcpy(out.data(), bytes.data(), bytes.size());
    unsigned wrong = 0;
    for (unsigned i = 0; i < kN; ++i)
        wrong += out[i] != in[i] * factor ? 1 : 0;
    CHECK(wrong == 0);
}

} // namespace

TEST_CASE("a kernel that stores to address 0 faults in its worker; this process computes on", "[gpu][isolation]")
{
    const std::vector<float> in = inputs();
    // This process's own context and kernel.
    const cuctx::Context parent = cuctx::Context::create(cuctx::Device::get(0));
    const cuctx::Module module = cuctx::Module::fromFile(parent, cuctx::test::testPtxPath());
    const cuctx::Function scale = module.function("scale");
    const cuctx::DeviceBuffer pIn(parent, kN * sizeof(float));
    const cuctx::DeviceBuffer pOut(parent, kN * sizeof(float));
    pIn.upload(in.data(), kN * sizeof(float));
    const cuctx::Stream stream(parent);
    auto parentLaunch = [&](float factor) {
        cuctx::launch(scale, {{kN / 256, 1, 1}, {256, 1, 1}, 0, stream}, pOut.address(), pIn.address(), factor, kN);
    };
    auto parentCheck = [&](float factor) {
        stream.synchronize();
        std::vector<std::byte> bytes(kN * sizeof(float));
        pOut.download(bytes.data(), bytes.size());
        checkScaled(bytes, in, factor);
    };

    cuctx::GpuWorkerOptions options;
    options.program = workerProgram();
    cuctx::GpuWorker worker(options);
    checkScaled(worker.run(scaleInWorker(in, 2.0f)).buffers[0], in, 2.0f); // the worker works
    const pid_t first = worker.pid();

    cuctx::WorkRequest fault = cuctx::WorkRequest::fromFile(
        (cuctx::test::testDataDir(CUCTX_TEST_DATA_SOURCE_DIR) / "faults.ptx").string(), "store_to_null");
    fault.arg(std::uint64_t{0});
    fault.deadline = std::chrono::seconds(60); // a fault must not hang the suite
    parentLaunch(3.0f);                        // in flight on this process's context while the worker faults
    const auto faultStart = Clock::now();
    try {
        (void)worker.run(fault);
        FAIL("a store to address 0 did not fault");
    } catch (const cuctx::Error& e) {
        INFO(e.what());
        CHECK(e.condition() == cuctx::Errc::worker_fault);
        CHECK_FALSE(e.code() == cuctx::Errc::device_poisoned); // the worker's device, not this process's
        CHECK_THAT(e.what(), Catch::Contains("CUDA_ERROR_ILLEGAL_ADDRESS"));
        CHECK_THAT(e.what(), Catch::Contains("store_to_null"));
    }
    const auto faultSeen = Clock::now();
    parentCheck(3.0f); // this process's results are right
    const auto fault0 = worker.lastFault();
    REQUIRE(fault0);
    CHECK(fault0->kind == cuctx::WorkerFaultKind::sticky_error);
    CHECK(fault0->pid == first);
    CHECK(worker.pid() != first);

    checkScaled(worker.run(scaleInWorker(in, 4.0f)).buffers[0], in, 4.0f); // the fresh worker computes
    const auto recovered = Clock::now();
    CHECK(worker.restarts() == 1);
    parentLaunch(5.0f);
    parentCheck(5.0f); // and this process still does

    using ms = std::chrono::milliseconds;
    std::printf("fault-recovery: %lld ms (fault reported after %lld ms, then %lld ms to a working worker)\n",
                static_cast<long long>(std::chrono::duration_cast<ms>(recovered - faultStart).count()),
                static_cast<long long>(std::chrono::duration_cast<ms>(faultSeen - faultStart).count()),
                static_cast<long long>(std::chrono::duration_cast<ms>(recovered - faultSeen).count()));
    std::fflush(stdout);
}

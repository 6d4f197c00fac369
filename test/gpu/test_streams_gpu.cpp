// SPDX-License-Identifier: MIT
// Streams and events on the real driver, with kernels: work chained across contexts by events,
// and a buffer and an event shared with a child process.

#include "gpu_helpers.hpp"
#include "ipc_child.hpp"
#include "module_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/device_buffer.hpp"
#include "cuctx/event.hpp"
#include "cuctx/launch.hpp"
#include "cuctx/module.hpp"
#include "cuctx/pipeline.hpp"
#include "cuctx/stream.hpp"
#include "cuctx/worker_process.hpp"

#include <random>
#include <vector>

using cuctx::Context;
using cuctx::Device;
using cuctx::DeviceBuffer;
using cuctx::Event;
using cuctx::Module;
using cuctx::Stream;

namespace {

constexpr unsigned kBlock = 256;

std::vector<float> randomFloats(std::size_t n, unsigned seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = dist(rng);
    return v;
}

// Queues out = in * factor on `stream` with `module`'s scale kernel.
void scale(const Module& module, const Stream& stream, const DeviceBuffer& out, const DeviceBuffer& in, float factor)
{
    const auto n = static_cast<unsigned>(in.bytes() / sizeof(float));
    cuctx::launch(module.function("scale"),
                  {.grid = {(n + kBlock - 1) / kBlock, 1, 1}, .block = {kBlock, 1, 1}, .stream = stream.native()},
                  out.address(), in.address(), factor, n);
}

std::size_t mismatches(const std::vector<float>& got, const std::vector<float>& input, float factor)
{
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        wrong += got[i] == input[i] * factor ? 0 : 1;
    return wrong;
}

} // namespace

TEST_CASE("GPU: a consumer on another context reads the producer's data after an event wait", "[gpu][stream]")
{
    constexpr std::size_t n = 1 << 22;
    Context producerCtx = Context::create(Device::get(0));
    Context consumerCtx = Context::create(Device::get(0));
    const Module producerKernels = Module::fromFile(producerCtx, cuctx::test::testPtxPath());
    const Module consumerKernels = Module::fromFile(consumerCtx, cuctx::test::testPtxPath());
    const std::vector<float> input = randomFloats(n, 7);
    DeviceBuffer in(producerCtx, n * sizeof(float)), produced(producerCtx, n * sizeof(float));
    DeviceBuffer received(consumerCtx, n * sizeof(float)), consumed(consumerCtx, n * sizeof(float));
    in.upload(std::span<const float>(input));
    consumed.fill32(0x7fc00001u); // NaN: any element not written is wrong
    Stream producer(producerCtx), consumer(consumerCtx);
    Event ready(producerCtx);
    for (int repeat = 0; repeat < 20; ++repeat) // long enough that a missing wait would show
        scale(producerKernels, producer, produced, in, 2.0f);
    ready.record(producer);
    consumer.wait(ready); // no host synchronisation
    received.copyFrom(produced, consumer);
    scale(consumerKernels, consumer, consumed, received, 3.0f);
    consumer.synchronize();
    CHECK(mismatches(consumed.download<float>(), input, 6.0f) == 0);
}

TEST_CASE("GPU: a 4-stage pipeline over 4 contexts computes the right output with no host sync between stages",
          "[gpu][pipeline]")
{
    constexpr std::size_t n = 1 << 20, items = 6;
    std::vector<Context> contexts;
    std::vector<Module> kernels;
    for (int i = 0; i < 4; ++i) {
        contexts.push_back(Context::create(Device::get(0)));
        kernels.push_back(Module::fromFile(contexts.back(), cuctx::test::testPtxPath()));
    }
    // Stage s holds, per item, what it received and what it computed.
    std::vector<std::vector<DeviceBuffer>> received(4), computed(4);
    for (std::size_t s = 0; s < 4; ++s)
        for (std::size_t i = 0; i < items; ++i) {
            received[s].emplace_back(contexts[s], n * sizeof(float));
            computed[s].emplace_back(contexts[s], n * sizeof(float));
            computed[s].back().fill32(0x7fc00001u);
        }
    std::vector<std::vector<float>> inputs;
    for (std::size_t i = 0; i < items; ++i) {
        inputs.push_back(randomFloats(n, static_cast<unsigned>(100 + i)));
        received[0][i].upload(std::span<const float>(inputs[i]));
    }
    std::vector<cuctx::Pipeline::Stage> stages;
    for (std::size_t s = 0; s < 4; ++s)
        stages.push_back({contexts[s], [&, s](const Stream& stream, std::size_t item) {
                              if (s > 0)
                                  received[s][item].copyFrom(computed[s - 1][item], stream);
                              scale(kernels[s], stream, computed[s][item], received[s][item],
                                    static_cast<float>(s + 2));
                          }});
    cuctx::Pipeline pipeline(std::move(stages));
    for (std::size_t i = 0; i < items; ++i)
        pipeline.submit(i);
    pipeline.synchronize();
    for (std::size_t i = 0; i < items; ++i) {
        // Each stage rounds its product: expect the same four float multiplications, in order.
        std::vector<float> expected = inputs[i];
        for (float& x : expected)
            x = ((x * 2.0f) * 3.0f * 4.0f) * 5.0f;
        CHECK(mismatches(computed[3][i].download<float>(), expected, 1.0f) == 0);
    }
}

TEST_CASE("GPU: a child process sees the parent's buffer once the parent's interprocess event completes", "[gpu][ipc]")
{
    constexpr std::size_t n = 1 << 20;
    Context ctx = Context::primary(Device::get(0)); // IPC memory handles need the device's primary context
    const Module kernels = Module::fromFile(ctx, cuctx::test::testPtxPath());
    const std::vector<float> input = cuctx::test::ipcPattern(n);
    DeviceBuffer in(ctx, n * sizeof(float)), shared(ctx, n * sizeof(float));
    in.upload(std::span<const float>(input));
    shared.fill32(0x7fc00001u);
    Stream stream(ctx);
    Event written(ctx, {.interprocess = true});
    scale(kernels, stream, shared, in, cuctx::test::kIpcFactor);
    written.record(stream);
    // The child is a fresh program (exec, not fork): it initialises CUDA itself.
    cuctx::WorkerProcess child = cuctx::WorkerProcess::spawn(
        {cuctx::WorkerProcess::selfExecutable()},
        {{cuctx::test::kIpcChildVariable, shared.ipcHandle().text() + " " + written.ipcHandle().text()}});
    CHECK(child.wait() == 0);
}

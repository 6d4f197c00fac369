// cuctx beside the CUDA runtime and a library built on it (cuBLAS), as a framework backend runs it:
// the runtime owns the primary context and keeps it current, cuctx guards enter created and primary
// contexts around it, and a cuBLAS handle bound to a context at its creation is driven from a
// thread pool through guards. Every result is checked on the host.

#include <catch2/catch.hpp>

#include "cuctx/cuctx.hpp"
#include "driver_helpers.hpp"
#include "module_helpers.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

void requireRuntime(cudaError_t e, const char* call)
{
    INFO(call << " returned " << cudaGetErrorName(e) << ": " << cudaGetErrorString(e));
    REQUIRE(e == cudaSuccess);
}
#define RT(call) requireRuntime((call), #call)

void requireBlas(cublasStatus_t s, const char* call)
{
    INFO(call << " returned " << static_cast<int>(s));
    REQUIRE(s == CUBLAS_STATUS_SUCCESS);
}
#define BLAS(call) requireBlas((call), #call)

CUcontext driverCurrent()
{
    return cuctx::test::rawCurrent();
}

// out[i] = in[i] * factor on `context`, through cuctx::launch of the test PTX's `scale`.
void scaleOn(const cuctx::Context& context, CUdeviceptr out, CUdeviceptr in, float factor, unsigned n)
{
    const cuctx::Module module = cuctx::Module::cachedFile(context, cuctx::test::testPtxPath());
    cuctx::launch(module.function("scale"), {.grid = {(n + 127) / 128, 1, 1}, .block = {128, 1, 1}}, out, in, factor,
                  n);
}

std::vector<float> iota(unsigned n, float from)
{
    std::vector<float> v(n);
    for (unsigned i = 0; i < n; ++i)
        v[i] = from + static_cast<float>(i);
    return v;
}

} // namespace

TEST_CASE("Runtime calls and cuctx guards interleave on primary and created contexts", "[gpu][runtime]")
{
    RT(cudaSetDevice(0));
    RT(cudaFree(nullptr)); // the runtime's context is current from here on
    const CUcontext runtimeContext = driverCurrent();
    REQUIRE(runtimeContext != nullptr);

    const cuctx::Device device = cuctx::Device::get(0);
    const cuctx::Context primary = cuctx::Context::primary(device);
    REQUIRE(primary.native() == runtimeContext); // the runtime uses the device's primary context
    const cuctx::Context created = cuctx::Context::create(device);

    constexpr unsigned n = 1000;
    const std::vector<float> input = iota(n, 1.0f);
    float* in = nullptr;
    float* out = nullptr;
    RT(cudaMalloc(reinterpret_cast<void**>(&in), n * sizeof(float)));
    RT(cudaMalloc(reinterpret_cast<void**>(&out), n * sizeof(float)));
    RT(cudaMemcpy(in, input.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    // A kernel through cuctx on the runtime's memory, in the primary context (already current).
    {
        cuctx::ContextGuard guard(primary, cuctx::verifyCurrent);
        CHECK(driverCurrent() == runtimeContext);
        scaleOn(primary, reinterpret_cast<CUdeviceptr>(out), reinterpret_cast<CUdeviceptr>(in), 3.0f, n);
        primary.synchronize();
    }
    std::vector<float> result(n);
    RT(cudaMemcpy(result.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < n; ++i)
        REQUIRE(result[i] == input[i] * 3.0f);

    // Work in a created context between runtime calls: the runtime's context is current afterwards.
    for (int round = 0; round < 3; ++round) {
        {
            cuctx::ContextGuard guard(created);
            CHECK(driverCurrent() == created.native());
            cuctx::DeviceBuffer a(created, n * sizeof(float));
            cuctx::DeviceBuffer b(created, n * sizeof(float));
            a.upload(std::span<const float>(input));
            scaleOn(created, b.address(), a.address(), static_cast<float>(round + 2), n);
            const std::vector<float> got = b.download<float>();
            for (unsigned i = 0; i < n; ++i)
                REQUIRE(got[i] == input[i] * static_cast<float>(round + 2));
        }
        CHECK(driverCurrent() == runtimeContext);
        RT(cudaMemset(out, 0, n * sizeof(float)));
        RT(cudaDeviceSynchronize());
    }
    RT(cudaFree(in));
    RT(cudaFree(out));
    CHECK(driverCurrent() == runtimeContext);
}

TEST_CASE("A runtime call that changes the current context inside a guard is detected and repaired", "[gpu][runtime]")
{
    RT(cudaSetDevice(0));
    RT(cudaFree(nullptr));
    const CUcontext runtimeContext = driverCurrent();
    const cuctx::Context created = cuctx::Context::create(cuctx::Device::get(0));
    {
        cuctx::ContextGuard guard(created);
        REQUIRE(driverCurrent() == created.native());
        RT(cudaSetDevice(0)); // makes the primary context current in place of the guard's
        CHECK(driverCurrent() == runtimeContext);
    }
    // What was below the guard is current again, and the change is reported on the guard's context.
    CHECK(driverCurrent() == runtimeContext);
    CHECK_THROWS_AS(created.checkRecordedError(), cuctx::Error);
    // The runtime still works on this thread.
    void* p = nullptr;
    RT(cudaMalloc(&p, 256));
    RT(cudaFree(p));
}

TEST_CASE("A fresh thread that never called the runtime uses it inside a guard on the primary context",
          "[gpu][runtime]")
{
    const cuctx::Context primary = cuctx::Context::primary(cuctx::Device::get(0));
    std::string failure;
    std::thread fresh([&] {
        CUcontext before = nullptr;
        cuctx::test::raw().cuCtxGetCurrent(&before);
        if (before != nullptr) {
            failure = "a new thread started with a current context";
            return;
        }
        {
            cuctx::ContextGuard guard(primary);
            int device = -1;
            void* p = nullptr;
            if (cudaGetDevice(&device) != cudaSuccess || device != 0)
                failure = "cudaGetDevice inside the guard";
            else if (cudaMalloc(&p, 1024) != cudaSuccess || cudaMemset(p, 7, 1024) != cudaSuccess ||
                     cudaDeviceSynchronize() != cudaSuccess || cudaFree(p) != cudaSuccess)
                failure = "runtime calls inside the guard";
            CUcontext inside = nullptr;
            cuctx::test::raw().cuCtxGetCurrent(&inside);
            if (failure.empty() && inside != primary.native())
                failure = "the runtime replaced the guard's context";
        }
        CUcontext after = nullptr;
        cuctx::test::raw().cuCtxGetCurrent(&after);
        if (failure.empty() && after != nullptr)
            failure = "the guard left a context current on a thread that had none";
    });
    fresh.join();
    INFO(failure);
    CHECK(failure.empty());
}

TEST_CASE("cuBLAS handles bound to a created context run from a thread pool through guards", "[gpu][runtime][cublas]")
{
    const cuctx::Device device = cuctx::Device::get(0);
    const cuctx::Context shared = cuctx::Context::create(device);
    constexpr int kWorkers = 4;
    constexpr int kTasks = 16;
    constexpr int n = 4096;
    std::vector<std::string> failures(kWorkers);
    std::vector<std::thread> pool;
    pool.reserve(kWorkers);
    for (int w = 0; w < kWorkers; ++w)
        pool.emplace_back([&, w] {
            std::string& failure = failures[static_cast<std::size_t>(w)];
            cublasHandle_t handle = nullptr;
            {
                cuctx::ContextGuard guard(shared); // the handle binds to the context current now
                if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
                    failure = "cublasCreate";
                    return;
                }
            }
            cuctx::DeviceBuffer x(shared, n * sizeof(float));
            cuctx::DeviceBuffer y(shared, n * sizeof(float));
            // NOLINTNEXTLINE(performance-no-int-to-ptr): cuBLAS takes the device address as a pointer
            const auto* dx = reinterpret_cast<const float*>(x.address());
            // NOLINTNEXTLINE(performance-no-int-to-ptr): as above
            auto* dy = reinterpret_cast<float*>(y.address());
            for (int task = 0; task < kTasks && failure.empty(); ++task) {
                const auto alpha = static_cast<float>(w * 100 + task);
                const std::vector<float> hx = iota(n, 0.0f);
                const std::vector<float> hy(n, 1.0f);
                cuctx::ContextGuard guard(shared);
                x.upload(std::span<const float>(hx));
                y.upload(std::span<const float>(hy));
                if (cublasSaxpy(handle, n, &alpha, dx, 1, dy, 1) != CUBLAS_STATUS_SUCCESS) {
                    failure = "cublasSaxpy";
                    break;
                }
                shared.synchronize();
                const std::vector<float> got = y.download<float>();
                for (int i = 0; i < n; ++i)
                    if (got[static_cast<std::size_t>(i)] != alpha * hx[static_cast<std::size_t>(i)] + 1.0f) {
                        failure = "wrong saxpy result at " + std::to_string(i) + " in task " + std::to_string(task);
                        break;
                    }
            }
            cuctx::ContextGuard guard(shared);
            if (cublasDestroy(handle) != CUBLAS_STATUS_SUCCESS && failure.empty())
                failure = "cublasDestroy";
        });
    for (auto& t : pool)
        t.join();
    for (int w = 0; w < kWorkers; ++w) {
        INFO("worker " << w);
        CHECK(failures[static_cast<std::size_t>(w)].empty());
    }
    CHECK(shared.threadsUsing().empty());
}

TEST_CASE("The runtime's context, borrowed, runs cuctx kernels on runtime memory", "[gpu][runtime][borrow]")
{
    RT(cudaSetDevice(0));
    RT(cudaFree(nullptr));
    const CUcontext runtimeContext = driverCurrent();
    constexpr unsigned n = 512;
    const std::vector<float> input = iota(n, 2.0f);
    float* in = nullptr;
    float* out = nullptr;
    RT(cudaMalloc(reinterpret_cast<void**>(&in), n * sizeof(float)));
    RT(cudaMalloc(reinterpret_cast<void**>(&out), n * sizeof(float)));
    RT(cudaMemcpy(in, input.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    {
        const cuctx::Context borrowed = cuctx::Context::borrow(runtimeContext);
        CHECK(borrowed.native() == runtimeContext);
        std::thread worker([&] { // a thread the runtime never saw
            cuctx::ContextGuard guard(borrowed);
            scaleOn(borrowed, reinterpret_cast<CUdeviceptr>(out), reinterpret_cast<CUdeviceptr>(in), 0.5f, n);
            borrowed.synchronize();
        });
        worker.join();
    }
    // cuctx forgot the context; the runtime's context and memory are untouched.
    CHECK(driverCurrent() == runtimeContext);
    std::vector<float> result(n);
    RT(cudaMemcpy(result.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < n; ++i)
        REQUIRE(result[i] == input[i] * 0.5f);
    RT(cudaFree(in));
    RT(cudaFree(out));
}

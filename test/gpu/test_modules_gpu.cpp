// SPDX-License-Identifier: MIT
// Modules and launches on the real driver: kernels compute what they should, images for another
// architecture and truncated images fail clearly, fatbins and libraries load.

#include "gpu_helpers.hpp"
#include "module_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/error.hpp"
#include "cuctx/launch.hpp"
#include "cuctx/library.hpp"
#include "cuctx/module.hpp"
#include "driver/driver_state.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using cuctx::Context;
using cuctx::ContextGuard;
using cuctx::Device;
using cuctx::Module;

namespace {

const cuctx::detail::DriverApi& d()
{
    return cuctx::detail::api();
}

// Device memory for a test, in the context current where it is made.
class DeviceFloats {
public:
    explicit DeviceFloats(std::size_t n) : n_(n) { REQUIRE(d().cuMemAlloc(&ptr_, n * sizeof(float)) == CUDA_SUCCESS); }
    ~DeviceFloats() { (void)d().cuMemFree(ptr_); }
    DeviceFloats(const DeviceFloats&) = delete;
    DeviceFloats& operator=(const DeviceFloats&) = delete;
    CUdeviceptr get() const { return ptr_; }
    void upload(const std::vector<float>& v) const
    {
        REQUIRE(d().cuMemcpyHtoD(ptr_, v.data(), n_ * sizeof(float)) == CUDA_SUCCESS);
    }
    std::vector<float> download() const
    {
        std::vector<float> v(n_);
        REQUIRE(d().cuMemcpyDtoH(v.data(), ptr_, n_ * sizeof(float)) == CUDA_SUCCESS);
        return v;
    }
    void poison() const { REQUIRE(d().cuMemsetD32(ptr_, 0x7fc00001u, n_) == CUDA_SUCCESS); } // a NaN

private:
    std::size_t n_;
    CUdeviceptr ptr_ = 0;
};

// Runs scale(out, in, factor, n) from `module` and checks every element.
void checkScale(const Module& module)
{
    ContextGuard guard(module.context());
    constexpr unsigned n = 100'003; // not a multiple of the block: the bounds check matters
    std::mt19937 rng(12345);        // NOLINT(cert-msc51-cpp): a fixed seed, so that a failure reproduces
    std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
    std::vector<float> input(n);
    for (float& x : input)
        x = dist(rng);
    DeviceFloats in(n), out(n);
    in.upload(input);
    out.poison();
    const float factor = 2.5f;
    const unsigned block = 256;
    cuctx::launch(module.function("scale"), {.grid = {(n + block - 1) / block, 1, 1}, .block = {block, 1, 1}},
                  out.get(), in.get(), factor, n);
    module.context().synchronize();
    const std::vector<float> result = out.download();
    std::size_t wrong = 0;
    for (unsigned i = 0; i < n; ++i)
        wrong += result[i] == input[i] * factor ? 0 : 1;
    CHECK(wrong == 0);
}

} // namespace

TEST_CASE("GPU: a PTX kernel from memory and from a file computes the right result", "[gpu][module]")
{
    Context ctx = Context::create(Device::get(0));
    checkScale(Module::fromPtx(ctx, cuctx::test::readText(cuctx::test::testPtxPath()), {}, "kernels"));
    checkScale(Module::fromFile(ctx, cuctx::test::testPtxPath()));
    checkScale(Module::cachedFile(ctx, cuctx::test::testPtxPath()));
    // A ModuleImage's hit: the reference the cache keeps, which counts no owner of the context.
    const cuctx::ModuleImage image = cuctx::ModuleImage::fromFile(cuctx::test::testPtxPath());
    checkScale(Module::cached(ctx, image));
    checkScale(Module::cached(ctx, image));
}

TEST_CASE("GPU: the primary context runs kernels too, and bump counts in a module global", "[gpu][module]")
{
    Context ctx = Context::primary(Device::get(0));
    Module m = Module::fromFile(ctx, cuctx::test::testPtxPath());
    const cuctx::ModuleGlobal counter = m.global("counter");
    ContextGuard guard(ctx);
    REQUIRE(d().cuMemsetD32(counter.address, 0, 1) == CUDA_SUCCESS);
    cuctx::launch(m.function("bump"), {.grid = {10, 1, 1}, .block = {128, 1, 1}});
    ctx.synchronize();
    unsigned value = 0;
    REQUIRE(d().cuMemcpyDtoH(&value, counter.address, sizeof value) == CUDA_SUCCESS);
    CHECK(value == 1280);
}

#ifdef CUCTX_HAVE_TEST_CUBINS
TEST_CASE("GPU: a cubin for this device and a fatbin load and compute", "[gpu][module]")
{
    Context ctx = Context::create(Device::get(0));
    const auto cubin = cuctx::test::testImage("kernels_sm90.cubin");
    const auto fatbin = cuctx::test::testImage("kernels.fatbin");
    REQUIRE(cubin);
    REQUIRE(fatbin);
    Module c = Module::fromFile(ctx, *cubin);
    CHECK(c.kind() == cuctx::ImageKind::cubin);
    checkScale(c);
    const auto fatBytes = cuctx::test::readBytes(*fatbin);
    Module f = Module::fromImage(ctx, fatBytes, {}, "kernels.fatbin");
    CHECK(f.kind() == cuctx::ImageKind::fatbin);
    checkScale(f);
}

TEST_CASE("GPU: a cubin for another architecture, and a truncated one, fail clearly", "[gpu][module]")
{
    Context ctx = Context::create(Device::get(0));
    const long before = Module::loadedCount();
    const auto sm80 = cuctx::test::testImage("kernels_sm80.cubin");
    REQUIRE(sm80);
    try {
        (void)Module::fromFile(ctx, *sm80);
        FAIL("an sm_80 cubin loaded on " << Device::get(0).name());
    } catch (const cuctx::Error& e) {
        CHECK(e.result() == CUDA_ERROR_NO_BINARY_FOR_GPU);
        CHECK(std::string(e.what()).find("kernels_sm80.cubin") != std::string::npos);
        CHECK(std::string(e.what()).find("compute capability") != std::string::npos);
    }
    auto truncated = cuctx::test::readBytes(*cuctx::test::testImage("kernels_sm90.cubin"));
    truncated.resize(truncated.size() - 100);
    try {
        (void)Module::fromImage(ctx, truncated, {}, "cut.cubin");
        FAIL("a truncated cubin loaded");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == cuctx::Errc::invalid_argument);
        CHECK(std::string(e.what()).find("truncated") != std::string::npos);
    }
    CHECK(Module::loadedCount() == before);
}
#endif

TEST_CASE("GPU: a library loads once and gives each context its kernel", "[gpu][module]")
{
    if (d().cuLibraryLoadData == nullptr) {
        WARN("cuLibraryLoadData needs CUDA 12.0: not tested");
        return;
    }
    const cuctx::Library lib = cuctx::Library::fromFile(cuctx::test::testPtxPath());
    std::vector<std::string> names = lib.kernelNames();
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"bump", "empty", "scale"});
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    const cuctx::Function fa = lib.function(a, "scale");
    const cuctx::Function fb = lib.function(b, "scale");
    CHECK(fa.native() != nullptr);
    CHECK(fa.native() != fb.native());
    CHECK(fa.parameters()->size() == 4);
    CHECK_THROWS_WITH(lib.function(a, "nope"), Catch::Contains("scale"));
    for (const Context* c : {&a, &b}) {
        ContextGuard g(*c);
        DeviceFloats in(1024), out(1024);
        std::vector<float> input(1024, 3.0f);
        in.upload(input);
        out.poison();
        cuctx::launch(c == &a ? fa : fb, {.grid = {4, 1, 1}, .block = {256, 1, 1}}, out.get(), in.get(), 2.0f, 1024u);
        c->synchronize();
        const auto result = out.download();
        CHECK(std::count(result.begin(), result.end(), 6.0f) == 1024);
    }
}

TEST_CASE("GPU: cluster and cooperative launches go through cuLaunchKernelEx", "[gpu][launch]")
{
    Context ctx = Context::create(Device::get(0));
    Module m = Module::fromFile(ctx, cuctx::test::testPtxPath());
    ContextGuard g(ctx);
    if (Device::get(0).computeCapability().major >= 9)
        cuctx::launch(m.function("empty"), {.grid = {4, 1, 1}, .block = {32, 1, 1}, .cluster = {2, 1, 1}});
    cuctx::launch(m.function("empty"), {.grid = {2, 1, 1}, .block = {32, 1, 1}, .cooperative = true});
    ctx.synchronize();
    SUCCEED();
}

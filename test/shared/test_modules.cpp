// SPDX-License-Identifier: MIT
// Module, Function, launches and the module cache. Runs in both suites: on the fake driver, which
// reads the PTX's declarations, and on the real driver, which compiles it.

#include "driver_helpers.hpp"
#include "log_helpers.hpp"
#include "module_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/error.hpp"
#include "cuctx/launch.hpp"
#include "cuctx/live_objects.hpp"
#include "cuctx/module.hpp"
#include "cuctx/module_image.hpp"
#include "cuctx/stream.hpp"

#include "module/image_digest.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <filesystem>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using cuctx::Context;
using cuctx::ContextGuard;
using cuctx::Device;
using cuctx::Errc;
using cuctx::Module;
using cuctx::test::raw;
using cuctx::test::rawCurrent;
using cuctx::test::readText;
using cuctx::test::testPtxPath;

namespace {

std::string kernelsPtx()
{
    return readText(testPtxPath());
}

template <typename F>
cuctx::Error errorOf(F&& f)
{
    try {
        f();
    } catch (const cuctx::Error& e) {
        return e;
    }
    FAIL("no cuctx::Error was thrown");
    throw std::logic_error("unreachable");
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("a PTX module loads from memory and from a file, and lists its kernels", "[module]")
{
    Context ctx = Context::create(Device::get(0));
    const long before = Module::loadedCount();
    {
        Module fromMemory = Module::fromPtx(ctx, kernelsPtx(), {}, "kernels");
        CHECK(fromMemory.kind() == cuctx::ImageKind::ptx);
        CHECK(fromMemory.label() == "kernels");
        CHECK(fromMemory.native() != nullptr);
        std::vector<std::string> names = fromMemory.kernelNames();
        std::sort(names.begin(), names.end());
        CHECK(names == std::vector<std::string>{"bump", "empty", "scale"});

        Module fromFile = Module::fromFile(ctx, testPtxPath());
        CHECK(fromFile.label() == testPtxPath().string());
        CHECK(fromFile.native() != fromMemory.native()); // uncached: two loads
        CHECK(Module::loadedCount() == before + 2);
        CHECK(rawCurrent() == nullptr); // loading entered the context and left it
    }
    CHECK(Module::loadedCount() == before);
}

TEST_CASE("a kernel reports its parameters, attributes and occupancy", "[module]")
{
    Context ctx = Context::create(Device::get(0));
    Module m = Module::fromPtx(ctx, kernelsPtx());
    cuctx::Function scale = m.function("scale");
    CHECK(scale.name() == "scale");
    REQUIRE(scale.parameters().has_value());
    const auto& params = *scale.parameters();
    REQUIRE(params.size() == 4);
    CHECK(params[0].bytes == 8);
    CHECK(params[1].bytes == 8);
    CHECK(params[2].bytes == 4);
    CHECK(params[3].bytes == 4);
    CHECK(params[1].offset == 8);
    CHECK(params[3].offset == 20);
    CHECK(m.function("empty").parameters()->empty());

    const cuctx::FunctionAttributes a = scale.attributes();
    CHECK(a.maxThreadsPerBlock >= 128);
    CHECK(a.registers > 0);
    CHECK(a.binaryVersion >= 50);
    CHECK(scale.maxActiveBlocksPerMultiprocessor(256) >= 1);
    const cuctx::BlockSizeSuggestion s = scale.maxPotentialBlockSize();
    CHECK(s.blockSize > 0);
    CHECK(s.blockSize <= a.maxThreadsPerBlock);
    CHECK(s.minGridSize > 0);
    scale.setMaxDynamicSharedMemory(16384);
    CHECK(scale.attributes().maxDynamicSharedBytes == 16384);
    scale.setCachePreference(cuctx::CachePreference::shared);
}

TEST_CASE("a module global has an address and a size", "[module]")
{
    Context ctx = Context::create(Device::get(0));
    Module m = Module::fromPtx(ctx, kernelsPtx());
    const cuctx::ModuleGlobal g = m.global("counter");
    CHECK(g.address != 0);
    CHECK(g.bytes == 4);
    const cuctx::Error e = errorOf([&] { (void)m.global("nothing"); });
    CHECK(e.result() == CUDA_ERROR_NOT_FOUND);
    CHECK(contains(e.what(), "nothing"));
}

TEST_CASE("malformed PTX fails with the JIT's log in the error and leaves nothing loaded", "[module]")
{
    Context ctx = Context::create(Device::get(0));
    const long before = Module::loadedCount();
    const cuctx::Error e = errorOf([&] { (void)Module::fromPtx(ctx, cuctx::test::malformedPtx(), {}, "broken.ptx"); });
    CHECK(e.result() == CUDA_ERROR_INVALID_PTX);
    CHECK(e.call() == "cuModuleLoadDataEx");
    CHECK(contains(e.what(), "bogus"));      // the JIT's own words
    CHECK(contains(e.what(), "broken.ptx")); // the label
    CHECK(contains(e.object(), "device 0"));
    CHECK(Module::loadedCount() == before);
    CHECK(rawCurrent() == nullptr);
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_live_modules() == 0);
#endif
}

TEST_CASE("bad images and names give errors that say what is wrong", "[module]")
{
    Context ctx = Context::create(Device::get(0));
    const long before = Module::loadedCount();
    SECTION("a missing file")
    {
        const cuctx::Error e = errorOf([&] { (void)Module::fromFile(ctx, "/nonexistent/kernels.ptx"); });
        CHECK(e.condition() == Errc::invalid_argument);
        CHECK(contains(e.what(), "/nonexistent/kernels.ptx"));
        CHECK(contains(e.what(), "no such file"));
    }
    SECTION("an empty buffer")
    {
        const cuctx::Error e = errorOf([&] { (void)Module::fromImage(ctx, {}, {}, "empty"); });
        CHECK(e.condition() == Errc::invalid_argument);
        CHECK(contains(e.what(), "empty"));
    }
    SECTION("bytes that are no image")
    {
        const std::string junk = "this is not a kernel";
        const cuctx::Error e = errorOf([&] { (void)Module::fromPtx(ctx, junk, {}, "junk"); });
        CHECK(e.condition() == Errc::invalid_argument);
        CHECK(contains(e.what(), "not PTX"));
    }
    SECTION("a kernel the module does not have: the error lists those it has")
    {
        Module m = Module::fromPtx(ctx, kernelsPtx(), {}, "kernels");
        const cuctx::Error e = errorOf([&] { (void)m.function("scal"); });
        CHECK(e.result() == CUDA_ERROR_NOT_FOUND);
        CHECK(contains(e.what(), "'scal'"));
        CHECK(contains(e.what(), "scale"));
        CHECK(contains(e.what(), "empty"));
        CHECK(contains(e.what(), "extern \"C\""));
    }
    CHECK(Module::loadedCount() == before);
    CHECK(rawCurrent() == nullptr);
}

TEST_CASE("JIT options reach the driver, and the info log is kept on the module", "[module][jit]")
{
    Context ctx = Context::create(Device::get(0));
    cuctx::JitOptions o;
    o.optimizationLevel = 2;
    o.maxRegisters = 64;
    o.lineInfo = true;
    o.verboseLog = true; // the JIT then reports resource use
    Module m = Module::fromPtx(ctx, kernelsPtx(), o);
    CHECK_FALSE(m.infoLog().empty());
    Module again = Module::fromPtx(ctx, kernelsPtx(), o);
    // Fresh option arrays: the second load's log is whole too (the JIT's timings in it may differ).
    CHECK(again.infoLog().size() * 10 > m.infoLog().size() * 9);
    cuctx::JitOptions bad;
    bad.optimizationLevel = 7;
    const cuctx::Error e = errorOf([&] { (void)Module::fromPtx(ctx, kernelsPtx(), bad); });
    CHECK(e.condition() == Errc::invalid_argument);
    CHECK(contains(e.what(), "optimizationLevel"));
}

TEST_CASE("loadAllKernels loads every kernel at load time", "[module]")
{
    Context ctx = Context::create(Device::get(0));
    cuctx::JitOptions eager;
    eager.loadAllKernels = true;
    Module m = Module::fromPtx(ctx, kernelsPtx(), eager);
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_calls("cuFuncLoad") >= 3);
#endif
    CHECK(m.function("scale").native() != nullptr);
}

TEST_CASE("the last handle unloads the module in its context, on whichever thread drops it", "[module]")
{
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    const long before = Module::loadedCount();
    auto* module = new Module(Module::fromPtx(a, kernelsPtx()));
    cuctx::Function f = module->function("scale");
    delete module; // the Function still holds it
    CHECK(Module::loadedCount() == before + 1);
    std::thread other([&] {
        ContextGuard g(b); // another context current there
        f = cuctx::Function();
        CHECK(rawCurrent() == b.native()); // the unload entered a and left it
    });
    other.join();
    CHECK(Module::loadedCount() == before);
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_live_modules() == 0);
#endif
}

TEST_CASE("assigning over a Module that holds its context's last handle unloads it before the context goes", "[module]")
{
    const cuctx::LiveObjects before = cuctx::liveObjects();
    cuctx::test::ErrorLog errors;
    SECTION("an empty Module")
    {
        Module m = Module::fromPtx(Context::create(Device::get(0)), kernelsPtx());
        m = Module();
        CHECK(!m);
    }
    SECTION("a module of another context")
    {
        Module m = Module::fromPtx(Context::create(Device::get(0)), kernelsPtx());
        m = Module::fromPtx(Context::create(Device::get(0)), kernelsPtx());
        CHECK(m.native() != nullptr);
    }
    SECTION("a copy of another module")
    {
        Module m = Module::fromPtx(Context::create(Device::get(0)), kernelsPtx());
        const Module other = Module::fromPtx(Context::create(Device::get(0)), kernelsPtx());
        m = other;
        CHECK(m.native() == other.native());
    }
    SECTION("the same module through a copy")
    {
        Module m = Module::fromPtx(Context::create(Device::get(0)), kernelsPtx());
        const Module& self = m;
        m = self;
        CHECK(m.native() != nullptr);
    }
    CHECK(errors.take().empty());
    CHECK(cuctx::liveObjects() == before);
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_live_modules() == 0);
#endif
}

TEST_CASE("launch checks arguments against the kernel's parameters", "[launch]")
{
    Context ctx = Context::create(Device::get(0));
    Module m = Module::fromPtx(ctx, kernelsPtx(), {}, "kernels");
    cuctx::Function scale = m.function("scale");
    const CUdeviceptr out = 0, in = 0;
    const cuctx::LaunchConfig config{.grid = {1, 1, 1}, .block = {32, 1, 1}};
    SECTION("too few arguments")
    {
        const cuctx::Error e = errorOf([&] { cuctx::launch(scale, config, out, in, 2.0f); });
        CHECK(e.condition() == Errc::invalid_argument);
        CHECK(contains(e.what(), "takes 4 parameters, 3 arguments"));
    }
    SECTION("a double where the kernel takes a float")
    {
        const cuctx::Error e = errorOf([&] { cuctx::launch(scale, config, out, in, 2.0, 1u); });
        CHECK(contains(e.what(), "argument 2 of kernel 'scale' is 8 bytes"));
        CHECK(contains(e.what(), "4 bytes"));
    }
    SECTION("a block larger than the device allows names the shape")
    {
        const cuctx::LaunchConfig huge{.grid = {1, 1, 1}, .block = {4096, 1, 1}};
        const cuctx::Error e = errorOf([&] { cuctx::launch(m.function("empty"), huge); });
        CHECK(e.result() == CUDA_ERROR_INVALID_VALUE);
        CHECK(contains(e.what(), "block (4096, 1, 1)"));
    }
    SECTION("an empty function")
    {
        const cuctx::Error e = errorOf([&] { cuctx::launch(cuctx::Function(), config); });
        CHECK(e.condition() == Errc::invalid_argument);
    }
    CHECK(rawCurrent() == nullptr);
}

TEST_CASE("a launch on an empty Stream's handle is an error, not a launch on the default stream", "[launch]")
{
    Context ctx = Context::create(Device::get(0));
    Module m = Module::fromPtx(ctx, kernelsPtx());
    const cuctx::Function empty = m.function("empty");
    const cuctx::Stream none;
    const cuctx::Error e = errorOf([&] {
        cuctx::launch(empty, cuctx::LaunchConfig{.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = none.native()});
    });
    CHECK(e.condition() == Errc::invalid_argument);
    CHECK(contains(e.what(), "empty"));
    // The default stream is still there for whoever asks for it: by default, or by name.
    CHECK_NOTHROW(cuctx::launch(empty, cuctx::LaunchConfig{.grid = {1, 1, 1}, .block = {1, 1, 1}}));
    CHECK_NOTHROW(cuctx::launch(empty, cuctx::LaunchConfig{.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = nullptr}));
    // A Stream itself: its handle, or the same error when it is empty.
    const cuctx::Stream stream(ctx);
    CHECK_NOTHROW(cuctx::launch(empty, cuctx::LaunchConfig{.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = stream}));
    CHECK(errorOf([&] {
              cuctx::launch(empty, cuctx::LaunchConfig{.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = none});
          }).condition() == Errc::invalid_argument);
    ctx.synchronize();
}

TEST_CASE("a launch enters the kernel's context and leaves the stack as it was", "[launch]")
{
    Context a = Context::create(Device::get(0));
    Context b = Context::create(Device::get(0));
    Module m = Module::fromPtx(a, kernelsPtx());
    cuctx::Function empty = m.function("empty");
    ContextGuard g(b);
    cuctx::launch(empty, cuctx::LaunchConfig{.grid = {1, 1, 1}, .block = {1, 1, 1}});
    CHECK(rawCurrent() == b.native());
    a.synchronize();
}

TEST_CASE("the module cache loads an image once per context and options", "[cache]")
{
    Context ctx = Context::create(Device::get(0));
    const std::string ptx = kernelsPtx();
    const auto bytes = std::as_bytes(std::span(ptx.data(), ptx.size()));
    const long before = Module::loadedCount();
    Module first = Module::cached(ctx, bytes, {}, "kernels");
    // NOLINTNEXTLINE(performance-unnecessary-copy-initialization): another buffer is the point
    const std::string copy = ptx; // another buffer, the same content
    Module second = Module::cached(ctx, std::as_bytes(std::span(copy.data(), copy.size())));
    CHECK(first.native() == second.native());
    cuctx::JitOptions o2;
    o2.optimizationLevel = 1;
    Module other = Module::cached(ctx, bytes, o2);
    CHECK(other.native() != first.native()); // other options, other code
    cuctx::JitOptions bigLog;
    bigLog.logBytes = 1 << 20;
    CHECK(Module::cached(ctx, bytes, bigLog).native() == first.native()); // logs change no code
    Context ctx2 = Context::create(Device::get(0));
    CHECK(Module::cached(ctx2, bytes).native() != first.native()); // per context
    CHECK(Module::cacheSize(ctx) == 2);
    CHECK(Module::loadedCount() == before + 3);

    Module::clearCache(ctx);
    CHECK(Module::cacheSize(ctx) == 0);
    CHECK(Module::loadedCount() == before + 3); // still held by the handles above
    CHECK(Module::cached(ctx, bytes).native() != nullptr);
}

TEST_CASE("a context's destruction unloads what its cache holds", "[cache]")
{
    const long before = Module::loadedCount();
    {
        Context ctx = Context::create(Device::get(0));
        const std::string ptx = kernelsPtx();
        (void)Module::cached(ctx, std::as_bytes(std::span(ptx.data(), ptx.size())));
        CHECK(Module::loadedCount() == before + 1); // the cache keeps it
    }
    CHECK(Module::loadedCount() == before);
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_live_modules() == 0);
#endif
}

TEST_CASE("16 threads racing to load one image load it once", "[cache]")
{
    Context ctx = Context::create(Device::get(0));
    const std::string ptx = kernelsPtx();
    const auto bytes = std::as_bytes(std::span(ptx.data(), ptx.size()));
    const long before = Module::loadedCount();
#ifdef CUCTX_TEST_FAKE_DRIVER
    const long loadsBefore = cuctx_fake_calls("cuModuleLoadDataEx");
#endif
    constexpr int kThreads = 16;
    std::barrier start(kThreads);
    std::vector<CUmodule> seen(kThreads);
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            start.arrive_and_wait();
            seen[static_cast<std::size_t>(t)] = Module::cached(ctx, bytes, {}, "raced").native();
        });
    for (auto& th : threads)
        th.join();
    CHECK(std::set<CUmodule>(seen.begin(), seen.end()).size() == 1);
    CHECK(seen[0] != nullptr);
    CHECK(Module::loadedCount() == before + 1);
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_calls("cuModuleLoadDataEx") == loadsBefore + 1);
#endif
}

TEST_CASE("a failed cached load is not cached: the next request tries again", "[cache]")
{
    Context ctx = Context::create(Device::get(0));
    const std::string bad = cuctx::test::malformedPtx();
    const auto bytes = std::as_bytes(std::span(bad.data(), bad.size()));
    CHECK_THROWS_AS(Module::cached(ctx, bytes), cuctx::Error);
    CHECK_THROWS_AS(Module::cached(ctx, bytes), cuctx::Error);
    CHECK(Module::cacheSize(ctx) == 0);
}

namespace {

// The kernel a PTX text declares first (`.entry NAME(`).
std::string firstEntry(const std::string& ptx)
{
    const std::size_t at = ptx.find(".entry ") + 7;
    return ptx.substr(at, ptx.find('(', at) - at);
}

} // namespace

TEST_CASE("the module cache never returns a module of other bytes, whatever their digest", "[cache]")
{
    // Two 149-byte PTX images built to have the same 128-bit digest (test/data/collision-*.ptx).
    const std::string x = readText(testPtxPath().parent_path() / "collision-x.ptx");
    const std::string y = readText(testPtxPath().parent_path() / "collision-y.ptx");
    REQUIRE(x.size() == 149);
    REQUIRE(x != y);
    const auto bytesOf = [](const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); };
    REQUIRE(cuctx::detail::digestImage(bytesOf(x)) == cuctx::detail::digestImage(bytesOf(y)));
    Context ctx = Context::create(Device::get(0));
#ifndef CUCTX_TEST_FAKE_DRIVER
    // The real JIT refuses both images (bytes outside ASCII in a comment): each request still reaches
    // the driver with its own bytes and fails under its own label, and neither is cached.
    for (const auto& [text, label] : {std::pair{&x, "x"}, std::pair{&y, "y"}}) {
        try {
            (void)Module::cached(ctx, bytesOf(*text), {}, label);
            FAIL("the JIT accepted a collision image");
        } catch (const cuctx::Error& e) {
            CHECK(std::string(e.what()).find(std::string(" on ") + label + " ") != std::string::npos);
        }
    }
    CHECK(Module::cacheSize(ctx) == 0);
    return;
#endif
    const Module mx = Module::cached(ctx, bytesOf(x), {}, "x");
    const Module my = Module::cached(ctx, bytesOf(y), {}, "y");
    CHECK(mx.native() != my.native());
    CHECK(my.label() == "y");
    CHECK(my.kernelNames() == std::vector<std::string>{firstEntry(y)});
    CHECK(mx.kernelNames() == std::vector<std::string>{firstEntry(x)});
    CHECK(Module::cacheSize(ctx) == 2);
    // Both stay cached: each request finds its own.
    CHECK(Module::cached(ctx, bytesOf(std::string(y))).native() == my.native());
    CHECK(Module::cached(ctx, bytesOf(std::string(x))).native() == mx.native());
    CHECK(Module::cacheSize(ctx) == 2);
}

TEST_CASE("the same PTX with and without its terminating NUL is one cache entry", "[cache]")
{
    Context ctx = Context::create(Device::get(0));
    const std::string ptx = kernelsPtx();
    const auto withoutNul = std::as_bytes(std::span(ptx.data(), ptx.size()));
    const auto withNul = std::as_bytes(std::span(ptx.c_str(), ptx.size() + 1));
    const Module a = Module::cached(ctx, withoutNul);
    const Module b = Module::cached(ctx, withNul);
    CHECK(a.native() == b.native());
    CHECK(Module::cacheSize(ctx) == 1);
    CHECK(Module::cached(ctx, withoutNul).native() == a.native());
}

// ModuleImage: an image made once, whose hits the cache answers by identity.

TEST_CASE("a ModuleImage's hits return the same module, by reference, with no driver call", "[cache]")
{
    Context ctx = Context::create(Device::get(0));
    const cuctx::ModuleImage image = cuctx::ModuleImage::fromPtx(kernelsPtx(), {}, "kernels");
    REQUIRE(image.id() != 0);
    CHECK(image.kind() == cuctx::ImageKind::ptx);
    CHECK(image.label() == "kernels");
    const long before = Module::loadedCount();
#ifdef CUCTX_TEST_FAKE_DRIVER
    const long loadsBefore = cuctx_fake_calls("cuModuleLoadDataEx");
#endif
    const Module& first = Module::cached(ctx, image);
    REQUIRE(first.native() != nullptr);
    CHECK(first.label() == "kernels");
    CHECK(first.context() == ctx);
    // NOLINTNEXTLINE(performance-unnecessary-copy-initialization): the copy is what is tested
    const cuctx::ModuleImage copy = image; // copies share the identity
    CHECK(copy.id() == image.id());
    for (int i = 0; i < 3; ++i) {
        CHECK(&Module::cached(ctx, image) == &first);
        CHECK(&Module::cached(ctx, copy) == &first);
    }
    CHECK(Module::loadedCount() == before + 1);
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_calls("cuModuleLoadDataEx") == loadsBefore + 1);
#endif
    CHECK(first.function("empty").native() != nullptr);
    Context ctx2 = Context::create(Device::get(0));
    CHECK(Module::cached(ctx2, image).native() != first.native()); // per context
    CHECK(Module::cacheSize(ctx) == 1);
}

TEST_CASE("ModuleImages of equal bytes and options share one module; other options do not", "[cache]")
{
    Context ctx = Context::create(Device::get(0));
    const std::string ptx = kernelsPtx();
    const cuctx::ModuleImage a = cuctx::ModuleImage::fromPtx(ptx, {}, "a");
    // The same text with its NUL, and bytes after it that the driver never reads.
    const std::string withNul = ptx + std::string(1, '\0') + "ignored";
    const cuctx::ModuleImage b = cuctx::ModuleImage::fromPtx(withNul, {}, "b");
    CHECK(a.id() != b.id());
    CHECK(b.bytes().size() == ptx.size());
    const long before = Module::loadedCount();
    const Module& ma = Module::cached(ctx, a);
    const Module& mb = Module::cached(ctx, b);
    CHECK(mb.native() == ma.native());
    // A span request of the same bytes finds the same module, and the other way round.
    CHECK(Module::cached(ctx, std::as_bytes(std::span(ptx.data(), ptx.size()))).native() == ma.native());
    cuctx::JitOptions logsOnly;
    logsOnly.logBytes = 1 << 20;
    logsOnly.verboseLog = true;
    CHECK(Module::cached(ctx, cuctx::ModuleImage::fromPtx(ptx, logsOnly)).native() == ma.native());
    cuctx::JitOptions o1;
    o1.optimizationLevel = 1;
    const cuctx::ModuleImage c = cuctx::ModuleImage::fromPtx(ptx, o1);
    CHECK(c.options().optimizationLevel == 1);
    CHECK(Module::cached(ctx, c).native() != ma.native()); // other options, other code
    CHECK(Module::loadedCount() == before + 2);
    CHECK(Module::cacheSize(ctx) == 2);
    const std::string other = ptx + "\n// another image\n";
    CHECK(Module::cached(ctx, cuctx::ModuleImage::fromPtx(other)).native() != ma.native());
}

TEST_CASE("a ModuleImage never gets the module of other bytes, whatever their digest", "[cache]")
{
    const std::string x = readText(testPtxPath().parent_path() / "collision-x.ptx");
    const std::string y = readText(testPtxPath().parent_path() / "collision-y.ptx");
    const cuctx::ModuleImage ix = cuctx::ModuleImage::fromPtx(x, {}, "x");
    const cuctx::ModuleImage iy = cuctx::ModuleImage::fromPtx(y, {}, "y");
    REQUIRE(cuctx::detail::digestImage(ix.bytes()) == cuctx::detail::digestImage(iy.bytes()));
    REQUIRE(x != y);
    Context ctx = Context::create(Device::get(0));
#ifndef CUCTX_TEST_FAKE_DRIVER
    // The real JIT refuses both (bytes outside ASCII in a comment): each request reaches the driver
    // with its own bytes and fails under its own label.
    for (const auto* image : {&ix, &iy}) {
        const cuctx::Error e = errorOf([&] { (void)Module::cached(ctx, *image); });
        CHECK(contains(e.what(), " on " + image->label() + " "));
    }
    CHECK(Module::cacheSize(ctx) == 0);
    return;
#endif
    // y's bytes cached first by a span request, then x as an image, then y as an image.
    const Module my = Module::cached(ctx, std::as_bytes(std::span(y.data(), y.size())), {}, "y");
    const Module& mx = Module::cached(ctx, ix);
    CHECK(mx.native() != my.native());
    CHECK(mx.kernelNames() == std::vector<std::string>{firstEntry(x)});
    CHECK(Module::cached(ctx, iy).native() == my.native());
    CHECK(Module::cached(ctx, iy).kernelNames() == std::vector<std::string>{firstEntry(y)});
    CHECK(&Module::cached(ctx, ix) == &mx);
    CHECK(Module::cacheSize(ctx) == 2);
}

TEST_CASE("clearCache: later requests load anew; references handed out stay valid", "[cache]")
{
    const cuctx::ModuleImage image = cuctx::ModuleImage::fromPtx(kernelsPtx(), {}, "kernels");
    const long before = Module::loadedCount();
    {
        Context ctx = Context::create(Device::get(0));
        const Module& old = Module::cached(ctx, image);
        const CUmodule oldNative = old.native();
        Module::clearCache(ctx);
        CHECK(Module::cacheSize(ctx) == 0);
        const Module& fresh = Module::cached(ctx, image);
        CHECK(&fresh != &old);
        CHECK(fresh.native() != oldNative);
        CHECK(&Module::cached(ctx, image) == &fresh);
        // The old reference still works, and its module is still loaded.
        CHECK(old.native() == oldNative);
        CHECK(old.function("empty").native() != nullptr);
        CHECK(Module::loadedCount() == before + 2);
    }
    CHECK(Module::loadedCount() == before); // both go with the context
}

TEST_CASE("the module cache does not keep its context alive; a copy of its module does", "[cache]")
{
    const cuctx::ModuleImage image = cuctx::ModuleImage::fromPtx(kernelsPtx());
    const cuctx::LiveObjects before = cuctx::liveObjects();
    {
        Context ctx = Context::create(Device::get(0));
        const Module& m = Module::cached(ctx, image);
        CHECK(m.native() != nullptr);
        const std::string ptx = kernelsPtx();
        (void)Module::cached(ctx, std::as_bytes(std::span(ptx.data(), ptx.size())));
        CHECK(cuctx::liveObjects().contexts == before.contexts + 1);
    }
    CHECK(cuctx::liveObjects() == before);

    Module copy;
    {
        Context ctx = Context::create(Device::get(0));
        copy = Module::cached(ctx, image);
    }
    CHECK(cuctx::liveObjects().contexts == before.contexts + 1); // the copy holds it
    CHECK(copy.function("empty").native() != nullptr);
    Module second = copy;
    copy = Module();
    CHECK(cuctx::liveObjects().contexts == before.contexts + 1);
    second = Module();
    CHECK(cuctx::liveObjects() == before);
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_live_modules() == 0);
#endif
}

TEST_CASE("a copy of a cached module taken after the last handle went keeps the context alive", "[cache]")
{
    // The context is entered but has no handle left (destruction deferred to the end of that use):
    // the cache's reference is still valid, and a copy of it is an ordinary handle, which must keep
    // the context alive past the use instead of leaving a handle to a destroyed one.
    const cuctx::ModuleImage image = cuctx::ModuleImage::fromPtx(kernelsPtx());
    const cuctx::LiveObjects before = cuctx::liveObjects();
    std::optional<Module> copy;
    {
        Context ctx = Context::create(Device::get(0));
        const Module& cached = Module::cached(ctx, image);
        cuctx::ContextGuard g(ctx);
        ctx = Context();
        copy.emplace(cached);
    }
    CHECK(cuctx::liveObjects().contexts == before.contexts + 1); // the copy holds it
    {
        cuctx::ContextGuard g(copy->context());
        CHECK(copy->function("scale").native() != nullptr);
    }
    copy.reset();
    CHECK(cuctx::liveObjects() == before);
}

TEST_CASE("a ModuleImage of hostile input is a clear error", "[cache]")
{
    const auto invalid = [](auto&& f) {
        const cuctx::Error e = errorOf(f);
        CHECK(e.code() == Errc::invalid_argument);
        return std::string(e.what());
    };
    CHECK(contains(invalid([] { (void)cuctx::ModuleImage::fromBytes({}); }), "empty"));
    CHECK(contains(invalid([] { (void)cuctx::ModuleImage::fromPtx("hello", {}, "greeting"); }), "greeting"));
    const auto dir = std::filesystem::temp_directory_path();
    CHECK(contains(invalid([&] { (void)cuctx::ModuleImage::fromFile(dir); }), "directory"));
    CHECK(contains(invalid([] { (void)cuctx::ModuleImage::fromFile("/no/such/kernels.ptx"); }), "no such file"));
    // A cubin whose headers point past its end.
    const std::byte elf[] = {std::byte{0x7f}, std::byte{'E'}, std::byte{'L'}, std::byte{'F'}, std::byte{2}};
    (void)invalid([&] { (void)cuctx::ModuleImage::fromBytes(elf); });

    const cuctx::ModuleImage empty;
    CHECK(!empty);
    CHECK(empty.id() == 0);
    CHECK(contains(invalid([&] { (void)empty.label(); }), "empty"));
    Context ctx = Context::create(Device::get(0));
    CHECK(contains(invalid([&] { (void)Module::cached(ctx, empty); }), "ModuleImage is empty"));
    const cuctx::ModuleImage image = cuctx::ModuleImage::fromPtx(kernelsPtx());
    CHECK(contains(invalid([&] { (void)Module::cached(Context(), image); }), "empty"));
    // A file image: read and checked once, labelled with its name.
    const cuctx::ModuleImage file = cuctx::ModuleImage::fromFile(testPtxPath());
    CHECK(file.label() == testPtxPath().string());
    CHECK(Module::cached(ctx, file).native() == Module::cached(ctx, image).native());
}

TEST_CASE("a ModuleImage that fails to load is not cached: each request tries again", "[cache]")
{
    Context ctx = Context::create(Device::get(0));
    const cuctx::ModuleImage bad = cuctx::ModuleImage::fromPtx(cuctx::test::malformedPtx(), {}, "broken");
#ifdef CUCTX_TEST_FAKE_DRIVER
    const long loadsBefore = cuctx_fake_calls("cuModuleLoadDataEx");
#endif
    for (int i = 0; i < 2; ++i) {
        const cuctx::Error e = errorOf([&] { (void)Module::cached(ctx, bad); });
        CHECK(contains(e.what(), "bogus"));
    }
    CHECK(Module::cacheSize(ctx) == 0);
#ifdef CUCTX_TEST_FAKE_DRIVER
    CHECK(cuctx_fake_calls("cuModuleLoadDataEx") == loadsBefore + 2);
#endif
}

TEST_CASE("ModuleImage hits race with first loads, clearCache and context destruction", "[cache][threads]")
{
    // Three images of other bytes; two contexts per round, each used by half the threads. The main
    // thread drops its handles once the threads run, so whichever thread drops a context's last
    // handle destroys it while the other context's threads still hit their cache.
    const std::string ptx = kernelsPtx();
    const std::vector<cuctx::ModuleImage> images = {
        cuctx::ModuleImage::fromPtx(ptx, {}, "i0"),
        cuctx::ModuleImage::fromPtx(ptx + "\n// 1\n", {}, "i1"),
        cuctx::ModuleImage::fromPtx(ptx + "\n// 2\n", {}, "i2"),
    };
    const cuctx::LiveObjects before = cuctx::liveObjects();
    constexpr int kThreads = 8;
    constexpr int kRequests = 300;
    std::atomic<int> wrong{0};
    std::atomic<int> errors{0};
    for (int round = 0; round < 3; ++round) {
        std::vector<Context> contexts = {Context::create(Device::get(0)), Context::create(Device::get(0))};
        std::barrier start(kThreads + 1);
        std::vector<std::thread> threads;
        threads.reserve(kThreads);
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t, ctx = contexts[static_cast<std::size_t>(t % 2)]]() mutable {
                start.arrive_and_wait();
                try {
                    for (int i = 0; i < kRequests; ++i) {
                        const cuctx::ModuleImage& image = images[static_cast<std::size_t>((i + t) % 3)];
                        const Module& m = Module::cached(ctx, image);
                        if (m.native() == nullptr || m.label() != image.label() || !(m.context() == ctx))
                            ++wrong;
                        if (t < 2 && i % 50 == 49)
                            Module::clearCache(ctx);
                    }
                } catch (const cuctx::Error&) {
                    ++errors;
                }
                ctx.reset(); // maybe the last handle: destroys the context here
            });
        start.arrive_and_wait();
        contexts.clear();
        for (auto& th : threads)
            th.join();
    }
    CHECK(wrong == 0);
    CHECK(errors == 0);
    CHECK(cuctx::liveObjects() == before);
}

// SPDX-License-Identifier: MIT
// The worker program's side (cuctx-gpu-worker): one context on one device, requests in order, a
// journal of its last launches, and an exit right after a sticky error (the device is unusable in
// this process; its owner starts a fresh one).

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/device.hpp"
#include "cuctx/device_buffer.hpp"
#include "cuctx/driver.hpp"
#include "cuctx/error.hpp"
#include "cuctx/gpu_worker.hpp"
#include "cuctx/launch.hpp"
#include "cuctx/module.hpp"
#include "worker/worker_channel.hpp"

#include <unistd.h>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <string_view>

namespace cuctx {

namespace wk = detail::worker;

namespace {

std::optional<int> number(const char* text)
{
    int value = 0;
    const std::string_view t(text);
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
    if (ec != std::errc{} || end != t.data() + t.size() || value < 0)
        return std::nullopt;
    return value;
}

void execute(const Context& context, const wk::Run& run, wk::Reply& reply)
{
    const Module module = run.imageIsPath
                              ? Module::cachedFile(context, std::string(reinterpret_cast<const char*>(run.image.data()),
                                                                        run.image.size()))
                              : Module::cached(context, run.image, {}, "request image");
    const Function function = module.function(run.kernel);
    std::vector<DeviceBuffer> buffers;
    buffers.reserve(run.buffers.size());
    for (const wk::Buffer& b : run.buffers) {
        DeviceBuffer& d = buffers.emplace_back(context, static_cast<std::size_t>(b.bytes));
        if (b.flags & wk::copyIn) {
            d.upload(b.contents.data(), b.contents.size());
        } else {
            const std::vector<std::byte> zeros(static_cast<std::size_t>(b.bytes));
            d.upload(zeros.data(), zeros.size());
        }
    }
    std::vector<CUdeviceptr> addresses(run.arguments.size());
    std::vector<void*> packed(run.arguments.size());
    std::vector<std::size_t> sizes(run.arguments.size());
    for (std::size_t i = 0; i < run.arguments.size(); ++i) {
        const wk::Argument& a = run.arguments[i];
        if (a.isBuffer) {
            addresses[i] = buffers[a.buffer].address();
            packed[i] = &addresses[i];
            sizes[i] = sizeof(CUdeviceptr);
        } else {
            packed[i] = const_cast<std::byte*>(a.scalar.data());
            sizes[i] = a.scalar.size();
        }
    }
    LaunchConfig config;
    config.grid = Dim3{run.grid[0], run.grid[1], run.grid[2]};
    config.block = Dim3{run.block[0], run.block[1], run.block[2]};
    config.sharedBytes = run.sharedBytes;
    detail::launchPacked(function, config, packed.empty() ? nullptr : packed.data(), sizes.data(), packed.size());
    context.synchronize(); // a fault of this kernel surfaces here, in this request
    reply.buffers.resize(run.buffers.size());
    for (std::size_t i = 0; i < run.buffers.size(); ++i) {
        if (run.buffers[i].flags & wk::copyBack) {
            reply.buffers[i].resize(static_cast<std::size_t>(run.buffers[i].bytes));
            buffers[i].download(reply.buffers[i].data(), reply.buffers[i].size());
        }
    }
}

bool send(int fd, const std::vector<std::byte>& message)
{
    return wk::sendAll(fd, message, wk::Clock::time_point::max()) == wk::IoStatus::ok;
}

} // namespace

int gpuWorkerMain(int argc, char** argv)
{
    int fd = 3;
    int device = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        const std::optional<int> value = i + 1 < argc ? number(argv[i + 1]) : std::nullopt;
        if ((a == "--fd" || a == "--device") && value) {
            (a == "--fd" ? fd : device) = *value;
            ++i;
        } else {
            std::fprintf(stderr,
                         "cuctx-gpu-worker: unexpected argument '%s'\n"
                         "usage: cuctx-gpu-worker [--fd N] [--device D]\n"
                         "It is started by cuctx::GpuWorker, which talks to it over descriptor N (default 3).\n",
                         argv[i]);
            return 2;
        }
    }
    ::signal(SIGPIPE, SIG_IGN);

    wk::Hello hello;
    hello.pid = static_cast<std::uint32_t>(::getpid());
    hello.device = device;
    std::optional<Context> context;
    try {
        hello.driverVersion = Driver::version();
        context = Context::create(Device::get(device));
    } catch (const Error& e) {
        hello.status = e.result() != 0 ? e.result() : -1;
        hello.message = e.what();
    } catch (const std::exception& e) {
        hello.status = -1;
        hello.message = e.what();
    }
    if (!send(fd, wk::encode(hello)) || hello.status != 0)
        return 1;
    ContextGuard guard(*context);

    std::deque<wk::Launch> journal;
    wk::Header header;
    std::vector<std::byte> payload;
    for (;;) {
        const wk::IoStatus status = wk::receive(fd, header, payload, wk::Clock::time_point::max());
        if (status == wk::IoStatus::closed)
            return 0; // the supervisor is done with this worker
        if (status != wk::IoStatus::ok || header.type != wk::Type::run)
            return 2;
        std::optional<wk::Run> run = wk::decodeRun(payload);
        if (!run)
            return 2; // the supervisor encodes with the same code: a bad request means a bad peer
        wk::Reply reply;
        reply.id = run->id;
        try {
            execute(*context, *run, reply);
        } catch (const Error& e) {
            reply.result = e.result() != 0 ? e.result() : -1;
            reply.call = e.call();
            reply.message = e.what();
        } catch (const std::exception& e) {
            reply.result = -1;
            reply.message = e.what();
        }
        journal.push_back(wk::Launch{run->id, run->kernel, run->grid, run->block, reply.result});
        if (journal.size() > wk::kJournalSize)
            journal.pop_front();
        reply.sticky = isStickyResult(reply.result);
        if (reply.result != 0) {
            reply.buffers.clear();
            reply.journal.assign(journal.begin(), journal.end());
        }
        if (!send(fd, wk::encode(reply)))
            return 1;
        if (reply.sticky) {
            // The device is unusable in this process (driver-facts.md): leave without running
            // destructors that would only fail with the same error.
            std::fflush(nullptr);
            std::_Exit(3);
        }
    }
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
// cuctx::GpuWorker: the supervisor side. One request at a time over a socketpair; every wait has a
// deadline; a worker that faults, dies or misses a deadline is reaped and replaced at once.

#include "cuctx/gpu_worker.hpp"

#include "check/check.hpp"
#include "check/sticky.hpp"
#include "cuctx/driver.hpp"
#include "cuctx/error.hpp"
#include "cuctx/worker_process.hpp"
#include "worker/worker_channel.hpp"

#include <dlfcn.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <sstream>

#ifndef CUCTX_GPU_WORKER_INSTALLED
#define CUCTX_GPU_WORKER_INSTALLED "cuctx-gpu-worker"
#endif

namespace cuctx {

namespace wk = detail::worker;

bool isStickyResult(int result) noexcept
{
    return detail::isStickyResult(result); // one list for the process and its workers: check/sticky.cpp
}

WorkRequest WorkRequest::fromImage(std::string_view image, std::string kernel)
{
    WorkRequest r;
    const auto* p = reinterpret_cast<const std::byte*>(image.data());
    r.image.assign(p, p + image.size());
    r.kernel = std::move(kernel);
    return r;
}

WorkRequest WorkRequest::fromFile(const std::string& path, std::string kernel)
{
    WorkRequest r = fromImage(path, std::move(kernel));
    r.imageIsPath = true;
    return r;
}

std::uint32_t WorkRequest::addBuffer(std::span<const std::byte> contents, bool copyBack)
{
    buffers.push_back(Buffer{contents.size(), {contents.begin(), contents.end()}, copyBack});
    return static_cast<std::uint32_t>(buffers.size() - 1);
}

std::uint32_t WorkRequest::addZeroBuffer(std::size_t bytes, bool copyBack)
{
    buffers.push_back(Buffer{bytes, {}, copyBack});
    return static_cast<std::uint32_t>(buffers.size() - 1);
}

void WorkRequest::argBuffer(std::uint32_t index)
{
    arguments.push_back(Argument{true, {}, index});
}

void WorkRequest::argBytes(std::vector<std::byte> bytes)
{
    arguments.push_back(Argument{false, std::move(bytes), 0});
}

namespace {

std::string dims(const Dim3& d)
{
    return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

Dim3 toDim3(const std::array<std::uint32_t, 3>& d)
{
    return Dim3{d[0], d[1], d[2]};
}

std::array<std::uint32_t, 3> fromDim3(const Dim3& d)
{
    return {d.x, d.y, d.z};
}

std::string resultText(int result)
{
    if (result == 0)
        return "ok";
    if (result < 0)
        return "failed";
    return std::string(resultName(result)) + " (" + std::to_string(result) + ")";
}

std::string describe(const WorkerFault& f)
{
    std::ostringstream s;
    s << "request " << f.request << " (kernel '" << f.kernel << "') in GPU worker pid " << f.pid << ' ';
    switch (f.kind) {
    case WorkerFaultKind::sticky_error:
        s << "ended in " << resultText(f.result) << (f.call.empty() ? "" : " at " + f.call)
          << ", which leaves the worker's device unusable in that process";
        break;
    case WorkerFaultKind::died: s << "ended without an answer: the worker exited"; break;
    case WorkerFaultKind::deadline: s << "missed its deadline: the worker was killed"; break;
    case WorkerFaultKind::protocol: s << "got an answer that is not a valid message: the worker was killed"; break;
    }
    if (f.exitStatus >= 128)
        s << " (signal " << (f.exitStatus - 128) << ')';
    else if (f.exitStatus >= 0)
        s << " (exit status " << f.exitStatus << ')';
    s << ". Its last launches, oldest first:";
    if (f.lastLaunches.empty())
        s << " none";
    for (const WorkerLaunch& l : f.lastLaunches)
        s << " [request " << l.request << " '" << l.kernel << "' grid " << dims(l.grid) << " block " << dims(l.block)
          << ": "
          << (l.request == f.request && f.kind != WorkerFaultKind::sticky_error ? "no answer" : resultText(l.result))
          << ']';
    s << '.';
    if (!f.message.empty()) {
        const std::string first = f.message.substr(0, f.message.find('\n'));
        s << " The worker said: " << first;
    }
    if (f.replacement > 0)
        s << " A fresh worker (pid " << f.replacement << ") was started in its place.";
    else
        s << " No fresh worker could be started; the next request tries again.";
    return s.str();
}

// Waits up to `grace` for `child` to exit, then kills it; reaps it either way. Its exit status (see
// WorkerProcess::wait).
int reap(WorkerProcess& child, std::chrono::milliseconds grace)
{
    if (child.pid() <= 0)
        return -1;
#ifdef SYS_pidfd_open
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child.pid(), 0));
    if (pidfd >= 0) {
        pollfd p{pidfd, POLLIN, 0};
        int n;
        do
            n = ::poll(&p, 1, static_cast<int>(grace.count()));
        while (n < 0 && errno == EINTR);
        ::close(pidfd);
        if (n <= 0)
            child.kill(SIGKILL);
        return child.wait();
    }
#endif
    (void)grace;
    child.kill(SIGKILL);
    return child.wait();
}

} // namespace

std::string GpuWorker::defaultProgram()
{
    if (const char* env = std::getenv("CUCTX_GPU_WORKER"); env != nullptr && env[0] != '\0')
        return env;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&isStickyResult), &info) != 0 && info.dli_fname != nullptr) {
        std::error_code ec;
        const std::filesystem::path lib = std::filesystem::canonical(info.dli_fname, ec);
        if (!ec) {
            const std::filesystem::path dir = lib.parent_path();
            for (const auto& candidate :
                 {dir / "cuctx-gpu-worker", dir.parent_path() / "libexec" / "cuctx" / "cuctx-gpu-worker"})
                if (::access(candidate.c_str(), X_OK) == 0)
                    return candidate.string();
        }
    }
    return CUCTX_GPU_WORKER_INSTALLED;
}

struct GpuWorker::State {
    GpuWorkerOptions options;
    std::string program;
    mutable std::mutex mutex;
    WorkerProcess process;
    int fd = -1;
    bool ready = false;
    unsigned restarts = 0;
    std::optional<WorkerFault> lastFault;
    std::uint64_t nextRequest = 1;
    std::deque<WorkerLaunch> sent; // what this worker was asked to run, newest last

    void start()
    {
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
            detail::throwError(Errc::invalid_state, "cuctx::GpuWorker",
                               std::string("socketpair: ") + std::strerror(errno));
        std::map<std::string, std::string> env = options.environment;
        env.try_emplace("CUCTX_DRIVER_PATH", Driver::libraryPath()); // the worker loads the driver this process does
        try {
            process =
                WorkerProcess::spawn({program, "--fd", "3", "--device", std::to_string(options.device)}, env, {fds[1]});
        } catch (...) {
            ::close(fds[0]);
            ::close(fds[1]);
            throw;
        }
        ::close(fds[1]);
        fd = fds[0];
        ready = false;
        sent.clear();
    }

    void stop(std::chrono::milliseconds grace) noexcept
    {
        if (fd >= 0) {
            ::close(fd); // the worker reads end-of-file and exits
            fd = -1;
        }
        reap(process, grace);
        ready = false;
    }

    [[noreturn]] void startFailed(const std::string& why, int result = 0)
    {
        const pid_t pid = process.pid();
        stop(std::chrono::milliseconds(0));
        ErrorInfo info;
        info.condition = result > 0 ? Errc::driver_error : Errc::invalid_state;
        info.result = result > 0 ? result : 0;
        info.call = "cuctx::GpuWorker::run";
        info.object = "GPU worker '" + program + "' pid " + std::to_string(pid) + " (device " +
                      std::to_string(options.device) + ")";
        info.detail = "the worker did not start: " + why;
        info.hint = "check that the program is cuctx-gpu-worker of this cuctx version (GpuWorkerOptions::program or "
                    "$CUCTX_GPU_WORKER) and that the device is usable; the next request starts another worker";
        throw Error(std::move(info));
    }

    void ensureReady()
    {
        if (fd < 0)
            start();
        if (ready)
            return;
        wk::Header header;
        std::vector<std::byte> payload;
        const auto deadline = wk::Clock::now() + options.startDeadline;
        switch (wk::receive(fd, header, payload, deadline)) {
        case wk::IoStatus::ok: break;
        case wk::IoStatus::timeout: startFailed("no answer within the start deadline");
        case wk::IoStatus::closed: startFailed("it exited before it was ready");
        case wk::IoStatus::malformed: startFailed("it sent something that is not cuctx's worker protocol");
        case wk::IoStatus::failed: startFailed(std::string("reading its socket: ") + std::strerror(errno));
        }
        const auto hello = header.type == wk::Type::hello ? wk::decodeHello(payload) : std::nullopt;
        if (!hello)
            startFailed("its first message is not a valid hello");
        if (hello->status != 0)
            startFailed(hello->message, hello->status);
        ready = true;
    }

    [[noreturn]] void fault(WorkerFault f)
    {
        f.pid = process.pid();
        if (fd >= 0) {
            ::close(fd);
            fd = -1;
        }
        // A worker that reported a sticky error exits by itself; any other is hung, confused or gone
        // already (a zombie ignores the signal).
        f.exitStatus = reap(process, std::chrono::milliseconds(f.kind == WorkerFaultKind::sticky_error ? 10000 : 0));
        if (f.lastLaunches.empty())
            f.lastLaunches.assign(sent.begin(), sent.end());
        try {
            start();
            f.replacement = process.pid();
        } catch (const Error&) {
            f.replacement = -1;
        }
        ++restarts;
        lastFault = f;
        ErrorInfo info;
        info.condition = Errc::worker_fault;
        // No result(): the CUresult came from the worker's driver, not this process's, and code()
        // must not say device_poisoned here. It is in the message and lastFault().result.
        info.call = "cuctx::GpuWorker::run";
        info.object = "GPU worker pid " + std::to_string(f.pid) + " (device " + std::to_string(options.device) + ")";
        info.detail = describe(f);
        info.hint = "this process and its own contexts are unaffected; the request's kernel is the suspect (run the "
                    "worker program under compute-sanitizer to find the bad access), and the next request runs on the "
                    "fresh worker";
        throw Error(std::move(info));
    }
};

GpuWorker::GpuWorker(GpuWorkerOptions options) : state_(std::make_unique<State>())
{
    state_->program = options.program.empty() ? defaultProgram() : options.program;
    state_->options = std::move(options);
    state_->start();
}

GpuWorker::~GpuWorker()
{
    std::lock_guard lock(state_->mutex);
    state_->stop(std::chrono::milliseconds(10000));
}

WorkResult GpuWorker::run(const WorkRequest& request)
{
    State& s = *state_;
    std::lock_guard lock(s.mutex);
    s.ensureReady();
    wk::Run message;
    message.id = s.nextRequest++;
    message.imageIsPath = request.imageIsPath;
    message.image = request.image;
    message.kernel = request.kernel;
    message.grid = fromDim3(request.grid);
    message.block = fromDim3(request.block);
    message.sharedBytes = request.sharedBytes;
    for (const WorkRequest::Buffer& b : request.buffers) {
        if (!b.contents.empty() && b.contents.size() != b.bytes)
            detail::throwError(Errc::invalid_argument, "cuctx::GpuWorker::run",
                               "a buffer of " + std::to_string(b.bytes) + " bytes given " +
                                   std::to_string(b.contents.size()) + " bytes of contents");
        message.buffers.push_back(wk::Buffer{
            b.bytes, static_cast<std::uint8_t>((b.contents.empty() ? 0 : wk::copyIn) | (b.copyBack ? wk::copyBack : 0)),
            b.contents});
    }
    for (const WorkRequest::Argument& a : request.arguments)
        message.arguments.push_back(wk::Argument{a.isBuffer, a.scalar, a.buffer});
    const std::vector<std::byte> bytes = wk::encode(message);
    // What the worker would refuse, refused here with a reason (the worker's decoder is the same).
    if (!wk::decodeRun(std::span(bytes).subspan(wk::kHeaderBytes)))
        detail::throwError(Errc::invalid_argument, "cuctx::GpuWorker::run",
                           "request for kernel '" + request.kernel +
                               "' is malformed: it needs an image, a kernel name, non-zero grid and block extents, "
                               "buffers of at least one byte, scalars of 1 to 256 bytes and arguments naming existing "
                               "buffers");
    // The reply carries every buffer copied back: a request whose reply could not be a message is
    // refused here, not found out as a garbled reply (a killed worker, and again on every retry).
    std::size_t replyBytes = 0;
    for (const WorkRequest::Buffer& b : request.buffers)
        if (b.copyBack)
            replyBytes += b.bytes;
    const std::size_t requestBytes = bytes.size() - wk::kHeaderBytes;
    if (requestBytes > wk::kMaxPayload || replyBytes > wk::kMaxPayload)
        detail::throwError(Errc::invalid_argument, "cuctx::GpuWorker::run",
                           "request for kernel '" + request.kernel + "' sends " + std::to_string(requestBytes) +
                               " bytes and copies back " + std::to_string(replyBytes) + "; a message holds at most " +
                               std::to_string(wk::kMaxPayload) + " bytes",
                           "Split the work into smaller requests, or keep large data on the device (IPC buffers)");
    if (request.deadline <= std::chrono::milliseconds::zero())
        detail::throwError(Errc::invalid_argument, "cuctx::GpuWorker::run",
                           "request for kernel '" + request.kernel + "' has a deadline of " +
                               std::to_string(request.deadline.count()) + " ms",
                           "Give every request a positive deadline");

    WorkerFault f;
    f.request = message.id;
    f.kernel = request.kernel;
    s.sent.push_back(WorkerLaunch{message.id, request.kernel, request.grid, request.block, -1});
    if (s.sent.size() > wk::kJournalSize)
        s.sent.pop_front();
    const auto started = wk::Clock::now();
    // A deadline of milliseconds::max() means "no deadline" to a caller: a year is as good, and does
    // not overflow the clock.
    const auto deadline = started + std::min(request.deadline, std::chrono::milliseconds(std::chrono::hours(24 * 365)));
    auto ioFault = [&](wk::IoStatus status) {
        f.kind = status == wk::IoStatus::timeout     ? WorkerFaultKind::deadline
                 : status == wk::IoStatus::malformed ? WorkerFaultKind::protocol
                                                     : WorkerFaultKind::died;
        s.fault(std::move(f));
    };
    if (wk::IoStatus st = wk::sendAll(s.fd, bytes, deadline); st != wk::IoStatus::ok)
        ioFault(st);
    wk::Header header;
    std::vector<std::byte> payload;
    if (wk::IoStatus st = wk::receive(s.fd, header, payload, deadline); st != wk::IoStatus::ok)
        ioFault(st);
    auto reply = header.type == wk::Type::reply ? wk::decodeReply(payload) : std::nullopt;
    if (!reply || reply->id != message.id)
        ioFault(wk::IoStatus::malformed);
    s.sent.back().result = reply->result;
    if (reply->sticky || isStickyResult(reply->result)) {
        f.kind = WorkerFaultKind::sticky_error;
        f.result = reply->result;
        f.call = reply->call;
        f.message = reply->message;
        for (const wk::Launch& l : reply->journal)
            f.lastLaunches.push_back(WorkerLaunch{l.request, l.kernel, toDim3(l.grid), toDim3(l.block), l.result});
        s.fault(std::move(f));
    }
    if (reply->result != 0) {
        ErrorInfo info;
        info.condition = reply->result > 0 ? Errc::driver_error : Errc::invalid_argument;
        info.result = reply->result > 0 ? reply->result : 0;
        info.call = reply->call.empty() ? "cuctx::GpuWorker::run" : reply->call;
        info.object = "request " + std::to_string(message.id) + " (kernel '" + request.kernel +
                      "') in GPU worker pid " + std::to_string(s.process.pid());
        info.detail = "the worker reported: " + reply->message;
        info.hint = "the worker is unaffected and serves the next request";
        throw Error(std::move(info));
    }
    if (reply->buffers.size() != request.buffers.size())
        ioFault(wk::IoStatus::malformed);
    WorkResult result;
    result.buffers = std::move(reply->buffers);
    result.worker = s.process.pid();
    result.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(wk::Clock::now() - started);
    return result;
}

pid_t GpuWorker::pid() const
{
    std::lock_guard lock(state_->mutex);
    return state_->process.pid();
}

unsigned GpuWorker::restarts() const
{
    std::lock_guard lock(state_->mutex);
    return state_->restarts;
}

std::optional<WorkerFault> GpuWorker::lastFault() const
{
    std::lock_guard lock(state_->mutex);
    return state_->lastFault;
}

} // namespace cuctx

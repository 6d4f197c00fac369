// SPDX-License-Identifier: MIT
#include "cuctx/report_on_signal.hpp"

#include "check/check.hpp"
#include "cuctx/error.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

namespace cuctx {
namespace {

// What the handler needs, as lock-free atomics (the only state a handler may touch). `inHandler`
// lets the destructor wait out a handler that read the pipe's descriptor before it was withdrawn,
// so that the descriptor is never closed (and its number reused) under a write.
std::atomic<int> g_writeEnd{-1};
std::atomic<int> g_inHandler{0};
std::atomic<bool> g_active{false};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

constexpr char kReport = 'r';
constexpr char kQuit = 'q';

// C language linkage, as sigaction wants; static, since an extern "C" name in an anonymous namespace
// still has external linkage.
extern "C" {
static void onReportSignal(int)
{
    const int savedErrno = errno;
    g_inHandler.fetch_add(1, std::memory_order_seq_cst);
    const int fd = g_writeEnd.load(std::memory_order_seq_cst);
    if (fd >= 0) {
        const char byte = kReport;
        [[maybe_unused]] const ssize_t n = ::write(fd, &byte, 1); // a full pipe already has a request
    }
    g_inHandler.fetch_sub(1, std::memory_order_seq_cst);
    errno = savedErrno;
}
} // extern "C"

void writeAll(int fd, const std::string& text)
{
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        done += static_cast<std::size_t>(n);
    }
}

} // namespace

ReportOnSignal::ReportOnSignal(int signal, Sink sink, ReportOptions options)
    : signal_(signal), pid_(::getpid()), sink_(std::move(sink)), options_(options)
{
    if (signal == SIGKILL || signal == SIGSTOP || signal <= 0 || signal >= NSIG)
        detail::throwError(Errc::invalid_argument, "cuctx::ReportOnSignal",
                           "signal " + std::to_string(signal) + " cannot be caught",
                           "use SIGUSR1, SIGUSR2 or another catchable signal");
    bool expected = false;
    if (!g_active.compare_exchange_strong(expected, true))
        detail::throwError(Errc::invalid_state, "cuctx::ReportOnSignal",
                           "another ReportOnSignal is active in this process", "destroy it first");
    if (!sink_)
        sink_ = [](const ProcessReport& report) { writeAll(STDERR_FILENO, report.text()); };
    if (::pipe2(pipe_, O_CLOEXEC) != 0) {
        const int e = errno;
        g_active.store(false);
        detail::throwError(Errc::invalid_state, "cuctx::ReportOnSignal",
                           std::string("pipe2 failed: ") + std::strerror(e));
    }
    ::fcntl(pipe_[1], F_SETFL, O_NONBLOCK); // the handler must never block
    try {
        thread_ = std::thread([this] { serve(); });
    } catch (...) {
        ::close(pipe_[0]);
        ::close(pipe_[1]);
        pipe_[0] = pipe_[1] = -1;
        g_active.store(false);
        throw;
    }
    g_writeEnd.store(pipe_[1]);
    struct sigaction action {};
    action.sa_handler = onReportSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (::sigaction(signal, &action, &previous_) != 0) {
        const int e = errno;
        stop(false);
        detail::throwError(Errc::invalid_argument, "cuctx::ReportOnSignal",
                           "sigaction(" + std::to_string(signal) + ") failed: " + std::strerror(e));
    }
}

ReportOnSignal::~ReportOnSignal()
{
    stop(true);
}

void ReportOnSignal::stop(bool restoreHandler) noexcept
{
    if (pipe_[1] < 0)
        return;
    if (restoreHandler)
        ::sigaction(signal_, &previous_, nullptr);
    if (::getpid() != pid_) {
        // A forked child: the pipe is shared with the parent, whose thread reads it, and this
        // process has no thread to stop. Writing "quit" would stop the parent's reporter.
        g_writeEnd.store(-1, std::memory_order_seq_cst);
        ::close(pipe_[0]);
        ::close(pipe_[1]);
        pipe_[0] = pipe_[1] = -1;
        // The std::thread names a thread of the parent: forget it without join or detach (either
        // would act on a thread this process does not have), so that its destructor does nothing.
        ::new (static_cast<void*>(&thread_)) std::thread();
        g_active.store(false);
        return;
    }
    g_writeEnd.store(-1, std::memory_order_seq_cst);
    while (g_inHandler.load(std::memory_order_seq_cst) != 0) {
        // A handler on another thread is between reading the descriptor and writing: a few
        // instructions.
    }
    const char quit = kQuit;
    while (::write(pipe_[1], &quit, 1) < 0 && (errno == EINTR || errno == EAGAIN)) {
    }
    if (thread_.joinable())
        thread_.join();
    ::close(pipe_[0]);
    ::close(pipe_[1]);
    pipe_[0] = pipe_[1] = -1;
    g_active.store(false);
}

std::uint64_t ReportOnSignal::reportsTaken() const noexcept
{
    return taken_.load(std::memory_order_acquire);
}

void ReportOnSignal::serve()
{
    for (;;) {
        char bytes[64];
        const ssize_t n = ::read(pipe_[0], bytes, sizeof bytes);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        bool requested = false;
        for (ssize_t i = 0; i < n; ++i) {
            if (bytes[i] == kQuit)
                return;
            requested = requested || bytes[i] == kReport; // signals that came together get one report
        }
        if (!requested)
            continue;
        try {
            const ProcessReport report = processReport(options_);
            taken_.fetch_add(1, std::memory_order_release);
            sink_(report);
        } catch (const std::exception& e) {
            writeAll(STDERR_FILENO, std::string("cuctx: ReportOnSignal's sink failed: ") + e.what() + "\n");
        }
    }
}

} // namespace cuctx

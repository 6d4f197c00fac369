// SPDX-License-Identifier: MIT
#include "query.hpp"

#include "format/printable.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace cuctx::tools {
namespace {

// A value as CSV shows it: printable (a process's name or command line is any bytes its owner chose,
// and CSV is read on terminals too), quoted where it holds a separator or a quote.
std::string csvValue(const std::string& raw)
{
    std::string v = detail::printableText(raw);
    if (v.find_first_of(",\"") == std::string::npos)
        return v;
    std::string quoted = "\"";
    for (char ch : v)
        quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return quoted + "\"";
}

std::string mib(std::optional<std::uint64_t> bytes)
{
    return bytes ? std::to_string(*bytes >> 20) : "[N/A]";
}

// A PCI bus id in one spelling: lower case, the domain as a number ("00000000:19:00.0" and
// "0000:19:00.0" are the same device).
std::string normalBusId(const std::string& id)
{
    std::string lower;
    for (char ch : id)
        lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const auto colon = lower.find(':');
    if (colon == std::string::npos || lower.find(':', colon + 1) == std::string::npos)
        return lower; // no domain
    const std::string domain = lower.substr(0, colon);
    const auto first = domain.find_first_not_of('0');
    return (first == std::string::npos ? "0" : domain.substr(first)) + lower.substr(colon);
}

// Set by SIGINT or SIGTERM, whichever thread runs the handler (an atomic: a volatile sig_atomic_t is
// safe only on the thread the signal interrupts).
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "written in a signal handler");
// The write end of a pipe whose read end a watch's wait polls. The handler writes a byte to it, so
// that a signal that lands just before the wait begins, or on another thread (a driver's own), ends
// the wait as well as one that interrupts it.
std::atomic<int> g_stopWrite{-1};
static_assert(std::atomic<int>::is_always_lock_free, "read in a signal handler");

void onStopSignal(int)
{
    const int saved = errno;
    g_stop.store(true, std::memory_order_relaxed);
    const int fd = g_stopWrite.load(std::memory_order_relaxed);
    if (fd >= 0) {
        const char byte = 1;
        (void)!write(fd, &byte, 1); // the pipe is non-blocking: a full one already says stop
    }
    errno = saved;
}

// `fd` moved to a descriptor above the standard three (close-on-exec), so that a pipe made while
// stdin or stdout is closed does not take their place: the document would go into the pipe. -1 if
// it cannot be.
int aboveStandard(int fd) noexcept
{
    if (fd > 2)
        return fd;
    const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    const int error = errno;
    close(fd);
    errno = error;
    return moved;
}

// The stop pipe's read end, made once (non-blocking, close-on-exec, above the standard three; -1
// if it could not be) and never closed: a handler running on another thread may still write to it
// after a watch ends, which must never reach a descriptor closed and reused since.
int stopPipe() noexcept
{
    static const int readEnd = [] {
        int ends[2];
        if (pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0)
            return -1;
        const int read = aboveStandard(ends[0]);
        const int write = aboveStandard(ends[1]);
        if (read < 0 || write < 0) {
            const int error = errno;
            close(read >= 0 ? read : write);
            errno = error;
            return -1;
        }
        g_stopWrite.store(write, std::memory_order_relaxed);
        return read;
    }();
    return readEnd;
}

// SIGINT and SIGTERM end a watch while it lives: its handler sets g_stop and writes to the stop
// pipe, whose read end the wait polls. The watching thread blocks both outside its waits, and each
// wait takes them with ppoll's mask: one sent to it while it prints stays pending until the wait,
// which runs the handler and returns at once (one sent to the process may run the handler on another
// thread instead, a driver's, which wakes the wait through the pipe). So the handler never runs at an
// arbitrary point of the watching thread, which ThreadSanitizer's runtime does not survive: it defers
// a handler that lands outside a blocking call, and in about 1 of 50 runs of the check the watch slept
// on with the signal taken and nothing pending. Unblocks what it blocked, then restores the handlers
// it replaced, so that a stop still pending then runs this handler. A byte left in the pipe comes
// with g_stop set, which no watch after it gets past.
class StopSignals {
public:
    StopSignals() : read_(stopPipe())
    {
        if (read_ < 0) {
            ErrorInfo info;
            info.condition = Errc::invalid_state;
            info.call = "cuctx-inspect --watch";
            info.detail =
                std::string("no pipe for the watch to wait on for SIGINT and SIGTERM: ") + std::strerror(errno);
            info.hint = "The process may have run out of file descriptors (ulimit -n)";
            throw Error(std::move(info));
        }
        struct sigaction action {};
        action.sa_handler = onStopSignal;
        action.sa_flags = SA_RESTART; // a print's writes go on; the wait polls the pipe, not EINTR
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, &oldInt_);
        sigaction(SIGTERM, &action, &oldTerm_);
        // Only the stop signals the thread did not block already: where it did, it still does. The
        // rest of its mask is left to whatever a print does to it.
        sigset_t before;
        pthread_sigmask(SIG_SETMASK, nullptr, &before);
        sigemptyset(&blocked_);
        for (const int sig : {SIGINT, SIGTERM})
            if (sigismember(&before, sig) == 0)
                sigaddset(&blocked_, sig);
        pthread_sigmask(SIG_BLOCK, &blocked_, nullptr);
    }
    ~StopSignals()
    {
        pthread_sigmask(SIG_UNBLOCK, &blocked_, nullptr);
        sigaction(SIGINT, &oldInt_, nullptr);
        sigaction(SIGTERM, &oldTerm_, nullptr);
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    /// Waits `seconds`, or until SIGINT or SIGTERM, whenever it came since the watch began: true if
    /// one came.
    bool stopped(double seconds) const
    {
        using Clock = std::chrono::steady_clock;
        const auto deadline =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
        while (!g_stop.load(std::memory_order_relaxed)) {
            // Waits with the thread's mask as it is now, less the stop signals blocked for the watch;
            // a wait whose time is up still polls once, the only point where a pending stop runs.
            sigset_t waitMask;
            pthread_sigmask(SIG_SETMASK, nullptr, &waitMask);
            for (const int sig : {SIGINT, SIGTERM})
                if (sigismember(&blocked_, sig) == 1)
                    sigdelset(&waitMask, sig);
            const auto left = std::max(std::chrono::nanoseconds(0),
                                       std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()));
            const timespec timeout{static_cast<time_t>(left.count() / 1'000'000'000),
                                   static_cast<long>(left.count() % 1'000'000'000)};
            pollfd stop{read_, POLLIN, 0};
            if (ppoll(&stop, 1, &timeout, &waitMask) > 0)
                return true; // a stop byte
            if (left.count() == 0)
                return g_stop.load(std::memory_order_relaxed);
        }
        return true;
    }

private:
    int read_;
    sigset_t blocked_{}; // the stop signals this watch blocks outside its waits
    struct sigaction oldInt_ {};
    struct sigaction oldTerm_ {};
};

// An NVML field as nvidia-smi prints it: Enabled or Disabled; where NVML refused the call that gives it (the
// field's own, or the device's handle lookup), its error in brackets: "[Insufficient Permissions]", the
// TEXT of `problem`'s "CALL failed with NAME (N): TEXT", or "[NAME (N)]" where NVML gave no text; "[N/A]"
// where the device does not support the query, NVML is not there or does not know the device.
std::string nvmlField(std::optional<bool> on, const NvmlModeProblems& problems, const std::string& problem)
{
    if (on)
        return *on ? "Enabled" : "Disabled";
    const std::string& why = problems.about(problem);
    const std::string failed = " failed with ";
    const std::size_t at = why.starts_with("nvml") ? why.find(failed) : std::string::npos;
    if (at == std::string::npos)
        return "[N/A]";
    const std::size_t from = at + failed.size();
    const std::size_t text = why.find(": ", from);
    return "[" + (text == std::string::npos ? why.substr(from) : why.substr(text + 2)) + "]";
}

} // namespace

std::string formatCsv(const std::string& command, const Query& q, const std::vector<QueryRow>& rows)
{
    const auto& known = queryFields(command);
    auto unitOf = [&](const std::string& field) -> std::string {
        for (const QueryField& k : known)
            if (field == k.name)
                return k.unit;
        return "";
    };
    std::string text;
    if (q.header) {
        for (std::size_t i = 0; i < q.fields.size(); ++i) {
            const std::string unit = unitOf(q.fields[i]);
            text += (i == 0 ? "" : ", ") + q.fields[i] + (q.units && !unit.empty() ? " [" + unit + "]" : "");
        }
        text += "\n";
    }
    for (const QueryRow& row : rows) {
        for (std::size_t i = 0; i < q.fields.size(); ++i) {
            const auto it = row.find(q.fields[i]);
            std::string value = it != row.end() ? it->second : "[N/A]";
            const std::string unit = unitOf(q.fields[i]);
            if (q.units && !unit.empty() && value != "[N/A]")
                value += " " + unit;
            text += (i == 0 ? "" : ", ") + csvValue(value);
        }
        text += "\n";
    }
    return text;
}

std::vector<QueryRow> deviceRows(const std::vector<DeviceSnapshot>& devices, const std::vector<DeviceMode>& modes)
{
    std::vector<QueryRow> rows;
    for (const DeviceSnapshot& d : devices) {
        const DeviceProperties& p = d.properties;
        DeviceMode m;
        bool known = false;
        for (const DeviceMode& each : modes)
            if (each.ordinal == p.ordinal) {
                m = each;
                known = true;
            }
        rows.push_back({
            {"index", std::to_string(p.ordinal)},
            {"name", p.name},
            {"uuid", p.uuid},
            {"pci.bus_id", p.pciBusId},
            {"compute_cap", std::to_string(p.computeCapabilityMajor) + "." + std::to_string(p.computeCapabilityMinor)},
            {"multiprocessors", std::to_string(p.multiprocessors)},
            {"memory.total", std::to_string(p.totalMemory >> 20)},
            {"compute_mode", p.computeModeName()},
            {"primary_context", d.primary.active ? "active" : "inactive"},
            {"mps", known ? (m.mps ? "Enabled" : "Disabled") : "[N/A]"},
            {"persistence_mode", nvmlField(m.persistence, m.nvmlProblems, m.nvmlProblems.persistence)},
            {"mig.mode.current", nvmlField(m.mig, m.nvmlProblems, m.nvmlProblems.mig)},
        });
    }
    return rows;
}

std::vector<QueryRow> processRows(const std::vector<GpuProcess>& list, const std::vector<DeviceSnapshot>& devices)
{
    std::vector<QueryRow> rows;
    for (const GpuProcess& p : list)
        for (const GpuProcessDevice& d : p.devices) {
            std::string busId = "[N/A]";
            for (const DeviceSnapshot& s : devices)
                if (s.properties.ordinal == d.ordinal)
                    busId = s.properties.pciBusId;
            rows.push_back({
                {"pid", std::to_string(p.pid)},
                {"process_name", p.name.empty() ? "[N/A]" : p.name},
                {"used_memory", mib(d.usedMemoryBytes)},
                {"gpu_index", std::to_string(d.ordinal)},
                {"gpu_uuid", d.uuid},
                {"gpu_bus_id", busId},
                {"mps_client", d.mpsClient ? "yes" : "no"},
                {"cuda_visible_devices", p.cudaVisibleDevices.value_or("[N/A]")},
                {"local_rank", p.localRank ? std::to_string(*p.localRank) : "[N/A]"},
                {"stray", p.stray.empty() ? "no" : "yes"},
                {"command_line", p.commandLine.value_or("[N/A]")},
            });
        }
    return rows;
}

std::vector<int> selectDevices(const std::string& ids, const std::vector<DeviceSnapshot>& devices)
{
    std::vector<int> selected;
    for (const std::string& id : splitList(ids)) {
        std::optional<int> match;
        const bool number =
            !id.empty() && std::all_of(id.begin(), id.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        for (const DeviceSnapshot& d : devices) {
            const DeviceProperties& p = d.properties;
            const bool hit = number ? id.size() < 10 && std::stoi(id) == p.ordinal
                             : id.starts_with("GPU-") || id.starts_with("MIG-")
                                 ? id.size() > 4 && p.uuid.starts_with(id)
                                 : normalBusId(id) == normalBusId(p.pciBusId);
            if (hit && !match)
                match = p.ordinal;
        }
        if (!match) {
            ErrorInfo info;
            info.condition = Errc::invalid_argument;
            info.call = "cuctx-inspect -i";
            info.detail = "no device matches '" + id + "' (" + std::to_string(devices.size()) +
                          " visible: an ordinal, a UUID or its prefix, or a PCI bus id)";
            info.hint = "List them with cuctx-inspect devices";
            throw Error(std::move(info));
        }
        if (std::find(selected.begin(), selected.end(), *match) == selected.end())
            selected.push_back(*match);
    }
    std::sort(selected.begin(), selected.end());
    return selected;
}

int repeatEvery(double seconds, long count, const std::function<int()>& print)
{
    if (seconds <= 0)
        return print();
    const StopSignals stop;
    int status = 0;
    for (long n = 0; !g_stop.load(std::memory_order_relaxed) && (count <= 0 || n < count); ++n) {
        if (n > 0 && stop.stopped(seconds))
            break;
        status = print();
        std::fflush(stdout);
        if (status != 0)
            break;
    }
    return status;
}

} // namespace cuctx::tools

// SPDX-License-Identifier: MIT
#include "context/launch_journal.hpp"

#include "cuctx/launch_journal.hpp"

#include "check/device_faults.hpp"
#include "context/context_access.hpp"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>

namespace cuctx::detail {
namespace {

bool journalFromEnvironment()
{
    const char* v = std::getenv("CUCTX_LAUNCH_JOURNAL");
    return v == nullptr || (std::string_view(v) != "0" && std::string_view(v) != "off");
}

// Every live journal, for the suspects of a fault. A leaf lock: nothing else is taken under it.
struct Journals {
    std::mutex mutex;
    std::vector<LaunchJournal*> live;
};

Journals& journals()
{
    static auto* j = new Journals;
    return *j;
}

std::string dims(std::uint32_t x, std::uint32_t y, std::uint32_t z)
{
    return "(" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + ")";
}

bool retired(LaunchJournal& j, std::uint64_t n, std::uintptr_t stream)
{
    if (n < j.contextSynced.load(std::memory_order_acquire))
        return true;
    std::lock_guard lock(j.streamsMutex);
    for (const auto& [s, mark] : j.streamSynced)
        if (mark != 0 && s == stream && n < mark)
            return true;
    return false;
}

// Reads what a journal slot's file pointer points to. It is a string literal of the code that
// launched (a SourceLocation), and that code may have been unloaded since (a plugin's dlclose),
// leaving the pointer dangling: a plain read would fault in the middle of a fault report. The kernel
// copies the bytes instead, with process_vm_readv on this process, which answers EFAULT for an
// unmapped page rather than faulting (and which the sanitizers do not check against the literal's
// end): a page's part at a time, up to the terminating NUL or kMaxBytes, each file once per journal
// read. Where process_vm_readv is refused (a seccomp filter), through a pipe, whose write also answers
// EFAULT, one byte at a time (a wider write would read past the literal, which AddressSanitizer
// reports). Cold: what reading the journal costs, not launching.
class FileNameReader {
public:
    FileNameReader() = default;
    ~FileNameReader()
    {
        for (const int fd : pipe_)
            if (fd >= 0)
                ::close(fd);
    }
    FileNameReader(const FileNameReader&) = delete;
    FileNameReader& operator=(const FileNameReader&) = delete;

    // The name (control characters as '?': the address may now hold other bytes), or nullopt when
    // nothing there can be read. Sets `unreadable` instead when there is no way to read at all
    // (process_vm_readv refused and no pipe to be had).
    std::optional<std::string> read(const char* file, bool& unreadable)
    {
        for (const auto& [seen, name] : read_)
            if (seen == file)
                return name;
        unreadable = false;
        std::optional<std::string> name = readNew(file, unreadable);
        if (!unreadable)
            read_.emplace_back(file, name);
        return name;
    }

private:
    static constexpr std::size_t kMaxBytes = 4096; // PATH_MAX

    static std::size_t pageSize() noexcept
    {
        static const std::size_t page = [] {
            const long size = ::sysconf(_SC_PAGESIZE);
            return size > 0 ? static_cast<std::size_t>(size) : std::size_t{4096};
        }();
        return page;
    }

    // Copies up to `size` bytes from `at` (within one page) into `out`: how many it could, 0 where
    // nothing there is readable, -1 where it has no way to read.
    long copy(const char* at, char* out, std::size_t size)
    {
        if (vmRead_) {
            iovec local{out, size};
            iovec remote{const_cast<char*>(at), size};
            ssize_t n = 0;
            do
                n = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
            while (n < 0 && errno == EINTR);
            if (n >= 0)
                return n;
            if (errno == EFAULT)
                return 0;
            vmRead_ = false; // ENOSYS, EPERM: the pipe from now on
        }
        if (!pipeTried_) {
            pipeTried_ = true;
            if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
                pipe_[0] = pipe_[1] = -1;
        }
        if (pipe_[0] < 0)
            return -1;
        ssize_t n = 0;
        do
            n = ::write(pipe_[1], at, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1)
            return 0; // EFAULT: not mapped, or not readable
        do
            n = ::read(pipe_[0], out, 1);
        while (n < 0 && errno == EINTR);
        return n == 1 ? 1 : -1;
    }

    std::optional<std::string> readNew(const char* file, bool& unreadable)
    {
        std::string name;
        char buffer[kMaxBytes];
        while (name.size() < kMaxBytes) {
            const char* at = file + name.size();
            const std::size_t toPageEnd = pageSize() - reinterpret_cast<std::uintptr_t>(at) % pageSize();
            const long n = copy(at, buffer, std::min(kMaxBytes - name.size(), toPageEnd));
            if (n < 0) {
                unreadable = true;
                return std::nullopt;
            }
            if (n == 0)
                return name.empty() ? std::nullopt : std::optional<std::string>(name + "...");
            for (long i = 0; i < n; ++i) {
                const char c = buffer[i];
                if (c == '\0')
                    return name;
                const auto u = static_cast<unsigned char>(c);
                name += u < 0x20 || u == 0x7f ? '?' : c;
            }
        }
        return name + "...";
    }

    bool vmRead_ = true;
    bool pipeTried_ = false;
    int pipe_[2] = {-1, -1};
    std::vector<std::pair<const char*, std::optional<std::string>>> read_;
};

// The entries of one journal, oldest first. Reads each slot as a seqlock reader (acquire loads of
// the fields, so that the second read of the sequence word cannot move before them); a slot being
// rewritten (by a launch racing the reader) is left out.
void collect(LaunchJournal& j, bool pendingOnly, std::vector<std::string>& out, std::size_t limit)
{
    FileNameReader files;
    const std::uint64_t end = j.next.load(std::memory_order_acquire);
    const std::uint64_t begin = end > LaunchJournal::kSlots ? end - LaunchJournal::kSlots : 0;
    for (std::uint64_t n = begin; n < end; ++n) {
        JournalSlot& s = j.slots[n % LaunchJournal::kSlots];
        if (s.sequence.load(std::memory_order_acquire) != 2 * n + 2)
            continue;
        const char* kernel = s.kernel.load(std::memory_order_acquire);
        const std::uint64_t gxy = s.gridXY.load(std::memory_order_acquire);
        const std::uint64_t gzbx = s.gridZBlockX.load(std::memory_order_acquire);
        const std::uint64_t byz = s.blockYZ.load(std::memory_order_acquire);
        const std::uintptr_t stream = s.stream.load(std::memory_order_acquire);
        const long thread = s.thread.load(std::memory_order_acquire);
        const char* file = s.file.load(std::memory_order_acquire);
        const std::uint32_t line = s.line.load(std::memory_order_acquire);
        if (s.sequence.load(std::memory_order_relaxed) != 2 * n + 2)
            continue; // overwritten while read
        if (pendingOnly && retired(j, n, stream))
            continue;
        std::string text = "launch " + std::to_string(n + 1) + " of " + describeContext(*j.context) + ": " +
                           (kernel != nullptr ? kernel : "kernel ?") + ", grid " +
                           dims(static_cast<std::uint32_t>(gxy), static_cast<std::uint32_t>(gxy >> 32),
                                static_cast<std::uint32_t>(gzbx)) +
                           ", block " +
                           dims(static_cast<std::uint32_t>(gzbx >> 32), static_cast<std::uint32_t>(byz),
                                static_cast<std::uint32_t>(byz >> 32));
        char handle[32];
        std::snprintf(handle, sizeof handle, "0x%" PRIxPTR, stream);
        text += stream == 0 ? ", default stream" : std::string(", stream ") + handle;
        text += ", thread " + std::to_string(thread);
        if (file != nullptr) {
            bool unreadable = false;
            if (const std::optional<std::string> name = files.read(file, unreadable)) {
                std::string_view f = *name;
                while (f.starts_with("../"))
                    f.remove_prefix(3);
                if (!f.empty())
                    text += ", at " + std::string(f) + ":" + std::to_string(line);
            } else if (unreadable) {
                text += ", at ?:" + std::to_string(line); // no way to read it here: not read
            } else {
                text += ", at line " + std::to_string(line) +
                        " of a file that can no longer be read (code unloaded since?)";
            }
        }
        out.push_back(std::move(text));
    }
    if (out.size() > limit)
        out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(limit));
}

// The suspects of a fault on device `ordinal`: every journal of the device's contexts.
std::vector<std::string> suspectsOn(int ordinal) noexcept
{
    // The most recent of each context's: an error message is not a dump, but the journals have no
    // common order, and one context's launches must not push the faulting context's out of sight.
    constexpr std::size_t kShownPerContext = 8;
    std::vector<std::string> all;
    try {
        Journals& js = journals();
        std::lock_guard lock(js.mutex);
        for (LaunchJournal* j : js.live)
            if (j->context->ordinal == ordinal) {
                std::vector<std::string> mine;
                collect(*j, true, mine, kShownPerContext);
                all.insert(all.end(), std::make_move_iterator(mine.begin()), std::make_move_iterator(mine.end()));
            }
    } catch (...) {
        // Out of memory while describing a fault: report it without suspects.
    }
    return all;
}

} // namespace

std::atomic<bool> g_journalOn{journalFromEnvironment()};

const char* internKernelName(const std::string& kernel, const std::string& module)
{
    static std::mutex mutex;
    static auto* names = new std::unordered_set<std::string>; // never freed: slots point into it
    const std::string text = "kernel '" + kernel + "' of '" + module + "'";
    std::lock_guard lock(mutex);
    return names->insert(text).first->c_str();
}

void attachJournal(ContextState& state)
{
    auto j = std::make_unique<LaunchJournal>();
    j->context = &state;
    setSuspectsProvider(&suspectsOn);
    Journals& js = journals();
    std::lock_guard lock(js.mutex);
    js.live.push_back(j.get()); // may throw: the journal is freed, the state left without one
    state.journal = j.release();
}

void detachJournal(ContextState& state) noexcept
{
    LaunchJournal* j = state.journal;
    if (j == nullptr)
        return;
    {
        Journals& js = journals();
        std::lock_guard lock(js.mutex);
        js.live.erase(std::remove(js.live.begin(), js.live.end(), j), js.live.end());
        state.journal = nullptr;
    }
    delete j;
}

void journalContextSynced(ContextState& state, std::uint64_t mark) noexcept
{
    if (LaunchJournal* j = state.journal) {
        std::uint64_t now = j->contextSynced.load(std::memory_order_relaxed);
        while (now < mark && !j->contextSynced.compare_exchange_weak(now, mark, std::memory_order_acq_rel)) {
        }
    }
}

void journalStreamSynced(ContextState& state, CUstream stream, std::uint64_t mark) noexcept
{
    LaunchJournal* j = state.journal;
    if (j == nullptr || mark == 0)
        return;
    const auto key = reinterpret_cast<std::uintptr_t>(stream);
    std::lock_guard lock(j->streamsMutex);
    for (auto& [s, m] : j->streamSynced)
        if (m != 0 && s == key) {
            m = std::max(m, mark);
            return;
        }
    j->streamSynced[j->nextStreamRow++ % LaunchJournal::kStreams] = {key, mark};
}

std::vector<std::string> journalEntries(const ContextState& state, bool pendingOnly)
{
    std::vector<std::string> out;
    if (state.journal != nullptr)
        collect(*state.journal, pendingOnly, out, LaunchJournal::kSlots);
    return out;
}

long journalThreadId() noexcept
{
    thread_local const long tid = static_cast<long>(gettid());
    return tid;
}

} // namespace cuctx::detail

namespace cuctx {

void setLaunchJournal(bool on) noexcept
{
    detail::g_journalOn.store(on, std::memory_order_relaxed);
}

bool launchJournalEnabled() noexcept
{
    return detail::g_journalOn.load(std::memory_order_relaxed);
}

std::vector<std::string> recentLaunches(const Context& context, bool pendingOnly)
{
    const detail::ContextState* state = detail::ContextAccess::state(context);
    if (state == nullptr)
        return {};
    return detail::journalEntries(*state, pendingOnly);
}

} // namespace cuctx

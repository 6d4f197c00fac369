// SPDX-License-Identifier: MIT
#include "context/launch_journal.hpp"

#include "cuctx/launch_journal.hpp"

#include "check/device_faults.hpp"
#include "context/context_access.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
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
// leaving the pointer dangling: a plain read would fault in the middle of a fault report. The bytes
// go through a pipe instead, whose write answers EFAULT for an unreadable address. One byte at a time
// up to the terminating NUL (a larger read would run past the literal's end, which AddressSanitizer
// rightly reports), at most kMaxBytes, each file read once per journal read. Cold: two system calls a
// byte, for the few call sites a journal names.
class FileNameReader {
public:
    FileNameReader() noexcept
    {
        if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0)
            fds_[0] = fds_[1] = -1;
    }
    ~FileNameReader()
    {
        for (const int fd : fds_)
            if (fd >= 0)
                ::close(fd);
    }
    FileNameReader(const FileNameReader&) = delete;
    FileNameReader& operator=(const FileNameReader&) = delete;

    // Whether it can read at all (a pipe was made).
    bool usable() const noexcept { return fds_[0] >= 0; }

    // The name, printable ASCII only (others as '?': the address may now hold other bytes), or
    // nullopt when nothing there can be read (or the reader is not usable).
    std::optional<std::string> read(const char* file)
    {
        for (const auto& [seen, name] : read_)
            if (seen == file)
                return name;
        std::optional<std::string> name = readNew(file);
        read_.emplace_back(file, name);
        return name;
    }

private:
    static constexpr std::size_t kMaxBytes = 512;

    // The byte at `at`, or nullopt where the kernel cannot read it.
    std::optional<char> byteAt(const char* at) const noexcept
    {
        ssize_t n = 0;
        do
            n = ::write(fds_[1], at, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1)
            return std::nullopt; // EFAULT: not mapped, or not readable
        char c = 0;
        do
            n = ::read(fds_[0], &c, 1);
        while (n < 0 && errno == EINTR);
        return n == 1 ? std::optional<char>(c) : std::nullopt;
    }

    std::optional<std::string> readNew(const char* file) const
    {
        if (!usable())
            return std::nullopt;
        std::string name;
        for (std::size_t i = 0; i < kMaxBytes; ++i) {
            const std::optional<char> c = byteAt(file + i);
            if (!c)
                return name.empty() ? std::nullopt : std::optional<std::string>(name + "...");
            if (*c == '\0')
                return name;
            name += (*c >= ' ' && *c <= '~') ? *c : '?';
        }
        return name + "...";
    }

    int fds_[2] = {-1, -1};
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
        if (file != nullptr && !files.usable()) {
            text += ", at ?:" + std::to_string(line); // no pipe (out of descriptors): not read
        } else if (file != nullptr) {
            if (const std::optional<std::string> name = files.read(file)) {
                std::string_view f = *name;
                while (f.starts_with("../"))
                    f.remove_prefix(3);
                if (!f.empty())
                    text += ", at " + std::string(f) + ":" + std::to_string(line);
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
    auto* j = new LaunchJournal;
    j->context = &state;
    setSuspectsProvider(&suspectsOn);
    Journals& js = journals();
    std::lock_guard lock(js.mutex);
    js.live.push_back(j);
    state.journal = j;
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

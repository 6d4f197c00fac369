// SPDX-License-Identifier: MIT
#include "cuctx/worker_process.hpp"

#include "check/check.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>

extern char** environ;

namespace cuctx {

WorkerProcess WorkerProcess::spawn(const std::vector<std::string>& argv,
                                   const std::map<std::string, std::string>& extraEnvironment,
                                   const std::vector<int>& passFds)
{
    if (argv.empty())
        detail::throwError(Errc::invalid_argument, "cuctx::WorkerProcess::spawn", "no program to start");
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> envStrings;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        const std::string entry = *e;
        const std::string name = entry.substr(0, entry.find('='));
        if (extraEnvironment.count(name) == 0)
            envStrings.push_back(entry);
    }
    for (const auto& [name, value] : extraEnvironment)
        envStrings.push_back(name + "=" + value);
    std::vector<char*> env;
    env.reserve(envStrings.size() + 1);
    for (std::string& e : envStrings)
        env.push_back(e.data());
    env.push_back(nullptr);
    // The descriptors to pass go first to fresh numbers above every target (so that one dup2 never
    // overwrites a source another still needs), then to 3, 4, ...: dup2 clears O_CLOEXEC on the copy.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    std::vector<int> staged;
    const int firstTarget = 3;
    const int above = firstTarget + static_cast<int>(passFds.size());
    for (int fd : passFds) {
        const int copy = fcntl(fd, F_DUPFD_CLOEXEC, above);
        if (copy < 0) {
            const int err = errno;
            for (int s : staged)
                close(s);
            posix_spawn_file_actions_destroy(&actions);
            detail::throwError(Errc::invalid_argument, "cuctx::WorkerProcess::spawn",
                               "cannot pass descriptor " + std::to_string(fd) + " to '" + argv[0] +
                                   "': " + std::strerror(err));
        }
        staged.push_back(copy);
    }
    for (std::size_t i = 0; i < staged.size(); ++i)
        posix_spawn_file_actions_adddup2(&actions, staged[i], firstTarget + static_cast<int>(i));
    pid_t pid = -1;
    // posix_spawn execs at once (vfork-like): the child never runs this process's code, so it has
    // none of the CUDA state a fork after cuInit would poison.
    const int rc =
        posix_spawnp(&pid, argv[0].c_str(), staged.empty() ? nullptr : &actions, nullptr, args.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    for (int s : staged)
        close(s);
    if (rc != 0)
        detail::throwError(Errc::invalid_argument, "cuctx::WorkerProcess::spawn",
                           "cannot start '" + argv[0] + "': " + std::strerror(rc),
                           "Check the program's path (it is searched in PATH) and that it is executable");
    return WorkerProcess(pid);
}

WorkerProcess::WorkerProcess(WorkerProcess&& other) noexcept : pid_(other.pid_)
{
    other.pid_ = -1;
}

WorkerProcess& WorkerProcess::operator=(WorkerProcess&& other) noexcept
{
    if (this != &other) {
        if (pid_ > 0)
            (void)wait();
        pid_ = other.pid_;
        other.pid_ = -1;
    }
    return *this;
}

WorkerProcess::~WorkerProcess()
{
    if (pid_ > 0)
        (void)wait();
}

int WorkerProcess::wait()
{
    if (pid_ <= 0)
        return -1;
    int status = 0;
    pid_t r;
    do
        r = waitpid(pid_, &status, 0);
    while (r < 0 && errno == EINTR);
    pid_ = -1;
    if (r < 0)
        return -1;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

bool WorkerProcess::kill(int signal) noexcept
{
    return pid_ > 0 && ::kill(pid_, signal) == 0;
}

std::string WorkerProcess::selfExecutable()
{
    char path[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0)
        detail::throwError(Errc::invalid_state, "cuctx::WorkerProcess::selfExecutable",
                           "cannot read /proc/self/exe: " + std::string(std::strerror(errno)));
    return std::string(path, static_cast<std::size_t>(n));
}

} // namespace cuctx

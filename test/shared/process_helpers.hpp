// SPDX-License-Identifier: MIT
#pragma once

// Running a piece of a test in a forked child, for the fork tests of both suites.

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

namespace cuctx::test {

/// Waits for child `pid`, which must exit (not die of a signal), and returns its exit status.
inline int exitStatusOf(pid_t pid)
{
    REQUIRE(pid > 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/// Runs `body` in a forked child; its return value is the child's exit status (98 if it threw).
template <typename Body>
int inChild(Body body)
{
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int code = 99;
        try {
            code = body();
        } catch (...) {
            code = 98;
        }
        _exit(code);
    }
    return exitStatusOf(pid);
}

} // namespace cuctx::test

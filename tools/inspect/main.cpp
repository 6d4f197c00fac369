// SPDX-License-Identifier: MIT
// cuctx-inspect: what this machine's CUDA driver, devices and contexts are and cost, for people (an
// aligned table) and for programs (--json; schemas in docs/schema/). docs/cuctx-inspect.md.

#include "arguments.hpp"
#include "command_line.hpp"

#include "cuctx/cuctx.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace cuctx::tools;

int (*runnerOf(const std::string& command))(const CommandLine&)
{
    if (command == "topology")
        return runTopology;
    if (command == "context")
        return runContext;
    if (command == "module")
        return runModule;
    if (command == "doctor")
        return runDoctor;
    if (command == "bench")
        return runBench;
    if (command == "processes")
        return runProcesses;
    return runDevices;
}

// Everything on stdout must have reached it: a failed write (a full disk, a closed pipe, > /dev/full)
// is an error, never exit 0 with a truncated document.
int finishOutput(int status)
{
    const bool flushed = std::fflush(stdout) == 0;
    const int error = errno;
    if (!flushed || std::ferror(stdout) != 0) {
        std::fprintf(stderr, "cuctx-inspect: cannot write the output to stdout: %s\n",
                     flushed ? "a write failed" : std::strerror(error));
        return exitInternal;
    }
    return status;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        const ParsedArguments parsed = parseArguments(std::vector<std::string>(argv + 1, argv + argc));
        switch (parsed.action) {
        case ParsedArguments::Action::help: std::fputs(parsed.text.c_str(), stdout); return finishOutput(exitOk);
        case ParsedArguments::Action::version:
            std::printf("cuctx-inspect %s (CUDA %s headers)\n", CUCTX_VERSION_STRING,
                        std::to_string(cuctx::Driver::headerVersion()).c_str());
            return finishOutput(exitOk);
        case ParsedArguments::Action::usage: std::fputs(parsed.text.c_str(), stderr); return exitUsage;
        case ParsedArguments::Action::run: break;
        }
        return finishOutput(runnerOf(parsed.line.command)(parsed.line));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cuctx-inspect: internal error: %s\n", e.what());
        return exitInternal;
    }
}

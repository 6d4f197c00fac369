// SPDX-License-Identifier: MIT
// cuctx-inspect: what this machine's CUDA driver, devices and contexts are and cost, for people (an
// aligned table) and for programs (--json; schemas in docs/schema/). docs/cuctx-inspect.md.

#include "arguments.hpp"
#include "command_line.hpp"

#include "cuctx/cuctx.hpp"

#include <cstdio>
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
    return runDevices;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        const ParsedArguments parsed = parseArguments(std::vector<std::string>(argv + 1, argv + argc));
        switch (parsed.action) {
        case ParsedArguments::Action::help: std::fputs(parsed.text.c_str(), stdout); return exitOk;
        case ParsedArguments::Action::version:
            std::printf("cuctx-inspect %s (CUDA %s headers)\n", CUCTX_VERSION_STRING,
                        std::to_string(cuctx::Driver::headerVersion()).c_str());
            return exitOk;
        case ParsedArguments::Action::usage: std::fputs(parsed.text.c_str(), stderr); return exitUsage;
        case ParsedArguments::Action::run: break;
        }
        return runnerOf(parsed.line.command)(parsed.line);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cuctx-inspect: internal error: %s\n", e.what());
        return exitInternal;
    }
}

// SPDX-License-Identifier: MIT
// cuctx-inspect: what this machine's CUDA driver, devices and contexts are and cost, for people (an
// aligned table) and for programs (--json; schemas in docs/schema/). docs/cuctx-inspect.md.

#include "command_line.hpp"
#include "report/report_format.hpp"

#include "cuctx/cuctx.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

using namespace cuctx::tools;

struct Command {
    const char* name;
    int (*run)(const CommandLine&);
    const char* synopsis; // after "cuctx-inspect NAME"
    const char* summary;
    const char* options; // its own options, one per line
};

const Command kCommands[] = {
    {"devices", runDevices, "[--memory]", "the driver and every device (the default command)",
     "  --memory        also measure free memory (activates each primary context)\n"},
    {"topology", runTopology, "", "the peer-access matrix and P2P attributes between devices", ""},
    {"context", runContext, "[--device N] [--primary]",
     "make a context on a device (or retain its primary one) and show what it reports and what it cost",
     "  --device N      the device (default 0)\n"
     "  --primary       retain the primary context instead of creating one\n"},
    {"module", runModule, "FILE [--device N] [--primary]",
     "load a PTX, cubin or fatbin and list its kernels with their attributes and occupancy; print the "
     "JIT's log when it does not load",
     "  --device N      the device to load it on (default 0)\n"
     "  --primary       load it into the primary context instead of a new one\n"},
    {"doctor", runDoctor, "", "check the CUDA set-up; one line per finding with what to do about it", ""},
    {"bench", runBench, "[--device N] [--threads N] [--iterations N] [--csv]",
     "measure context switching, guards, launches and module loads here, raw driver against cuctx",
     "  --device N      the device (default 0)\n"
     "  --threads N     threads for the shared-context runs (default: CPUs, 2-16)\n"
     "  --iterations N  per measurement (default 200000)\n"
     "  --csv           comma-separated values instead of the table\n"},
};

const char* const kCommon = "  --json          machine-readable output (docs/schema/inspect-*.schema.json)\n"
                            "  -v, --verbose   everything, not only the table\n"
                            "  -h, --help      this text; --version: cuctx's version\n";

const char* const kFooter = "\nEnvironment: CUCTX_DRIVER_PATH (the libcuda to load), CUDA_VISIBLE_DEVICES,\n"
                            "CUCTX_LOG_LEVEL, NO_COLOR.\n"
                            "Exit status: 0 ok, 1 internal error, 2 usage, 3 no driver, 4 stub driver,\n"
                            "5 no device, 6 driver too old, 7 forked after CUDA init, 8 driver error,\n"
                            "9 the module did not load, 10 doctor found warnings, 11 doctor found errors.\n";

const Command* find(std::string_view name)
{
    for (const Command& c : kCommands)
        if (name == c.name)
            return &c;
    return nullptr;
}

void printUsage(std::FILE* to)
{
    std::fprintf(to, "usage: cuctx-inspect [COMMAND] [OPTIONS]\n\n"
                     "Shows the CUDA driver, devices and contexts as cuctx sees them.\n\n");
    for (const Command& c : kCommands) {
        char head[24];
        std::snprintf(head, sizeof head, "  %-12s ", c.name);
        std::fprintf(to, "%s\n", cuctx::detail::wrapText(head + std::string(c.summary), 80, 15).c_str());
    }
    std::fprintf(to, "\nOptions of every command:\n%s", kCommon);
    std::fprintf(to, "'cuctx-inspect COMMAND --help' shows a command's own options.\n%s", kFooter);
}

void printCommandUsage(const Command& c)
{
    std::string usage = "usage: cuctx-inspect ";
    usage += c.name;
    if (c.synopsis[0] != '\0')
        usage += std::string(" ") + c.synopsis;
    usage += " [--json] [-v]";
    std::printf("%s\n\n", cuctx::detail::wrapText(usage, 80, 21).c_str());
    std::string summary = c.summary;
    summary[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(summary[0])));
    std::printf("%s.\n\n", cuctx::detail::wrapText(summary, 80, 0).c_str());
    std::printf("Options:\n%s%s%s", c.options, kCommon, kFooter);
}

int usageError(const std::string& what)
{
    std::fprintf(stderr, "cuctx-inspect: %s (cuctx-inspect --help lists the commands and options)\n", what.c_str());
    return exitUsage;
}

bool takesOption(const Command& c, std::string_view option)
{
    return std::string_view(c.options).find(std::string(option) + " ") != std::string_view::npos ||
           std::string_view(c.options).find(std::string(option) + "\n") != std::string_view::npos;
}

bool parseNumber(const char* text, long& out)
{
    char* end = nullptr;
    out = std::strtol(text, &end, 10);
    return end != text && *end == '\0' && out >= 0;
}

} // namespace

int main(int argc, char** argv)
{
    CommandLine line;
    const Command* command = &kCommands[0];
    bool help = false;
    int first = 1;
    if (argc > 1 && argv[1][0] != '-') {
        command = find(argv[1]);
        if (command == nullptr)
            return usageError(std::string("unknown command '") + argv[1] + "'");
        line.command = command->name;
        first = 2;
    }
    for (int i = first; i < argc; ++i) {
        const std::string_view arg = argv[i];
        long number = 0;
        if (arg == "--json") {
            line.json = true;
        } else if (arg == "-v" || arg == "--verbose") {
            line.verbose = true;
        } else if (arg == "-h" || arg == "--help") {
            help = true;
        } else if (arg == "--version") {
            std::printf("cuctx-inspect %s (CUDA %s headers)\n", CUCTX_VERSION_STRING,
                        std::to_string(cuctx::Driver::headerVersion()).c_str());
            return exitOk;
        } else if (!arg.empty() && arg[0] == '-' && !takesOption(*command, arg)) {
            return usageError("'" + std::string(arg) + "' is no option of " + command->name);
        } else if (arg == "--memory") {
            line.memory = true;
        } else if (arg == "--primary") {
            line.primary = true;
        } else if (arg == "--csv") {
            line.csv = true;
        } else if (arg == "--device" || arg == "--threads" || arg == "--iterations") {
            if (i + 1 >= argc || !parseNumber(argv[i + 1], number))
                return usageError(std::string(arg) + " needs a number");
            ++i;
            if (arg == "--device")
                line.device = static_cast<int>(number);
            else if (arg == "--threads")
                line.threads = static_cast<int>(number);
            else
                line.iterations = number;
        } else if (line.command == "module" && line.file.empty() && !arg.empty() && arg[0] != '-') {
            line.file = arg;
        } else {
            return usageError("unexpected argument '" + std::string(arg) + "'");
        }
    }
    if (help) {
        if (first == 1)
            printUsage(stdout);
        else
            printCommandUsage(*command);
        return exitOk;
    }
    if (line.command == "module" && line.file.empty())
        return usageError("module needs a FILE (a .ptx, .cubin or .fatbin)");
    try {
        return command->run(line);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cuctx-inspect: internal error: %s\n", e.what());
        return exitInternal;
    }
}

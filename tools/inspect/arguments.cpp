#include "arguments.hpp"

#include "common/cli_numbers.hpp"
#include "format/report_format.hpp"
#include "query_fields.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>

namespace cuctx::tools {
namespace {

struct Command {
    const char* name;
    const char* synopsis; // after "cuctx-inspect NAME"
    const char* summary;
    const char* options; // its own options, one per line
};

const Command kCommands[] = {
    {"devices", "[--memory] [-i ID] [--query FIELDS [--format csv,...]] [--watch S]",
     "the driver and every device (the default command)",
     "  --memory        also measure free memory (activates each primary context)\n"
     "  -i ID[,ID]      only these devices (ordinals, UUIDs or prefixes, PCI bus ids)\n"
     "  --query FIELDS  print these comma-separated fields as CSV (--help-query\n"
     "                  lists them); --format csv[,noheader][,nounits]\n"
     "  --watch SECONDS print again every SECONDS until interrupted (Ctrl-C);\n"
     "                  --count N stops after N prints\n"},
    {"topology", "", "the peer-access matrix and P2P attributes between devices", ""},
    {"context", "[--device N] [--primary]",
     "make a context on a device (or retain its primary one) and show what it reports and what it cost",
     "  --device N      the device (default 0)\n"
     "  --primary       retain the primary context instead of creating one\n"},
    {"module", "[--device N] [--primary] [--] FILE",
     "load a PTX, cubin or fatbin and list its kernels with their attributes and occupancy; print the "
     "JIT's log when it does not load",
     "  --device N      the device to load it on (default 0)\n"
     "  --primary       load it into the primary context instead of a new one\n"},
    {"processes", "[-i ID] [--query FIELDS [--format csv,...]] [--watch S]",
     "every process with a context on each visible GPU (NVML), its memory, and strays from their binding",
     "  -i ID[,ID]      only these devices (ordinals, UUIDs or prefixes, PCI bus ids)\n"
     "  --query FIELDS  print these comma-separated fields as CSV (--help-query\n"
     "                  lists them); --format csv[,noheader][,nounits]\n"
     "  --watch SECONDS print again every SECONDS until interrupted (Ctrl-C);\n"
     "                  --count N stops after N prints\n"},
    {"doctor", "", "check the CUDA set-up; one line per finding with what to do about it", ""},
    {"bench", "[--device N] [--threads N] [--iterations N] [--csv]",
     "measure context switching, guards, launches and module loads here, raw driver against cuctx",
     "  --device N      the device (default 0)\n"
     "  --threads N     threads for the shared-context runs, 1 to 1024 (default:\n"
     "                  CPUs, 2-16)\n"
     "  --iterations N  per measurement, 100 to 10^9 (default 200000)\n"
     "  --csv           comma-separated values instead of the table\n"},
};

const char* const kCommon = "  --json          machine-readable output (docs/schema/inspect-*.schema.json)\n"
                            "  -v, --verbose   everything, not only the table\n"
                            "  -h, --help      this text; --version: cuctx's version\n";

const char* const kFooter = "\nA value follows its option ('--device 1' or '--device=1'); '--' ends them.\n"
                            "Environment: CUCTX_DRIVER_PATH (the libcuda to load), CUCTX_NVML_PATH (the\n"
                            "libnvidia-ml), CUDA_VISIBLE_DEVICES, CUCTX_LOG_LEVEL, NO_COLOR.\n"
                            "Exit status: 0 ok, 1 internal error, 2 usage, 3 no driver, 4 stub driver,\n"
                            "5 no device, 6 driver too old, 7 forked after CUDA init, 8 driver error,\n"
                            "9 the module did not load, 10 doctor found warnings, 11 doctor found errors,\n"
                            "12 bench could not start its threads, 13 NVML unavailable.\n";

const Command* find(const std::string& name)
{
    for (const Command& c : kCommands)
        if (name == c.name)
            return &c;
    return nullptr;
}

std::string usageLine(const Command& c)
{
    std::string usage = "usage: cuctx-inspect ";
    usage += c.name;
    if (c.synopsis[0] != '\0')
        usage += std::string(" ") + c.synopsis;
    usage += " [--json] [-v]";
    return detail::wrapText(usage, 80, 21);
}

std::string generalUsage()
{
    std::string text = "usage: cuctx-inspect [COMMAND] [OPTIONS]\n\n"
                       "Shows the CUDA driver, devices and contexts as cuctx sees them.\n\n";
    for (const Command& c : kCommands) {
        char head[24];
        std::snprintf(head, sizeof head, "  %-12s ", c.name);
        text += detail::wrapText(head + std::string(c.summary), 80, 15) + "\n";
    }
    text += "\nOptions of every command:\n";
    text += kCommon;
    text += "'cuctx-inspect COMMAND --help' shows a command's own options.\n";
    text += kFooter;
    return text;
}

std::string commandUsage(const Command& c)
{
    std::string summary = c.summary;
    summary[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(summary[0])));
    return usageLine(c) + "\n\n" + detail::wrapText(summary, 80, 0) + ".\n\nOptions:\n" + c.options + kCommon + kFooter;
}

ParsedArguments usageError(const std::string& what, const Command* command)
{
    ParsedArguments p;
    p.action = ParsedArguments::Action::usage;
    p.text = "cuctx-inspect: " + what + "\n";
    if (command != nullptr)
        p.text += usageLine(*command) + "\n";
    p.text += "('cuctx-inspect --help' lists the commands and options)\n";
    return p;
}

} // namespace

std::vector<std::string> commandNames()
{
    std::vector<std::string> names;
    for (const Command& c : kCommands)
        names.emplace_back(c.name);
    return names;
}

ParsedArguments parseArguments(const std::vector<std::string>& args)
{
    ParsedArguments p;
    CommandLine& line = p.line;
    // No command, or options first: the default command, and --help shows the general usage.
    const bool implicit = args.empty() || (!args[0].empty() && args[0][0] == '-');
    const Command* command = implicit ? &kCommands[0] : find(args[0]);
    if (command == nullptr)
        return usageError("unknown command '" + args[0] + "'", nullptr);
    line.command = command->name;

    bool help = false;
    bool version = false;
    CLI::App app("", "cuctx-inspect " + line.command);
    app.set_help_flag(); // the help is ours (--help below), in the documented form
    app.add_flag("--json", line.json);
    app.add_flag("-v,--verbose", line.verbose);
    app.add_flag("-h,--help", help);
    app.add_flag("--version", version);
    const std::string name = line.command;
    const CLI::Validator device = wholeNumber(0, INT_MAX);
    if (name == "devices")
        app.add_flag("--memory", line.memory);
    bool helpQuery = false;
    if (name == "devices" || name == "processes") {
        app.add_option("-i,--id", line.select);
        app.add_option("--query", line.query);
        app.add_option("--format", line.format);
        app.add_option("--watch", line.watch)->transform(realNumber(0.001, 86400));
        app.add_option("--count", line.count)->transform(wholeNumber(1, kMaxBenchIterations));
        app.add_flag("--help-query", helpQuery);
    }
    if (name == "context" || name == "module") {
        app.add_option("--device", line.device)->transform(device);
        app.add_flag("--primary", line.primary);
    }
    if (name == "module")
        app.add_option("FILE", line.file);
    if (name == "bench") {
        app.add_option("--device", line.device)->transform(device);
        app.add_option("--threads", line.threads)->transform(wholeNumber(1, kMaxBenchThreads));
        app.add_option("--iterations", line.iterations)
            ->transform(wholeNumber(kMinBenchIterations, kMaxBenchIterations));
        app.add_flag("--csv", line.csv);
    }
    std::vector<std::string> reversed(args.rbegin(), args.rend() - (implicit ? 0 : 1)); // CLI11 takes them reversed
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& e) {
        return usageError(e.what(), command);
    }
    if (helpQuery) {
        p.action = ParsedArguments::Action::help;
        p.text = "Fields of cuctx-inspect " + name + " --query (nounits drops the units):\n";
        for (const QueryField& f : queryFields(name)) {
            char row[96];
            std::snprintf(row, sizeof row, "  %-22s %s%s%s%s\n", f.name, f.help, f.unit[0] ? " [" : "", f.unit,
                          f.unit[0] ? "]" : "");
            p.text += row;
        }
        return p;
    }
    if (!line.format.empty() && line.query.empty())
        return usageError("--format goes with --query", command);
    if (!line.query.empty()) {
        Query q;
        if (const auto problem = parseQuery(name, line.query, line.format.empty() ? "csv" : line.format, q))
            return usageError(*problem, command);
    }
    if (line.count > 0 && line.watch <= 0)
        return usageError("--count goes with --watch", command);
    if (help) {
        p.action = ParsedArguments::Action::help;
        p.text = implicit ? generalUsage() : commandUsage(*command);
    } else if (version) {
        p.action = ParsedArguments::Action::version;
    } else if (name == "module" && line.file.empty()) {
        return usageError("module needs a FILE (a .ptx, .cubin or .fatbin)", command);
    }
    return p;
}

} // namespace cuctx::tools

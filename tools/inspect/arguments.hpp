#pragma once

// cuctx-inspect's command line: the commands, their options, and parsing (CLI11) into a CommandLine.
// Parsing touches no driver and prints nothing, so that the fuzzer (test/fuzz/) can call it.

#include <string>
#include <vector>

namespace cuctx::tools {

inline constexpr int kMaxBenchThreads = 1024;              ///< bench --threads: 1 to this
inline constexpr long kMaxBenchIterations = 1'000'000'000; ///< bench --iterations: 100 to this
inline constexpr long kMinBenchIterations = 100;

struct CommandLine {
    std::string command = "devices";
    bool json = false;
    bool csv = false;
    bool verbose = false;
    bool memory = false;  ///< devices: measure free memory
    bool primary = false; ///< module, context: the primary context instead of a new one
    int device = 0;       ///< module, context, bench: from 0 (the driver's count is checked when it runs)
    int threads = 0;      ///< bench: 0 = not given (up to 16, as many as the machine has)
    long iterations = 0;  ///< bench: 0 = not given (the default)
    std::string file;     ///< module
    std::string select;   ///< devices, processes: -i, the devices to show ("" = all)
    std::string query;    ///< devices, processes: --query FIELDS ("" = the table)
    std::string format;   ///< with --query: "csv[,noheader][,nounits]" ("" = csv)
    double watch = 0;     ///< devices, processes: --watch SECONDS (0 = print once)
    long count = 0;       ///< with --watch: stop after this many prints (0 = until interrupted)
};

struct ParsedArguments {
    enum class Action {
        run,     ///< run `line`
        help,    ///< print `text` on stdout, exit 0
        version, ///< print the version on stdout, exit 0
        usage,   ///< print `text` on stderr, exit 2 (exitUsage)
    };
    Action action = Action::run;
    CommandLine line;
    std::string text; ///< the help, or the error with the command's usage line
};

/// The command names, in the order --help lists them.
std::vector<std::string> commandNames();

/// Parses the arguments after the program's name. Never throws for any input but std::bad_alloc.
ParsedArguments parseArguments(const std::vector<std::string>& args);

} // namespace cuctx::tools

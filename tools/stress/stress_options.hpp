#pragma once

// cuctx-stress's command line, parsed with CLI11. Parsing touches no driver and prints nothing, so
// that the fuzzer (test/fuzz/) can call it.

#include <string>
#include <vector>

namespace cuctx::tools {

inline constexpr unsigned kMaxStressThreads = 1024; ///< --threads: 1 to this
inline constexpr double kMaxStressSeconds = 7 * 24 * 3600.0;
inline constexpr long kMaxStressOps = 1'000'000'000'000; ///< per thread; times 1024 threads fits a long

enum class Bug { none, wrongRestore, noPop };

struct StressOptions {
    unsigned threads = 0; ///< 0: not given (the number of cores, at most kMaxStressThreads)
    double seconds = 10;
    long ops = 0; ///< per thread; 0: run for `seconds`
    unsigned long seed = 1;
    int contexts = 3;
    long churnIntervalMs = 1000;
    std::string ptx;
    bool json = false;
    Bug bug = Bug::none;
};

struct ParsedStressOptions {
    enum class Action {
        run,   ///< run with `options`
        help,  ///< print `text` on stdout, exit 0
        usage, ///< print `text` on stderr, exit 2
    };
    Action action = Action::run;
    StressOptions options;
    std::string text;
};

/// Parses the arguments after the program's name; `options.ptx` starts as `defaultPtx`. Never
/// throws for any input but std::bad_alloc.
ParsedStressOptions parseStressOptions(const std::vector<std::string>& args, const std::string& defaultPtx);

} // namespace cuctx::tools

#include "stress_options.hpp"

#include "common/cli_numbers.hpp"

#include <CLI/CLI.hpp>

#include <climits>
#include <map>

namespace cuctx::tools {
namespace {

const char* const kUsage = "usage: cuctx-stress [--threads N] [--seconds S | --ops N] [--seed N]\n"
                           "                    [--contexts N] [--churn-interval-ms N] [--ptx FILE] [--json]\n"
                           "                    [--inject-bug wrong-restore|no-pop]\n";

const char* const kHelp = "\nN threads run a seeded, reproducible mix of cuctx operations against a few\n"
                          "shared contexts, then check invariants (docs/stress.md).\n\n"
                          "Options:\n"
                          "  --threads N            worker threads, 1 to 1024 (default: one per core)\n"
                          "  --seconds S            run this long, above 0, at most a week (default 10)\n"
                          "  --ops N                instead: N operations per thread, 1 to 10^12\n"
                          "  --seed N               the generators' seed, 0 to 2^63-1 (default 1)\n"
                          "  --contexts N           shared contexts, 1 to 64 (default 3)\n"
                          "  --churn-interval-ms N  at most one churn per N ms, 0 to 3600000 (default 1000)\n"
                          "  --ptx FILE             the kernels (default: the installed kernels.ptx)\n"
                          "  --json                 the summary as JSON\n"
                          "  --inject-bug KIND      a broken guard to catch: wrong-restore or no-pop\n"
                          "  -h, --help             this text\n"
                          "A value follows its option ('--threads 4' or '--threads=4'); '--' ends them.\n"
                          "Exit status: 0 no violation, 1 violations, 2 usage, 3 no driver,\n"
                          "4 the run could not be carried out (a thread could not be started).\n";

ParsedStressOptions usageError(const std::string& what)
{
    ParsedStressOptions p;
    p.action = ParsedStressOptions::Action::usage;
    p.text = "cuctx-stress: " + what + "\n" + kUsage + "('cuctx-stress --help' says more)\n";
    return p;
}

} // namespace

ParsedStressOptions parseStressOptions(const std::vector<std::string>& args, const std::string& defaultPtx)
{
    ParsedStressOptions p;
    StressOptions& o = p.options;
    o.ptx = defaultPtx;
    bool help = false;
    std::string bug;
    CLI::App app("", "cuctx-stress");
    app.set_help_flag(); // ours, on stdout (kHelp)
    app.add_flag("-h,--help", help);
    app.add_option("--threads", o.threads)->transform(wholeNumber(1, kMaxStressThreads));
    CLI::Option* seconds = app.add_option("--seconds", o.seconds)->check(realNumber(1e-3, kMaxStressSeconds));
    app.add_option("--ops", o.ops)->transform(wholeNumber(1, kMaxStressOps))->excludes(seconds);
    app.add_option("--seed", o.seed)->transform(wholeNumber(0, LLONG_MAX));
    app.add_option("--contexts", o.contexts)->transform(wholeNumber(1, 64));
    app.add_option("--churn-interval-ms", o.churnIntervalMs)->transform(wholeNumber(0, 3'600'000));
    app.add_option("--ptx", o.ptx);
    app.add_flag("--json", o.json);
    app.add_option("--inject-bug", bug)->check(CLI::IsMember({"wrong-restore", "no-pop"}));
    std::vector<std::string> reversed(args.rbegin(), args.rend()); // CLI11 takes them reversed
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& e) {
        return usageError(e.what());
    }
    if (help) {
        p.action = ParsedStressOptions::Action::help;
        p.text = std::string(kUsage) + kHelp;
        return p;
    }
    if (bug == "wrong-restore")
        o.bug = Bug::wrongRestore;
    else if (bug == "no-pop")
        o.bug = Bug::noPop;
    if (o.ptx.empty())
        return usageError("--ptx needs a file");
    return p;
}

} // namespace cuctx::tools

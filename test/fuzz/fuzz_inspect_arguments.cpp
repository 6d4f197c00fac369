// libFuzzer: cuctx-inspect's command-line parsing. The input is the arguments, separated by NUL
// bytes. Parsing must never throw, and what it accepts must be within the documented ranges.

#include "fuzz_target.hpp"

#include "arguments.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::vector<std::string> args = cuctx::fuzz::splitArguments(data, size);
    using cuctx::tools::ParsedArguments;
    const ParsedArguments p = cuctx::tools::parseArguments(args);
    if (p.action == ParsedArguments::Action::run) {
        const auto& l = p.line;
        if (l.device < 0 || l.threads < 0 || l.threads > cuctx::tools::kMaxBenchThreads ||
            (l.iterations != 0 &&
             (l.iterations < cuctx::tools::kMinBenchIterations || l.iterations > cuctx::tools::kMaxBenchIterations)) ||
            (l.command == "module" && l.file.empty()))
            std::abort();
    } else if (p.text.empty() && p.action != ParsedArguments::Action::version) {
        std::abort(); // help and usage errors always say something
    }
    return 0;
}

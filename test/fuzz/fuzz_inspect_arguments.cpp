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
    std::vector<std::string> args(1);
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == 0)
            args.emplace_back();
        else
            args.back() += static_cast<char>(data[i]);
    }
    if (size == 0)
        args.clear();
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

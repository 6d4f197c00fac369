// libFuzzer: cuctx-stress's command-line parsing (arguments separated by NUL bytes). Never throws;
// what it accepts is within the documented ranges (a run that always ends).

#include "fuzz_target.hpp"

#include "stress_options.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::vector<std::string> args = cuctx::fuzz::splitArguments(data, size);
    using cuctx::tools::ParsedStressOptions;
    const ParsedStressOptions p = cuctx::tools::parseStressOptions(args, "kernels.ptx");
    if (p.action == ParsedStressOptions::Action::run) {
        const auto& o = p.options;
        if (o.threads > cuctx::tools::kMaxStressThreads || !std::isfinite(o.seconds) || o.seconds <= 0 ||
            o.seconds > cuctx::tools::kMaxStressSeconds || o.ops < 0 || o.ops > cuctx::tools::kMaxStressOps ||
            o.contexts < 1 || o.churnIntervalMs < 0 || o.ptx.empty())
            std::abort();
    } else if (p.text.empty()) {
        std::abort();
    }
    return 0;
}

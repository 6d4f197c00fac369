// libFuzzer: the environment parsers (CUDA_VISIBLE_DEVICES, the local-rank variables, the JIT cache
// variables, CUCTX_LOG_LEVEL). Never crash; results agree with the rules. (bindRank itself needs
// cuctx::Error, which clang 14 cannot compile: its unit tests cover it.)

#include "fuzz_target.hpp"

#include "log/log_level.hpp"
#include "process/environment.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace cuctx::detail;
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const VisibleDevices v = parseVisibleDevices(input);
    if (v.used.size() > v.entries.size() || (v.stoppedAt && *v.stoppedAt != v.used.size()))
        std::abort();
    for (const std::string& e : v.used)
        if (e.empty() || !isVisibleDeviceEntry(e))
            std::abort();
    if (const auto rank = parseLocalRank(input); rank && *rank < 0)
        std::abort();
    (void)parseCacheMaxSize(input);
    (void)cacheDisabled(input);
    (void)parseLogLevel(input);
    return 0;
}

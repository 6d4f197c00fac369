#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The environment variables cuctx reads the way the driver (or a launcher) reads them: small pure
// functions, so that bindRank, diagnose() and the fuzzers (test/fuzz/) agree on every input.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuctx::detail {

/// Whether the driver takes `entry` of CUDA_VISIBLE_DEVICES as a device: a decimal index, or a
/// UUID ("GPU-...", "MIG-..."). An empty entry is not one.
bool isVisibleDeviceEntry(std::string_view entry) noexcept;

/// CUDA_VISIBLE_DEVICES as the driver reads it: it stops at the first entry that is not a device
/// (an empty one included) and uses the entries before it.
struct VisibleDevices {
    std::vector<std::string> entries;     ///< every entry as written ("0,,1": "0", "", "1")
    std::vector<std::string> used;        ///< the entries the driver uses, in order
    std::optional<std::size_t> stoppedAt; ///< the index in `entries` of the one it stops at
};
VisibleDevices parseVisibleDevices(std::string_view value);

/// A local-rank variable's value (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID...): a decimal number
/// from 0 that fits an int, nothing else.
std::optional<int> parseLocalRank(std::string_view text) noexcept;

/// CUDA_CACHE_MAXSIZE: a decimal number of bytes (no sign, no spaces), nothing else.
std::optional<std::uint64_t> parseCacheMaxSize(std::string_view text) noexcept;

/// CUDA_CACHE_DISABLE: the driver disables its JIT cache for "1" only.
bool cacheDisabled(std::string_view text) noexcept;

} // namespace cuctx::detail

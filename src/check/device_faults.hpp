// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// Poisoned devices: the first sticky fault seen on a device marks it for the rest of the process
// (docs/faults.md). Reading whether a device is poisoned is one relaxed load of a process-wide word,
// so that every cuctx entry point can afford it.

#include "check/check.hpp"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace cuctx::detail {

/// Bit i: device ordinal i is poisoned; bit 63 also stands for every ordinal above 63.
extern std::atomic<std::uint64_t> g_poisonedDevices;

inline bool maybePoisoned(int ordinal) noexcept
{
    if (ordinal < 0)
        return false;
    const std::uint64_t bit = std::uint64_t{1} << (ordinal < 63 ? ordinal : 63);
    return (g_poisonedDevices.load(std::memory_order_relaxed) & bit) != 0;
}

/// Whether device `ordinal` is poisoned (exact, for ordinals above 63 too).
bool devicePoisoned(int ordinal) noexcept;

/// Throws Errc::device_poisoned for `call` on `subject`, naming the device's first fault.
[[noreturn, gnu::cold]] void throwPoisoned(int ordinal, const char* call, const Subject& subject, SourceLocation where,
                                           int resultSeen = 0);

/// Fails fast when device `ordinal` is poisoned: one relaxed load when it is not.
inline void failIfPoisoned(int ordinal, const char* call, const Subject& subject,
                           SourceLocation where = SourceLocation::current())
{
    if (maybePoisoned(ordinal)) [[unlikely]]
        if (devicePoisoned(ordinal))
            throwPoisoned(ordinal, call, subject, where);
}

/// Where the suspects of a fault come from: the launch journal (src/context/launch_journal.cpp)
/// registers a function giving the launches on device `ordinal` not yet synchronised, oldest first.
/// It must not throw, and must take no lock of cuctx but its own.
using SuspectsProvider = std::vector<std::string> (*)(int ordinal) noexcept;
void setSuspectsProvider(SuspectsProvider provider) noexcept;

/// Called by the checking layer for a sticky `result`: records the first fault of the device (with
/// the suspects), or throws Errc::device_poisoned when the device was poisoned already. Returns the
/// suspects of the fault just recorded (the caller puts them in its Error).
std::vector<std::string> recordFault(int ordinal, int result, const char* call, const Subject& subject,
                                     SourceLocation where);

/// Forgets every fault (cuctx::testing::forgetDeviceFaults, for test doubles).
void forgetFaults() noexcept;

} // namespace cuctx::detail

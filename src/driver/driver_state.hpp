// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The process-wide driver: loaded once, then reached through one atomic pointer.

#include "driver/driver_api.hpp"

#include "cuctx/source_location.hpp"
#include <atomic>

namespace cuctx::detail {

extern std::atomic<const DriverApi*> g_activeApi;

[[gnu::cold]] const DriverApi& loadActiveApi(const char* who, SourceLocation where);

/// What the driver layer tells the layer above it (the guard's inline dispatch, src/context/): the
/// driver was loaded (or its table replaced, by the testing hooks), or this is a child forked after
/// CUDA was initialised (then from the atfork handler: the listener may only store atomics).
enum class DriverEvent { loaded, forkedChild };
using DriverListener = void (*)(DriverEvent) noexcept;
/// Sets the one listener, once, during static initialisation.
void setDriverListener(DriverListener listener) noexcept;
/// Tells the listener that the active table changed (the testing hooks swap it).
void notifyDriverReplaced() noexcept;

/// The loaded driver's table; loads it on first use (throws Error). After a fork in a process that
/// had initialised CUDA the pointer is cleared, so the next call reports the fork, naming `who` (the
/// cuctx function the user called; where none is given, the error names the place of the call).
inline const DriverApi& api(const char* who = nullptr, SourceLocation where = SourceLocation::current())
{
    if (const DriverApi* p = g_activeApi.load(std::memory_order_acquire)) [[likely]]
        return *p;
    return loadActiveApi(who, where);
}

/// Throws Errc::driver_too_old, naming the CUDA version the entry needs and the driver's, when an
/// Optional entry (`field` of DriverApi) is missing from the installed driver.
void requireEntry(const void* entry, const char* field, SourceLocation where = SourceLocation::current());

} // namespace cuctx::detail

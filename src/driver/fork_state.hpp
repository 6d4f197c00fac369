// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// Fork detection: a child forked after its parent initialised CUDA gets CUDA_ERROR_NOT_INITIALIZED
// from every call, cuInit included (driver-facts.md). cuctx notices before calling the driver.

#include <sys/types.h>

#include "cuctx/source_location.hpp"

namespace cuctx::detail {

/// Records that this process initialised CUDA (its pid) and arms the pthread_atfork child handler,
/// which runs `onChild` in the child (the driver layer drops its table there).
void noteDriverInitialised(void (*onChild)()) noexcept;

/// Whether this process is a child forked after CUDA was initialised in its parent: set by the
/// atfork handler, or seen by comparing getpid() with the pid that initialised (which also catches
/// children made without running atfork handlers).
bool forkedAfterInit() noexcept;

/// The pid that initialised CUDA, 0 if none did through cuctx.
pid_t initialisingPid() noexcept;

/// Throws Errc::forked_after_init for `call`, made at `where`.
[[noreturn]] void throwForkedAfterInit(const char* call, SourceLocation where = SourceLocation::current());

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The inline guard's dispatch (g_push and g_pop in cuctx/detail/thread_record.hpp): the driver's push
// and pop, or the diversions that send the guard out of line. The layers below (the driver loader,
// the log level) do not know it exists: they tell it of a change through the listeners it sets at
// static initialisation, and it reads what it needs from them.

namespace cuctx::detail {

/// Points the inline guard's push and pop at the driver or at the diversions, by the loaded driver,
/// the log level and the fence mode: called when any of them changes. Takes a mutex, so that the last
/// caller sees the latest state whatever the order of concurrent changes.
void refreshInlineDriver() noexcept;

} // namespace cuctx::detail

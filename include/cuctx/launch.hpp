// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::launch: a type-safe kernel launch.

#include "cuctx/export.hpp"
#include "cuctx/function.hpp"
#include "cuctx/launch_config.hpp"
#include "cuctx/source_location.hpp"

#include <cstddef>
#include <type_traits>

namespace cuctx {

namespace detail {
/// The kernel of a launch and where the caller launched it from (for the launch journal): converts
/// from a Function, capturing the caller's source location as a default argument does.
struct LaunchSite {
    LaunchSite(const Function& f, SourceLocation at = SourceLocation::current()) noexcept // NOLINT: converts
        : function(f), where(at)
    {
    }
    const Function& function;
    SourceLocation where;
};

/// Checks the arguments against the kernel's parameters (count and sizes, where the driver reports
/// them), enters the function's context (no driver call when it is current) and launches.
CUCTX_API void launchPacked(const LaunchSite& site, const LaunchConfig& config, void** arguments,
                            const std::size_t* sizes, std::size_t count);

template <typename T>
constexpr bool launchableArgument = std::is_trivially_copyable_v<T> && !std::is_array_v<T> &&
                                    !std::is_same_v<T, Function> && !std::is_member_pointer_v<T>;
} // namespace detail

/// Launches `function` with `config`, passing `arguments` by value, in order. Each must be trivially
/// copyable (device pointers, scalars, plain structs): checked at compile time. Their number and
/// sizes are checked against the kernel's parameters where the driver reports them (CUDA 12.4+), so
/// that a `double` passed for a `float`, or a missing argument, is an error naming the kernel and
/// the argument instead of a kernel reading garbage.
///
/// \par Threading
/// Thread-safe, as the driver's launch is: it enters the function's context on the calling thread (no
/// driver call when it is current; Errc::context_busy for a green context entered on another thread).
///
/// A successful launch is recorded in its context's launch journal (kernel, grid, block, stream,
/// thread and the caller's source location: cuctx/launch_journal.hpp), a few stores, so that a sticky
/// fault surfacing later names it as a suspect. On a poisoned device it throws Errc::device_poisoned.
template <typename... Args>
void launch(detail::LaunchSite function, const LaunchConfig& config, const Args&... arguments)
{
    static_assert((detail::launchableArgument<Args> && ...),
                  "cuctx::launch: kernel arguments are copied bytewise: each must be trivially copyable "
                  "(a device pointer, a scalar or a plain struct), not an array, a member pointer or a Function");
    if constexpr (sizeof...(Args) == 0) {
        detail::launchPacked(function, config, nullptr, nullptr, 0);
    } else {
        void* packed[] = {const_cast<void*>(static_cast<const void*>(&arguments))...};
        static constexpr std::size_t sizes[] = {sizeof(Args)...};
        detail::launchPacked(function, config, packed, sizes, sizeof...(Args));
    }
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// CUCTX_API: what libcuctx exports.

#if defined(__GNUC__) || defined(__clang__)
/// Marks what libcuctx exports: the public API, and the few internals that ContextGuard's inline
/// code reaches (detail::t_record, g_push, g_pop, leftFlaggedContext...). The library is built with hidden
/// visibility, so anything without it stays inside the library. Programs that link the static
/// library see the same declarations; the attribute changes nothing for them.
#define CUCTX_API __attribute__((visibility("default")))
#else
#define CUCTX_API
#endif

// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The per-context module cache: modules keyed by image bytes (found by digest) and JIT-option fingerprint, shared
// by every thread that uses the context, and indexed by ModuleImage id for hits that read no bytes.
// Thread-safe. A context owns its cache (ContextState's moduleCache); it is destroyed (modules
// unloaded) just before the context is.

#include "cuctx/jit_options.hpp"
#include "cuctx/module_image.hpp"

#include "context/context_state.hpp"
#include "module/module_state.hpp"

#include <memory>
#include <span>
#include <string>

namespace cuctx::detail {

/// The bytes of `image` that make the module, which the cache compares: a PTX text up to its first
/// NUL (the driver reads it as a C string), anything else whole.
std::span<const std::byte> cacheBytes(std::span<const std::byte> image) noexcept;

/// The cached module for `image` and `options` in `context`, loading it if no thread has yet. An
/// entry is found by digest and then compared byte for byte, so that it never returns a module of
/// other bytes: the cache keeps a copy of each image it holds a module for.
/// Concurrent first requests load once: the others wait for that load and share its module; if it
/// fails, each waiter tries again itself (and gets its own error).
std::shared_ptr<ModuleState> cachedModule(const Context& context, std::span<const std::byte> image,
                                          const JitOptions& options, const std::string& label);

/// The cached module of `image` in `context`, as above on its first request in this context (the
/// bytes compared, then the image's id indexed); later requests find it by id alone: no lock, no
/// write, O(1). The module stays loaded, and the reference valid, until the context is destroyed
/// (clearCache included); the cache's handle does not keep the context alive.
const Module& cachedModule(const Context& context, const ModuleImage& image);

std::size_t moduleCacheSize(ContextState& context) noexcept;
void clearModuleCache(ContextState& context) noexcept;

/// The context's destroy hook (setContextDestroyHook), before the driver object goes: unloads what
/// the cache held.
void destroyModuleCache(ContextState& context) noexcept;

} // namespace cuctx::detail

#pragma once

// The per-context module cache: modules keyed by image digest and JIT-option fingerprint, shared
// by every thread that uses the context. Thread-safe. A context owns its cache (ContextState's
// moduleCache); it is emptied (modules unloaded) just before the context is destroyed.

#include "cuctx/jit_options.hpp"

#include "context/context_state.hpp"
#include "module/module_state.hpp"

#include <memory>
#include <span>
#include <string>

namespace cuctx::detail {

/// The cached module for `image` and `options` in `context`, loading it if no thread has yet.
/// Concurrent first requests load once: the others wait for that load and share its module; if it
/// fails, each waiter tries again itself (and gets its own error).
std::shared_ptr<ModuleState> cachedModule(const Context& context, std::span<const std::byte> image,
                                          const JitOptions& options, const std::string& label);

std::size_t moduleCacheSize(ContextState& context) noexcept;
void clearModuleCache(ContextState& context) noexcept;

/// From the context's destruction, before the driver object goes: unloads what the cache held.
void destroyModuleCache(ContextState& context) noexcept;

} // namespace cuctx::detail

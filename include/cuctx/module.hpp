// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::Module: a PTX, cubin or fatbin image loaded into one context, and its per-context cache.

#include "cuctx/context.hpp"
#include "cuctx/export.hpp"
#include "cuctx/function.hpp"
#include "cuctx/image_kind.hpp"
#include "cuctx/jit_options.hpp"
#include "cuctx/module_image.hpp"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuctx {

namespace detail {
struct ModuleState;
}

/// How the driver loads a module's kernels (CUDA_MODULE_LOADING): lazily at first use (the default
/// since CUDA 12.2), or all at load time.
enum class ModuleLoadingMode { lazy, eager, unknown };

/// A module-scope __device__ or __constant__ variable (cuModuleGetGlobal). A value type.
struct ModuleGlobal {
    CUdeviceptr address = 0; ///< its device address
    std::size_t bytes = 0;   ///< its size
};

/// A PTX, cubin or fatbin image loaded into one context. Shared ownership: the last handle (a
/// Module, or a Function of it) unloads it with its context current, whichever thread that is
/// (inside a stream host callback, where the driver refuses that, later: see Stream::hostCallback);
/// a Module keeps its context alive.
///
/// \par Threading
/// Thread-safe shared handle (a loaded module does not change): every member may be called from any
/// thread, and handles copied and dropped on any threads at once. The module cache (cached(),
/// cachedFile()) is shared by every thread of the process: concurrent first requests load once.
class CUCTX_API Module {
public:
    Module() = default;                  ///< empty
    Module(const Module&) = default;     ///< another handle of the same module
    Module(Module&&) noexcept = default; ///< takes over the handle; the source is left empty
    /// Assignments let go of the module held before, then of its context handle (which may be the
    /// last one): the unload needs the context, as in the destructor.
    Module& operator=(const Module& other);
    /// The same, taking over `other`'s handle; `other` is left empty.
    Module& operator=(Module&& other) noexcept;
    ~Module() = default; ///< drops this handle (the last one unloads); never throws

    /// The largest module file fromFile, cachedFile and Library::fromFile read: 1 GiB (the largest
    /// fatbins of CUDA's own libraries are a few hundred MiB).
    static constexpr std::uintmax_t kMaxImageFileBytes = std::uintmax_t{1} << 30;

    /// Loads a file (PTX, cubin or fatbin, told from its content) into `context`. The file name is
    /// the module's label in errors. Only a regular file (or a link to one) of at most
    /// kMaxImageFileBytes is read: anything else (a directory, a FIFO, a device) is an Error of
    /// Errc::invalid_argument naming the file, before anything is read or loaded.
    static Module fromFile(const Context& context, const std::filesystem::path& path, const JitOptions& options = {});
    /// Loads an image from memory; `label` names it in errors and logs.
    static Module fromImage(const Context& context, std::span<const std::byte> image, const JitOptions& options = {},
                            std::string_view label = "image");
    /// Loads PTX text (fromImage over its bytes).
    static Module fromPtx(const Context& context, std::string_view ptx, const JitOptions& options = {},
                          std::string_view label = "ptx");

    /// The module of `image` (its bytes and options) in `context`, loaded once and shared by every
    /// thread of the process: concurrent first requests load it once and all get the same module.
    /// The image's first request in the context compares its bytes with those of the module it
    /// finds (a digest match alone proves nothing), so two images of other bytes never share a
    /// module, and two of the same bytes and code-changing options do; later requests find the
    /// module by the image's identity alone: no lock, no write to memory other threads read, the
    /// same cost at any image size (docs/modules.md). The reference stays valid, and the module
    /// loaded, until the context is destroyed, clearCache() included (a later request after
    /// clearCache loads anew); the cache does not keep the context alive, so the caller's Context
    /// handle does. A copy of the Module is an ordinary handle that keeps its context alive.
    static const Module& cached(const Context& context, const ModuleImage& image);
    /// The same, from bytes given per call: each call digests and compares the whole image (O(image
    /// size)) and returns a new handle (two atomic increments on lines every thread shares). Hot
    /// paths should make a ModuleImage once and use cached(context, image). A hit is for the same
    /// bytes (a PTX up to its first NUL) and code-changing options. The cache keeps its modules,
    /// and a copy of their images, until clearCache() or the context's destruction.
    static Module cached(const Context& context, std::span<const std::byte> image, const JitOptions& options = {},
                         std::string_view label = "image");
    /// cached() over a file's bytes (read as fromFile reads them), labelled with its name.
    static Module cachedFile(const Context& context, const std::filesystem::path& path, const JitOptions& options = {});
    /// How many modules `context`'s cache holds.
    static std::size_t cacheSize(const Context& context);
    /// Empties `context`'s cache: later requests load anew. A module of cached(context, span) that
    /// nobody else holds is unloaded; one that cached(context, ModuleImage) handed out stays loaded
    /// (references to it may exist) until the context is destroyed. A load in progress finishes,
    /// outside the cache.
    static void clearCache(const Context& context);
    /// The driver's loading mode (cuModuleGetLoadingMode); unknown where the driver cannot say.
    static ModuleLoadingMode loadingMode();
    /// Modules cuctx has loaded and not yet unloaded, in every context (for leak checks).
    static long loadedCount() noexcept;

    /// Whether it refers to a loaded module (false when default-constructed or moved from).
    explicit operator bool() const noexcept { return state_ != nullptr; }

    /// The kernel `name`; an error that lists the module's kernels when there is none of that name.
    Function function(std::string_view name) const;
    /// The module's kernels (cuModuleEnumerateFunctions, CUDA 12.4+).
    std::vector<std::string> kernelNames() const;
    /// The module-scope variable `name` (cuModuleGetGlobal); an error naming the module when there
    /// is none.
    ModuleGlobal global(std::string_view name) const;
    /// Loads every kernel now (cuFuncLoad): what JitOptions::loadAllKernels does at load time.
    void loadAllKernels() const;

    /// What the image was: PTX, cubin or fatbin.
    ImageKind kind() const;
    /// The file name, or what the caller named the image.
    const std::string& label() const;
    /// The JIT's info log of the load (empty for a cubin, or when the JIT said nothing).
    const std::string& infoLog() const;
    /// What loading cost, wall clock, in milliseconds.
    double loadMilliseconds() const;
    /// The context the module is loaded in.
    const Context& context() const;
    /// The driver's handle.
    CUmodule native() const;

private:
    friend struct detail::ModuleState;
    Module(Context context, std::shared_ptr<detail::ModuleState> state) noexcept;
    detail::ModuleState& state(const char* call) const;

    Context context_; // declared first: outlives state_ when both go
    std::shared_ptr<detail::ModuleState> state_;
};

} // namespace cuctx

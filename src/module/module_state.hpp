// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// What stands behind Module, Function and Library handles.

#include "cuctx/function.hpp"
#include "cuctx/image_kind.hpp"
#include "cuctx/module.hpp"

#include "check/check.hpp"
#include "context/context_access.hpp"
#include "context/context_state.hpp"

#include <cuda.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cuctx::detail {

/// A loaded module. It does not own its context (the module cache, which the context owns, holds
/// modules too), so whoever drops the last reference keeps the context alive while it does: a
/// Module or Function handle holds a Context, and the cache is emptied before its context goes.
struct ModuleState {
    CUmodule module = nullptr;
    ContextState* context = nullptr;
    std::string label;
    ImageKind kind = ImageKind::unknown;
    std::string infoLog;
    double loadMilliseconds = 0;

    ModuleState() = default;
    ModuleState(const ModuleState&) = delete;
    ModuleState& operator=(const ModuleState&) = delete;
    ~ModuleState(); // unloads, with the context current

    static Module handle(Context context, std::shared_ptr<ModuleState> state)
    {
        return Module(std::move(context), std::move(state));
    }
    static const std::shared_ptr<ModuleState>& of(const Module& module) noexcept { return module.state_; }
    /// A handle whose Context counts no owner of `context`, for the module cache's own handles: the
    /// context owns its cache, so a counted handle there would keep the context alive for ever. Its
    /// copies are ordinary (counted) handles. Drop it with releaseUncounted, never by destruction.
    static Module uncountedHandle(ContextState& context, std::shared_ptr<ModuleState> state) noexcept
    {
        return Module(ContextAccess::fromCountedState(&context), std::move(state));
    }
    static void releaseUncounted(Module& module) noexcept
    {
        module.state_.reset();
        (void)ContextAccess::release(module.context_);
    }
};

/// Loads an image (already checked) into `context`, with fresh JIT option arrays. Throws an Error
/// carrying the JIT error log on failure; leaves nothing loaded then.
std::shared_ptr<ModuleState> loadModule(const Context& context, std::span<const std::byte> image, ImageKind kind,
                                        const JitOptions& options, const std::string& label);

/// Checks an image (empty, unknown kind, truncated) and loads it.
std::shared_ptr<ModuleState> loadCheckedImage(const Context& context, std::span<const std::byte> image,
                                              const JitOptions& options, const std::string& label);

/// The module's kernels (cuModuleEnumerateFunctions, CUDA 12.4+), with its context current.
std::vector<CUfunction> moduleFunctions(const ModuleState& state);

/// "a, b, c" from `names`, "none", or a note that the driver cannot list them.
std::string kernelList(const std::function<std::vector<std::string>()>& names);

/// A regular file's bytes (at most Module::kMaxImageFileBytes); an Error of invalid_argument
/// naming the file for anything else, or when it cannot be read.
std::vector<std::byte> readImageFile(const std::filesystem::path& path, const char* call);

struct LibraryState {
    CUlibrary library = nullptr;
    std::string label;
    std::string infoLog;

    LibraryState() = default;
    LibraryState(const LibraryState&) = delete;
    LibraryState& operator=(const LibraryState&) = delete;
    ~LibraryState();
};

struct FunctionData {
    Context context;                   // declared first: outlives the owner below
    std::shared_ptr<const void> owner; // the ModuleState or LibraryState that keeps the code loaded
    CUfunction function = nullptr;
    std::string name;
    std::string label;
    std::optional<std::vector<ParamInfo>> parameters;
    const char* journalName = nullptr; // "kernel 'name' of 'label'", interned for the launch journal

    static Function handle(std::shared_ptr<const FunctionData> data) { return Function(std::move(data)); }
    static const FunctionData* of(const Function& function) noexcept { return function.data_.get(); }
};

/// Builds the Function of a kernel handle (reads its parameter layout where the driver can).
Function makeFunction(const Context& context, std::shared_ptr<const void> owner, CUfunction function, std::string name,
                      std::string label);

/// The Subject of errors about a module or kernel: its label or name, in its context.
Subject moduleSubject(const ContextState& context, const std::string& name) noexcept;

} // namespace cuctx::detail

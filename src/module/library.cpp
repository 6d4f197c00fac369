// SPDX-License-Identifier: MIT
#include "cuctx/library.hpp"

#include "cuctx/context_guard.hpp"

#include "check/check.hpp"
#include "context/context_access.hpp"
#include "context/deferred_cleanup.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"
#include "module/jit_marshal.hpp"
#include "module/module_state.hpp"

namespace cuctx {

using detail::LibraryState;

namespace detail {
namespace {

std::shared_ptr<LibraryState> loadLibrary(std::span<const std::byte> image, const JitOptions& options,
                                          const std::string& label)
{
    const ImageKind kind = detectImageKind(image);
    if (const std::string problem = checkImageBounds(image, kind); !problem.empty())
        throwError(Errc::invalid_argument, "cuctx::Library", "cannot load '" + label + "': " + problem,
                   "Pass a complete PTX, cubin or fatbin image", Subject{.name = label.c_str()});
    const DriverApi& d = api();
    requireEntry(reinterpret_cast<const void*>(d.cuLibraryLoadData), "cuLibraryLoadData");
    std::string ptxCopy;
    const void* data = image.data();
    if (kind == ImageKind::ptx && image.back() != std::byte{0}) {
        ptxCopy.assign(reinterpret_cast<const char*>(image.data()), image.size());
        data = ptxCopy.c_str();
    }
    JitArrays jit(options, true);
    auto state = std::make_shared<LibraryState>();
    state->label = label;
    const CUresult r =
        d.cuLibraryLoadData(&state->library, data, jit.options(), jit.values(), jit.count(), nullptr, nullptr, 0);
    if (r != CUDA_SUCCESS) {
        state->library = nullptr;
        std::string detail = std::string("loading ") + imageKindName(kind) + " '" + label + "' as a library failed";
        if (const std::string log = jit.errorLog(); !log.empty())
            detail += "; the JIT's log:\n" + log;
        throwDriverError(r, "cuLibraryLoadData", Subject{.name = label.c_str()}, SourceLocation::current(), detail);
    }
    state->infoLog = jit.infoLog();
    return state;
}

} // namespace

LibraryState::~LibraryState()
{
    if (library == nullptr)
        return;
    auto unload = [l = library, label = std::move(label)] { // moved: no allocation here
        const DriverApi* d = g_activeApi.load(std::memory_order_acquire);
        if (d == nullptr)
            return true; // a forked child
        const CUresult r = d->cuLibraryUnload(l);
        if (r == CUDA_ERROR_NOT_PERMITTED)
            return false; // in a host callback
        if (r != CUDA_SUCCESS)
            logError("cuLibraryUnload of '{}' failed with {}", label, resultName(r));
        return true;
    };
    if (inHostCallback() || !unload()) {
        try {
            deferCleanup(nullptr, unload);
        } catch (...) {
            // No memory for the queue's entry: the library leaks.
        }
    }
}

} // namespace detail

LibraryState& Library::state(const char* call) const
{
    if (state_ == nullptr)
        detail::throwError(Errc::invalid_argument, call, "the Library is empty (default-constructed or moved from)",
                           "Load one first: cuctx::Library::fromFile or fromImage");
    return *state_;
}

Library Library::fromFile(const std::filesystem::path& path, const JitOptions& options)
{
    const std::vector<std::byte> image = detail::readImageFile(path, "cuctx::Library::fromFile");
    return Library(detail::loadLibrary(image, options, path.string()));
}

Library Library::fromImage(std::span<const std::byte> image, const JitOptions& options, std::string_view label)
{
    return Library(detail::loadLibrary(image, options, std::string(label)));
}

Function Library::function(const Context& context, std::string_view name) const
{
    LibraryState& s = state("cuctx::Library::function");
    detail::ContextState& cs = detail::checkedState(context, "cuctx::Library::function");
    const detail::DriverApi& d = detail::api();
    const std::string wanted(name);
    CUkernel kernel = nullptr;
    const CUresult r = d.cuLibraryGetKernel(&kernel, s.library, wanted.c_str());
    if (r == CUDA_ERROR_NOT_FOUND)
        detail::throwDriverError(r, "cuLibraryGetKernel", detail::Subject{.name = s.label.c_str()},
                                 SourceLocation::current(),
                                 "no kernel named '" + wanted + "' in library '" + s.label +
                                     "'; its kernels: " + detail::kernelList([this] { return kernelNames(); }),
                                 "C++ kernels have mangled names unless declared extern \"C\"");
    detail::check(r, "cuLibraryGetKernel", detail::Subject{.name = wanted.c_str()});
    CUfunction f = nullptr;
    {
        ContextGuard guard(context); // cuKernelGetFunction resolves for the current context
        detail::check(d.cuKernelGetFunction(&f, kernel), "cuKernelGetFunction", detail::moduleSubject(cs, wanted));
    }
    return detail::makeFunction(context, state_, f, wanted, s.label);
}

std::vector<std::string> Library::kernelNames() const
{
    LibraryState& s = state("cuctx::Library::kernelNames");
    const detail::DriverApi& d = detail::api();
    detail::requireEntry(reinterpret_cast<const void*>(d.cuLibraryGetKernelCount), "cuLibraryGetKernelCount");
    detail::requireEntry(reinterpret_cast<const void*>(d.cuKernelGetName), "cuKernelGetName");
    const detail::Subject subject{.name = s.label.c_str()};
    unsigned count = 0;
    detail::check(d.cuLibraryGetKernelCount(&count, s.library), "cuLibraryGetKernelCount", subject);
    std::vector<CUkernel> kernels(count);
    if (count != 0)
        detail::check(d.cuLibraryEnumerateKernels(kernels.data(), count, s.library), "cuLibraryEnumerateKernels",
                      subject);
    std::vector<std::string> names;
    for (CUkernel k : kernels) {
        const char* n = nullptr;
        detail::check(d.cuKernelGetName(&n, k), "cuKernelGetName", subject);
        names.emplace_back(n != nullptr ? n : "");
    }
    return names;
}

const std::string& Library::label() const
{
    return state("cuctx::Library::label").label;
}

const std::string& Library::infoLog() const
{
    return state("cuctx::Library::infoLog").infoLog;
}

CUlibrary Library::native() const
{
    return state("cuctx::Library::native").library;
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
#include "cuctx/module.hpp"

#include "cuctx/context_guard.hpp"

#include "check/check.hpp"
#include "context/cleanup.hpp"
#include "context/context_access.hpp"
#include "context/deferred_cleanup.hpp"
#include "context/described.hpp"
#include "driver/driver_state.hpp"
#include "log/log.hpp"
#include "module/jit_marshal.hpp"
#include "module/module_cache.hpp"
#include "module/module_state.hpp"
#include "objects/live_objects.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>

namespace cuctx {

using detail::ModuleState;

namespace detail {
namespace {

std::string withLog(std::string detail, const std::string& log)
{
    if (!log.empty())
        detail += "; the JIT's log:\n" + log;
    return detail;
}

const char* loadHint(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_INVALID_PTX:
        return "Fix the PTX at the line the JIT names; CUDA_CACHE_DISABLE=1 makes sure the JIT reruns";
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
        return "The image has no code for this device's architecture: build it for this compute capability "
               "(see cuctx-inspect devices), or include PTX so the driver can compile it";
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
        return "The PTX is newer than this driver's JIT: update the driver, or generate older PTX";
    case CUDA_ERROR_INVALID_IMAGE:
        return "The image is not one the driver can load: check that it is a complete PTX, cubin or fatbin";
    case CUDA_ERROR_FILE_NOT_FOUND: return "Check the path: the file does not exist or cannot be read";
    default: return "";
    }
}

} // namespace

ModuleState::~ModuleState()
{
    if (module == nullptr)
        return;
    ContextState* cs = context;
    cleanupInContext(*cs, [cs, m = module, label = std::move(label)] { // moved: no allocation here
        if (!inContextForCleanup(*cs, "cuModuleUnload", [m](const DriverApi& d) { return d.cuModuleUnload(m); }))
            return false;
        g_liveModules.fetch_sub(1, std::memory_order_relaxed);
        logTrace("unloaded module {} from {}", label, described(*cs));
        return true;
    });
}

Subject moduleSubject(const ContextState& context, const std::string& name) noexcept
{
    Subject s = subjectOf(context);
    s.name = name.c_str();
    return s;
}

std::vector<CUfunction> moduleFunctions(const ModuleState& s)
{
    const DriverApi& d = api();
    requireEntry(reinterpret_cast<const void*>(d.cuModuleGetFunctionCount), "cuModuleGetFunctionCount");
    const Subject subject = moduleSubject(*s.context, s.label);
    unsigned count = 0;
    check(d.cuModuleGetFunctionCount(&count, s.module), "cuModuleGetFunctionCount", subject);
    std::vector<CUfunction> functions(count);
    if (count != 0)
        check(d.cuModuleEnumerateFunctions(functions.data(), count, s.module), "cuModuleEnumerateFunctions", subject);
    return functions;
}

std::string kernelList(const std::function<std::vector<std::string>()>& names)
{
    try {
        std::string known;
        for (const std::string& k : names())
            known += (known.empty() ? "" : ", ") + k;
        return known.empty() ? "none" : known;
    } catch (const Error&) {
        return "(the driver cannot list them before CUDA 12.4)";
    }
}

std::shared_ptr<ModuleState> loadModule(const Context& context, std::span<const std::byte> image, ImageKind kind,
                                        const JitOptions& options, const std::string& label)
{
    ContextState& cs = checkedState(context, "cuctx::Module");
    const DriverApi& d = api();
    // PTX is handed over as a C string: make sure it ends.
    std::string ptxCopy;
    const void* data = image.data();
    if (kind == ImageKind::ptx && (image.empty() || image.back() != std::byte{0})) {
        ptxCopy.assign(reinterpret_cast<const char*>(image.data()), image.size());
        data = ptxCopy.c_str();
    }
    JitArrays jit(options, false);
    auto state = std::make_shared<ModuleState>();
    state->context = &cs;
    state->label = label;
    state->kind = kind;
    ContextGuard guard(context);
    const auto t0 = std::chrono::steady_clock::now();
    const CUresult r = d.cuModuleLoadDataEx(&state->module, data, jit.count(), jit.options(), jit.values());
    state->loadMilliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r != CUDA_SUCCESS) {
        state->module = nullptr;
        const Subject s = moduleSubject(cs, label);
        throwDriverError(
            r, "cuModuleLoadDataEx", s, SourceLocation::current(),
            withLog(std::string("loading ") + imageKindName(kind) + " '" + label + "' failed", jit.errorLog()),
            loadHint(r));
    }
    g_liveModules.fetch_add(1, std::memory_order_relaxed);
    state->infoLog = jit.infoLog();
    logDebug("loaded {} '{}' into {} in {:.3f} ms", imageKindName(kind), label, described(cs), state->loadMilliseconds);
    if (options.loadAllKernels)
        ModuleState::handle(context, state).loadAllKernels(); // unloads (state goes) if it throws
    return state;
}

std::shared_ptr<ModuleState> loadCheckedImage(const Context& context, std::span<const std::byte> image,
                                              const JitOptions& options, const std::string& label)
{
    const ImageKind kind = detectImageKind(image);
    if (const std::string problem = checkImageBounds(image, kind); !problem.empty()) {
        ContextState& cs = checkedState(context, "cuctx::Module");
        throwError(Errc::invalid_argument, "cuctx::Module", "cannot load '" + label + "': " + problem,
                   "Pass a complete PTX, cubin or fatbin image", moduleSubject(cs, label));
    }
    return loadModule(context, image, kind, options, label);
}

std::vector<std::byte> readImageFile(const std::filesystem::path& path, const char* call)
{
    const std::string name = path.string();
    const auto fail = [&](const std::string& why, const char* hint) {
        throwError(Errc::invalid_argument, call, "cannot read '" + name + "': " + why, hint,
                   Subject{.name = name.c_str()});
    };
    constexpr const char* kCheckPath = "Check the path (relative paths start from the working directory)";
    // Non-blocking, so that opening a FIFO with no writer returns; only a regular file is read.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        const int e = errno;
        fail(e == ENOENT ? "no such file" : std::string("cannot open it (") + std::strerror(e) + ")", kCheckPath);
    }
    struct Closer {
        explicit Closer(int f) : fd(f) {}
        Closer(const Closer&) = delete;
        Closer& operator=(const Closer&) = delete;
        ~Closer() { ::close(fd); }
        int fd;
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        fail(std::string("cannot stat it (") + std::strerror(errno) + ")", kCheckPath);
    if (!S_ISREG(st.st_mode))
        fail(std::string("not a regular file (") +
                 (S_ISDIR(st.st_mode)    ? "a directory"
                  : S_ISFIFO(st.st_mode) ? "a FIFO"
                  : S_ISSOCK(st.st_mode) ? "a socket"
                  : S_ISCHR(st.st_mode)  ? "a character device"
                  : S_ISBLK(st.st_mode)  ? "a block device"
                                         : "not a file") +
                 ")",
             "Pass a .ptx, .cubin or .fatbin file; read other sources yourself and use fromImage");
    const auto size = static_cast<std::uintmax_t>(st.st_size);
    if (size > Module::kMaxImageFileBytes)
        fail("it is " + std::to_string(size) + " bytes, larger than the " + std::to_string(Module::kMaxImageFileBytes) +
                 " bytes cuctx reads as a module image",
             "Check that this is a module image; a larger one can be read by the caller and passed to fromImage");
    std::vector<std::byte> bytes(static_cast<std::size_t>(size));
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            fail(std::string("reading it failed (") + std::strerror(errno) + ")", kCheckPath);
        if (n == 0)
            break; // it shrank meanwhile: what is there
        done += static_cast<std::size_t>(n);
    }
    bytes.resize(done);
    return bytes;
}

} // namespace detail

Module::Module(Context context, std::shared_ptr<ModuleState> state) noexcept
    : context_(std::move(context)), state_(std::move(state))
{
}

Module& Module::operator=(Module&& other) noexcept
{
    if (this != &other) {
        state_.reset(); // before the context handle, which may be the last one
        context_ = std::move(other.context_);
        state_ = std::move(other.state_);
    }
    return *this;
}

Module& Module::operator=(const Module& other)
{
    if (this != &other)
        *this = Module(other);
    return *this;
}

ModuleState& Module::state(const char* call) const
{
    if (state_ == nullptr)
        detail::throwError(Errc::invalid_argument, call, "the Module is empty (default-constructed or moved from)",
                           "Load a module first: cuctx::Module::fromFile or fromImage");
    return *state_;
}

Module Module::fromFile(const Context& context, const std::filesystem::path& path, const JitOptions& options)
{
    const std::vector<std::byte> image = detail::readImageFile(path, "cuctx::Module::fromFile");
    return Module(context, detail::loadCheckedImage(context, image, options, path.string()));
}

Module Module::fromImage(const Context& context, std::span<const std::byte> image, const JitOptions& options,
                         std::string_view label)
{
    return Module(context, detail::loadCheckedImage(context, image, options, std::string(label)));
}

Module Module::fromPtx(const Context& context, std::string_view ptx, const JitOptions& options, std::string_view label)
{
    return fromImage(context, std::as_bytes(std::span(ptx.data(), ptx.size())), options, label);
}

Module Module::cached(const Context& context, std::span<const std::byte> image, const JitOptions& options,
                      std::string_view label)
{
    return Module(context, detail::cachedModule(context, image, options, std::string(label)));
}

const Module& Module::cached(const Context& context, const ModuleImage& image)
{
    return detail::cachedModule(context, image);
}

Module Module::cachedFile(const Context& context, const std::filesystem::path& path, const JitOptions& options)
{
    const std::vector<std::byte> image = detail::readImageFile(path, "cuctx::Module::cachedFile");
    return cached(context, image, options, path.string());
}

std::size_t Module::cacheSize(const Context& context)
{
    return detail::moduleCacheSize(detail::checkedState(context, "cuctx::Module::cacheSize"));
}

void Module::clearCache(const Context& context)
{
    detail::clearModuleCache(detail::checkedState(context, "cuctx::Module::clearCache"));
}

Function Module::function(std::string_view name) const
{
    ModuleState& s = state("cuctx::Module::function");
    const std::string wanted(name);
    CUfunction f = nullptr;
    ContextGuard guard(context_);
    const CUresult r = detail::api().cuModuleGetFunction(&f, s.module, wanted.c_str());
    if (r == CUDA_ERROR_NOT_FOUND)
        detail::throwDriverError(r, "cuModuleGetFunction", detail::moduleSubject(*s.context, s.label),
                                 SourceLocation::current(),
                                 "no kernel named '" + wanted + "' in " + imageKindName(s.kind) + " '" + s.label +
                                     "'; its kernels: " + detail::kernelList([this] { return kernelNames(); }),
                                 "C++ kernels have mangled names unless declared extern \"C\"");
    detail::check(r, "cuModuleGetFunction", detail::moduleSubject(*s.context, wanted));
    return detail::makeFunction(context_, state_, f, wanted, s.label);
}

std::vector<std::string> Module::kernelNames() const
{
    ModuleState& s = state("cuctx::Module::kernelNames");
    const detail::DriverApi& d = detail::api();
    detail::requireEntry(reinterpret_cast<const void*>(d.cuFuncGetName), "cuFuncGetName");
    ContextGuard guard(context_);
    std::vector<std::string> names;
    for (CUfunction f : detail::moduleFunctions(s)) {
        const char* n = nullptr;
        detail::check(d.cuFuncGetName(&n, f), "cuFuncGetName", detail::moduleSubject(*s.context, s.label));
        names.emplace_back(n != nullptr ? n : "");
    }
    return names;
}

ModuleGlobal Module::global(std::string_view name) const
{
    ModuleState& s = state("cuctx::Module::global");
    const std::string wanted(name);
    ModuleGlobal g;
    ContextGuard guard(context_);
    const CUresult r = detail::api().cuModuleGetGlobal(&g.address, &g.bytes, s.module, wanted.c_str());
    if (r == CUDA_ERROR_NOT_FOUND)
        detail::throwDriverError(r, "cuModuleGetGlobal", detail::moduleSubject(*s.context, s.label),
                                 SourceLocation::current(),
                                 "no global variable named '" + wanted + "' in '" + s.label + "'",
                                 "C++ variables have mangled names unless declared extern \"C\"");
    detail::check(r, "cuModuleGetGlobal", detail::moduleSubject(*s.context, wanted));
    return g;
}

void Module::loadAllKernels() const
{
    ModuleState& s = state("cuctx::Module::loadAllKernels");
    const detail::DriverApi& d = detail::api();
    detail::requireEntry(reinterpret_cast<const void*>(d.cuFuncLoad), "cuFuncLoad");
    ContextGuard guard(context_);
    for (CUfunction f : detail::moduleFunctions(s))
        detail::check(d.cuFuncLoad(f), "cuFuncLoad", detail::moduleSubject(*s.context, s.label));
}

ModuleLoadingMode Module::loadingMode()
{
    const detail::DriverApi& d = detail::api();
    if (d.cuModuleGetLoadingMode == nullptr)
        return ModuleLoadingMode::unknown;
    CUmoduleLoadingMode mode{};
    detail::check(d.cuModuleGetLoadingMode(&mode), "cuModuleGetLoadingMode");
    switch (mode) {
    case CU_MODULE_LAZY_LOADING: return ModuleLoadingMode::lazy;
    case CU_MODULE_EAGER_LOADING: return ModuleLoadingMode::eager;
    }
    return ModuleLoadingMode::unknown;
}

long Module::loadedCount() noexcept
{
    return detail::g_liveModules.load(std::memory_order_relaxed);
}

ImageKind Module::kind() const
{
    return state("cuctx::Module::kind").kind;
}

const std::string& Module::label() const
{
    return state("cuctx::Module::label").label;
}

const std::string& Module::infoLog() const
{
    return state("cuctx::Module::infoLog").infoLog;
}

double Module::loadMilliseconds() const
{
    return state("cuctx::Module::loadMilliseconds").loadMilliseconds;
}

const Context& Module::context() const
{
    (void)state("cuctx::Module::context");
    return context_;
}

CUmodule Module::native() const
{
    return state("cuctx::Module::native").module;
}

} // namespace cuctx

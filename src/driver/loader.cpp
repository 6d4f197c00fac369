// SPDX-License-Identifier: MIT
#include "driver/loader.hpp"

#include "check/check.hpp"
#include "driver/fork_state.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace cuctx::detail {
namespace {

#define CUCTX_DRIVER_ROW(field, symbol, version, kind) DriverEntry{#field, #symbol, version, EntryKind::kind},
constexpr DriverEntry kEntries[] = {CUCTX_DRIVER_ENTRIES(CUCTX_DRIVER_ROW)};
#undef CUCTX_DRIVER_ROW

// Addresses of the table's fields, in the order of kEntries, so one loop resolves them all.
std::vector<void**> fieldSlots(DriverApi& api)
{
    std::vector<void**> slots;
#define CUCTX_DRIVER_SLOT(field, symbol, version, kind) slots.push_back(reinterpret_cast<void**>(&api.field));
    CUCTX_DRIVER_ENTRIES(CUCTX_DRIVER_SLOT)
#undef CUCTX_DRIVER_SLOT
    return slots;
}

std::string resolvedPathOf(void* handle)
{
    link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr)
        return map->l_name;
    return {};
}

Error makeError(Errc condition, int result, std::string call, std::string object, std::string detail, std::string hint,
                SourceLocation where = SourceLocation::current())
{
    ErrorInfo info;
    info.condition = condition;
    info.result = result;
    info.call = std::move(call);
    info.object = std::move(object);
    info.detail = std::move(detail);
    info.hint = std::move(hint);
    return Error(std::move(info), where);
}

Error stubError(const std::string& resolved, const char* call, SourceLocation where = SourceLocation::current())
{
    return makeError(Errc::stub_driver, CUDA_ERROR_STUB_LIBRARY, call, resolved,
                     "this is the CUDA toolkit's stub libcuda.so, which only satisfies the linker; every call "
                     "fails with CUDA_ERROR_STUB_LIBRARY",
                     "Install the NVIDIA driver, or take the toolkit's lib64/stubs folder out of LD_LIBRARY_PATH "
                     "and CUCTX_DRIVER_PATH so that the real libcuda.so.1 is found",
                     where);
}

using GetProcAddress = PFN_cuGetProcAddress_v12000;

} // namespace

std::span<const DriverEntry> driverEntries() noexcept
{
    return kEntries;
}

const DriverEntry* findDriverEntry(const char* field) noexcept
{
    for (const DriverEntry& e : kEntries)
        if (std::string_view(e.field) == field)
            return &e;
    return nullptr;
}

LoadedDriver::LoadedDriver(void* handle, std::string path) noexcept : resolvedPath(std::move(path)), handle_(handle) {}

LoadedDriver::~LoadedDriver()
{
    if (handle_ != nullptr)
        dlclose(handle_);
}

LoadAttempt loadDriver(const std::string& path)
{
    LoadAttempt attempt;
    if (forkedAfterInit()) {
        try {
            throwForkedAfterInit("cuInit");
        } catch (const Error& e) {
            attempt.error = e;
        }
        return attempt;
    }

    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* reason = dlerror();
        std::string why = reason != nullptr ? reason : "no reason given";
        if (why.starts_with(path + ": ")) // dlerror repeats the path
            why.erase(0, path.size() + 2);
        attempt.error = makeError(Errc::driver_not_found, 0, "dlopen", path,
                                  "the CUDA driver library could not be loaded (" + why + ")",
                                  "Install the NVIDIA driver (it provides libcuda.so.1), or point "
                                  "CUCTX_DRIVER_PATH at it");
        return attempt;
    }
    auto driver = std::make_unique<LoadedDriver>(handle, resolvedPathOf(handle));
    attempt.resolvedPath = driver->resolvedPath;
    const std::string& where = driver->resolvedPath.empty() ? path : driver->resolvedPath;

    auto* getProc = reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
    if (getProc == nullptr) {
        attempt.error = makeError(Errc::driver_too_old, 0, "dlsym(cuGetProcAddress_v2)", where,
                                  "the driver has no cuGetProcAddress_v2, which cuctx needs (CUDA 12.0 or newer)",
                                  "Install an NVIDIA driver that supports CUDA 12.0 or newer");
        return attempt;
    }

    // cuDriverGetVersion first: it works before cuInit, and names the driver in later errors.
    auto resolve = [&](const DriverEntry& entry, void** slot) -> CUresult {
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        *slot = nullptr;
        const CUresult r = getProc(entry.symbol, slot, entry.version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
        if (r == CUDA_SUCCESS && (found != CU_GET_PROC_ADDRESS_SUCCESS || *slot == nullptr))
            *slot = nullptr; // "success" with a NULL pointer: the symbol is unknown to this driver
        return r;
    };
    const std::vector<void**> slots = fieldSlots(driver->api);
    std::vector<std::string> missing;
    int driverVersion = 0;
    for (std::size_t i = 0; i < slots.size(); ++i) {
        const DriverEntry& entry = kEntries[i];
        const CUresult r = resolve(entry, slots[i]);
        if (r == CUDA_ERROR_STUB_LIBRARY) {
            attempt.error = stubError(where, "cuGetProcAddress_v2");
            return attempt;
        }
        if (i == 1 && driver->api.cuDriverGetVersion != nullptr &&
            driver->api.cuDriverGetVersion(&driverVersion) == CUDA_SUCCESS)
            attempt.driverVersion = driver->version = driverVersion;
        // CUDA_ERROR_INVALID_VALUE: the pinned version is newer than the driver (driver-facts.md).
        if (*slots[i] == nullptr && entry.kind == EntryKind::Required)
            missing.push_back(std::string(entry.symbol) + " (CUDA " + formatCudaVersion(entry.version) + ")");
    }
    static_assert(std::string_view(kEntries[1].field) == "cuDriverGetVersion");
    if (!missing.empty()) {
        std::string list;
        for (const std::string& m : missing)
            list += (list.empty() ? "" : ", ") + m;
        attempt.error = makeError(Errc::driver_too_old, 0, "cuGetProcAddress_v2", where,
                                  "the installed driver (CUDA " + formatCudaVersion(driverVersion) +
                                      ") lacks entry points cuctx needs: " + list,
                                  "Install a newer NVIDIA driver");
        return attempt;
    }

    const CUresult init = driver->api.cuInit(0);
    if (init == CUDA_ERROR_STUB_LIBRARY) {
        attempt.error = stubError(where, "cuInit");
        return attempt;
    }
    if (init == CUDA_ERROR_NO_DEVICE) {
        attempt.error = makeError(Errc::no_device, init, "cuInit", where,
                                  "the CUDA driver (CUDA " + formatCudaVersion(driverVersion) +
                                      ") is installed but sees no usable device",
                                  "Check that nvidia-smi lists a GPU and that CUDA_VISIBLE_DEVICES does not hide "
                                  "every device");
        return attempt;
    }
    if (init != CUDA_SUCCESS) {
        std::string detail = "cuInit(0) failed";
        if (init == CUDA_ERROR_NOT_INITIALIZED)
            detail += "; if this process was forked from one that had initialised CUDA (parent pid " +
                      std::to_string(getppid()) + "), CUDA cannot be used here";
        attempt.error = makeError(Errc::driver_error, init, "cuInit", where, detail, {});
        return attempt;
    }
    attempt.driver = std::move(driver);
    return attempt;
}

} // namespace cuctx::detail

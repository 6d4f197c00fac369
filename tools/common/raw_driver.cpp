// SPDX-License-Identifier: MIT
#include "raw_driver.hpp"

#include "cuctx/driver.hpp"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace cuctx::tools {
namespace {

RawDriver load()
{
    Driver::load();
    const Driver::Status status = Driver::status();
    // RTLD_NOLOAD: the library cuctx opened, never a second copy of it.
    void* handle = dlopen(status.resolvedPath.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (handle == nullptr)
        throw std::runtime_error("cannot reopen the driver cuctx loaded (" + status.resolvedPath + ")");
    auto* getProc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle, "cuGetProcAddress_v2"));
    if (getProc == nullptr)
        throw std::runtime_error("the driver " + status.resolvedPath + " has no cuGetProcAddress_v2");
    RawDriver d;
    auto get = [&](auto& entry, const char* symbol, int version, bool required) {
        void* fn = nullptr;
        CUdriverProcAddressQueryResult found{};
        if (getProc(symbol, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
            found != CU_GET_PROC_ADDRESS_SUCCESS)
            fn = nullptr;
        if (fn == nullptr && required)
            throw std::runtime_error(std::string("the driver has no ") + symbol + " (version " +
                                     std::to_string(version) + ")");
        entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(fn);
    };
    get(d.cuCtxCreate_v2, "cuCtxCreate", 3020, true);
    get(d.cuCtxCreate_v4, "cuCtxCreate", 12050, false);
    get(d.cuCtxDestroy, "cuCtxDestroy", 4000, true);
    get(d.cuCtxGetCurrent, "cuCtxGetCurrent", 4000, true);
    get(d.cuCtxSetCurrent, "cuCtxSetCurrent", 4000, true);
    get(d.cuCtxPushCurrent, "cuCtxPushCurrent", 4000, true);
    get(d.cuCtxPopCurrent, "cuCtxPopCurrent", 4000, true);
    get(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000, true);
    get(d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 11000, true);
    get(d.cuModuleLoadDataEx, "cuModuleLoadDataEx", 2010, true);
    get(d.cuModuleUnload, "cuModuleUnload", 2000, true);
    get(d.cuLaunchKernel, "cuLaunchKernel", 4000, true);
    get(d.cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 4000, true);
    return d;
}

} // namespace

const RawDriver& rawDriver()
{
    static const RawDriver driver = load();
    return driver;
}

} // namespace cuctx::tools

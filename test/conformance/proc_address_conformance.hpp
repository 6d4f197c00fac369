// SPDX-License-Identifier: MIT
#pragma once

// Facts about cuGetProcAddress_v2 (driver-facts.md) asserted the same way against the fake driver
// (CPU suite) and the real one (GPU suite), so the fake cannot drift from the driver.

#include <catch2/catch.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <dlfcn.h>

#include <string>

namespace cuctx::test {

inline void checkProcAddressConformance(const std::string& libraryPath)
{
    void* handle = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    auto* getProc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle, "cuGetProcAddress_v2"));
    REQUIRE(getProc != nullptr);

    void* v2 = nullptr;
    void* v4 = nullptr;
    CUdriverProcAddressQueryResult found{};
    // The same name at two versions gives two ABIs: the pinned version decides the signature.
    REQUIRE(getProc("cuCtxCreate", &v2, 3020, CU_GET_PROC_ADDRESS_DEFAULT, &found) == CUDA_SUCCESS);
    CHECK(found == CU_GET_PROC_ADDRESS_SUCCESS);
    REQUIRE(getProc("cuCtxCreate", &v4, 12050, CU_GET_PROC_ADDRESS_DEFAULT, &found) == CUDA_SUCCESS);
    CHECK(v2 != nullptr);
    CHECK(v4 != nullptr);
    CHECK(v2 != v4);

    // A version newer than the driver: CUDA_ERROR_INVALID_VALUE.
    void* future = nullptr;
    CHECK(getProc("cuCtxCreate", &future, 99000, CU_GET_PROC_ADDRESS_DEFAULT, &found) == CUDA_ERROR_INVALID_VALUE);

    // An unknown symbol: no pointer, whatever the status says.
    void* unknown = reinterpret_cast<void*>(0x1);
    const CUresult r = getProc("cuctxNoSuchEntryPoint", &unknown, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    CHECK((r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_FOUND));
    CHECK(unknown == nullptr);
    CHECK(found != CU_GET_PROC_ADDRESS_SUCCESS);
    dlclose(handle);
}

} // namespace cuctx::test

// SPDX-License-Identifier: MIT
// The facts the fake driver models, asserted on the real driver (driver-facts.md).

#include "../conformance/proc_address_conformance.hpp"
#include "../shared/process_helpers.hpp"
#include "gpu_helpers.hpp"

#include "cuctx/device.hpp"
#include "cuctx/driver.hpp"
#include "cuctx/error.hpp"

#include <dlfcn.h>

TEST_CASE("the real driver answers cuGetProcAddress_v2 as the fake does", "[gpu][conformance]")
{
    cuctx::test::checkProcAddressConformance(cuctx::Driver::status().resolvedPath);
}

TEST_CASE("a child forked after initialisation: the driver refuses it, cuctx says why", "[gpu][fork]")
{
    REQUIRE(cuctx::Device::count() >= 1);
    const std::string path = cuctx::Driver::status().resolvedPath;
    const int status = cuctx::test::inChild([&path] {
        // The raw driver in the child: every call, cuInit included, gives CUDA_ERROR_NOT_INITIALIZED.
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
        if (handle == nullptr)
            return 10;
        using Init = CUresult (*)(unsigned);
        auto* init = reinterpret_cast<Init>(dlsym(handle, "cuInit"));
        if (init == nullptr || init(0) != CUDA_ERROR_NOT_INITIALIZED)
            return 11;
        try {
            (void)cuctx::Device::count();
            return 1;
        } catch (const cuctx::Error& e) {
            return e.condition() == cuctx::Errc::forked_after_init ? 0 : 2;
        }
    });
    CHECK(status == 0);
    CHECK(cuctx::Device::count() >= 1); // the parent still works
}

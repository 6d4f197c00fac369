// SPDX-License-Identifier: MIT
// The CPU suite's runner: every test runs against the fake driver, loaded through cuctx's real
// loader exactly as libcuda.so.1 would be.

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "cuctx/driver.hpp"

#include <cstdlib>

int main(int argc, char** argv)
{
    cuctx::Driver::setLibraryPath(CUCTX_FAKE_DRIVER_PATH);
    ::setenv("CUCTX_NVML_PATH", CUCTX_FAKE_NVML_PATH, 0); // cuctx::processes() and what uses it
    return Catch::Session().run(argc, argv);
}

// SPDX-License-Identifier: MIT
// The isolated-worker test's runner (cuctx-gpu-isolation-tests): a program of its own because its
// worker faults on purpose, so tools/gpu-check runs it under compute-sanitizer without following
// the worker (--target-processes application-only). With no usable device: exit 77 (SKIP).

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "cuctx/driver.hpp"

#include <cstdio>

int main(int argc, char** argv)
{
    const auto status = cuctx::Driver::status();
    if (!status.loaded) {
        std::printf("SKIP: no usable CUDA device, so the isolation test did not run: %s\n", status.message.c_str());
        return 77;
    }
    return Catch::Session().run(argc, argv);
}

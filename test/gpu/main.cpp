// SPDX-License-Identifier: MIT
// The GPU suite's runner: against the real driver. With no usable device the whole program is
// skipped (exit 77, which Meson reports as SKIP), never reported as passed.

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "cuctx/driver.hpp"
#include "ipc_child.hpp"

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv)
{
    if (const char* handles = std::getenv(cuctx::test::kIpcChildVariable))
        return cuctx::test::runIpcChild(handles); // the child of the IPC test
    const auto status = cuctx::Driver::status();
    if (!status.loaded) {
        std::printf("SKIP: no usable CUDA device, so the GPU suite did not run: %s\n", status.message.c_str());
        return 77;
    }
    return Catch::Session().run(argc, argv);
}

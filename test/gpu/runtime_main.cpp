// The runner of cuctx's tests beside the CUDA runtime and cuBLAS. With no usable device the whole
// program is skipped (exit 77, which Meson reports as SKIP), never reported as passed.

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "cuctx/driver.hpp"

#include <cstdio>

int main(int argc, char** argv)
{
    const auto status = cuctx::Driver::status();
    if (!status.loaded) {
        std::printf("SKIP: no usable CUDA device, so the runtime tests did not run: %s\n", status.message.c_str());
        return 77;
    }
    return Catch::Session().run(argc, argv);
}

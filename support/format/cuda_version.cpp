// SPDX-License-Identifier: MIT
#include "format/cuda_version.hpp"

namespace cuctx::detail {

std::string formatCudaVersion(int version)
{
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

} // namespace cuctx::detail

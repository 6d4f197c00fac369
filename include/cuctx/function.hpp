// SPDX-License-Identifier: MIT
#pragma once

// cuctx::Function: a kernel of a loaded Module or Library, in one context. Thread-safe: every
// member may be called from any thread (attribute setters change the kernel for all of them).

#include "cuctx/context.hpp"
#include "cuctx/export.hpp"

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cuctx {

namespace detail {
struct FunctionData;
}

/// What the driver reports of a kernel (cuFuncGetAttribute).
struct FunctionAttributes {
    int registers = 0;         ///< per thread
    int staticSharedBytes = 0; ///< per block
    int localBytes = 0;        ///< per thread
    int constBytes = 0;
    int maxThreadsPerBlock = 0;    ///< the most this kernel can be launched with
    int ptxVersion = 0;            ///< e.g. 80 for PTX 8.0
    int binaryVersion = 0;         ///< the SASS architecture, e.g. 90
    int maxDynamicSharedBytes = 0; ///< the current limit (setMaxDynamicSharedMemory)
};

/// One kernel parameter's place in the argument buffer (cuFuncGetParamInfo, CUDA 12.4+).
struct ParamInfo {
    std::size_t offset = 0;
    std::size_t bytes = 0;
};

/// cuFuncSetCacheConfig's preference between shared memory and L1.
enum class CachePreference { none, shared, l1, equal };

/// cuOccupancyMaxPotentialBlockSize: the block size with the best occupancy, and the smallest grid
/// that fills the device with it.
struct BlockSizeSuggestion {
    int minGridSize = 0;
    int blockSize = 0;
};

class CUCTX_API Function {
public:
    Function() = default; ///< empty
    explicit operator bool() const noexcept { return data_ != nullptr; }

    const std::string& name() const;
    /// The module's or library's label (a file name, or what the caller named the image).
    const std::string& moduleLabel() const;
    const Context& context() const;

    FunctionAttributes attributes() const;
    void setMaxDynamicSharedMemory(int bytes) const;
    void setCachePreference(CachePreference preference) const;

    /// The kernel's parameters, or nothing where the driver cannot say (before CUDA 12.4).
    const std::optional<std::vector<ParamInfo>>& parameters() const;

    /// cuOccupancyMaxActiveBlocksPerMultiprocessor.
    int maxActiveBlocksPerMultiprocessor(int blockSize, std::size_t dynamicSharedBytes = 0) const;
    /// cuOccupancyMaxPotentialBlockSize; `blockSizeLimit` 0 means the kernel's own limit.
    BlockSizeSuggestion maxPotentialBlockSize(std::size_t dynamicSharedBytes = 0, int blockSizeLimit = 0) const;

    CUfunction native() const;

private:
    friend struct detail::FunctionData;
    explicit Function(std::shared_ptr<const detail::FunctionData> data) noexcept : data_(std::move(data)) {}
    const detail::FunctionData& data(const char* call) const;

    std::shared_ptr<const detail::FunctionData> data_;
};

} // namespace cuctx

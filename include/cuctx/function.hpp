// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::Function: a kernel of a loaded Module or Library, in one context.

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

/// What the driver reports of a kernel (cuFuncGetAttribute), in bytes where a size. A value type.
struct FunctionAttributes {
    int registers = 0;             ///< per thread
    int staticSharedBytes = 0;     ///< per block
    int localBytes = 0;            ///< per thread
    int constBytes = 0;            ///< constant memory the kernel uses
    int maxThreadsPerBlock = 0;    ///< the most this kernel can be launched with
    int ptxVersion = 0;            ///< e.g. 80 for PTX 8.0
    int binaryVersion = 0;         ///< the SASS architecture, e.g. 90
    int maxDynamicSharedBytes = 0; ///< the current limit (setMaxDynamicSharedMemory)
};

/// One kernel parameter's place in the argument buffer (cuFuncGetParamInfo, CUDA 12.4+). A value type.
struct ParamInfo {
    std::size_t offset = 0; ///< where it starts, in bytes
    std::size_t bytes = 0;  ///< its size
};

/// cuFuncSetCacheConfig's preference between shared memory and L1.
enum class CachePreference { none, shared, l1, equal };

/// cuOccupancyMaxPotentialBlockSize: the block size with the best occupancy, and the smallest grid
/// that fills the device with it. A value type.
struct BlockSizeSuggestion {
    int minGridSize = 0; ///< the smallest grid that reaches full occupancy with blockSize
    int blockSize = 0;   ///< the block size with the best occupancy
};

/// A kernel of a loaded Module or Library, in one context: what cuctx::launch runs. A shared handle
/// that keeps its module (or library) loaded and its context alive.
///
/// \par Threading
/// Thread-safe shared handle: every member may be called from any thread, and handles copied and
/// dropped on any threads at once (each call that needs the context enters it on its own thread).
/// The attribute setters change the kernel for every thread and every later launch; the last one set
/// wins.
class CUCTX_API Function {
public:
    Function() = default; ///< empty
    /// Whether it refers to a kernel (false when default-constructed).
    explicit operator bool() const noexcept { return data_ != nullptr; }

    /// The kernel's name, as looked up (a mangled name unless declared extern "C").
    const std::string& name() const;
    /// The module's or library's label (a file name, or what the caller named the image).
    const std::string& moduleLabel() const;
    /// The context the kernel was resolved in (where it launches).
    const Context& context() const;

    /// What the driver reports of the kernel (cuFuncGetAttribute).
    FunctionAttributes attributes() const;
    /// Lets launches use up to `bytes` of dynamic shared memory per block
    /// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES); needed above 48 KiB.
    void setMaxDynamicSharedMemory(int bytes) const;
    /// cuFuncSetCacheConfig: the kernel's preference between shared memory and L1.
    void setCachePreference(CachePreference preference) const;

    /// The kernel's parameters, or nothing where the driver cannot say (before CUDA 12.4).
    const std::optional<std::vector<ParamInfo>>& parameters() const;

    /// cuOccupancyMaxActiveBlocksPerMultiprocessor.
    int maxActiveBlocksPerMultiprocessor(int blockSize, std::size_t dynamicSharedBytes = 0) const;
    /// cuOccupancyMaxPotentialBlockSize; `blockSizeLimit` 0 means the kernel's own limit.
    BlockSizeSuggestion maxPotentialBlockSize(std::size_t dynamicSharedBytes = 0, int blockSizeLimit = 0) const;

    /// The driver's handle.
    CUfunction native() const;

private:
    friend struct detail::FunctionData;
    explicit Function(std::shared_ptr<const detail::FunctionData> data) noexcept : data_(std::move(data)) {}
    const detail::FunctionData& data(const char* call) const;

    std::shared_ptr<const detail::FunctionData> data_;
};

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::LaunchConfig: the shape of a kernel launch.

#include <cuda.h>

#include <cstddef>

namespace cuctx {

class Stream;

/// Three extents of a grid, a block or a cluster. A value type.
struct Dim3 {
    unsigned x = 1; ///< the first extent
    unsigned y = 1; ///< the second
    unsigned z = 1; ///< the third
};

/// The stream a launch goes to. Left out, or `nullptr`: the context's default stream. A Stream, or a
/// CUstream such as Stream::native(), must not be empty or null: a null CUstream is what an empty
/// (default-constructed or moved-from) Stream gives, so cuctx::launch refuses it (Errc::
/// invalid_argument) instead of silently using the default stream. To name the default stream
/// explicitly, write `nullptr`, CU_STREAM_LEGACY or CU_STREAM_PER_THREAD.
///
/// \par Threading
/// Thread-compatible value type. It holds the stream's handle only: the Stream must outlive the launch.
class LaunchStream {
public:
    /// The context's default stream.
    constexpr LaunchStream() noexcept = default;
    /// The context's default stream, named explicitly.
    constexpr LaunchStream(std::nullptr_t) noexcept {}
    /// A driver stream handle; a null one is refused at the launch.
    constexpr LaunchStream(CUstream stream) noexcept : stream_(stream), nullHandle_(stream == nullptr) {}
    /// `stream`'s handle; an empty Stream is refused at the launch.
    LaunchStream(const Stream& stream) noexcept;

    /// The stream handle (nullptr: the default stream, unless nullHandle()).
    constexpr CUstream native() const noexcept { return stream_; }
    /// Whether it was made from a null CUstream or an empty Stream, which cuctx::launch refuses.
    constexpr bool nullHandle() const noexcept { return nullHandle_; }

private:
    CUstream stream_ = nullptr;
    bool nullHandle_ = false;
};

/// Grid, block, dynamic shared memory and stream of a launch, and the cuLaunchKernelEx attributes
/// cuctx supports. A cluster of {0,0,0} means none.
///
/// \par Threading
/// Thread-compatible value type.
struct LaunchConfig {
    Dim3 grid;                ///< blocks in the grid
    Dim3 block;               ///< threads in a block
    unsigned sharedBytes = 0; ///< dynamic shared memory per block
    LaunchStream stream{};    ///< left out: the context's default stream (see LaunchStream)
    Dim3 cluster{0, 0, 0};    ///< thread-block cluster dimensions (sm_90+), via cuLaunchKernelEx
    bool cooperative = false; ///< a cooperative launch (grid-wide sync), via cuLaunchKernelEx
};

} // namespace cuctx

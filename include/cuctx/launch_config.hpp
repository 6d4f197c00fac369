// SPDX-License-Identifier: MIT
#pragma once

// cuctx::LaunchConfig: the shape of a kernel launch. A value type.

#include <cuda.h>

#include <cstddef>

namespace cuctx {

class Stream;

struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
};

/// The stream a launch goes to. Left out, or `nullptr`: the context's default stream. A Stream, or a
/// CUstream such as Stream::native(), must not be empty or null: a null CUstream is what an empty
/// (default-constructed or moved-from) Stream gives, so cuctx::launch refuses it (Errc::
/// invalid_argument) instead of silently using the default stream. To name the default stream
/// explicitly, write `nullptr`, CU_STREAM_LEGACY or CU_STREAM_PER_THREAD.
class LaunchStream {
public:
    constexpr LaunchStream() noexcept = default;
    constexpr LaunchStream(std::nullptr_t) noexcept {}
    constexpr LaunchStream(CUstream stream) noexcept : stream_(stream), nullHandle_(stream == nullptr) {}
    /// `stream`'s handle; an empty Stream is refused at the launch.
    LaunchStream(const Stream& stream) noexcept;

    constexpr CUstream native() const noexcept { return stream_; }
    /// Whether it was made from a null CUstream or an empty Stream, which cuctx::launch refuses.
    constexpr bool nullHandle() const noexcept { return nullHandle_; }

private:
    CUstream stream_ = nullptr;
    bool nullHandle_ = false;
};

/// Grid, block, dynamic shared memory and stream of a launch, and the cuLaunchKernelEx attributes
/// cuctx supports. A cluster of {0,0,0} means none.
struct LaunchConfig {
    Dim3 grid;
    Dim3 block;
    unsigned sharedBytes = 0; ///< dynamic shared memory per block
    LaunchStream stream{};    ///< left out: the context's default stream (see LaunchStream)
    Dim3 cluster{0, 0, 0};    ///< thread-block cluster dimensions (sm_90+), via cuLaunchKernelEx
    bool cooperative = false; ///< a cooperative launch (grid-wide sync), via cuLaunchKernelEx
};

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once

// cuctx::DeviceBuffer: device memory of one context (cuMemAlloc). Move-only RAII; copies are
// thread-safe as the driver's are.

#include "cuctx/context.hpp"
#include "cuctx/detail/context_owned.hpp"
#include "cuctx/export.hpp"
#include "cuctx/ipc_handle.hpp"

#include <cuda.h>

#include <cstddef>
#include <span>
#include <vector>

namespace cuctx {

class Stream;

namespace detail {
/// Device memory as DeviceBuffer and IpcMemory own it.
struct DeviceRange {
    CUdeviceptr address = 0;
    std::size_t bytes = 0;
    friend bool operator==(const DeviceRange&, const DeviceRange&) = default;
};
struct CUCTX_API DeviceAllocationTraits {
    using Handle = DeviceRange;
    static void destroy(const Context& context, DeviceRange range) noexcept; // cuMemFree
};
struct CUCTX_API IpcMappingTraits {
    using Handle = DeviceRange;
    static void destroy(const Context& context, DeviceRange range) noexcept; // cuIpcCloseMemHandle
};
} // namespace detail

class CUCTX_API DeviceBuffer {
public:
    DeviceBuffer() = default; ///< empty
    DeviceBuffer(const Context& context, std::size_t bytes);
    DeviceBuffer(DeviceBuffer&& other) noexcept = default;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept = default;
    ~DeviceBuffer() = default; ///< frees in its context; never throws

    explicit operator bool() const noexcept { return static_cast<bool>(owned_); }

    /// Host to device and back, synchronously, at `offset` bytes; out-of-range copies are errors.
    /// Synchronously means done on the device when they return, so that work on any stream of any
    /// context sees them (the driver's own cuMemcpyHtoD from pageable memory and cuMemsetD32 may
    /// return earlier; cuctx waits for the legacy stream after them).
    void upload(const void* source, std::size_t bytes, std::size_t offset = 0) const;
    void download(void* destination, std::size_t bytes, std::size_t offset = 0) const;
    /// The same, queued on `stream` (for overlap, the host memory should be page-locked).
    void uploadAsync(const void* source, std::size_t bytes, const Stream& stream, std::size_t offset = 0) const;
    void downloadAsync(void* destination, std::size_t bytes, const Stream& stream, std::size_t offset = 0) const;
    /// Copies all of `source` (no larger than this) here, on `stream`: a plain device copy in one
    /// context, a peer copy (cuMemcpyPeerAsync) between two, on one device or two.
    void copyFrom(const DeviceBuffer& source, const Stream& stream) const;
    /// Sets every 32-bit word, synchronously (done when it returns) or on `stream`.
    void fill32(unsigned value) const;
    void fill32(unsigned value, const Stream& stream) const;

    template <typename T>
    void upload(std::span<const T> values) const
    {
        upload(values.data(), values.size_bytes());
    }
    template <typename T>
    std::vector<T> download() const
    {
        std::vector<T> values(bytes() / sizeof(T));
        download(values.data(), values.size() * sizeof(T));
        return values;
    }

    /// The handle another process opens with IpcMemory (cuIpcGetMemHandle).
    IpcMemHandle ipcHandle() const;

    CUdeviceptr address() const noexcept { return owned_.get().address; }
    std::size_t bytes() const noexcept { return owned_.get().bytes; }
    const Context& context() const;

private:
    void checkRange(const char* call, std::size_t bytes, std::size_t offset) const;

    detail::ContextOwned<detail::DeviceAllocationTraits> owned_;
};

/// Another process's device memory, mapped into a context of this one (cuIpcOpenMemHandle);
/// unmapped when it goes. Move-only RAII.
class CUCTX_API IpcMemory {
public:
    IpcMemory() = default;
    IpcMemory(const Context& context, const IpcMemHandle& handle);
    IpcMemory(IpcMemory&& other) noexcept = default;
    IpcMemory& operator=(IpcMemory&& other) noexcept = default;
    ~IpcMemory() = default; ///< unmaps in its context; never throws

    void download(void* destination, std::size_t bytes, std::size_t offset = 0) const;
    CUdeviceptr address() const noexcept { return owned_.get().address; }
    std::size_t bytes() const noexcept { return owned_.get().bytes; }

private:
    detail::ContextOwned<detail::IpcMappingTraits> owned_;
};

} // namespace cuctx

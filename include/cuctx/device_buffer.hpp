// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::DeviceBuffer and cuctx::IpcMemory: device memory of one context, allocated here or mapped
/// from another process.

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

/// Device memory of one context (cuMemAlloc), freed in that context when the buffer goes. Move-only
/// RAII; it keeps its context alive.
///
/// \par Threading
/// Thread-safe for every const member: copies may be queued and run from any threads at once (each
/// enters the buffer's context on its own thread). What concurrent copies do to the same bytes of
/// device memory is the program's to order, with streams and events. Moving or destroying a buffer
/// must not overlap with other use of it; it may be destroyed on any thread.
class CUCTX_API DeviceBuffer {
public:
    DeviceBuffer() = default; ///< empty
    /// Allocates `bytes` bytes in `context` (cuMemAlloc).
    DeviceBuffer(const Context& context, std::size_t bytes);
    /// Takes over `other`'s memory; `other` is left empty.
    DeviceBuffer(DeviceBuffer&& other) noexcept = default;
    /// Frees this buffer's memory, then takes over `other`'s; `other` is left empty.
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept = default;
    ~DeviceBuffer() = default; ///< frees in its context; never throws

    /// Whether it holds memory (false when default-constructed or moved from).
    explicit operator bool() const noexcept { return static_cast<bool>(owned_); }

    /// Host to device and back, synchronously, at `offset` bytes; out-of-range copies are errors.
    /// Synchronously means done on the device when they return, so that work on any stream of any
    /// context sees them (the driver's own cuMemcpyHtoD from pageable memory and cuMemsetD32 may
    /// return earlier; cuctx waits for the legacy stream after them).
    void upload(const void* source, std::size_t bytes, std::size_t offset = 0) const;
    /// Device to host, synchronously: `bytes` bytes from `offset` into `destination`.
    void download(void* destination, std::size_t bytes, std::size_t offset = 0) const;
    /// The same, queued on `stream`, a stream of the buffer's context (for overlap, the host memory
    /// should be page-locked). The host memory must stay valid until the copy is done.
    void uploadAsync(const void* source, std::size_t bytes, const Stream& stream, std::size_t offset = 0) const;
    /// Device to host, queued on `stream` (see uploadAsync).
    void downloadAsync(void* destination, std::size_t bytes, const Stream& stream, std::size_t offset = 0) const;
    /// Copies all of `source` (no larger than this) here, on `stream`: a plain device copy in one
    /// context, a peer copy (cuMemcpyPeerAsync) between two, on one device or two.
    void copyFrom(const DeviceBuffer& source, const Stream& stream) const;
    /// Sets every 32-bit word, synchronously (done when it returns) or on `stream`.
    void fill32(unsigned value) const;
    /// Sets every 32-bit word, queued on `stream`, a stream of the buffer's context.
    void fill32(unsigned value, const Stream& stream) const;

    /// Uploads `values` to the start of the buffer, synchronously.
    template <typename T>
    void upload(std::span<const T> values) const
    {
        upload(values.data(), values.size_bytes());
    }
    /// Downloads the whole buffer as values of T (as many as fit), synchronously.
    template <typename T>
    std::vector<T> download() const
    {
        std::vector<T> values(bytes() / sizeof(T));
        download(values.data(), values.size() * sizeof(T));
        return values;
    }

    /// The handle another process opens with IpcMemory (cuIpcGetMemHandle).
    IpcMemHandle ipcHandle() const;

    /// The device address (0 when empty).
    CUdeviceptr address() const noexcept { return owned_.get().address; }
    /// The size in bytes (0 when empty).
    std::size_t bytes() const noexcept { return owned_.get().bytes; }
    /// The context the memory belongs to.
    const Context& context() const;

private:
    void checkRange(const char* call, std::size_t bytes, std::size_t offset) const;

    detail::ContextOwned<detail::DeviceAllocationTraits> owned_;
};

/// Another process's device memory, mapped into a context of this one (cuIpcOpenMemHandle);
/// unmapped when it goes. Move-only RAII.
///
/// \par Threading
/// Thread-safe for every const member, as DeviceBuffer.
class CUCTX_API IpcMemory {
public:
    IpcMemory() = default; ///< empty
    /// Maps the memory that `handle` (DeviceBuffer::ipcHandle in another process) names into `context`.
    IpcMemory(const Context& context, const IpcMemHandle& handle);
    /// Takes over `other`'s mapping; `other` is left empty.
    IpcMemory(IpcMemory&& other) noexcept = default;
    /// Unmaps this mapping, then takes over `other`'s; `other` is left empty.
    IpcMemory& operator=(IpcMemory&& other) noexcept = default;
    ~IpcMemory() = default; ///< unmaps in its context; never throws

    /// Device to host, synchronously: `bytes` bytes from `offset` into `destination`.
    void download(void* destination, std::size_t bytes, std::size_t offset = 0) const;
    /// The mapped address in this process (0 when empty).
    CUdeviceptr address() const noexcept { return owned_.get().address; }
    /// The size the sender allocated, in bytes (0 when empty).
    std::size_t bytes() const noexcept { return owned_.get().bytes; }

private:
    detail::ContextOwned<detail::IpcMappingTraits> owned_;
};

} // namespace cuctx

// SPDX-License-Identifier: MIT
#include "cuctx/device_buffer.hpp"

#include "cuctx/context_guard.hpp"
#include "cuctx/stream.hpp"

#include "check/check.hpp"
#include "context/cleanup.hpp"
#include "context/context_access.hpp"
#include "context/deferred_cleanup.hpp"
#include "driver/driver_state.hpp"
#include "objects/live_objects.hpp"

#include <cstring>

namespace cuctx {

namespace {

detail::Subject subjectOfContext(const Context& context)
{
    return detail::subjectOf(*detail::ContextAccess::state(context));
}

void requireSameContext(const char* call, const Context& buffer, const Stream& stream)
{
    if (!stream)
        detail::throwError(Errc::invalid_argument, call, "the Stream is empty");
    if (!(stream.context() == buffer))
        detail::throwError(Errc::invalid_argument, call,
                           "the buffer is in " + detail::describeContext(*detail::ContextAccess::state(buffer)) +
                               ", the stream in " +
                               detail::describeContext(*detail::ContextAccess::state(stream.context())),
                           "Queue copies on a stream of the buffer's context (DeviceBuffer::copyFrom copies between "
                           "contexts)");
}

} // namespace

namespace detail {

void DeviceAllocationTraits::destroy(const Context& context, DeviceRange range) noexcept
{
    ContextState* cs = ContextAccess::state(context);
    cleanupInContext(*cs, [cs, p = range.address] {
        if (!inContextForCleanup(*cs, "cuMemFree", [p](const DriverApi& d) { return d.cuMemFree(p); }))
            return false;
        g_liveBuffers.fetch_sub(1, std::memory_order_relaxed);
        return true;
    });
}

void IpcMappingTraits::destroy(const Context& context, DeviceRange range) noexcept
{
    ContextState* cs = ContextAccess::state(context);
    cleanupInContext(*cs, [cs, p = range.address] {
        return inContextForCleanup(*cs, "cuIpcCloseMemHandle",
                                   [p](const DriverApi& d) { return d.cuIpcCloseMemHandle(p); });
    });
}

} // namespace detail

DeviceBuffer::DeviceBuffer(const Context& context, std::size_t bytes)
{
    detail::ContextState& cs = detail::checkedState(context, "cuctx::DeviceBuffer");
    if (bytes == 0)
        detail::throwError(Errc::invalid_argument, "cuctx::DeviceBuffer", "a buffer of 0 bytes",
                           "Allocate at least one byte", detail::subjectOf(cs));
    ContextGuard guard(context);
    CUdeviceptr address = 0;
    const CUresult r = detail::api().cuMemAlloc(&address, bytes);
    if (r != CUDA_SUCCESS)
        detail::throwDriverError(r, "cuMemAlloc", detail::subjectOf(cs), SourceLocation::current(),
                                 "allocating " + std::to_string(bytes) + " bytes");
    owned_ = detail::ContextOwned<detail::DeviceAllocationTraits>(context, {address, bytes});
    detail::g_liveBuffers.fetch_add(1, std::memory_order_relaxed);
}

void DeviceBuffer::checkRange(const char* call, std::size_t bytes, std::size_t offset) const
{
    if (owned_.get().address == 0)
        detail::throwError(Errc::invalid_argument, call,
                           "the DeviceBuffer is empty (default-constructed or moved from)");
    if (offset > owned_.get().bytes || bytes > owned_.get().bytes - offset)
        detail::throwError(Errc::invalid_argument, call,
                           std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                               " do not fit in a buffer of " + std::to_string(owned_.get().bytes) + " bytes",
                           "", subjectOfContext(owned_.context()));
}

void DeviceBuffer::upload(const void* source, std::size_t bytes, std::size_t offset) const
{
    checkRange("cuctx::DeviceBuffer::upload", bytes, offset);
    ContextGuard guard(owned_.context());
    const detail::DriverApi& d = detail::api();
    detail::check(d.cuMemcpyHtoD(owned_.get().address + offset, source, bytes), "cuMemcpyHtoD",
                  subjectOfContext(owned_.context()));
    // From pageable memory the driver returns once it has staged the data, before the device has it:
    // wait for the legacy stream, so that work on any stream sees the upload.
    detail::check(d.cuStreamSynchronize(nullptr), "cuStreamSynchronize", subjectOfContext(owned_.context()));
}

void DeviceBuffer::download(void* destination, std::size_t bytes, std::size_t offset) const
{
    checkRange("cuctx::DeviceBuffer::download", bytes, offset);
    ContextGuard guard(owned_.context());
    detail::check(detail::api().cuMemcpyDtoH(destination, owned_.get().address + offset, bytes), "cuMemcpyDtoH",
                  subjectOfContext(owned_.context()));
}

void DeviceBuffer::uploadAsync(const void* source, std::size_t bytes, const Stream& stream, std::size_t offset) const
{
    checkRange("cuctx::DeviceBuffer::uploadAsync", bytes, offset);
    requireSameContext("cuctx::DeviceBuffer::uploadAsync", owned_.context(), stream);
    ContextGuard guard(owned_.context());
    detail::check(detail::api().cuMemcpyHtoDAsync(owned_.get().address + offset, source, bytes, stream.native()),
                  "cuMemcpyHtoDAsync", subjectOfContext(owned_.context()));
}

void DeviceBuffer::downloadAsync(void* destination, std::size_t bytes, const Stream& stream, std::size_t offset) const
{
    checkRange("cuctx::DeviceBuffer::downloadAsync", bytes, offset);
    requireSameContext("cuctx::DeviceBuffer::downloadAsync", owned_.context(), stream);
    ContextGuard guard(owned_.context());
    detail::check(detail::api().cuMemcpyDtoHAsync(destination, owned_.get().address + offset, bytes, stream.native()),
                  "cuMemcpyDtoHAsync", subjectOfContext(owned_.context()));
}

void DeviceBuffer::copyFrom(const DeviceBuffer& source, const Stream& stream) const
{
    if (!source)
        detail::throwError(Errc::invalid_argument, "cuctx::DeviceBuffer::copyFrom", "the source buffer is empty");
    checkRange("cuctx::DeviceBuffer::copyFrom", source.bytes(), 0);
    if (!stream)
        detail::throwError(Errc::invalid_argument, "cuctx::DeviceBuffer::copyFrom", "the Stream is empty");
    const detail::DriverApi& d = detail::api();
    ContextGuard guard(stream.context());
    if (source.owned_.context() == owned_.context()) {
        detail::check(d.cuMemcpyDtoDAsync(owned_.get().address, source.address(), source.bytes(), stream.native()),
                      "cuMemcpyDtoDAsync", subjectOfContext(owned_.context()));
        return;
    }
    detail::check(d.cuMemcpyPeerAsync(owned_.get().address, owned_.context().native(), source.address(),
                                      source.owned_.context().native(), source.bytes(), stream.native()),
                  "cuMemcpyPeerAsync", subjectOfContext(owned_.context()));
}

void DeviceBuffer::fill32(unsigned value) const
{
    checkRange("cuctx::DeviceBuffer::fill32", owned_.get().bytes, 0);
    ContextGuard guard(owned_.context());
    const detail::DriverApi& d = detail::api();
    detail::check(d.cuMemsetD32(owned_.get().address, value, owned_.get().bytes / 4), "cuMemsetD32",
                  subjectOfContext(owned_.context()));
    // A memset of device memory may return before it is done: make it visible to every stream.
    detail::check(d.cuStreamSynchronize(nullptr), "cuStreamSynchronize", subjectOfContext(owned_.context()));
}

void DeviceBuffer::fill32(unsigned value, const Stream& stream) const
{
    checkRange("cuctx::DeviceBuffer::fill32", owned_.get().bytes, 0);
    requireSameContext("cuctx::DeviceBuffer::fill32", owned_.context(), stream);
    ContextGuard guard(owned_.context());
    detail::check(detail::api().cuMemsetD32Async(owned_.get().address, value, owned_.get().bytes / 4, stream.native()),
                  "cuMemsetD32Async", subjectOfContext(owned_.context()));
}

IpcMemHandle DeviceBuffer::ipcHandle() const
{
    checkRange("cuctx::DeviceBuffer::ipcHandle", 0, 0);
    CUipcMemHandle h{};
    ContextGuard guard(owned_.context());
    detail::check(detail::api().cuIpcGetMemHandle(&h, owned_.get().address), "cuIpcGetMemHandle",
                  subjectOfContext(owned_.context()));
    IpcMemHandle out;
    std::memcpy(out.bytes.data(), h.reserved, sizeof h.reserved);
    out.size = owned_.get().bytes;
    return out;
}

const Context& DeviceBuffer::context() const
{
    checkRange("cuctx::DeviceBuffer::context", 0, 0);
    return owned_.context();
}

IpcMemory::IpcMemory(const Context& context, const IpcMemHandle& handle)
{
    detail::ContextState& cs = detail::checkedState(context, "cuctx::IpcMemory");
    CUipcMemHandle h{};
    std::memcpy(h.reserved, handle.bytes.data(), sizeof h.reserved);
    ContextGuard guard(context);
    CUdeviceptr address = 0;
    const CUresult r = detail::api().cuIpcOpenMemHandle(&address, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r != CUDA_SUCCESS)
        detail::throwDriverError(r, "cuIpcOpenMemHandle", detail::subjectOf(cs), SourceLocation::current(),
                                 "opening another process's memory handle",
                                 "A process cannot open its own handles; the memory must still be allocated in the "
                                 "process that made the handle");
    owned_ = detail::ContextOwned<detail::IpcMappingTraits>(context, {address, handle.size});
}

void IpcMemory::download(void* destination, std::size_t bytes, std::size_t offset) const
{
    if (owned_.get().address == 0 || offset > owned_.get().bytes || bytes > owned_.get().bytes - offset)
        detail::throwError(Errc::invalid_argument, "cuctx::IpcMemory::download",
                           std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                               " do not fit in a mapping of " + std::to_string(owned_.get().bytes) + " bytes");
    ContextGuard guard(owned_.context());
    detail::check(detail::api().cuMemcpyDtoH(destination, owned_.get().address + offset, bytes), "cuMemcpyDtoH",
                  subjectOfContext(owned_.context()));
}

} // namespace cuctx

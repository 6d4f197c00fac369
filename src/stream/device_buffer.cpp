#include "cuctx/device_buffer.hpp"

#include "cuctx/context_guard.hpp"
#include "cuctx/stream.hpp"

#include "context/cleanup.hpp"
#include "context/context_access.hpp"
#include "driver/check.hpp"
#include "driver/driver_state.hpp"
#include "live_counters.hpp"

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

DeviceBuffer::DeviceBuffer(const Context& context, std::size_t bytes) : context_(context), bytes_(bytes)
{
    detail::ContextState& cs = detail::checkedState(context, "cuctx::DeviceBuffer");
    if (bytes == 0)
        detail::throwError(Errc::invalid_argument, "cuctx::DeviceBuffer", "a buffer of 0 bytes",
                           "Allocate at least one byte", detail::subjectOf(cs));
    ContextGuard guard(context);
    const CUresult r = detail::api().cuMemAlloc(&address_, bytes);
    if (r != CUDA_SUCCESS) {
        address_ = 0;
        detail::throwDriverError(r, "cuMemAlloc", detail::subjectOf(cs), std::source_location::current(),
                                 "allocating " + std::to_string(bytes) + " bytes");
    }
    detail::g_liveBuffers.fetch_add(1, std::memory_order_relaxed);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : context_(std::move(other.context_)), address_(other.address_), bytes_(other.bytes_)
{
    other.address_ = 0;
    other.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept
{
    if (this != &other) {
        reset();
        context_ = std::move(other.context_);
        address_ = other.address_;
        bytes_ = other.bytes_;
        other.address_ = 0;
        other.bytes_ = 0;
    }
    return *this;
}

DeviceBuffer::~DeviceBuffer()
{
    reset();
}

void DeviceBuffer::reset() noexcept
{
    if (address_ != 0) {
        const CUdeviceptr p = address_;
        detail::inContextForCleanup(*detail::ContextAccess::state(context_), "cuMemFree",
                                    [p](const detail::DriverApi& d) { return d.cuMemFree(p); });
        detail::g_liveBuffers.fetch_sub(1, std::memory_order_relaxed);
        address_ = 0;
    }
    bytes_ = 0;
    context_.reset();
}

void DeviceBuffer::checkRange(const char* call, std::size_t bytes, std::size_t offset) const
{
    if (address_ == 0)
        detail::throwError(Errc::invalid_argument, call, "the DeviceBuffer is empty (default-constructed or moved from)");
    if (offset > bytes_ || bytes > bytes_ - offset)
        detail::throwError(Errc::invalid_argument, call,
                           std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                               " do not fit in a buffer of " + std::to_string(bytes_) + " bytes",
                           "", subjectOfContext(context_));
}

void DeviceBuffer::upload(const void* source, std::size_t bytes, std::size_t offset) const
{
    checkRange("cuctx::DeviceBuffer::upload", bytes, offset);
    ContextGuard guard(context_);
    const detail::DriverApi& d = detail::api();
    detail::check(d.cuMemcpyHtoD(address_ + offset, source, bytes), "cuMemcpyHtoD", subjectOfContext(context_));
    // From pageable memory the driver returns once it has staged the data, before the device has it:
    // wait for the legacy stream, so that work on any stream sees the upload.
    detail::check(d.cuStreamSynchronize(nullptr), "cuStreamSynchronize", subjectOfContext(context_));
}

void DeviceBuffer::download(void* destination, std::size_t bytes, std::size_t offset) const
{
    checkRange("cuctx::DeviceBuffer::download", bytes, offset);
    ContextGuard guard(context_);
    detail::check(detail::api().cuMemcpyDtoH(destination, address_ + offset, bytes), "cuMemcpyDtoH",
                  subjectOfContext(context_));
}

void DeviceBuffer::uploadAsync(const void* source, std::size_t bytes, const Stream& stream, std::size_t offset) const
{
    checkRange("cuctx::DeviceBuffer::uploadAsync", bytes, offset);
    requireSameContext("cuctx::DeviceBuffer::uploadAsync", context_, stream);
    ContextGuard guard(context_);
    detail::check(detail::api().cuMemcpyHtoDAsync(address_ + offset, source, bytes, stream.native()),
                  "cuMemcpyHtoDAsync", subjectOfContext(context_));
}

void DeviceBuffer::downloadAsync(void* destination, std::size_t bytes, const Stream& stream, std::size_t offset) const
{
    checkRange("cuctx::DeviceBuffer::downloadAsync", bytes, offset);
    requireSameContext("cuctx::DeviceBuffer::downloadAsync", context_, stream);
    ContextGuard guard(context_);
    detail::check(detail::api().cuMemcpyDtoHAsync(destination, address_ + offset, bytes, stream.native()),
                  "cuMemcpyDtoHAsync", subjectOfContext(context_));
}

void DeviceBuffer::copyFrom(const DeviceBuffer& source, const Stream& stream) const
{
    if (!source)
        detail::throwError(Errc::invalid_argument, "cuctx::DeviceBuffer::copyFrom", "the source buffer is empty");
    checkRange("cuctx::DeviceBuffer::copyFrom", source.bytes_, 0);
    if (!stream)
        detail::throwError(Errc::invalid_argument, "cuctx::DeviceBuffer::copyFrom", "the Stream is empty");
    const detail::DriverApi& d = detail::api();
    ContextGuard guard(stream.context());
    if (source.context_ == context_) {
        detail::check(d.cuMemcpyDtoDAsync(address_, source.address_, source.bytes_, stream.native()),
                      "cuMemcpyDtoDAsync", subjectOfContext(context_));
        return;
    }
    detail::check(d.cuMemcpyPeerAsync(address_, context_.native(), source.address_, source.context_.native(),
                                      source.bytes_, stream.native()),
                  "cuMemcpyPeerAsync", subjectOfContext(context_));
}

void DeviceBuffer::fill32(unsigned value) const
{
    checkRange("cuctx::DeviceBuffer::fill32", bytes_, 0);
    ContextGuard guard(context_);
    const detail::DriverApi& d = detail::api();
    detail::check(d.cuMemsetD32(address_, value, bytes_ / 4), "cuMemsetD32", subjectOfContext(context_));
    // A memset of device memory may return before it is done: make it visible to every stream.
    detail::check(d.cuStreamSynchronize(nullptr), "cuStreamSynchronize", subjectOfContext(context_));
}

void DeviceBuffer::fill32(unsigned value, const Stream& stream) const
{
    checkRange("cuctx::DeviceBuffer::fill32", bytes_, 0);
    requireSameContext("cuctx::DeviceBuffer::fill32", context_, stream);
    ContextGuard guard(context_);
    detail::check(detail::api().cuMemsetD32Async(address_, value, bytes_ / 4, stream.native()), "cuMemsetD32Async",
                  subjectOfContext(context_));
}

IpcMemHandle DeviceBuffer::ipcHandle() const
{
    checkRange("cuctx::DeviceBuffer::ipcHandle", 0, 0);
    CUipcMemHandle h{};
    ContextGuard guard(context_);
    detail::check(detail::api().cuIpcGetMemHandle(&h, address_), "cuIpcGetMemHandle", subjectOfContext(context_));
    IpcMemHandle out;
    std::memcpy(out.bytes.data(), h.reserved, sizeof h.reserved);
    out.size = bytes_;
    return out;
}

const Context& DeviceBuffer::context() const
{
    checkRange("cuctx::DeviceBuffer::context", 0, 0);
    return context_;
}

IpcMemory::IpcMemory(const Context& context, const IpcMemHandle& handle) : context_(context), bytes_(handle.size)
{
    detail::ContextState& cs = detail::checkedState(context, "cuctx::IpcMemory");
    CUipcMemHandle h{};
    std::memcpy(h.reserved, handle.bytes.data(), sizeof h.reserved);
    ContextGuard guard(context);
    const CUresult r = detail::api().cuIpcOpenMemHandle(&address_, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r != CUDA_SUCCESS) {
        address_ = 0;
        detail::throwDriverError(r, "cuIpcOpenMemHandle", detail::subjectOf(cs), std::source_location::current(),
                                 "opening another process's memory handle",
                                 "A process cannot open its own handles; the memory must still be allocated in the "
                                 "process that made the handle");
    }
}

IpcMemory::IpcMemory(IpcMemory&& other) noexcept
    : context_(std::move(other.context_)), address_(other.address_), bytes_(other.bytes_)
{
    other.address_ = 0;
}

IpcMemory& IpcMemory::operator=(IpcMemory&& other) noexcept
{
    if (this != &other) {
        reset();
        context_ = std::move(other.context_);
        address_ = other.address_;
        bytes_ = other.bytes_;
        other.address_ = 0;
    }
    return *this;
}

IpcMemory::~IpcMemory()
{
    reset();
}

void IpcMemory::reset() noexcept
{
    if (address_ != 0) {
        const CUdeviceptr p = address_;
        detail::inContextForCleanup(*detail::ContextAccess::state(context_), "cuIpcCloseMemHandle",
                                    [p](const detail::DriverApi& d) { return d.cuIpcCloseMemHandle(p); });
        address_ = 0;
    }
    context_.reset();
}

void IpcMemory::download(void* destination, std::size_t bytes, std::size_t offset) const
{
    if (address_ == 0 || offset > bytes_ || bytes > bytes_ - offset)
        detail::throwError(Errc::invalid_argument, "cuctx::IpcMemory::download",
                           std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                               " do not fit in a mapping of " + std::to_string(bytes_) + " bytes");
    ContextGuard guard(context_);
    detail::check(detail::api().cuMemcpyDtoH(destination, address_ + offset, bytes), "cuMemcpyDtoH",
                  subjectOfContext(context_));
}

} // namespace cuctx

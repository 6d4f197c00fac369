// SPDX-License-Identifier: MIT
// Generated once from the CUDA 13.0 cuda.h enumerators (names, values, first sentence of each doc
// comment); test/cpu/test_error_table.cpp checks it against the installed cuda.h.
#include "check/error_names.hpp"

#include <algorithm>
#include <array>

namespace cuctx::detail {
namespace {

// One row per result, as cuda.h lists them.
// clang-format off
constexpr std::array kResultNames{
    ResultName{0, "CUDA_SUCCESS", "The API call returned with no errors"},
    ResultName{1, "CUDA_ERROR_INVALID_VALUE", "This indicates that one or more of the parameters passed to the API call is not within an acceptable range of values"},
    ResultName{2, "CUDA_ERROR_OUT_OF_MEMORY", "The API call failed because it was unable to allocate enough memory or other resources to perform the requested operation"},
    ResultName{3, "CUDA_ERROR_NOT_INITIALIZED", "This indicates that the CUDA driver has not been initialized with cuInit() or that initialization has failed"},
    ResultName{4, "CUDA_ERROR_DEINITIALIZED", "This indicates that the CUDA driver is in the process of shutting down"},
    ResultName{5, "CUDA_ERROR_PROFILER_DISABLED", "This indicates profiler is not initialized for this run"},
    ResultName{6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED", "This error return is deprecated as of CUDA 5.0"},
    ResultName{7, "CUDA_ERROR_PROFILER_ALREADY_STARTED", "This error return is deprecated as of CUDA 5.0"},
    ResultName{8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED", "This error return is deprecated as of CUDA 5.0"},
    ResultName{34, "CUDA_ERROR_STUB_LIBRARY", "This indicates that the CUDA driver that the application has loaded is a stub library"},
    ResultName{36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "This indicates that the API call requires a newer CUDA driver than the one currently installed"},
    ResultName{46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "This indicates that requested CUDA device is unavailable at the current time"},
    ResultName{100, "CUDA_ERROR_NO_DEVICE", "This indicates that no CUDA-capable devices were detected by the installed CUDA driver"},
    ResultName{101, "CUDA_ERROR_INVALID_DEVICE", "This indicates that the device ordinal supplied by the user does not correspond to a valid CUDA device or that the action requested is invalid for the specified device"},
    ResultName{102, "CUDA_ERROR_DEVICE_NOT_LICENSED", "This error indicates that the Grid license is not applied"},
    ResultName{200, "CUDA_ERROR_INVALID_IMAGE", "This indicates that the device kernel image is invalid"},
    ResultName{201, "CUDA_ERROR_INVALID_CONTEXT", "This most frequently indicates that there is no context bound to the current thread"},
    ResultName{202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", "This indicated that the context being supplied as a parameter to the API call was already the active context"},
    ResultName{205, "CUDA_ERROR_MAP_FAILED", "This indicates that a map or register operation has failed"},
    ResultName{206, "CUDA_ERROR_UNMAP_FAILED", "This indicates that an unmap or unregister operation has failed"},
    ResultName{207, "CUDA_ERROR_ARRAY_IS_MAPPED", "This indicates that the specified array is currently mapped and thus cannot be destroyed"},
    ResultName{208, "CUDA_ERROR_ALREADY_MAPPED", "This indicates that the resource is already mapped"},
    ResultName{209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "This indicates that there is no kernel image available that is suitable for the device"},
    ResultName{210, "CUDA_ERROR_ALREADY_ACQUIRED", "This indicates that a resource has already been acquired"},
    ResultName{211, "CUDA_ERROR_NOT_MAPPED", "This indicates that a resource is not mapped"},
    ResultName{212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY", "This indicates that a mapped resource is not available for access as an array"},
    ResultName{213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER", "This indicates that a mapped resource is not available for access as a pointer"},
    ResultName{214, "CUDA_ERROR_ECC_UNCORRECTABLE", "This indicates that an uncorrectable ECC error was detected during execution"},
    ResultName{215, "CUDA_ERROR_UNSUPPORTED_LIMIT", "This indicates that the CUlimit passed to the API call is not supported by the active device"},
    ResultName{216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", "This indicates that the CUcontext passed to the API call can only be bound to a single CPU thread at a time but is already bound to a CPU thread"},
    ResultName{217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "This indicates that peer access is not supported across the given devices"},
    ResultName{218, "CUDA_ERROR_INVALID_PTX", "This indicates that a PTX JIT compilation failed"},
    ResultName{219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", "This indicates an error with OpenGL or DirectX context"},
    ResultName{220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", "This indicates that an uncorrectable NVLink error was detected during the execution"},
    ResultName{221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "This indicates that the PTX JIT compiler library was not found"},
    ResultName{222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "This indicates that the provided PTX was compiled with an unsupported toolchain"},
    ResultName{223, "CUDA_ERROR_JIT_COMPILATION_DISABLED", "This indicates that the PTX JIT compilation was disabled"},
    ResultName{224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", "This indicates that the CUexecAffinityType passed to the API call is not supported by the active device"},
    ResultName{225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", "This indicates that the code to be compiled by the PTX JIT contains unsupported call to cudaDeviceSynchronize"},
    ResultName{226, "CUDA_ERROR_CONTAINED", "This indicates that an exception occurred on the device that is now contained by the GPU's error containment capability"},
    ResultName{300, "CUDA_ERROR_INVALID_SOURCE", "This indicates that the device kernel source is invalid"},
    ResultName{301, "CUDA_ERROR_FILE_NOT_FOUND", "This indicates that the file specified was not found"},
    ResultName{302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", "This indicates that a link to a shared object failed to resolve"},
    ResultName{303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "This indicates that initialization of a shared object failed"},
    ResultName{304, "CUDA_ERROR_OPERATING_SYSTEM", "This indicates that an OS call failed"},
    ResultName{400, "CUDA_ERROR_INVALID_HANDLE", "This indicates that a resource handle passed to the API call was not valid"},
    ResultName{401, "CUDA_ERROR_ILLEGAL_STATE", "This indicates that a resource required by the API call is not in a valid state to perform the requested operation"},
    ResultName{402, "CUDA_ERROR_LOSSY_QUERY", "This indicates an attempt was made to introspect an object in a way that would discard semantically important information"},
    ResultName{500, "CUDA_ERROR_NOT_FOUND", "This indicates that a named symbol was not found"},
    ResultName{600, "CUDA_ERROR_NOT_READY", "This indicates that asynchronous operations issued previously have not completed yet"},
    ResultName{700, "CUDA_ERROR_ILLEGAL_ADDRESS", "While executing a kernel, the device encountered a load or store instruction on an invalid memory address"},
    ResultName{701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "This indicates that a launch did not occur because it did not have appropriate resources"},
    ResultName{702, "CUDA_ERROR_LAUNCH_TIMEOUT", "This indicates that the device kernel took too long to execute"},
    ResultName{703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", "This error indicates a kernel launch that uses an incompatible texturing mode"},
    ResultName{704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "This error indicates that a call to cuCtxEnablePeerAccess() is trying to re-enable peer access to a context which has already had peer access to it enabled"},
    ResultName{705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "This error indicates that cuCtxDisablePeerAccess() is trying to disable peer access which has not been enabled yet via cuCtxEnablePeerAccess()"},
    ResultName{708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "This error indicates that the primary context for the specified device has already been initialized"},
    ResultName{709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "This error indicates that the context current to the calling thread has been destroyed using cuCtxDestroy, or is a primary context which has not yet been initialized"},
    ResultName{710, "CUDA_ERROR_ASSERT", "A device-side assert triggered during kernel execution"},
    ResultName{711, "CUDA_ERROR_TOO_MANY_PEERS", "This error indicates that the hardware resources required to enable peer access have been exhausted for one or more of the devices passed to cuCtxEnablePeerAccess()"},
    ResultName{712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "This error indicates that the memory range passed to cuMemHostRegister() has already been registered"},
    ResultName{713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "This error indicates that the pointer passed to cuMemHostUnregister() does not correspond to any currently registered memory region"},
    ResultName{714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "While executing a kernel, the device encountered a stack error"},
    ResultName{715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "While executing a kernel, the device encountered an illegal instruction"},
    ResultName{716, "CUDA_ERROR_MISALIGNED_ADDRESS", "While executing a kernel, the device encountered a load or store instruction on a memory address which is not aligned"},
    ResultName{717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "While executing a kernel, the device encountered an instruction which can only operate on memory locations in certain address spaces (global, shared, or local), but was supplied a memory address not belonging to an allowed address space"},
    ResultName{718, "CUDA_ERROR_INVALID_PC", "While executing a kernel, the device program counter wrapped its address space"},
    ResultName{719, "CUDA_ERROR_LAUNCH_FAILED", "An exception occurred on the device while executing a kernel"},
    ResultName{720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "This error indicates that the number of blocks launched per grid for a kernel that was launched via either cuLaunchCooperativeKernel or cuLaunchCooperativeKernelMultiDevice exceeds the maximum number of blocks as allowed by cuOccupancyMaxActiveBlocksPerMultiprocessor or cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags times the number of multiprocessors as specified by the device attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"},
    ResultName{721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", "An exception occurred on the device while exiting a kernel using tensor memory: the tensor memory was not completely deallocated"},
    ResultName{800, "CUDA_ERROR_NOT_PERMITTED", "This error indicates that the attempted operation is not permitted"},
    ResultName{801, "CUDA_ERROR_NOT_SUPPORTED", "This error indicates that the attempted operation is not supported on the current system or device"},
    ResultName{802, "CUDA_ERROR_SYSTEM_NOT_READY", "This error indicates that the system is not yet ready to start any CUDA work"},
    ResultName{803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "This error indicates that there is a mismatch between the versions of the display driver and the CUDA driver"},
    ResultName{804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "This error indicates that the system was upgraded to run with forward compatibility but the visible hardware detected by CUDA does not support this configuration"},
    ResultName{805, "CUDA_ERROR_MPS_CONNECTION_FAILED", "This error indicates that the MPS client failed to connect to the MPS control daemon or the MPS server"},
    ResultName{806, "CUDA_ERROR_MPS_RPC_FAILURE", "This error indicates that the remote procedural call between the MPS server and the MPS client failed"},
    ResultName{807, "CUDA_ERROR_MPS_SERVER_NOT_READY", "This error indicates that the MPS server is not ready to accept new MPS client requests"},
    ResultName{808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", "This error indicates that the hardware resources required to create MPS client have been exhausted"},
    ResultName{809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", "This error indicates the the hardware resources required to support device connections have been exhausted"},
    ResultName{810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", "This error indicates that the MPS client has been terminated by the server"},
    ResultName{811, "CUDA_ERROR_CDP_NOT_SUPPORTED", "This error indicates that the module is using CUDA Dynamic Parallelism, but the current configuration, like MPS, does not support it"},
    ResultName{812, "CUDA_ERROR_CDP_VERSION_MISMATCH", "This error indicates that a module contains an unsupported interaction between different versions of CUDA Dynamic Parallelism"},
    ResultName{900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "This error indicates that the operation is not permitted when the stream is capturing"},
    ResultName{901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "This error indicates that the current capture sequence on the stream has been invalidated due to a previous error"},
    ResultName{902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", "This error indicates that the operation would have resulted in a merge of two independent capture sequences"},
    ResultName{903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "This error indicates that the capture was not initiated in this stream"},
    ResultName{904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "This error indicates that the capture sequence contains a fork that was not joined to the primary stream"},
    ResultName{905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "This error indicates that a dependency would have been created which crosses the capture sequence boundary"},
    ResultName{906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "This error indicates a disallowed implicit dependency on a current capture sequence from cudaStreamLegacy"},
    ResultName{907, "CUDA_ERROR_CAPTURED_EVENT", "This error indicates that the operation is not permitted on an event which was last recorded in a capturing stream"},
    ResultName{908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "A stream capture sequence not initiated with the CU_STREAM_CAPTURE_MODE_RELAXED argument to cuStreamBeginCapture was passed to cuStreamEndCapture in a different thread"},
    ResultName{909, "CUDA_ERROR_TIMEOUT", "This error indicates that the timeout specified for the wait operation has lapsed"},
    ResultName{910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", "This error indicates that the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"},
    ResultName{911, "CUDA_ERROR_EXTERNAL_DEVICE", "This indicates that an async error has occurred in a device outside of CUDA. If CUDA was waiting for an external device's signal before consuming shared data, the external device signaled an error indicating that the data is not valid for consumption"},
    ResultName{912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", "Indicates a kernel launch error due to cluster misconfiguration"},
    ResultName{913, "CUDA_ERROR_FUNCTION_NOT_LOADED", "Indiciates a function handle is not loaded when calling an API that requires a loaded function"},
    ResultName{914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", "This error indicates one or more resources passed in are not valid resource types for the operation"},
    ResultName{915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", "This error indicates one or more resources are insufficient or non-applicable for the operation"},
    ResultName{916, "CUDA_ERROR_KEY_ROTATION", "This error indicates that an error happened during the key rotation sequence"},
    ResultName{999, "CUDA_ERROR_UNKNOWN", "This indicates that an unknown internal error has occurred"},
};
// clang-format on

} // namespace

const ResultName* findResultName(int result) noexcept
{
    // The table is sorted by value (checked by a test), so a binary search finds the entry.
    const auto* it = std::lower_bound(kResultNames.begin(), kResultNames.end(), result,
                                      [](const ResultName& e, int v) { return e.value < v; });
    return (it != kResultNames.end() && it->value == result) ? &*it : nullptr;
}

std::span<const ResultName> allResultNames() noexcept
{
    return kResultNames;
}

} // namespace cuctx::detail

// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The driver's function table: the only place that names driver entry points. Each entry is
// requested through cuGetProcAddress_v2 at the version pinned here, which must be the version of
// the typedef it is called through (cudaTypedefs.h's PFN_<name>_v<version>): asking for a symbol
// at another version silently returns another ABI (driver-facts.md).

#include "format/cuda_version.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <span>
#include <string>

namespace cuctx::detail {

// X(field, symbol, pinned version, Required|Optional)
// A Required entry missing from the driver fails loading; an Optional one is reported where it
// is used, naming the CUDA version it needs (requireEntry()).
// clang-format off
#define CUCTX_DRIVER_ENTRIES(X)                                                                    \
    X(cuInit, cuInit, 2000, Required)                                                              \
    X(cuDriverGetVersion, cuDriverGetVersion, 2020, Required)                                      \
    X(cuGetErrorName, cuGetErrorName, 6000, Required)                                              \
    X(cuGetErrorString, cuGetErrorString, 6000, Required)                                          \
    X(cuDeviceGet, cuDeviceGet, 2000, Required)                                                    \
    X(cuDeviceGetCount, cuDeviceGetCount, 2000, Required)                                          \
    X(cuDeviceGetName, cuDeviceGetName, 2000, Required)                                            \
    X(cuDeviceGetUuid, cuDeviceGetUuid, 11040, Required)                                           \
    X(cuDeviceGetPCIBusId, cuDeviceGetPCIBusId, 4010, Required)                                    \
    X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000, Required)                                  \
    X(cuDeviceTotalMem, cuDeviceTotalMem, 3020, Required)                                          \
    X(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, 7000, Required)                      \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, Required)                          \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 11000, Required)                       \
    X(cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags, 11000, Required)                     \
    X(cuCtxCreate_v2, cuCtxCreate, 3020, Required)                                                 \
    X(cuCtxCreate_v4, cuCtxCreate, 12050, Optional)                                                \
    X(cuCtxDestroy, cuCtxDestroy, 4000, Required)                                                  \
    X(cuCtxPushCurrent, cuCtxPushCurrent, 4000, Required)                                          \
    X(cuCtxPopCurrent, cuCtxPopCurrent, 4000, Required)                                            \
    X(cuCtxGetCurrent, cuCtxGetCurrent, 4000, Required)                                            \
    X(cuCtxSetCurrent, cuCtxSetCurrent, 4000, Required)                                            \
    X(cuCtxGetDevice, cuCtxGetDevice, 2000, Required)                                              \
    X(cuCtxSynchronize, cuCtxSynchronize, 2000, Required)                                          \
    X(cuCtxGetApiVersion, cuCtxGetApiVersion, 3020, Required)                                      \
    X(cuCtxGetFlags, cuCtxGetFlags, 7000, Required)                                                \
    X(cuCtxGetLimit, cuCtxGetLimit, 3010, Required)                                                \
    X(cuCtxSetLimit, cuCtxSetLimit, 3010, Required)                                                \
    X(cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, 5050, Required)                    \
    X(cuCtxGetCacheConfig, cuCtxGetCacheConfig, 3020, Required)                                    \
    X(cuCtxGetId, cuCtxGetId, 12000, Optional)                                                     \
    X(cuMemGetInfo, cuMemGetInfo, 3020, Required)                                                  \
    X(cuMemAlloc, cuMemAlloc, 3020, Required)                                                     \
    X(cuMemFree, cuMemFree, 3020, Required)                                                       \
    X(cuMemcpyHtoD, cuMemcpyHtoD, 3020, Required)                                                 \
    X(cuMemcpyDtoH, cuMemcpyDtoH, 3020, Required)                                                 \
    X(cuMemsetD32, cuMemsetD32, 3020, Required)                                                   \
    X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync, 3020, Required)                                       \
    X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync, 3020, Required)                                       \
    X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync, 3020, Required)                                       \
    X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000, Required)                                       \
    X(cuMemsetD32Async, cuMemsetD32Async, 3020, Required)                                         \
    X(cuStreamCreateWithPriority, cuStreamCreateWithPriority, 5050, Required)                     \
    X(cuStreamDestroy, cuStreamDestroy, 4000, Required)                                           \
    X(cuStreamSynchronize, cuStreamSynchronize, 2000, Required)                                   \
    X(cuStreamQuery, cuStreamQuery, 2000, Required)                                               \
    X(cuStreamWaitEvent, cuStreamWaitEvent, 3020, Required)                                       \
    X(cuStreamGetPriority, cuStreamGetPriority, 5050, Required)                                   \
    X(cuStreamGetFlags, cuStreamGetFlags, 5050, Required)                                         \
    X(cuLaunchHostFunc, cuLaunchHostFunc, 10000, Required)                                        \
    X(cuEventCreate, cuEventCreate, 2000, Required)                                               \
    X(cuEventDestroy, cuEventDestroy, 4000, Required)                                             \
    X(cuEventRecord, cuEventRecord, 2000, Required)                                               \
    X(cuEventQuery, cuEventQuery, 2000, Required)                                                 \
    X(cuEventSynchronize, cuEventSynchronize, 2000, Required)                                     \
    X(cuEventElapsedTime_v2, cuEventElapsedTime, 12080, Optional)                                 \
    X(cuEventElapsedTime_v1, cuEventElapsedTime, 2000, Optional)                                   \
    X(cuCtxRecordEvent, cuCtxRecordEvent, 12050, Optional)                                        \
    X(cuCtxWaitEvent, cuCtxWaitEvent, 12050, Optional)                                            \
    X(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, 4000, Required)                               \
    X(cuDeviceGetP2PAttribute, cuDeviceGetP2PAttribute, 8000, Required)                           \
    X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, 4000, Required)                               \
    X(cuCtxDisablePeerAccess, cuCtxDisablePeerAccess, 4000, Required)                             \
    X(cuIpcGetEventHandle, cuIpcGetEventHandle, 4010, Required)                                   \
    X(cuIpcOpenEventHandle, cuIpcOpenEventHandle, 4010, Required)                                 \
    X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, Required)                                       \
    X(cuIpcOpenMemHandle, cuIpcOpenMemHandle, 11000, Required)                                    \
    X(cuIpcCloseMemHandle, cuIpcCloseMemHandle, 4010, Required)                                   \
    X(cuModuleGetLoadingMode, cuModuleGetLoadingMode, 11070, Optional)                            \
    X(cuModuleLoadDataEx, cuModuleLoadDataEx, 2010, Required)                                     \
    X(cuModuleUnload, cuModuleUnload, 2000, Required)                                             \
    X(cuModuleGetFunction, cuModuleGetFunction, 2000, Required)                                   \
    X(cuModuleGetGlobal, cuModuleGetGlobal, 3020, Required)                                       \
    X(cuModuleGetFunctionCount, cuModuleGetFunctionCount, 12040, Optional)                        \
    X(cuModuleEnumerateFunctions, cuModuleEnumerateFunctions, 12040, Optional)                    \
    X(cuFuncGetAttribute, cuFuncGetAttribute, 2020, Required)                                     \
    X(cuFuncSetAttribute, cuFuncSetAttribute, 9000, Required)                                     \
    X(cuFuncSetCacheConfig, cuFuncSetCacheConfig, 3000, Required)                                 \
    X(cuFuncGetName, cuFuncGetName, 12030, Optional)                                              \
    X(cuFuncGetParamInfo, cuFuncGetParamInfo, 12040, Optional)                                    \
    X(cuFuncLoad, cuFuncLoad, 12040, Optional)                                                    \
    X(cuLaunchKernel, cuLaunchKernel, 4000, Required)                                             \
    X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, Optional)                                        \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, Required)\
    X(cuOccupancyMaxPotentialBlockSize, cuOccupancyMaxPotentialBlockSize, 6050, Required)         \
    X(cuLibraryLoadData, cuLibraryLoadData, 12000, Optional)                                      \
    X(cuLibraryLoadFromFile, cuLibraryLoadFromFile, 12000, Optional)                              \
    X(cuLibraryUnload, cuLibraryUnload, 12000, Optional)                                          \
    X(cuLibraryGetKernel, cuLibraryGetKernel, 12000, Optional)                                    \
    X(cuLibraryGetKernelCount, cuLibraryGetKernelCount, 12040, Optional)                          \
    X(cuLibraryEnumerateKernels, cuLibraryEnumerateKernels, 12040, Optional)                      \
    X(cuKernelGetFunction, cuKernelGetFunction, 12000, Optional)                                  \
    X(cuKernelGetName, cuKernelGetName, 12030, Optional)                                          \
    X(cuDeviceGetDevResource, cuDeviceGetDevResource, 12040, Optional)                            \
    X(cuDevSmResourceSplitByCount, cuDevSmResourceSplitByCount, 12040, Optional)                  \
    X(cuDevResourceGenerateDesc, cuDevResourceGenerateDesc, 12040, Optional)                      \
    X(cuGreenCtxCreate, cuGreenCtxCreate, 12040, Optional)                                        \
    X(cuGreenCtxDestroy, cuGreenCtxDestroy, 12040, Optional)                                      \
    X(cuCtxFromGreenCtx, cuCtxFromGreenCtx, 12040, Optional)                                      \
    X(cuGreenCtxGetDevResource, cuGreenCtxGetDevResource, 12040, Optional)                        \
    X(cuCtxGetDevResource, cuCtxGetDevResource, 12040, Optional)                                  \
    X(cuGreenCtxStreamCreate, cuGreenCtxStreamCreate, 12050, Optional)                            \
    X(cuStreamGetGreenCtx, cuStreamGetGreenCtx, 12040, Optional)
// clang-format on

enum class EntryKind { Required, Optional };

struct DriverApi {
#define CUCTX_DRIVER_FIELD(field, symbol, version, kind) PFN_##symbol##_v##version field = nullptr;
    CUCTX_DRIVER_ENTRIES(CUCTX_DRIVER_FIELD)
#undef CUCTX_DRIVER_FIELD
};

/// One row of the table, for the loader and for error messages about missing entries.
struct DriverEntry {
    const char* field;
    const char* symbol;
    int version;
    EntryKind kind;
};

/// The row of a DriverApi field ("cuCtxGetId"), or nullptr.
const DriverEntry* findDriverEntry(const char* field) noexcept;

/// Every row, in table order (for tests that walk the whole table).
std::span<const DriverEntry> driverEntries() noexcept;

} // namespace cuctx::detail

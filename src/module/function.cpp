// SPDX-License-Identifier: MIT
#include "cuctx/function.hpp"

#include "cuctx/context_guard.hpp"

#include "check/check.hpp"
#include "context/context_access.hpp"
#include "context/launch_journal.hpp"
#include "driver/driver_state.hpp"
#include "module/module_state.hpp"

namespace cuctx {

namespace detail {

Function makeFunction(const Context& context, std::shared_ptr<const void> owner, CUfunction function, std::string name,
                      std::string label)
{
    auto data = std::make_shared<FunctionData>();
    data->context = context;
    data->owner = std::move(owner);
    data->function = function;
    data->name = std::move(name);
    data->label = std::move(label);
    data->journalName = internKernelName(data->name, data->label);
    const DriverApi& d = api();
    if (d.cuFuncGetParamInfo != nullptr) {
        // The driver answers CUDA_ERROR_INVALID_VALUE for the first index past the last parameter.
        std::vector<ParamInfo> params;
        for (std::size_t i = 0;; ++i) {
            ParamInfo p;
            const CUresult r = d.cuFuncGetParamInfo(function, i, &p.offset, &p.bytes);
            if (r == CUDA_ERROR_INVALID_VALUE)
                break;
            check(r, "cuFuncGetParamInfo", moduleSubject(*ContextAccess::state(context), data->name));
            params.push_back(p);
        }
        data->parameters = std::move(params);
    }
    return FunctionData::handle(std::move(data));
}

} // namespace detail

const detail::FunctionData& Function::data(const char* call) const
{
    if (data_ == nullptr)
        detail::throwError(Errc::invalid_argument, call, "the Function is empty (default-constructed or moved from)",
                           "Get one from Module::function or Library::function");
    return *data_;
}

const std::string& Function::name() const
{
    return data("cuctx::Function::name").name;
}

const std::string& Function::moduleLabel() const
{
    return data("cuctx::Function::moduleLabel").label;
}

const Context& Function::context() const
{
    return data("cuctx::Function::context").context;
}

FunctionAttributes Function::attributes() const
{
    const detail::FunctionData& f = data("cuctx::Function::attributes");
    const detail::DriverApi& d = detail::api();
    ContextGuard guard(f.context);
    const detail::Subject subject = detail::moduleSubject(*detail::ContextAccess::state(f.context), f.name);
    auto get = [&](CUfunction_attribute a) {
        int v = 0;
        detail::check(d.cuFuncGetAttribute(&v, a, f.function), "cuFuncGetAttribute", subject);
        return v;
    };
    FunctionAttributes a;
    a.registers = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
    a.staticSharedBytes = get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    a.localBytes = get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    a.constBytes = get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
    a.maxThreadsPerBlock = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    a.ptxVersion = get(CU_FUNC_ATTRIBUTE_PTX_VERSION);
    a.binaryVersion = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
    a.maxDynamicSharedBytes = get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
    return a;
}

void Function::setMaxDynamicSharedMemory(int bytes) const
{
    const detail::FunctionData& f = data("cuctx::Function::setMaxDynamicSharedMemory");
    ContextGuard guard(f.context);
    const CUresult r =
        detail::api().cuFuncSetAttribute(f.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
    if (r != CUDA_SUCCESS)
        detail::throwDriverError(
            r, "cuFuncSetAttribute", detail::moduleSubject(*detail::ContextAccess::state(f.context), f.name),
            SourceLocation::current(),
            "setting kernel '" + f.name + "''s dynamic shared memory limit to " + std::to_string(bytes) + " bytes",
            "The limit cannot exceed the device's shared memory per block (opt-in) minus the "
            "kernel's static shared memory");
}

void Function::setCachePreference(CachePreference preference) const
{
    const detail::FunctionData& f = data("cuctx::Function::setCachePreference");
    CUfunc_cache c = CU_FUNC_CACHE_PREFER_NONE;
    switch (preference) {
    case CachePreference::none: c = CU_FUNC_CACHE_PREFER_NONE; break;
    case CachePreference::shared: c = CU_FUNC_CACHE_PREFER_SHARED; break;
    case CachePreference::l1: c = CU_FUNC_CACHE_PREFER_L1; break;
    case CachePreference::equal: c = CU_FUNC_CACHE_PREFER_EQUAL; break;
    }
    ContextGuard guard(f.context);
    detail::check(detail::api().cuFuncSetCacheConfig(f.function, c), "cuFuncSetCacheConfig",
                  detail::moduleSubject(*detail::ContextAccess::state(f.context), f.name));
}

const std::optional<std::vector<ParamInfo>>& Function::parameters() const
{
    return data("cuctx::Function::parameters").parameters;
}

int Function::maxActiveBlocksPerMultiprocessor(int blockSize, std::size_t dynamicSharedBytes) const
{
    const detail::FunctionData& f = data("cuctx::Function::maxActiveBlocksPerMultiprocessor");
    ContextGuard guard(f.context);
    int blocks = 0;
    detail::check(
        detail::api().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f.function, blockSize, dynamicSharedBytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        detail::moduleSubject(*detail::ContextAccess::state(f.context), f.name));
    return blocks;
}

BlockSizeSuggestion Function::maxPotentialBlockSize(std::size_t dynamicSharedBytes, int blockSizeLimit) const
{
    const detail::FunctionData& f = data("cuctx::Function::maxPotentialBlockSize");
    ContextGuard guard(f.context);
    BlockSizeSuggestion s;
    detail::check(detail::api().cuOccupancyMaxPotentialBlockSize(&s.minGridSize, &s.blockSize, f.function, nullptr,
                                                                 dynamicSharedBytes, blockSizeLimit),
                  "cuOccupancyMaxPotentialBlockSize",
                  detail::moduleSubject(*detail::ContextAccess::state(f.context), f.name));
    return s;
}

CUfunction Function::native() const
{
    return data("cuctx::Function::native").function;
}

} // namespace cuctx

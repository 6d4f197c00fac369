// SPDX-License-Identifier: MIT
#include "module/jit_marshal.hpp"

#include "check/check.hpp"

#include <cstdint>

namespace cuctx::detail {
namespace {

void* asValue(std::uintptr_t v) noexcept
{
    return reinterpret_cast<void*>(v); // NOLINT(performance-no-int-to-ptr): the driver's JIT options take values so
}

CUjit_cacheMode driverCacheMode(JitCacheMode mode) noexcept
{
    switch (mode) {
    case JitCacheMode::none: return CU_JIT_CACHE_OPTION_NONE;
    case JitCacheMode::l2Only: return CU_JIT_CACHE_OPTION_CG;
    case JitCacheMode::l1AndL2: return CU_JIT_CACHE_OPTION_CA;
    }
    return CU_JIT_CACHE_OPTION_NONE;
}

} // namespace

JitArrays::JitArrays(const JitOptions& o, bool forLibrary)
{
    if (o.optimizationLevel && (*o.optimizationLevel < 0 || *o.optimizationLevel > 4))
        throwError(Errc::invalid_argument, "cuctx::JitOptions",
                   "optimizationLevel is " + std::to_string(*o.optimizationLevel) + "; the JIT takes 0 to 4");
    if (o.target && *o.target <= 0)
        throwError(Errc::invalid_argument, "cuctx::JitOptions",
                   "target is " + std::to_string(*o.target) + "; give a compute capability such as 90 for sm_90");
    if (o.maxRegisters && *o.maxRegisters == 0)
        throwError(Errc::invalid_argument, "cuctx::JitOptions", "maxRegisters is 0; leave it unset for no limit");
    options_.reserve(12);
    values_.reserve(12);
    if (o.logBytes > 0) {
        info_.assign(o.logBytes, '\0');
        error_.assign(o.logBytes, '\0');
        add(CU_JIT_INFO_LOG_BUFFER, info_.data());
        infoSizeIndex_ = static_cast<int>(values_.size());
        add(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, asValue(o.logBytes));
        add(CU_JIT_ERROR_LOG_BUFFER, error_.data());
        errorSizeIndex_ = static_cast<int>(values_.size());
        add(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, asValue(o.logBytes));
    }
    if (o.verboseLog)
        add(CU_JIT_LOG_VERBOSE, asValue(1));
    if (o.optimizationLevel)
        add(CU_JIT_OPTIMIZATION_LEVEL, asValue(static_cast<unsigned>(*o.optimizationLevel)));
    if (o.target)
        add(CU_JIT_TARGET, asValue(static_cast<unsigned>(*o.target)));
    else if (!forLibrary)
        add(CU_JIT_TARGET_FROM_CUCONTEXT, nullptr);
    if (o.debugInfo)
        add(CU_JIT_GENERATE_DEBUG_INFO, asValue(1));
    if (o.lineInfo)
        add(CU_JIT_GENERATE_LINE_INFO, asValue(1));
    if (o.maxRegisters)
        add(CU_JIT_MAX_REGISTERS, asValue(*o.maxRegisters));
    if (o.cacheMode)
        add(CU_JIT_CACHE_MODE, asValue(driverCacheMode(*o.cacheMode)));
}

void JitArrays::add(CUjit_option option, void* value)
{
    options_.push_back(option);
    values_.push_back(value);
}

std::string JitArrays::log(const std::vector<char>& buffer, int sizeIndex) const
{
    if (sizeIndex < 0 || buffer.empty())
        return {};
    auto used = reinterpret_cast<std::uintptr_t>(values_[static_cast<std::size_t>(sizeIndex)]);
    if (used > buffer.size())
        used = buffer.size();
    std::size_t length = 0;
    while (length < used && buffer[length] != '\0')
        ++length;
    std::string text(buffer.data(), length);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text;
}

std::string JitArrays::infoLog() const
{
    return log(info_, infoSizeIndex_);
}

std::string JitArrays::errorLog() const
{
    return log(error_, errorSizeIndex_);
}

std::string jitFingerprint(const JitOptions& o)
{
    auto optional = [](const auto& value) { return value ? std::to_string(*value) : std::string("-"); };
    std::string key = "O";
    key += optional(o.optimizationLevel);
    key += ";t";
    key += o.target ? std::to_string(*o.target) : std::string("ctx");
    key += o.debugInfo ? ";g" : "";
    key += o.lineInfo ? ";l" : "";
    key += ";r";
    key += optional(o.maxRegisters);
    key += ";c";
    key += o.cacheMode ? std::to_string(static_cast<int>(*o.cacheMode)) : std::string("-");
    return key; // logs, verbosity and eager loading change no code: they share a cache entry
}

} // namespace cuctx::detail

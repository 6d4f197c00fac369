// SPDX-License-Identifier: MIT
#include "cuctx/error.hpp"

#include "check/error_names.hpp"
#include "check/sticky.hpp"

#include <pthread.h>
#include <unistd.h>

#include <initializer_list>
#include <string>

namespace cuctx {
namespace {

class CuctxCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "cuctx"; }
    std::string message(int value) const override
    {
        switch (static_cast<Errc>(value)) {
        case Errc::driver_error: return "a CUDA driver call failed";
        case Errc::driver_not_found: return "the CUDA driver library could not be loaded";
        case Errc::stub_driver: return "the CUDA toolkit's stub driver library was loaded";
        case Errc::no_device: return "the CUDA driver sees no usable device";
        case Errc::driver_too_old: return "the installed CUDA driver is too old";
        case Errc::forked_after_init: return "the process was forked after CUDA was initialised";
        case Errc::invalid_argument: return "invalid argument";
        case Errc::invalid_state: return "invalid state";
        case Errc::stack_mismatch: return "the thread's context stack was changed behind cuctx's back";
        case Errc::context_busy: return "the context is current on another thread";
        case Errc::device_poisoned: return "a sticky fault made the device unusable for the rest of the process";
        case Errc::worker_fault: return "a GPU worker process faulted and was replaced";
        case Errc::nvml_unavailable: return "the NVIDIA management library (NVML) could not be used";
        }
        return "unknown cuctx error";
    }
};

class DriverCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "cuda"; }
    std::string message(int value) const override
    {
        return std::string(resultName(value)) + ": " + std::string(resultDescription(value));
    }
    bool equivalent(int value, const std::error_condition& condition) const noexcept override
    {
        if (condition.category() == errorCategory()) {
            const auto errc = static_cast<Errc>(condition.value());
            switch (value) {
            case CUDA_ERROR_STUB_LIBRARY_VALUE: return errc == Errc::stub_driver;
            case CUDA_ERROR_NO_DEVICE_VALUE: return errc == Errc::no_device;
            default:
                // A sticky fault is both a driver error and the one that poisons its device.
                return errc == Errc::driver_error || (errc == Errc::device_poisoned && detail::isStickyResult(value));
            }
        }
        return default_error_condition(value) == condition;
    }

private:
    // Kept here so that this public-facing file does not need cuda.h.
    static constexpr int CUDA_ERROR_STUB_LIBRARY_VALUE = 34;
    static constexpr int CUDA_ERROR_NO_DEVICE_VALUE = 100;
};

std::string currentThreadName()
{
    char name[64] = {};
    if (pthread_getname_np(pthread_self(), name, sizeof name) != 0)
        return {};
    return name;
}

// Appends each piece in turn (no temporaries: GCC 12's -Wrestrict misfires on `s += a + b` at -O3).
void append(std::string& m, std::initializer_list<std::string_view> pieces)
{
    for (std::string_view piece : pieces)
        m.append(piece);
}

void endSentence(std::string& m)
{
    if (!m.empty() && m.back() != '.')
        m.push_back('.');
}

std::string composeMessage(const ErrorInfo& info, long tid, const std::string& threadName, const SourceLocation& where)
{
    std::string m;
    if (!info.call.empty())
        append(m, {info.call, " failed"});
    else
        m.append("cuctx error");
    if (info.result != 0)
        append(m, {" with ", resultName(info.result), " (", std::to_string(info.result), ")"});
    if (!info.object.empty())
        append(m, {" on ", info.object});
    m.append(": ");
    if (!info.detail.empty())
        m.append(info.detail);
    else if (info.result != 0)
        m.append(resultDescription(info.result));
    else
        m.append(errorCategory().message(static_cast<int>(info.condition)));
    endSentence(m);
    if (!info.hint.empty()) {
        append(m, {" ", info.hint});
        endSentence(m);
    }
    append(m, {" [thread ", std::to_string(tid)});
    if (!threadName.empty())
        append(m, {" \"", threadName, "\""});
    if (where.file_name() != nullptr && where.file_name()[0] != '\0') {
        std::string_view file = where.file_name();
        while (file.starts_with("../")) // meson compiles from the build folder
            file.remove_prefix(3);
        append(m, {", ", file, ":", std::to_string(where.line())});
    }
    m.push_back(']');
    return m;
}

std::error_code codeFor(const ErrorInfo& info)
{
    if (info.result != 0)
        return {info.result, driverCategory()};
    return {static_cast<int>(info.condition), errorCategory()};
}

} // namespace

const std::error_category& errorCategory() noexcept
{
    static const CuctxCategory category;
    return category;
}

const std::error_category& driverCategory() noexcept
{
    static const DriverCategory category;
    return category;
}

std::error_condition make_error_condition(Errc e) noexcept
{
    return {static_cast<int>(e), errorCategory()};
}

std::string_view resultName(int result) noexcept
{
    const detail::ResultName* entry = detail::findResultName(result);
    return entry != nullptr ? entry->name : "unknown CUresult";
}

std::string_view resultDescription(int result) noexcept
{
    const detail::ResultName* entry = detail::findResultName(result);
    return entry != nullptr ? entry->description : "a value that cuda.h does not define";
}

Error::Error(ErrorInfo info, SourceLocation where)
    : std::system_error(codeFor(info)), info_(std::move(info)), threadId_(static_cast<long>(gettid())),
      threadName_(currentThreadName()), where_(where)
{
    message_ = composeMessage(info_, threadId_, threadName_, where_);
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::Error: the one exception type cuctx throws, its conditions and categories. The functions
/// are thread-safe.

#include "cuctx/export.hpp"
#include "cuctx/source_location.hpp"
#include <string>
#include <string_view>
#include <system_error>

namespace cuctx {

/// What went wrong, as cuctx classifies it. A driver failure that fits no narrower condition is
/// `driver_error`; Error::result() then holds the CUresult.
enum class Errc {
    driver_error = 1,  ///< a driver call returned an error (see Error::result())
    driver_not_found,  ///< libcuda.so.1 (or the configured path) could not be loaded
    stub_driver,       ///< the CUDA toolkit's stub libcuda was loaded instead of the real driver
    no_device,         ///< the driver works but sees no usable device
    driver_too_old,    ///< the installed driver lacks an entry point cuctx needs
    forked_after_init, ///< this process was forked after CUDA was initialised in its parent
    invalid_argument,  ///< a cuctx call was given a value it cannot accept
    invalid_state,     ///< a cuctx call was made in a state that does not allow it
    stack_mismatch,    ///< the thread's context stack is not what cuctx left there (foreign change)
    context_busy,      ///< a context that allows one thread at a time is current on another thread
    device_poisoned,   ///< a sticky fault (illegal address, trap...) made the device unusable in this process
    worker_fault,      ///< a GpuWorker's process faulted, died or missed a deadline and was replaced
    nvml_unavailable,  ///< NVML (libnvidia-ml.so.1), which lists processes and modes, could not be used
};

/// The category of Errc values ("cuctx").
CUCTX_API const std::error_category& errorCategory() noexcept;
/// The category of CUresult values ("cuda"): Error::code() uses it for driver failures. Its
/// equivalent() maps CUresults onto the Errc conditions above, so `e.code() == Errc::no_device`
/// holds for CUDA_ERROR_NO_DEVICE.
CUCTX_API const std::error_category& driverCategory() noexcept;

/// `e` as a std::error_condition of errorCategory(), so that `error.code() == Errc::no_device` compiles.
CUCTX_API std::error_condition make_error_condition(Errc e) noexcept;

/// The symbolic name of a CUresult ("CUDA_ERROR_INVALID_CONTEXT"), from cuctx's own table since
/// the stub driver returns none. A value cuda.h does not define gives "unknown CUresult".
CUCTX_API std::string_view resultName(int result) noexcept;
/// A one-sentence description of a CUresult, from the same table.
CUCTX_API std::string_view resultDescription(int result) noexcept;

/// Everything an Error says. Fields left empty are left out of the message.
///
/// \par Threading
/// Thread-compatible value type.
struct ErrorInfo {
    Errc condition = Errc::driver_error; ///< what went wrong, as cuctx classifies it
    int result = 0;                      ///< the CUresult, 0 when the failure did not come from the driver
    std::string call;                    ///< the driver call or cuctx function that failed
    std::string object;                  ///< what it was called on: "device 0", "context 3 on device 0", a file
    std::string detail;                  ///< what cuctx found, in a sentence
    std::string hint;                    ///< what to do about it
};

/// The exception cuctx throws. The message is composed once, when the error is created, so the
/// success path never formats anything. It names the call, the CUresult with its name, the object,
/// the thread (id and name) and where in cuctx the failure was seen.
///
/// \par Threading
/// Thread-safe: immutable once made, so one Error may be read, copied and rethrown on any threads at
/// once.
class CUCTX_API Error : public std::system_error {
public:
    /// Composes the message from `info`, the calling thread and `where`. Its code() is the CUresult
    /// (in driverCategory()) when `info.result` is set, else the condition (in errorCategory()).
    explicit Error(ErrorInfo info, SourceLocation where = SourceLocation::current());

    /// What went wrong, as cuctx classifies it.
    Errc condition() const noexcept { return info_.condition; }
    /// The CUresult, or 0 when the failure did not come from the driver.
    int result() const noexcept { return info_.result; }
    /// The driver call or cuctx function that failed.
    const std::string& call() const noexcept { return info_.call; }
    /// What it was called on: "device 0", "context 3 on device 0", a file.
    const std::string& object() const noexcept { return info_.object; }
    /// What cuctx found, in a sentence.
    const std::string& detail() const noexcept { return info_.detail; }
    /// What to do about it.
    const std::string& hint() const noexcept { return info_.hint; }
    /// The kernel thread id (gettid) of the thread that saw the failure.
    long threadId() const noexcept { return threadId_; }
    /// The name of the thread that saw the failure (pthread_getname_np: the program's name unless
    /// the thread was given one).
    const std::string& threadName() const noexcept { return threadName_; }
    /// Where in cuctx (or the caller) the failure was seen.
    const SourceLocation& where() const noexcept { return where_; }

    /// The whole message: what failed, on what, why, where, and what to do.
    const char* what() const noexcept override { return message_.c_str(); }

private:
    ErrorInfo info_;
    std::string message_;
    long threadId_;
    std::string threadName_;
    SourceLocation where_;
};

} // namespace cuctx

template <>
struct std::is_error_condition_enum<cuctx::Errc> : std::true_type {
};

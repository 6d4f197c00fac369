// SPDX-License-Identifier: MIT
#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// JitOptions as the driver takes them: parallel arrays of CUjit_option and void* values, with the
// info and error log buffers they point into. Built fresh for every load: the driver writes back
// into the log-size values (driver-facts.md), so a reused set would give empty logs.

#include "cuctx/jit_options.hpp"

#include <cuda.h>

#include <string>
#include <vector>

namespace cuctx::detail {

class JitArrays {
public:
    /// Throws Errc::invalid_argument (naming the option) for values the driver would reject.
    /// Libraries load without a context, so `forLibrary` leaves out CU_JIT_TARGET_FROM_CUCONTEXT.
    JitArrays(const JitOptions& options, bool forLibrary);
    JitArrays(const JitArrays&) = delete;
    JitArrays& operator=(const JitArrays&) = delete;

    unsigned count() const noexcept { return static_cast<unsigned>(options_.size()); }
    CUjit_option* options() noexcept { return options_.data(); }
    void** values() noexcept { return values_.data(); }

    /// The logs as the driver left them (the bytes it says it wrote, up to the first NUL).
    std::string infoLog() const;
    std::string errorLog() const;

private:
    void add(CUjit_option option, void* value);
    std::string log(const std::vector<char>& buffer, int sizeIndex) const;

    std::vector<CUjit_option> options_;
    std::vector<void*> values_;
    std::vector<char> info_;
    std::vector<char> error_;
    int infoSizeIndex_ = -1;
    int errorSizeIndex_ = -1;
};

/// A canonical text of the options that change what the driver builds: the module cache's key.
std::string jitFingerprint(const JitOptions& options);

} // namespace cuctx::detail

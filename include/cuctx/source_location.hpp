// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::SourceLocation: where in the code something happened (a file, a line, a function), as
/// cuctx::Error reports it.
//
// One type for every compiler, so that the library and a program built by another compiler agree
// on Error's layout: it is made from SourceLocation where the standard library has it, and
// from the compiler's __builtin_FILE/__builtin_LINE/__builtin_FUNCTION where it does not (clang 14
// with libstdc++ 12, Debian 12's clang). It converts from SourceLocation where that exists.

#include <cstdint>

#if __has_include(<source_location>)
#include <source_location>
#endif

#if !defined(__cpp_lib_source_location)
#if defined(__has_builtin)
#if __has_builtin(__builtin_COLUMN)
#define CUCTX_BUILTIN_COLUMN __builtin_COLUMN()
#endif
#endif
#ifndef CUCTX_BUILTIN_COLUMN
#define CUCTX_BUILTIN_COLUMN 0
#endif
#endif

namespace cuctx {

/// Where in the code something happened: a file, a function, a line and a column, with
/// std::source_location's accessors on every compiler.
///
/// \par Threading
/// Thread-safe (an immutable value; its strings are string literals).
class SourceLocation {
public:
    /// An empty location: "" for the names, 0 for the numbers.
    constexpr SourceLocation() noexcept = default;

#if defined(__cpp_lib_source_location)
    /// The caller's location (as a default argument: the location of the call that uses it).
    static constexpr SourceLocation current(std::source_location where = std::source_location::current()) noexcept
    {
        return SourceLocation(where);
    }
    /// The same location as `where`.
    constexpr SourceLocation(const std::source_location& where) noexcept // NOLINT: converts on purpose
        : file_(where.file_name()), function_(where.function_name()), line_(where.line()), column_(where.column())
    {
    }
#else
    /// The caller's location (as a default argument: the location of the call that uses it).
    static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                            const char* function = __builtin_FUNCTION(),
                                            std::uint_least32_t line = __builtin_LINE(),
                                            std::uint_least32_t column = CUCTX_BUILTIN_COLUMN) noexcept
    {
        SourceLocation where;
        where.file_ = file;
        where.function_ = function;
        where.line_ = line;
        where.column_ = column;
        return where;
    }
#endif

    /// The file's name, as the compiler spelled it (std::source_location's accessors, and the same names).
    constexpr const char* file_name() const noexcept
    {
        return file_;
    }
    /// The function's name.
    constexpr const char* function_name() const noexcept
    {
        return function_;
    }
    /// The line, from 1.
    constexpr std::uint_least32_t line() const noexcept
    {
        return line_;
    }
    /// The column, from 1 (0 where the compiler cannot say).
    constexpr std::uint_least32_t column() const noexcept
    {
        return column_;
    }

private:
    const char* file_ = "";
    const char* function_ = "";
    std::uint_least32_t line_ = 0;
    std::uint_least32_t column_ = 0;
};

} // namespace cuctx

#pragma once

// Capturing what cuctx logs at error level, for the tests of both suites: a destructor's failed
// unload, free or destroy has nowhere else to go.

#include "cuctx/log.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cuctx::test {

/// Sends cuctx's log to itself while it lives, keeping the error lines.
class ErrorLog {
public:
    ErrorLog()
    {
        cuctx::setLogSink([lines = lines_, mutex = mutex_](cuctx::LogLevel level, std::string_view message) {
            if (level >= cuctx::LogLevel::error) {
                std::lock_guard lock(*mutex);
                lines->emplace_back(message);
            }
        });
    }
    ~ErrorLog() { cuctx::setLogSink({}); }
    ErrorLog(const ErrorLog&) = delete;
    ErrorLog& operator=(const ErrorLog&) = delete;

    /// The error lines logged so far (and forgets them).
    std::vector<std::string> take()
    {
        std::lock_guard lock(*mutex_);
        return std::exchange(*lines_, {});
    }

private:
    std::shared_ptr<std::vector<std::string>> lines_ = std::make_shared<std::vector<std::string>>();
    std::shared_ptr<std::mutex> mutex_ = std::make_shared<std::mutex>();
};

} // namespace cuctx::test

// SPDX-License-Identifier: MIT
#pragma once

// Helpers for tests that reconfigure the fake driver: set its environment, reset it, and put
// everything back when the scope ends.

#include "fake_driver.hpp"

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

namespace cuctx::test {

class FakeEnvironment {
public:
    FakeEnvironment() = default;
    FakeEnvironment(const FakeEnvironment&) = delete;
    FakeEnvironment& operator=(const FakeEnvironment&) = delete;

    /// Sets `name` for the fake (read at cuctx_fake_reset) and resets it.
    FakeEnvironment& set(const std::string& name, const std::string& value)
    {
        if (saved_.count(name) == 0) {
            const char* old = std::getenv(name.c_str());
            saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
        }
        ::setenv(name.c_str(), value.c_str(), 1);
        cuctx_fake_reset();
        return *this;
    }

    ~FakeEnvironment()
    {
        for (const auto& [name, value] : saved_) {
            if (value)
                ::setenv(name.c_str(), value->c_str(), 1);
            else
                ::unsetenv(name.c_str());
        }
        cuctx_fake_reset();
    }

private:
    std::map<std::string, std::optional<std::string>> saved_;
};

} // namespace cuctx::test

// SPDX-License-Identifier: MIT
#pragma once

// Helpers for tests that hand control between threads, or run a body on a thread of its own.

#include <catch2/catch.hpp>

#include "cuctx/error.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace cuctx::test {

/// A one-shot event for handing control between two threads without sleeping.
class Event {
public:
    void set()
    {
        {
            std::lock_guard lock(m_);
            set_ = true;
        }
        cv_.notify_all();
    }
    void wait()
    {
        std::unique_lock lock(m_);
        cv_.wait(lock, [this] { return set_; });
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    bool set_ = false;
};

/// The condition of the cuctx::Error that f() throws; fails the test if it throws none.
template <typename F>
Errc errcOf(F f)
{
    try {
        f();
    } catch (const cuctx::Error& e) {
        return e.condition();
    }
    FAIL("no cuctx::Error was thrown");
    return Errc::driver_error;
}

/// Runs `f` on a new thread (a fresh stack and a fresh cuctx record), rethrowing what it throws.
template <typename F>
void onNewThread(F f)
{
    std::exception_ptr failure;
    std::thread([&] {
        try {
            f();
        } catch (...) {
            failure = std::current_exception();
        }
    }).join();
    if (failure)
        std::rethrow_exception(failure);
}

} // namespace cuctx::test

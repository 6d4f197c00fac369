// SPDX-License-Identifier: MIT
// Prints cuctx::processReport().json() for a process in a known state, for check_report.py: two
// contexts, a worker thread inside a guard, one context whose last handle is gone while in use.

#include "cuctx/cuctx.hpp"

#include <cstdio>
#include <future>
#include <latch>
#include <thread>

int main()
{
    const cuctx::Device device = cuctx::Device::get(0);
    const cuctx::Context home = cuctx::Context::create(device);
    cuctx::Context other = cuctx::Context::create(device);
    std::latch entered(1);
    std::promise<void> leave;
    std::thread worker([&, done = leave.get_future()] {
        cuctx::ContextStack::adopt(home);
        {
            cuctx::ContextGuard g(other);
            entered.count_down();
            done.wait();
        }
        cuctx::ContextStack::release();
    });
    entered.wait();
    other.reset(); // its destruction now waits for the worker
    const cuctx::ProcessReport report = cuctx::processReport({.devices = true, .diagnose = true});
    std::fputs(report.json().c_str(), stdout);
    std::fputs(report.text().c_str(), stderr);
    leave.set_value();
    worker.join();
    return 0;
}

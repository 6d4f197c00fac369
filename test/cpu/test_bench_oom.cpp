// SPDX-License-Identifier: MIT
// The benchmarks' threads when their state cannot be allocated (tools/bench/measure.cpp): a program of
// its own, since it replaces operator new for the whole program (replaced_new.cpp).

#include <catch2/catch.hpp>

#include "measure.hpp"
#include "replaced_new.hpp"

#include <new>
#include <string>
#include <system_error>

namespace {

// Allocations this thread makes before one fails; -1: none fails. Only the test below arms it, on its
// own thread: the threads it starts, and the program's other allocations, are left alone.
thread_local long t_allocationsLeft = -1;

} // namespace

bool cuctx_test_fail_allocation() noexcept
{
    return t_allocationsLeft >= 0 && t_allocationsLeft-- == 0;
}

TEST_CASE("A thread whose state cannot be allocated stops a run cleanly, as a refused one does", "[bench]")
{
    // std::thread allocates its state before it asks the system for a thread; a std::bad_alloc there
    // left aggregateOps and windowRate with joinable threads and ended the process in std::terminate.
    // Every allocation of the caller's thread fails in turn: each run either finishes, fails setting
    // up (std::bad_alloc), or reports the thread it could not start.
    int notStarted = 0;
    for (long n = 0; n < 40; ++n) {
        for (const bool window : {false, true}) {
            t_allocationsLeft = n;
            try {
                if (window)
                    (void)cuctx::bench::windowRate(
                        4, 0.005, 1, [] {}, [] {});
                else
                    (void)cuctx::bench::aggregateOps(
                        4, 10, [] {}, [](long) {}, [] {});
            } catch (const std::system_error& e) {
                t_allocationsLeft = -1; // before Catch allocates
                CHECK(std::string(e.what()).find("could not start thread") != std::string::npos);
                CHECK(e.code() == std::errc::not_enough_memory);
                ++notStarted;
            } catch (const std::bad_alloc&) {
                // setting up failed, before any thread
            }
            t_allocationsLeft = -1;
        }
    }
    CHECK(notStarted >= 2); // at least one thread of each function
}

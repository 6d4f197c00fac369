// SPDX-License-Identifier: MIT
// The in-process report (cuctx::processReport), the doctor's checks (cuctx::diagnose) and the report
// on a signal, on whichever driver the suite runs against.

#include "driver_helpers.hpp"
#include "process_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/device.hpp"
#include "cuctx/diagnosis.hpp"
#include "cuctx/error.hpp"
#include "cuctx/process_report.hpp"
#include "cuctx/report_on_signal.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <latch>
#include <memory>
#include <thread>

namespace {

const cuctx::ContextSnapshot* findContext(const cuctx::ProcessReport& r, std::uint64_t id)
{
    for (const cuctx::ContextSnapshot& c : r.contexts)
        if (c.id == id)
            return &c;
    return nullptr;
}

const cuctx::ThreadSnapshot* findThread(const cuctx::ProcessReport& r, long tid)
{
    for (const cuctx::ThreadSnapshot& t : r.threads)
        if (t.tid == tid)
            return &t;
    return nullptr;
}

const cuctx::Finding* findFinding(const std::vector<cuctx::Finding>& findings, const std::string& check,
                                  cuctx::Severity severity)
{
    for (const cuctx::Finding& f : findings)
        if (f.check == check && f.severity == severity)
            return &f;
    return nullptr;
}

long thisThread()
{
    return static_cast<long>(syscall(SYS_gettid));
}

// Sets an environment variable for one scope.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name)
    {
        if (const char* old = std::getenv(name))
            old_ = old;
        setenv(name, value, 1);
    }
    ~ScopedEnv()
    {
        if (old_)
            setenv(name_, old_->c_str(), 1);
        else
            unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

} // namespace

TEST_CASE("the report names each thread's contexts and depth, and a deferred destruction", "[report]")
{
    const cuctx::Device device = cuctx::Device::get(0);
    const cuctx::Context home = cuctx::Context::create(device);
    cuctx::Context other = cuctx::Context::create(device);
    const std::uint64_t otherId = other.id();
    std::latch entered(1);
    std::promise<void> leave;
    long workerTid = 0;
    std::thread worker([&, done = leave.get_future()]() mutable {
        workerTid = thisThread();
        cuctx::ContextStack::adopt(home);
        {
            cuctx::ContextGuard g(other);
            cuctx::ContextGuard back(home);    // a second entry of home
            cuctx::ContextGuard again(other);  // and of other
            cuctx::ContextGuard elided(other); // already on top: no entry of its own
            entered.count_down();
            done.wait();
        }
        cuctx::ContextStack::release();
    });
    entered.wait();

    const cuctx::ProcessReport r = cuctx::processReport();
    CHECK(r.pid == static_cast<long>(getpid()));
    CHECK(r.driver.loaded);
    CHECK(r.devices.size() == static_cast<std::size_t>(cuctx::Device::count()));
    const cuctx::ThreadSnapshot* t = findThread(r, workerTid);
    REQUIRE(t != nullptr);
    CHECK(t->depth == 4);
    REQUIRE(t->uses.size() == 2);
    CHECK(t->uses[0].entries == 2);
    CHECK(t->uses[1].entries == 2);
    const cuctx::ContextSnapshot* o = findContext(r, otherId);
    REQUIRE(o != nullptr);
    CHECK(o->handles == 1);
    CHECK_FALSE(o->destructionDeferred);
    CHECK(o->threads == std::vector<long>{workerTid});
    CHECK(o->kind == "created");
    CHECK(o->device == 0);

    // The last handle goes while the worker is inside: the report shows the destruction deferred.
    other.reset();
    const cuctx::ProcessReport deferred = cuctx::processReport({.devices = false});
    const cuctx::ContextSnapshot* d = findContext(deferred, otherId);
    REQUIRE(d != nullptr);
    CHECK(d->handles == 0);
    CHECK(d->destructionDeferred);
    CHECK(deferred.devices.empty());
    CHECK(deferred.text().find("destruction deferred") != std::string::npos);
    CHECK(deferred.json().find("\"destruction_deferred\": true") != std::string::npos);

    leave.set_value();
    worker.join();
    const cuctx::ProcessReport after = cuctx::processReport({.devices = false});
    CHECK(findContext(after, otherId) == nullptr); // destroyed when the worker left it
    CHECK(findThread(after, workerTid) == nullptr);
    CHECK(after.live == cuctx::liveObjects());
}

TEST_CASE("the report's text and JSON say the same", "[report]")
{
    const cuctx::Context ctx = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::ContextGuard g(ctx);
    const cuctx::ProcessReport r = cuctx::processReport({.devices = true, .diagnose = true});
    const std::string text = r.text();
    const std::string json = r.json();
    const std::string me = std::to_string(thisThread());
    CHECK(text.find("thread " + me) != std::string::npos);
    CHECK(json.find("\"tid\": " + me) != std::string::npos);
    CHECK(text.find("pid " + std::to_string(getpid())) != std::string::npos);
    CHECK_FALSE(r.findings.empty());
    CHECK(json.find("\"findings\": [") != std::string::npos);
    CHECK(json.find("\"check\": \"fork\"") != std::string::npos);
    CHECK(json.back() == '\n');
}

TEST_CASE("diagnose finds nothing wrong with a working driver, and reports each check", "[report]")
{
    const std::vector<cuctx::Finding> findings = cuctx::diagnose();
    for (const char* check : {"driver", "loader-path", "devices", "visible-devices", "driver-version", "compute-mode",
                              "module-loading", "jit-cache", "fork"}) {
        INFO(check);
        bool found = false;
        for (const cuctx::Finding& f : findings)
            found = found || f.check == check;
        CHECK(found);
    }
    CHECK(findFinding(findings, "driver", cuctx::Severity::ok) != nullptr);
    CHECK(findFinding(findings, "devices", cuctx::Severity::ok) != nullptr);
    CHECK(findFinding(findings, "fork", cuctx::Severity::ok) != nullptr);
    for (const cuctx::Finding& f : findings) {
        INFO(f.check << ": " << f.summary);
        CHECK(f.severity != cuctx::Severity::error);
        if (f.severity == cuctx::Severity::warning || f.severity == cuctx::Severity::error)
            CHECK_FALSE(f.advice.empty()); // every problem says what to do
    }
}

TEST_CASE("diagnose compares CUDA_VISIBLE_DEVICES with the machine's GPUs", "[report]")
{
    // Four GPUs as the kernel driver lists them, a filter that shows fewer and names GPUs beyond them.
    const std::filesystem::path list =
        std::filesystem::temp_directory_path() / ("cuctx-gpus-" + std::to_string(getpid()));
    for (int i = 0; i < 4; ++i)
        std::filesystem::create_directories(list / ("0000:1" + std::to_string(i) + ":00.0"));
    ScopedEnv visible("CUDA_VISIBLE_DEVICES", "0,5,99999999999999999999999"); // the last too large for a long
    const std::vector<cuctx::Finding> findings = cuctx::diagnose({.gpuListDir = list.string()});
    std::filesystem::remove_all(list);
    bool hides = false;
    bool namesNoGpu = false;
    bool namesHuge = false;
    for (const cuctx::Finding& f : findings) {
        const bool visibleCheck = f.check == "visible-devices";
        hides = hides || (visibleCheck && f.summary.find("of the 4 GPUs") != std::string::npos);
        namesNoGpu = namesNoGpu || (visibleCheck && f.summary.find("entry 5 names no GPU") != std::string::npos);
        namesHuge = namesHuge || (visibleCheck && f.summary.find("entry 9999") != std::string::npos);
    }
    CHECK(hides);
    CHECK(namesNoGpu);
    CHECK(namesHuge);
    CHECK(cuctx::worstSeverity(findings) >= cuctx::Severity::warning);
}

TEST_CASE("diagnose in a child forked after initialisation says so", "[report][fork]")
{
    const cuctx::Context ctx = cuctx::Context::create(cuctx::Device::get(0)); // CUDA is initialised
    const int status = cuctx::test::inChild([] {
        const std::vector<cuctx::Finding> findings = cuctx::diagnose();
        const cuctx::Finding* fork = findFinding(findings, "fork", cuctx::Severity::error);
        if (fork == nullptr)
            return 1;
        if (fork->summary.find("forked after its parent") == std::string::npos || fork->advice.empty())
            return 2;
        // The report works there too, without the driver.
        const cuctx::ProcessReport r = cuctx::processReport();
        return !r.driver.loaded && r.driver.condition == cuctx::Errc::forked_after_init ? 0 : 3;
    });
    CHECK(status == 0);
}

TEST_CASE("a signal makes a report, taken on a thread of its own", "[report]")
{
    const cuctx::Context ctx = cuctx::Context::create(cuctx::Device::get(0));
    std::signal(SIGUSR2, SIG_IGN);
    {
        std::promise<cuctx::ProcessReport> taken;
        std::atomic<bool> once{false};
        cuctx::ReportOnSignal reporter(SIGUSR2, [&](const cuctx::ProcessReport& r) {
            if (!once.exchange(true))
                taken.set_value(r);
        });
        CHECK_THROWS_MATCHES(cuctx::ReportOnSignal(SIGUSR1), cuctx::Error,
                             Catch::Predicate<cuctx::Error>(
                                 [](const cuctx::Error& e) { return e.condition() == cuctx::Errc::invalid_state; }));
        cuctx::ContextGuard g(ctx);
        REQUIRE(std::raise(SIGUSR2) == 0);
        auto future = taken.get_future();
        REQUIRE(future.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
        const cuctx::ProcessReport r = future.get();
        const cuctx::ThreadSnapshot* me = findThread(r, thisThread());
        REQUIRE(me != nullptr);
        CHECK(me->depth == 1);
        CHECK(reporter.reportsTaken() >= 1);
    }
    // The handler that was there before is back.
    struct sigaction now {};
    REQUIRE(sigaction(SIGUSR2, nullptr, &now) == 0);
    CHECK(now.sa_handler == SIG_IGN);
    std::signal(SIGUSR2, SIG_DFL);
    CHECK_THROWS_MATCHES(cuctx::ReportOnSignal(SIGKILL), cuctx::Error,
                         Catch::Predicate<cuctx::Error>(
                             [](const cuctx::Error& e) { return e.condition() == cuctx::Errc::invalid_argument; }));
}

TEST_CASE("a ReportOnSignal destroyed in a forked child leaves the parent's reporter running", "[report]")
{
    std::promise<void> taken;
    std::atomic<bool> once{false};
    auto reporter = std::make_unique<cuctx::ReportOnSignal>(SIGUSR2, [&](const cuctx::ProcessReport&) {
        if (!once.exchange(true))
            taken.set_value();
    });
    // The child has a copy of the object (and of the pipe) but not the thread.
    CHECK(cuctx::test::inChild([&] {
              alarm(10);
              reporter.reset();
              return 0;
          }) == 0);
    REQUIRE(std::raise(SIGUSR2) == 0);
    CHECK(taken.get_future().wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    CHECK(reporter->reportsTaken() >= 1);
}

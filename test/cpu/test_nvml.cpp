// SPDX-License-Identifier: MIT
// NVML through cuctx's loader: every way loading it fails, the versioned process lists, and
// cuctx::processes() on the fake NVML (other processes, MPS clients, this process, strays).

#include <catch2/catch.hpp>

#include "fake_env.hpp"

#include "cuctx/context.hpp"
#include "cuctx/device.hpp"
#include "cuctx/error.hpp"
#include "cuctx/gpu_process.hpp"
#include "driver/nvml.hpp"
#include "report/gpu_processes.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

using cuctx::Errc;
using cuctx::GpuProcess;
using cuctx::detail::loadNvml;

namespace {

const GpuProcess* find(const std::vector<GpuProcess>& list, unsigned pid)
{
    for (const GpuProcess& p : list)
        if (p.pid == pid)
            return &p;
    return nullptr;
}

std::vector<int> ordinals(const GpuProcess& p)
{
    std::vector<int> out;
    for (const auto& d : p.devices)
        out.push_back(d.ordinal);
    return out;
}

// A child (cat) with the given environment, blocked on its stdin until the object goes away: a real
// pid whose /proc/PID/environ this process can read.
class Child {
public:
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    Child(Child&&) = delete;
    Child& operator=(Child&&) = delete;
    explicit Child(std::vector<std::string> env)
    {
        int out[2] = {-1, -1};
        REQUIRE(pipe(fds_) == 0);
        REQUIRE(pipe(out) == 0);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, fds_[0], 0);
        posix_spawn_file_actions_adddup2(&actions, out[1], 1);
        posix_spawn_file_actions_addclose(&actions, fds_[1]);
        posix_spawn_file_actions_addclose(&actions, out[0]);
        std::vector<char*> envp;
        envp.reserve(env.size() + 1);
        for (std::string& e : env)
            envp.push_back(e.data());
        envp.push_back(nullptr);
        char cat[] = "cat";
        char* argv[] = {cat, nullptr};
        const int r = posix_spawnp(&pid_, "cat", &actions, nullptr, argv, envp.data());
        posix_spawn_file_actions_destroy(&actions);
        close(fds_[0]);
        close(out[1]);
        REQUIRE(r == 0);
        // Until cat runs, /proc/PID/environ is not yet its own: the parent's before the exec, and empty
        // while the exec sets up the new image (the exec closes close-on-exec descriptors, and ends a
        // vfork, before it writes the environment). A byte that cat echoes back was read by cat itself.
        char byte = 'x';
        REQUIRE(write(fds_[1], &byte, 1) == 1);
        ssize_t got = 0;
        while ((got = read(out[0], &byte, 1)) < 0 && errno == EINTR) {
        }
        close(out[0]);
        REQUIRE(got == 1);
    }
    ~Child()
    {
        close(fds_[1]); // cat sees the end of its input and exits
        int status = 0;
        waitpid(pid_, &status, 0);
    }
    unsigned pid() const { return static_cast<unsigned>(pid_); }

private:
    int fds_[2] = {-1, -1};
    pid_t pid_ = 0;
};

// processesFrom's error, where it fails (without a list of unlisted devices, a refusal does).
std::optional<cuctx::Error> failureOf(const cuctx::detail::NvmlApi& api)
{
    try {
        (void)cuctx::detail::processesFrom(api);
    } catch (const cuctx::Error& e) {
        return e;
    }
    return std::nullopt;
}

std::string entry(unsigned pid, int device, int mib)
{
    return std::to_string(pid) + "@" + std::to_string(device) + ":" + std::to_string(mib);
}

} // namespace

TEST_CASE("NVML at a path with no library: nvml_unavailable, naming the path and CUCTX_NVML_PATH", "[nvml]")
{
    const auto attempt = loadNvml("/nonexistent/cuctx/libnvidia-ml.so.1");
    REQUIRE_FALSE(attempt.nvml);
    REQUIRE(attempt.error);
    CHECK(attempt.error->condition() == Errc::nvml_unavailable);
    CHECK_THAT(attempt.error->what(), Catch::Contains("/nonexistent/cuctx/libnvidia-ml.so.1"));
    CHECK_THAT(attempt.error->what(), Catch::Contains("CUCTX_NVML_PATH"));
}

TEST_CASE("a library without NVML's entry points: nvml_unavailable listing them", "[nvml]")
{
    const auto attempt = loadNvml(CUCTX_FAKE_DRIVER_PATH); // a shared library, but libcuda's
    REQUIRE(attempt.error);
    CHECK(attempt.error->condition() == Errc::nvml_unavailable);
    CHECK_THAT(attempt.error->what(), Catch::Contains("nvmlInit_v2"));
    CHECK_THAT(attempt.error->what(), Catch::Contains("nvmlDeviceGetComputeRunningProcesses"));
}

TEST_CASE("nvmlInit_v2 failing: nvml_unavailable with NVML's name for it and what to do", "[nvml]")
{
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_NVML_INIT_RESULT", "9");
    const auto attempt = loadNvml(CUCTX_FAKE_NVML_PATH);
    REQUIRE(attempt.error);
    CHECK(attempt.error->condition() == Errc::nvml_unavailable);
    CHECK(attempt.error->call() == "nvmlInit_v2");
    CHECK_THAT(attempt.error->what(), Catch::Contains("NVML_ERROR_DRIVER_NOT_LOADED (9): Driver Not Loaded"));
    CHECK_THAT(attempt.error->what(), Catch::Contains("kernel module"));
}

TEST_CASE("the process list through _v2, whose record never changed, else the unversioned one", "[nvml]")
{
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_NVML_PROCESSES", entry(4001, 0, 100) + "," + entry(4002, 0, 200) + "," + entry(4003, 1, 300));
    for (const auto& [path, version] : {std::pair{CUCTX_FAKE_NVML_PATH, 2}, std::pair{CUCTX_FAKE_NVML_OLD_PATH, 1}}) {
        INFO(path);
        const auto attempt = loadNvml(path);
        REQUIRE(attempt.nvml);
        const auto& api = attempt.nvml->api;
        CHECK(api.computeProcessesVersion == version);
        const auto handles = cuctx::detail::nvmlHandlesOf(api, {cuctx::Device::get(0).uuid()});
        REQUIRE(handles[0] != nullptr);
        const auto list = cuctx::detail::nvmlProcesses(api, handles[0], false);
        REQUIRE(list.size() == 2); // a record of the wrong size would garble the second
        CHECK(list[0].pid == 4001);
        CHECK(list[1].pid == 4002);
        CHECK(list[1].usedMemory == std::uint64_t{200} << 20);
    }
}

TEST_CASE("processes: other processes joined by pid, MPS clients marked, memory summed", "[nvml]")
{
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_NVML_PROCESSES", entry(4001, 0, 100) + "," + entry(4001, 1, 50) + "," + entry(4002, 1, 200));
    env.set("CUCTX_FAKE_NVML_MPS_PROCESSES", entry(4003, 1, 70));
    const auto attempt = loadNvml(CUCTX_FAKE_NVML_PATH);
    REQUIRE(attempt.nvml);
    const auto list = cuctx::detail::processesFrom(attempt.nvml->api);
    const GpuProcess* a = find(list, 4001);
    REQUIRE(a != nullptr);
    CHECK(ordinals(*a) == std::vector<int>{0, 1});
    CHECK(a->usedMemoryBytes == std::uint64_t{150} << 20);
    CHECK(a->devices[0].uuid == cuctx::Device::get(0).uuid());
    const GpuProcess* mps = find(list, 4003);
    REQUIRE(mps != nullptr);
    CHECK(mps->devices.at(0).mpsClient);
    CHECK_FALSE(a->devices[0].mpsClient);
    CHECK(std::is_sorted(list.begin(), list.end(), [](auto& x, auto& y) { return x.pid < y.pid; }));
}

TEST_CASE("processes: this process appears where it holds a context, and only there", "[nvml]")
{
    const auto attempt = loadNvml(CUCTX_FAKE_NVML_PATH);
    REQUIRE(attempt.nvml);
    const auto self = static_cast<unsigned>(getpid());
    CHECK(find(cuctx::detail::processesFrom(attempt.nvml->api), self) == nullptr);
    {
        const cuctx::Context ctx = cuctx::Context::create(cuctx::Device::get(1));
        const auto list = cuctx::detail::processesFrom(attempt.nvml->api);
        const GpuProcess* me = find(list, self);
        REQUIRE(me != nullptr);
        CHECK(me->self);
        CHECK(ordinals(*me) == std::vector<int>{1});
        CHECK(me->environmentReadable);
        CHECK(me->commandLine.has_value());
        CHECK_FALSE(me->name.empty());
    }
    CHECK(find(cuctx::detail::processesFrom(attempt.nvml->api), self) == nullptr);
}

TEST_CASE("processes: a rank on device 0 though bound elsewhere is a stray", "[nvml]")
{
    Child rank1({"LOCAL_RANK=1"});
    Child own({"CUDA_VISIBLE_DEVICES=1"});
    Child wide({"CUDA_VISIBLE_DEVICES=" + cuctx::Device::get(1).uuid().substr(0, 12)}); // a UUID prefix
    Child unbound({"PATH=/usr/bin"});
    // Bound to a MIG instance by its "MIG-" UUID; cuctx spells every device's UUID "GPU-".
    Child mig({"CUDA_VISIBLE_DEVICES=MIG-" + cuctx::Device::get(1).uuid().substr(4)});
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_NVML_PROCESSES", entry(mig.pid(), 1, 500) + "," + entry(rank1.pid(), 0, 500) + "," +
                                             entry(rank1.pid(), 1, 9000) + "," + entry(own.pid(), 1, 9000) + "," +
                                             entry(wide.pid(), 0, 500) + "," + entry(wide.pid(), 1, 500) + "," +
                                             entry(unbound.pid(), 0, 1) + "," + entry(unbound.pid(), 1, 1));
    const auto attempt = loadNvml(CUCTX_FAKE_NVML_PATH);
    REQUIRE(attempt.nvml);
    const auto list = cuctx::detail::processesFrom(attempt.nvml->api);

    const GpuProcess* r = find(list, rank1.pid());
    REQUIRE(r != nullptr);
    CHECK(r->name == "cat");
    CHECK(r->localRank == 1);
    CHECK(r->localRankSource == "LOCAL_RANK");
    CHECK(r->boundDevices == std::vector<int>{1});
    CHECK_THAT(r->stray, Catch::Contains("device 0 though its binding (local rank 1 (LOCAL_RANK)) is device 1"));

    const GpuProcess* o = find(list, own.pid());
    REQUIRE(o != nullptr);
    CHECK(o->cudaVisibleDevices == "1");
    CHECK(o->stray.empty());

    const GpuProcess* w = find(list, wide.pid());
    REQUIRE(w != nullptr);
    CHECK(w->boundDevices == std::vector<int>{1});
    CHECK_THAT(w->stray, Catch::Contains("CUDA_VISIBLE_DEVICES=GPU-"));

    const GpuProcess* u = find(list, unbound.pid());
    REQUIRE(u != nullptr);
    CHECK(u->stray.empty()); // nothing says which devices it should use
    CHECK(u->boundDevices.empty());

    const GpuProcess* m = find(list, mig.pid());
    REQUIRE(m != nullptr);
    CHECK(m->boundDevices == std::vector<int>{1});
    CHECK(m->stray.empty());
}

TEST_CASE("processes: NVML refusing the list is a driver_error naming the call and what to do", "[nvml]")
{
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_NVML_PROCESS_RESULT", "4");
    const auto attempt = loadNvml(CUCTX_FAKE_NVML_PATH);
    REQUIRE(attempt.nvml);
    const auto e = failureOf(attempt.nvml->api);
    REQUIRE(e);
    CHECK(e->condition() == Errc::driver_error);
    CHECK(e->call() == "nvmlDeviceGetComputeRunningProcesses");
    CHECK_THAT(e->what(), Catch::Contains("NVML_ERROR_NO_PERMISSION"));
}

TEST_CASE("processes: a refused handle lookup fails the call; with unlisted, each device is named and why", "[nvml]")
{
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_NVML_HANDLE_RESULT", "1:4");
    env.set("CUCTX_FAKE_NVML_PROCESSES", entry(4001, 0, 5));
    const auto attempt = loadNvml(CUCTX_FAKE_NVML_PATH);
    REQUIRE(attempt.nvml);
    const auto e = failureOf(attempt.nvml->api);
    REQUIRE(e);
    CHECK(e->condition() == Errc::driver_error);
    CHECK(e->call() == "nvmlDeviceGetHandleByUUID");
    CHECK_THAT(e->what(), Catch::Contains("device 1") && Catch::Contains("NVML_ERROR_NO_PERMISSION"));
    std::vector<cuctx::detail::Unlisted> unlisted;
    const auto list = cuctx::detail::processesFrom(attempt.nvml->api, &unlisted);
    CHECK(find(list, 4001) != nullptr);
    REQUIRE(unlisted.size() == 2);
    CHECK(unlisted[0].why.empty());
    CHECK(unlisted[1].refused);
    CHECK_THAT(unlisted[1].why, Catch::Contains("nvmlDeviceGetHandleByUUID") && Catch::Contains("NO_PERMISSION"));
}

TEST_CASE("processes(unlisted): devices NVML does not know or cannot list are named, not refused", "[nvml]")
{
    cuctx::test::FakeEnvironment env;
    env.set("CUCTX_FAKE_DEVICES", "3");
    env.set("CUCTX_FAKE_NVML_DEVICES", "2"); // device 2: unknown to NVML
    env.set("CUCTX_FAKE_NVML_LIST_RESULT", "1:3");
    env.set("CUCTX_FAKE_NVML_PROCESSES", entry(4001, 0, 5) + "," + entry(4002, 1, 7));
    REQUIRE(loadNvml(CUCTX_FAKE_NVML_PATH).nvml); // the fake reads its configuration again
    std::vector<cuctx::UnlistedDevice> unlisted{{7, "stale", "", true}};
    {
        cuctx::test::FakeEnvironment failing;
        failing.set("CUCTX_FAKE_NVML_HANDLE_RESULT", "0:4");
        failing.set("CUCTX_FAKE_NVML_LIST_RESULT", "1:999");
        REQUIRE(loadNvml(CUCTX_FAKE_NVML_PATH).nvml);
        REQUIRE(cuctx::processes(unlisted).empty());
        REQUIRE(unlisted.size() == 3); // refused handle, refused list, unknown device; nothing of before
        CHECK(unlisted[0].refused);
        CHECK(unlisted[1].refused);
        CHECK(unlisted[1].why ==
              "nvmlDeviceGetComputeRunningProcesses failed with NVML_ERROR_UNKNOWN (999): Unknown Error");
        CHECK_FALSE(unlisted[2].refused);
    }
    REQUIRE(loadNvml(CUCTX_FAKE_NVML_PATH).nvml);
    const auto list = cuctx::processes(unlisted);
    CHECK(find(list, 4001) != nullptr);
    CHECK(find(list, 4002) == nullptr);
    REQUIRE(unlisted.size() == 2);
    CHECK(unlisted[0].ordinal == 1);
    CHECK_THAT(unlisted[0].why, Catch::Contains("not supported"));
    CHECK_FALSE(unlisted[0].refused);
    CHECK(unlisted[1].ordinal == 2);
    CHECK_THAT(unlisted[1].why, Catch::StartsWith("NVML does not know GPU-"));
    CHECK_FALSE(unlisted[1].refused);
}

TEST_CASE("cuctx::processes() uses the process-wide NVML ($CUCTX_NVML_PATH)", "[nvml]")
{
    // The fake rereads its configuration at each nvmlInit_v2: this one drops what earlier cases set.
    const auto fresh = loadNvml(CUCTX_FAKE_NVML_PATH);
    REQUIRE(fresh.nvml);
    const auto self = static_cast<unsigned>(getpid());
    const cuctx::Context ctx = cuctx::Context::primary(cuctx::Device::get(0));
    const auto list = cuctx::processes();
    const GpuProcess* me = find(list, self);
    REQUIRE(me != nullptr);
    CHECK(ordinals(*me) == std::vector<int>{0});
}

// SPDX-License-Identifier: MIT
// The launch journal where the code that launched is gone: an entry keeps a pointer to its caller's
// file name (a string literal of that code), and a plugin may be unloaded before the journal is
// read, for instance to name the suspects of a fault. Reading it must not fault.

#include <catch2/catch.hpp>

#include "module_helpers.hpp"

#include "cuctx/context.hpp"
#include "cuctx/device.hpp"
#include "cuctx/launch.hpp"
#include "cuctx/launch_journal.hpp"
#include "cuctx/module.hpp"
#include "cuctx/stream.hpp"

#include <dlfcn.h>

#include <fstream>
#include <string>
#include <vector>

namespace {

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

// Whether /proc/self/maps maps `file` (a path) now.
bool mapped(const std::string& file)
{
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
        if (line.ends_with(" " + file))
            return true;
    return false;
}

} // namespace

TEST_CASE("a journal entry launched from code unloaded since is read without a fault, its file unnamed", "[journal]")
{
    const std::string path = CUCTX_TEST_JOURNAL_PLUGIN;
    void* plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(plugin != nullptr);
    const auto where = reinterpret_cast<void (*)(cuctx::SourceLocation*)>(dlsym(plugin, "cuctxTestPluginWhere"));
    REQUIRE(where != nullptr);
    cuctx::SourceLocation there;
    where(&there);
    REQUIRE(std::string(there.file_name()).ends_with("journal_plugin.cpp"));

    cuctx::Context ctx = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::Module module =
        cuctx::Module::fromPtx(ctx, cuctx::test::readText(cuctx::test::testPtxPath()), {}, "kernels");
    const cuctx::Function empty = module.function("empty");
    cuctx::Stream stream(ctx);
    cuctx::launch(cuctx::detail::LaunchSite(empty, there), {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = stream});
    cuctx::launch(empty, {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = stream});
    const std::string line = std::to_string(__LINE__ - 1);

    std::vector<std::string> before = cuctx::recentLaunches(ctx);
    REQUIRE(before.size() == 2);
    CHECK(contains(before[0], "journal_plugin.cpp:"));

    REQUIRE(dlclose(plugin) == 0);
    REQUIRE(mapped(path) == false); // else the dangling pointer would not be tested
    const std::vector<std::string> after = cuctx::recentLaunches(ctx);
    REQUIRE(after.size() == 2);
    CHECK(contains(after[0], "kernel 'empty' of 'kernels'"));
    CHECK(contains(after[0], "at line " + std::to_string(there.line()) + " of a file that can no longer be read"));
    CHECK_FALSE(contains(after[0], "journal_plugin.cpp"));
    CHECK(contains(after[1], "test_launch_journal_cpu.cpp:" + line)); // loaded code is still named
    stream.synchronize();
}

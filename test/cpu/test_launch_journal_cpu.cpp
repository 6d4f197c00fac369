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

// Locations in files of other names (defined at the end of this file, after #line).
cuctx::SourceLocation whereUnicode();
cuctx::SourceLocation whereLong();

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

TEST_CASE("a journal entry keeps a file name that is not ASCII, or long, whole", "[journal]")
{
    cuctx::Context ctx = cuctx::Context::create(cuctx::Device::get(0));
    cuctx::Module module =
        cuctx::Module::fromPtx(ctx, cuctx::test::readText(cuctx::test::testPtxPath()), {}, "kernels");
    const cuctx::Function empty = module.function("empty");
    cuctx::Stream stream(ctx);
    const cuctx::SourceLocation unicode = whereUnicode();
    const cuctx::SourceLocation longName = whereLong();
    REQUIRE(std::string(longName.file_name()).size() > 600);
    cuctx::launch(cuctx::detail::LaunchSite(empty, unicode), {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = stream});
    cuctx::launch(cuctx::detail::LaunchSite(empty, longName),
                  {.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = stream});
    const std::vector<std::string> all = cuctx::recentLaunches(ctx);
    REQUIRE(all.size() == 2);
    CHECK(contains(all[0], std::string(unicode.file_name()) + ":" + std::to_string(unicode.line())));
    CHECK(contains(all[1], std::string(longName.file_name()) + ":" + std::to_string(longName.line())));
    stream.synchronize();
}

// Last in the file: what follows #line has its file name.
namespace {
#line 7 "journal-\u00e9t\u00e9/\u65e5\u672c/kernel.cpp"
cuctx::SourceLocation whereUnicode()
{
    return cuctx::SourceLocation::current();
}
#line 9 "directory-of-a-long-path-00/directory-of-a-long-path-01/directory-of-a-long-path-02/directory-of-a-long-path-03/directory-of-a-long-path-04/directory-of-a-long-path-05/directory-of-a-long-path-06/directory-of-a-long-path-07/directory-of-a-long-path-08/directory-of-a-long-path-09/directory-of-a-long-path-10/directory-of-a-long-path-11/directory-of-a-long-path-12/directory-of-a-long-path-13/directory-of-a-long-path-14/directory-of-a-long-path-15/directory-of-a-long-path-16/directory-of-a-long-path-17/directory-of-a-long-path-18/directory-of-a-long-path-19/directory-of-a-long-path-20/directory-of-a-long-path-21/kernel.cpp"
cuctx::SourceLocation whereLong()
{
    return cuctx::SourceLocation::current();
}
} // namespace

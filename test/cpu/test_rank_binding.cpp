// SPDX-License-Identifier: MIT
// Rank-to-device binding from each launcher's environment, with and without CUDA_VISIBLE_DEVICES.

#include <catch2/catch.hpp>

#include "cuctx/error.hpp"
#include "cuctx/rank_binding.hpp"
#include "process/environment.hpp"

#include <map>
#include <string>

using Env = std::map<std::string, std::string>;

TEST_CASE("each launcher's local-rank variable binds that rank's device", "[rank]")
{
    for (const std::string& variable : cuctx::localRankVariables()) {
        const cuctx::RankBinding b = cuctx::bindRank(Env{{variable, "2"}}, 4);
        CHECK(b.localRank == 2);
        CHECK(b.source == variable);
        CHECK(b.ordinal == 2);
        CHECK(b.visibleDevices == 4);
        CHECK_FALSE(b.physicalDevice.has_value());
    }
    CHECK(cuctx::localRankVariables() ==
          std::vector<std::string>{"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"});
}

TEST_CASE("Open MPI's variable wins over Slurm's when both are set (mpirun inside an allocation)", "[rank]")
{
    const cuctx::RankBinding b = cuctx::bindRank(Env{{"SLURM_LOCALID", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}}, 4);
    CHECK(b.localRank == 3);
    CHECK(b.source == "OMPI_COMM_WORLD_LOCAL_RANK");
}

TEST_CASE("no launcher: rank 0 on device 0", "[rank]")
{
    const cuctx::RankBinding b = cuctx::bindRank(Env{}, 2);
    CHECK(b.localRank == 0);
    CHECK(b.ordinal == 0);
    CHECK(b.source == "(none)");
    CHECK(b.describe() == "local rank 0 ((none)) -> device 0 of 2");
}

TEST_CASE("CUDA_VISIBLE_DEVICES: the ordinal indexes the visible list; one device per rank means ordinal 0", "[rank]")
{
    SECTION("several visible: the rank's entry")
    {
        const cuctx::RankBinding b = cuctx::bindRank(Env{{"LOCAL_RANK", "1"}, {"CUDA_VISIBLE_DEVICES", "4,6,7"}}, 3);
        CHECK(b.ordinal == 1);
        REQUIRE(b.physicalDevice.has_value());
        CHECK(*b.physicalDevice == "6");
        CHECK(b.describe() == "local rank 1 (LOCAL_RANK) -> device 1 of 3 (CUDA_VISIBLE_DEVICES entry 6)");
    }
    SECTION("one visible, set per rank by the launcher: every rank uses it")
    {
        const cuctx::RankBinding b = cuctx::bindRank(Env{{"SLURM_LOCALID", "3"}, {"CUDA_VISIBLE_DEVICES", "3"}}, 1);
        CHECK(b.ordinal == 0);
        CHECK(*b.physicalDevice == "3");
    }
    SECTION("UUIDs work as entries")
    {
        const cuctx::RankBinding b =
            cuctx::bindRank(Env{{"MPI_LOCALRANKID", "0"}, {"CUDA_VISIBLE_DEVICES", "GPU-1234,GPU-5678"}}, 2);
        CHECK(*b.physicalDevice == "GPU-1234");
    }
}

TEST_CASE("a local rank beyond the devices is a clear error", "[rank]")
{
    try {
        (void)cuctx::bindRank(Env{{"OMPI_COMM_WORLD_LOCAL_RANK", "4"}, {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}}, 4);
        FAIL("rank 4 bound to one of 4 devices");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == cuctx::Errc::invalid_argument);
        const std::string what = e.what();
        CHECK(what.find("local rank 4 (OMPI_COMM_WORLD_LOCAL_RANK)") != std::string::npos);
        CHECK(what.find("4 visible") != std::string::npos);
        CHECK(what.find("CUDA_VISIBLE_DEVICES=0,1,2,3") != std::string::npos);
        CHECK(what.find("one process per GPU") != std::string::npos);
    }
    CHECK_THROWS_WITH(cuctx::bindRank(Env{{"LOCAL_RANK", "two"}}, 4), Catch::Contains("not a local rank"));
    try {
        (void)cuctx::bindRank(Env{{"LOCAL_RANK", "0"}}, 0);
        FAIL("bound with no device");
    } catch (const cuctx::Error& e) {
        CHECK(e.condition() == cuctx::Errc::no_device);
    }
}

TEST_CASE("CUDA_VISIBLE_DEVICES is read as the driver reads it: it stops at the first entry that is no device",
          "[rank]")
{
    using cuctx::detail::parseVisibleDevices;
    CHECK(parseVisibleDevices("0,2,1").used == std::vector<std::string>{"0", "2", "1"});
    CHECK(parseVisibleDevices("0,,1").used == std::vector<std::string>{"0"}); // an empty entry stops it
    CHECK(*parseVisibleDevices("0,,1").stoppedAt == 1);
    CHECK(parseVisibleDevices("0,2,-1,1").used == std::vector<std::string>{"0", "2"});
    CHECK(parseVisibleDevices(",0").used.empty());
    CHECK(parseVisibleDevices("").used.empty());
    CHECK(parseVisibleDevices("GPU-12ab,MIG-3").used == std::vector<std::string>{"GPU-12ab", "MIG-3"});
    CHECK(parseVisibleDevices("GPU-,1").used.empty());
    CHECK_FALSE(parseVisibleDevices("3").stoppedAt);

    // bindRank follows it: "5,,6" is one device for the driver, so the rank it was written for
    // (any local rank: the launcher gave it its own) binds ordinal 0, entry "5"...
    const cuctx::RankBinding b = cuctx::bindRank(Env{{"LOCAL_RANK", "1"}, {"CUDA_VISIBLE_DEVICES", "5,,6"}}, 1);
    CHECK(b.ordinal == 0);
    REQUIRE(b.physicalDevice);
    CHECK(*b.physicalDevice == "5");
    // ...and "5,6,,7" is two: local rank 2 has none, and is told why.
    CHECK_THROWS_WITH(cuctx::bindRank(Env{{"LOCAL_RANK", "2"}, {"CUDA_VISIBLE_DEVICES", "5,6,,7"}}, 2),
                      Catch::Contains("the driver stops at entry 3 \"\" and uses the 2 before it"));
}

TEST_CASE("the environment parsers accept exactly what they document", "[rank]")
{
    using namespace cuctx::detail;
    CHECK(parseLocalRank("0") == 0);
    CHECK(parseLocalRank("17") == 17);
    CHECK_FALSE(parseLocalRank("-1"));
    CHECK_FALSE(parseLocalRank("+1"));
    CHECK_FALSE(parseLocalRank(" 1"));
    CHECK_FALSE(parseLocalRank("2147483648"));
    CHECK_FALSE(parseLocalRank(""));
    CHECK(parseCacheMaxSize("4294967296") == 4294967296u);
    CHECK_FALSE(parseCacheMaxSize("-1")); // strtoull would make it 2^64-1
    CHECK_FALSE(parseCacheMaxSize("18446744073709551616"));
    CHECK_FALSE(parseCacheMaxSize("1k"));
    CHECK(cacheDisabled("1"));
    CHECK_FALSE(cacheDisabled("true"));
}

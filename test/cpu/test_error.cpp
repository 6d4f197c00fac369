// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "check/check.hpp"
#include "check/error_names.hpp"
#include "cuctx/error.hpp"

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

using cuctx::Errc;
using cuctx::Error;

TEST_CASE("the CUresult table knows names and descriptions without the driver", "[error]")
{
    CHECK(cuctx::resultName(0) == "CUDA_SUCCESS");
    CHECK(cuctx::resultName(201) == "CUDA_ERROR_INVALID_CONTEXT");
    CHECK(cuctx::resultName(34) == "CUDA_ERROR_STUB_LIBRARY");
    CHECK(cuctx::resultName(709) == "CUDA_ERROR_CONTEXT_IS_DESTROYED");
    CHECK(cuctx::resultName(999) == "CUDA_ERROR_UNKNOWN");
    CHECK(cuctx::resultName(123456) == "unknown CUresult");
    CHECK_FALSE(cuctx::resultDescription(218).empty());
}

TEST_CASE("the CUresult table is sorted, unique and matches every enumerator of the installed cuda.h", "[error]")
{
    const auto table = cuctx::detail::allResultNames();
    for (std::size_t i = 1; i < table.size(); ++i)
        REQUIRE(table[i - 1].value < table[i].value);

    std::ifstream header(CUCTX_CUDA_H_PATH);
    REQUIRE(header.good());
    std::stringstream text;
    text << header.rdbuf();
    const std::string all = text.str();
    const auto begin = all.find("typedef enum cudaError_enum");
    const auto end = all.find("} CUresult;", begin);
    REQUIRE(begin != std::string::npos);
    REQUIRE(end != std::string::npos);
    const std::string body = all.substr(begin, end - begin);
    const std::regex enumerator(R"((CUDA_\w+)\s*=\s*(\d+))");
    int seen = 0;
    for (auto it = std::sregex_iterator(body.begin(), body.end(), enumerator); it != std::sregex_iterator(); ++it) {
        const std::string name = (*it)[1];
        const int value = std::stoi((*it)[2]);
        INFO(name << " = " << value);
        CHECK(cuctx::resultName(value) == name);
        ++seen;
    }
    CHECK(seen == static_cast<int>(table.size()));
}

TEST_CASE("a driver error names the call, the result, the object, the thread and the place", "[error]")
{
    try {
        cuctx::detail::check(CUDA_ERROR_INVALID_CONTEXT, "cuCtxPushCurrent",
                             cuctx::detail::Subject{.device = 1, .contextId = 7});
        FAIL("check did not throw");
    } catch (const Error& e) {
        const std::string m = e.what();
        CHECK(e.condition() == Errc::driver_error);
        CHECK(e.result() == 201);
        CHECK(e.call() == "cuCtxPushCurrent");
        CHECK(e.object() == "context 7 on device 1");
        CHECK(e.code().category() == cuctx::driverCategory());
        CHECK(e.code().value() == 201);
        CHECK(e.threadId() > 0);
        CHECK_THAT(m, Catch::Contains("cuCtxPushCurrent failed with CUDA_ERROR_INVALID_CONTEXT (201)"));
        CHECK_THAT(m, Catch::Contains("on context 7 on device 1"));
        CHECK_THAT(m, Catch::Contains("ContextGuard")); // what to do
        CHECK_THAT(m, Catch::Contains("thread " + std::to_string(e.threadId())));
        CHECK_THAT(m, Catch::Contains("test_error.cpp:"));
    }
}

TEST_CASE("driver results map onto cuctx conditions", "[error]")
{
    auto conditionOf = [](CUresult r) {
        try {
            cuctx::detail::check(r, "cuInit");
        } catch (const Error& e) {
            return e;
        }
        FAIL("no throw");
        throw;
    };
    const Error stub = conditionOf(CUDA_ERROR_STUB_LIBRARY);
    CHECK(stub.condition() == Errc::stub_driver);
    CHECK(stub.code() == Errc::stub_driver);
    CHECK_THAT(stub.what(), Catch::Contains("stubs"));
    const Error none = conditionOf(CUDA_ERROR_NO_DEVICE);
    CHECK(none.condition() == Errc::no_device);
    CHECK(none.code() == Errc::no_device);
    CHECK(none.code() != Errc::stub_driver);
    CHECK(conditionOf(CUDA_ERROR_OUT_OF_MEMORY).code() == Errc::driver_error);
}

TEST_CASE("a cuctx error without a driver result uses the cuctx category", "[error]")
{
    try {
        cuctx::detail::throwError(Errc::invalid_argument, "cuctx::Thing", "the value 3 is wrong", "Pass 2");
    } catch (const Error& e) {
        CHECK(e.result() == 0);
        CHECK(e.code().category() == cuctx::errorCategory());
        CHECK(e.code() == Errc::invalid_argument);
        CHECK(std::string(e.code().category().name()) == "cuctx");
        CHECK_THAT(e.what(), Catch::StartsWith("cuctx::Thing failed: the value 3 is wrong. Pass 2. [thread"));
    }
}

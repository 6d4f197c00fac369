// SPDX-License-Identifier: MIT
// Devices on the real driver, checked against nvidia-smi run in the same process.

#include "gpu_helpers.hpp"

#include "cuctx/device.hpp"
#include "cuctx/driver.hpp"
#include "driver/driver_state.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <vector>

using cuctx::Device;

namespace {

struct SmiRow {
    std::string name, uuid, pciBusId;
    unsigned long long memoryMiB = 0;
};

std::string trim(std::string s)
{
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), [](unsigned char c) { return !std::isspace(c); }));
    s.erase(std::find_if(s.rbegin(), s.rend(), [](unsigned char c) { return !std::isspace(c); }).base(), s.end());
    return s;
}

std::vector<SmiRow> nvidiaSmi()
{
    const std::string out = cuctx::test::commandOutput(
        "nvidia-smi --query-gpu=name,uuid,memory.total,pci.bus_id --format=csv,noheader,nounits 2>/dev/null");
    std::vector<SmiRow> rows;
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line)) {
        std::vector<std::string> fields;
        std::istringstream parts(line);
        std::string field;
        while (std::getline(parts, field, ','))
            fields.push_back(trim(field));
        if (fields.size() == 4)
            rows.push_back({fields[0], fields[1], fields[3], std::stoull(fields[2])});
    }
    return rows;
}

// nvidia-smi prints an 8-digit domain ("00000000:19:00.0"), the driver a 4-digit one.
std::string normalisedBusId(std::string id)
{
    std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
    const auto colon = id.find(':');
    std::string domain = id.substr(0, colon);
    domain.erase(0, std::min(domain.find_first_not_of('0'), domain.size() - 1));
    return domain + id.substr(colon);
}

CUcontext currentContext()
{
    CUcontext c = nullptr;
    REQUIRE(cuctx::detail::api().cuCtxGetCurrent(&c) == CUDA_SUCCESS);
    return c;
}

} // namespace

TEST_CASE("the real driver loads with its version and path", "[gpu]")
{
    const auto st = cuctx::Driver::status();
    REQUIRE(st.loaded);
    CHECK(st.driverVersion >= 12000);
    CHECK(st.resolvedPath.find("libcuda.so") != std::string::npos);
    CHECK(st.resolvedPath.find("stubs") == std::string::npos);
    CHECK(cuctx::Driver::version() == st.driverVersion);
    WARN("driver " << st.driverVersion << " from " << st.resolvedPath);
}

TEST_CASE("devices match nvidia-smi: name, UUID, memory and PCI bus id", "[gpu]")
{
    const auto smi = nvidiaSmi();
    REQUIRE_FALSE(smi.empty()); // nvidia-smi ships with the driver: its absence is a broken install
    const auto devices = Device::all();
    REQUIRE(!devices.empty());
    if (std::getenv("CUDA_VISIBLE_DEVICES") == nullptr)
        CHECK(devices.size() == smi.size());
    for (const Device& d : devices) {
        const std::string uuid = d.uuid();
        INFO("device " << d.ordinal() << " " << uuid);
        // nvidia-smi ignores CUDA_VISIBLE_DEVICES, so match by UUID rather than by index.
        const auto row = std::find_if(smi.begin(), smi.end(), [&](const SmiRow& r) { return r.uuid == uuid; });
        REQUIRE(row != smi.end());
        CHECK(d.name() == row->name);
        CHECK(normalisedBusId(d.pciBusId()) == normalisedBusId(row->pciBusId));
        const auto ourMiB = static_cast<unsigned long long>(d.totalMemory() >> 20);
        WARN("device " << d.ordinal() << ": cuDeviceTotalMem " << ourMiB << " MiB, nvidia-smi " << row->memoryMiB
                       << " MiB");
        // cuDeviceTotalMem leaves out what the driver reserves; nvidia-smi counts the whole framebuffer.
        CHECK(ourMiB <= row->memoryMiB);
        CHECK(ourMiB * 100 >= row->memoryMiB * 97);
        const auto p = d.properties();
        CHECK(p.multiprocessors > 0);
        CHECK(p.warpSize == 32);
        CHECK(p.computeCapabilityMajor >= 3);
    }
}

TEST_CASE("the primary context's state is read without creating it; memoryInfo balances its retain", "[gpu]")
{
    const Device d = Device::get(0);
    const auto before = d.primaryContextState();
    if (before.active)
        WARN("the primary context of device 0 was already active before this test");
    REQUIRE(currentContext() == nullptr);
    (void)d.primaryContextState();
    CHECK(d.primaryContextState().active == before.active); // reading did not activate it
    CHECK(currentContext() == nullptr);

    const auto info = d.memoryInfo();
    CHECK(info.total > 0);
    CHECK(info.free > 0);
    CHECK(info.free <= info.total);
    CHECK(currentContext() == nullptr);                     // the stack is as it was
    CHECK(d.primaryContextState().active == before.active); // the retain was released
}

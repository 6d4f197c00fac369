// SPDX-License-Identifier: MIT
#pragma once

// The child half of the IPC test: the GPU suite's program runs this instead of the tests when the
// variable below is set. It opens the parent's buffer and event, waits for the event and checks
// every element. Exit status 0 when all is right.

#include "cuctx/context.hpp"
#include "cuctx/device_buffer.hpp"
#include "cuctx/event.hpp"
#include "cuctx/stream.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace cuctx::test {

inline constexpr const char* kIpcChildVariable = "CUCTX_TEST_IPC_CHILD";
inline constexpr float kIpcFactor = 3.0f;

inline std::vector<float> ipcPattern(std::size_t n)
{
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<float>(i % 1000) - 500.0f;
    return v;
}

inline int runIpcChild(const std::string& handles)
{
    try {
        const auto space = handles.find(' ');
        const IpcMemHandle memory = IpcMemHandle::parse(handles.substr(0, space));
        const IpcEventHandle event = IpcEventHandle::parse(handles.substr(space + 1));
        const Context ctx = Context::primary(Device::get(0));
        const Event written = Event::openIpc(ctx, event);
        const IpcMemory shared(ctx, memory);
        Stream stream(ctx);
        stream.wait(written); // the parent's kernel, in the parent's process, before the copy
        stream.synchronize();
        std::vector<float> got(memory.size / sizeof(float));
        shared.download(got.data(), memory.size);
        const std::vector<float> input = ipcPattern(got.size());
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < got.size(); ++i)
            wrong += got[i] == input[i] * kIpcFactor ? 0 : 1;
        if (wrong != 0) {
            std::fprintf(stderr, "ipc child: %zu of %zu elements wrong\n", wrong, got.size());
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ipc child: %s\n", e.what());
        return 2;
    }
}

} // namespace cuctx::test

// libFuzzer: the GpuWorker protocol's readers (src/worker/worker_protocol.cpp): the header and the
// hello, run and reply payloads. Never crash; a message that decodes encodes back to the same bytes
// (the readers accept one encoding per message, so the supervisor and the worker cannot disagree).

#include "fuzz_target.hpp"

#include "worker/worker_protocol.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

namespace {

template <typename Message>
void roundTrip(const std::optional<Message>& m, std::span<const std::byte> payload)
{
    if (!m)
        return;
    const std::vector<std::byte> again = cuctx::detail::worker::encode(*m);
    if (again.size() != cuctx::detail::worker::kHeaderBytes + payload.size() ||
        std::memcmp(again.data() + cuctx::detail::worker::kHeaderBytes, payload.data(), payload.size()) != 0)
        std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    namespace wk = cuctx::detail::worker;
    const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
    if (size >= wk::kHeaderBytes) {
        const auto header = wk::decodeHeader(input.first(wk::kHeaderBytes));
        if (header && header->length > wk::kMaxPayload)
            std::abort();
    }
    // The first byte picks the payload type, so that each reader sees whole inputs.
    if (size == 0)
        return 0;
    const std::span<const std::byte> payload = input.subspan(1);
    switch (data[0] % 3) {
    case 0: roundTrip(wk::decodeHello(payload), payload); break;
    case 1: {
        const auto run = wk::decodeRun(payload);
        if (run)
            for (const wk::Argument& a : run->arguments)
                if (a.isBuffer ? a.buffer >= run->buffers.size()
                               : (a.scalar.empty() || a.scalar.size() > wk::kMaxScalarBytes))
                    std::abort();
        roundTrip(run, payload);
        break;
    }
    default: roundTrip(wk::decodeReply(payload), payload); break;
    }
    return 0;
}

#pragma once
#ifndef CUCTX_PRIVATE
#error "a private header of cuctx (src/): outside the library, include the public headers <cuctx/...>"
#endif

// The messages between a cuctx::GpuWorker and its worker process (cuctx-gpu-worker), and their
// encoding: pure functions with no CUDA and no cuctx::Error in them, so that the fuzzer
// (test/fuzz/fuzz_worker_protocol.cpp) compiles them as they are.
//
// A message is a 16-byte header and a payload. The header: magic "CXWK" (u32), version (u16), type
// (u16), payload length (u32), reserved (u32, 0). Integers are little-endian; a byte string is a u64
// length and the bytes, a text a u32 length and the bytes. A reader refuses a wrong magic, another
// version, an unknown type, a payload over kMaxPayload, a field that runs past the payload, bytes
// left over, and requests whose fields contradict each other (an argument naming a missing buffer).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cuctx::detail::worker {

inline constexpr std::uint32_t kMagic = 0x4b575843; // "CXWK" as little-endian bytes
inline constexpr std::uint16_t kVersion = 1;
inline constexpr std::size_t kHeaderBytes = 16;
inline constexpr std::uint32_t kMaxPayload = 1u << 30;
inline constexpr std::size_t kMaxScalarBytes = 256; // the driver's kernel parameters total 4 KiB at most
inline constexpr std::size_t kJournalSize = 8;      // launches a worker reports back

enum class Type : std::uint16_t { hello = 1, run = 2, reply = 3 };

struct Header {
    Type type = Type::hello;
    std::uint32_t length = 0;
};

/// The worker's first message: it is ready (status 0) or could not start (a CUresult, or -1).
struct Hello {
    std::uint32_t pid = 0;
    std::int32_t device = 0;
    std::int32_t driverVersion = 0;
    std::int32_t status = 0;
    std::string message;
};

enum BufferFlags : std::uint8_t { copyIn = 1, copyBack = 2 };

struct Buffer {
    std::uint64_t bytes = 0;
    std::uint8_t flags = 0;
    std::vector<std::byte> contents; ///< exactly `bytes` bytes when copyIn, else empty (zeros)
};

struct Argument {
    bool isBuffer = false;
    std::vector<std::byte> scalar; ///< 1..kMaxScalarBytes bytes when !isBuffer
    std::uint32_t buffer = 0;      ///< an index into Run::buffers when isBuffer
};

/// Load an image (its bytes, or a path the worker opens), launch one kernel, copy buffers back.
struct Run {
    std::uint64_t id = 0;
    bool imageIsPath = false;
    std::vector<std::byte> image;
    std::string kernel;
    std::array<std::uint32_t, 3> grid{1, 1, 1};
    std::array<std::uint32_t, 3> block{1, 1, 1};
    std::uint32_t sharedBytes = 0;
    std::vector<Buffer> buffers;
    std::vector<Argument> arguments;
};

/// A launch as the worker recorded it (its journal).
struct Launch {
    std::uint64_t request = 0;
    std::string kernel;
    std::array<std::uint32_t, 3> grid{1, 1, 1};
    std::array<std::uint32_t, 3> block{1, 1, 1};
    std::int32_t result = 0; ///< what the request ended with (a CUresult; -1 for a non-driver failure)
};

/// The answer to a Run: success (result 0, the buffers to copy back, in order) or a failure: the
/// CUresult (-1 when it was not the driver's), the call that failed, the worker's message and its
/// last launches. `sticky` says the worker's device is unusable: it exits after this reply.
struct Reply {
    std::uint64_t id = 0;
    std::int32_t result = 0;
    bool sticky = false;
    std::string call;
    std::string message;
    std::vector<std::vector<std::byte>> buffers;
    std::vector<Launch> journal;
};

/// The whole message (header and payload).
std::vector<std::byte> encode(const Hello& message);
std::vector<std::byte> encode(const Run& message);
std::vector<std::byte> encode(const Reply& message);

/// The header's fields; nullopt for a wrong magic or version, an unknown type, a length over kMaxPayload.
std::optional<Header> decodeHeader(std::span<const std::byte> header);
/// A payload of the type the header named; nullopt for anything malformed (see the file comment).
std::optional<Hello> decodeHello(std::span<const std::byte> payload);
std::optional<Run> decodeRun(std::span<const std::byte> payload);
std::optional<Reply> decodeReply(std::span<const std::byte> payload);

} // namespace cuctx::detail::worker

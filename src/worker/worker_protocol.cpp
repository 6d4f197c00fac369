// SPDX-License-Identifier: MIT
#include "worker/worker_protocol.hpp"

#include <cstring>

namespace cuctx::detail::worker {

namespace {

class Writer {
public:
    explicit Writer(Type type)
    {
        u32(kMagic);
        u16(kVersion);
        u16(static_cast<std::uint16_t>(type));
        u32(0); // the length, patched in finish()
        u32(0);
    }
    void u8(std::uint8_t v) { out_.push_back(static_cast<std::byte>(v)); }
    void u16(std::uint16_t v) { put(v, 2); }
    void u32(std::uint32_t v) { put(v, 4); }
    void u64(std::uint64_t v) { put(v, 8); }
    void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
    void dims(const std::array<std::uint32_t, 3>& d)
    {
        for (std::uint32_t v : d)
            u32(v);
    }
    void bytes(std::span<const std::byte> b)
    {
        u64(b.size());
        out_.insert(out_.end(), b.begin(), b.end());
    }
    void text(const std::string& s)
    {
        u32(static_cast<std::uint32_t>(s.size()));
        const auto* p = reinterpret_cast<const std::byte*>(s.data());
        out_.insert(out_.end(), p, p + s.size());
    }
    std::vector<std::byte> finish()
    {
        const std::uint64_t length = out_.size() - kHeaderBytes;
        for (int i = 0; i < 4; ++i)
            out_[8 + static_cast<std::size_t>(i)] = static_cast<std::byte>((length >> (8 * i)) & 0xff);
        return std::move(out_);
    }

private:
    void put(std::uint64_t v, int n)
    {
        for (int i = 0; i < n; ++i)
            out_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
    }
    std::vector<std::byte> out_;
};

// Reads fields in order; any read past the end sets failed() and returns zeros from then on.
class Reader {
public:
    explicit Reader(std::span<const std::byte> in) : in_(in) {}
    bool failed() const noexcept { return failed_; }
    bool done() const noexcept { return !failed_ && at_ == in_.size(); }
    std::size_t left() const noexcept { return in_.size() - at_; }
    std::uint8_t u8() { return static_cast<std::uint8_t>(get(1)); }
    /// A byte that must be 0 or 1; anything else fails the message.
    bool flag()
    {
        const std::uint8_t b = u8();
        if (b > 1)
            fail();
        return b == 1;
    }
    std::uint16_t u16() { return static_cast<std::uint16_t>(get(2)); }
    std::uint32_t u32() { return static_cast<std::uint32_t>(get(4)); }
    std::uint64_t u64() { return get(8); }
    std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
    std::array<std::uint32_t, 3> dims() { return {u32(), u32(), u32()}; }
    std::vector<std::byte> bytes()
    {
        const std::uint64_t n = u64();
        if (!take(n))
            return {};
        return {in_.begin() + static_cast<std::ptrdiff_t>(at_ - n), in_.begin() + static_cast<std::ptrdiff_t>(at_)};
    }
    std::string text()
    {
        const std::uint32_t n = u32();
        if (!take(n))
            return {};
        return std::string(reinterpret_cast<const char*>(in_.data()) + (at_ - n), n);
    }
    // A count of items each at least `minBytes` long: more than the bytes left is malformed.
    std::uint32_t count(std::size_t minBytes)
    {
        const std::uint32_t n = u32();
        if (!failed_ && n > left() / minBytes)
            failed_ = true;
        return failed_ ? 0 : n;
    }
    void fail() noexcept { failed_ = true; }

private:
    bool take(std::uint64_t n)
    {
        if (failed_ || n > left()) {
            failed_ = true;
            return false;
        }
        at_ += static_cast<std::size_t>(n);
        return true;
    }
    std::uint64_t get(int n)
    {
        if (!take(static_cast<std::uint64_t>(n)))
            return 0;
        std::uint64_t v = 0;
        for (int i = 0; i < n; ++i)
            v |= static_cast<std::uint64_t>(in_[at_ - static_cast<std::size_t>(n) + static_cast<std::size_t>(i)])
                 << (8 * i);
        return v;
    }
    std::span<const std::byte> in_;
    std::size_t at_ = 0;
    bool failed_ = false;
};

bool validDims(const std::array<std::uint32_t, 3>& d)
{
    return d[0] != 0 && d[1] != 0 && d[2] != 0;
}

void writeLaunch(Writer& w, const Launch& l)
{
    w.u64(l.request);
    w.text(l.kernel);
    w.dims(l.grid);
    w.dims(l.block);
    w.i32(l.result);
}

} // namespace

std::vector<std::byte> encode(const Hello& m)
{
    Writer w(Type::hello);
    w.u32(m.pid);
    w.i32(m.device);
    w.i32(m.driverVersion);
    w.i32(m.status);
    w.text(m.message);
    return w.finish();
}

std::vector<std::byte> encode(const Run& m)
{
    Writer w(Type::run);
    w.u64(m.id);
    w.u8(m.imageIsPath ? 1 : 0);
    w.bytes(m.image);
    w.text(m.kernel);
    w.dims(m.grid);
    w.dims(m.block);
    w.u32(m.sharedBytes);
    w.u32(static_cast<std::uint32_t>(m.buffers.size()));
    for (const Buffer& b : m.buffers) {
        w.u64(b.bytes);
        w.u8(b.flags);
        if (b.flags & copyIn)
            w.bytes(b.contents);
    }
    w.u32(static_cast<std::uint32_t>(m.arguments.size()));
    for (const Argument& a : m.arguments) {
        w.u8(a.isBuffer ? 1 : 0);
        if (a.isBuffer)
            w.u32(a.buffer);
        else
            w.bytes(a.scalar);
    }
    return w.finish();
}

std::vector<std::byte> encode(const Reply& m)
{
    Writer w(Type::reply);
    w.u64(m.id);
    w.i32(m.result);
    w.u8(m.sticky ? 1 : 0);
    w.text(m.call);
    w.text(m.message);
    w.u32(static_cast<std::uint32_t>(m.buffers.size()));
    for (const auto& b : m.buffers)
        w.bytes(b);
    w.u32(static_cast<std::uint32_t>(m.journal.size()));
    for (const Launch& l : m.journal)
        writeLaunch(w, l);
    return w.finish();
}

std::optional<Header> decodeHeader(std::span<const std::byte> header)
{
    if (header.size() != kHeaderBytes)
        return std::nullopt;
    Reader r(header);
    const std::uint32_t magic = r.u32();
    const std::uint16_t version = r.u16();
    const std::uint16_t type = r.u16();
    const std::uint32_t length = r.u32();
    const std::uint32_t reserved = r.u32();
    if (r.failed() || magic != kMagic || version != kVersion || reserved != 0 || length > kMaxPayload)
        return std::nullopt;
    if (type < static_cast<std::uint16_t>(Type::hello) || type > static_cast<std::uint16_t>(Type::reply))
        return std::nullopt;
    return Header{static_cast<Type>(type), length};
}

std::optional<Hello> decodeHello(std::span<const std::byte> payload)
{
    Reader r(payload);
    Hello m;
    m.pid = r.u32();
    m.device = r.i32();
    m.driverVersion = r.i32();
    m.status = r.i32();
    m.message = r.text();
    if (!r.done())
        return std::nullopt;
    return m;
}

std::optional<Run> decodeRun(std::span<const std::byte> payload)
{
    Reader r(payload);
    Run m;
    m.id = r.u64();
    m.imageIsPath = r.flag();
    m.image = r.bytes();
    m.kernel = r.text();
    m.grid = r.dims();
    m.block = r.dims();
    m.sharedBytes = r.u32();
    const std::uint32_t buffers = r.count(9);
    m.buffers.reserve(buffers);
    for (std::uint32_t i = 0; i < buffers && !r.failed(); ++i) {
        Buffer b;
        b.bytes = r.u64();
        b.flags = r.u8();
        if (b.bytes == 0 || (b.flags & ~(copyIn | copyBack)) != 0)
            r.fail();
        if (b.flags & copyIn) {
            b.contents = r.bytes();
            if (b.contents.size() != b.bytes)
                r.fail();
        }
        m.buffers.push_back(std::move(b));
    }
    const std::uint32_t arguments = r.count(5);
    m.arguments.reserve(arguments);
    for (std::uint32_t i = 0; i < arguments && !r.failed(); ++i) {
        Argument a;
        const std::uint8_t kind = r.u8();
        if (kind > 1)
            r.fail();
        a.isBuffer = kind == 1;
        if (a.isBuffer) {
            a.buffer = r.u32();
            if (a.buffer >= m.buffers.size())
                r.fail();
        } else {
            a.scalar = r.bytes();
            if (a.scalar.empty() || a.scalar.size() > kMaxScalarBytes)
                r.fail();
        }
        m.arguments.push_back(std::move(a));
    }
    if (!r.done() || m.image.empty() || m.kernel.empty() || !validDims(m.grid) || !validDims(m.block))
        return std::nullopt;
    return m;
}

std::optional<Reply> decodeReply(std::span<const std::byte> payload)
{
    Reader r(payload);
    Reply m;
    m.id = r.u64();
    m.result = r.i32();
    m.sticky = r.flag();
    m.call = r.text();
    m.message = r.text();
    const std::uint32_t buffers = r.count(8);
    m.buffers.reserve(buffers);
    for (std::uint32_t i = 0; i < buffers && !r.failed(); ++i)
        m.buffers.push_back(r.bytes());
    const std::uint32_t launches = r.count(40);
    if (launches > kJournalSize)
        r.fail();
    for (std::uint32_t i = 0; i < launches && !r.failed(); ++i) {
        Launch l;
        l.request = r.u64();
        l.kernel = r.text();
        l.grid = r.dims();
        l.block = r.dims();
        l.result = r.i32();
        m.journal.push_back(std::move(l));
    }
    if (!r.done())
        return std::nullopt;
    return m;
}

} // namespace cuctx::detail::worker

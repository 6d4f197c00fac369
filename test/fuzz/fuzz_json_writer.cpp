// libFuzzer: the JSON writer and printableText. Any bytes as strings and keys, any doubles: the
// document must be valid UTF-8 (checked here byte by byte) and balanced; neither may let a control
// character (C0, DEL, C1) through raw.

#include "fuzz_target.hpp"

#include "format/json_writer.hpp"
#include "format/printable.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

// A strict UTF-8 check (RFC 3629), written apart from the writer's own.
bool validUtf8(std::string_view s)
{
    for (std::size_t i = 0; i < s.size();) {
        const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
        const unsigned c = b(i);
        std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size())
            return false;
        std::uint32_t cp = n == 1 ? c : c & (0x7f >> n);
        for (std::size_t k = 1; k < n; ++k) {
            if ((b(i + k) & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (b(i + k) & 0x3f);
        }
        const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n;
    }
    return true;
}

// No raw C0 control (newlines allowed where `newlines`), no DEL, no C1 (0xc2 0x80-0x9f).
bool noControls(std::string_view s, bool newlines)
{
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if ((c < 0x20 && !(newlines && c == '\n')) || c == 0x7f)
            return false;
        if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9f)
            return false;
    }
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    cuctx::detail::JsonWriter j;
    j.beginObject();
    j.key(input).value(input);
    if (size >= sizeof(double)) {
        double d = 0;
        std::memcpy(&d, data, sizeof d);
        j.key("number").value(d);
    }
    j.key("list").beginArray().value(input.substr(size / 2)).null().endArray();
    j.endObject();
    const std::string& text = j.text();
    if (!validUtf8(text) || text.empty() || text.back() != '\n' || !noControls(text, true))
        std::abort();
    const std::string shown = cuctx::detail::printableText(input);
    if (!validUtf8(shown) || !noControls(shown, false) || shown.size() < input.size())
        std::abort();
    return 0;
}

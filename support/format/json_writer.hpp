// SPDX-License-Identifier: MIT
#pragma once

// A small streaming JSON writer for cuctx-inspect's --json output and cuctx::ProcessReport::json():
// objects, arrays, strings (escaped, always valid UTF-8), numbers (a double as the shortest text that
// reads back as it, '.' in any locale), booleans and null, pretty-printed with two-space indentation.
// Not public API (cuctx::detail): in the static library that libcuctx and the tools share
// (support/meson.build).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuctx::detail {

class JsonWriter {
public:
    JsonWriter& beginObject() { return open('{'); }
    JsonWriter& endObject() { return close('}'); }
    JsonWriter& beginArray() { return open('['); }
    JsonWriter& endArray() { return close(']'); }
    /// The name of the next member (inside an object).
    JsonWriter& key(std::string_view name);
    JsonWriter& value(std::string_view text);
    JsonWriter& value(const char* text) { return value(std::string_view(text)); }
    JsonWriter& value(std::int64_t number);
    JsonWriter& value(std::uint64_t number);
    JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
    JsonWriter& value(unsigned number) { return value(static_cast<std::uint64_t>(number)); }
    JsonWriter& value(bool flag);
    JsonWriter& value(double number);
    JsonWriter& null();
    template <typename T>
    JsonWriter& value(const std::optional<T>& maybe)
    {
        return maybe ? value(*maybe) : null();
    }

    /// The document so far, with a final newline once the outermost value is closed.
    const std::string& text() const { return out_; }

private:
    JsonWriter& open(char bracket);
    JsonWriter& close(char bracket);
    void beforeValue();
    void newline();

    std::string out_;
    std::vector<bool> hasMembers_; // one per open container
    bool afterKey_ = false;
};

/// `text` as a JSON string literal, quotes included: always valid UTF-8. Well-formed UTF-8 is copied;
/// every byte that is not part of a well-formed sequence (a path's "\xff", say) becomes U+FFFD,
/// escaped as "\ufffd"; control characters are escaped, C1 (U+0080-U+009F) included.
std::string jsonQuote(std::string_view text);

/// `number` as the shortest text that reads back as the same double ("0.0004", "1e-07", "225.192"),
/// '.' in any locale: what JsonWriter writes, and what CSV output should write too. Empty for NaN and
/// infinity, which JSON cannot hold.
std::string exactNumber(double number);

} // namespace cuctx::detail

// The JSON writer behind cuctx-inspect --json, cuctx-stress --json and ProcessReport::json(), and the
// printable text that cuctx-inspect shows of other processes.

#include <catch2/catch.hpp>

#include "format/json_writer.hpp"
#include "format/printable.hpp"

#include <clocale>
#include <cmath>
#include <cstdlib>
#include <string>

using cuctx::detail::jsonQuote;

TEST_CASE("JSON strings are valid UTF-8 whatever bytes they are given", "[json]")
{
    CHECK(jsonQuote("a\"b\\c\n") == "\"a\\\"b\\\\c\\n\"");
    CHECK(jsonQuote("\x01\x7f") == "\"\\u0001\\u007f\"");
    CHECK(jsonQuote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    CHECK(jsonQuote("/tmp/\xff.ptx") == "\"/tmp/\\ufffd.ptx\"");                // no UTF-8 at all
    CHECK(jsonQuote("\xc3") == "\"\\ufffd\"");                                  // cut short
    CHECK(jsonQuote("\xc0\xaf") == "\"\\ufffd\\ufffd\"");                       // overlong
    CHECK(jsonQuote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");            // a surrogate
    CHECK(jsonQuote("\xf4\x90\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); // above U+10FFFF
    CHECK(jsonQuote(std::string("a\0b", 3)) == "\"a\\u0000b\"");
}

TEST_CASE("JSON numbers use '.' in any C locale", "[json]")
{
    cuctx::detail::JsonWriter j;
    j.beginArray().value(1234.5).value(-0.25).value(1e300 * 1e10).endArray();
    CHECK(j.text() == "[\n  1234.5,\n  -0.25,\n  null\n]\n");
    // Where a locale with a decimal comma is installed, printf would write "1234,500".
    for (const char* name : {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE.utf8", "fr_FR.utf8"}) {
        if (std::setlocale(LC_NUMERIC, name) == nullptr)
            continue;
        cuctx::detail::JsonWriter k;
        k.value(1234.5);
        std::setlocale(LC_NUMERIC, "C");
        CHECK(k.text() == "1234.5");
        break;
    }
}

TEST_CASE("JSON numbers are exact: small figures keep their digits, each reads back as the same double", "[json]")
{
    // A bench row of 0.0004 ms read 0.000 with three fixed decimals, and a check that figures are
    // positive failed.
    const double numbers[] = {0.0004, 1e-7, 0.1 + 0.2, 123456789.125, -2.2250738585072014e-308, 1.7976931348623157e308,
                              0.0,    -0.0};
    cuctx::detail::JsonWriter j;
    j.beginArray();
    for (const double d : numbers)
        j.value(d);
    j.endArray();
    CHECK(j.text() == "[\n  0.0004,\n  1e-07,\n  0.30000000000000004,\n  123456789.125,\n  -2.2250738585072014e-308,\n"
                      "  1.7976931348623157e+308,\n  0,\n  -0\n]\n");
    for (const double d : numbers) {
        cuctx::detail::JsonWriter k;
        k.value(d);
        const double back = std::strtod(k.text().c_str(), nullptr);
        CHECK(back == d);
        CHECK(std::signbit(back) == std::signbit(d)); // -0 stays negative
    }
}

TEST_CASE("JSON strings escape C1 controls, which some terminals obey", "[json]")
{
    CHECK(jsonQuote("a\xc2\x9b"
                    "b\xc2\x85") == "\"a\\u009bb\\u0085\"");
    CHECK(jsonQuote("\xc2\xa0\xc2\xa9") == "\"\xc2\xa0\xc2\xa9\""); // U+00A0 and U+00A9 are no controls
}

TEST_CASE("Text from other processes is printable: controls and non-UTF-8 bytes as \\xHH", "[printable]")
{
    using cuctx::detail::printableText;
    CHECK(printableText("python3 train.py --lr 0.1") == "python3 train.py --lr 0.1");
    CHECK(printableText("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80");
    CHECK(printableText("\x1b]0;owned\x07\x1b[2J") == "\\x1b]0;owned\\x07\\x1b[2J");
    CHECK(printableText("a\nb\tc\rd\x7f") == "a\\x0ab\\x09c\\x0dd\\x7f");
    CHECK(printableText("\xc2\x9b"
                        "31m") == "\\xc2\\x9b31m");             // C1 CSI
    CHECK(printableText("\xc2\xa0") == "\xc2\xa0");             // no-break space: printable
    CHECK(printableText("/tmp/\xff\xc3") == "/tmp/\\xff\\xc3"); // no UTF-8, and cut short
    CHECK(printableText("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
    CHECK(printableText(std::string("a\0b", 3)) == "a\\x00b");
    // Unambiguous: a backslash is doubled, so "\x1b" typed by the process reads differently from ESC.
    CHECK(printableText("C:\\x1b") == "C:\\\\x1b");
    CHECK(printableText("") == "");
}

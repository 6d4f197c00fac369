// SPDX-License-Identifier: MIT
#include "command_line.hpp"

#include "format/report_json.hpp"

#include "cuctx/version.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace cuctx::tools {

void printJson(const CommandLine& c, const char* status, const std::optional<std::string>& message,
               const std::function<void(JsonWriter&)>& members)
{
    JsonWriter j;
    j.beginObject();
    j.key("schema_version").value(kSchemaVersion);
    j.key("tool").value(c.command == "devices" ? std::string("cuctx-inspect") : "cuctx-inspect " + c.command);
    j.key("cuctx_version").value(CUCTX_VERSION_STRING);
    j.key("status").value(status);
    j.key("message").value(message);
    detail::writeDriverJson(j, Driver::status());
    members(j);
    j.endObject();
    std::fputs(j.text().c_str(), stdout);
}

int reportFailure(const CommandLine& c, const Outcome& outcome, const std::string& message,
                  const std::function<void(JsonWriter&)>& members)
{
    if (c.json) {
        printJson(c, outcome.status, message, members);
    } else {
        std::fprintf(stderr, "cuctx-inspect: %s: %s\n", outcome.label, message.c_str());
    }
    return outcome.code;
}

std::optional<int> requireDriver(const CommandLine& c, const std::function<void(JsonWriter&)>& members)
{
    const Driver::Status st = Driver::status();
    if (st.loaded)
        return std::nullopt;
    return reportFailure(c, outcomeFor(st.condition), st.message, members);
}

bool useColour()
{
    const char* noColor = std::getenv("NO_COLOR");
    if (noColor != nullptr && noColor[0] != '\0')
        return false;
    const char* term = std::getenv("TERM");
    if (term != nullptr && std::string_view(term) == "dumb")
        return false;
    return isatty(STDOUT_FILENO) == 1;
}

} // namespace cuctx::tools

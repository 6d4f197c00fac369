// SPDX-License-Identifier: MIT
#pragma once

// The fields of nvidia-smi-like queries (--query FIELDS --format csv[,noheader][,nounits]) of
// `devices` and `processes`, and checking them: no driver and no cuctx type, so that parsing the
// command line (and its fuzzer) needs neither.

#include <optional>
#include <string>
#include <vector>

namespace cuctx::tools {

struct QueryField {
    const char* name;
    const char* unit; ///< "" when it has none
    const char* help;
};

/// The fields of `command` ("devices" or "processes"), in the order --help-query lists them.
const std::vector<QueryField>& queryFields(const std::string& command);

/// The parsed --query and --format, or the usage error to report.
struct Query {
    std::vector<std::string> fields;
    bool header = true;
    bool units = true;
};
std::optional<std::string> parseQuery(const std::string& command, const std::string& fields, const std::string& format,
                                      Query& out);

/// "a, b,c" as {"a", "b", "c"} (spaces around each item dropped).
std::vector<std::string> splitList(const std::string& text);

} // namespace cuctx::tools

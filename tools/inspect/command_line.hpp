// SPDX-License-Identifier: MIT
#pragma once

// cuctx-inspect's command line and what every subcommand shares: the document envelope of --json
// output, and how a failure is reported (one line on stderr, or the document with its status).

#include "arguments.hpp"
#include "exit_codes.hpp"
#include "format/json_writer.hpp"

#include "cuctx/driver.hpp"

#include <functional>
#include <optional>
#include <string>

namespace cuctx::tools {

using detail::JsonWriter;

inline constexpr int kSchemaVersion = 1;

/// Prints the command's --json document: the members every document starts with (schema_version,
/// tool "cuctx-inspect COMMAND", cuctx_version, status, message, driver), then the command's own.
void printJson(const CommandLine& c, const char* status, const std::optional<std::string>& message,
               const std::function<void(JsonWriter&)>& members);

/// Reports a failure as the command line asks: with --json the document (its envelope, the driver
/// member, then `members` for the command's own fields in their empty form), else one line on
/// stderr. Returns `outcome.code`.
int reportFailure(const CommandLine& c, const Outcome& outcome, const std::string& message,
                  const std::function<void(JsonWriter&)>& members);

/// For a command that needs the driver: an exit status to return when it is not there (reported
/// as above), or nothing when it is.
std::optional<int> requireDriver(const CommandLine& c, const std::function<void(JsonWriter&)>& members);

/// Whether stdout gets colours: a terminal, NO_COLOR unset (https://no-color.org), TERM not "dumb".
bool useColour();

int runDevices(const CommandLine& c);
int runTopology(const CommandLine& c);
int runContext(const CommandLine& c);
int runModule(const CommandLine& c);
int runDoctor(const CommandLine& c);
int runBench(const CommandLine& c);
int runProcesses(const CommandLine& c);

} // namespace cuctx::tools

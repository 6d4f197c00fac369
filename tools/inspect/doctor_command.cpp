// SPDX-License-Identifier: MIT
// cuctx-inspect doctor: cuctx::diagnose()'s checks, one line each with what to do
// (docs/schema/inspect-doctor.schema.json). The exit status says whether anything is wrong.

#include "command_line.hpp"
#include "format/report_format.hpp"
#include "format/report_json.hpp"

#include "cuctx/cuctx.hpp"

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

namespace cuctx::tools {
namespace {

constexpr std::size_t kWidth = 80;

const char* colourOf(Severity s)
{
    switch (s) {
    case Severity::ok: return "\033[32m";
    case Severity::note: return "\033[36m";
    case Severity::warning: return "\033[33m";
    case Severity::error: return "\033[31;1m";
    }
    return "";
}

int count(const std::vector<Finding>& findings, Severity s)
{
    int n = 0;
    for (const Finding& f : findings)
        n += f.severity == s ? 1 : 0;
    return n;
}

void printTable(const std::vector<Finding>& findings, bool verbose)
{
    const bool colour = useColour();
    const int warnings = count(findings, Severity::warning);
    const int errors = count(findings, Severity::error);
    // A check may find several things (one per device, one per field NVML would not give): the header counts
    // checks, and findings too where there are more of them.
    std::set<std::string> checks;
    for (const Finding& f : findings)
        checks.insert(f.check);
    const std::string found =
        findings.size() == checks.size() ? std::string() : ", " + std::to_string(findings.size()) + " findings";
    std::printf("cuctx-inspect doctor: %zu check%s%s, %d error%s, %d warning%s, %d note%s\n\n", checks.size(),
                checks.size() == 1 ? "" : "s", found.c_str(), errors, errors == 1 ? "" : "s", warnings,
                warnings == 1 ? "" : "s", count(findings, Severity::note),
                count(findings, Severity::note) == 1 ? "" : "s");
    for (const Finding& f : findings) {
        // "warning  jit-cache        summary. Advice." wrapped under the summary's column.
        char head[48];
        std::snprintf(head, sizeof head, "%-7s  %-15s  ", severityName(f.severity), f.check.c_str());
        std::string text = f.summary;
        if (!f.advice.empty() && (f.severity != Severity::ok || verbose))
            text += ". Fix: " + f.advice + ".";
        std::string body = detail::wrapText(std::string(26, '#') + text, kWidth, 26).substr(26);
        const std::string severity = severityName(f.severity);
        if (colour)
            std::printf("%s%s\033[0m%s%s\n", colourOf(f.severity), severity.c_str(), head + severity.size(),
                        body.c_str());
        else
            std::printf("%s%s\n", head, body.c_str());
    }
}

} // namespace

int runDoctor(const CommandLine& c)
{
    const std::vector<Finding> findings = diagnose();
    const Severity worst = worstSeverity(findings);
    if (c.json) {
        const char* status = worst == Severity::error ? "error" : worst == Severity::warning ? "warning" : "ok";
        printJson(c, status, std::nullopt, [&](JsonWriter& j) {
            j.key("findings").beginArray();
            for (const Finding& f : findings)
                detail::writeFindingJson(j, f);
            j.endArray();
        });
    } else {
        printTable(findings, c.verbose);
    }
    return worst == Severity::error ? exitDoctorErrors : worst == Severity::warning ? exitDoctorWarnings : exitOk;
}

} // namespace cuctx::tools

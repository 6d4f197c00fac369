// SPDX-License-Identifier: MIT
// A plugin for test_launch_journal_cpu.cpp: a location in code that the test loads with dlopen,
// launches from (as the launch journal records it) and unloads again.
#include "cuctx/source_location.hpp"

extern "C" [[gnu::visibility("default")]] void cuctxTestPluginWhere(cuctx::SourceLocation* out);

void cuctxTestPluginWhere(cuctx::SourceLocation* out)
{
    *out = cuctx::SourceLocation::current();
}

#pragma once

// cuctx-inspect module FILE: load a PTX, cubin or fatbin into a context and list its kernels.

#include <string>

namespace cuctx::tools {

struct ModuleCommand {
    std::string file;
    int device = 0;
    bool json = false;
    bool verbose = false;
    bool primary = false; ///< load into the primary context instead of a new one
};

/// Runs the command; returns the exit status (exit_codes.hpp).
int runModuleCommand(const ModuleCommand& command);

} // namespace cuctx::tools

# SPDX-License-Identifier: MIT
"""Loads the cuctx plugin into python3 through ctypes, as a framework's extension module would be."""
import ctypes
import sys

plugin = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)
result = plugin.cuctx_plugin_run()
print(f"python: cuctx_plugin_run() = {result}")
sys.exit(result)

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libcuctx.so exports its public API and the few internals ContextGuard's inline code reaches, and
nothing else of cuctx::detail, spdlog or fmt (nm -D --defined-only, demangled); and its thread-locals
(its TLS segment, readelf -l) stay under 384 bytes, as docs/contexts.md says: a program that dlopen()s
libcuctx takes them from glibc's reserve of static TLS (512 bytes), which other libraries share.

usage: check_symbols.py LIBCUCTX
"""
import re
import subprocess
import sys

lib = sys.argv[1]
nm = subprocess.run(["nm", "-D", "--defined-only", "-C", lib], capture_output=True, text=True, check=True).stdout
symbols = [line.split(" ", 2)[2] for line in nm.splitlines() if line.count(" ") >= 2]

# What the inline guard, the launch template, testing.hpp and ContextOwned's destroy calls need.
allowed_detail = re.compile(
    r"cuctx::detail::(t_record|g_push|g_pop|g_placeholderContext|leftFlaggedContext|destroyIfUnused"
    r"|launchPacked|stackChanged|describeStack|toHex|fromHex|(DeviceAllocation|IpcMapping|Event|Stream)Traits::destroy)\b")
failures = []
def own_name(symbol):
    """The symbol's qualified name, without its template arguments and parameters' types."""
    out, depth = [], 0
    for c in symbol.split("(")[0] if not symbol.startswith(("typeinfo", "vtable")) else symbol:
        depth += c == "<"
        if depth == 0:
            out.append(c)
        depth -= c == ">" and depth > 0
    return "".join(out)


for s in symbols:
    name = own_name(s)  # std::make_shared<spdlog::logger> is std's, instantiated in debug builds
    if "cuctx::detail::" in name and not allowed_detail.search(name):
        failures.append("an internal is exported: " + s)
    # spdlog's classes carry default visibility of their own, so their RTTI (vague linkage) shows;
    # no spdlog or fmt function may.
    if re.search(r"(^|\s)(spdlog|fmt)::", name) and not name.startswith(("typeinfo", "vtable")):
        failures.append("a private dependency's function is exported: " + s)
for needed in ["cuctx::Context::create(", "cuctx::ContextGuard::enter(", "cuctx::Error::Error(",
               "typeinfo for cuctx::Error", "cuctx::detail::t_record", "cuctx::detail::leftFlaggedContext("]:
    if not any(s.startswith(needed) for s in symbols):
        failures.append("not exported: " + needed)
detail = sum("cuctx::detail::" in s for s in symbols)
print(f"{len(symbols)} symbols exported, {detail} of them cuctx::detail")

headers = subprocess.run(["readelf", "-lW", lib], capture_output=True, text=True, check=True).stdout
tls = [line.split() for line in headers.splitlines() if line.split()[:1] == ["TLS"]]
if len(tls) != 1:
    failures.append(f"{len(tls)} TLS segments, not one (the thread record is a thread-local)")
else:
    tls_bytes = int(tls[0][5], 16)  # TLS Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align
    print(f"static TLS: {tls_bytes} bytes")
    if tls_bytes >= 384:
        failures.append(f"static TLS of {tls_bytes} bytes, not under 384: dlopen() may run out of glibc's reserve")
for f in failures[:40]:
    print("FAIL " + f)
sys.exit(1 if failures else 0)

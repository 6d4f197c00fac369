#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The installed headers compile on their own: installs this build into a temporary DESTDIR, then
compiles and links public_api.cpp with each C++ compiler given, against the installed copy only (its
include folder and CUDA's, nothing from the source tree, no spdlog), and runs it on the fake driver.

usage: check_public_api.py BUILD_DIR PREFIX INCLUDEDIR LIBDIR CUDA_INCLUDE FAKE_DRIVER SOURCE CXX...
"""
import os
import shutil
import subprocess
import sys
import tempfile

build, prefix, includedir, libdir, cuda_include, fake, source = sys.argv[1:8]
compilers = [c for c in sys.argv[8:] if shutil.which(c)]
failures = [f"{c} not found (tools/install-deps installs it)" for c in sys.argv[8:] if not shutil.which(c)]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


with tempfile.TemporaryDirectory(prefix="cuctx-public-api-") as tmp:
    dest = os.path.join(tmp, "dest")
    r = run(["meson", "install", "-C", build, "--no-rebuild", "--quiet", "--destdir", dest])
    if r.returncode != 0:
        sys.exit("meson install failed:\n" + r.stdout + r.stderr)
    root = dest + os.path.join(prefix, "")
    inc = os.path.join(root, includedir)
    lib = os.path.join(root, libdir)
    if not os.path.isfile(os.path.join(inc, "cuctx", "cuctx.hpp")):
        sys.exit(f"no cuctx/cuctx.hpp under {inc}")
    for cxx in compilers:
        exe = os.path.join(tmp, "public_api-" + os.path.basename(cxx))
        flags = ["-std=c++20", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I" + inc, "-isystem", cuda_include]
        # Every header the program reads must come from the installed copy or the system, never the
        # source tree, and none may be spdlog's.
        deps = run([cxx, *flags, "-M", source])
        if deps.returncode != 0:
            failures.append(f"{cxx}: the installed headers do not compile:\n{deps.stderr}")
            continue
        headers = deps.stdout.replace("\\\n", " ").split()[2:]
        bad = [h for h in headers if "spdlog" in h or "fmt/" in h or
               ("cuctx" in h and not os.path.realpath(h).startswith(os.path.realpath(inc)))]
        if bad:
            failures.append(f"{cxx}: headers from outside the install: {bad[:5]}")
        r = run([cxx, *flags, source, "-o", exe, "-L" + lib, "-lcuctx", "-Wl,-rpath," + lib])
        if r.returncode != 0:
            failures.append(f"{cxx}: compiling or linking against the install failed:\n{r.stderr}")
            continue
        env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_")}
        env["CUCTX_DRIVER_PATH"] = fake
        r = run([exe], env=env)
        if r.returncode != 0:
            failures.append(f"{cxx}: the program failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        else:
            print(f"{cxx}: {r.stdout.strip()}")

for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)

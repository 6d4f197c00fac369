#!/usr/bin/env python3
"""Runs a benchmark briefly on the fake driver: it must print its table and end normally.

usage: check_bench_smoke.py BENCHMARK [ARGS...]

Exit 0 (every target met) and 1 (some target missed, or a computed result the fake driver cannot
produce) both pass: the fake driver runs no kernels and times nothing like a GPU. A crash, a
sanitizer report, a usage error (2) or no table fails.
"""
import subprocess
import sys

run = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=100)
out = run.stdout + run.stderr
problems = []
if run.returncode not in (0, 1):
    problems.append(f"exit status {run.returncode}")
if "measurement" not in run.stdout:
    problems.append("no table on stdout")
for marker in ("runtime error:", "AddressSanitizer", "ThreadSanitizer", "LeakSanitizer", "terminate called"):
    if marker in out:
        problems.append(f"'{marker}' in the output")
if problems:
    print(out)
    print(f"{sys.argv[1]}: " + "; ".join(problems))
    sys.exit(1)
print(run.stdout)

#!/usr/bin/env python3
"""A benchmark refuses a count that is not a whole positive number its flag can hold.

usage: check_bench_flags.py BENCHMARK

Each bad value must end in the usage message and exit status 2, before anything is measured; a good
value must get past the flags (exit 0 or 1, a table: check_bench_smoke.py's rule).
"""
import subprocess
import sys

bench = sys.argv[1]
base = ["--launches", "20", "--batch", "10", "--hits", "100", "--loads", "2", "--threads", "2"]
problems = []
for bad in ["0", "-5", "12x", "", "1e3", "99999999999999999999", "3000000000"]:
    flag = "--threads" if bad == "3000000000" else "--hits"  # 3e9 overflows the int --threads only
    run = subprocess.run([bench] + base + [flag, bad], capture_output=True, text=True, timeout=60)
    if run.returncode != 2 or "usage:" not in run.stderr or "measurement" in run.stdout:
        problems.append(f"{flag} {bad!r}: exit {run.returncode}, stderr {run.stderr.strip()[:200]!r}")
run = subprocess.run([bench] + base, capture_output=True, text=True, timeout=100)
if run.returncode not in (0, 1) or "measurement" not in run.stdout:
    problems.append(f"good flags: exit {run.returncode}, stderr {run.stderr.strip()[:200]!r}")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("every bad count refused with the usage message; good ones run")

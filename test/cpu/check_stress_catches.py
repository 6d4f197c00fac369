#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuctx-stress with a deliberately broken guard must report violations and exit with 1 (not crash,
not pass): the harness finds real bugs.

usage: check_stress_catches.py STRESS BUG
"""
import re
import subprocess
import sys

stress, bug = sys.argv[1:3]
r = subprocess.run([stress, "--threads", "2", "--seconds", "1", "--inject-bug", bug],
                   capture_output=True, text=True, timeout=240)
m = re.search(r"(\d+) violations", r.stdout)
print(r.stdout[-2000:])
ok = r.returncode == 1 and m is not None and int(m.group(1)) > 0 and "violation: " in r.stdout
print(("ok" if ok else "FAILED") + f": exit status {r.returncode}, violations {m.group(1) if m else 'none reported'}")
sys.exit(0 if ok else 1)

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The process-per-GPU example under Open MPI's mpirun, on the fake driver with four devices: four
ranks bind four distinct devices; a fifth rank has none and fails with a clear error.

usage: check_mpirun.py MPIRUN EXAMPLE FAKE_DRIVER
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, finish  # noqa: E402

mpirun, example, fake = sys.argv[1:4]


def run(ranks):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_")}
    env.update(CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DEVICES="4")
    # Root in a container, fewer cores than ranks: the flags Open MPI needs for both.
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks),
           "-x", "CUCTX_DRIVER_PATH", "-x", "CUCTX_FAKE_DEVICES", example]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


four = run(4)
expect("4 ranks: exit status 0", four.returncode == 0, four.stdout + four.stderr)
bound = sorted(int(m) for m in re.findall(r"-> device (\d+) of 4", four.stdout))
expect("4 ranks: devices 0, 1, 2, 3, one each", bound == [0, 1, 2, 3], four.stdout)
expect("4 ranks: each from OMPI_COMM_WORLD_LOCAL_RANK", four.stdout.count("(OMPI_COMM_WORLD_LOCAL_RANK)") == 4,
       four.stdout)
expect("4 ranks: no stray contexts", four.stdout.count("stray contexts on other devices: 0") == 4, four.stdout)

five = run(5)
expect("5 ranks on 4 devices: fails", five.returncode != 0, five.stdout + five.stderr)
expect("5 ranks on 4 devices: says which rank and why",
       "local rank 4 (OMPI_COMM_WORLD_LOCAL_RANK) has no device of its own: 4 visible" in five.stderr,
       five.stderr)

finish()

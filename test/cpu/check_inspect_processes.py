#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuctx-inspect processes on the fake driver and the fake NVML: other processes (real children with
a binding in their environment), strays, this process, MPS clients, and NVML missing or failing; the
table for people, --json against docs/schema/inspect-processes.schema.json.

usage: check_inspect_processes.py INSPECT FAKE_DRIVER FAKE_NVML SCHEMA_DIR
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, finish  # noqa: E402
import checks  # noqa: E402

inspect, fake, nvml, schema_dir = (os.path.abspath(a) for a in sys.argv[1:5])
validator = checks.validator(checks.load_store(schema_dir), "inspect-processes.schema.json")
HERMETIC = ("CUDA_VISIBLE_DEVICES", "NO_COLOR", "LD_LIBRARY_PATH", "LOCAL_RANK", "SLURM_LOCALID",
            "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")


def run(args, **env):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_") and k not in HERMETIC}
    full_env.update({"CUCTX_DRIVER_PATH": fake, "CUCTX_NVML_PATH": nvml})
    full_env.update(env)
    return subprocess.run([inspect, *args], capture_output=True, text=True, env=full_env, timeout=60)


def check_json(name, result, status, code):
    expect(f"{name}: exit status {code}", result.returncode == code, f"got {result.returncode}\n{result.stderr}")
    try:
        doc = json.loads(result.stdout)
    except json.JSONDecodeError as e:
        expect(f"{name}: --json output parses", False, f"{e}\n{result.stdout}")
        return None
    errors = sorted(validator.iter_errors(doc), key=str)
    expect(f"{name}: --json output matches the schema", not errors, "\n".join(e.message for e in errors[:5]))
    expect(f"{name}: status {status}", doc.get("status") == status, f"got {doc.get('status')}")
    return doc


def child(**env):
    """A real process (cat, blocked on its stdin) whose /proc/PID/environ holds `env`."""
    return subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env)


rank1 = child(LOCAL_RANK="1")
bound = child(CUDA_VISIBLE_DEVICES="1")
try:
    listed = f"{rank1.pid}@0:512,{rank1.pid}@1:8192,{bound.pid}@1:4096"
    doc = check_json("processes", run(["processes", "--json"], CUCTX_FAKE_NVML_PROCESSES=listed,
                                      CUCTX_FAKE_NVML_MPS_PROCESSES="4242@0:64"), "ok", 0)
    if doc:
        by_pid = {p["pid"]: p for p in doc["processes"]}
        r = by_pid.get(rank1.pid, {})
        expect("processes: the rank on devices 0 and 1", [d["ordinal"] for d in r.get("devices", [])] == [0, 1], str(r))
        expect("processes: its memory summed", r.get("used_memory_bytes") == (512 + 8192) << 20, str(r))
        expect("processes: its name and binding", r.get("name") == "cat" and r.get("local_rank") == 1 and
               r.get("local_rank_source") == "LOCAL_RANK" and r.get("bound_devices") == [1], str(r))
        expect("processes: the rank on device 0 is a stray", "device 0 though its binding" in (r.get("stray") or ""),
               str(r))
        b = by_pid.get(bound.pid, {})
        expect("processes: CUDA_VISIBLE_DEVICES=1 on device 1 is no stray",
               b.get("cuda_visible_devices") == "1" and b.get("stray") is None, str(b))
        m = by_pid.get(4242, {})
        expect("processes: an MPS client", m.get("devices", [{}])[0].get("mps_client") is True, str(m))
        expect("processes: an unreadable /proc: nulls, not guesses",
               m.get("environment_readable") is False and m.get("command_line") is None and m.get("stray") is None,
               str(m))
        expect("processes: the command itself holds no context", not any(p["self"] for p in doc["processes"]))
        expect("processes: ordered by pid", [p["pid"] for p in doc["processes"]] == sorted(by_pid), str(by_pid))
    table = run(["processes"], CUCTX_FAKE_NVML_PROCESSES=listed)
    expect("processes table: exit 0", table.returncode == 0, table.stderr)
    expect("processes table: one row each", sum(1 for l in table.stdout.splitlines()
                                                 if l.split()[:1] in ([str(rank1.pid)], [str(bound.pid)])) == 2,
           table.stdout)
    expect("processes table: counts the stray", "2 processes with a context, 1 stray" in table.stdout, table.stdout)
    expect("processes table: says why", f"stray {rank1.pid}: holds a context on device 0" in table.stdout, table.stdout)
    expect("processes table: fits 80 columns", checks.fits_columns(table.stdout), table.stdout)
    verbose = run(["processes", "-v"], CUCTX_FAKE_NVML_PROCESSES=listed)
    expect("processes -v: command lines and UUIDs", "command line  cat" in verbose.stdout and
           "GPU-10111213" in verbose.stdout, verbose.stdout)
finally:
    for c in (rank1, bound):
        c.stdin.close()
        c.wait()

# The older NVML (no _v2/_v3 process lists) gives the same answer.
old = nvml.replace("libcuctx-fake-nvml.so", "libcuctx-fake-nvml-old.so")
doc = check_json("processes on an older NVML", run(["processes", "--json"], CUCTX_NVML_PATH=old,
                                                   CUCTX_FAKE_NVML_PROCESSES="4001@0:100,4002@0:200"), "ok", 0)
if doc:
    expect("older NVML: both processes, memory intact", [(p["pid"], p["used_memory_bytes"]) for p in doc["processes"]]
           == [(4001, 100 << 20), (4002, 200 << 20)], str(doc["processes"]))

# NVML missing, failing to initialise, refusing the list.
missing = "/nonexistent/libnvidia-ml.so.1"
r = run(["processes"], CUCTX_NVML_PATH=missing)
expect("no NVML: exit 13, one line naming the path and CUCTX_NVML_PATH",
       r.returncode == 13 and len(r.stderr.strip().splitlines()) == 1 and "NVML unavailable" in r.stderr and
       missing in r.stderr and "CUCTX_NVML_PATH" in r.stderr and r.stdout == "", f"{r.returncode}\n{r.stderr}")
check_json("no NVML", run(["processes", "--json"], CUCTX_NVML_PATH=missing), "nvml_unavailable", 13)
r = run(["processes"], CUCTX_FAKE_NVML_INIT_RESULT="9")
expect("NVML without its kernel module: exit 13, NVML's error named", r.returncode == 13 and
       "NVML_ERROR_DRIVER_NOT_LOADED" in r.stderr, f"{r.returncode}\n{r.stderr}")
r = run(["processes"], CUCTX_FAKE_NVML_PROCESS_RESULT="4")
expect("NVML refusing the list: exit 8, the permission named", r.returncode == 8 and
       "NVML_ERROR_NO_PERMISSION" in r.stderr, f"{r.returncode}\n{r.stderr}")
check_json("processes without a driver", run(["processes", "--json"], CUCTX_DRIVER_PATH="/nonexistent/libcuda.so.1"),
           "no_driver", 3)
helped = run(["processes", "--help"])
expect("processes --help: its usage, 80 columns", helped.returncode == 0 and
       helped.stdout.startswith("usage: cuctx-inspect processes") and checks.fits_columns(helped.stdout),
       helped.stdout)
expect("--help lists processes", "processes" in run(["--help"]).stdout)
finish()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuctx-inspect processes on the fake driver and the fake NVML: other processes (real children with
a binding in their environment), strays, this process, MPS clients, and NVML missing or failing; the
table for people, --json against docs/schema/inspect-processes.schema.json.

usage: check_inspect_processes.py INSPECT FAKE_DRIVER FAKE_NVML SCHEMA_DIR
"""
import ctypes
import json
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, finish  # noqa: E402
import checks  # noqa: E402

inspect, fake, nvml, schema_dir = (os.path.abspath(a) for a in sys.argv[1:5])
schemas = checks.load_store(schema_dir)
validator = checks.validator(schemas, "inspect-processes.schema.json")
devices_validator = checks.validator(schemas, "inspect-devices.schema.json")
HERMETIC = ("CUDA_VISIBLE_DEVICES", "NO_COLOR", "LD_LIBRARY_PATH", "LOCAL_RANK", "SLURM_LOCALID",
            "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")


def run(args, **env):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_") and k not in HERMETIC}
    full_env.update({"CUCTX_DRIVER_PATH": fake, "CUCTX_NVML_PATH": nvml})
    full_env.update(env)
    return subprocess.run([inspect, *args], capture_output=True, text=True, env=full_env, timeout=60)


def check_json(name, result, status, code, schema=validator):
    expect(f"{name}: exit status {code}", result.returncode == code, f"got {result.returncode}\n{result.stderr}")
    try:
        doc = json.loads(result.stdout)
    except json.JSONDecodeError as e:
        expect(f"{name}: --json output parses", False, f"{e}\n{result.stdout}")
        return None
    errors = sorted(schema.iter_errors(doc), key=str)
    expect(f"{name}: --json output matches the schema", not errors, "\n".join(e.message for e in errors[:5]))
    expect(f"{name}: status {status}", doc.get("status") == status, f"got {doc.get('status')}")
    return doc


def child(**env):
    """A real process (cat, blocked on its stdin) whose /proc/PID/environ holds `env`: a byte cat echoes
    back was read by cat itself, so its exec (which writes the environment late) is over."""
    p = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    p.stdin.write(b"x")
    p.stdin.flush()
    expect("child: cat is running", p.stdout.read(1) == b"x")
    return p


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

# What another process says of itself is any bytes its owner chose. A name, a command line and a
# CUDA_VISIBLE_DEVICES holding escape sequences, a bell, a C1 control (CSI, U+009B) and bytes that are
# no UTF-8 must never reach the operator's terminal raw: \xHH in the table and the CSV, JSON escapes.
RAW = (b"\x1b", b"\x07", b"\xc2\x9b", b"\x9b", b"\xff")
script = ("import sys; open('/proc/self/comm', 'wb').write(b'\\x1b[31mred\\x9b'); "
          "print('ready', flush=True); sys.stdin.read()")
hostile = subprocess.Popen([sys.executable, "-c", script, b"arg\x1b]0;owned\x07\xc2\x9b\xff\\"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           env={b"CUDA_VISIBLE_DEVICES": b"0\x1b[2J"})
try:
    expect("hostile child: ready", hostile.stdout.readline() == b"ready\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_") and k not in HERMETIC}
    env.update({"CUCTX_DRIVER_PATH": fake, "CUCTX_NVML_PATH": nvml,
                "CUCTX_FAKE_NVML_PROCESSES": f"{hostile.pid}@0:64"})

    def raw_run(args):
        return subprocess.run([inspect, *args], capture_output=True, env=env, timeout=60)

    for name, args, shown in [
            ("table", ["processes"], [b"\\x1b[31mred\\x9b", b"CVD=0\\x1b[2J"]),
            ("-v", ["processes", "-v"], [b"arg\\x1b]0;owned\\x07\\xc2\\x9b\\xff\\\\"]),
            ("CSV", ["processes", "--query", "pid,process_name,cuda_visible_devices,command_line", "--format",
                     "csv,noheader"], [b"\\x1b[31mred\\x9b, 0\\x1b[2J, ", b"arg\\x1b]0;owned\\x07"])]:
        r = raw_run(args)
        expect(f"hostile process, {name}: exit 0", r.returncode == 0, r.stderr.decode(errors="replace"))
        expect(f"hostile process, {name}: no control byte or non-UTF-8 byte reaches the terminal",
               not any(b in r.stdout for b in RAW), repr(r.stdout))
        expect(f"hostile process, {name}: shown escaped", all(s in r.stdout for s in shown), repr(r.stdout))
    # doctor names the process that holds an Exclusive Process device.
    r = subprocess.run([inspect, "doctor"], capture_output=True, timeout=60,
                       env={**env, "CUCTX_FAKE_EXCLUSIVE_PROCESS": "0"})
    expect("hostile process, doctor: names it, escaped, and nothing raw",
           f"process {hostile.pid} (\\x1b[31mred\\x9b) holds it".encode() in r.stdout and
           not any(b in r.stdout for b in RAW), repr(r.stdout))
    r = raw_run(["processes", "--json"])
    expect("hostile process, --json: no raw control byte", not any(b in r.stdout for b in RAW), repr(r.stdout))
    try:
        p = next(p for p in json.loads(r.stdout)["processes"] if p["pid"] == hostile.pid)
        expect("hostile process, --json: the bytes kept, as JSON escapes",
               p["name"] == "\x1b[31mred\ufffd" and p["cuda_visible_devices"] == "0\x1b[2J" and
               p["command_line"].endswith("arg\x1b]0;owned\x07\u009b\ufffd\\"), str(p))
    except (ValueError, KeyError, StopIteration) as e:
        expect("hostile process, --json: parses and lists it", False, f"{e!r}: {r.stdout!r}")
finally:
    hostile.stdin.close()
    hostile.wait()

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
# A device NVML has no handle for: left out of the list, and said so in each form (not a silent gap).
unknown1 = dict(CUCTX_FAKE_NVML_DEVICES="1", CUCTX_FAKE_NVML_PROCESSES="4001@0:5")
r = run(["processes"], **unknown1)
expect("processes: a device NVML does not know is named as not listed", r.returncode == 0 and
       "device 1: its processes are not listed (NVML does not know" in r.stdout and "4001" in r.stdout, r.stdout)
doc = check_json("processes --json with a device NVML does not know", run(["processes", "--json"], **unknown1), "ok", 0)
expect("processes --json: unlisted_devices names device 1 and why",
       doc is not None and [u["ordinal"] for u in doc["unlisted_devices"]] == [1] and
       doc["unlisted_devices"][0]["why"].startswith("NVML does not know GPU-"), str(doc))
doc = check_json("processes --json -i 0", run(["processes", "--json", "-i", "0"], **unknown1), "ok", 0)
expect("processes --json -i 0: a device not chosen is not called unlisted",
       doc is not None and doc["unlisted_devices"] == [], str(doc))
doc = check_json("processes --json, every device known", run(["processes", "--json"]), "ok", 0)
expect("processes --json: unlisted_devices empty where NVML lists every device",
       doc is not None and doc["unlisted_devices"] == [], str(doc))
r = run(["processes", "--query", "pid", "--format", "csv,noheader"], CUCTX_FAKE_NVML_LIST_RESULT="1:3",
        CUCTX_FAKE_NVML_PROCESSES="4001@0:5,4002@1:7")
expect("processes --query, device 1's list not supported: rows on stdout, the device named on stderr",
       r.returncode == 0 and r.stdout == "4001\n" and
       "device 1: its processes are not listed (NVML does not list this device's compute processes (not supported))"
       in r.stderr, r.stdout + r.stderr)
doc = check_json("processes --json, device 1's list not supported",
                 run(["processes", "--json"], CUCTX_FAKE_NVML_LIST_RESULT="1:3"), "ok", 0)
expect("processes --json: a list not supported is an unlisted device",
       doc is not None and [u["ordinal"] for u in doc["unlisted_devices"]] == [1], str(doc))
r = run(["processes"], CUCTX_FAKE_NVML_LIST_RESULT="1:4")
expect("processes, device 1's list refused: exit 8, the call, NVML's error and what to do",
       r.returncode == 8 and "nvmlDeviceGetComputeRunningProcesses failed with NVML_ERROR_NO_PERMISSION (4)" in r.stderr
       and "Run as a user allowed" in r.stderr, f"{r.returncode}\n{r.stderr}")
# A refused handle lookup fails the command as a refused list does (exit 8), unless -i leaves the device out.
for args in (["processes"], ["processes", "--query", "pid", "--format", "csv"]):
    r = run(args, CUCTX_FAKE_NVML_HANDLE_RESULT="1:4", CUCTX_FAKE_NVML_PROCESSES="4001@0:5")
    expect(f"{' '.join(args)}, device 1's handle refused: exit 8, the refusal named",
           r.returncode == 8 and "device 1" in r.stderr and "nvmlDeviceGetHandleByUUID" in r.stderr and
           "NVML_ERROR_NO_PERMISSION" in r.stderr and "4001" not in r.stdout, f"{r.returncode}\n{r.stdout}{r.stderr}")
r = run(["processes", "-i", "0", "--query", "pid", "--format", "csv,noheader"], CUCTX_FAKE_NVML_HANDLE_RESULT="1:4",
        CUCTX_FAKE_NVML_PROCESSES="4001@0:5")
expect("processes -i 0, device 1's handle refused: device 0 listed", r.returncode == 0 and r.stdout == "4001\n",
       f"{r.returncode}\n{r.stdout}{r.stderr}")
# nvidia-smi-like queries: --query FIELDS --format csv[,noheader][,nounits], -i, --watch.
r = run(["devices", "--query", "index,uuid,pci.bus_id,memory.total", "--format", "csv"], CUCTX_FAKE_DEVICES="3")
lines = r.stdout.splitlines()
expect("devices --query: a header with units, a row per device", r.returncode == 0 and
       lines[0] == "index, uuid, pci.bus_id, memory.total [MiB]" and len(lines) == 4 and
       lines[2].startswith("1, GPU-10111213-") and lines[2].endswith(", 0000:11:00.0, 81920 MiB"), r.stdout + r.stderr)
r = run(["devices", "--query", "index,memory.total", "--format", "csv,noheader,nounits"])
expect("devices --query csv,noheader,nounits", r.returncode == 0 and r.stdout == "0, 81920\n1, 81920\n", r.stdout)
for ids, want in [("2", "2\n"), ("GPU-1011", "1\n"), ("0000:12:00.0", "2\n"), ("00000000:10:00.0", "0\n"),
                  ("2,0", "0\n2\n")]:
    r = run(["devices", "-i", ids, "--query", "index", "--format", "csv,noheader"], CUCTX_FAKE_DEVICES="3")
    expect(f"devices -i {ids}: selects by ordinal, UUID prefix or PCI bus id", r.returncode == 0 and r.stdout == want,
           r.stdout + r.stderr)
r = run(["devices", "-i", "7"])
expect("devices -i 7 of 2: exit 2, one line naming it", r.returncode == 2 and "no device matches '7'" in r.stderr and
       len(r.stderr.strip().splitlines()) == 1 and r.stdout == "", r.stderr)
doc = json.loads(run(["devices", "-i", "1", "--json"]).stdout)
expect("devices -i 1 --json: that device only", [d["ordinal"] for d in doc["devices"]] == [1], str(doc["devices"]))
for args, words in [(["devices", "--query", "index,bogus"], "'bogus' is no field of devices"),
                    (["processes", "--query", "pid", "--format", "tsv"], "is not csv"),
                    (["processes", "--query", "pid", "--format", "csv,loud"], "neither noheader nor nounits"),
                    (["devices", "--format", "csv"], "--format goes with --query"),
                    (["devices", "--count", "2"], "--count goes with --watch"),
                    (["devices", "--watch", "0"], "--watch"),
                    (["topology", "--query", "index"], "--query")]:
    r = run(args)
    expect(f"{' '.join(args)}: a usage error", r.returncode == 2 and words in r.stderr and r.stdout == "" and
           f"usage: cuctx-inspect {args[0]}" in r.stderr, f"{r.returncode}\n{r.stderr}")
helped = run(["processes", "--help-query"])
expect("processes --help-query lists the fields", helped.returncode == 0 and "used_memory" in helped.stdout and
       "gpu_bus_id" in helped.stdout and checks.fits_columns(helped.stdout), helped.stdout)

r = run(["processes", "--query", "pid,process_name,used_memory,gpu_index,gpu_bus_id,stray", "--format", "csv"],
        CUCTX_FAKE_NVML_PROCESSES="4001@0:100,4001@1:30,4002@1:7")
expect("processes --query: a row per process and device, as nvidia-smi's --query-compute-apps",
       r.returncode == 0 and r.stdout.splitlines() == [
           "pid, process_name, used_memory [MiB], gpu_index, gpu_bus_id, stray",
           "4001, fake-4001, 100 MiB, 0, 0000:10:00.0, no", "4001, fake-4001, 30 MiB, 1, 0000:11:00.0, no",
           "4002, fake-4002, 7 MiB, 1, 0000:11:00.0, no"], r.stdout + r.stderr)
r = run(["processes", "-i", "0", "--query", "pid,gpu_index", "--format", "csv,noheader"],
        CUCTX_FAKE_NVML_PROCESSES="4001@0:100,4001@1:30,4002@1:7")
expect("processes -i 0: the processes on device 0, only their device 0", r.stdout == "4001, 0\n", r.stdout + r.stderr)

r = run(["devices", "--watch", "0.01", "--count", "3", "--query", "index", "--format", "csv"])
expect("devices --watch --count 3: three prints, the header once", r.returncode == 0 and
       r.stdout == "index\n0\n1\n0\n1\n0\n1\n", r.stdout + r.stderr)
r = run(["processes", "--watch", "0.01", "--count", "2"])
expect("processes --watch --count 2: the table twice", r.returncode == 0 and
       r.stdout.count("cuctx-inspect processes:") == 2, r.stdout + r.stderr)
# SIGINT and SIGTERM end a watch cleanly: after its first print (read from the pipe, no sleep), exit 0,
# whenever the signal lands, before the wait for the next print begins included (five times each: a
# signal that came between the check and the wait once left the watch asleep for the whole interval).
full_env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_") and k not in HERMETIC}
full_env.update({"CUCTX_DRIVER_PATH": fake, "CUCTX_NVML_PATH": nvml})


def where(pid):
    """What a watch that did not end is doing: each thread's name, state, kernel wait channel and signal
    masks (pending for the thread and the process, blocked, caught)."""
    lines = []
    try:
        for t in sorted(os.listdir(f"/proc/{pid}/task")):
            def read(name):
                try:
                    with open(f"/proc/{pid}/task/{t}/{name}") as f:
                        return f.read().strip()
                except OSError:
                    return "?"
            masks = " ".join(line.replace("\t", "") for line in read("status").splitlines()
                             if line.startswith(("SigPnd", "ShdPnd", "SigBlk", "SigCgt")))
            lines.append(f"thread {t} {read('comm')}: {read('stat').split(')')[-1].split()[0]} in {read('wchan')}"
                         f" ({masks})")
    except OSError as e:
        lines.append(str(e))
    return "; ".join(lines)


def end_watch(sig, env, thread=None):
    """Starts a watch, reads its first print, sends `sig` (to one of its threads, by name, if given) and
    returns what went wrong, or None."""
    watch = subprocess.Popen([inspect, "devices", "--watch", "3600", "--query", "index", "--format", "csv,noheader"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = watch.stdout.readline()
    if thread is None:
        watch.send_signal(sig)
    else:
        tids = [int(t) for t in os.listdir(f"/proc/{watch.pid}/task")
                if open(f"/proc/{watch.pid}/task/{t}/comm").read().strip() == thread]
        if len(tids) != 1 or ctypes.CDLL(None, use_errno=True).tgkill(watch.pid, tids[0], sig) != 0:
            watch.kill()
            watch.communicate()
            return f"no single thread named {thread} to signal: {tids}"
    try:
        rest, err = watch.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        state = where(watch.pid)
        watch.kill()
        watch.communicate()
        return f"still running a minute later ({state})"
    if first == "0\n" and watch.returncode == 0 and err == "":
        return None
    return f"{first!r} {watch.returncode} {err}"


for sig in (signal.SIGINT, signal.SIGTERM):
    outcomes = [o for o in (end_watch(sig, full_env) for _ in range(5)) if o]
    expect(f"--watch ends cleanly on {sig.name}: exit 0, nothing on stderr, five times", not outcomes,
           "; ".join(outcomes))
# The same when the signal runs its handler on another thread (the real driver starts its own): the
# fake driver's idle thread gets SIGINT, and the watch, waiting on the main thread, must still end.
outcome = end_watch(signal.SIGINT, dict(full_env, CUCTX_FAKE_DRIVER_THREAD="1"), thread="cuda-EvtHandlr")
expect("--watch ends on SIGINT handled on the driver's thread: exit 0", outcome is None, outcome)
# A watch with stdin and stdout closed: its pipe must not take their descriptors (the document would go
# into it and the watch end at once with status 0); the output is lost, and the exit status says so.
r = subprocess.run(["sh", "-c", 'exec "$0" devices --watch 0.01 --count 2 --query index --format csv <&- >&-',
                    inspect], capture_output=False, stderr=subprocess.PIPE, text=True, env=full_env, timeout=60)
expect("devices --watch with stdin and stdout closed: exit 1, says it cannot write", r.returncode == 1 and
       "cannot write the output" in r.stderr, f"{r.returncode} {r.stderr}")
# The machine's mode: devices --query and -v, doctor's mps, mig, persistence and compute-mode findings.
modes = dict(CUCTX_FAKE_MPS="1", CUCTX_FAKE_NVML_MIG="0", CUCTX_FAKE_NVML_PERSISTENCE="1",
             CUCTX_FAKE_NVML_MPS_PROCESSES="4242@1:64")
r = run(["devices", "--query", "index,mps,persistence_mode,mig.mode.current", "--format", "csv,noheader"], **modes)
expect("devices --query: MPS, persistence and MIG per device", r.stdout == "0, Disabled, Disabled, Enabled\n"
       "1, Enabled, Enabled, Disabled\n", r.stdout + r.stderr)
r = run(["devices", "--query", "persistence_mode", "--format", "csv,noheader"], CUCTX_NVML_PATH="/nonexistent/nvml.so")
expect("devices --query without NVML: [N/A], not a guess", r.returncode == 0 and r.stdout == "[N/A]\n[N/A]\n",
       r.stdout + r.stderr)
r = run(["devices", "-v"], **modes)
expect("devices -v: MPS, its clients, persistence and MIG", "MPS client processes               1" in r.stdout and
       "MIG                                on, 2 instances" in r.stdout and
       "persistence mode                   on" in r.stdout, r.stdout)


def device_modes(name, **env):
    """devices --json, checked against its schema (modes included): each device's "modes" by ordinal."""
    doc = check_json(name, run(["devices", "--json"], **env), "ok", 0, devices_validator) or {}
    return {d["ordinal"]: d.get("modes") for d in doc.get("devices", [])}


got = device_modes("devices --json with MPS, MIG and persistence", **modes)
expect("devices --json: MPS, its clients, persistence and MIG per device, as -v shows them",
       got == {0: {"mps": False, "mps_client_processes": None, "persistence_mode": False, "mig": True,
                   "mig_instances": 2, "nvml_problem": None},
               1: {"mps": True, "mps_client_processes": 1, "persistence_mode": True, "mig": False,
                   "mig_instances": None, "nvml_problem": None}}, str(got))
# An -i that names no device: exit 2, and a document its schema allows (status usage_error).
check_json("processes -i naming no device", run(["processes", "--json", "-i", "7"]), "usage_error", 2)
check_json("devices -i naming no device", run(["devices", "--json", "-i", "7"]), "usage_error", 2, devices_validator)
got = device_modes("devices --json without NVML", CUCTX_NVML_PATH="/nonexistent/nvml.so")
expect("devices --json without NVML: null, not a guess, and why",
       len(got) == 2 and all(m["persistence_mode"] is None and m["mig"] is None and m["mps_client_processes"] is None
                             and m["nvml_problem"] for m in got.values()), str(got))

# One query NVML refuses on one device: that field null with the call and NVML's error in nvml_problem,
# the rest known; "not supported" (the device does not say) is null with no problem.
refusing = dict(CUCTX_FAKE_NVML_PERSISTENCE="0,1", CUCTX_FAKE_NVML_PERSISTENCE_RESULT="1:4")
got = device_modes("devices --json with a persistence query refused", **refusing)
expect("devices --json, a query refused on device 1: null there, and the call and error named",
       got.get(0, {}).get("persistence_mode") is True and got[0]["nvml_problem"] is None and
       got.get(1, {}).get("persistence_mode") is None and got[1]["mig"] is False and
       "nvmlDeviceGetPersistenceMode failed with NVML_ERROR_NO_PERMISSION" in (got[1]["nvml_problem"] or ""), str(got))
got = device_modes("devices --json with persistence not supported", CUCTX_FAKE_NVML_PERSISTENCE_RESULT="1:3")
expect("devices --json, persistence not supported on device 1: null, no problem",
       got.get(1, {}).get("persistence_mode") is None and got[1]["nvml_problem"] is None and got[1]["mig"] is False,
       str(got))
r = run(["devices", "--query", "persistence_mode,mig.mode.current", "--format", "csv,noheader"], **refusing,
        CUCTX_FAKE_NVML_MIG_RESULT="0:999")
expect("devices --query, queries refused: NVML's error in brackets as nvidia-smi prints it, not [N/A]",
       r.returncode == 0 and r.stdout == "Enabled, [Unknown Error]\n[Insufficient Permissions], Disabled\n",
       r.stdout + r.stderr)
r = run(["devices", "--query", "persistence_mode", "--format", "csv,noheader"], CUCTX_FAKE_NVML_PERSISTENCE_RESULT="1:3")
expect("devices --query, persistence not supported on device 1: [N/A] there", r.returncode == 0 and
       r.stdout == "Disabled\n[N/A]\n", r.stdout + r.stderr)
# Each field from its own call's problem: another call's error, whatever its text, never fills it, and
# NVML's text is kept whole; no text gives the error's name; a refused handle lookup is each field's refusal.
mixed = dict(CUCTX_FAKE_NVML_PERSISTENCE_RESULT="1:4", CUCTX_FAKE_NVML_MIG_RESULT="1:3",
             CUCTX_FAKE_NVML_ERROR_TEXT="4:No; way: nvmlDeviceGetMigMode failed with X (1): Leaked")
r = run(["devices", "-i", "1", "--query", "persistence_mode,mig.mode.current", "--format", "csv,noheader"], **mixed)
expect("devices --query, persistence refused with a text naming another call, MIG not supported",
       r.returncode == 0 and r.stdout == '[No; way: nvmlDeviceGetMigMode failed with X (1): Leaked], [N/A]\n',
       r.stdout + r.stderr)
r = run(["devices", "-v", "-i", "1"], **mixed)
expect("devices -v: MIG not supported reads so though persistence has a problem",
       "MIG                                unknown (the device does not say)" in r.stdout and
       "persistence mode                   unknown (see NVML problem)" in r.stdout, r.stdout)
r = run(["devices", "--query", "persistence_mode", "--format", "csv,noheader"], CUCTX_FAKE_NVML_PERSISTENCE_RESULT="0:4",
        CUCTX_FAKE_NVML_ERROR_TEXT="4:")
expect("devices --query, a refusal NVML gives no text for: its name", r.returncode == 0 and
       r.stdout == "[NVML_ERROR_NO_PERMISSION (4)]\nDisabled\n", r.stdout + r.stderr)
r = run(["devices", "--query", "persistence_mode,mig.mode.current", "--format", "csv,noheader"],
        CUCTX_FAKE_NVML_HANDLE_RESULT="0:4")
expect("devices --query, device 0's handle lookup refused: the refusal in both fields there",
       r.returncode == 0 and r.stdout == "[Insufficient Permissions], [Insufficient Permissions]\nDisabled, Disabled\n",
       r.stdout + r.stderr)
# Every NVML error has its name where NVML gives no text; the MPS clients' problem reads as the others'.
r = run(["devices", "--query", "persistence_mode", "--format", "csv,noheader"], CUCTX_FAKE_NVML_PERSISTENCE_RESULT="0:16",
        CUCTX_FAKE_NVML_ERROR_TEXT="16:")
expect("devices --query, RESET_REQUIRED with no text: its name", r.stdout == "[NVML_ERROR_RESET_REQUIRED (16)]\nDisabled\n",
       r.stdout + r.stderr)
got = device_modes("devices --json with the MPS client list refused", CUCTX_FAKE_MPS="1",
                   CUCTX_FAKE_NVML_MPS_LIST_RESULT="1:999")
expect("devices --json: the MPS list's refusal as CALL failed with NAME (N): TEXT",
       (got.get(1) or {}).get("nvml_problem") ==
       "nvmlDeviceGetMPSComputeRunningProcesses failed with NVML_ERROR_UNKNOWN (999): Unknown Error", str(got))
r = run(["devices", "-v"], **refusing)
expect("devices -v, a query refused: unknown with NVML there, and the problem shown",
       "persistence mode                   unknown (see NVML problem)" in r.stdout and
       "NVML problem                       nvmlDeviceGetPersistenceMode failed" in r.stdout, r.stdout)


def findings(**env):
    r = run(["doctor", "--json"], **env)
    try:
        return r.returncode, [(f["check"], f["severity"], f["summary"]) for f in json.loads(r.stdout)["findings"]]
    except (json.JSONDecodeError, KeyError):
        return r.returncode, []


code, found = findings(**modes, CUDA_VISIBLE_DEVICES="MIG-a,MIG-b")
expect("doctor: MPS noted with its client count and the limit of 60",
       any(c == "mps" and s == "note" and "device 1 is shared through MPS (1 client" in t and "60 client contexts" in t
           for c, s, t in found), str(found))
expect("doctor: MIG noted, one instance per process",
       any(c == "mig" and s == "note" and "only one MIG instance per process" in t for c, s, t in found), str(found))
expect("doctor: two MIG instances in CUDA_VISIBLE_DEVICES is a warning (exit 10)", code == 10 and
       any(c == "mig" and s == "warning" for c, s, t in found), str(found))
expect("doctor: persistence off noted", any(c == "persistence" and "off on device(s) 0" in t for c, s, t in found),
       str(found))
code, found = findings(CUCTX_FAKE_EXCLUSIVE_PROCESS="0", CUCTX_FAKE_NVML_PROCESSES="4001@0:5", LOCAL_RANK="0")
expect("doctor: this rank's Exclusive Process device held by another process is an error (exit 11)", code == 11 and
       any(c == "compute-mode" and s == "error" and "process 4001" in t and "LOCAL_RANK" in t for c, s, t in found),
       str(found))
code, found = findings(**refusing)
expect("doctor, one query refused: that device's persistence noted as not known, NVML not called unavailable, MIG still checked",
       any(c == "persistence" and s == "note" and "persistence mode not known on device 1: nvmlDeviceGetPersistenceMode" in t
           for c, s, t in found) and not any("NVML is unavailable" in t for c, s, t in found) and
       any(c == "mig" and s == "ok" for c, s, t in found), str(found))
# Each check names its own query's failure: the MIG mode refused on device 1 is a MIG note (not "ok"); a
# persistence mode the device does not support is no note, whatever else failed there (the MPS clients).
code, found = findings(CUCTX_FAKE_NVML_MIG_RESULT="1:15", CUCTX_FAKE_MPS="1", CUCTX_FAKE_NVML_PROCESS_RESULT="4",
                       CUCTX_FAKE_NVML_PERSISTENCE_RESULT="1:3")
expect("doctor, MIG mode refused on device 1: noted with its call, no 'ok' for MIG",
       any(c == "mig" and s == "note" and "MIG mode not known on device 1: nvmlDeviceGetMigMode failed with "
           "NVML_ERROR_GPU_IS_LOST" in t for c, s, t in found) and not any(c == "mig" and s == "ok" for c, s, t in found),
       str(found))
expect("doctor, MPS clients refused: said in the MPS note with the call, not as a persistence problem",
       any(c == "mps" and "clients not counted: nvmlDeviceGetMPSComputeRunningProcesses failed" in t
           for c, s, t in found) and not any(c == "persistence" and "not known" in t for c, s, t in found),
       str(found))


def advice_for(check, words, **env):
    """The advice of doctor's first `check` finding whose summary holds `words`; None where there is none."""
    r = run(["doctor", "--json"], **env)
    try:
        return next((f["advice"] for f in json.loads(r.stdout)["findings"]
                     if f["check"] == check and words in f["summary"]), None)
    except (json.JSONDecodeError, KeyError):
        return None


r = run(["doctor"], CUCTX_FAKE_NVML_PERSISTENCE_RESULT="0:4,1:999")
expect("doctor's first line counts checks, and findings where a check has several",
       r.stdout.startswith("cuctx-inspect doctor: 12 checks, 13 findings, 0 errors, 0 warnings, 2 notes\n"),
       r.stdout)
r = run(["doctor"])
expect("doctor's first line: no findings count where each check has one",
       re.match(r"cuctx-inspect doctor: \d+ checks, \d+ errors?, ", r.stdout) is not None, r.stdout)
# The advice fits the cause: a device NVML does not know, a refused query, a lost GPU, anything else.
for env, words, wanted, unwanted in [
        (dict(CUCTX_FAKE_NVML_DEVICES="1"), "not known on device 1: NVML does not know GPU-", "nvidia-smi -L",
         "NVML_ERROR_"),
        (dict(CUCTX_FAKE_NVML_PERSISTENCE_RESULT="1:4"), "not known on device 1: nvmlDeviceGetPersistenceMode",
         "a user allowed to query the GPU", "reset"),
        (dict(CUCTX_FAKE_NVML_PERSISTENCE_RESULT="1:15"), "not known on device 1: nvmlDeviceGetPersistenceMode",
         "a reset or a reboot", "a user allowed"),
        (dict(CUCTX_FAKE_NVML_PERSISTENCE_RESULT="1:999"), "not known on device 1: nvmlDeviceGetPersistenceMode",
         "nvidia-smi -q", "a user allowed"),
        (dict(CUCTX_FAKE_NVML_PERSISTENCE_RESULT="1:999", CUCTX_FAKE_NVML_ERROR_TEXT="999:NVML_ERROR_NO_PERMISSION ("),
         "not known on device 1: nvmlDeviceGetPersistenceMode", "nvidia-smi -q", "a user allowed")]:
    got = advice_for("persistence", words, **env)
    expect(f"doctor's advice for '{words}' ({env}) fits it", got is not None and wanted in got and unwanted not in got,
           str(got))

# NVML answering for no device: the advice still fits each device's cause.
for env, wanted, unwanted in [(dict(CUCTX_FAKE_DEVICES="1", CUCTX_FAKE_NVML_HANDLE_RESULT="0:15"), "a reset or a reboot",
                               "nvidia-smi -L"),
                              (dict(CUCTX_FAKE_NVML_HANDLE_RESULT="0:4", CUCTX_FAKE_NVML_DEVICES="1"),
                               "a user allowed to query the GPU", "reset")]:
    got = advice_for("mig", "answered for no device", **env)
    expect(f"doctor, NVML answering for no device ({env}): advice that fits", got is not None and wanted in got and
           unwanted not in got, str(got))
got = advice_for("mig", "answered for no device", CUCTX_FAKE_NVML_HANDLE_RESULT="0:999,1:4")
expect("doctor, NVML answering for no device for two causes: each advice once",
       got is not None and got.count("nvidia-smi -q shows what NVML reads there") == 1 and "a user allowed" in got,
       str(got))
got = advice_for("mig", "answered for no device", CUCTX_FAKE_DEVICES="1", CUCTX_FAKE_NVML_HANDLE_RESULT="0:999",
                 CUCTX_FAKE_NVML_ERROR_TEXT="999:probe failed with NVML_ERROR_GPU_IS_LOST (15)")
expect("doctor: the advice follows the error's name, not NVML's text", got is not None and "reset" not in got, str(got))
# An Exclusive Process device whose other processes NVML would not list: noted, not passed over.
code, found = findings(CUCTX_FAKE_EXCLUSIVE_PROCESS="1", CUCTX_FAKE_NVML_PROCESSES="4242@1:100",
                       CUCTX_FAKE_NVML_PROCESS_RESULT="4")
expect("doctor, process list refused: the Exclusive Process device noted as not checked",
       any(c == "compute-mode" and s == "note" and "device 1 is in compute mode Exclusive Process, and NVML could not "
           "list every process" in t and "NVML_ERROR_NO_PERMISSION" in t for c, s, t in found), str(found))
# Refused on one device only: the other Exclusive Process device is still checked (its holder a warning, exit 10).
code, found = findings(CUCTX_FAKE_EXCLUSIVE_PROCESS="0,1", CUCTX_FAKE_NVML_PROCESSES="4242@0:100",
                       CUCTX_FAKE_NVML_LIST_RESULT="1:4")
expect("doctor, process list refused on device 1: device 0's holder still warned of, device 1 noted",
       code == 10 and any(c == "compute-mode" and s == "warning" and "device 0" in t and "process 4242" in t
                          for c, s, t in found) and
       any(c == "compute-mode" and s == "note" and "device 1 is in compute mode Exclusive Process, and NVML" in t
           for c, s, t in found), str(found))
# A compute list the device "does not support" on an Exclusive Process device is no list: noted, not passed over.
code, found = findings(CUCTX_FAKE_EXCLUSIVE_PROCESS="0,1", CUCTX_FAKE_NVML_PROCESSES="4242@0:100,4243@1:5",
                       CUCTX_FAKE_NVML_LIST_RESULT="1:3")
expect("doctor, compute list not supported on Exclusive Process device 1: noted, device 0's holder warned of",
       code == 10 and any(c == "compute-mode" and s == "note" and "device 1 is in compute mode Exclusive Process" in t
                          and "not supported" in t for c, s, t in found) and
       any(c == "compute-mode" and s == "warning" and "process 4242" in t for c, s, t in found), str(found))
# An MPS client list refused keeps the holders the compute list gave (a warning), and says what it missed.
code, found = findings(CUCTX_FAKE_EXCLUSIVE_PROCESS="0", CUCTX_FAKE_NVML_PROCESSES="4242@0:100",
                       CUCTX_FAKE_NVML_MPS_LIST_RESULT="0:4")
expect("doctor, MPS list refused on Exclusive Process device 0: its compute holder still warned of, the gap noted",
       code == 10 and any(c == "compute-mode" and s == "warning" and "process 4242" in t for c, s, t in found) and
       any(c == "compute-mode" and s == "note" and "nvmlDeviceGetMPSComputeRunningProcesses" in t for c, s, t in found),
       str(found))
# Without NVML, an Exclusive Process device is noted as not checked for its holders, with why.
code, found = findings(CUCTX_FAKE_EXCLUSIVE_PROCESS="1", CUCTX_NVML_PATH="/nonexistent/nvml.so")
expect("doctor without NVML: the Exclusive Process device noted as not checked",
       any(c == "compute-mode" and s == "note" and "device 1 is in compute mode Exclusive Process, and NVML could not "
           "list every process" in t and "could not be loaded" in t for c, s, t in found), str(found))
r = run(["devices", "-v"], CUCTX_FAKE_MPS="1", CUCTX_FAKE_NVML_MPS_LIST_RESULT="1:4")
expect("devices -v, MPS clients refused: the row says unknown, the problem row why",
       "MPS client processes               unknown (see NVML problem)" in r.stdout and
       "NVML problem                       nvmlDeviceGetMPSComputeRunningProcesses" in r.stdout, r.stdout)
# MPS on, its client list not supported on the device: no count (null), nothing said.
got = device_modes("devices --json, MPS client list not supported", CUCTX_FAKE_MPS="1",
                   CUCTX_FAKE_NVML_MPS_LIST_RESULT="1:3")
expect("devices --json, MPS client list not supported: null, no problem",
       got.get(1, {}).get("mps") is True and got[1]["mps_client_processes"] is None and got[1]["nvml_problem"] is None,
       str(got))
code, found = findings(CUCTX_NVML_PATH="/nonexistent/nvml.so")
expect("doctor without NVML: mig and persistence not checked, said so", code == 0 and
       any(c == "persistence" and s == "note" and "NVML is unavailable" in t for c, s, t in found), str(found))
finish()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuctx-inspect as a user meets it: each command in each driver situation gives its documented exit
status, one clear line for people, and --json output that validates against docs/schema/.

usage: check_inspect.py INSPECT FAKE_DRIVER STUB_DRIVER SCHEMA_DIR PTX
"""
import csv
import io
import json
import os
import pty
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, finish  # noqa: E402
import checks  # noqa: E402

inspect, fake, stub, schema_dir, ptx = sys.argv[1:6]
fake = os.path.abspath(fake)
store = checks.load_store(schema_dir)


def load_validator(name):
    return checks.validator(store, name)


validator = load_validator("inspect-devices.schema.json")
module_validator = load_validator("inspect-module.schema.json")


HERMETIC = ("CUDA_VISIBLE_DEVICES", "CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH", "CUDA_CACHE_MAXSIZE",
            "CUDA_MODULE_LOADING", "NO_COLOR", "LD_LIBRARY_PATH")


def run(args, cwd=None, **env):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_") and k not in HERMETIC}
    full_env.update(env)
    return subprocess.run([os.path.abspath(inspect), *args], capture_output=True, text=True, env=full_env,
                          timeout=60, cwd=cwd)



def check_json(name, result, status, code, validator=validator):
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


def check_line(name, result, code, *words):
    lines = result.stderr.strip().splitlines()
    expect(f"{name}: exit status {code}", result.returncode == code, f"got {result.returncode}")
    expect(f"{name}: one line on stderr", len(lines) == 1, result.stderr)
    for w in words:
        expect(f"{name}: says '{w}'", w in result.stderr, result.stderr)
    expect(f"{name}: nothing on stdout", result.stdout == "", result.stdout)


# No driver at all.
missing = "/nonexistent/libcuda.so.1"
check_line("no driver", run([], CUCTX_DRIVER_PATH=missing), 3, "no CUDA driver", missing)
doc = check_json("no driver", run(["--json"], CUCTX_DRIVER_PATH=missing), "no_driver", 3)
if doc:
    expect("no driver: requested path reported", doc["driver"]["requested_path"] == missing)

# The toolkit's stub library.
check_line("stub driver", run([], CUCTX_DRIVER_PATH=stub), 4, "stub CUDA driver", "CUDA_ERROR_STUB_LIBRARY")
check_json("stub driver", run(["--json"], CUCTX_DRIVER_PATH=stub), "stub_driver", 4)

# A driver with no device.
check_line("no device", run([], CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DEVICES="0"), 5, "no CUDA device")
doc = check_json("no device", run(["--json"], CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DEVICES="0"), "no_device", 5)
if doc:
    expect("no device: driver version still reported", doc["driver"]["version"] == 13000)

# A driver too old for cuctx.
check_line("old driver", run([], CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DRIVER_VERSION="6050"), 6, "too old")
check_json("old driver", run(["--json"], CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DRIVER_VERSION="6050"),
           "driver_too_old", 6)

# A working driver with three devices.
doc = check_json("three devices", run(["--json"], CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DEVICES="3"), "ok", 0)
if doc:
    expect("three devices: all listed", [d["ordinal"] for d in doc["devices"]] == [0, 1, 2])
    expect("three devices: names", doc["devices"][2]["name"] == "cuctx Fake GPU 2")
    expect("three devices: free memory not measured by default",
           all(d["free_memory_bytes"] is None for d in doc["devices"]))
    expect("three devices: primary contexts left inactive",
           all(not d["primary_context"]["active"] for d in doc["devices"]))
doc = check_json("--memory", run(["--json", "--memory"], CUCTX_DRIVER_PATH=fake), "ok", 0)
if doc:
    expect("--memory: free memory measured", all(d["free_memory_bytes"] > 0 for d in doc["devices"]))

table = run([], CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DEVICES="3", CUDA_VISIBLE_DEVICES="0,1,2")
expect("table: exit status 0", table.returncode == 0, table.stderr)
expect("table: driver version line", "CUDA driver 13.0 (13000)" in table.stdout, table.stdout)
expect("table: CUDA_VISIBLE_DEVICES shown", "CUDA_VISIBLE_DEVICES: 0,1,2" in table.stdout, table.stdout)
rows = [l for l in table.stdout.splitlines() if l[:1].isdigit()]
expect("table: one row per device", len(rows) == 3, table.stdout)
expect("table: fits 80 columns", checks.fits_columns(table.stdout), table.stdout)
verbose = run(["-v"], CUCTX_DRIVER_PATH=fake)
expect("verbose: attributes listed", "memory bus width (bits)" in verbose.stdout and "5120" in verbose.stdout)

# Logging is controlled by CUCTX_LOG_LEVEL.
logged = run([], CUCTX_DRIVER_PATH=fake, CUCTX_LOG_LEVEL="debug")
expect("CUCTX_LOG_LEVEL=debug logs the load",
       "[cuctx] [debug]" in logged.stderr and "driver loaded from" in logged.stderr, logged.stderr)
quiet = run([], CUCTX_DRIVER_PATH=fake)
expect("default level logs nothing on success", quiet.stderr == "", quiet.stderr)
logged = run([], CUCTX_DRIVER_PATH=fake, CUCTX_LOG_LEVEL="DEBUG")
expect("CUCTX_LOG_LEVEL=DEBUG (any case) logs the load", "driver loaded from" in logged.stderr, logged.stderr)
logged = run([], CUCTX_DRIVER_PATH=fake, CUCTX_LOG_LEVEL="verbose")
expect("CUCTX_LOG_LEVEL=verbose: one warning that names it, then warn level",
       logged.returncode == 0 and logged.stderr.count("CUCTX_LOG_LEVEL='verbose' is no log level") == 1 and
       len(logged.stderr.splitlines()) == 1, logged.stderr)

usage = run(["--bogus"])
expect("bad argument: exit status 2", usage.returncode == 2)
expect("--help: exit status 0", run(["--help"]).returncode == 0)
expect("--version names the version", run(["--version"]).stdout.startswith("cuctx-inspect "))

# JSON is valid UTF-8 whatever the bytes of a path (\xff becomes U+FFFD), and a failed write is an error.
r = subprocess.run([os.path.abspath(inspect).encode(), b"module", b"--json", b"/nonexistent/\xff.ptx"],
                   capture_output=True, env={"CUCTX_DRIVER_PATH": fake}, timeout=60)
try:
    doc = json.loads(r.stdout.decode("utf-8"))  # strict: invalid UTF-8 raises
    expect("module --json with a \\xff path: valid UTF-8, U+FFFD", doc["file"] == "/nonexistent/\ufffd.ptx", doc["file"])
except (UnicodeDecodeError, json.JSONDecodeError) as e:
    expect("module --json with a \\xff path: valid UTF-8", False, str(e))
with open("/dev/full", "w") as full:
    r = subprocess.run([inspect, "--json"], stdout=full, stderr=subprocess.PIPE, text=True,
                       env={"CUCTX_DRIVER_PATH": fake}, timeout=60)
expect("--json > /dev/full: exit 1 and says so", r.returncode == 1 and "cannot write the output" in r.stderr,
       f"{r.returncode}\n{r.stderr}")

# module FILE: kernels and their attributes, or the JIT's log.
module = run(["module", ptx], CUCTX_DRIVER_PATH=fake)
expect("module: exit status 0", module.returncode == 0, module.stderr)
kernel_rows = [l.split()[0] for l in module.stdout.splitlines()[5:] if l.strip()]
expect("module: one row per kernel", kernel_rows == ["bump", "empty", "scale"], module.stdout)
expect("module: loading mode shown", "module loading: lazy" in module.stdout, module.stdout)
expect("module: fits 80 columns", checks.fits_columns(module.stdout), module.stdout)
doc = check_json("module", run(["module", ptx, "--json"], CUCTX_DRIVER_PATH=fake), "ok", 0, module_validator)
if doc:
    scale = next(k for k in doc["kernels"] if k["name"] == "scale")
    expect("module: scale's parameters", [p["bytes"] for p in scale["parameters"]] == [8, 8, 4, 4], str(scale))
    expect("module: occupancy at four block sizes", [o["block_size"] for o in scale["occupancy"]] == [128, 256, 512, 1024])
    expect("module: kind", doc["kind"] == "ptx")
verbose_module = run(["module", ptx, "-v"], CUCTX_DRIVER_PATH=fake)
expect("module -v: parameters listed", "8 at 0, 8 at 8, 4 at 16, 4 at 20" in verbose_module.stdout, verbose_module.stdout)

with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as bad:
    bad.write(".version 8.0\n.target sm_80\n.visible .entry broken()\n{\n    bogus.u32 %r1, 1;\n}\n")
try:
    broken = run(["module", bad.name], CUCTX_DRIVER_PATH=fake)
    expect("broken module: exit status 9", broken.returncode == 9, broken.stderr)
    expect("broken module: the JIT's log is printed", "Not a name of any known instruction: 'bogus'" in broken.stderr,
           broken.stderr)
    expect("broken module: nothing on stdout", broken.stdout == "", broken.stdout)
    doc = check_json("broken module", run(["module", bad.name, "--json"], CUCTX_DRIVER_PATH=fake), "module_error", 9,
                     module_validator)
    if doc:
        expect("broken module: jit_log in JSON", "bogus" in (doc["jit_log"] or ""), str(doc))
finally:
    os.unlink(bad.name)
check_line("missing module file", run(["module", "/nonexistent/k.ptx"], CUCTX_DRIVER_PATH=fake), 9, "no such file")
with tempfile.TemporaryDirectory() as folder:
    check_line("module of a directory", run(["module", folder], CUCTX_DRIVER_PATH=fake), 9, "not a regular file")
check_line("module without a driver", run(["module", ptx], CUCTX_DRIVER_PATH=missing), 3, "no CUDA driver")
check_json("module without a driver", run(["module", ptx, "--json"], CUCTX_DRIVER_PATH=missing), "no_driver", 3,
           module_validator)
expect("module without FILE: exit status 2", run(["module"]).returncode == 2)

# Every command without a driver: its exit status, one line, and a valid document.
for command, schema in [("topology", "inspect-topology.schema.json"), ("context", "inspect-context.schema.json"),
                        ("bench", "inspect-bench.schema.json")]:
    check_line(f"{command} without a driver", run([command], CUCTX_DRIVER_PATH=missing), 3, "no CUDA driver", missing)
    check_json(f"{command} without a driver", run([command, "--json"], CUCTX_DRIVER_PATH=missing), "no_driver", 3,
               load_validator(schema))
    check_line(f"{command} with the stub", run([command], CUCTX_DRIVER_PATH=stub), 4, "stub CUDA driver")
    check_line(f"{command} without a device", run([command], CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DEVICES="0"), 5,
               "no CUDA device")
    helped = run([command, "--help"])
    expect(f"{command} --help: exit 0 and its own usage", helped.returncode == 0 and
           helped.stdout.startswith(f"usage: cuctx-inspect {command}"), helped.stdout)
    expect(f"{command} --help fits 80 columns", checks.fits_columns(helped.stdout), helped.stdout)
expect("an option of another command is a usage error", run(["topology", "--primary"]).returncode == 2)
expect("an unknown command is a usage error", run(["frobnicate"]).returncode == 2)
expect("--device without a number is a usage error", run(["context", "--device", "x"]).returncode == 2)
expect("--help lists every command", all(c in run(["--help"]).stdout for c in
                                         ["devices", "topology", "context", "module", "doctor", "bench"]))

# Numbers are checked, not wrapped or defaulted; usage errors exit 2 with the command's usage line.
for args, words in [(["context", "--device", "4294967296"], "out of range"),
                    (["context", "--device=-1"], "out of range"),
                    (["bench", "--threads", "4294967297"], "out of range"),
                    (["bench", "--threads", "0"], "out of range"),
                    (["bench", "--threads", "50000"], "from 1 to 1024"),
                    (["bench", "--threads", "-1"], "out of range"),
                    (["bench", "--iterations", "12abc"], "not a whole number"),
                    (["bench", "--device", "1", "--device", "2"], "--device"),
                    (["context", "--device"], "--device")]:
    r = run(args, CUCTX_DRIVER_PATH=fake)
    expect(f"{' '.join(args)}: a usage error", r.returncode == 2 and r.stdout == "" and words in r.stderr and
           f"usage: cuctx-inspect {args[0]}" in r.stderr, f"{r.returncode}\n{r.stdout}{r.stderr}")
doc = check_json("context --device=1 (the = form)", run(["context", "--json", "--device=1"], CUCTX_DRIVER_PATH=fake),
                 "ok", 0, load_validator("inspect-context.schema.json"))
expect("--device=1 is device 1", doc is not None and doc["device"] == 1)
doc = check_json("--device 010 is decimal", run(["context", "--json", "--device", "010"], CUCTX_DRIVER_PATH=fake),
                 "usage_error", 2, load_validator("inspect-context.schema.json"))
expect("--device 010 is device 10, not octal 8", doc is not None and doc["device"] == 10)
with tempfile.TemporaryDirectory() as folder:
    dashed = os.path.join(folder, "-k.ptx")
    with open(ptx) as src, open(dashed, "w") as dst:
        dst.write(src.read())
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_") and k not in HERMETIC}
    r = subprocess.run([os.path.abspath(inspect), "module", "--json", "--", "-k.ptx"], capture_output=True, text=True,
                       env=dict(full_env, CUCTX_DRIVER_PATH=os.path.abspath(fake)), cwd=folder, timeout=60)
    expect("module -- FILE: a file whose name starts with '-'", r.returncode == 0 and '"-k.ptx"' in r.stdout,
           r.stderr)
helped = run(["--help"])
expect("--help on stdout, nothing on stderr", helped.returncode == 0 and helped.stderr == "" and
       helped.stdout.startswith("usage: cuctx-inspect"), helped.stderr)

# The system refusing threads (a default thread stack no mmap can give): bench says so and exits 12,
# it never ends in std::terminate. ThreadSanitizer cannot run with that limit, so its build skips it.
if os.environ.get("CUCTX_TEST_SANITIZE", "none") != "thread":
    import resource

    def huge_stacks():
        resource.setrlimit(resource.RLIMIT_STACK, (1 << 50, resource.RLIM_INFINITY))

    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_") and k not in HERMETIC}
    full_env["CUCTX_DRIVER_PATH"] = fake
    r = subprocess.run([inspect, "bench", "--threads", "2", "--iterations", "200"], capture_output=True, text=True,
                       env=full_env, timeout=60, preexec_fn=huge_stacks)
    expect("bench with threads refused: exit 12 and says why", r.returncode == 12 and
           "could not start thread 1 of 2" in r.stderr, f"{r.returncode}\n{r.stderr}")
    r = subprocess.run([inspect, "bench", "--json", "--threads", "2", "--iterations", "200"], capture_output=True,
                       text=True, env=full_env, timeout=60, preexec_fn=huge_stacks)
    check_json("bench with threads refused", r, "no_resources", 12, load_validator("inspect-bench.schema.json"))
else:
    print("skip   bench with threads refused (ThreadSanitizer cannot run with a huge stack limit)")

# topology on three fake devices (they have no peer access, as on a machine without P2P).
topology_validator = load_validator("inspect-topology.schema.json")
doc = check_json("topology", run(["topology", "--json"], CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DEVICES="3"), "ok", 0,
                 topology_validator)
if doc:
    expect("topology: every ordered pair", sorted((l["from"], l["to"]) for l in doc["links"]) ==
           [(a, b) for a in range(3) for b in range(3) if a != b], str(doc["links"]))
    expect("topology: no peer access on the fake", not any(l["can_access_peer"] for l in doc["links"]))
table = run(["topology"], CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DEVICES="3")
rows = [l.split() for l in table.stdout.splitlines() if l.startswith("GPU")]
expect("topology: a 3x3 matrix", [r[:4] for r in rows] == [["GPU0", "-", "no", "no"], ["GPU1", "no", "-", "no"],
                                                                 ["GPU2", "no", "no", "-"]], table.stdout)
expect("topology: fits 80 columns", checks.fits_columns(table.stdout), table.stdout)
single = run(["topology"], CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DEVICES="1")
expect("topology: one device says it has no peer links", "One device has no peer links" in single.stdout, single.stdout)

# context: what a created and a primary context report, and what they cost on the fake (512 MiB each).
context_validator = load_validator("inspect-context.schema.json")
doc = check_json("context", run(["context", "--json", "--device", "1"], CUCTX_DRIVER_PATH=fake), "ok", 0,
                 context_validator)
if doc:
    expect("context: its device", doc["device"] == 1 and doc["context"]["device_name"] == "cuctx Fake GPU 1")
    expect("context: the memory it took", doc["cost"]["device_memory_bytes"] == 512 << 20, str(doc["cost"]))
    expect("context: limits read", doc["context"]["limits"]["stack_size"] == 1024, str(doc["context"]["limits"]))
    expect("context: priority range", doc["context"]["stream_priorities"] == {"least": 0, "greatest": -5})
    expect("context: a created context", doc["primary"] is False and "sched auto" in doc["context"]["flag_names"])
doc = check_json("context --primary", run(["context", "--json", "--primary"], CUCTX_DRIVER_PATH=fake), "ok", 0,
                 context_validator)
if doc:
    expect("context --primary: the memory it took", doc["cost"]["device_memory_bytes"] == 512 << 20, str(doc["cost"]))
table = run(["context"], CUCTX_DRIVER_PATH=fake)
expect("context: table fits 80 columns", table.returncode == 0 and
       checks.fits_columns(table.stdout), table.stdout)
expect("context: table shows the cost", any("device memory it took" in l and l.endswith(" 512 MiB")
                                             for l in table.stdout.splitlines()), table.stdout)
doc = check_json("context on a missing device", run(["context", "--json", "--device", "7"], CUCTX_DRIVER_PATH=fake),
                 "usage_error", 2, context_validator)
if doc:
    expect("context on a missing device: says how many there are", "the driver sees 2 device(s)" in doc["message"],
           doc["message"])

# bench: every row measured, raw against cuctx, in each of the three forms.
bench_validator = load_validator("inspect-bench.schema.json")
quick = ["--iterations", "2000", "--threads", "2"]
doc = check_json("bench", run(["bench", "--json", *quick], CUCTX_DRIVER_PATH=fake), "ok", 0, bench_validator)
if doc:
    names = [r["name"] for r in doc["rows"]]
    expect("bench: the rows driver-facts.md measures", any("switching guard" in n for n in names) and
           any("shared context" in n for n in names) and any("launch" in n for n in names), str(names))
    expect("bench: raw figures are positive", all(r["raw"] > 0 for r in doc["rows"]), str(doc["rows"]))
    elided = next(r for r in doc["rows"] if r["name"].startswith("push+pop pair / guard on current"))
    expect("bench: an elided guard beats the raw pair", elided["speedup"] > 1, str(elided))
csv_out = run(["bench", "--csv", *quick], CUCTX_DRIVER_PATH=fake)
records = list(csv.reader(io.StringIO(csv_out.stdout)))
expect("bench --csv: a header and a record of 5 fields per row", csv_out.returncode == 0 and
       records[0] == ["measurement", "unit", "raw", "cuctx", "speedup"] and
       len(records) == 1 + len(doc["rows"] if doc else []) and all(len(r) == 5 for r in records), csv_out.stdout)
table = run(["bench", *quick], CUCTX_DRIVER_PATH=fake)
expect("bench: table fits 80 columns", table.returncode == 0 and checks.fits_columns(table.stdout),
       table.stdout)

# doctor: each check on the fake driver, the exit status that goes with the worst finding.
doctor_validator = load_validator("inspect-doctor.schema.json")
with tempfile.TemporaryDirectory() as home:
    clean = dict(CUDA_CACHE_PATH=os.path.join(home, "cache"))

    def doctor(*args, cwd=None, **env):
        merged = dict(clean)
        merged.update(env)
        return run(["doctor", *args], cwd=cwd, **merged)

    def findings(result):
        try:
            return {(f["check"], f["severity"]): f for f in json.loads(result.stdout)["findings"]}
        except (json.JSONDecodeError, KeyError):
            return {}

    doc = check_json("doctor, all well", doctor("--json", CUCTX_DRIVER_PATH=fake), "ok", 0, doctor_validator)
    if doc:
        expect("doctor: every check ran", {f["check"] for f in doc["findings"]} ==
               {"driver", "loader-path", "devices", "visible-devices", "driver-version", "compute-mode",
                "mps", "mig", "persistence", "module-loading", "jit-cache", "fork"}, str(doc["findings"]))
    cases = [
        ("no driver", dict(CUCTX_DRIVER_PATH=missing), 11, ("driver", "error"), "install the NVIDIA driver"),
        ("the stub", dict(CUCTX_DRIVER_PATH=stub), 11, ("driver", "error"), "stubs folder"),
        ("no device", dict(CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DEVICES="0"), 11, ("devices", "error"), "nvidia-smi"),
        ("empty CUDA_VISIBLE_DEVICES", dict(CUCTX_DRIVER_PATH=fake, CUDA_VISIBLE_DEVICES=""), 11,
         ("visible-devices", "error"), "hides every GPU"),
        ("bad CUDA_VISIBLE_DEVICES entry", dict(CUCTX_DRIVER_PATH=fake, CUDA_VISIBLE_DEVICES="0,gpu1,2"), 10,
         ("visible-devices", "warning"), "every entry after it"),
        ("old driver", dict(CUCTX_DRIVER_PATH=fake, CUCTX_FAKE_DRIVER_VERSION="12040"), 10,
         ("driver-version", "warning"), "CUDA 12.4"),
        ("eager loading", dict(CUCTX_DRIVER_PATH=fake, CUDA_MODULE_LOADING="EAGER"), 0, ("module-loading", "note"),
         "CUDA_MODULE_LOADING=EAGER"),
        ("JIT cache disabled", dict(CUCTX_DRIVER_PATH=fake, CUDA_CACHE_DISABLE="1"), 10, ("jit-cache", "warning"),
         "CUDA_CACHE_DISABLE=1"),
        ("JIT cache limit above 4 GiB", dict(CUCTX_DRIVER_PATH=fake, CUDA_CACHE_MAXSIZE="8589934592"), 10,
         ("jit-cache", "warning"), "4 GiB"),
        ("JIT cache folder impossible", dict(CUCTX_DRIVER_PATH=fake, CUDA_CACHE_PATH=os.path.join(ptx, "cache")), 10,
         ("jit-cache", "warning"), "cannot be made"),
    ]
    for name, env, code, key, words in cases:
        result = doctor("--json", **env)
        check_json(f"doctor, {name}", result, "error" if code == 11 else "warning" if code == 10 else "ok", code,
                   doctor_validator)
        found = findings(result).get(key)
        expect(f"doctor, {name}: {key[0]} {key[1]}", found is not None, result.stdout)
        if found:
            text = found["summary"] + " " + (found["advice"] or "")
            expect(f"doctor, {name}: says '{words}'", words in text, text)
    a_file = os.path.join(home, "a-file")
    open(a_file, "w").close()
    cases = [
        ("a regular file as the JIT cache", dict(CUDA_CACHE_PATH=a_file), 10, ("jit-cache", "warning"), "is no folder"),
        ("CUDA_CACHE_MAXSIZE=-1", dict(CUDA_CACHE_MAXSIZE="-1"), 10, ("jit-cache", "warning"),
         '"-1" is not a number of bytes'),
        ("an empty CUDA_VISIBLE_DEVICES entry", dict(CUDA_VISIBLE_DEVICES="0,,1"), 10, ("visible-devices", "warning"),
         'entry 2 ("") is no device index or UUID: the driver stops there'),
        ("an empty first entry", dict(CUDA_VISIBLE_DEVICES=",0"), 11, ("visible-devices", "error"),
         "hides every GPU"),
        # The fake ignores CUDA_VISIBLE_DEVICES and shows one device; the real driver stops at the 7.
        ("an index past the GPUs, no /proc list", dict(CUDA_VISIBLE_DEVICES="0,7", CUCTX_FAKE_DEVICES="1"), 10,
         ("visible-devices", "warning"), "lists 2 devices but the driver sees 1"),
        ("no device under CUDA_VISIBLE_DEVICES", dict(CUDA_VISIBLE_DEVICES="7", CUCTX_FAKE_DEVICES="0"), 11,
         ("devices", "error"), 'the driver sees no CUDA device (CUDA_VISIBLE_DEVICES="7")'),
    ]
    for name, env, code, key, words in cases:
        result = doctor("--json", CUCTX_DRIVER_PATH=fake, **env)
        check_json(f"doctor, {name}", result, "error" if code == 11 else "warning", code, doctor_validator)
        found = findings(result).get(key)
        expect(f"doctor, {name}: {key[0]} {key[1]}", found is not None, result.stdout)
        if found:
            expect(f"doctor, {name}: says '{words}'", words in found["summary"], found["summary"])
    expect("doctor: CUDA_CACHE_MAXSIZE=-1 is not echoed as 2^64-1",
           "18446744073709551615" not in doctor("--json", CUCTX_DRIVER_PATH=fake, CUDA_CACHE_MAXSIZE="-1").stdout)
    # A relative CUDA_CACHE_PATH is taken from the working folder, as the driver takes it.
    result = doctor("--json", cwd=home, CUCTX_DRIVER_PATH=fake, CUDA_CACHE_PATH="relative-cache")
    expect("doctor: a relative CUDA_CACHE_PATH in a writable folder is ok",
           ("jit-cache", "ok") in findings(result) and result.returncode == 0, result.stdout)
    # A cache with a part that cannot be read (a path longer than PATH_MAX, even for root): the size
    # is a lower bound and says so, and what could be read is counted.
    deep = os.path.join(home, "deep-cache")
    os.makedirs(deep)
    with open(os.path.join(deep, "blob"), "wb") as f:
        f.write(b"x" * 4096)
    fd = os.open(deep, os.O_RDONLY)
    for _ in range(20):
        os.mkdir("d" * 250, dir_fd=fd)
        inner = os.open("d" * 250, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    result = doctor("--json", CUCTX_DRIVER_PATH=fake, CUDA_CACHE_PATH=deep)
    found = findings(result).get(("jit-cache", "ok"))
    expect("doctor: a cache it cannot read whole says 'at least'",
           found is not None and "at least 4 KiB (not all of it could be read)" in found["summary"], result.stdout)
    subprocess.run(["rm", "-rf", deep])

    # A stubs folder on LD_LIBRARY_PATH, though the real (here: fake) driver loads.
    stubs = os.path.join(home, "cuda", "lib64", "stubs")
    os.makedirs(stubs)
    open(os.path.join(stubs, "libcuda.so"), "w").close()
    result = doctor("--json", CUCTX_DRIVER_PATH=fake, LD_LIBRARY_PATH=stubs)
    expect("doctor: a stubs folder on LD_LIBRARY_PATH is a warning",
           ("loader-path", "warning") in findings(result) and result.returncode == 10, result.stdout)
    # A cache near its limit.
    cache = os.path.join(home, "full-cache")
    os.makedirs(cache)
    with open(os.path.join(cache, "blob"), "wb") as f:
        f.write(b"x" * 9500)
    result = doctor("--json", CUCTX_DRIVER_PATH=fake, CUDA_CACHE_PATH=cache, CUDA_CACHE_MAXSIZE="10000")
    expect("doctor: a nearly full JIT cache is a warning", ("jit-cache", "warning") in findings(result), result.stdout)

    table = doctor(CUCTX_DRIVER_PATH=fake, CUDA_CACHE_DISABLE="1")
    expect("doctor: the table says what to do", "Fix: unset CUDA_CACHE_DISABLE" in " ".join(table.stdout.split()),
           table.stdout)
    expect("doctor: table fits 80 columns", checks.fits_columns(table.stdout), table.stdout)
    expect("doctor: no colour when stdout is no terminal", "\x1b[" not in table.stdout, table.stdout)

    # Colour on a terminal, unless NO_COLOR is set.
    def on_terminal(**env):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_") and k not in HERMETIC}
        full_env.update(clean, CUCTX_DRIVER_PATH=fake, TERM="xterm", **env)
        main, child = pty.openpty()
        proc = subprocess.Popen([inspect, "doctor"], stdout=child, stderr=subprocess.DEVNULL, env=full_env)
        os.close(child)
        out = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        proc.wait(timeout=60)
        os.close(main)
        return out.decode(errors="replace")

    expect("doctor: colour on a terminal", "\x1b[32mok" in on_terminal())
    expect("doctor: NO_COLOR turns colour off on a terminal", "\x1b[" not in on_terminal(NO_COLOR="1"))

finish()

#!/usr/bin/env python3
"""cuctx-inspect as a user meets it: each driver situation gives its documented exit status, one
clear line for people, and --json output that validates against docs/schema/inspect-devices.schema.json.

usage: check_inspect.py INSPECT FAKE_DRIVER STUB_DRIVER SCHEMA MODULE_SCHEMA PTX
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    sys.exit("check_inspect.py needs python3-jsonschema (apt-get install python3-jsonschema)")

inspect, fake, stub, schema_path, module_schema_path, ptx = sys.argv[1:7]


def load_validator(path):
    with open(path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


validator = load_validator(schema_path)
module_validator = load_validator(module_schema_path)
failures = []


def run(args, **env):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_")}
    full_env.update(env)
    return subprocess.run([inspect, *args], capture_output=True, text=True, env=full_env, timeout=60)


def expect(name, condition, detail=""):
    print(("ok     " if condition else "FAILED ") + name)
    if not condition:
        failures.append(name)
        if detail:
            print("       " + detail.replace("\n", "\n       "))


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
expect("table: fits 80 columns", all(len(l) <= 80 for l in table.stdout.splitlines()), table.stdout)
verbose = run(["-v"], CUCTX_DRIVER_PATH=fake)
expect("verbose: attributes listed", "memory bus width (bits)" in verbose.stdout and "5120" in verbose.stdout)

# Logging is controlled by CUCTX_LOG_LEVEL.
logged = run([], CUCTX_DRIVER_PATH=fake, CUCTX_LOG_LEVEL="debug")
expect("CUCTX_LOG_LEVEL=debug logs the load",
       "[cuctx] [debug]" in logged.stderr and "driver loaded from" in logged.stderr, logged.stderr)
quiet = run([], CUCTX_DRIVER_PATH=fake)
expect("default level logs nothing on success", quiet.stderr == "", quiet.stderr)

usage = run(["--bogus"])
expect("bad argument: exit status 2", usage.returncode == 2)
expect("--help: exit status 0", run(["--help"]).returncode == 0)
expect("--version names the version", run(["--version"]).stdout.startswith("cuctx-inspect "))

# module FILE: kernels and their attributes, or the JIT's log.
module = run(["module", ptx], CUCTX_DRIVER_PATH=fake)
expect("module: exit status 0", module.returncode == 0, module.stderr)
kernel_rows = [l.split()[0] for l in module.stdout.splitlines()[5:] if l.strip()]
expect("module: one row per kernel", kernel_rows == ["bump", "empty", "scale"], module.stdout)
expect("module: loading mode shown", "module loading: lazy" in module.stdout, module.stdout)
expect("module: fits 80 columns (but for the file's path)",
       all(len(l) <= 80 for l in module.stdout.splitlines()[1:]), module.stdout)
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
check_line("module without a driver", run(["module", ptx], CUCTX_DRIVER_PATH=missing), 3, "no CUDA driver")
check_json("module without a driver", run(["module", ptx, "--json"], CUCTX_DRIVER_PATH=missing), "no_driver", 3,
           module_validator)
expect("module without FILE: exit status 2", run(["module"]).returncode == 2)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)

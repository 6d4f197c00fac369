#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuctx-inspect on a machine with a GPU, checked in the same run against nvidia-smi and against the
driver itself (called through ctypes, not through cuctx). Standard library only: the GPU machine has
no jsonschema (the CPU suite validates the schemas).

usage: check_inspect_gpu.py INSPECT PTX OUTDIR
Writes each command's table and JSON into OUTDIR (the README quotes them). Exit 0 when every check
passed, 1 otherwise, 77 when there is no GPU.
"""
import ctypes
import json
import os
import subprocess
import sys

# checks.py lies beside this file when staged (tools/gpu-check), in test/cpu/ in the source tree.
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "cpu")]
from checks import expect, finish  # noqa: E402

inspect, ptx, outdir = sys.argv[1:4]


def run(name, args, **env):
    full_env = dict(os.environ)
    full_env.update(env)
    r = subprocess.run([inspect, *args], capture_output=True, text=True, env=full_env, timeout=300)
    with open(os.path.join(outdir, name), "w") as f:
        f.write(r.stdout)
        if r.stderr:
            f.write("\n[stderr]\n" + r.stderr)
    return r


def run_json(name, args, code=0, **env):
    r = run(name, args + ["--json"], **env)
    expect(f"{' '.join(args) or 'devices'} --json: exit status {code}", r.returncode == code, r.stderr)
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError as e:
        expect(f"{name}: parses", False, f"{e}\n{r.stdout[:2000]}")
        return None


def smi(*query):
    r = subprocess.run(["nvidia-smi", *query], capture_output=True, text=True, timeout=60)
    return r.stdout if r.returncode == 0 else None


# The driver, directly.
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print(f"no driver: {e}")
    sys.exit(77)


def cu(call, *args):
    r = getattr(cuda, call)(*args)
    if r != 0:
        raise RuntimeError(f"{call} failed with {r}")


cu("cuInit", 0)
count = ctypes.c_int()
cu("cuDeviceGetCount", ctypes.byref(count))
driver_version = ctypes.c_int()
cu("cuDriverGetVersion", ctypes.byref(driver_version))
raw_devices = []
for i in range(count.value):
    dev = ctypes.c_int()
    cu("cuDeviceGet", ctypes.byref(dev), i)
    name = ctypes.create_string_buffer(256)
    cu("cuDeviceGetName", name, 256, dev)
    total = ctypes.c_size_t()
    cu("cuDeviceTotalMem_v2", ctypes.byref(total), dev)
    attr = ctypes.c_int()
    cu("cuDeviceGetAttribute", ctypes.byref(attr), 16, dev)  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    raw_devices.append({"handle": dev.value, "name": name.value.decode(), "total": total.value, "sms": attr.value})

# devices, against nvidia-smi and the driver.
doc = run_json("inspect-devices.json", ["--memory"])
run("inspect-devices.txt", [])
run("inspect-devices-verbose.txt", ["-v"])
if doc:
    expect("devices: as many as the driver sees", len(doc["devices"]) == count.value, doc["devices"])
    expect("devices: the driver's version", doc["driver"]["version"] == driver_version.value)
    for d, raw in zip(doc["devices"], raw_devices):
        expect(f"device {d['ordinal']}: name as the driver says", d["name"] == raw["name"], (d["name"], raw["name"]))
        expect(f"device {d['ordinal']}: memory as the driver says", d["total_memory_bytes"] == raw["total"])
        expect(f"device {d['ordinal']}: SMs as the driver says", d["multiprocessors"] == raw["sms"])
        expect(f"device {d['ordinal']}: free memory measured", 0 < d["free_memory_bytes"] <= d["total_memory_bytes"])
    table = smi("--query-gpu=uuid,name,pci.bus_id,memory.total,compute_cap,compute_mode",
                "--format=csv,noheader,nounits")
    expect("nvidia-smi answers", table is not None)
    if table:
        by_uuid = {}
        for line in table.strip().splitlines():
            uuid, name, bus, mem, cc, mode = [x.strip() for x in line.split(",")]
            by_uuid[uuid] = (name, bus, int(mem), cc, mode)
        for d in doc["devices"]:
            s = by_uuid.get(d["uuid"])
            expect(f"device {d['ordinal']}: nvidia-smi knows its UUID {d['uuid']}", s is not None, list(by_uuid))
            if not s:
                continue
            name, bus, mem, cc, mode = s
            expect(f"device {d['ordinal']}: nvidia-smi's name", d["name"] == name, (d["name"], name))
            # nvidia-smi writes an 8-digit PCI domain, the driver a 4-digit one.
            expect(f"device {d['ordinal']}: nvidia-smi's bus id", bus.lower().endswith(d["pci_bus_id"].lower()[4:]),
                   (d["pci_bus_id"], bus))
            expect(f"device {d['ordinal']}: nvidia-smi's compute capability", d["compute_capability"] == cc, (d["compute_capability"], cc))
            # nvidia-smi's total counts memory the driver reserves; within 5%.
            mib = d["total_memory_bytes"] / 2**20
            expect(f"device {d['ordinal']}: memory within 5% of nvidia-smi's ({mib:.0f} vs {mem} MiB)",
                   abs(mib - mem) <= 0.05 * mem)
            expect(f"device {d['ordinal']}: compute mode", d["compute_mode"].lower() == mode.lower(), (d["compute_mode"], mode))

# topology: n*(n-1) links; access as nvidia-smi's P2P read matrix says.
doc = run_json("inspect-topology.json", ["topology"])
run("inspect-topology.txt", ["topology", "-v"])
if doc:
    n = count.value
    expect("topology: every ordered pair", len(doc["links"]) == n * (n - 1), doc["links"])
    for link in doc["links"]:
        can = ctypes.c_int()
        cu("cuDeviceCanAccessPeer", ctypes.byref(can), raw_devices[link["from"]]["handle"], raw_devices[link["to"]]["handle"])
        expect(f"topology: {link['from']} -> {link['to']} as cuDeviceCanAccessPeer says", link["can_access_peer"] == bool(can.value))
    p2p = smi("topo", "-p2p", "r")
    if p2p:
        with open(os.path.join(outdir, "nvidia-smi-topo-p2p.txt"), "w") as f:
            f.write(p2p)

# context: what it reports, against the driver's own answers for a context of its own.
doc = run_json("inspect-context.json", ["context"])
run("inspect-context.txt", ["context"])
if doc:
    c = doc["context"]
    ctx = ctypes.c_void_p()
    cu("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), raw_devices[0]["handle"])
    cu("cuCtxPushCurrent_v2", ctx)
    value = ctypes.c_size_t()
    for key, limit in [("stack_size", 0), ("printf_fifo_size", 1), ("malloc_heap_size", 2)]:
        cu("cuCtxGetLimit", ctypes.byref(value), limit)
        expect(f"context: {key} as the driver's default ({value.value})", c["limits"][key] == value.value, c["limits"][key])
    least, greatest = ctypes.c_int(), ctypes.c_int()
    cu("cuCtxGetStreamPriorityRange", ctypes.byref(least), ctypes.byref(greatest))
    expect("context: stream priorities as the driver says",
           c["stream_priorities"] == {"least": least.value, "greatest": greatest.value}, c["stream_priorities"])
    popped = ctypes.c_void_p()
    cu("cuCtxPopCurrent_v2", ctypes.byref(popped))
    cu("cuDevicePrimaryCtxRelease_v2", raw_devices[0]["handle"])
    expect("context: a real id", c["id"] > 0)
    expect("context: total memory as the driver says", c["total_memory_bytes"] == raw_devices[0]["total"])
    expect("context: it took device memory", (doc["cost"]["device_memory_bytes"] or 0) > 0, doc["cost"])
    expect("context: creating it took time", doc["cost"]["create_ms"] > 0, doc["cost"])
doc = run_json("inspect-context-primary.json", ["context", "--primary"])
if doc:
    expect("context --primary: it took device memory", (doc["cost"]["device_memory_bytes"] or 0) > 0, doc["cost"])

# module: the PTX's kernels, compiled for this device.
doc = run_json("inspect-module.json", ["module", ptx])
run("inspect-module.txt", ["module", ptx])
if doc:
    entries = sorted(line.split(".entry")[1].split("(")[0].strip() for line in open(ptx) if ".entry" in line)
    expect("module: the PTX's kernels", sorted(k["name"] for k in doc["kernels"]) == entries, doc["kernels"])
    expect("module: compiled (registers and SASS version known)",
           all(k["binary_version"] > 0 for k in doc["kernels"]), doc["kernels"])

# doctor: with the JIT cache disabled (as the GPU suite runs) a warning, exit 10; the rest well.
doc = run_json("inspect-doctor-cache-disabled.json", ["doctor"], 10, CUDA_CACHE_DISABLE="1")
if doc:
    expect("doctor: the disabled JIT cache is the warning",
           any(f["check"] == "jit-cache" and f["severity"] == "warning" for f in doc["findings"]), doc["findings"])
env = {k: v for k, v in os.environ.items() if k != "CUDA_CACHE_DISABLE"}
r = subprocess.run([inspect, "doctor", "--json"], capture_output=True, text=True, env=env, timeout=300)
subprocess.run([inspect, "doctor"], stdout=open(os.path.join(outdir, "inspect-doctor.txt"), "w"), env=env, timeout=300)
try:
    doc = json.loads(r.stdout)
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    expect("doctor: no error on this machine", not errors and r.returncode in (0, 10), errors)
    expect("doctor: driver and devices ok", {(f["check"], f["severity"]) for f in doc["findings"]} >=
           {("driver", "ok"), ("devices", "ok"), ("fork", "ok")}, doc["findings"])
except json.JSONDecodeError as e:
    expect("doctor --json parses", False, e)

# bench: every row measured; an elided guard at least 10x cheaper than the raw pair.
doc = run_json("inspect-bench.json", ["bench", "--iterations", "200000"])
run("inspect-bench.txt", ["bench", "--iterations", "200000"])
if doc:
    expect("bench: every raw figure measured", all(r["raw"] > 0 for r in doc["rows"]), doc["rows"])
    elided = next((r for r in doc["rows"] if r["name"].startswith("push+pop pair / guard on current")), None)
    expect("bench: an elided guard >= 10x cheaper than the raw pair", elided and elided["speedup"] >= 10, elided)

# processes: a second process that holds the primary context and 256 MiB until its stdin closes (it says
# "ready" once it does: a pipe, not a sleep), then cuctx-inspect processes against nvidia-smi's
# --query-compute-apps, which reads the same NVML.
HOLDER = """
import ctypes, sys
cuda = ctypes.CDLL("libcuda.so.1")
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cuda.cuCtxSetCurrent(ctx) == 0
assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(256 << 20)) == 0
print("ready", flush=True)
sys.stdin.read()
"""
holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                          env=dict(os.environ, LOCAL_RANK="0"))
try:
    ready = holder.stdout.readline().strip() == "ready"
    expect("processes: the second process holds a context", ready, "it did not say ready")
    doc = run_json("inspect-processes.json", ["processes"]) if ready else None
    run("inspect-processes.txt", ["processes", "-v"])
    apps = smi("--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits")
    if doc is not None and apps is not None:
        smi_mib = {}
        for line in apps.strip().splitlines():
            pid, mib = (f.strip() for f in line.split(","))
            smi_mib[int(pid)] = smi_mib.get(int(pid), 0) + int(mib)
        ours = {p["pid"]: p for p in doc["processes"]}
        mine = ours.get(holder.pid)
        expect("processes: lists the second process", mine is not None, f"{holder.pid} not in {sorted(ours)}")
        expect("nvidia-smi lists the second process", holder.pid in smi_mib, apps)
        expect("processes: NVML gives the second process's memory", mine is None or
               mine["used_memory_bytes"] is not None, str(mine))
        if mine is not None and holder.pid in smi_mib and mine["used_memory_bytes"] is not None:
            expect("processes: its memory as nvidia-smi says (MiB, within 2)",
                   abs((mine["used_memory_bytes"] >> 20) - smi_mib[holder.pid]) <= 2,
                   f"{mine['used_memory_bytes'] >> 20} MiB against {smi_mib[holder.pid]} MiB")
            expect("processes: at least the 256 MiB it allocated", mine["used_memory_bytes"] >= 256 << 20,
                   mine["used_memory_bytes"])
            expect("processes: its name, command line and binding", mine["command_line"] is not None and
                   "python" in mine["command_line"] and mine["local_rank"] == 0 and mine["stray"] is None, str(mine))
        expect("processes: every pid nvidia-smi lists, and no other",
               set(smi_mib) == set(ours), f"nvidia-smi {sorted(smi_mib)}, processes {sorted(ours)}")
        expect("processes: lists no context of its own", not any(p["self"] for p in doc["processes"]))
finally:
    holder.stdin.close()
    holder.wait(timeout=60)

finish()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuctx::ProcessReport::json() validates against docs/schema/process-report.schema.json and says what
the process holds (report_dump.cpp sets it up); its text form says the same.

usage: check_report.py REPORT_DUMP FAKE_DRIVER SCHEMA_DIR
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, finish  # noqa: E402
import checks  # noqa: E402

dump, fake, schema_dir = sys.argv[1:4]
env = {k: v for k, v in os.environ.items() if not k.startswith("CUCTX_") and k != "CUDA_VISIBLE_DEVICES"}
env["CUCTX_DRIVER_PATH"] = fake
result = subprocess.run([dump], capture_output=True, text=True, env=env, timeout=60)



expect("report_dump exits 0", result.returncode == 0, result.stderr)
doc = json.loads(result.stdout)
errors = sorted(checks.validator(checks.load_store(schema_dir), "process-report.schema.json").iter_errors(doc),
                key=str)
expect("the report matches its schema", not errors, "\n".join(e.message for e in errors[:5]))
expect("two devices on the fake", len(doc["devices"]) == 2 and len(doc["peer_links"]) == 2, str(doc["devices"]))
created = [c for c in doc["contexts"] if c["kind"] == "created"]
expect("two created contexts", len(created) == 2, str(doc["contexts"]))
deferred = [c for c in created if c["destruction_deferred"]]
expect("one destruction deferred, with no handle", len(deferred) == 1 and deferred[0]["handles"] == 0, str(created))
worker = [t for t in doc["threads"] if len(t["uses"]) == 2]
expect("the worker: adopted one context, inside a guard on the other", len(worker) == 1 and worker[0]["depth"] == 2,
       str(doc["threads"]))
if worker and deferred:
    expect("the deferred context lists the worker", deferred[0]["threads"] == [worker[0]["tid"]], str(deferred))
    expect("the text names the worker", f"thread {worker[0]['tid']}" in result.stderr, result.stderr)
expect("live objects counted", doc["live_objects"]["contexts"] == 2, str(doc["live_objects"]))
expect("the doctor's findings included", {f["check"] for f in doc["findings"]} >= {"driver", "fork"})
finish()

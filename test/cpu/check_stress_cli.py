#!/usr/bin/env python3
"""cuctx-stress's command line: --help on stdout with exit 0, every bad value a usage error (exit 2)
that names the option, values in the --opt=value form, and a thread the system refuses reported as
an error of the run (exit 4), not as a violation and not as std::terminate.

usage: check_stress_cli.py STRESS   (CUCTX_DRIVER_PATH: the fake driver)
"""
import os
import resource
import subprocess
import tempfile
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, finish  # noqa: E402

stress = sys.argv[1]


def run(*args, **kwargs):
    return subprocess.run([stress, *args], capture_output=True, text=True, timeout=120, **kwargs)


r = run("--help")
expect("--help: exit 0, on stdout", r.returncode == 0 and r.stdout.startswith("usage: cuctx-stress") and
       r.stderr == "", f"{r.returncode}\n{r.stderr}")
expect("--help fits 80 columns", all(len(line) <= 80 for line in r.stdout.splitlines()), r.stdout)

for args, words in [(["--threads", "-1"], "--threads"), (["--threads", "0"], "--threads"),
                    (["--threads", "4294967297"], "--threads"), (["--seconds", "nan"], "--seconds"),
                    (["--seconds", "inf"], "--seconds"), (["--seconds", "-3"], "--seconds"),
                    (["--ops", "-1"], "--ops"), (["--ops", "0"], "--ops"), (["--seed", "-1"], "--seed"),
                    (["--contexts", "0"], "--contexts"), (["--inject-bug", "other"], "--inject-bug"),
                    (["--seconds", "1", "--ops", "5"], "--ops"), (["--threads"], "--threads"),
                    (["--bogus"], "--bogus"), (["extra"], "extra")]:
    r = run(*args)
    expect(f"{' '.join(args)}: usage error naming it", r.returncode == 2 and words in r.stderr and
           "usage: cuctx-stress" in r.stderr and r.stdout == "", f"{r.returncode}\n{r.stdout}{r.stderr}")

r = run("--threads=2", "--ops=20", "--seed=3", "--json")
expect("--opt=value: a run of 2 x 20 operations", r.returncode == 0 and '"threads": 2' in r.stdout and
       '"operations": 40' in r.stdout, f"{r.returncode}\n{r.stdout}{r.stderr}")

# --ptx takes what Module::fromFile takes: a regular file of bounded size (no read of a directory, a device
# that never ends or a FIFO that never opens).
fifo_dir = tempfile.mkdtemp()
fifo = os.path.join(fifo_dir, "kernels.fifo")
os.mkfifo(fifo)
for path in ["/tmp", "/dev/zero", fifo]:
    r = run("--threads", "1", "--ops", "5", "--ptx", path)
    expect(f"--ptx {path}: refused as not a regular file", r.returncode == 2 and "not a regular file" in r.stderr,
           f"{r.returncode}\n{r.stderr}")
os.unlink(fifo)
os.rmdir(fifo_dir)

with open("/dev/full", "w") as full:
    r = subprocess.run([stress, "--threads", "1", "--ops", "5", "--json"], stdout=full, stderr=subprocess.PIPE,
                       text=True, timeout=120)
expect("--json > /dev/full: not exit 0, says so", r.returncode == 4 and "cannot write the report" in r.stderr,
       f"{r.returncode}\n{r.stderr}")

if os.environ.get("CUCTX_TEST_SANITIZE", "none") != "thread":
    def huge_stacks():  # no thread stack of that size can be mapped: std::thread throws
        resource.setrlimit(resource.RLIMIT_STACK, (1 << 50, resource.RLIM_INFINITY))

    r = run("--threads", "2", "--ops", "10", preexec_fn=huge_stacks)
    expect("threads refused: exit 4, an error and no violation", r.returncode == 4 and
           "could not start worker thread 1 of 2" in r.stderr and "0 violations" in r.stdout,
           f"{r.returncode}\n{r.stdout}{r.stderr}")
else:
    print("skip   threads refused (ThreadSanitizer cannot run with a huge stack limit)")
finish()

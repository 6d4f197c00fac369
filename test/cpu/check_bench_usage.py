#!/usr/bin/env python3
"""Each benchmark names the flag or word it refuses, and stops cleanly when a measurement fails.

usage: check_bench_usage.py CONTEXTS SWITCHING MODULES GUARD_ANATOMY PIPELINE MULTI_GPU

A bad command line must end in exit status 2, before anything is measured, with a line on stderr
that names what was wrong (the flag, its value, the unknown word) and the usage message; a PTX path
that names no regular file, an empty one, one over 1 GiB or one of no module kind ends the same way, with
why instead of the usage message, and one with the benchmark's kernel is measured. Then
cuctx-bench-switching and cuctx-bench-modules run on the fake driver where the system refuses every
thread (a default thread stack no mmap can give, as check_inspect.py does): each must print the
single-thread rows it finished, say on stderr that a thread was refused and exit 1, not end in
std::terminate; ThreadSanitizer cannot run with that stack limit (CUCTX_TEST_SANITIZE=thread), so its
build skips that part. Last, cuctx-bench-guard-anatomy's stack, parts and work sides run briefly.
"""
import os
import re
import resource
import subprocess
import sys
import tempfile

contexts, switching, modules, anatomy, pipeline, multi_gpu = sys.argv[1:7]
refused_thread = os.environ.get("CUCTX_TEST_SANITIZE", "none") != "thread"
problems = []


def refused(program, args, *wanted, usage=True):
    try:
        run = subprocess.run([program] + args, capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        problems.append(f"{program.split('/')[-1]} {' '.join(args)}: still measuring after 20 s")
        return
    first = run.stderr.splitlines()[0] if run.stderr else ""
    missing = [w for w in wanted if w not in first]
    if run.returncode != 2 or missing or (usage and "usage:" not in run.stderr) or "measurement" in run.stdout:
        problems.append(f"{program.split('/')[-1]} {' '.join(args)}: exit {run.returncode}, "
                        f"stderr {run.stderr.strip()[:300]!r} (wanted {wanted} on its first line)")


refused(modules, ["--threads", "abc"], "cuctx-bench-modules:", "bad value 'abc' for --threads")
refused(modules, ["--threads", "1025"], "bad value '1025' for --threads", "1 to 1024")
refused(modules, ["--hits", "100", "--foo"], "unknown option --foo")
refused(modules, ["--threads"], "--threads needs a value")
refused(contexts, ["--iterations", "1"], "cuctx-bench-contexts:", "bad value '1' for --iterations")
refused(contexts, ["--rounds", "2"], "bad value '2' for --rounds")
refused(contexts, ["--threads", "100000"], "bad value '100000' for --threads")
refused(contexts, ["stray"], "unexpected word 'stray'")
refused(switching, ["--window-ms", "1"], "cuctx-bench-switching:", "bad value '1' for --window-ms")
refused(switching, ["--threads", "2000"], "bad value '2000' for --threads")
refused(switching, ["--iterations", "300"], "bad value '300' for --iterations")
refused(switching, ["--thread-rounds", "5"], "bad value '5' for --thread-rounds")
refused(anatomy, ["--bogus"], "cuctx-bench-guard-anatomy:", "unknown option --bogus")
refused(anatomy, ["threads"], "unexpected word 'threads'")
refused(anatomy, ["--sweep", "now"], "unexpected word 'now' after --sweep")
refused(anatomy, ["--threads", "5000"], "bad value '5000' for --threads")
# Each of --threads' numbers says which it is and what it must be, out of range or no number.
refused(anatomy, ["--threads", "4", "5"], "bad value '5' for --threads: the contexts must be 1, 2, 4 or 8")
refused(anatomy, ["--threads", "16", "two"], "bad value 'two' for --threads: the contexts must be 1, 2, 4 or 8")
refused(anatomy, ["--threads", "8", "wrok"], "bad value 'wrok' for --threads: the contexts must be 1, 2, 4 or 8 (the sides' word after the counts is 'code', 'stack' or 'work')")
refused(anatomy, ["--threads", "0"], "bad value '0' for --threads: the threads must be a whole number from 1 to 1024")
refused(anatomy, ["--threads", "16", "2", "5"], "bad value '5' for --threads: the rounds must be", "6 to 1000000")
refused(anatomy, ["--threads", "16", "2", "33", "cod"], "unexpected word 'cod'")
refused(anatomy, ["--threads", "16", "2", "1000001"], "bad value '1000001' for --threads", "6 to 1000000")
refused(anatomy, ["--threads", "16", "2", "33", "stack", "code"], "unexpected word 'code' after 'stack'")
refused(anatomy, ["--threads", "16", "2", "33", "works"], "only 'code', 'stack' or 'work' may follow")
# The sides' word may follow any number of the counts, the usage line's nesting: after it, nothing.
refused(anatomy, ["--threads", "2", "work", "6"], "unexpected word '6' after 'work'")
refused(anatomy, ["--threads", "stack", "2"], "unexpected word '2' after 'stack'")
# Counts that would overflow what they feed (2^stages in 32 bits, megabytes << 20, an image's bytes).
refused(pipeline, ["--stages", "32"], "cuctx-bench-pipeline:", "bad value '32' for --stages", "1 to 31")
refused(pipeline, ["--floats", "4611686018427387904"], "bad value '4611686018427387904' for --floats")
refused(multi_gpu, ["--megabytes", "17592186044416"], "cuctx-bench-multi-gpu:", "for --megabytes")
refused(modules, ["--launches", "9223372036854775807"], "bad value '9223372036854775807' for --launches")
# One PTX file: a second word would silently replace the first.
refused(modules, ["a.ptx", "b.ptx"], "unexpected word 'b.ptx'")
# A PTX path that the library would not read as a module file is the same usage error whatever it names (a
# directory was a failed measurement, exit 1, and so was a file of no module kind), with the library's reason
# (ModuleImage::fromFile's detail: its hint is for programs); no usage message, the command line's form was
# right. A FIFO with no writer must not block.
here = os.path.dirname(os.path.abspath(__file__))
missing_ptx = os.path.join(here, "no-such-kernel.ptx")
prefix = "cuctx-bench-modules: "
refused(modules, [missing_ptx], f"{prefix}cannot read '{missing_ptx}': no such file", usage=False)
refused(modules, [here], f"{prefix}cannot read '{here}': not a regular file (a directory)", usage=False)
with tempfile.TemporaryDirectory() as scratch:
    empty = os.path.join(scratch, "empty.ptx")
    open(empty, "w").close()
    refused(modules, [empty], f"{prefix}cannot use '{empty}' as a module image: the image is empty", usage=False)
    # Through a link, the same.
    link = os.path.join(scratch, "link.ptx")
    os.symlink(empty, link)
    refused(modules, [link], f"{prefix}cannot use '{link}' as a module image: the image is empty", usage=False)
    dangling = os.path.join(scratch, "dangling.ptx")
    os.symlink(os.path.join(scratch, "nothing"), dangling)
    refused(modules, [dangling], f"{prefix}cannot read '{dangling}': no such file", usage=False)
    text = os.path.join(scratch, "notes.txt")
    with open(text, "w") as f:
        f.write("not a kernel\n")
    refused(modules, [text], f"{prefix}cannot use '{text}' as a module image: the image is not PTX", usage=False)
    # Over Module::kMaxImageFileBytes (1 GiB), sparse: refused before a byte of it is read.
    huge = os.path.join(scratch, "huge.ptx")
    with open(huge, "wb") as f:
        f.truncate((1 << 30) + 1)
    refused(modules, [huge], f"{prefix}cannot read '{huge}': it is 1073741825 bytes, larger than", usage=False)
    fifo = os.path.join(scratch, "fifo.ptx")
    os.mkfifo(fifo)
    refused(modules, [fifo], f"{prefix}cannot read '{fifo}': not a regular file (a FIFO)", usage=False)

# A module file that the library reads is measured: the test's kernels hold the benchmark's "empty".
kernels = os.path.join(here, "..", "data", "kernels.ptx")
run = subprocess.run([modules, "--launches", "100", "--batch", "10", "--hits", "100", "--loads", "2", "--threads", "2",
                      "--max-image-kib", "1", kernels], capture_output=True, text=True, timeout=120)
if run.returncode != 0 or "empty-kernel launch" not in run.stdout:
    problems.append(f"cuctx-bench-modules {kernels}: exit {run.returncode}, stderr {run.stderr.strip()[:300]!r}")

if refused_thread:
    def huge_stacks():
        resource.setrlimit(resource.RLIMIT_STACK, (1 << 50, resource.RLIM_INFINITY))

    # Each benchmark with the last single-thread row it finishes before its first thread.
    for args, last_row in (([switching, "--iterations", "1000", "--rounds", "3", "--threads", "2", "--window-ms", "20",
                             "--thread-rounds", "6"], "nested three deep"),
                           ([modules, "--launches", "100", "--batch", "10", "--hits", "100", "--loads", "2", "--threads",
                             "2"], "image cache hit, 1 KiB PTX")):
        run = subprocess.run(args, capture_output=True, text=True, timeout=100, preexec_fn=huge_stacks)
        if (run.returncode != 1 or last_row not in run.stdout or "could not start thread" not in run.stderr
                or "terminate called" in run.stderr):
            problems.append(f"{args[0].split('/')[-1]}, refused thread: exit {run.returncode}, "
                            f"stdout {run.stdout[-300:]!r}, stderr {run.stderr.strip()[:300]!r}")

# The anatomy's multi-thread rows: a side's name, its median ratio to the raw side and its 95% interval
# (finite numbers: "nan" where rounds were lost is no row), and optionally the side it is also given to
# and that ratio with its interval.
interval = r"\d+\.\d+ \(\d+\.\d+-\d+\.\d+\)"
row = re.compile(rf"^  (\S.*?) +{interval} \d+\.\d+(?:, to (raw [a-z0-9 ]+?) {interval})?$")


def sides_of(run):
    """Each side's name and the side its second ratio is to (None where it has none)."""
    return [(m.group(1), m.group(2)) for m in map(row.match, run.stdout.splitlines()) if m]


def check_sides(args, wanted):
    """The anatomy run with `args` prints the sides `wanted`, in order (under ThreadSanitizer, exit 77
    and none)."""
    run = subprocess.run([anatomy, *args], capture_output=True, text=True, timeout=100)
    got = sides_of(run)
    if (run.returncode, got) != ((0, wanted) if refused_thread else (77, [])) or "left out" in run.stderr:
        problems.append(f"cuctx-bench-guard-anatomy {' '.join(args)}: exit {run.returncode}, sides {got}, "
                        f"stderr {run.stderr.strip()[:300]!r}")


# The anatomy's stack sides, the one multi-thread mode whose batches move their stacks: every side
# printed with a finite median ratio to the raw side, and the spread guard and calls also to the spread
# raw side. A ThreadSanitizer build diverts the guard's inline path, which the anatomy's copies need: it
# must say so and measure nothing (exit 77).
run = subprocess.run([anatomy, "--threads", "2", "2", "6", "stack"], capture_output=True, text=True, timeout=100)
sides = sides_of(run)
wanted_sides = [("raw", None), ("guard", None), ("calls only", None), ("raw spread", None),
                ("guard spread", "raw spread"), ("calls spread", "raw spread")]
if not refused_thread:
    if run.returncode != 77 or "diverted" not in run.stderr or sides:
        problems.append(f"cuctx-bench-guard-anatomy under ThreadSanitizer: exit {run.returncode}, "
                        f"stderr {run.stderr.strip()[:300]!r}")
elif run.returncode != 0 or sides != wanted_sides or "left out" in run.stderr:
    problems.append(f"cuctx-bench-guard-anatomy --threads 2 2 6 stack: exit {run.returncode}, "
                    f"stdout {run.stdout[-500:]!r}, stderr {run.stderr.strip()[:300]!r}")

# Its parts mode, where the copies of the guard live: every side printed, in order, with a finite median
# ratio to the raw side, and the two copies that load their pop function early also to the raw side that
# does (or, under ThreadSanitizer, exit 77 as above).
check_sides(["--threads", "2", "2", "6"],
            [(name, "raw pop early" if name in ("pop loaded early", "both moved") else None)
             for name in ["raw", "guard", "calls only", "copy", "-record", "-entry checks", "-exit checks",
                          "check after pop", "pop loaded early", "both moved", "raw pop early", "raw gap 2",
                          "raw gap 8", "raw inside 8", "raw unregistered"]])

# Its work mode: the raw side and the guard, then each amount of work on the raw side and the guard
# doing the same, the guard also to that raw side (or, under ThreadSanitizer, exit 77 as above).
wanted_work = [("raw", None), ("guard", None)]
for amount in ("inside 8", "inside 32", "inside 128", "both 8"):
    wanted_work += [("raw " + amount, None), ("guard " + amount, "raw " + amount)]
check_sides(["--threads", "2", "2", "6", "work"], wanted_work)

if problems:
    print("\n".join(problems))
    sys.exit(1)
print("every bad command line refused naming what was wrong" +
      ("; a refused thread ends in the rows so far and exit 1" if refused_thread else
       " (the refused thread skipped: ThreadSanitizer cannot run with a huge stack limit)"))

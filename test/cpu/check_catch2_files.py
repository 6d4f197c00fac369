#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that the Meson tests of a Catch2 program, one per source file, run every test case once.

usage: check_catch2_files.py PROGRAM TAG...

Each TAG (#test_NAME) is the file tag (Catch2's -#) that one Meson test selects. Fails when a test
case's file has no Meson test (a TEST_CASE in a header or in main.cpp), when two Meson tests select
one file tag (two files of one name), or when a TAG selects nothing.
"""
import collections
import re
import subprocess
import sys

program, tags = sys.argv[1], [t.lower() for t in sys.argv[2:]]
# '*' selects hidden test cases too.
listing = subprocess.run([program, "-#", "*", "--list-tags"], capture_output=True, text=True, timeout=50)
names = subprocess.run([program, "*", "--list-test-names-only"], capture_output=True, text=True, timeout=50)
if listing.returncode < 0 or names.returncode < 0:
    sys.exit(f"{program} failed: {listing.stderr}{names.stderr}")
counts = {}
for line in listing.stdout.splitlines():
    match = re.match(r"\s*(\d+)\s+(.*)", line)
    for tag in re.findall(r"\[(#[^\]]+)\]", match.group(2)) if match else []:
        counts[tag.lower()] = int(match.group(1))
cases = [line for line in names.stdout.splitlines() if line.strip()]

problems = []
twice = [t for t, n in collections.Counter(tags).items() if n > 1]
if twice:
    problems.append("selected by more than one Meson test (two files of one name?): " + " ".join(twice))
unrun = sorted(set(counts) - set(tags))
if unrun:
    problems.append("test cases that no Meson test runs, in: " + " ".join(f"{t} ({counts[t]})" for t in unrun))
empty = sorted(set(tags) - set(counts))
if empty:
    problems.append("Meson tests that select no test case: " + " ".join(empty))
if sum(counts.values()) != len(cases):
    problems.append(f"{len(cases)} test cases, but {sum(counts.values())} in the file tags")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"{len(cases)} test cases in {len(counts)} files, each file one Meson test")

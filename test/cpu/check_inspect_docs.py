#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuctx-inspect's man page and bash completion agree with its --help: the page has every command's
usage, and the completion offers every command and every option that --help lists.

usage: check_inspect_docs.py INSPECT MANPAGE COMPLETION
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, finish  # noqa: E402

inspect, manpage, completion = sys.argv[1:4]


def helped(*args):
    return subprocess.run([inspect, *args, "--help"], capture_output=True, text=True, timeout=60).stdout


general = helped()
commands = re.findall(r"^  ([a-z]+) ", general.split("Options of every command:")[0], re.MULTILINE)
expect("--help lists the commands", len(commands) >= 7 and "processes" in commands, general)
with open(manpage) as f:
    page = f.read()
with open(completion) as f:
    script = f.read()
expect("man page: a .TH header and NAME", page.startswith(".TH CUCTX-INSPECT 1") and ".SH NAME" in page)
for c in commands:
    text = helped(c)
    usage = text.splitlines()[0].replace("-", "\\-")
    expect(f"man page: {c}'s section and usage line", f".SH {c.upper()}" in page and usage in page, usage)
    expect(f"completion: offers {c}", re.search(rf'commands="[^"]*\b{c}\b', script) is not None)
    for option in sorted(set(re.findall(r"^\s+(--[a-z-]+|-[a-z])\b", text, re.MULTILINE))):
        expect(f"completion: offers {c} {option}", re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", script)
               is not None)
expect("completion: bash parses it", subprocess.run(["bash", "-n", completion]).returncode == 0)


def complete(*words):
    line = " ".join(words)
    script_text = (f'source "{completion}"; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _cuctx_inspect; '
                   'printf "%s\\n" "${COMPREPLY[@]}"')
    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(inspect)) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(["bash", "-c", script_text], capture_output=True, text=True, env=env, timeout=60).stdout.split()


expect("completion: 'pro' completes to processes", complete("cuctx-inspect", "pro") == ["processes"],
       str(complete("cuctx-inspect", "pro")))
expect("completion: processes --q completes to --query", complete("cuctx-inspect", "processes", "--q") == ["--query"],
       str(complete("cuctx-inspect", "processes", "--q")))
expect("completion: --query's fields come from --help-query",
       "used_memory" in complete("cuctx-inspect", "processes", "--query", "us"),
       str(complete("cuctx-inspect", "processes", "--query", "us")))
finish()

#!/usr/bin/env python3
"""Runs README.md's examples and checks them against what they show (issue 32).

Every line "$ CMD" inside a ``` block is run, in order, in one temporary directory laid out like
the source tree (build/tools/meshplan, topologies/, models/), so that a later example finds the
files an earlier one wrote, as a reader following the README would. Each must exit 0, or 2 when
its shown output starts "meshplan: error:" (an example of a refusal); an `mpirun` example is
skipped when mpirun is not installed.

The lines shown after a command are then checked against what it printed (stdout and stderr):
  - each shown line must appear in the output, in the order shown (the README may leave lines
    out, and "..." marks a cut explicitly);
  - lines compare after trailing spaces are stripped, "..." inside a line stands for any text
    there, and a path ending in /topologies or /models compares as
    /path/to/meshplan/topologies (or /models);
  - for commands that measure this machine (execute, calibrate, bench) the numbers of a line that
    carries a timing (a time unit, a rate, a percentage, "median", "measured", "predicted", ...)
    compare as "#", since timings differ from run to run; every other line of theirs compares
    exactly (execute's memory estimates and refusals), but for numbers in scientific notation
    (execute's check errors, whose "ok" still compares): the same inputs and operation order
    give the same bits on this machine, but libm's exp and log may round a last bit differently
    on another CPU, and an error such as 9.99e-08 sits on a decade's edge. Everything the
    planner and the simulator print compares exactly, so a change that alters a shown
    deterministic number fails here (issue 48).

Usage: check_readme_examples.py MESHPLAN_BINARY SOURCE_DIR [README]   (default SOURCE_DIR/README.md)
Exit status: 0 when every example ran as expected and matched, 1 otherwise (each failure says
which example and which shown line).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

NUMBER = re.compile(r"[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?")
PATH = re.compile(r"(?:/[^\s/]+)+/(topologies|models)\b")
MEASURING = ("execute", "calibrate", "bench")
# A line of a measuring command that carries this machine's timing (its numbers are masked).
TIMING = re.compile(r"\d\s*(ms|us|ns|s|min)\b|/s\b|%|\b(median|spread|measured|predicted|timed|"
                    r"warm-up|elapsed|residual|took|load average)\b", re.IGNORECASE)
TIMEOUT_S = 600


def examples(readme):
    """[(command, [shown lines])] of every "$ " line inside a ``` block, in order."""
    out, in_block, current = [], False, None
    with open(readme, encoding="utf-8") as f:
        for line in f.read().splitlines():
            if line.startswith("```"):
                in_block = not in_block
                current = None
                continue
            if not in_block:
                continue
            if line.startswith("$ "):
                current = (line[2:], [])
                out.append(current)
            elif current is not None:
                current[1].append(line)
    return out


def measuring(command):
    """True for a command whose output holds this machine's timings."""
    words = command.split()
    return len(words) > 1 and words[1] in MEASURING


SCIENTIFIC = re.compile(r"\b\d+(?:\.\d+)?[eE]([-+]?\d+)\b")


def normalize(line, numbers):
    line = PATH.sub(lambda m: "/path/to/meshplan/" + m.group(1), line.rstrip())
    if not numbers:
        return line
    if TIMING.search(line):
        return NUMBER.sub("#", line)
    return SCIENTIFIC.sub("#", line)


def check_shown(shown, output, numbers):
    """The first shown line not found in order in `output` ("" when all are), with the reason."""
    lines = [normalize(l, numbers) for l in output.splitlines()]
    at = 0
    for want in shown:
        if want.strip() in ("", "..."):
            continue
        w = normalize(want, numbers)
        # "..." inside a line stands for any text there (a value the README leaves out).
        pattern = re.compile(".*".join(re.escape(part) for part in w.split("...")) + "$")
        while at < len(lines) and not pattern.match(lines[at]):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return ""


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    binary, source = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    readme = os.path.abspath(argv[3]) if len(argv) == 4 else os.path.join(source, "README.md")
    work = tempfile.mkdtemp(prefix="meshplan_readme_")
    try:
        os.makedirs(os.path.join(work, "build", "tools"))
        os.symlink(binary, os.path.join(work, "build", "tools", "meshplan"))
        for d in ("topologies", "models"):
            os.symlink(os.path.join(source, d), os.path.join(work, d))
        failed, count = 0, 0
        for command, shown in examples(readme):
            if command.startswith("mpirun") and shutil.which("mpirun") is None:
                print(f"skip (no mpirun): {command}")
                continue
            count += 1
            want = 2 if shown and shown[0].startswith("meshplan: error:") else 0
            try:
                r = subprocess.run(["bash", "-c", command], cwd=work, stdin=subprocess.DEVNULL,
                                   capture_output=True, text=True, timeout=TIMEOUT_S)
                code, output = r.returncode, r.stdout + r.stderr
            except subprocess.TimeoutExpired:
                code, output = "timeout", ""
            missing = check_shown(shown, output, measuring(command)) if code == want else ""
            ok = code == want and not missing
            print(f"{'ok  ' if ok else 'FAIL'} exit {code} (want {want}): {command}")
            if code != want:
                print("---- its output (last 20 lines):")
                print("\n".join(output.splitlines()[-20:]))
                print("----")
            elif missing:
                print(f"     shown but not printed (in this order): {missing!r}")
                print("---- its output (first 30 lines):")
                print("\n".join(output.splitlines()[:30]))
                print("----")
            failed += 0 if ok else 1
        if count == 0:
            print("no examples found in " + readme)
            return 1
        print(f"{count} README examples run, {failed} failed")
        return 0 if failed == 0 else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""scripts/readme_figures.py [--write] [--root DIR] [--build DIR] — keep README.md's measured figures and sample
outputs equal to what the tool prints today.

Checked (or, with --write, rewritten in place):
  * the validation table of "How good it is": every source-group row's count, median, mean and
    max |error| and the **all** row, from `build/meshplan validate ../shared/validation/runs.csv
    --json`, and the "N of M published runs (P%)" sentence above it (skipped, saying so, when
    ../shared is absent);
  * every sample output: a ``` block whose first line is "$ build/meshplan ..." (continuation
    lines ending in '\\' included) is that command followed by its whole output, which is rerun
    and compared line by line.
Exit 0 when everything matches (or was rewritten), 1 when something is stale (listed), 2 on
bad usage. scripts/readme_figures.sh is the shell entry point; the ctest readme_figures runs the
check.
"""
import argparse
import json
import os
import re
import subprocess
import sys


BUILD = "build"


def run(root, cmd):
    """cmd from the repository root, with build/ meaning the build under test."""
    cmd = re.sub(r"(^|[\s;&|(])build/", lambda m: m.group(1) + BUILD + "/", cmd)
    return subprocess.run(["bash", "-c", cmd], cwd=root, capture_output=True, text=True,
                          timeout=120)


def fmt_pct(x, big_as_int=True):
    return f"{x:.0f}%" if big_as_int and x >= 100 else f"{x:.1f}%"


def validation(root, text, stale):
    runs = os.path.join(root, "..", "shared", "validation", "runs.csv")
    if not os.path.isfile(runs):
        print(f"readme_figures: {runs} absent: validation figures not checked")
        return text
    r = run(root, "build/meshplan validate ../shared/validation/runs.csv --json")
    if r.returncode != 0:
        stale.append(f"validate failed: {r.stderr.strip()[:200]}")
        return text
    s = json.loads(r.stdout)["summary"]
    groups = s.get("by_source_group", {})
    out = []
    for line in text.split("\n"):
        m = re.match(r"^\| (\*\*all\*\*|([a-z0-9_]+)[^|]*?) \| (\*\*)?\d+(\*\*)? \| .*", line)
        if m:
            cells = line.split(" | ")
            if m.group(1) == "**all**":
                g, bold = s, "**"
            elif m.group(2) in groups:
                g, bold = groups[m.group(2)], ""
            else:
                out.append(line)
                continue
            new = cells[:]
            new[1] = f"{bold}{g['n']}{bold}"
            new[2] = f"{bold}{fmt_pct(g['median_abs_error_pct'], False)}{bold}"
            new[3] = f"{bold}{fmt_pct(g['mean_abs_error_pct'], False)}{bold}"
            new[4] = fmt_pct(g["max_abs_error_pct"])
            newline = " | ".join(new)
            if newline != line:
                stale.append(f"validation row: {line}\n   now: {newline}")
            line = newline
        out.append(line)
    text = "\n".join(out)
    n, rows = s["n"], s.get("rows_in", s["n"])
    sentence = re.compile(r"predicts \*\*\d+ of \d+\*\* published runs\s+\(\d+\.\d%\)")
    want = f"predicts **{n} of {rows}** published runs ({100.0 * n / rows:.1f}%)"
    m = sentence.search(text)
    if m and m.group(0).replace("\n", " ") != want:
        stale.append(f"coverage: {m.group(0)!r}, now {want!r}")
        text = text[:m.start()] + want + text[m.end():]
    return text


def samples(root, text, stale):
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not (line.startswith("```") and i < len(lines) and lines[i].startswith("$ build/meshplan")):
            continue
        cmd_lines = []
        while i < len(lines):
            cmd_lines.append(lines[i])
            i += 1
            if not cmd_lines[-1].endswith("\\"):
                break
        end = i
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        cmd = " ".join(l.rstrip("\\").strip() for l in cmd_lines)[2:]
        r = run(root, cmd)
        got = r.stdout.rstrip("\n").split("\n")
        if r.returncode != 0:
            stale.append(f"sample command failed (exit {r.returncode}): {cmd}")
            got = lines[i:end]
        elif got != lines[i:end]:
            stale.append(f"sample output of `{cmd}` differs ({len(lines[i:end])} lines in README, "
                         f"{len(got)} printed)")
        out.extend(cmd_lines)
        out.extend(got)
        i = end
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help="rewrite README.md instead of checking")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--build", help="the build directory build/ stands for (default ROOT/build)")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    global BUILD
    BUILD = os.path.abspath(a.build) if a.build else os.path.join(root, "build")
    path = os.path.join(root, "README.md")
    if not os.access(os.path.join(BUILD, "meshplan"), os.X_OK):
        print("readme_figures: build/meshplan not built", file=sys.stderr)
        return 2
    text = open(path, encoding="utf-8").read()
    stale = []
    new = samples(root, validation(root, text, stale), stale)
    for s in stale:
        print("stale: " + s)
    if a.write:
        if new != text:
            open(path, "w", encoding="utf-8").write(new)
            print(f"readme_figures: rewrote {len(stale)} item(s) of README.md")
        return 0
    print(f"readme_figures: {'up to date' if not stale else str(len(stale)) + ' stale item(s); run scripts/readme_figures.sh --write'}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())

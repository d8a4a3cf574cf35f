#!/usr/bin/env python3
"""tests/parts_writers.py — every CLI writer shows every step-time and memory part.

    parts_writers.py <path-to-meshplan> <repo-root>

Reads the rows of MP_TIME_PARTS, MP_MEMORY_PARTS and MP_TIME_DETAILS from
include/meshplan/parts.h (the one list) and checks them against the outputs of predict (JSON
and text), trace (JSON and its text table, whose columns must add up to their steps: the
analytical one once lost ep_comm) and compare (JSON, CSV and text). Prints "ok - ..." or
"FAIL - ..." per check; exits 1 when any failed, 2 on bad usage.
"""
import json
import os
import re
import subprocess
import sys

if len(sys.argv) != 3:
    print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
    sys.exit(2)
MP, ROOT = sys.argv[1], sys.argv[2]
failed = 0


def check(name, cond, why=""):
    global failed
    if cond:
        print("ok - " + name)
    else:
        failed += 1
        print("FAIL - %s: %s" % (name, why))


def table(name):
    """The rows of X-macro `name` in parts.h: lists of the macro's arguments (strings unquoted)."""
    text = open(os.path.join(ROOT, "include/meshplan/parts.h")).read()
    block = re.search(r"#define %s\(X\)((?:.*\\\n)*.*)" % name, text).group(1)
    block = block.replace("\\\n", " ")
    rows = []
    for m in re.finditer(r"X\((.*?)\)\s*(?=X\(|$)", block.strip()):
        args = re.findall(r'"(?:[^"\\]|\\.)*"(?:\s*"(?:[^"\\]|\\.)*")*|MP_TIER\(\w+\)|[\w]+', m.group(1))
        rows.append([re.sub(r'"\s*"', "", a).strip('"') for a in args])
    assert rows, "no rows in " + name
    return rows


TIME = table("MP_TIME_PARTS")      # key, label, kind, group, tier, desc
MEMORY = table("MP_MEMORY_PARTS")  # key, label, kind, desc
DETAILS = table("MP_TIME_DETAILS")  # key, label, field, desc
STEP = [r for r in TIME if r[2] != "MP_TIME_KIND_BESIDE"]
BESIDE = [r for r in TIME if r[2] == "MP_TIME_KIND_BESIDE"]
COMM = [r for r in TIME if r[2] == "MP_TIME_KIND_COMM"]
WAIT = [r for r in TIME if r[2] == "MP_TIME_KIND_WAIT"]
check("parts.h tables read: %d time parts, %d memory parts" % (len(TIME), len(MEMORY)),
      len(TIME) >= 10 and len(MEMORY) >= 9 and any(r[0] == "ep_comm" for r in COMM), TIME)


def run(*args):
    p = subprocess.run([MP] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


H100 = ["--gpu", "h100-sxm5-80gb"]
DENSE = ["--model", "llama3-70b", "--gpus", "1024", "--plan", "tp=8,pp=4,mb=1,gb=256,seq=8192"]
MOE = ["--model", "mixtral-8x7b", "--gpus", "64", "--plan", "tp=2,pp=4,ep=8,gb=64,seq=4096"]
FSDP2 = ["--model", "mixtral-8x7b", "--gpus", "8", "--plan", "zero=3,ep=8,fsdp=2,gb=64,seq=4096"]

# --- predict ------------------------------------------------------------------------------
for label, job in (("dense", DENSE), ("MoE", MOE), ("FSDP2", FSDP2)):
    rc, out, err = run("predict", *H100, *job, "--json")
    d = json.loads(out) if rc == 0 else {}
    ts, mem = d.get("time_s", {}), d.get("memory_bytes", {})
    check("predict --json (%s): time_s has every time part" % label,
          rc == 0 and all(r[0] in ts for r in TIME), (rc, err, sorted(ts)))
    check("predict --json (%s): memory_bytes and each stage have every memory part" % label,
          all(r[0] in mem for r in MEMORY) and
          all(all(r[0] in s for r in MEMORY) for s in mem.get("per_stage", [None])), sorted(mem))
    check("predict --json (%s): the compute details beside time_s" % label,
          all(r[0] in d for r in DETAILS), sorted(d))
    check("predict --json (%s): the parts in the step add up to step_s" % label,
          abs(sum(ts.get(r[0], 0) for r in STEP) - d.get("step_s", -1)) <= 1e-6 * d.get("step_s", 1))
    rc, out, err = run("predict", *H100, *job)
    lines = out.splitlines()
    check("predict text (%s): a row per step part, key and label" % label,
          rc == 0 and all(any(l.startswith("  %-16s " % r[0]) and l.endswith(r[1]) for l in lines) for r in STEP),
          out)
    check("predict text (%s): the parts beside the step and every memory label" % label,
          all("(%s " % r[0] in out for r in BESIDE) and all(r[1] in out for r in MEMORY), out)

# --- trace -------------------------------------------------------------------------------
for label, job in (("dense", DENSE), ("MoE", MOE)):
    rc, out, err = run("trace", *H100, *job, "--json")
    d = json.loads(out) if rc == 0 else {}
    check("trace --json (%s): simulated and analytical time_s have every time part" % label,
          rc == 0 and all(r[0] in d[w]["time_s"] for w in ("simulated", "analytical") for r in TIME), (rc, err))
    rc, out, err = run("trace", *H100, *job)
    rows = {}
    for l in out.splitlines():
        m = re.match(r"  (.+?)\s+(-?\d+\.\d+)\s+(-?\d+\.\d+)$", l)
        if m:
            rows[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    check("trace text (%s): a row per time part and the step" % label,
          rc == 0 and all(r[1] in rows for r in TIME) and "step" in rows, (sorted(rows), out))
    for col, name in ((0, "simulated"), (1, "analytical")):
        total = sum(rows.get(r[1], (0, 0))[col] for r in STEP)
        step = rows.get("step", (-1, -1))[col]
        # each row is rounded to 1e-4 s
        check("trace text (%s): the %s column adds up to its step (%.4f vs %.4f)" % (label, name, total, step),
              abs(total - step) <= 0.5e-4 * (len(STEP) + 1), out)
    if label == "MoE":
        check("trace text (MoE): the analytical column has the EP all-to-all",
              rows.get("EP communication", (0, 0))[1] > 0, out)

# --- compare -----------------------------------------------------------------------------
CL = ["--cluster", "dgx-h100", "--cluster", "dgx-a100"]
job = [a for a in MOE]
rc, out, err = run("compare", *job, *CL, "--json")
d = json.loads(out) if rc == 0 else {"rows": []}
check("compare --json: exposed_comm_s has every communication part, a KEY_s per wait",
      rc == 0 and all(set(x["exposed_comm_s"]) == {r[3] for r in COMM} and
                      all(r[0] + "_s" in x for r in WAIT) for x in d["rows"]) and d["rows"], (rc, err, out[:400]))
rc, out, err = run("compare", *job, *CL, "--csv")
head = out.splitlines()[0].split(",") if rc == 0 and out else []
want = [r[0].replace("_comm", "") + "_s" for r in COMM + WAIT]
check("compare --csv: a column per communication part and wait", all(c in head for c in want), (head, want))
rc, out, err = run("compare", *job, *CL)
check("compare text: the header names every communication part and wait",
      rc == 0 and all(" %s" % r[3] in out.splitlines()[1] for r in COMM) and
      all(r[0] in out.splitlines()[1] for r in WAIT), out)

print("%d failed" % failed)
sys.exit(1 if failed else 0)

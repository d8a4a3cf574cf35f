#!/usr/bin/env python3
"""Regenerate the sensitivity tables of docs/islands.md Sec. 8 (case C7, INTELLECT-1).

Usage: python3 scripts/c7_sensitivity.py [path/to/meshplan]   (default build/meshplan)

Each row edits every WAN entry of the example files the same way and predicts the C7 plan:
  - packet loss: loss_frac = p on every path;
  - port rate: link_bw_Bps = rate / 8 with efficiency_frac = 1 on every path (the rate the report
    saw, 0.5-4 Gb/s, taken as what a flow can reach), latencies and windows unchanged.
Sensitivity, not validation: no loss or per-path rate of INTELLECT-1's paths is published.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MESHPLAN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "meshplan")
PLAN = ("zero=3,fsdp=2,mb=1,gb=1792,seq=8192,recompute=full,doc_len=1032,attn_kernel=flex,"
        "sync=diloco,inner_steps=100,compress=int8,buckets=44,transport=rendezvous,ring=tsp")
FILES = ["intellect1-us.json", "intellect1-transatlantic.json", "intellect1-continents.json"]


def predict(name, edit, ring="tsp"):
    with open(os.path.join(ROOT, "examples", "clusters", name)) as f:
        cluster = json.load(f)
    for w in cluster["wan"]:
        edit(w)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as t:
        json.dump(cluster, t)
    try:
        out = subprocess.run([MESHPLAN, "predict", "--model", "intellect-1", "--cluster", t.name,
                              "--plan", PLAN.replace("ring=tsp", "ring=" + ring), "--json"],
                             capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(t.name)
    j = json.loads(out)
    return "{:,.0f} s, {:.1f}%".format(j["sync"]["time_s"], 100 * j["compute_util"])


def main():
    print("| loss p | US only | US + Europe | three continents |\n|---|---|---|---|")
    for p in (0, 1e-6, 1e-5, 3e-5, 1e-4):
        row = [predict(n, lambda w, p=p: w.update(loss_frac=p)) for n in FILES]
        print("| {:g} | {} |".format(p, " | ".join(row)))
    print("\n| port rate | US only | US + Europe | three continents | three continents, ring=bottleneck |")
    print("|---|---|---|---|---|")
    for g in (0.5, 1, 2, 4):
        edit = lambda w, g=g: w.update(link_bw_Bps=g * 1e9 / 8, efficiency_frac=1.0)
        row = [predict(n, edit) for n in FILES] + [predict(FILES[2], edit, "bottleneck")]
        print("| {:g} Gb/s | {} |".format(g, " | ".join(row)))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench/infer_group_medians.py - per-source-group medians of |error| from
`meshplan validate <infer_runs.csv> --json`, split into throughput rows
(output_tokens_per_s, requests_per_s) and latency rows (ttft/tpot/e2e/...),
as issue 20's must-show counts them ("median |error| <= 15% on throughput rows
(per source group too) and <= 20% on latency rows").

Usage: bench/infer_group_medians.py VALIDATE_JSON [--within 15]
       meshplan validate infer_runs.csv --json | bench/infer_group_medians.py -
Prints one line per group and kind: rows, median |error| %, rows within the
threshold, and how many would have to be within it for the median to reach it.
"""
import json
import sys

THROUGHPUT = ("output_tokens_per_s", "requests_per_s")


def median(xs):
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return float("nan")
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def kind_of(metric):
    if metric in THROUGHPUT:
        return "throughput"
    if metric.startswith(("ttft", "tpot", "itl", "e2e", "latency")):
        return "latency"
    return "other"


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    within = 15.0
    if "--within" in argv:
        within = float(argv[argv.index("--within") + 1])
    src = sys.stdin if argv[1] == "-" else open(argv[1])
    rows = json.load(src)["rows"]
    groups = {}
    for r in rows:
        if r.get("error_pct") is None:
            continue
        k = kind_of(r["metric"])
        e = abs(float(r["error_pct"]))
        groups.setdefault((r["source_group"], k), []).append(e)
        groups.setdefault(("ALL", k), []).append(e)
    print("%-30s %-10s %5s %8s %7s %7s" % ("group", "kind", "rows", "median%", "within", "needed"))  # needed: within-threshold rows that make the median reach it for sure
    for (g, k) in sorted(groups, key=lambda t: (t[0] == "ALL", t[0], t[1])):
        es = groups[(g, k)]
        n_in = sum(1 for e in es if e <= within)
        print("%-30s %-10s %5d %8.2f %7d %7d" % (g, k, len(es), median(es), n_in, len(es) // 2 + 1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

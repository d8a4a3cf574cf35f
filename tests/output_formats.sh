#!/usr/bin/env bash
# tests/output_formats.sh — the output conventions: predict --format markdown (a table to paste,
# the MFU convention named), --csv on predict, run, trace and validate (parsed with Python's csv;
# predict's plan pastes back into --plan and gives the same answer), readable numbers in text,
# and the refusals (an unknown format, --json with --csv).
#
#   output_formats.sh <path-to-meshplan> <repo-root>
# Prints "ok - ..." / "FAIL - ..." per check, then "N passed, M failed".
set -u
MP=$1
ROOT=$2
TMP=$(mktemp -d "${TMPDIR:-/tmp}/meshplan-fmt.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
PASSED=0
FAILED=0
# check NAME COMMAND...: the command (a shell snippet) must succeed.
check() {
    local name=$1
    shift
    if (eval "$*") >"$TMP/log" 2>&1; then
        PASSED=$((PASSED + 1))
        echo "ok - $name"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL - $name"
        sed 's/^/    /' "$TMP/log" | head -20
    fi
}
JOB="--model llama3-70b --gpu h100-sxm5-80gb --gpus 64 --plan tp=8,pp=2,gb=128,zero=1,recompute=selective"

check "predict --format markdown: a Markdown table naming the MFU convention" \
    "$MP predict $JOB --format markdown > $TMP/md && grep -q '^| meshplan predict | llama3-70b on 64 x h100-sxm5-80gb |$' $TMP/md &&
     grep -q '^| --- | --- |$' $TMP/md && grep -q 'MFU = model FLOPs' $TMP/md && grep -q '^| stage 1 |' $TMP/md &&
     ! grep -v '^|' $TMP/md | grep -q ."
check "predict --csv: one row whose numbers equal predict --json's" \
    "$MP predict $JOB --csv > $TMP/p.csv && $MP predict $JOB --json > $TMP/p.json && python3 -c '
import csv, json, sys
rows = list(csv.DictReader(open(\"$TMP/p.csv\")))
j = json.load(open(\"$TMP/p.json\"))
assert len(rows) == 1, rows
r = rows[0]
for k in (\"step_s\", \"tokens_per_s\", \"mfu\", \"hfu\"):
    assert abs(float(r[k]) - j[k]) <= 1e-7 * abs(j[k]), (k, r[k], j[k])  # JSON keeps 8 digits
assert abs(float(r[\"memory_total_bytes\"]) - j[\"memory_bytes\"][\"total\"]) <= 1, r
assert abs(float(r[\"time_pp_bubble_s\"]) - j[\"time_s\"][\"pp_bubble\"]) <= 1e-7, r
assert r[\"plan\"] == j[\"plan\"] and r[\"bottleneck\"] == j[\"bottleneck\"]
open(\"$TMP/plan\", \"w\").write(r[\"plan\"])
'"
check "predict --csv: the plan column pastes back into --plan (same tokens/s)" \
    "$MP predict --model llama3-70b --gpu h100-sxm5-80gb --gpus 64 --plan \"\$(cat $TMP/plan)\" --json > $TMP/p2.json &&
     python3 -c 'import json; a = json.load(open(\"$TMP/p.json\")); b = json.load(open(\"$TMP/p2.json\")); assert a[\"tokens_per_s\"] == b[\"tokens_per_s\"], (a[\"tokens_per_s\"], b[\"tokens_per_s\"])'"
check "predict --format csv is --csv" "$MP predict $JOB --format csv | cmp - $TMP/p.csv"
check "predict text: readable throughput and the MFU convention" \
    "$MP predict $JOB > $TMP/t && grep -qE '^  tokens/s +[0-9.]+ k tok/s$' $TMP/t && grep -q 'MFU = model FLOPs (3 x forward' $TMP/t"
check "run --csv: key,value rows, the keys of --json" \
    "$MP run $JOB --tokens 1e11 --csv > $TMP/r.csv && $MP run $JOB --tokens 1e11 --json > $TMP/r.json && python3 -c '
import csv, json
rows = {r[\"key\"]: r[\"value\"] for r in csv.DictReader(open(\"$TMP/r.csv\"))}
j = json.load(open(\"$TMP/r.json\"))
assert rows[\"model\"] == \"llama3-70b\" and rows[\"plan\"] == j[\"plan\"], rows.get(\"plan\")
flat = {}
def walk(p, v):
    if isinstance(v, dict): [walk(p + (\".\" if p else \"\") + k, x) for k, x in v.items()]
    elif isinstance(v, list): [walk(p + (\".\" if p else \"\") + str(i), x) for i, x in enumerate(v)]
    else: flat[p] = v
walk(\"\", j)
assert set(flat) == set(rows), set(flat) ^ set(rows)
'"
check "trace --csv: the simulated and analytical step" \
    "$MP trace $JOB --csv > $TMP/tr.csv && python3 -c '
import csv
rows = {r[\"key\"]: r[\"value\"] for r in csv.DictReader(open(\"$TMP/tr.csv\"))}
assert float(rows[\"simulated.step_s\"]) > 0 and float(rows[\"analytical.step_s\"]) > 0, rows
'"
check "validate --csv: one row per predicted metric" \
    "$MP validate $ROOT/tests/data/torchtitan_h100_2412.csv --csv > $TMP/v.csv && python3 -c '
import csv
rows = list(csv.DictReader(open(\"$TMP/v.csv\")))
assert len(rows) >= 18 and all(r[\"metric\"] for r in rows), len(rows)
'"
check "predict --format pdf is refused" \
    "$MP predict $JOB --format pdf 2> $TMP/e; test \$? -eq 2 && grep -q 'format = \"pdf\": expected text, json, markdown or csv' $TMP/e"
check "--json with --csv is refused (predict, run, trace, validate)" \
    "for c in \"predict $JOB\" \"run $JOB --tokens 1e9\" \"trace $JOB\" \"validate $ROOT/tests/data/torchtitan_h100_2412.csv\"; do
         $MP \$c --json --csv 2> $TMP/e; rc=\$?; test \$rc -eq 2 || exit 1; grep -q 'exclude each other' $TMP/e || exit 1; done"
check "catalog gpus --csv: one row per GPU, bytes in full" \
    "$MP catalog gpus --csv > $TMP/g.csv && $MP catalog gpus --json > $TMP/g.json && python3 -c '
import csv, json
rows = list(csv.DictReader(open(\"$TMP/g.csv\")))
j = json.load(open(\"$TMP/g.json\"))[\"gpus\"]
assert len(rows) == len(j) and rows[0][\"key\"] == j[0][\"key\"], (len(rows), len(j))
assert int(rows[0][\"memory_bytes\"]) == j[0][\"memory_bytes\"], rows[0][\"memory_bytes\"]
'"
check "catalog --csv without a kind is refused" \
    "$MP catalog --csv 2> $TMP/e; test \$? -eq 2 && grep -q 'name it' $TMP/e"
check "islands-scale --csv: key,value rows of its --json" \
    "$MP islands-scale --model llama3-70b --cluster three-continents --plan tp=8,zero=1,mb=1,gb=2048,seq=8192,recompute=full,sync=hsdp --island-gpus 64:128 --csv > $TMP/i.csv &&
     head -1 $TMP/i.csv | grep -qx 'key,value' && grep -q '^rows.1.' $TMP/i.csv"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]

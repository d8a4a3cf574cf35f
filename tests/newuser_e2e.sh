#!/usr/bin/env bash
# tests/newuser_e2e.sh — the gaps a new user found (issue 15's closing note), each fixed and
# checked end to end here: exit code, and the message (stderr) or the output it gives.
#
#   newuser_e2e.sh <path-to-meshplan> <repo-root>
#
# Prints "ok - WHAT" or "FAIL - WHAT: why" per check, then "N passed, M failed"; exits 1 on any
# failure.
set -u
MP=${1:?meshplan}
ROOT=${2:?repo root}
cd "$ROOT" || exit 2
TMP=$(mktemp -d "${TMPDIR:-/tmp}/meshplan-newuser.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
PASSED=0
FAILED=0
H=h100-sxm5-80gb

run() { "$MP" "$@" >"$TMP/out" 2>"$TMP/err"; RC=$?; }
# check WHAT WANT_RC STREAM SUBSTRING...: every substring in out or err
check() {
    local what=$1 want=$2 stream=$3
    shift 3
    local why=""
    [ "$RC" = "$want" ] || why="exit $RC, expected $want"
    for s in "$@"; do
        grep -qF -- "$s" "$TMP/$stream" || why="${why:+$why; }$stream lacks \"$s\""
    done
    if [ -z "$why" ]; then
        echo "ok - $what"
        PASSED=$((PASSED + 1))
    else
        echo "FAIL - $what: $why"
        sed 's/^/#   /' "$TMP/err" | head -5
        FAILED=$((FAILED + 1))
    fi
}
# absent WHAT STREAM SUBSTRING: the substring is not in the stream
absent() {
    if grep -qF -- "$3" "$TMP/$2"; then
        echo "FAIL - $1: $2 has \"$3\""
        FAILED=$((FAILED + 1))
    else
        echo "ok - $1"
        PASSED=$((PASSED + 1))
    fi
}

# --- --cluster in search, scale and trace, as predict takes it --------------------------------
run search --model llama2-7b --cluster dgx-h100 --gpus 8 --gb 16 --seq 4096 --top 2 --json
check "search --cluster NODE --gpus N" 0 out '"top"' '"plan"'
run search --model llama2-7b --cluster examples/clusters/dgx-h100-roce100.json --gb 16 --top 1
check "search --cluster FILE takes the file's GPU count" 0 out "search: llama2-7b" "top 1 of"
run search --model llama2-7b --cluster three-continents --gb 16
check "search --cluster ISLANDS: one cluster only, said so" 2 err 'cluster = "three-continents" is an islands description: search covers one cluster'
run search --model llama2-7b --cluster dgx-h100 --gb 16
check "search --cluster NODE without --gpus" 2 err 'is a node type: --gpus is required'
run search --model llama2-7b --gb 16 --gpus 8
check "search without --gpu or --cluster" 2 err "search: --gpu (or --cluster) is required"
run search --model llama2-7b --gpu $H --gb 16
check "search without --gpus" 2 err "search: --gpus (or --cluster with a GPU count) is required"
run search --model llama2-7b --cluster dgx-h100 --gpus 8 --gb 16 --scale-out ib-ndr-400
check "search --cluster with --scale-out" 2 err "give them in the --cluster file instead"
run scale --model llama3-8b --cluster dgx-h100 --gpus 8:16 --gb 64 --json
check "scale --cluster" 0 out '"gpus"'
run trace --model llama3-8b --cluster dgx-h100 --gpus 8 --plan tp=8,gb=8 --json
check "trace --cluster NODE" 0 out '"simulated"' '"difference_pct"'
run trace --model llama3-8b --cluster examples/clusters/dgx-h100-roce100.json --plan tp=8,gb=64 --json
check "trace --cluster FILE" 0 out '"simulated"' '"difference_pct"'
run trace --model llama3-8b --cluster two-islands-wan100 --gpus 8 --plan tp=8,gb=8,sync=diloco
check "trace on one cluster refuses island keys" 2 err "plan.sync"

# --- the help says what the command takes ------------------------------------------------------
run search --help
check "search --help: plan keys come with --fix" 0 out 'plan keys: --fix "key=value,...'
absent "search --help does not offer --plan" out 'plan keys: --plan'
absent "search --help lists no islands keys" out 'plan keys across islands'
check "search --help: --cluster" 0 out "--cluster NODE|PRESET|FILE"
check "search --help: --gb says it is required" 0 out "--gb B" "required unless --fix or --config gives gb"
run scale --help
check "scale --help: --gb required, --cluster" 0 out "required unless --fix or --config gives gb" "--cluster"
run trace --help
check "trace --help: --cluster, plan keys with --plan" 0 out "--cluster NODE|PRESET|FILE" 'plan keys: --plan'
absent "trace --help lists no islands keys" out 'plan keys across islands'
run predict --help
check "predict --help still lists the islands keys" 0 out 'plan keys across islands'
run search --model llama2-7b --gpu $H --gpus 8
check "search without --gb" 2 err "--gb is required"

# --- collective --sizes below one element ------------------------------------------------------
run collective --gpu $H --gpus 16 --sizes 0:8
check "collective --sizes 0:8 is refused, with the smallest valid start" 2 err \
    'sizes = "0:8": the first size, 0 B, holds no float element (4 B): expected sizes of at least 4 B (--sizes 4:8)'
run collective --gpu $H --gpus 16 --sizes 4:8 --type int64
check "collective --sizes below an int64" 2 err 'holds no int64 element (8 B)' '(--sizes 8:8)'
run collective --gpu $H --gpus 16 --sizes 4:8
check "collective --sizes 4:8: every row moves an element" 0 out "float"
if awk '!/^#/ && NF > 2 && $2 == 0 { bad = 1 } END { exit bad }' "$TMP/out"; then
    echo "ok - collective prints no count-0 row"; PASSED=$((PASSED + 1))
else
    echo "FAIL - collective prints a count-0 row"; FAILED=$((FAILED + 1))
fi

# --- integers: the message gives the valid range -----------------------------------------------
run predict --model llama3-8b --gpu $H --gpus 8 --plan gb=1e18
check "plan gb=1e18 names the range" 2 err 'plan.gb = "1e18": expected an integer in [1, 1073741824], in digits'
run search --model llama3-8b --gpu $H --gpus 8 --gb 1e18
check "--gb 1e18 names the range" 2 err 'gb = "1e18": expected an integer in [1, 1073741824], in digits'
run predict --model llama3-8b --gpu $H --gpus 8x --plan gb=8
check "--gpus 8x names the range" 2 err 'gpus = "8x": expected an integer in [1, 16777216], in digits'

# --- trace --max-trace-bytes below one micro-batch ---------------------------------------------
run trace --model llama3-8b --gpu $H --gpus 8 --plan tp=8,gb=8 --max-trace-bytes 1 -o "$TMP/t.json"
check "trace --max-trace-bytes 1: one clear sentence" 2 err \
    "over --max-trace-bytes 1: no global batch fits under it (one micro-batch per DP rank, gb=1, takes 14560 bytes): raise --max-trace-bytes; nothing was simulated or written"
[ -e "$TMP/t.json" ] && { echo "FAIL - trace left a file"; FAILED=$((FAILED + 1)); }
run trace --model llama3-8b --gpu $H --gpus 8 --plan tp=8,gb=64 --max-trace-bytes 100000 -o "$TMP/t.json"
check "trace over the cap: the gb that fits, or a larger cap" 2 err \
    "it needs a global batch of gb=6 or less (likely less: that is a lower bound), or a larger --max-trace-bytes; nothing was simulated"

# --- an unknown GPU beside --cluster gets the nearest names, as --gpu alone does -----------------
run predict --model llama3-8b --cluster dgx-h100 --gpu h100-sxm5-80g --gpus 8 --plan tp=8,gb=8
check "--cluster with a mistyped --gpu suggests the key" 2 err 'gpu = "h100-sxm5-80g": not in the catalog' "did you mean h100-sxm5-80gb"
run predict --model llama3-8b --gpu h100-sxm5-80g --gpus 8 --plan tp=8,gb=8
check "--gpu alone still suggests it" 2 err "did you mean h100-sxm5-80gb"

# --- conflicting options: -o and its alias --output (w4 new-user pass) ---------------------------
run trace --model llama3-8b --gpu $H --gpus 8 --plan tp=8,gb=8 -o "$TMP/a.json" --output "$TMP/b.json"
check "trace -o A --output B is refused, naming both" 2 err \
    "trace: -o \"$TMP/a.json\" and --output \"$TMP/b.json\" are the same option: expected one output file"
[ -e "$TMP/a.json" ] || [ -e "$TMP/b.json" ] && { echo "FAIL - trace wrote a file"; FAILED=$((FAILED + 1)); }
run plot memory --model llama3-8b --gpu $H --gpus 8 --plan tp=8,gb=8 -o "$TMP/a.svg" --output "$TMP/b.svg"
check "plot -o A --output B is refused" 2 err "plot: -o \"$TMP/a.svg\" and --output \"$TMP/b.svg\" are the same option"
[ -s "$TMP/out" ] && { echo "FAIL - plot printed on stdout"; FAILED=$((FAILED + 1)); }
run plot memory --model llama3-8b --gpu $H --gpus 8 --plan tp=8,gb=8 --output "$TMP/b.svg"
check "plot --output alone still works" 0 err "wrote $TMP/b.svg"

# --- serve --trace: a path it cannot write is refused before the simulation prints anything -----
run serve --model llama3-8b --gpu $H --plan tp=1 --rate 10/s --requests 20 --trace "$TMP"
check "serve --trace DIR is refused up front" 2 err "serve: trace = \"$TMP\": Is a directory: expected a file path it can write"
[ -s "$TMP/out" ] && { echo "FAIL - serve printed a report before refusing --trace"; FAILED=$((FAILED + 1)); }
run serve --model llama3-8b --gpu $H --plan tp=1 --rate 10/s --requests 20 --frontier
check "serve --frontier without --slo is refused up front" 2 err "serve: --frontier needs --slo"
[ -s "$TMP/out" ] && { echo "FAIL - serve printed a report before refusing --frontier"; FAILED=$((FAILED + 1)); }
run serve --model llama3-70b --gpu $H --plan tp=1 --rate 10/s --requests 20 --trace "$TMP/none.json"
check "serve: a plan that does not fit is an answer" 0 out "llama3-70b"
[ -e "$TMP/none.json" ] && { echo "FAIL - serve left an empty trace for a plan that does not fit"; FAILED=$((FAILED + 1)); }
run serve --model llama3-8b --gpu $H --plan tp=1 --rate 10/s --requests 20 --trace "$TMP/s.json"
check "serve --trace FILE still writes it" 0 out "llama3-8b"
python3 -m json.tool "$TMP/s.json" >/dev/null 2>&1 || { echo "FAIL - serve's trace does not parse"; FAILED=$((FAILED + 1)); }

# --- search --emit writes a config instead of the report: with --json or --csv it is refused ----
run search --model llama3-8b --gpu $H --gpus 8 --gb 64 --emit megatron --json
check "search --emit with --json is refused" 2 err "search: --emit megatron writes the best plan's launch config instead of the report"
[ -s "$TMP/out" ] && { echo "FAIL - search --emit --json printed"; FAILED=$((FAILED + 1)); }
run search --model llama3-8b --gpu $H --gpus 8 --gb 64 --emit torchtitan --csv
check "search --emit with --csv is refused" 2 err "expected --emit, or --json / --csv, not both"

# --- sweep -o: a path it cannot write is refused before any task runs (was: the whole sweep ran,
# left DIR.ckpt beside the directory, then exit 1 "cannot write") ---------------------------------
mkdir "$TMP/outdir"
run sweep examples/sweeps/small.json -o "$TMP/outdir" --threads 1
check "sweep -o DIR is refused up front" 2 err "sweep: -o \"$TMP/outdir\": a directory: expected a file name"
[ -e "$TMP/outdir.ckpt" ] && { echo "FAIL - sweep left a checkpoint beside the directory"; FAILED=$((FAILED + 1)); }
run sweep examples/sweeps/small.json -o "$TMP/no-such-dir/r.csv" --threads 1
check "sweep -o in a missing directory is refused up front" 2 err "cannot be written (No such file or directory)"
run calibrate tests/data/calibrate/bad_truncated_nccl.txt -o "$TMP/outdir"
check "calibrate -o DIR is refused before the summary" 2 err "calibrate: -o \"$TMP/outdir\": a directory"
[ -s "$TMP/out" ] && { echo "FAIL - calibrate printed its summary before refusing -o"; FAILED=$((FAILED + 1)); }

# --- run: a rental price beside capital per GPU is a conflict (was: the price silently ignored) -
run run --model llama3-8b --gpu $H --gpus 8 --plan gb=8 --tokens 1e9 --capex-per-gpu 30000 --price-gpu-hour 2
check "run --capex-per-gpu with --price-gpu-hour is refused" 2 err "run: --price-gpu-hour 2 (rental) and --capex-per-gpu (capital + energy) are two ways to pay"
run run --model llama3-8b --gpu $H --gpus 8 --plan gb=8 --tokens 1e9 --capex-per-gpu 30000
check "run --capex-per-gpu alone still prices capital + energy" 0 out "capital"

# --- docs/cli.md quotes the code: every line of its C blocks is a line of src/cli/ --------------
if python3 - "$ROOT" <<'PY'
import glob, re, sys
root = sys.argv[1]
doc = open(root + "/docs/cli.md", encoding="utf-8").read()
src = set(l.strip() for f in glob.glob(root + "/src/cli/*.[ch]") for l in open(f, encoding="utf-8"))
bad = [t for blk in re.findall(r"```c\n(.*?)```", doc, re.S) for t in
       (re.sub(r"\s*/\*.*\*/\s*$", "", l).strip() for l in blk.split("\n")) if t and t != "..." and t not in src]
for t in bad:
    print("#   not in src/cli: " + t)
sys.exit(1 if bad else 0)
PY
then echo "ok - docs/cli.md's examples are lines of src/cli"; PASSED=$((PASSED + 1))
else echo "FAIL - docs/cli.md quotes code that src/cli does not have"; FAILED=$((FAILED + 1)); fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]

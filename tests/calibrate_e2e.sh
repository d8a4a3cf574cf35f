#!/usr/bin/env bash
# tests/calibrate_e2e.sh — end-to-end checks of `meshplan calibrate`, `doctor` and --calibration on
# the published logs in ../shared/configs/logs and the bad-input logs in tests/data/calibrate.
#
#   calibrate_e2e.sh <path-to-meshplan> <repo-root>
#
# One line per check ("ok - ..." or "FAIL - ..." with the output), then "N passed, M failed";
# exits 1 when a check failed, 2 on bad usage.
set -u
if [ $# -ne 2 ] || [ ! -x "$1" ]; then
    echo "usage: $0 <path-to-meshplan> <repo-root>" >&2
    exit 2
fi
MP=$1
ROOT=$2
LOGS=$ROOT/../shared/configs/logs
DATA=$ROOT/tests/data/calibrate
TMP=$(mktemp -d "${TMPDIR:-/tmp}/meshplan-cal.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
PASSED=0
FAILED=0
OUT=$TMP/stdout
ERR=$TMP/stderr

run() {
    CMD="meshplan $*"
    "$MP" "$@" >"$OUT" 2>"$ERR"
    RC=$?
}
ok() { PASSED=$((PASSED + 1)); echo "ok - $1"; }
bad() {
    FAILED=$((FAILED + 1))
    echo "FAIL - $1 ($CMD: exit $RC)"
    sed 's/^/    /' "$OUT" "$ERR" | head -20
}
expect() { # expect RC DESCRIPTION [grep-pattern-on-stdout+stderr]
    if [ "$RC" -ne "$1" ]; then bad "$2"; return; fi
    if [ $# -ge 3 ] && ! cat "$OUT" "$ERR" | grep -q -- "$3"; then bad "$2 (no \"$3\")"; return; fi
    ok "$2"
}
json_check() { # json_check DESCRIPTION PYTHON-EXPRESSION-ON-d
    if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$3" 2>>"$ERR"; then
        ok "$1"
    else
        bad "$1"
    fi
}

TT=(--model llama3-8b --gpu h100-sxm-96gb-500w --gpus 4 --plan "cp=2,zero=3,fsdp=2,mb=1,gb=2,seq=8192,recompute=full,attn_kernel=flex")
MX=(--model mixtral-8x7b --gpu h100-sxm5-80gb --gpus 16 --plan "tp=1,pp=2,ep=8,mb=1,gb=128,seq=4096,zero=1")

# The published logs of ../shared: absent in a clone without it, whose checks are then skipped.
if [ -d "$LOGS" ]; then
# calibrate: a collective sweep and a training log into one file
run calibrate "$LOGS/nccl_all_reduce_perf_2x8_H100-80GB_gcp-a3mega.txt" -o "$TMP/a3.json"
expect 0 "calibrate an nccl-tests log" "half/half"
json_check "the sweep fits tier 1 with sources and a fit error" \
    "any(c['name']=='tier_efficiency_frac' and c['tier']==1 and c['link']=='ib-ndr-400' and ':30-62' in c['sources'] and c['fit_error_pct']<20 for c in d['constants'])" "$TMP/a3.json"
json_check "before/after error on the same data, after better" \
    "d['collective_fits'][0]['median_abs_time_error_pct_after'] < d['collective_fits'][0]['median_abs_time_error_pct_before']" "$TMP/a3.json"
json_check "what the sweep cannot pin (inner tiers) is reported" "len(d['left_alone'])>=1" "$TMP/a3.json"

run calibrate "$LOGS/nccl_all_reduce_perf_2x8_H100-80GB_gcp-a3mega.txt"
expect 0 "calibrate without -o"
json_check "... prints only the JSON on stdout" "len(d['constants'])==2" "$OUT"
run calibrate "$LOGS/megatron_issue756_mixtral8x7b_16xH100_iterations_turn1.txt" "${MX[@]}" -o "$TMP/mx.json"
expect 0 "calibrate a Megatron log with its configuration" "gemm_sustained_frac"
json_check "GEMM fraction fitted with its lines" \
    "any(c['name']=='gemm_sustained_frac' and c['gpu']=='h100-sxm5-80gb' and ':1-3' in c['sources'] for c in d['constants'])" "$TMP/mx.json"
json_check "attention and element-wise left alone" \
    "any('attention_sustained_frac' in x['name'] for x in d['left_alone'])" "$TMP/mx.json"

run calibrate "$LOGS/megatron_issue756_mixtral8x7b_16xH100_iterations_turn1.txt" -o "$TMP/none.json"
expect 0 "a training log without its configuration fits nothing from it"
json_check "... and says why" "any('configuration is not known' in x['reason'] for x in d['left_alone'])" "$TMP/none.json"

# --calibration in the other commands
run predict --model llama3-8b --gpu h100-sxm5-80gb --gpus 16 --plan "mb=1,gb=64,seq=4096,zero=1" --json
cp "$OUT" "$TMP/p0.json"
run predict --model llama3-8b --gpu h100-sxm5-80gb --gpus 16 --plan "mb=1,gb=64,seq=4096,zero=1" --json --calibration "$TMP/a3.json"
expect 0 "predict --calibration"
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(0 if b['time_s']['dp_comm_total']>1.5*a['time_s']['dp_comm_total'] else 1)" "$TMP/p0.json" "$OUT" && ok "the slower fitted fabric shows in the DP time" || bad "the slower fitted fabric shows in the DP time"
run predict --model llama3-8b --gpu b200 --gpus 16 --plan "mb=1,gb=64,seq=4096,zero=1" --calibration "$TMP/a3.json"
expect 0 "a calibration for another GPU changes nothing" "no constant for GPU b200"
run collective --gpu h100-sxm5-80gb --gpus 16 --op all_reduce --sizes 1G --calibration "$TMP/a3.json" --json
expect 0 "collective --calibration"
for c in search run trace compare; do
    run "$c" --help
    expect 0 "$c takes --calibration" "--calibration"
done
JOB=(--model llama3-8b --gpu h100-sxm5-80gb --gpus 16)
run search "${JOB[@]}" --gb 64 --seq 4096 --threads 1 --calibration "$TMP/a3.json"
expect 0 "search --calibration runs"
run run "${JOB[@]}" --plan "mb=1,gb=64,seq=4096,zero=1" --tokens 1e9 --calibration "$TMP/a3.json"
expect 0 "run --calibration runs"
run trace "${JOB[@]}" --plan "mb=1,gb=64,seq=4096,zero=1" --calibration "$TMP/a3.json" -o "$TMP/t.json"
expect 0 "trace --calibration runs"
run compare "${JOB[@]}" --plan "mb=1,gb=64,seq=4096,zero=1" --cluster dgx-h100 --calibration "$TMP/a3.json"
expect 0 "compare --calibration runs"
run predict "${JOB[@]}" --plan "mb=1,gb=64,seq=4096,zero=1" --calibration "$TMP/mx.json" --json
cp "$OUT" "$TMP/p1.json"
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(0 if b['time_s']['compute']<a['time_s']['compute'] else 1)" "$TMP/p0.json" "$TMP/p1.json" && ok "a fitted GEMM fraction above the default shortens compute" || bad "a fitted GEMM fraction above the default shortens compute"
run predict --model llama3-8b --gpu h100-sxm5-80gb --gpus 16 --plan "mb=1,gb=64" --calibration "$DATA/bad_mixed_units_titan.txt"
expect 2 "--calibration on a file that is not one" "not a calibration file"

# doctor on three published logs
run doctor "$LOGS/megatron_issue756_mixtral8x7b_16xH100_iterations_turn0.txt" "${MX[@]}"
expect 0 "doctor Megatron turn 0: compute is the dominant gap" "dominant gap: GPU compute"
run doctor "$LOGS/megatron_issue756_mixtral8x7b_16xH100_iterations_turn1.txt" "${MX[@]}" --json
expect 0 "doctor --json"
json_check "doctor JSON: measured, predicted, the split and ranked explanations" \
    "d['measured_step_s']>0 and d['predicted_step_s']>0 and 'dp_comm_total' in d['time_s'] and d['explanations'][0]['part']==d['dominant']" "$OUT"
run doctor "$LOGS/megatron_issue756_mixtral8x7b_16xH100_iterations_turn0.txt" --config "$LOGS/megatron_issue756_mixtral8x7b_16xH100_args_excerpt.txt" --model mixtral-8x7b --gpu h100-sxm5-80gb --gpus 16 --plan "tp=1,pp=2,mb=1,seq=4096,zero=1" --json
expect 0 "doctor --config: the printed Megatron arguments add their plan keys"
json_check "... ep 8, global batch 128 and no recompute from the published arguments" \
    "d['plan']=='tp=1,pp=2,mb=1,seq=4096,zero=1,ep=8,gb=128,recompute=none'" "$OUT"
run doctor "$LOGS/megatron_issue756_mixtral8x7b_16xH100_iterations_turn0.txt" --config "$DATA/bad_mixed_units_titan.txt" "${MX[@]}"
expect 2 "--config that holds no arguments block" "expected a printed Megatron-LM arguments block"
run doctor "$LOGS/torchtitan_pr1884_llama3_8b_flex_4gpu_cp2_fullac.txt" "${TT[@]}"
expect 0 "doctor torchtitan: as predicted" "verdict: as predicted"
run doctor "$LOGS/torchtitan_pr1884_llama3_8b_flex_4gpu_cp2_fullac.txt"
expect 2 "doctor without the job says what it needs" "expected --model, --gpu, --gpus and --plan"
run doctor "$LOGS/nccl_all_reduce_perf_2x8_H100-80GB_gcp-a3mega.txt" "${TT[@]}"
expect 2 "doctor on a collective log" "expected a Megatron-LM or torchtitan"

else
    echo "skipped: $LOGS absent (no ../shared beside the clone): the published-log checks"
fi

# bad input: exit 2 with file, line and what was expected
run calibrate "$DATA/bad_no_iterations_megatron_args.txt"
expect 2 "no iteration or table lines" "bad_no_iterations_megatron_args.txt:1: expected a log with"
run calibrate "$DATA/bad_truncated_nccl.txt"
expect 2 "truncated table" "bad_truncated_nccl.txt:46: truncated table: expected 13 columns"
run calibrate "$DATA/bad_mixed_units_titan.txt"
expect 2 "mixed units" "bad_mixed_units_titan.txt:2: mixed units: memory in MiB, expected GiB"
run doctor "$DATA/bad_mixed_units_titan.txt" "${TT[@]}"
expect 2 "doctor refuses mixed units too" "mixed units"

run calibrate "$TMP"
expect 2 "a directory is not a log" "not a regular file"
run doctor "$TMP/missing.log" "${TT[@]}"
expect 2 "a missing log"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]

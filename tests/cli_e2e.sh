#!/usr/bin/env bash
# tests/cli_e2e.sh — end-to-end checks of the meshplan command: exit codes, JSON output, messages
# for bad input.
#
#   cli_e2e.sh <path-to-meshplan> <repo-root>
#
# Prints one line per check ("ok - ..." or "FAIL - ..." plus the command's output), then exactly
# "N passed, M failed"; exits 1 when any check failed, 2 on bad usage.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 <path-to-meshplan> <repo-root>" >&2
    exit 2
fi
MP=$1
ROOT=$2
if [ ! -x "$MP" ]; then
    echo "cli_e2e: $MP: not an executable" >&2
    exit 2
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "cli_e2e: python3 is required to check JSON output" >&2
    exit 2
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/meshplan-e2e.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

PASSED=0
FAILED=0
OUT=$TMP/stdout
ERR=$TMP/stderr
RC=0
CMD=""

# run ARGS...: run meshplan, keeping stdout, stderr and the exit status.
run() {
    CMD="meshplan $*"
    "$MP" "$@" >"$OUT" 2>"$ERR"
    RC=$?
}

pass() {
    PASSED=$((PASSED + 1))
    echo "ok - $1"
}

# fail NAME WHY: record a failure and show what the command printed.
fail() {
    FAILED=$((FAILED + 1))
    echo "FAIL - $1: $2"
    echo "    command: $CMD"
    echo "    exit status: $RC"
    echo "    stderr:"
    head -c 2000 "$ERR" | sed 's/^/      /'
    echo "    stdout:"
    head -c 2000 "$OUT" | sed 's/^/      /'
}

# Conditions on the last run; each prints nothing and returns 1 with WHY set on failure.
WHY=""
rc_is() {
    if [ "$RC" -ne "$1" ]; then WHY="exit status $RC, expected $1"; return 1; fi
}
stderr_has() {
    if ! grep -qiF -- "$1" "$ERR"; then WHY="stderr does not mention \"$1\""; return 1; fi
}
stdout_nonempty() {
    if [ ! -s "$OUT" ]; then WHY="stdout is empty"; return 1; fi
}
stdout_has() {
    grep -qF -- "$1" "$OUT" || { WHY="stdout does not contain \"$1\""; return 1; }
}
lines_are() {
    local n
    n=$(wc -l <"$OUT")
    [ "$n" -eq "$1" ] || { WHY="$n lines on stdout, expected $1"; return 1; }
}
no_nonfinite() {
    # Numbers printed as nan/inf (any case) anywhere in the output; words like "INFEASIBLE" or
    # "info" are not numbers, so look for the printf spellings as whole tokens.
    if grep -qiE -- '(^|[^a-z])[-+]?(nan|inf|infinity)([^a-z]|$)' "$OUT" "$ERR"; then
        WHY="output contains a non-finite number: $(grep -iE -- '(^|[^a-z])[-+]?(nan|inf|infinity)([^a-z]|$)' "$OUT" "$ERR" | head -3 | tr '\n' ' ')"
        return 1
    fi
}
# json_check PY: parse stdout as strict JSON (NaN/Infinity rejected) into d, then run the Python
# statements PY, which raise (assert) on a problem.
json_check() {
    local msg
    if ! msg=$(python3 - "$OUT" "$1" 2>&1 <<'EOF'
import json, math, sys
def reject(c):
    raise ValueError("non-finite number " + c)
with open(sys.argv[1]) as f:
    d = json.load(f, parse_constant=reject)
exec(sys.argv[2])
EOF
    ); then
        WHY="JSON check failed: $(printf '%s' "$msg" | tail -3 | tr '\n' ' ')"
        return 1
    fi
}

# check NAME CONDITION...: each CONDITION is one quoted shell command from the helpers above.
check() {
    local name=$1
    shift
    local c
    for c in "$@"; do
        WHY=""
        if ! eval "$c"; then
            fail "$name" "${WHY:-$c}"
            return
        fi
    done
    pass "$name"
}

H100="--gpu h100-sxm5-80gb"
PLAN70="tp=8,pp=4,vpp=5,mb=1,gb=1024,seq=8192,zero=1,sp=1,recompute=selective"

# --- usage --------------------------------------------------------------------------------------
run help
check "help exits 0" "rc_is 0" "stdout_nonempty"
run
check "no arguments exits 2 with usage" "rc_is 2" "stderr_has usage"
run nosuchcommand
check "unknown command exits 2" "rc_is 2" "stderr_has nosuchcommand"

# --- predict ------------------------------------------------------------------------------------
run predict
check "predict with no options (default job) exits 0" "rc_is 0" "stdout_nonempty" "no_nonfinite"

run predict --model llama3-70b $H100 --gpus 1024 --plan "$PLAN70" --json
check "predict llama3-70b on 1024 H100 --json" "rc_is 0" "no_nonfinite" "json_check '
top = [\"feasible\", \"reasons\", \"memory_bytes\", \"step_s\", \"time_s\", \"tokens_per_s\",
       \"tokens_per_s_per_gpu\", \"model_tflops_per_gpu\", \"hardware_tflops_per_gpu\", \"mfu\",
       \"hfu\", \"bottleneck\"]
for k in top: assert k in d, \"missing key \" + k
mem = [\"weights\", \"gradients\", \"optimizer\", \"activations\", \"logits\", \"buffers\", \"total\",
       \"capacity\", \"per_stage\"]
for k in mem: assert k in d[\"memory_bytes\"], \"missing memory_bytes.\" + k
ts = [\"compute\", \"recompute\", \"tp_comm\", \"cp_comm\", \"ep_comm\", \"pp_comm\", \"pp_bubble\",
      \"dp_comm_exposed\", \"optimizer\"]
for k in ts: assert k in d[\"time_s\"], \"missing time_s.\" + k
assert isinstance(d[\"feasible\"], bool), \"feasible is not a boolean\"
assert isinstance(d[\"reasons\"], list), \"reasons is not a list\"
assert len(d[\"memory_bytes\"][\"per_stage\"]) == 4, \"per_stage has %d entries, expected 4\" % len(d[\"memory_bytes\"][\"per_stage\"])
assert d[\"feasible\"] is True, \"expected a feasible plan: %r\" % d[\"reasons\"]
assert d[\"step_s\"] > 0, \"step_s is not positive\"
assert 0 < d[\"mfu\"] <= d[\"hfu\"] <= 1, \"mfu %r, hfu %r out of order\" % (d[\"mfu\"], d[\"hfu\"])
assert d[\"tokens_per_s\"] > 0
'"

run predict --model llama3-70b $H100 --gpus 1024 --plan "$PLAN70"
check "predict llama3-70b on 1024 H100, text" "rc_is 0" "stdout_nonempty" "no_nonfinite"

run predict --model llama3-405b $H100 --gpus 8 --plan "tp=8,mb=1,gb=8,seq=8192" --json
check "infeasible plan (llama3-405b on 8 GPUs) exits 0 with feasible false and reasons" \
    "rc_is 0" "no_nonfinite" "json_check '
assert d[\"feasible\"] is False, \"feasible is %r\" % d[\"feasible\"]
assert isinstance(d[\"reasons\"], list) and len(d[\"reasons\"]) > 0, \"reasons is empty\"
assert all(isinstance(r, str) and r for r in d[\"reasons\"]), \"a reason is not a non-empty string\"
'"

# --- bad predict input: exit 2, and stderr names the field and the value -------------------------
run predict --model nosuch $H100 --gpus 8 --plan tp=8
check "unknown model" "rc_is 2" "stderr_has nosuch" "stderr_has model"
run predict --model llama3-70b --gpu nosuchgpu --gpus 8 --plan tp=8
check "unknown gpu" "rc_is 2" "stderr_has nosuchgpu" "stderr_has gpu"
run predict --model llama3-70b $H100 --gpus 8 --plan "tp=8,foo=1"
check "unknown plan key" "rc_is 2" "stderr_has foo"
run predict --model llama3-70b $H100 --gpus 8 --plan "tp=abc"
check "non-numeric plan value" "rc_is 2" "stderr_has tp" "stderr_has abc"
run predict --model llama3-70b $H100 --gpus 8 --plan "tp=0"
check "zero plan value" "rc_is 2" "stderr_has tp" "stderr_has 0"
run predict --model llama3-70b $H100 --gpus 8 --plan "pp=-2"
check "negative plan value" "rc_is 2" "stderr_has pp" "stderr_has -2"
run predict --model llama3-70b $H100 --gpus 24 --plan "tp=3,mb=1,gb=8"
check "tp that does not divide the heads" "rc_is 2" "stderr_has tp" "stderr_has heads"
run predict --model llama3-70b $H100 --gpus 16 --plan "tp=8,pp=4"
check "tp*pp does not divide the GPU count" "rc_is 2" "stderr_has 16" "stderr_has tp"
run predict --model llama3-70b $H100 --gpus 16 --plan "tp=8,mb=1,gb=7"
check "gb not divisible by mb*dp" "rc_is 2" "stderr_has gb" "stderr_has 7"
run predict --model llama3-70b $H100 --gpus 0 --plan tp=8
check "--gpus 0" "rc_is 2" "stderr_has gpus" "stderr_has 0"
run predict --model llama3-70b $H100 --gpus abc --plan tp=8
check "--gpus abc" "rc_is 2" "stderr_has gpus" "stderr_has abc"
run predict --model llama3-70b $H100 --gpus 8 --bogus-option
check "unknown option" "rc_is 2" "stderr_has --bogus-option"
run predict $H100 --gpus 8 --model
check "option missing its value" "rc_is 2" "stderr_has --model"
run predict --model llama3-70b $H100 --plan tp=8
check "predict without --gpus" "rc_is 2" "stderr_has gpus"

# --- model files --------------------------------------------------------------------------------
printf '{"key": "broken", "layers_count": 80,\n' >"$TMP/malformed.json"
run predict --model "$TMP/malformed.json" $H100 --gpus 8 --plan tp=8
check "malformed model JSON file" "rc_is 2" "stderr_has malformed.json"

mkdir "$TMP/modeldir"
run predict --model "$TMP/modeldir" $H100 --gpus 8 --plan tp=8
check "directory given as --model" "rc_is 2" "stderr_has modeldir"

: >"$TMP/empty.json"
run predict --model "$TMP/empty.json" $H100 --gpus 8 --plan tp=8
check "empty --model file" "rc_is 2" "stderr_has empty.json"

cat >"$TMP/huge.json" <<'EOF'
{"key":"huge","layers_count":1000,"hidden_count":1000000,"heads_count":1000,"kv_heads_count":1000,
 "ffn_hidden_count":4000000,"glu":false,"vocab_count":1000000,"seq_len_count":2048,"source":"test"}
EOF
run predict --model "$TMP/huge.json" $H100 --gpus 8 --plan "tp=8,mb=1,gb=8" --json
check "huge (~10^16 parameter) model predicts with finite numbers, JSON" "rc_is 0" "no_nonfinite" \
    "json_check 'assert d[\"feasible\"] is False and d[\"reasons\"], \"a huge model fits on 8 GPUs?\"'"
run predict --model "$TMP/huge.json" $H100 --gpus 8
check "huge model predicts with finite numbers, text" "rc_is 0" "stdout_nonempty" "no_nonfinite"
run predict --model "$TMP/huge.json" $H100 --gpus 16000 --plan "tp=8,pp=1000,mb=1,gb=2048" --json
check "huge model on 16000 GPUs, pp=1000" "rc_is 0" "no_nonfinite" \
    "json_check '
st = d[\"memory_bytes\"][\"per_stage\"]
assert 0 < len(st) <= 1000, \"per_stage has %d entries for pp=1000\" % len(st)
assert all(x[\"total\"] <= d[\"memory_bytes\"][\"total\"] for x in st), \"a stage exceeds the reported max\"
'"

# Dimensions each within the per-field limit whose products overflow 64-bit parameter counts: the
# tool must refuse them (exit 2, naming the problem), not print wrapped-around numbers.
cat >"$TMP/overflow-layers.json" <<'EOF2'
{"key":"overflow-layers","layers_count":1000000000,"hidden_count":100000000,"heads_count":1,
 "kv_heads_count":1,"ffn_hidden_count":1,"glu":false,"vocab_count":1,"seq_len_count":2048,"source":"test"}
EOF2
run predict --model "$TMP/overflow-layers.json" $H100 --gpus 8
check "model whose parameter count overflows 64 bits (1e9 layers x hidden 1e8) is refused" \
    "rc_is 2" "stderr_has overflow-layers"
cat >"$TMP/overflow-hidden.json" <<'EOF2'
{"key":"overflow-hidden","layers_count":1,"hidden_count":1099511627776,"heads_count":1,
 "kv_heads_count":1,"ffn_hidden_count":1,"glu":false,"vocab_count":1,"seq_len_count":2048,"source":"test"}
EOF2
run predict --model "$TMP/overflow-hidden.json" $H100 --gpus 8
check "model with hidden 2^40 (hidden^2 overflows 64 bits) is refused" "rc_is 2" \
    "stderr_has overflow-hidden"

HF=""
for f in "$ROOT/tests/data/hf/llama3-8b.json" "$ROOT"/tests/data/hf/llama*.json; do
    if [ -f "$f" ]; then HF=$f; break; fi
done
if [ -n "$HF" ]; then
    run predict --model "$HF" $H100 --gpus 8 --plan "tp=8,mb=1,gb=8" --json
    check "Hugging Face config $(basename "$HF") as --model" "rc_is 0" "no_nonfinite" \
        "json_check 'assert d[\"model\"][\"layers\"] > 0 and d[\"step_s\"] > 0'"
else
    echo "skip - Hugging Face config as --model (no tests/data/hf/llama*.json)"
fi
for f in "$ROOT"/tests/data/hf/broken-*.json; do
    [ -f "$f" ] || continue
    run predict --model "$f" $H100 --gpus 8 --plan tp=1
    check "broken Hugging Face config $(basename "$f") exits 2" "rc_is 2" "stderr_has meshplan"
done

# --- catalog ------------------------------------------------------------------------------------
run catalog
check "catalog (all) exits 0" "rc_is 0" "stdout_nonempty"
run catalog models --json
check "catalog models --json parses" "rc_is 0" "json_check '
assert isinstance(d[\"models\"], list) and d[\"models\"], \"no models\"
assert any(m[\"key\"] == \"llama3-70b\" for m in d[\"models\"]), \"llama3-70b missing\"
'"
run catalog --json
check "catalog --json parses" "rc_is 0" \
    "json_check 'assert all(k in d for k in (\"gpus\", \"links\", \"nodes\", \"models\")), list(d)'"
run catalog nosuch
check "catalog nosuch" "rc_is 2" "stderr_has nosuch"

# --- run: energy, cost, failures, goodput --------------------------------------------------------
# Found by a reviewer: a run shorter than the optimal checkpoint interval printed "interval 1.1 s
# (the optimal one); optimal 53.4 min", and the wait phase the subtraction's rounding (2.22e-16 s).
run run --model llama3-8b $H100 --gpus 8 --plan gb=8 --tokens 1
check "run: a one-step run says its interval is the whole run" "rc_is 0" "stdout_has 'the whole run: shorter than the optimal one'" "! grep -q 'e-1[0-9] s of the step' \"\$OUT\""
PLAN405="tp=8,pp=16,vpp=2,mb=1,gb=2048,seq=8192,zero=1,recompute=full"
run run --model llama3-405b $H100 --gpus 16384 --plan "$PLAN405" --tokens 15.6e12 --trials 200 --seed 7 --json
check "run llama3-405b on 16384 H100 --json" "rc_is 0" "no_nonfinite" "json_check '
for k in (\"energy_J_per_step\", \"energy_J_per_mtoken\", \"power_W\", \"energy_MWh\", \"co2e_t\",
          \"gpu_hours\", \"cost_usd\", \"failures\", \"checkpoint\", \"goodput\", \"wall_clock_s\"):
    assert k in d, \"missing key \" + k
for k in (\"gpu_avg\", \"gpu_peak\", \"node_avg\", \"node_peak\", \"facility_avg\"):
    assert d[\"power_W\"][k] > 0, \"power_W.\" + k
for k in (\"interruptions_per_day\", \"by_cause\"): assert k in d[\"failures\"], \"failures.\" + k
for k in (\"bytes\", \"save_s\", \"interval_s\", \"optimal_interval_s\"):
    assert d[\"checkpoint\"][k] > 0, \"checkpoint.\" + k
w = d[\"wall_clock_s\"]
assert w[\"p10\"] <= w[\"mean\"] <= w[\"p90\"], w
assert 0 < d[\"goodput\"] <= 1
# C6: 54 days of this job see 419 unexpected interruptions (Llama 3), +-15%
n54 = d[\"failures\"][\"interruptions_per_day\"] * 54
assert abs(n54 - 419) <= 0.15 * 419, n54
assert abs(d[\"failures\"][\"by_cause\"][\"faulty_gpu\"] * 54 - 148) <= 0.15 * 148
assert d[\"power_W\"][\"gpu_peak\"] <= 700 and d[\"power_W\"][\"gpu_avg\"] < d[\"power_W\"][\"gpu_peak\"]
assert d[\"power_model\"][\"unseen_gpu\"] is False
assert abs(d[\"checkpoint\"][\"optimal_interval_s\"] - d[\"checkpoint\"][\"interval_s\"]) < 1e-6
'"
cp "$OUT" "$TMP/run1.json"
run run --model llama3-405b $H100 --gpus 16384 --plan "$PLAN405" --tokens 15.6e12 --trials 200 --seed 7 --json
check "run is reproducible with a seed" "rc_is 0" "cmp -s \"$OUT\" \"$TMP/run1.json\""
run run --model llama3-8b --gpu b200 --gpus 64 --plan "tp=1,mb=1,gb=64,seq=8192,zero=3" --tokens 1e11 --capex-per-gpu 40000 --power-cap-W 800 --async-checkpoint --spare-nodes 0 --json
check "run on an unseen GPU with capital costs, a cap, async checkpoints, no spares" "rc_is 0" "no_nonfinite" "json_check '
assert d[\"power_model\"][\"unseen_gpu\"] is True
assert d[\"power_W\"][\"gpu_peak\"] <= 800
assert d[\"cost\"][\"mode\"] == \"capital+energy\" and d[\"cost\"][\"energy_usd\"] > 0
assert d[\"checkpoint\"][\"async\"] is True and d[\"checkpoint\"][\"block_s\"] < d[\"checkpoint\"][\"save_s\"]
assert d[\"failures\"][\"spare_nodes\"] == 0
'"
run run --model llama3-70b $H100 --gpus 64 --plan "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1,recompute=selective" --tokens 1e12
check "run, text" "rc_is 0" "stdout_nonempty" "no_nonfinite" "grep -q goodput \"$OUT\"" "grep -q \"interruptions per day\" \"$OUT\""
printf '{"source": "my fleet", "observed": {"gpus_count": 512, "days": 30}, "causes": [{"name": "gpu", "component": "gpu", "per": "gpu", "count": 9, "needs_spare": true}]}' >"$TMP/faults.json"
run run --model llama3-70b $H100 --gpus 64 --plan "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1,recompute=selective" --tokens 1e12 --failures "$TMP/faults.json" --json
check "run --failures FILE" "rc_is 0" "json_check '
f = d[\"failures\"]
assert f[\"source\"] == \"my fleet\"
assert abs(f[\"interruptions_per_day\"] - 64 * 9 / 512 / 30) < 1e-9, f
'"
printf '{"causes": [{"name": "gpu", "component": "gpus", "per": "gpu", "count": 9, "needs_spare": true}]}' >"$TMP/badfaults.json"
run run --model llama3-70b $H100 --gpus 64 --plan "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1" --tokens 1e12 --failures "$TMP/badfaults.json"
check "run --failures with a bad component" "rc_is 2" "stderr_has badfaults.json" "stderr_has component"
run run --model llama3-70b $H100 --gpus 64 --plan "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1" --tokens lots
check "run --tokens not a number" "rc_is 2" "stderr_has tokens" "stderr_has lots"
run run --model llama3-70b $H100 --gpus 64 --plan "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1"
check "run without --tokens" "rc_is 2" "stderr_has tokens"
run run --model llama3-70b $H100 --gpus 64 --plan "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1" --tokens 1e12 --pue 0.8
check "run --pue below 1" "rc_is 2" "stderr_has pue"
run run --model llama3-70b $H100 --gpus 64 --plan "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1" --tokens 1e12 --power-cap-W 100
check "run --power-cap-W below active idle" "rc_is 2" "stderr_has power-cap-W"
run run --model llama3-70b $H100 --gpus 64 --plan "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1" --tokens 1e12 --failures "$TMP/no-such-faults.json"
check "run --failures missing file" "rc_is 2" "stderr_has no-such-faults.json"
run run --model llama3-70b $H100 --gpus 64 --plan "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1" --tokens 1e12 --trials 0
check "run --trials 0" "rc_is 2" "stderr_has trials"
# --- trace --------------------------------------------------------------------------------------
run trace --model llama3-70b $H100 --gpus 1024 --plan "$PLAN70" -o "$TMP/step.json"
check "trace llama3-70b writes a trace and prints both step times" "rc_is 0" "no_nonfinite" \
    "grep -q 'simulated step' \"\$OUT\" || { WHY='no simulated step line'; false; }" \
    "grep -q 'analytical' \"\$OUT\" || { WHY='no analytical column'; false; }"
TRACE_OUT=$OUT
OUT=$TMP/step.json
check "trace file is Chrome trace JSON with stages, threads and slices" "json_check '
ev = d[\"traceEvents\"]
names = set(e[\"args\"][\"name\"] for e in ev if e[\"ph\"] == \"M\" and e[\"name\"] == \"thread_name\")
for t in (\"compute\", \"TP\", \"PP send\", \"DP/ZeRO\"): assert t in names, \"no thread \" + t
procs = [e for e in ev if e[\"ph\"] == \"M\" and e[\"name\"] == \"process_name\"]
assert len(procs) == 4, \"%d processes, expected 4 stages\" % len(procs)
x = [e for e in ev if e[\"ph\"] == \"X\"]
assert any(e[\"cat\"] == \"compute\" and \"micro_batch\" in e[\"args\"] and \"chunk\" in e[\"args\"] for e in x)
assert any(e[\"cat\"] == \"dp\" and e[\"args\"][\"bytes\"] > 0 and e[\"args\"][\"algorithm\"] for e in x)
last = {}
for e in sorted(x, key=lambda e: (e[\"pid\"], e[\"tid\"], e[\"ts\"])):
    k = (e[\"pid\"], e[\"tid\"])
    assert e[\"ts\"] >= last.get(k, 0) - 1e-6, \"overlap on %r at %r\" % (k, e[\"ts\"])
    last[k] = e[\"ts\"] + e[\"dur\"]
'"
OUT=$TRACE_OUT

run trace --model llama3-70b $H100 --gpus 1024 --plan "tp=8,pp=4,mb=1,gb=256,seq=8192,schedule=zb" --json \
    --analytical-rules
check "trace --json --analytical-rules: simulated within 1% of analytical" "rc_is 0" "no_nonfinite" "json_check '
s, a = d[\"simulated\"], d[\"analytical\"]
assert abs(s[\"step_s\"] - a[\"step_s\"]) <= 0.01 * a[\"step_s\"], (s[\"step_s\"], a[\"step_s\"])
t = s[\"time_s\"]
parts = sum(t[k] for k in (\"compute\", \"recompute\", \"tp_comm\", \"cp_comm\", \"ep_comm\", \"pp_comm\",
                          \"pp_bubble\", \"dp_comm_exposed\", \"optimizer\"))
assert abs(parts - s[\"step_s\"]) <= 1e-6 * s[\"step_s\"], (parts, s[\"step_s\"])
assert d[\"options\"][\"contention_frac\"] == 0
assert d[\"trace\"] is None
'"

run trace --model llama3-70b $H100 --gpus 1024 --plan "tp=8,pp=4,mb=1,gb=256,seq=8192" --straggler-rank 700 \
    --straggler-compute 1.5 --json
check "trace with a straggler names its stage" "rc_is 0" "json_check '
assert d[\"options\"][\"straggler_stage\"] == 2, d[\"options\"]
'"

run trace --model mixtral-8x7b $H100 --gpus 8 --plan "zero=3,ep=8,fsdp=2,gb=64,seq=4096"
check "trace of an MoE model simulates its MoE layers and says so" "rc_is 0" "stdout_has 'MoE layers simulated'" "stdout_has 'EP'"

run trace --model llama3-70b $H100 --gpus 1024 --plan "$PLAN70" --contention -0.5
check "trace --contention -0.5 exits 2" "rc_is 2" "stderr_has contention"
run trace --model llama3-70b $H100 --gpus 1024 --plan "$PLAN70" --straggler-rank 1024
check "trace --straggler-rank out of range exits 2" "rc_is 2" "stderr_has straggler-rank"
run trace --model llama3-70b $H100 --gpus 1024 --plan "tp=8,pp=4,vpp=2,mb=1,gb=256,seq=8192,schedule=zb"
check "trace zb with vpp 2 exits 2 naming the schedule" "rc_is 2" "stderr_has schedule"
run trace --model llama3-70b $H100 --gpus 1024 --plan "$PLAN70" --max-events 50
check "trace over the event cap exits 2 naming max_events" "rc_is 2" "stderr_has max_events"
run trace --model llama3-70b $H100 --gpus 1024
check "trace without --plan exits 2" "rc_is 2" "stderr_has plan"
run trace --model llama3-70b $H100 --gpus 1024 --plan "$PLAN70" -o "$TMP/no/such/dir/x.json"
check "trace -o into a missing directory exits 2" "rc_is 2" "stderr_has x.json"
# --- collective ---------------------------------------------------------------------------------
# Found by a reviewer: NCCL's spelling (allreduce, AllReduce) got the list but no pointer.
run collective --op allreduce $H100 --gpus 8
check "collective --op allreduce suggests all_reduce" "rc_is 2" "stderr_has 'op = \"allreduce\"'" "stderr_has 'did you mean all_reduce?'"
run collective --op all_reduce --gpu h100-sxm5-80gb --gpus 16 --gpus-per-node 8 --scale-out ib-ndr-400 --sizes 8:8G
check "collective all_reduce 8:8G, text" "rc_is 0" "no_nonfinite" "stdout_nonempty"
run collective --op all_reduce --gpu h100-sxm5-80gb --gpus 16 --gpus-per-node 8 --scale-out ib-ndr-400 --sizes 8:8G --json
check "collective --json: 31 rows, sizes doubling from 8 B to 8 GiB, busbw = algbw x 2(n-1)/n" "rc_is 0" "no_nonfinite" "json_check '
r = d[\"rows\"]
assert len(r) == 31, len(r)
assert r[0][\"bytes\"] == 8 and r[-1][\"bytes\"] == 8 * 2**30, (r[0][\"bytes\"], r[-1][\"bytes\"])
for a, b in zip(r, r[1:]):
    assert b[\"bytes\"] == 2 * a[\"bytes\"]
    assert b[\"time_us\"] >= a[\"time_us\"], \"time falls with size\"
for x in r:
    for k in (\"bytes\", \"time_us\", \"algbw_GBps\", \"busbw_GBps\", \"algorithm\"): assert k in x, k
    assert abs(x[\"busbw_GBps\"] - x[\"algbw_GBps\"] * 2 * 15 / 16) <= 1e-9 * max(1, x[\"busbw_GBps\"])
    assert abs(x[\"algbw_GBps\"] - x[\"bytes\"] / x[\"time_us\"] / 1e3) <= 1e-6 * max(1e-9, x[\"algbw_GBps\"])
'"
run collective --op all_gather --gpu h100-sxm5-80gb --gpus 16 --sizes 1M:4M --csv
check "collective --csv: header and 3 rows" "rc_is 0" "no_nonfinite" "stdout_has bytes,count,type,time_us,algbw_GBps,busbw_GBps,algorithm" "lines_are 4"
run collective --op all_reduce --gpu h100-sxm5-80gb --gpus 16 --sizes 1G --algo ring --json
check "collective --algo ring forces the ring" "rc_is 0" "json_check '
assert [x[\"algorithm\"] for x in d[\"rows\"]] == [\"ring\"]
'"
run collective --op all_reduce --gpu a100-sxm4-80gb --gpus 8 --sizes 1G --algo in_network
check "collective --algo in_network without NVLS is bad input" "rc_is 2" "stderr_has in_network"
run collective --op all_reduce --gpu h100-sxm5-80gb --gpus 16 --sizes 1K --algo bogus
check "collective unknown algorithm lists the valid ones" "rc_is 2" "stderr_has bogus" "stderr_has hierarchical"
run collective --op allreduce --gpu h100-sxm5-80gb --gpus 16
check "collective unknown op" "rc_is 2" "stderr_has allreduce" "stderr_has all_reduce"
run collective --op all_reduce --gpu h100-sxm5-80gb --gpus 16 --sizes 8G:8
check "collective sizes in the wrong order" "rc_is 2" "stderr_has sizes"
run collective --op all_reduce --gpu h100-sxm5-80gb --gpus 16 --sizes 12X
check "collective bad size suffix" "rc_is 2" "stderr_has 12X"
run collective --op all_reduce --gpu h100-sxm5-80gb --gpus 16 --sizes 8:8G --csv --json
check "collective --csv with --json" "rc_is 2"
run collective --op all_to_all --cluster dgx-h100-ndr-fat-tree-2to1 --gpus 64 --sizes 256M --json
check "collective on a congested preset reports the alternative it picked" "rc_is 0" "no_nonfinite" "json_check '
x = d[\"rows\"][0]
assert x[\"algorithm\"] == \"hierarchical\", x
assert x[\"blind_algorithm\"] == \"direct\" and x[\"saved_us\"] > 0, x
'"
run collective --op all_reduce --gpu h100-sxm5-80gb --gpus 16 --ranks 8 --stride 2 --sizes 1G --json
check "collective --ranks 8 --stride 2: a TP group leaving the node is bound by the NICs" "rc_is 0" "json_check '
assert d[\"rows\"][0][\"bound_tier\"] == 1, d[\"rows\"][0]
'"
run collective --op all_reduce --gpu h100-sxm5-80gb --gpus 16 --ranks 9 --stride 2
check "collective group larger than the cluster" "rc_is 2" "stderr_has ranks"

# --- clusters: --cluster on predict and compare ------------------------------------------------
PLAN70="tp=8,pp=4,mb=1,gb=256,seq=8192,zero=1,recompute=selective"
run predict --model llama3-70b --cluster dgx-h100-ndr-fat-tree-2to1 --gpus 256 --plan "$PLAN70" --json
check "predict --cluster preset --json" "rc_is 0" "no_nonfinite" "json_check '
assert d[\"step_s\"] > 0
'"
cp "$ROOT/examples/clusters/two-islands-wan100.json" "$TMP/islands.json"
run predict --model llama3-70b --cluster "$TMP/islands.json" --plan "tp=8,pp=8,mb=1,gb=1024,seq=8192,zero=1,order=tp-pp-dp"
check "predict --cluster FILE: DP across the WAN is the bottleneck" "rc_is 0" "stdout_has wan-100"
printf '{"gpu": "h100-sxm5-80gb", "tiers": [{"kind": "scaleup", "link": "nvlink4", "domain_gpus_count": 8}, {"name": "spine", "kind": "scaleout", "link": "ib-ndr-400", "oversubscription": 0.5}]}' >"$TMP/badcluster.json"
run predict --model llama3-70b --cluster "$TMP/badcluster.json" --gpus 64 --plan "tp=8"
check "predict --cluster with a bad file names the tier and field" "rc_is 2" "stderr_has badcluster.json" "stderr_has spine" "stderr_has oversubscription"
run predict --model llama3-70b --cluster no-such-cluster --gpus 64 --plan "tp=8"
check "predict --cluster unknown lists the choices" "rc_is 2" "stderr_has no-such-cluster" "stderr_has dgx-h100-ndr-fat-tree-2to1"
run predict --model llama3-70b --cluster dgx-h100 --scale-out roce-100 --gpus 64 --plan "tp=8"
check "predict --cluster with --scale-out is bad usage" "rc_is 2" "stderr_has scale-out"
run predict --model llama3-70b --gpu h100-sxm5-80gb --gpus 64 --plan "tp=8,order=tp-dp"
check "plan order that leaves out pp (pp=1 is fine)" "rc_is 0"
run predict --model llama3-70b --gpu h100-sxm5-80gb --gpus 64 --plan "tp=8,pp=2,order=tp-dp"
check "plan order that leaves out pp=2" "rc_is 2" "stderr_has order" "stderr_has pp"
run compare --model llama3-70b --gpus 256 --plan "$PLAN70" --cluster dgx-h100 --cluster pcie-h100-roce100 --cluster "$TMP/islands.json" --json
check "compare three clusters --json" "rc_is 0" "no_nonfinite" "json_check '
r = d[\"rows\"]
assert [x[\"cluster\"] for x in r][:2] == [\"dgx-h100\", \"pcie-h100-roce100\"], r
for x in r:
    for k in (\"step_s\", \"tokens_per_s\", \"mfu\", \"exposed_comm_s\", \"bound\"): assert k in x, k
    for k in (\"tp\", \"cp\", \"ep\", \"pp\", \"dp\"): assert k in x[\"exposed_comm_s\"], k
assert r[1][\"step_s\"] > r[0][\"step_s\"], \"PCIe + 100G not slower than NVLink + 400G\"
assert r[1][\"bound\"][\"link\"] == \"pcie5\", r[1][\"bound\"]
'"
run compare --model llama3-70b --gpus 256 --plan "$PLAN70" --cluster dgx-h100 --cluster pcie-h100-roce100
check "compare, text" "rc_is 0" "stdout_has tokens/s" "stdout_has pcie5"
run compare --model llama3-70b --gpus 256 --plan "$PLAN70" --cluster dgx-h100 --cluster pcie-h100-roce100 --gpu h100-sxm5-80gb --csv
check "compare --gpu --csv: same GPU everywhere" "rc_is 0" "lines_are 3" "stdout_has pcie-h100-roce100,h100-sxm5-80gb"
run compare --model llama3-70b --gpus 256 --plan "$PLAN70"
check "compare without --cluster" "rc_is 2" "stderr_has cluster"

# --- validate -----------------------------------------------------------------------------------
run validate "$TMP/no-such-file.csv"
check "validate a missing file" "rc_is 2" "stderr_has no-such-file.csv"
printf 'id,model_name,colour\nx,y,z\n' >"$TMP/bad.csv"
run validate "$TMP/bad.csv"
check "validate a CSV without the required columns" "rc_is 2" "stderr_has bad.csv" "stderr_has layers"
run validate
check "validate with no file" "rc_is 2"
# Found by a reviewer: a header alone (or a file cut inside its header) said "predicted 0 of 0
# rows" with exit 0; and a metric no row measures printed "median |error| 0.0%" as if perfect.
VHDR="id,source_group,model_name,layers,hidden,heads,kv_heads,ffn_hidden,glu,vocab,seq_len,gpu,num_gpus,gpus_per_node,tp,pp,dp,micro_batch,global_batch,recompute,precision,zero_stage,measured_tflops_per_gpu,tflops_basis"
echo "$VHDR" >"$TMP/header_only.csv"
run validate "$TMP/header_only.csv"
check "validate a header without rows" "rc_is 2" "stderr_has header_only.csv" "stderr_has no data rows"
printf '%s\r\nr1,test,M,32,4096,32,8,14336,1,128256,8192,h100-sxm5-80gb,8,8,1,1,8,1,8,none,bf16,0,400,model\r\n' "$VHDR" >"$TMP/one_row.csv"
run validate "$TMP/one_row.csv"
check "validate (CRLF): a metric with no measured row says so" "rc_is 0" "stdout_has 'predicted 1 of 1'" "stdout_has 'memory:     n=0 (no row has'" "! grep -q 'n=0 median' \"\$OUT\""

# A runs.csv row whose dimensions overflow: skipped with a reason, not predicted from garbage.
{
    echo "id,source_group,model_name,layers,hidden,heads,kv_heads,ffn_hidden,glu,vocab,seq_len,gpu,num_gpus,gpus_per_node,tp,pp,dp,micro_batch,global_batch,recompute,precision,zero_stage,measured_tflops_per_gpu,tflops_basis"
    echo "big1,test,Big,1000000000,100000000,1,1,1,0,1,2048,h100-sxm5-80gb,8,8,1,1,8,1,8,none,bf16,0,100,model"
} >"$TMP/overflow.csv"
run validate "$TMP/overflow.csv" --json
check "validate skips a row whose dimensions overflow" "rc_is 0" "no_nonfinite" "json_check '
assert len(d[\"rows\"]) == 0, \"row predicted: %r\" % d[\"rows\"]
assert [x[\"id\"] for x in d[\"skipped\"]] == [\"big1\"], d[\"skipped\"]
'"

# Found by a new user: silent substitutions are refused.
run predict --model llama3-8b --gpu v100-sxm2-32gb --gpus 8 --plan "precision=bf16"
check "bf16 on a GPU without bf16 is refused" "rc_is 2" "stderr_has bf16" "stderr_has v100-sxm2-32gb"
run predict --model llama3-8b --gpu h100-sxm5-80gb --gpus 8 --gpus-per-node 16
check "gpus-per-node above gpus is refused" "rc_is 2" "stderr_has gpus-per-node" "stderr_has 16"
run predict --model llama3-8b --gpu h100-sxm5-80gb --gpus 8 --plan "tp=1,sp=1"
check "sp=1 without tp is refused" "rc_is 2" "stderr_has plan.sp"
run predict --model llama3-8b --gpu h100-sxm5-80gb --gpus 8 --plan "tp=99999999999999999999"
check "an integer too large names the range" "rc_is 2" "stderr_has plan.tp" "stderr_has 16777216"
run predict --model llama3-70b --gpu h100-sxm5-80gb --gpus 8 --plan "tp=3,pp=3"
check "every reason line carries the prefix" "rc_is 2" "stderr_has 'meshplan: plan.tp = 3: must divide heads'"
# --- MoE, long context, FP8 (issue 7) -------------------------------------------------------------
run predict --model deepseek-v3 $H100 --gpus 2048 --plan "tp=1,pp=16,ep=64,etp=1,mb=1,gb=15360,seq=4096,precision=fp8" --json
check "predict deepseek-v3 MoE with ep/etp --json" "rc_is 0" "no_nonfinite" "json_check '
assert d[\"model\"][\"activated_params\"] < d[\"model\"][\"params\"] / 10, d[\"model\"]
m = d[\"moe\"]
assert m[\"ep\"] == 64 and m[\"etp\"] == 1 and m[\"experts\"] == 256, m
assert m[\"a2a_bytes_per_moe_layer\"] > 0 and d[\"time_s\"][\"ep_comm\"] > 0
'"
run predict --model deepseek-v3 $H100 --gpus 2048 --plan "tp=1,pp=16,ep=64,etp=1,mb=1,gb=15360,seq=4096,precision=fp8"
check "predict deepseek-v3, text names experts and MLA" "rc_is 0" "grep -q 'activated per token' \"\$OUT\"" \
    "grep -q 'multi-head latent attention' \"\$OUT\"" "grep -q 'all-to-all per MoE layer' \"\$OUT\""
run predict --model llama3-70b $H100 --gpus 1024 --plan "tp=8,cp=16,mb=1,gb=8,seq=131072,recompute=full" --json
check "predict llama3-70b at 128K tokens with cp=16: attention dominates" "rc_is 0" "no_nonfinite" "json_check '
a = d[\"attention\"]
assert a[\"compute_time_frac\"] > 0.5 and a[\"flops_frac\"] > 0.5, a
assert 0 < a[\"equal_matmul_seq\"] < 131072, a
'"
run predict --model llama3-70b $H100 --gpus 1024 --plan "tp=8,cp=16,mb=1,gb=8,seq=131072,cp_algo=allgather,attn_kernel=fa3" --json
check "cp_algo=allgather and attn_kernel=fa3 accepted" "rc_is 0" "json_check '
assert \"cp_algo=allgather\" in d[\"plan\"] and \"attn_kernel=fa3\" in d[\"plan\"], d[\"plan\"]
'"
run predict --model llama3-8b $H100 --gpus 8 --plan "zero=3,gb=64,seq=8192,doc_len=1000,attn_kernel=flex" --json
check "doc_len: packed documents shorten the attention, not the FLOPs counted" "rc_is 0" "no_nonfinite" "json_check '
a = d[\"attention\"]
assert a[\"doc_len\"] == 1000 and 800 < a[\"keys_per_query\"] < 1000, a
assert \"doc_len=1000\" in d[\"plan\"] and \"attn_kernel=flex\" in d[\"plan\"], d[\"plan\"]
'"
run predict --model llama3-8b $H100 --gpus 8 --plan "zero=3,gb=64,seq=8192,fsdp=2" --json
check "fsdp=2: FSDP2's copy-outs are part of compute" "rc_is 0" "no_nonfinite" "json_check '
assert \"fsdp=2\" in d[\"plan\"], d[\"plan\"]
assert 0 < d[\"fsdp_copy_out_s\"] < d[\"time_s\"][\"compute\"], d[\"fsdp_copy_out_s\"]
'"
run predict --model llama3-8b $H100 --gpus 8 --plan "zero=3,gb=64,seq=8192" --json
check "without fsdp=2 there is no copy-out" "rc_is 0" "json_check '
assert d[\"fsdp_copy_out_s\"] == 0, d[\"fsdp_copy_out_s\"]
'"
run predict --model llama3-8b $H100 --gpus 8 --plan "zero=1,gb=64,fsdp=2"
check "fsdp=2 needs zero=3" "rc_is 2" "stderr_has fsdp" "stderr_has 'zero = 1'"
run predict --model llama3-8b $H100 --gpus 8 --plan "zero=3,gb=64,fsdp=3"
check "fsdp=3 is refused" "rc_is 2" "stderr_has fsdp" "stderr_has 3"
run search --model llama3-8b $H100 --gpus 16 --gb 64 --fix "fsdp=2" --top 3 --json
check "search --fix fsdp=2: ZeRO-3 plans only, each run as FSDP2" "rc_is 0" "json_check '
assert d[\"job\"][\"fsdp\"] == 2, d[\"job\"]
assert d[\"top\"] and all(t[\"zero\"] == 3 and \"fsdp=2\" in t[\"plan\"] for t in d[\"top\"]), d[\"top\"]
'"
run search --model llama3-8b $H100 --gpus 16 --gb 64 --fix "zero=1,fsdp=2"
check "search --fix zero=1,fsdp=2 is refused" "rc_is 2" "stderr_has fsdp"
run predict --model llama3-8b $H100 --gpus 8 --plan "zero=3,gb=64,seq=8192,doc_len=0"
check "doc_len=0 is refused" "rc_is 2" "stderr_has doc_len" "stderr_has 0"
run predict --model llama3-8b $H100 --gpus 8 --plan "zero=3,gb=64,seq=8192,doc_len=long"
check "non-numeric doc_len" "rc_is 2" "stderr_has doc_len" "stderr_has long"
run predict --model mixtral-8x7b $H100 --gpus 8 --plan "ep=8,etp=3"
check "etp that does not divide the expert width" "rc_is 2" "stderr_has etp" "stderr_has moe_ffn_hidden"
run predict --model mixtral-8x7b $H100 --gpus 8 --plan "ep=16"
check "ep beyond the DP x CP ranks" "rc_is 2" "stderr_has ep"
run predict --model llama3-8b $H100 --gpus 8 --plan "capacity_factor=abc"
check "non-numeric capacity_factor" "rc_is 2" "stderr_has capacity_factor" "stderr_has abc"
run predict --model llama3-8b $H100 --gpus 8 --plan "fp8_comm=1"
check "fp8_comm without precision=fp8" "rc_is 2" "stderr_has fp8_comm"
run predict --model "$ROOT/tests/data/hf/gpt-oss-120b.json" --gpu b200 --gpus 64 --plan "ep=8,etp=1,mb=4,gb=512,seq=4096,zero=1" --json
check "gpt-oss-120b HF config.json (windows, experts_per_token) predicts" "rc_is 0" "no_nonfinite" "json_check '
assert d[\"moe\"][\"topk\"] == 4 and d[\"moe\"][\"experts\"] == 128, d[\"moe\"]
'"

# --- islands joined by WAN links (docs/islands.md) ---------------------------------------------
XPLAN="zero=3,mb=1,gb=1024,seq=8192,sync=diloco,inner_steps=100,compress=int8"
run predict --model llama3-8b --cluster "$ROOT/examples/clusters/three-continents.json" --plan "$XPLAN" --json
check "predict across three continents (DiLoCo, int8) --json" "rc_is 0" "no_nonfinite" "json_check '
assert len(d[\"islands\"]) == 3 and len(d[\"links\"]) == 3, d.keys()
for k in (\"memory_bytes\", \"time_s\", \"step_s\", \"tokens_per_s_per_gpu\", \"model_tflops_per_gpu\", \"hardware_tflops_per_gpu\", \"hfu\"):
    assert k in d, \"missing DESIGN.md key \" + k
assert all(\"estimate\" in x and x[\"estimate\"][\"feasible\"] in (True, False) for x in d[\"islands\"])
for k in (\"tokens_per_s\", \"compute_util\", \"mfu\", \"mfu_in_steps\", \"period_s\", \"wan_bytes_per_step\", \"wan_bytes_per_hour\", \"egress_usd_per_hour\", \"bound\", \"bottleneck\", \"quality\", \"sync\", \"feasible\", \"reasons\"):
    assert k in d, \"missing \" + k
s = d[\"sync\"]
assert s[\"scheme\"] == \"diloco\" and s[\"inner_steps\"] == 100 and s[\"compress\"] == \"int8\", s
assert abs(s[\"hidden_s_per_period\"] + s[\"exposed_s_per_period\"] - s[\"time_s\"]) < 1e-6 * s[\"time_s\"]
assert sum(x[\"batch_seqs\"] for x in d[\"islands\"]) == d[\"global_batch_seqs\"] <= 1024
assert d[\"bound\"] in (\"compute\", \"communication\")
for l in d[\"links\"]:
    assert l[\"bytes_per_hour\"] > 0 and l[\"usd_per_hour\"] > 0, l
assert abs(d[\"dp_fp32_bytes_per_token\"] / d[\"wan_bytes_per_token\"] - 400) < 1e-6
q = d[\"quality\"]
assert q[\"tokens_to_quality_factor\"] == 1.0 and q[\"published\"] is True and \"Douillard\" in q[\"source\"]
'"
run predict --model llama3-8b --cluster three-continents --plan "$XPLAN"
check "predict across islands, text, by preset name" "rc_is 0" "no_nonfinite" "stdout_has \"compute utilization\"" "stdout_has \"WAN links in use\"" "stdout_has \"tokens-to-quality factor\"" "stdout_has \"bound:\""
run predict --model llama3-8b --cluster three-continents --plan "$XPLAN" --quality-factor 1.25 --json
check "a stated tokens-to-quality factor is reported apart" "rc_is 0" "json_check '
q = d[\"quality\"]
assert q[\"tokens_to_quality_factor\"] == 1.25 and q[\"published\"] is False
assert abs(q[\"tokens_per_s_at_quality\"] * 1.25 - d[\"tokens_per_s\"]) < 1e-6 * d[\"tokens_per_s\"]
'"
run predict --model llama3-8b --cluster three-continents --plan "$XPLAN" --quality-factor 0
check "quality factor 0 is bad input" "rc_is 2" "stderr_has quality-factor"
run predict --model llama3-8b --cluster three-continents --gpus 64 --plan "$XPLAN"
check "--gpus with an islands description is bad input" "rc_is 2" "stderr_has islands"
run predict --model llama3-8b --cluster three-continents --plan "zero=3,gb=1024,sync=hsdp,inner_steps=10"
check "inner_steps with sync=hsdp is bad input" "rc_is 2" "stderr_has inner_steps"
run predict --model llama3-8b --cluster three-continents --plan "zero=3,gb=1024,sync=gossip"
check "unknown sync scheme is bad input naming it" "rc_is 2" "stderr_has sync" "stderr_has gossip"
run predict --model llama3-8b --cluster three-continents --plan "zero=3,gb=1024,sync=diloco,compress=topk:2"
check "top-k fraction out of range is bad input" "rc_is 2" "stderr_has topk"
run predict --model llama3-8b --cluster two-islands-wan100 --plan "tp=8,zero=1,gb=512,sync=diloco,inner_steps=50" --json
check "a cluster with a wan tier splits into islands" "rc_is 0" "no_nonfinite" "json_check '
assert len(d[\"islands\"]) == 2 and d[\"islands\"][0][\"gpus\"] == 512, d[\"islands\"]
'"
run predict --model llama3-8b --cluster three-continents --plan "zero=3,mb=1,gb=1024,seq=8192,sync=pp" --json
check "pipeline stages in different islands" "rc_is 0" "no_nonfinite" "json_check '
assert sum(x[\"layers\"] for x in d[\"islands\"]) == 32
assert d[\"sync\"][\"scheme\"] == \"pp\" and len(d[\"links\"]) == 2
'"
run predict --model intellect-1 --cluster intellect1-us --plan "zero=3,mb=1,gb=1792,seq=8192,recompute=full,sync=diloco,inner_steps=100,compress=int8" --json
check "C7: INTELLECT-1 across the US" "rc_is 0" "json_check '
assert abs(d[\"compute_util\"] - 0.96) <= 0.08, d[\"compute_util\"]
assert 0.362 <= d[\"mfu_in_steps\"] <= 0.414, d[\"mfu_in_steps\"]
'"
run predict --model intellect-1 --cluster intellect1-continents --plan "zero=3,mb=1,gb=1792,seq=8192,recompute=full,sync=diloco,inner_steps=100,compress=int8,buckets=44,transport=rendezvous,ring=tsp" --json
check "C7: INTELLECT-1 across continents as PRIME synchronized (buckets, rendezvous, tsp ring)" "rc_is 0" "no_nonfinite" "json_check '
s = d[\"sync\"]
assert s[\"buckets\"] == 44 and s[\"transport\"] == \"rendezvous\" and s[\"ring\"] == \"tsp\", s
assert 0.90 < d[\"compute_util\"] < 0.93, d[\"compute_util\"]
'"
run predict --model intellect-1 --cluster intellect1-us --plan "zero=3,mb=1,gb=1792,seq=8192,recompute=full,sync=diloco,inner_steps=100,compress=int8,buckets=44,transport=rendezvous,ring=tsp"
check "buckets, transport and ring order in the text report" "rc_is 0" "stdout_has \"44 buckets one after the other, rendezvous transport, ring order tsp\""
run predict --model intellect-1 --cluster intellect1-us --plan "zero=3,gb=1792,sync=diloco,buckets=0"
check "buckets=0 is bad input" "rc_is 2" "stderr_has plan.buckets"
run predict --model intellect-1 --cluster intellect1-us --plan "zero=3,gb=1792,sync=diloco,transport=udp"
check "an unknown transport is bad input" "rc_is 2" "stderr_has plan.transport"
run predict --model llama3-8b --cluster three-continents --plan "zero=3,mb=1,gb=1024,seq=8192,sync=pp,buckets=4"
check "buckets with sync=pp is bad input" "rc_is 2" "stderr_has plan.buckets"
run predict --model llama3-8b --cluster three-continents --plan "zero=3,mb=1,gb=1024,seq=8192,sync=fl,ring=tsp"
check "a ring order without a ring exchange is bad input" "rc_is 2" "stderr_has plan.ring"
printf '{"islands": [{"name": "a", "node": "dgx-h100", "num_gpus_count": 8}, {"name": "b", "node": "dgx-h100", "num_gpus_count": 8}], "wan_default": {"link": "wan-10", "latency_s": 0.05, "loss_frac": 0.5}}' > "$TMP/lossy.json"
run predict --model llama3-8b --cluster "$TMP/lossy.json" --plan "zero=3,mb=1,gb=32,seq=4096,sync=diloco"
check "a packet loss above 0.1 is bad input naming the field" "rc_is 2" "stderr_has loss_frac"
printf '{"islands": [{"name": "a", "node": "dgx-h100", "num_gpus_count": 8}, {"name": "b", "node": "dgx-h100", "num_gpus_count": 8}], "wan_default": {"link": "wan-10", "latency_s": 0.05, "loss_frac": 1e-4}}' > "$TMP/lossy.json"
run predict --model llama3-8b --cluster "$TMP/lossy.json" --plan "zero=3,mb=1,gb=32,seq=4096,sync=diloco"
check "a lossy WAN: TCP under packet loss named as the limit" "rc_is 0" "no_nonfinite" "stdout_has \"limited by TCP under packet loss\""
run predict --model llama3-8b --cluster dgx-h100 --gpus 8 --plan "tp=8,mb=1,gb=64,seq=4096,buckets=4"
check "a key across islands on one cluster is bad input, not ignored" "rc_is 2" "stderr_has plan.buckets"
run islands-scale --model intellect-1 --cluster three-continents --plan "zero=3,mb=1,gb=1024,seq=4096,recompute=full,sync=diloco,ring=tsp,exchange=star" --island-gpus 8:64
check "islands-scale: a plan rejected at every size is bad input" "rc_is 2" "stderr_has plan.ring"
run islands-scale --model llama3-70b --cluster three-continents --plan "tp=8,zero=1,mb=1,gb=2048,seq=8192,recompute=full,sync=hsdp" --island-gpus 64:4096 --json
check "islands-scale finds where bigger islands stop paying (HSDP over the WAN)" "rc_is 0" "no_nonfinite" "json_check '
r = d[\"rows\"]
assert [x[\"island_gpus\"] for x in r] == [64, 128, 256, 512, 1024, 2048, 4096]
assert all(x[\"ok\"] for x in r)
assert all(r[i + 1][\"tokens_per_s\"] >= r[i][\"tokens_per_s\"] for i in range(len(r) - 1))
assert d[\"diminishing_from_island_gpus\"] == 256, d[\"diminishing_from_island_gpus\"]
assert r[-1][\"bound\"] == \"communication\"
'"
run scale --model llama3-70b --cluster three-continents --plan "tp=8,zero=1,mb=1,gb=2048,seq=8192,recompute=full,sync=hsdp" --island-gpus 64:256 --json
check "scale --island-gpus is the islands' scaling study (the issue's spelling)" "rc_is 0" "no_nonfinite" "json_check '
assert [x[\"island_gpus\"] for x in d[\"rows\"]] == [64, 128, 256]
'"
run islands-scale --model llama3-70b --cluster three-continents --plan "tp=8,zero=1,mb=1,gb=2048,seq=8192,recompute=full,sync=diloco,inner_steps=100,compress=int8" --island-gpus 64:1024
check "islands-scale, text (DiLoCo keeps scaling)" "rc_is 0" "no_nonfinite" "stdout_has \"no diminishing returns\""
run islands-scale --model llama3-70b --cluster dgx-h100-roce100 --plan "tp=8,gb=2048,sync=hsdp" --island-gpus 64:128
check "islands-scale needs an islands description" "rc_is 2" "stderr_has islands"
run islands-scale --model llama3-70b --cluster three-continents --plan "tp=8,gb=2048,sync=hsdp" --island-gpus 128:64
check "islands-scale with A > B is bad input" "rc_is 2" "stderr_has island-gpus"

RUNS="$ROOT/../shared/validation/runs.csv"
if [ -f "$RUNS" ]; then
    run validate "$RUNS" --json
    check "validate runs.csv --json" "rc_is 0" "no_nonfinite" "json_check '
for k in (\"rows\", \"skipped\", \"summary\"): assert k in d, \"missing key \" + k
s = d[\"summary\"]
for k in (\"n\", \"mean_abs_error_pct\", \"median_abs_error_pct\", \"max_abs_error_pct\", \"by_source_group\"):
    assert k in s, \"missing summary.\" + k
assert s[\"n\"] > 0 and s[\"n\"] == len(d[\"rows\"]), \"summary.n %r, %d rows\" % (s[\"n\"], len(d[\"rows\"]))
assert s[\"median_abs_error_pct\"] <= s[\"max_abs_error_pct\"]
moe = [x for x in d[\"rows\"] if x[\"id\"] in (\"mbridge2511_19\", \"mbridge2511_20\", \"mbridge2511_21\", \"mbridge2511_22\", \"mbridge2511_26\", \"mbridge2511_27\")]
assert len(moe) == 6, \"MoE rows predicted: %d\" % len(moe)
'"
    run validate "$RUNS"
    check "validate runs.csv, text" "rc_is 0" "stdout_nonempty" "no_nonfinite"
else
    echo "skip - validate runs.csv ($RUNS is absent)"
fi


# --- search and scale ----------------------------------------------------------------------------
S7="--model llama2-7b $H100 --gpus 8 --gb 16 --seq 4096"
run search $S7 --json --top 5
check "search --json: top sorted, counts add up, explanation" "rc_is 0" "no_nonfinite" "json_check '
for k in (\"top\", \"pareto_memory\", \"pareto_cost\", \"counts\", \"explanation\", \"objective\", \"job\"):
    assert k in d, \"missing key \" + k
assert len(d[\"top\"]) == 5, len(d[\"top\"])
s = [t[\"score\"] for t in d[\"top\"]]
assert s == sorted(s), s
c = d[\"counts\"]
assert c[\"evaluated\"] + c[\"memory_checked\"] + c[\"over_memory_proven\"] + c[\"order_skipped\"] + c[\"bound_skipped\"] == c[\"plans\"], c
assert c[\"feasible\"] + c[\"over_memory\"] + c[\"failed\"] == c[\"plans\"], c
for t in d[\"top\"]:
    for k in (\"plan\", \"step_s\", \"tokens_per_s\", \"mfu\", \"headroom_bytes\", \"bottleneck\"): assert k in t, k
    assert t[\"headroom_bytes\"] >= 0 and t[\"bottleneck\"]
assert d[\"explanation\"][\"text\"], d[\"explanation\"]
assert d[\"pareto_memory\"][0][\"tokens_per_s\"] == d[\"top\"][0][\"tokens_per_s\"]
'"
W7=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["top"][0]["plan"]); print(repr(d["top"][0]["memory_bytes"]))' "$OUT" 2>/dev/null)

run search $S7
check "search, text: top plans, frontier, rejections, why" "rc_is 0" "no_nonfinite" \
    "grep -q '^top ' $OUT || { WHY='no top list'; false; }" \
    "grep -q 'Pareto frontier, throughput vs memory headroom' $OUT || { WHY='no frontier'; false; }" \
    "grep -q '^rejected:' $OUT || { WHY='no rejections'; false; }" \
    "grep -q '^why #1: ' $OUT || { WHY='no explanation'; false; }"

run search $S7 --csv --price-gpu-hour 2.5
check "search --csv: header, top and both frontiers" "rc_is 0" "no_nonfinite" \
    "python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); s=set(x[\"set\"] for x in r); assert s == {\"top\",\"pareto_memory\",\"pareto_cost\"}, s; assert all(float(x[\"step_s\"]) > 0 for x in r)' $OUT || { WHY='bad CSV'; false; }"

run search $S7 --objective energy --json
check "search --objective energy ranks by facility joules per token" "rc_is 0" "no_nonfinite" "json_check '
top = d[\"top\"] if \"top\" in d else d[\"plans\"]
assert len(top) > 0
j = [x[\"energy_J_per_token\"] for x in top]
assert all(v > 0 for v in j), j
assert j == sorted(j), j
'"
run search $S7 --objective cost
check "search --objective cost without a price: exit 2" "rc_is 2" "stderr_has price-gpu-hour"
run search --model llama2-7b $H100 --gpus 8
check "search without --gb: exit 2" "rc_is 2" "stderr_has gb"
run search --model llama2-7b $H100 --gpus 64:8 --gb 16
check "search --gpus 64:8: exit 2" "rc_is 2" "stderr_has 64:8"
run search $S7 --json --csv
check "search --json --csv: exit 2" "rc_is 2" "stderr_has exclude"
# Nothing can be formed (5128 = 8 x 641, 641 prime) is bad input with the reason and what would
# work; nothing fits in memory is an answer (exit 0).
run search --model llama3-405b $H100 --gpus 5128 --gb 2048 --json
check "search with no formable plan: exit 2, why, nearest counts and batches" "rc_is 2" \
    "stderr_has no plan can be formed" "stderr_has 641" "stderr_has 5120 and 5184" "stderr_has 1923 and 2564"
run search --model llama3-405b $H100 --gpus 8 --gb 8
check "search where nothing fits in memory: exit 0, says so" "rc_is 0" "stdout_has no plan fits in memory"
run search $S7 --rank "tp=3"
check "search --rank with a plan that cannot be formed: exit 2" "rc_is 2" "stderr_has heads"
run search $S7 --fix "tp=2,recompute=full" --json --top 3
check "search --fix pins keys" "rc_is 0" "json_check '
assert all(t[\"tp\"] == 2 and t[\"recompute\"] == \"full\" for t in d[\"top\"]), d[\"top\"]
'"

run search --model llama2-7b $H100 --gpus 32 --gb 32 --seq 4096 --fix "tp=4,recompute=none,zero=1" --orders all --json --top 5
check "search --orders all: every rank order, named in the plans" "rc_is 0" "no_nonfinite" "json_check '
c = d[\"counts\"]
assert c[\"plans\"] > 1000, c
orders = set(t[\"order\"] for t in d[\"top\"] + d[\"pareto_memory\"])
assert \"default\" in orders and len(orders) >= 2, orders
'"
run search $S7 --orders some
check "search --orders some: exit 2" "rc_is 2" "stderr_has orders"

# The decision at the memory threshold through a --catalog override of memory_bytes: with exactly
# the winner's need it stays the winner; one representable value less and another plan wins.
if [ -n "$W7" ]; then
    WPLAN=$(printf '%s\n' "$W7" | sed -n 1p)
    WNEED=$(printf '%s\n' "$W7" | sed -n 2p)
    for side in at below; do
        python3 - "$ROOT/data/gpus.json" "$WNEED" "$side" >"$TMP/gpu-$side.json" <<'PYEOF'
import json, math, sys
g = [x for x in json.load(open(sys.argv[1]))["gpus"] if x["key"] == "h100-sxm5-80gb"][0]
need = float(sys.argv[2])
g["memory_bytes"] = need if sys.argv[3] == "at" else math.nextafter(need, 0.0)
print(json.dumps({"gpus": [g]}))
PYEOF
    done
    run search $S7 --json --top 1 --catalog "$TMP/gpu-at.json"
    check "memory threshold: capacity = the winner's need keeps it" "rc_is 0" "json_check '
assert d[\"top\"][0][\"plan\"] == \"$WPLAN\", d[\"top\"][0][\"plan\"]
'"
    run search $S7 --json --top 1 --catalog "$TMP/gpu-below.json"
    check "memory threshold: one value below, another plan wins" "rc_is 0" "json_check '
assert d[\"top\"][0][\"plan\"] != \"$WPLAN\"
assert d[\"top\"][0][\"memory_bytes\"] < $WNEED
'"
else
    CMD="search $S7 --json"
    fail "memory threshold" "no winner from the first search"
fi

run scale --model llama2-7b $H100 --gpus 8:16 --gb 32 --seq 4096 --fix recompute=none --json
check "scale --json: one point per count, efficiency 1 at the first" "rc_is 0" "no_nonfinite" "json_check '
p = d[\"points\"]
assert [x[\"gpus\"] for x in p] == [8, 16], p
assert abs(p[0][\"strong\"][\"efficiency\"] - 1) < 1e-12 and abs(p[0][\"weak\"][\"efficiency\"] - 1) < 1e-12
assert [x[\"weak\"][\"gb\"] for x in p] == [16, 32]
for x in p:
    for k in (\"strong\", \"weak\"):
        assert 0 < x[k][\"efficiency\"] <= 1.05, x
'"
run scale --model llama2-7b $H100 --gpus 8:16 --gb 32 --seq 4096 --fix recompute=none --csv
check "scale --csv" "rc_is 0" "no_nonfinite" \
    "python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); assert len(r) == 2 and float(r[1][\"strong_efficiency\"]) > 0' $OUT || { WHY='bad CSV'; false; }"
run scale --model llama2-7b $H100 --gpus 8:16 --gb 32 --seq 4096 --fix recompute=none
check "scale, text" "rc_is 0" "stdout_nonempty" "no_nonfinite"
# --- trace: its caps, checked from the plan before anything is allocated (issue 15, defect 2) ---
# run_rss ARGS...: run meshplan as `run` does and keep its peak resident memory (KiB) in RSS_KB.
run_rss() {
    CMD="meshplan $*"
    local r
    r=$(python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "w") as o, open(sys.argv[2], "w") as e:
    rc = subprocess.call(sys.argv[3:], stdout=o, stderr=e)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$OUT" "$ERR" "$MP" "$@")
    RC=${r% *}
    RSS_KB=${r#* }
}
rss_below() {
    [ "$RSS_KB" -lt "$1" ] || { WHY="peak resident memory $RSS_KB KiB, expected under $1 KiB"; return 1; }
}
no_file() {
    [ ! -e "$1" ] || { WHY="$1 was written"; return 1; }
}
run_rss trace --model llama3-8b $H100 --gpus 1024 --plan "tp=8,pp=32,gb=1073741824" -o "$TMP/cap1.json"
check "trace of 2^28 micro-batches exits 2 naming the count and max_events, allocating nothing" "rc_is 2" \
    "stderr_has 51539607552" "stderr_has 'max_events = 10000000'" "stderr_has 'gb = 208332'" \
    "stderr_has --max-events" "rss_below 204800" "no_file $TMP/cap1.json"
run_rss trace --model llama3-8b $H100 --gpus 64 --plan "tp=8,pp=8,gb=16777216" -o "$TMP/cap2.json"
check "trace of 2^24 micro-batches exits 2 before building its graph (once 2.5 GB)" "rc_is 2" \
    "stderr_has 2415919104" "stderr_has 'gb = 69444'" "rss_below 204800" "no_file $TMP/cap2.json"
run_rss trace --model llama3-8b $H100 --gpus 64 --plan "tp=8,pp=8,gb=65536" -o "$TMP/cap3.json"
check "trace whose file would pass 256 MiB exits 2 before simulating (once a 2 GB file)" "rc_is 2" \
    "stderr_has --max-trace-bytes" "stderr_has '256 MiB'" "stderr_has 1056964608" "rss_below 204800" \
    "no_file $TMP/cap3.json"
run trace --model llama3-70b $H100 --gpus 1024 --plan "tp=8,pp=4,vpp=2,mb=1,gb=64,seq=8192,zero=1" \
    -o "$TMP/cap4.json" --max-trace-bytes 100K
check "trace passing --max-trace-bytes while written exits 2 and leaves no partial file" "rc_is 2" \
    "stderr_has max_bytes" "stderr_has --max-trace-bytes" "no_file $TMP/cap4.json"
run trace --model llama3-70b $H100 --gpus 1024 --plan "tp=8,pp=4,vpp=2,mb=1,gb=64,seq=8192,zero=1" \
    -o "$TMP/cap5.json" --max-trace-bytes 1M
check "trace under --max-trace-bytes writes the whole trace" "rc_is 0" \
    "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' $TMP/cap5.json || { WHY='bad trace'; false; }"
run trace --model llama3-70b $H100 --gpus 1024 --plan "tp=8,pp=4,mb=1,gb=64,seq=8192" --max-trace-bytes 0
check "trace --max-trace-bytes 0 exits 2" "rc_is 2" "stderr_has max-trace-bytes"


# --- commands as tables: per-command help, --opt=value, nearest names -----------------------------
run search --help
cp "$OUT" "$TMP/search_help"
check "search --help: its own usage and options" "rc_is 0" "stdout_has 'usage: meshplan search'" \
    "stdout_has '  --no-prune'" "stdout_has '  --objective O'" \
    "! grep -q -- '--trials' \"$OUT\" || { WHY='lists run options'; false; }"
run run --help
check "run --help: its own usage and options, not search's" "rc_is 0" \
    "stdout_has 'usage: meshplan run --model M --gpu G --gpus N --plan PLAN --tokens T'" \
    "stdout_has '  --trials N'" "stdout_has '  --checkpoint-interval-s S'" \
    "! grep -q -- '--no-prune' \"$OUT\" || { WHY='lists search options'; false; }" \
    "! cmp -s \"$OUT\" \"$TMP/search_help\" || { WHY='same help as search'; false; }"
run help run
check "help run is run --help" "rc_is 0" "stdout_has 'usage: meshplan run'"
run help
check "help lists every command with a summary" "rc_is 0" "stdout_has '  islands-scale  grow'" \
    "stdout_has '  run            a whole training run'" "stdout_has 'plan keys:'"
run predict --model=llama2-7b --gpu=h100-sxm5-80gb --gpus=8 --plan=tp=2,mb=1,gb=64,seq=4096 --json
cp "$OUT" "$TMP/eq.json"
run predict --model llama2-7b --gpu h100-sxm5-80gb --gpus 8 --plan tp=2,mb=1,gb=64,seq=4096 --json
check "--opt=value is --opt value" "rc_is 0" "cmp -s \"$OUT\" \"$TMP/eq.json\" || { WHY='outputs differ'; false; }"
run predict --model llama2-7b $H100 --gpus 8 --plan tp=2 --json=yes
check "a flag given a value is bad usage" "rc_is 2" "stderr_has 'takes no value'" "stderr_has '--json'"
run predict --model llama2-7b $H100 --gpu-count 8
check "a misspelled option suggests the nearest" "rc_is 2" \
    "stderr_has 'unknown option \"--gpu-count\" for predict; did you mean --gpus?'"
run search --modle llama2-7b $H100 --gpus 8 --gb 64
check "a transposed option suggests the nearest" "rc_is 2" "stderr_has 'did you mean --model?'"
run serach --model llama2-7b
check "a misspelled command suggests the nearest" "rc_is 2" \
    "stderr_has 'unknown command \"serach\"; did you mean search?'"
run run --model llama2-7b $H100 --gpus 8 --plan tp=2
check "a missing required option names it and what it is" "rc_is 2" "stderr_has 'run: --tokens T is required'" \
    "stderr_has 'training tokens'"

# Plan keys (docs/plan.md): a key across islands on a one-cluster command is bad input naming it,
# never ignored; an unknown key suggests the nearest one; help lists the keys from the tables.
run trace --model llama3-8b $H100 --gpus 64 --plan "tp=8,gb=512,sync=diloco" -o "$TMP/sync.json"
check "sync on a one-cluster command is bad input naming it" "rc_is 2" "stderr_has 'plan.sync = diloco'"
run predict --model llama3-8b $H100 --gpus 64 --plan "tp=8,gb=512,schedul=zb"
check "an unknown plan key suggests the nearest one" "rc_is 2" "stderr_has 'did you mean \"schedule\"'"
run help
check "help lists plan keys with values and defaults" "rc_is 0" \
    "stdout_has '  capacity_factor  [0, 64]: '" "stdout_has '  split            speed|gpus|W1:W2:...: '"
# --- infer (docs/infer.md) -----------------------------------------------------------------------
run infer --model llama3-70b $H100 --gpus 4 --plan "tp=4,weights=fp8,kv=fp8,batch=64,in=2048,out=256" --json
check "infer llama3-70b tp=4 fp8 --json has the issue's keys" "rc_is 0" "no_nonfinite" "json_check '
for k in [\"ttft_s\", \"tpot_s\", \"e2e_s\", \"output_tokens_per_s\", \"output_tokens_per_s_per_gpu\",
          \"requests_per_s\", \"memory_bytes\", \"kv_bytes_per_token\", \"max_concurrency\", \"power_w\",
          \"energy_j_per_output_token\", \"prefill\", \"decode\", \"assumed\"]:
    assert k in d, \"missing key \" + k
for k in [\"weights\", \"kv\", \"activations\", \"runtime\", \"total\", \"capacity\"]:
    assert k in d[\"memory_bytes\"], \"missing memory_bytes.\" + k
for ph in (\"prefill\", \"decode\"):
    for k in [\"compute_s\", \"memory_s\", \"communication_s\", \"total_s\", \"bound\"]:
        assert k in d[ph], \"missing %s.%s\" % (ph, k)
assert d[\"kv_bytes_per_token\"] == 2 * 80 * 8 * 128, d[\"kv_bytes_per_token\"]
assert d[\"decode\"][\"bound\"] in (\"memory\", \"communication\"), d[\"decode\"][\"bound\"]
assert 0 < d[\"tpot_s\"] < d[\"e2e_s\"] and d[\"feasible\"] is True
assert isinstance(d[\"assumed\"], list) and d[\"assumed\"]
'"
run infer --model llama3-8b $H100 --plan "in=1024,out=128" --batch 1:512 --csv
check "infer --batch 1:512 --csv: one row per batch" "rc_is 0" "no_nonfinite" "lines_are 11" \
    "stdout_has 'batch,feasible,ttft_s,tpot_s'"
run infer --model llama3-8b $H100 --plan "in=1024,out=128" --batch 1:64 --json
check "infer --batch sweep --json" "rc_is 0" "json_check '
s = d[\"sweep\"]
assert [r[\"plan\"].split(\"batch=\")[1].split(\",\")[0] for r in s] == [\"1\", \"2\", \"4\", \"8\", \"16\", \"32\", \"64\"]
assert all(b[\"output_tokens_per_s\"] >= a[\"output_tokens_per_s\"] for a, b in zip(s, s[1:]))
'"
run infer --model llama3-8b $H100 --plan "in=1024,out=128,batch=8"
check "infer text report" "rc_is 0" "stdout_has 'TPOT (ITL)'" "stdout_has 'max concurrency'"
run infer --model llama3-8b $H100 --plan "tpp=2"
check "infer: an unknown plan key exits 2 naming it" "rc_is 2" "stderr_has tpp" "stderr_has 'did you mean \"tp\"'"
run infer --model llama3-8b $H100 --plan "weights=fp3"
check "infer: a bad weights value exits 2 naming it" "rc_is 2" "stderr_has weights" "stderr_has fp3"
run infer --model llama3-8b $H100 --gpus 8 --plan "tp=3"
check "infer: tp not dividing heads and GPUs exits 2" "rc_is 2" "stderr_has plan.tp"
run infer --model llama3-8b $H100 --batch 0:4
check "infer: a bad --batch range exits 2" "rc_is 2" "stderr_has batch"
# --- infer-search (docs/infer.md) ----------------------------------------------------------------
run infer-search --model llama3-70b --gpus 8 --gpu h100-sxm5-80gb,h200-sxm-141gb,b200,mi300x --in 1024 --out 512 --slo "ttft_p99=2s,tpot_p99=50ms" --objective cost --json
check "infer-search 4 GPU types --json: a pick within the SLO per type" "rc_is 0" "no_nonfinite" "json_check '
assert [t[\"gpu\"] for t in d[\"per_gpu\"]] == [\"h100-sxm5-80gb\", \"h200-sxm-141gb\", \"b200\", \"mi300x\"]
for t in d[\"per_gpu\"]:
    b = t[\"best\"]
    assert b[\"tp\"] * b[\"pp\"] * b[\"replicas\"] == 8
    assert b[\"ttft_p99_s\"] <= 2 and b[\"tpot_p99_s\"] <= 0.05
    assert b[\"usd_per_mtoken\"] > 0 and b[\"j_per_mtoken\"] > 0 and \"best cost\" in t[\"why\"]
best = min(d[\"per_gpu\"], key=lambda t: t[\"best\"][\"usd_per_mtoken\"])
assert d[\"pick\"] == best[\"gpu\"]
'"
run infer-search --model llama3-8b --gpus 1 --gpu h100-sxm5-80gb --objective throughput
check "infer-search text: table, explanation and pick" "rc_is 0" "stdout_has 'pick: h100-sxm5-80gb'" "stdout_has 'Runner-up'"
run infer-search --model llama3-8b --gpu h100-sxm5-80gb --slo "ttft_p99=2parsecs"
check "infer-search: a bad SLO time exits 2 naming it" "rc_is 2" "stderr_has ttft_p99"
run infer-search --model llama3-8b --gpu h100-sxm5-80gb --objective speed
check "infer-search: a bad objective exits 2 naming it" "rc_is 2" "stderr_has objective" "stderr_has speed"
run infer-search --model llama3-8b --gpu rtx4090,nosuchgpu
check "infer-search: an unknown GPU exits 2 naming it" "rc_is 2" "stderr_has nosuchgpu"
# --- rl, rl-search (docs/rl.md) ---------------------------------------------------------------
run rl --model qwen2.5-7b --cluster dgx-h100 --gpus 64 --algorithm grpo --prompts 512 --responses 8 --prompt-len 1024 --response-len "mean=2000,max=8192,dist=lognormal" --placement disaggregated:rollout=48,train=16 --rollout-plan "tp=2,engine=vllm" --train-plan "zero=3,mb=2" --json
check "rl disaggregated --json has the issue's keys" "rc_is 0" "no_nonfinite" "json_check '
for k in (\"step_s\", \"tokens_per_s\", \"tokens_per_s_per_gpu\", \"usd_per_step\", \"j_per_step\", \"assumed\"):
    assert k in d, k
for k in (\"rollout\", \"rollout_tail_wait\", \"ref\", \"logprob\", \"reward\", \"train\", \"weight_sync\", \"switch\"):
    assert k in d[\"time_s\"], k
assert set(d[\"idle_s\"]) >= {\"rollout_pool\", \"train_pool\"}
assert set(d[\"weight_sync\"]) >= {\"bytes\", \"link\", \"s\"}
t = d[\"time_s\"]
assert abs(d[\"step_s\"] - (t[\"rollout\"] + t[\"ref\"] + t[\"logprob\"] + t[\"reward\"] + t[\"critic\"] + t[\"train\"] + t[\"weight_sync\"])) < 1e-6 * d[\"step_s\"]
assert d[\"rollout_gpus\"] == 48 and d[\"train_gpus\"] == 16
'"
run rl --model qwen2.5-7b --cluster dgx-h100 --gpus 64 --placement async_one_step:rollout=48,train=16
check "rl async_one_step text report" "rc_is 0" "stdout_has 'weight sync'" "stdout_has 'idle per step'"
run rl --model qwen2.5-7b --cluster dgx-h100 --gpus 64 --placement disaggregated:rollout=40,train=16
check "rl: pools not adding up exit 2" "rc_is 2" "stderr_has 'adding up'"
run rl --model qwen2.5-7b --cluster dgx-h100 --gpus 64 --placement split
check "rl: an unknown placement exits 2 naming it" "rc_is 2" "stderr_has split"
run rl --model qwen2.5-7b --cluster dgx-h100 --gpus 64 --response-len "mean=9000,max=100"
check "rl: max below mean exits 2" "rc_is 2" "stderr_has max"
run rl --model qwen2.5-7b --cluster dgx-h100 --gpus 64 --algorithm ppx
check "rl: an unknown algorithm exits 2" "rc_is 2" "stderr_has ppx"
run rl-search --model qwen2.5-7b --cluster dgx-h100 --gpus 64 --response-len "mean=2000,max=8192" --json
check "rl-search 64 GPUs --json: best first, dynamic gain with a reason" "rc_is 0" "no_nonfinite" "json_check '
c = d[\"candidates\"]
assert c[0][\"step_s\"] == d[\"best\"][\"step_s\"]
assert all(x[\"step_s\"] >= c[0][\"step_s\"] for x in c if x[\"feasible\"])
assert d[\"dynamic\"][\"gain_frac\"] >= 0 and len(d[\"dynamic\"][\"why\"]) > 20
assert d[\"dynamic\"][\"step_s\"] <= d[\"best_static\"][\"step_s\"]
'"

# ---- the model's context (mp_model.context_len) and the GPU count of an inference plan ----
run infer --model llama3-8b --gpu h100-sxm5-80gb --plan in=200000,out=10
check "infer: in + out over the model's 8192-token context exits 2 naming both and the limit" "rc_is 2" \
    "stderr_has 'in + out = 200000 + 10 = 200010 tokens'" "stderr_has 'context of 8192 tokens'"
run infer --model llama3-8b --gpu h100-sxm5-80gb --plan in=8000,out=192
check "infer: in + out = the context exactly is accepted" "rc_is 0" "stdout_nonempty"
run infer --model llama3-8b --gpu h100-sxm5-80gb --plan in=8000,out=100,batch=2,longest=193
check "infer: a static batch's longest response counts against the context" "rc_is 2" "stderr_has 'in + longest = 8000 + 193'"
run serve --model llama3-8b --gpu h100-sxm5-80gb --plan tp=1 --rate 1/s --lengths fixed:8000:500
check "serve: fixed lengths over the context exit 2" "rc_is 2" "stderr_has 'the job cannot be formed'" \
    "stderr_has 'in + out = 8000 + 500 = 8500 tokens'"
run serve --model llama2-7b --gpu h100-sxm5-80gb --plan tp=1 --rate 1/s --lengths sharegpt
check "serve: ShareGPT draws over llama2-7b's 4096 context are counted and refused" "rc_is 2" \
    "stderr_has 'requests over the context'" "stderr_has 'context of 4096 tokens'"
run predict --model llama3-8b --gpu h100-sxm5-80gb --gpus 8 --plan tp=1,seq=32768,gb=64,recompute=full
check "predict: RoPE training seq over the context only warns" "rc_is 0" "stdout_nonempty" \
    "stderr_has 'warning: plan.seq = 32768 is over llama3-8b'"
run predict --model gpt3-175b --gpu h100-sxm5-80gb --gpus 64 --plan tp=8,pp=8,seq=4096,gb=64
check "predict: seq over a learned position table cannot be formed" "rc_is 2" "stderr_has '2048 learned positions'"
run infer --model llama3-8b --gpu h100-sxm5-80gb --gpus 7 --plan tp=2
check "infer: tp not dividing the GPUs exits 2 with the counts that work (was 'dp 0')" "rc_is 2" \
    "stderr_has 'tp x pp = 2 x 1 = 2 GPUs per replica does not divide'" "stderr_has '7 GPUs'" "stderr_has '6 or 8'"
run serve --model llama3-8b --gpu h100-sxm5-80gb --gpus 7 --plan tp=2 --rate 1/s
check "serve: tp not dividing the GPUs exits 2" "rc_is 2" "stderr_has 'does not divide'"
python3 - "$TMP/ctx.csv" <<'PY'
import csv, sys
cols = ["id", "source_group", "model", "hf_repo", "gpu", "num_gpus", "tp", "pp", "ep", "dp", "framework",
        "framework_version", "weight_dtype", "kv_dtype", "input_len", "output_len", "length_dist", "scenario",
        "batch", "request_rate_per_s", "latency_slo", "metric", "value", "quality", "notes", "source"]
base = dict.fromkeys(cols, "")
base.update(source_group="test", model="llama3-8b", gpu="h100-sxm5-80gb", num_gpus="1", tp="1", pp="1", dp="1",
            framework="vllm", weight_dtype="bf16", input_len="1024", output_len="128", length_dist="fixed",
            scenario="offline", batch="16", metric="output_tokens_per_s", value="1000", quality="exact",
            source="cli_e2e.sh")
w = csv.DictWriter(open(sys.argv[1], "w", newline=""), fieldnames=cols)
w.writeheader()
w.writerow(dict(base, id="ctx_ok"))
w.writerow(dict(base, id="ctx_over", input_len="8000", output_len="500"))
PY
run infer --model llama3-8b --gpu v100-sxm2-32gb --plan weights=bf16
check "infer: bf16 on a GPU with no bf16 rate says it is computed in fp16 (was silent)" "rc_is 0" \
    "stdout_has 'computed in fp16'"
run validate "$TMP/ctx.csv" --json
check "validate: an inference row over the model's context is skipped with the reason" "rc_is 0" "json_check '
assert [r[\"id\"] for r in d[\"rows\"]] == [\"ctx_ok\"], d[\"rows\"]
s = {x[\"id\"]: x[\"reason\"] for x in d[\"skipped\"]}
assert \"context of 8192 tokens\" in s[\"ctx_over\"], s
'"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]

#!/usr/bin/env bash
# tests/serve_e2e.sh MESHPLAN — meshplan serve and serve-search end to end: --json carries the
# issue's keys as objects, the same seed gives the same JSON, --trace is a Chrome trace with one
# slice per request phase, a trace CSV and a lengths CSV are read, disaggregation reports its
# transfer, serve-search names a best plan, and bad input exits 2 naming the field.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
job=(--model llama3-8b --gpu h100-sxm5-80gb --gpus 2 --plan "tp=1,dp=2" --requests 300)

"$bin" serve "${job[@]}" --rate 20/s --lengths sharegpt --slo "ttft_p99=200ms,tpot_p99=20ms" --json > "$tmp/a.json"
check "serve --json runs" "[ \$? -eq 0 ]"
check "the issue's keys, as objects" "python3 -c 'import json; d=json.load(open(\"$tmp/a.json\")); \
assert all(set(d[k])>={\"mean\",\"p50\",\"p90\",\"p99\"} for k in (\"ttft_s\",\"tpot_s\",\"e2e_s\",\"queue_s\")); \
assert all(k in d for k in (\"output_tokens_per_s\",\"requests_per_s\",\"goodput_requests_per_s\",\"preemptions\",\"replicas\")); \
assert set(d[\"kv_use\"])>={\"mean\",\"max\"} and len(d[\"replicas\"])==2 and d[\"feasible\"]'"
"$bin" serve "${job[@]}" --rate 20/s --lengths sharegpt --slo "ttft_p99=200ms,tpot_p99=20ms" --json > "$tmp/b.json"
check "deterministic under the seed" "cmp -s $tmp/a.json $tmp/b.json"

"$bin" serve "${job[@]}" --rate 20/s --arrivals gamma:2 --trace "$tmp/t.json" > /dev/null
check "--trace is a Chrome trace with the phases" "python3 -c 'import json; e=json.load(open(\"$tmp/t.json\"))[\"traceEvents\"]; \
n={x[\"name\"] for x in e}; assert {\"prefill\",\"decode\"}<=n and all(x[\"dur\"]>=0 for x in e if x[\"ph\"]==\"X\")'"

"$bin" serve "${job[@]}" --rate 20/s --lengths sharegpt --slo "ttft_p99=200ms,tpot_p99=20ms" --frontier --json > "$tmp/f.json"
check "--frontier: rates never fall as the SLO loosens" "python3 -c 'import json; f=json.load(open(\"$tmp/f.json\"))[\"frontier\"]; \
r=[p[\"rate_per_s\"] for p in f]; assert len(f)==5 and all(b>=a for a,b in zip(r,r[1:])) and r[2]>0'"
grep -q "kv_use_pct" "$tmp/t.json" && echo "ok: trace counters" || { echo "FAIL: trace counters"; fail=1; }

printf 'arrival_s,input_len,output_len\n0,100,10\n0.5,200,20\n1.0,300,30\n' > "$tmp/trace.csv"
"$bin" serve "${job[@]}" --arrivals "trace:$tmp/trace.csv" --warmup 0 --json > "$tmp/c.json"
check "a trace file: its requests" "python3 -c 'import json; d=json.load(open(\"$tmp/c.json\")); assert d[\"requests\"]==3'"
printf 'input_len,output_len\n64,8\n128,16\n' > "$tmp/len.csv"
"$bin" serve "${job[@]}" --rate 5/s --lengths "$tmp/len.csv" > /dev/null
check "a lengths CSV" "[ \$? -eq 0 ]"

"$bin" serve --model llama3-8b --gpu h100-sxm5-80gb --gpus 4 --rate 10/s --requests 200 \
    --disaggregate "prefill=tp1x2,decode=tp2x1" --json > "$tmp/d.json"
check "disaggregation: the transfer over the scale-up link" "python3 -c 'import json; k=json.load(open(\"$tmp/d.json\"))[\"kv_transfer\"]; \
assert k[\"bytes_per_request\"]==1024*131072 and k[\"link\"].startswith(\"nvlink\") and \"pays\" in k'"

"$bin" serve-search --model llama3-8b --gpu h100-sxm5-80gb --gpus 4 --rate 20/s --requests 200 \
    --slo "ttft_p99=500ms,tpot_p99=50ms" --json > "$tmp/s.json"
check "serve-search names a best plan" "python3 -c 'import json; d=json.load(open(\"$tmp/s.json\")); \
assert d[\"best\"]>=0 and d[\"candidates\"][d[\"best\"]][\"meets_slo\"] and \
{c[\"mode\"] for c in d[\"candidates\"]}=={\"colocated\",\"disaggregated\"}'"

check "no rate: exit 2" "\"$bin\" serve \"\${job[@]}\" >/dev/null 2>$tmp/err; [ \$? -eq 2 ] && grep -q rate $tmp/err"
check "bad rate: named" "\"$bin\" serve \"\${job[@]}\" --rate fast >/dev/null 2>$tmp/err; [ \$? -eq 2 ] && grep -q rate $tmp/err"
check "bad slo: named" "\"$bin\" serve \"\${job[@]}\" --rate 1 --slo latency=1s >/dev/null 2>$tmp/err; [ \$? -eq 2 ] && grep -q slo $tmp/err"
check "bad pools: named" "\"$bin\" serve \"\${job[@]}\" --rate 1 --disaggregate prefill=tp1 >/dev/null 2>$tmp/err; [ \$? -eq 2 ] && grep -q decode $tmp/err"
check "bad plan key: named" "\"$bin\" serve \"\${job[@]}\" --rate 1 --plan chunk=0 >/dev/null 2>$tmp/err; [ \$? -eq 2 ] && grep -q chunk $tmp/err"
exit $fail

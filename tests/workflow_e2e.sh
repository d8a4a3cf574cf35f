#!/usr/bin/env bash
# tests/workflow_e2e.sh MESHPLAN SOURCE_DIR — meshplan workflow and meshplan lora end to end:
# --json carries the keys (allocation per LLM with gpus, tp, dp, placement;
# requests_per_s; e2e_s {mean, p99}; both baselines), the best beats the equal split on the
# agent, a rate within an SLO uses no more GPUs than given, and bad input exits 2 naming the field.
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
agent="$src/examples/workflows/agent.json"

"$bin" workflow "$agent" --cluster dgx-h100 --gpus 16 --json > "$tmp/a.json"
check "workflow --json runs" "[ \$? -eq 0 ]"
check "the issue's keys" "python3 -c 'import json; d=json.load(open(\"$tmp/a.json\")); \
assert d[\"feasible\"] and set(d[\"e2e_s\"])=={\"mean\",\"p99\"} and d[\"requests_per_s\"]>0; \
assert all(set(v)>={\"gpus\",\"tp\",\"dp\",\"placement\"} for v in d[\"allocation\"].values()) and len(d[\"allocation\"])==4; \
b=d[\"baselines\"]; assert d[\"requests_per_s\"]>1.2*b[\"equal_split\"][\"requests_per_s\"]>0 and b[\"one_replica\"][\"requests_per_s\"]>0'"
"$bin" workflow "$agent" --cluster dgx-h100 --gpus 16 --rate 1/s --slo "e2e_p99=30s" --json > "$tmp/r.json"
check "a rate within the SLO on fewer GPUs" "python3 -c 'import json; d=json.load(open(\"$tmp/r.json\")); \
assert d[\"feasible\"] and d[\"gpus_used\"]<16 and d[\"e2e_s\"][\"p99\"]<=30.0001 and d[\"rate_per_s\"]==1'"
"$bin" workflow "$src/examples/workflows/rag.json" --cluster dgx-h100 --gpus 16 --slo "e2e_p99=10s" > "$tmp/t.txt"
check "the retrieval pipeline, text" "grep -q 'best / equal split' $tmp/t.txt && grep -q 'critical path: rewrite rerank answer check' $tmp/t.txt"

printf '{"llms": [{"name": "a", "model": "llama3-8b"}], "calls": [{"id": "x", "llm": "b", "in_tokens": 5, "out_tokens": 5}]}' > "$tmp/bad.json"
"$bin" workflow "$tmp/bad.json" --cluster dgx-h100 --gpus 8 > /dev/null 2> "$tmp/e"
check "unknown LLM: exit 2 naming the field" "[ \$? -eq 2 ] && grep -q 'calls\[0\].llm' $tmp/e"
"$bin" workflow "$agent" --cluster dgx-h100 --gpus 16 --slo "p99=3" > /dev/null 2> "$tmp/e"
check "bad --slo: exit 2" "[ \$? -eq 2 ] && grep -q 'e2e_p99' $tmp/e"
"$bin" workflow "$agent" --cluster dgx-h100 --gpus 16 --rate fast > /dev/null 2> "$tmp/e"
check "bad --rate: exit 2" "[ \$? -eq 2 ] && grep -q 'rate' $tmp/e"

"$bin" lora --model llama3-8b --cluster dgx-h100 --gpus 8 --adapters 500 --adapter-rank 16 --adapter-popularity zipf:1.1 --rate 30/s --json > "$tmp/l.json"
check "lora --json: cache, split, swaps" "python3 -c 'import json; d=json.load(open(\"$tmp/l.json\")); \
assert d[\"adapter_params\"]==13631488 and 1<=d[\"cache_adapters\"]<=500 and d[\"kv_pool_bytes\"]<d[\"kv_pool_bytes_base\"]; \
assert d[\"swaps_per_s_per_replica\"]>0 and 0<d[\"hit_frac\"]<1'"
"$bin" lora --model llama3-8b --cluster dgx-h100 --gpus 8 --adapters 50 --adapter-cache 50 --json > "$tmp/l2.json"
check "lora: all resident, no swaps" "python3 -c 'import json; d=json.load(open(\"$tmp/l2.json\")); assert d[\"hit_frac\"]==1 and d[\"swaps_per_s_per_replica\"]==0'"
"$bin" lora --model llama3-8b --cluster dgx-h100 --gpus 8 --adapters 50 --adapter-popularity pareto:2 > /dev/null 2> "$tmp/e"
check "bad popularity: exit 2" "[ \$? -eq 2 ] && grep -q 'adapter-popularity' $tmp/e"
exit $fail

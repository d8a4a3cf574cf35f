#!/usr/bin/env bash
# bench/golden_outputs.sh — run a fixed set of islands, energy, search, run and predict
# invocations (text and --json; the README's and the tests' islands examples among them) and
# write each one's stdout, stderr and exit code under OUTDIR, one file per invocation. Run it
# with the binary before and after a refactor and `diff -r` the two folders: byte-identical
# outputs say the refactor changed no answer. search's wall_s and effort counts (evaluated,
# memory_checked, over_memory_proven, order_skipped, bound_skipped) and the text line that
# reports them are taken out: they depend on the machine's load and on pruning, not on the answer.
#
#   bench/golden_outputs.sh MESHPLAN OUTDIR
set -u
MP=${1:?MESHPLAN}
OUT=${2:?OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
X="zero=3,mb=1,gb=1024,seq=8192,sync=diloco,inner_steps=100,compress=int8"
I70="tp=8,zero=1,mb=1,gb=2048,seq=8192,recompute=full,sync=hsdp"
n=0
go() {
    n=$((n + 1))
    local f
    f=$(printf '%s/%02d' "$OUT" "$n")
    printf '%s\n' "$*" >"$f.cmd"
    "$MP" "$@" >"$f.out" 2>"$f.err"
    echo $? >"$f.rc"
    # effort, not answer
    python3 - "$f.out" <<'PY'
import json, re, sys
p = sys.argv[1]
s = open(p).read()
try:
    d = json.loads(s)
except Exception:
    s = re.sub(r"(?m)^evaluated \d+ plans in .*$", "evaluated (effort line removed)", s)
    s = re.sub(r"\d+(\.\d+)? s on \d+ threads?", "T s on N threads", s)
    s = re.sub(r"\(\d+ of them proven without evaluation\)", "(N of them proven without evaluation)", s)
    open(p, "w").write(s)
    sys.exit(0)
def strip(x):
    if isinstance(x, dict):
        for k in ("wall_s", "threads"):
            x.pop(k, None)
        c = x.get("counts")
        if isinstance(c, dict):
            for k in ("evaluated", "memory_checked", "over_memory_proven", "order_skipped", "bound_skipped"):
                c.pop(k, None)
        for v in x.values():
            strip(v)
    elif isinstance(x, list):
        for v in x:
            strip(v)
strip(d)
open(p, "w").write(json.dumps(d, indent=1, sort_keys=True))
PY
}
for fmt in "" --json; do
    go predict --model llama3-8b --cluster examples/clusters/three-continents.json --plan "$X" $fmt
    go predict --model llama3-8b --cluster three-continents --plan "$X" --quality-factor 1.25 $fmt
    go predict --model llama3-8b --cluster two-islands-wan100 --plan "tp=8,zero=1,gb=512,sync=diloco,inner_steps=50" $fmt
    go predict --model llama3-70b --cluster examples/clusters/two-islands-wan100.json --plan "tp=8,pp=8,mb=1,gb=1024,seq=8192,zero=1,order=tp-pp-dp" $fmt
    go predict --model llama3-8b --cluster three-continents --plan "zero=3,gb=1024,sync=gossip" $fmt
    go predict --model llama3-8b --cluster three-continents --plan "zero=3,gb=1024,sync=diloco,compress=topk:2" $fmt
    go predict --model llama3-8b --cluster three-continents --plan "zero=3,gb=1024,sync=hsdp,inner_steps=10" $fmt
    for x in "sync=diloco,exchange=rotate" "sync=diloco,exchange=star" "sync=fl" "sync=fl,compress=topk:0.01" \
             "sync=diloco,fragments=4,overlap=2,buckets=8,compress=int8" "sync=diloco,split=1:2:3" \
             "sync=diloco,exchange=rotate,compress=topk:0.05" "sync=hsdp,compress=topk:0.05" \
             "sync=hsdp,compress=fp8,ring=tsp" "sync=diloco,transport=rendezvous,split=gpus"; do
        go predict --model llama3-8b --cluster three-continents --plan "zero=3,mb=1,gb=1024,seq=4096,$x" $fmt
    done
    go predict --model llama3-8b --cluster three-continents --plan "tp=8,mb=1,gb=256,seq=4096,sync=pp" $fmt
    go islands-scale --model llama3-70b --cluster three-continents --plan "$I70" --island-gpus 64:4096 $fmt
    go islands-scale --model llama3-70b --cluster three-continents --plan "$I70" --island-gpus 64:128 $fmt
    go islands-scale --model intellect-1 --cluster three-continents --plan "zero=3,mb=1,gb=1024,seq=4096,recompute=full,sync=diloco,ring=tsp,exchange=star" --island-gpus 8:64 $fmt
    go energy --model llama3-70b --gpu h100-sxm5-80gb --gpus 64 --plan "tp=8,pp=2,mb=1,gb=512,seq=8192,zero=1" $fmt
    go energy --model mixtral-8x7b --gpu h100-sxm5-80gb --gpus 64 --plan "tp=2,ep=8,mb=1,gb=256,seq=4096,zero=1" $fmt
    go energy --model llama3-8b --gpu a100-sxm4-80gb --gpus 8 --plan "zero=3,gb=64,seq=4096" $fmt
    go run --model llama3-8b --gpu h100-sxm5-80gb --gpus 64 --plan "zero=1,gb=512" --tokens 1e12 $fmt
    go run --model llama3-70b --gpu h100-sxm5-80gb --gpus 64 --plan "tp=8,pp=2,mb=1,gb=512,seq=8192,zero=1" --tokens 2e12 $fmt
    go search --model llama2-7b --gpu h100-sxm5-80gb --gpus 8 --gb 16 --seq 4096 $fmt
    go search --model llama3-8b --gpu h100-sxm5-80gb --gpus 8:64 --gb 256 --top 3 $fmt
    go search --model llama3-70b --gpu h100-sxm5-80gb --gpus 64 --gb 128 --top 20 $fmt
    go search --model mixtral-8x7b --gpu h100-sxm5-80gb --gpus 64 --gb 256 --seq 4096 $fmt
    go search --model llama3-70b --gpu h100-sxm5-80gb --gpus 256 --gb 512 --seq 32768 --top 5 $fmt
    go search --model llama3-8b --gpu h100-sxm5-80gb --gpus 64 --gb 512 --price 2.5 --tokens 1e12 --objective cost $fmt
    go search --model llama3-8b --gpu h100-sxm5-80gb --gpus 64 --gb 512 --rank "tp=2,pp=2,mb=1,zero=1" $fmt
done
echo "$n invocations in $OUT"

#!/usr/bin/env bash
# tests/sweep_e2e.sh MESHPLAN TINY.json — meshplan sweep: the same CSV (every column but wall_s)
# single-process, with mpirun -n 1, 2 and 4 (skipped, saying so, when mpirun or the build's MPI
# is absent), and after a job stopped after 3 tasks is resumed; bad input names its field.
set -u
bin=$1
tiny=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
strip() { sed 's/,[^,]*$//' "$1"; } # drop wall_s, the last column
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }

"$bin" sweep "$tiny" -o "$tmp/ref.csv" --threads 1 --json > "$tmp/ref.json"
check "single-process sweep runs" "[ \$? -eq 0 ] && [ -s $tmp/ref.csv ]"
rows=$(($(wc -l < "$tmp/ref.csv") - 1))
check "one row per system and workload (32)" "[ $rows -eq 32 ]"
check "builds that cannot be formed are rows" "grep -q ',invalid_system,' $tmp/ref.csv"
check "plans found" "[ \$(grep -c ',ok,' $tmp/ref.csv) -eq 16 ]"
check "a Pareto set is marked" "awk -F, 'NR>1 && \$(NF-1)==1' $tmp/ref.csv | grep -q ."
check "summary keys" "python3 -c 'import json,sys; d=json.load(open(\"$tmp/ref.json\")); \
assert d[\"ranks\"]==1 and d[\"systems\"]==16 and d[\"evaluated\"]>0 and \
d[\"evaluated_per_rank\"]==[d[\"evaluated\"]] and d[\"output\"] and d[\"cpu_s_per_rank\"][0] > 0'"

# A second run resumes every task from the checkpoint: no plan evaluated, same rows.
"$bin" sweep "$tiny" -o "$tmp/again.csv" --checkpoint "$tmp/ref.csv.ckpt" --json > "$tmp/again.json"
check "a finished checkpoint resumes everything" "grep -q '\"evaluated\": 0' $tmp/again.json"
check "identical after a full resume" "cmp -s <(strip $tmp/ref.csv) <(strip $tmp/again.csv)"

# Killed after 3 tasks (the test-only stop), then resumed.
MESHPLAN_SWEEP_STOP_AFTER=3 "$bin" sweep "$tiny" -o "$tmp/kill.csv" --threads 1 2> "$tmp/kill.err"
check "the stopped job exits non-zero, output not written" "[ \$? -ne 0 ] && [ ! -e $tmp/kill.csv ]"
check "the checkpoint holds 3 tasks" "[ \$(wc -l < $tmp/kill.csv.ckpt) -eq 3 ]"
"$bin" sweep "$tiny" -o "$tmp/kill.csv" --threads 1 --json > "$tmp/resume.json"
check "resume skips the 3" "grep -q '\"resumed\": 3' $tmp/resume.json"
check "identical after kill and resume" "cmp -s <(strip $tmp/ref.csv) <(strip $tmp/kill.csv)"

# Bad input: exit 2 naming the field.
printf '{"models":["llama3-8b"],"gpus":["h1000"],"cluster_gpus":[8],"workloads":[{"gb":8}]}' > "$tmp/bad.json"
"$bin" sweep "$tmp/bad.json" -o "$tmp/bad.csv" 2> "$tmp/bad.err"
check "unknown GPU: exit 2" "[ \$? -eq 2 ] && grep -q 'gpus\\[0\\] = \"h1000\"' $tmp/bad.err"
printf '{"models":["llama3-8b"],"gpus":["b200"],"cluster_gpus":{"from":8,"to":4,"mul":2},"workloads":[{"gb":8}]}' > "$tmp/bad2.json"
"$bin" sweep "$tmp/bad2.json" -o "$tmp/bad.csv" 2> "$tmp/bad.err"
check "bad range: exit 2" "[ \$? -eq 2 ] && grep -q 'cluster_gpus' $tmp/bad.err"
printf '{"models":["llama3-8b"],"gpus":["b200"],"cluster_gpus":[8],"workloads":[{"gb":8,"objective":"cost"}]}' > "$tmp/bad3.json"
"$bin" sweep "$tmp/bad3.json" -o "$tmp/bad.csv" 2> "$tmp/bad.err"
check "cost without a price: exit 2" "[ \$? -eq 2 ] && grep -q 'price_gpu_hour_usd' $tmp/bad.err"

# Over MPI ranks.
if ! command -v mpirun > /dev/null; then
    echo "skip: mpirun not found (install openmpi-bin: scripts/setup.sh); MPI cases not run"
else
    # Open MPI's runtime leaks at MPI_Finalize (in libmpi and its plugins): under the sanitizer
    # build, leak checking is off for the MPI runs only (the single-process runs above keep it).
    mpi=(env "LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}detect_leaks=0"
         mpirun --allow-run-as-root --oversubscribe --mca btl self,tcp -x LSAN_OPTIONS)
    for n in 1 2 4; do
        timeout 120 "${mpi[@]}" -n $n "$bin" sweep "$tiny" -o "$tmp/r$n.csv" --threads 1 --fresh \
            --json > "$tmp/r$n.json" 2> "$tmp/r$n.err"
        rc=$?
        if [ $n -eq 2 ] && [ $rc -eq 0 ] && grep -q '"ranks": 1' "$tmp/r$n.json"; then
            echo "skip: this build has no MPI (MESHPLAN_MPI off): the ranks ran alone"; break
        fi
        if [ $n -gt 1 ] && [ $rc -eq 2 ] && grep -q 'has no MPI' "$tmp/r$n.err"; then
            echo "skip: this build has no MPI (MESHPLAN_MPI off); MPI cases not run"; break
        fi
        check "mpirun -n $n runs" "[ $rc -eq 0 ] && grep -q '\"ranks\": $n' $tmp/r$n.json"
        check "mpirun -n $n: every rank evaluated" "python3 -c 'import json; d=json.load(open(\"$tmp/r$n.json\")); \
assert len(d[\"evaluated_per_rank\"])==$n and sum(d[\"evaluated_per_rank\"])==d[\"evaluated\"] and \
len(d[\"cpu_s_per_rank\"])==$n and all(c > 0 for c in d[\"cpu_s_per_rank\"])'"
        check "mpirun -n $n: identical CSV" "cmp -s <(strip $tmp/ref.csv) <(strip $tmp/r$n.csv)"
    done
    if [ -s "$tmp/r2.csv" ] && grep -q '"ranks": 2' "$tmp/r2.json"; then
        MESHPLAN_SWEEP_STOP_AFTER=4 timeout 120 "${mpi[@]}" -n 2 "$bin" sweep "$tiny" \
            -o "$tmp/mk.csv" --threads 1 > /dev/null 2>&1
        check "mpirun -n 2 stopped: checkpoint kept" "[ -s $tmp/mk.csv.ckpt ] && [ ! -e $tmp/mk.csv ]"
        timeout 120 "${mpi[@]}" -n 2 "$bin" sweep "$tiny" -o "$tmp/mk.csv" --threads 1 > /dev/null 2>&1
        check "mpirun -n 2: identical after kill and resume" "cmp -s <(strip $tmp/ref.csv) <(strip $tmp/mk.csv)"
    fi
fi
exit $fail

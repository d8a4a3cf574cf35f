#!/usr/bin/env bash
# fuzz/run.sh — build the libFuzzer harnesses (clang, ASan + UBSan) in build-fuzz/ and run each
# target for a given time. The "make fuzz" of this project.
#
#   fuzz/run.sh [SECONDS] [TARGET...]      SECONDS per target (default 60); TARGET: plan,
#                                          model_json, hf_json, catalog, validate_csv, cli,
#                                          cluster_json, islands_json, faults_json, web
#                                          (default: all ten, one after the other)
#
# Environment: FUZZ_JOBS=N runs N targets at a time (default 1); FUZZ_BUILD=dir (default
# build-fuzz); FUZZ_SKIP_OK=1 exits 0 with a message when clang or libFuzzer is missing (CI).
# Corpora persist in $FUZZ_BUILD/corpus/<target>/ (grown run after run; seeded each run from
# fuzz/seeds/, fuzz/dicts/, data/, tests/data/, tests/bad_inputs/, examples/ and
# ../shared/validation/).
# A crash, leak, timeout or sanitizer report leaves its input in $FUZZ_BUILD/artifacts/ and
# makes the script exit 1; reproduce with `$FUZZ_BUILD/fuzz/fuzz_<target> <file>`.
# Summary line per target: wall and CPU seconds, runs, corpus files and bytes, status (also
# appended to $FUZZ_BUILD/summary.txt with the date).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECS=${1:-60}
shift || true
ALL=(plan model_json hf_json catalog validate_csv cli cluster_json islands_json faults_json web import)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")
B=${FUZZ_BUILD:-build-fuzz}
JOBS=${FUZZ_JOBS:-1}

skip() {
    echo "fuzz: $1"
    if [ "${FUZZ_SKIP_OK:-0}" = 1 ]; then
        echo "fuzz: skipped (FUZZ_SKIP_OK=1)"
        exit 0
    fi
    exit 1
}

# clang with a working libFuzzer runtime (Debian: libclang-rt-14-dev, or apt-get install clang).
CC=${FUZZ_CC:-}
for c in clang clang-14 clang-15 clang-16; do
    [ -n "$CC" ] && break
    command -v "$c" >/dev/null 2>&1 && CC=$c
done
[ -n "$CC" ] || skip "no clang found (scripts/setup.sh --fuzz installs clang and libclang-rt-14-dev)"
probe=$(mktemp -d "${TMPDIR:-/tmp}/fuzzprobe.XXXXXX")
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
if ! "$CC" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
    rm -rf "$probe"
    skip "$CC cannot link -fsanitize=fuzzer (libFuzzer runtime missing: scripts/setup.sh --fuzz)"
fi
rm -rf "$probe"
# The toml++ wrapper (src/import/toml_wrap.cpp) is C++: it must be built by the matching clang++,
# since the fuzz flags (-fsanitize=fuzzer-no-link) are clang's.
CXX=${FUZZ_CXX:-${CC/clang/clang++}}
command -v "$CXX" >/dev/null 2>&1 || skip "no $CXX found beside $CC (the clang package installs it)"

mkdir -p "$B"
echo "fuzz: building $B with $CC"
if ! { CC=$CC CXX=$CXX cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHPLAN_FUZZ=ON \
        -DBUILD_TESTING=OFF >"$B/build.log" 2>&1 &&
       cmake --build "$B" -j"${JOBS_BUILD:-2}" --target fuzz >>"$B/build.log" 2>&1; }; then
    tail -30 "$B/build.log"
    echo "fuzz: build failed (log: $B/build.log)"
    exit 1
fi

# ---- seed corpora (rebuilt each run from the sources; the grown corpus is kept apart) ----
S=$B/seeds
rm -rf "$S"
mkdir -p "$S" "$B/artifacts"
for t in "${ALL[@]}"; do mkdir -p "$S/$t" "$B/corpus/$t"; done
for t in "${ALL[@]}"; do
    [ -d "fuzz/seeds/$t" ] && cp fuzz/seeds/"$t"/* "$S/$t/"
    [ -d "tests/fuzz_regressions/$t" ] && cp tests/fuzz_regressions/"$t"/* "$S/$t/"
done
cp tests/data/hf/* "$S/hf_json/"
cp tests/data/import/* "$S/import/"
if [ -d examples/clusters ]; then
    cp examples/clusters/*.json "$S/cluster_json/"
    cp examples/clusters/*.json "$S/islands_json/"
fi
cp data/*.json "$S/catalog/"
for f in tests/data/*.csv ../shared/validation/runs.csv; do [ -f "$f" ] && cp "$f" "$S/validate_csv/"; done
if [ -d tests/bad_inputs ]; then
    for f in tests/bad_inputs/*; do
        [ -f "$f" ] || continue
        case "$f" in
            *.csv) cp "$f" "$S/validate_csv/" ;;
            */cluster_*) cp "$f" "$S/cluster_json/" ;;
            */islands_*) cp "$f" "$S/islands_json/" ;;
            */faults_*) cp "$f" "$S/faults_json/" ;;
            *plan*) cp "$f" "$S/plan/" ;;
            *hf*|*config*) cp "$f" "$S/hf_json/" ;;
            *catalog*) cp "$f" "$S/catalog/" ;;
            *model*) cp "$f" "$S/model_json/" ;;
        esac
    done
fi
# Entries of data/ one per file: model_json gets each model, catalog each one-entry catalog;
# validate_csv gets the first rows of runs.csv (small inputs mutate faster).
python3 - "$S" <<'PY'
import json, sys, glob, os
S = sys.argv[1]
for f in sorted(glob.glob("data/*.json")):
    d = json.load(open(f))
    for arr, entries in d.items():
        if not isinstance(entries, list):
            continue
        for e in entries:
            k = e.get("key", "x")
            if arr == "models":
                json.dump(e, open(os.path.join(S, "model_json", k + ".json"), "w"))
            json.dump({arr: [e]}, open(os.path.join(S, "catalog", arr + "-" + k + ".json"), "w"))
runs = "../shared/validation/runs.csv"
if os.path.exists(runs):
    lines = open(runs, encoding="utf-8", errors="replace").read().splitlines()
    for i in range(1, min(len(lines), 40), 3):
        open(os.path.join(S, "validate_csv", "runs-row%d.csv" % i), "w").write(lines[0] + "\n" + lines[i] + "\n")
PY

dict_for() {
    case $1 in
        plan) echo fuzz/dicts/plan.dict ;;
        model_json|hf_json|catalog|cluster_json|islands_json|faults_json|web) echo fuzz/dicts/json.dict ;;
        validate_csv) echo fuzz/dicts/csv.dict ;;
        cli) echo fuzz/dicts/cli.dict ;;
        import) echo fuzz/dicts/import.dict ;;
    esac
}
maxlen_for() {
    case $1 in
        plan) echo 4200 ;;
        cli) echo 16384 ;;
        *) echo 65536 ;;
    esac
}

run_one() {
    local t=$1 log=$B/fuzz_$1.log extra=()
    [ "$t" = cli ] && extra+=(-close_fd_mask=2)
    local start=$(date +%s) TIMEFORMAT='%U %S'
    { time ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
      UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
      "$B/fuzz/fuzz_$t" "$B/corpus/$t" "$S/$t" -max_total_time="$SECS" -timeout=10 \
        -rss_limit_mb=2048 -max_len="$(maxlen_for "$t")" -dict="$(dict_for "$t")" \
        -artifact_prefix="$B/artifacts/${t}-" -print_final_stats=1 ${extra[@]+"${extra[@]}"} \
        >"$log" 2>&1 ; } 2>"$B/cpu_$t.txt"
    local rc=$? secs=$(( $(date +%s) - start ))
    local cpu=$(awk '{ printf "%d", $1 + $2 }' "$B/cpu_$t.txt" 2>/dev/null)
    local runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    local files=$(find "$B/corpus/$t" -type f | wc -l)
    local bytes=$(du -sb "$B/corpus/$t" | cut -f1)
    local status=ok
    [ $rc -ne 0 ] && status="FAILED (exit $rc; see $log and $B/artifacts/)"
    printf 'fuzz: %-13s %5d s (%5s s CPU) %10s runs  corpus %5d files %9d bytes  %s\n' "$t" \
        "$secs" "${cpu:-?}" "${runs:-?}" "$files" "$bytes" "$status" | tee -a "$B/summary.txt"
    # A clean-clone CI keeps only this output: show the report and the input that caused it.
    if [ $rc -ne 0 ]; then
        grep -m1 -B2 -A40 -E '^==[0-9]+==|runtime error|SUMMARY|fuzz check failed|deadly signal|ERROR: libFuzzer' "$log" |
            head -60 | sed "s/^/fuzz: $t: /"
        for a in "$B/artifacts/${t}-"*; do
            [ -f "$a" ] && { echo "fuzz: $t: input $a:"; head -c 2000 "$a" | cat -v | sed "s/^/  /"; echo; }
        done
    fi
    [ $rc -eq 0 ]
}

echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(git rev-parse --short HEAD 2>/dev/null) ${SECS} s per target" >>"$B/summary.txt"
fail=0
pids=()
for t in "${TARGETS[@]}"; do
    case " ${ALL[*]} " in *" $t "*) ;; *) echo "fuzz: unknown target \"$t\": expected one of ${ALL[*]}"; exit 2 ;; esac
    run_one "$t" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$JOBS" ]; then
        wait "${pids[0]}" || fail=1
        pids=("${pids[@]:1}")
    fi
done
for p in ${pids[@]+"${pids[@]}"}; do wait "$p" || fail=1; done
if [ $fail -ne 0 ]; then
    echo "fuzz: FAILED — inputs in $B/artifacts/"
    exit 1
fi
echo "fuzz: all ${#TARGETS[@]} targets ran ${SECS} s each with no crash, leak, timeout or sanitizer report"

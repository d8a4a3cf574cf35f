#!/usr/bin/env bash
# bench/search_speed.sh — the search's speed as issue 15 counts it: for each job and thread
# count, `meshplan search --json`'s counts.evaluated (plans fully timed, not those proven or
# skipped) / (wall_s x threads), plus the CPU time the process used (user + system: on a shared
# machine the wall clock also counts time spent waiting for a core, the CPU figure does not).
# Also the plans the step-time bound skipped (counts.bound_skipped, src/search/bound.c), the plans
# whose memory alone was computed (counts.memory_checked: over memory, or counting a skipped
# tail's feasible plans; CPU time that is not an evaluation) and plans per CPU second. Prints figures; asserts nothing. Figures measured with it: docs/search.md "Speed".
#
#   bench/search_speed.sh [MESHPLAN] [JOB...]    MESHPLAN default build/meshplan; JOB one of
#                                                405b-16384 (default), ds-1024, ds-16384,
#                                                7b-8 (a small space: 1 vs 2 threads), all
#
# Environment: THREADS="1 2" (default), REPS=N runs each and keeps the fastest (default 1).
set -uo pipefail
cd "$(dirname "$0")/.."
MP=${1:-build/meshplan}
shift || true
JOBS=("$@")
[ ${#JOBS[@]} -eq 0 ] && JOBS=(405b-16384)
[ "${JOBS[0]}" = all ] && JOBS=(7b-8 405b-16384 ds-1024 ds-16384)
THREADS=${THREADS:-1 2}
REPS=${REPS:-1}
[ -x "$MP" ] || { echo "search_speed: $MP: not an executable (build first)" >&2; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/meshplan-speed.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

args_for() {
    case $1 in
        405b-16384) echo "--model llama3-405b --gpu h100-sxm5-80gb --gpus 16384 --gb 2048" ;;
        ds-1024) echo "--model deepseek-v3 --gpu h100-sxm5-80gb --gpus 1024 --gb 2048" ;;
        ds-16384) echo "--model deepseek-v3 --gpu h100-sxm5-80gb --gpus 16384 --gb 2048" ;;
        7b-8) echo "--model llama2-7b --gpu h100-sxm5-80gb --gpus 8 --gb 16 --seq 4096" ;;
        *) echo "search_speed: unknown job $1" >&2; return 1 ;;
    esac
}

printf '%-11s %3s %3s %11s %11s %11s %11s %9s %9s %12s %12s %12s  %s\n' job req thr plans evaluated \
    bound_skip mem_checked wall_s cpu_s "eval/s/core" "eval/cpu_s" "plans/cpu_s" "winner"
for j in "${JOBS[@]}"; do
    a=$(args_for "$j") || exit 2
    for t in $THREADS; do
        best=""
        for ((r = 0; r < REPS; r++)); do
            TIMEFORMAT='%U %S'
            { time "$MP" search $a --json --threads "$t" >"$TMP/out.json" 2>/dev/null; } 2>"$TMP/cpu"
            line=$(python3 - "$TMP/out.json" "$TMP/cpu" "$j" "$t" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
u, s = (float(x) for x in open(sys.argv[2]).read().split())
c, w, t = d["counts"], d["wall_s"], d["threads"]
top = d["top"][0]["plan"] if d.get("top") else "none"
print("%.6f %-11s %3s %3d %11d %11d %11d %11d %9.3f %9.3f %12.0f %12.0f %12.0f  %s" % (w, sys.argv[3], sys.argv[4], t,
      c["plans"], c["evaluated"], c.get("bound_skipped", 0), c.get("memory_checked", 0), w, u + s, c["evaluated"] / w / t,
      c["evaluated"] / (u + s), c["plans"] / (u + s), top))
PY
)
            if [ -z "$best" ] || awk -v a="${line%% *}" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then
                best=$line
            fi
        done
        echo "$best" | cut -d' ' -f2-
    done
done

#!/usr/bin/env bash
# bench/sim_speed.sh — speed of the two request-level simulators, timed as whole processes:
#   serve     `meshplan serve` of Llama 3 8B on 16 x H100 (tp=1, dp=16), 10,000 ShareGPT-length
#             requests at 150/s (the load test_serve's test_speed runs);
#   rl-search `meshplan rl-search` of Qwen2.5-7B on 64 x H100 (test_rl's test_search_64).
# Prints wall and CPU seconds (user + system) per job, the fastest of REPS runs; asserts nothing.
# The unit tests print their own CPU time but no longer bound it (a bound fails under ASan on a
# loaded machine); this is where the figure is measured. Figures: docs/serve.md and docs/rl.md.
#
#   bench/sim_speed.sh [MESHPLAN]      MESHPLAN default build/meshplan
# Environment: REPS=N (default 3).
set -uo pipefail
cd "$(dirname "$0")/.."
MP=${1:-build/meshplan}
REPS=${REPS:-3}
[ -x "$MP" ] || { echo "sim_speed: $MP: not an executable (build first)" >&2; exit 2; }

job_args() {
    case $1 in
        serve) echo "serve --model llama3-8b --gpu h100-sxm5-80gb --gpus 16 --plan tp=1,dp=16 --rate 150/s --lengths sharegpt --requests 10000 --json" ;;
        rl-search) echo "rl-search --model qwen2.5-7b --gpu h100-sxm5-80gb --gpus 64 --json" ;;
    esac
}

printf '%-10s %8s %8s\n' job wall_s cpu_s
for j in serve rl-search; do
    best_w="" best_c=""
    for ((r = 0; r < REPS; r++)); do
        TIMEFORMAT='%R %U %S'
        # shellcheck disable=SC2046 # the job's arguments are words
        t=$({ time "$MP" $(job_args "$j") >/dev/null 2>&1; } 2>&1) || { echo "sim_speed: $j failed" >&2; exit 1; }
        read -r w u s <<<"$t"
        c=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }')
        if [ -z "$best_c" ] || awk -v a="$c" -v b="$best_c" 'BEGIN { exit !(a < b) }'; then
            best_w=$w best_c=$c
        fi
    done
    printf '%-10s %8s %8s\n' "$j" "$best_w" "$best_c"
done

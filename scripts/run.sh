#!/usr/bin/env bash
# scripts/run.sh — install dependencies if missing, build, predict the default job and, when the
# shared validation data is there, compare predictions with published runs.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
JOBS=${JOBS:-2}
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$JOBS"

echo
echo "== build/meshplan predict   (the default job: Llama 3 70B on 64 H100)"
build/meshplan predict

RUNS=../shared/validation/runs.csv
if [ -f "$RUNS" ]; then
    echo
    echo "== build/meshplan validate $RUNS"
    build/meshplan validate "$RUNS"
else
    echo
    echo "($RUNS not found: skipping validation against published runs)"
fi

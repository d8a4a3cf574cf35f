#!/usr/bin/env bash
# scripts/figures.sh — regenerate docs/figures/: one SVG and one PNG per `meshplan plot` kind
# (through tests/plot_e2e.sh, which checks each as it writes it) and the web page's screenshots
# (through tests/web_e2e.py, in headless Chromium). Run from the repository root after building.
set -euo pipefail
MP=${1:-build/meshplan}
OUT=docs/figures
mkdir -p "$OUT"
bash tests/plot_e2e.sh "$MP" . "$OUT"
python3 tests/web_e2e.py "$MP" "$OUT"
echo "figures: $(ls "$OUT" | wc -l) files in $OUT"

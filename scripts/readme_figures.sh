#!/usr/bin/env bash
# scripts/readme_figures.sh [--write] — check (default) or regenerate README.md's measured
# figures (the validation table) and its sample outputs ("$ build/meshplan ..." blocks) from
# what build/meshplan prints now. Details: scripts/readme_figures.py.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/readme_figures.py --root . "$@"

#!/usr/bin/env bash
# tests/python_install.sh BUILD_DIR SOURCE_DIR — the README's offline install in a fresh venv:
#   python3 -m venv --system-site-packages V && V/bin/pip install --no-index --no-build-isolation P
# (P a copy of python/, so the in-tree build leaves nothing in the checkout; the library bundled
# from BUILD_DIR), then, from another directory and with MESHPLAN_LIB unset so the bundled copy
# is what loads, the README one-liner and examples/scaling.py.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
. "$SRC/tests/python_env.sh"
T=$(mktemp -d /tmp/meshplan-py.XXXXXX)
trap 'rm -rf "$T"' EXIT
# Only the package's sources: the checkout's python/ may hold another build's in-tree files.
mkdir -p "$T/python/meshplan"
cp "$SRC/python/pyproject.toml" "$SRC/python/setup.py" "$SRC/python/README.md" "$T/python/"
cp "$SRC/python/meshplan/"*.py "$T/python/meshplan/"
"$PY" -m venv --system-site-packages "$T/venv"
MESHPLAN_BUILD_DIR="$BUILD" "$T/venv/bin/pip" install -q --no-index --no-build-isolation "$T/python"
unset MESHPLAN_LIB PYTHONPATH
cd "$T"
where=$("$T/venv/bin/python" -c "import meshplan; print(meshplan.library_path)")
case "$where" in
    "$T/venv/"*) echo "loads the bundled library: $where" ;;
    *) echo "python_install: FAIL: loaded $where, not the copy bundled in the venv" >&2; exit 1 ;;
esac
out=$("$T/venv/bin/python" -c "import meshplan; print(meshplan.predict('llama3-70b', gpu='h100-sxm5-80gb', gpus=64, plan='tp=8,pp=2,gb=128'))")
printf '%.300s...\n' "$out"
"$T/venv/bin/python" - "$out" "$BUILD/meshplan" <<'PY'
import ast, json, subprocess, sys
got = ast.literal_eval(sys.argv[1])  # print() of a dict
want = json.loads(subprocess.run([sys.argv[2], "predict", "--model", "llama3-70b", "--gpu",
                                  "h100-sxm5-80gb", "--gpus", "64", "--plan", "tp=8,pp=2,gb=128",
                                  "--json"], check=True, capture_output=True, text=True).stdout)
assert got == want, "the one-liner's dict differs from predict --json"
print(f"one-liner == predict --json (mfu {got['mfu']:.3f}, {len(got)} keys)")
PY
"$T/venv/bin/python" "$SRC/examples/scaling.py" --model llama3-8b --gpus 8:32 --gb 64 -o "$T/scaling.png" |
    tee "$T/scaling.txt"
grep -q "efficiency" "$T/scaling.txt"
echo "python_install: ok"

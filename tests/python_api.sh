#!/usr/bin/env bash
# tests/python_api.sh BUILD_DIR SOURCE_DIR — python/tests (pytest) against build/libmeshplan.so.0
# and build/meshplan, with the package imported from the source tree.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
. "$SRC/tests/python_env.sh"
export MESHPLAN_LIB="$BUILD/libmeshplan.so.0" MESHPLAN_CLI="$BUILD/meshplan" PYTHONPATH="$SRC/python"
export PYTHONDONTWRITEBYTECODE=1
cd "$SRC"
exec "$PY" -m pytest -q -p no:cacheprovider python/tests

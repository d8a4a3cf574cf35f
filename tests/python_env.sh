# tests/python_env.sh — sourced by the Python tests: picks the interpreter (MESHPLAN_PYTHON, else
# Debian's /usr/bin/python3, where scripts/setup.sh installs python3-pytest, -venv and -cffi,
# else python3 on PATH) and, in a sanitizer build, preloads the sanitizer runtimes so that the
# instrumented libmeshplan.so can be loaded by an uninstrumented Python.
if [ -n "${MESHPLAN_PYTHON:-}" ]; then
    PY=$MESHPLAN_PYTHON
elif [ -x /usr/bin/python3 ]; then
    PY=/usr/bin/python3
else
    PY=python3
fi
if [ -n "${SANITIZER_PRELOAD:-}" ]; then
    export LD_PRELOAD="$SANITIZER_PRELOAD"
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi

#!/usr/bin/env bash
# tests/bad_inputs.sh — run every case of tests/bad_inputs/MANIFEST.tsv through the meshplan
# command: each must exit with its code (2: bad input), print nothing on stdout, name the field
# and the value on stderr (the manifest's substring), and die of no signal or sanitizer report.
# Every file in tests/bad_inputs/ must be a case of the manifest.
#
#   bad_inputs.sh <path-to-meshplan> <repo-root>
#
# Prints "ok - CASE" or "FAIL - CASE: why" per case, then "N passed, M failed"; exits 1 on any
# failure, 2 on bad usage.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 <path-to-meshplan> <repo-root>" >&2
    exit 2
fi
MP=$1
DIR=$2/tests/bad_inputs
MANIFEST=$DIR/MANIFEST.tsv
[ -x "$MP" ] || { echo "bad_inputs: $MP: not an executable" >&2; exit 2; }
[ -f "$MANIFEST" ] || { echo "bad_inputs: $MANIFEST missing" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/meshplan-bad.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
truncate -s 65M "$TMP/huge.json" # sparse: over the 64 MiB input cap, no disk used
PASSED=0
FAILED=0
declare -A listed=()

while IFS=$'\t' read -r -a f; do
    [ ${#f[@]} -eq 0 ] && continue
    case "${f[0]}" in '#'*) continue ;; esac
    name=${f[0]} want_rc=${f[1]} want=${f[2]}
    listed[$name]=1
    file=$DIR/$name
    args=()
    for a in "${f[@]:3}"; do
        case "$a" in
            @) args+=("$file") ;;
            @CONTENT) args+=("$(cat "$file")") ;;
            @DIR) args+=("$DIR/a_directory") ;;
            @MISSING) args+=("$DIR/no-such-file") ;;
            @HUGE) args+=("$TMP/huge.json") ;;
            *) args+=("$a") ;;
        esac
    done
    if [ "${name:0:1}" != - ] && [ ! -f "$file" ]; then
        FAILED=$((FAILED + 1))
        echo "FAIL - $name: the case file is missing"
        continue
    fi
    "$MP" "${args[@]}" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    why=""
    if [ $rc -ge 128 ]; then
        why="killed by signal $((rc - 128))"
    elif [ "$rc" != "$want_rc" ]; then
        why="exit $rc, expected $want_rc"
    elif grep -qE 'Sanitizer|runtime error:' "$TMP/err"; then
        why="sanitizer report"
    elif [ -s "$TMP/out" ]; then
        why="printed on stdout"
    elif ! grep -qF -- "$want" "$TMP/err"; then
        why="stderr lacks: $want"
    fi
    if [ -z "$why" ]; then
        PASSED=$((PASSED + 1))
        echo "ok - $name"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL - $name: $why"
        echo "    command: meshplan ${args[*]:0:12}"
        head -c 1500 "$TMP/err" | sed 's/^/    stderr: /'
    fi
done <"$MANIFEST"

# Every case file is in the manifest (a file nobody runs is a test that cannot fail).
for p in "$DIR"/*; do
    b=$(basename "$p")
    case "$b" in MANIFEST.tsv|a_directory) continue ;; esac
    if [ -z "${listed[$b]:-}" ]; then
        FAILED=$((FAILED + 1))
        echo "FAIL - $b: not in MANIFEST.tsv"
    fi
done

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]

#!/usr/bin/env bash
# tests/plot_e2e.sh — every `meshplan plot` kind as SVG and PNG, checked by tests/plot_check.py
# (well-formed SVG, its figure metadata: axis labels with units, the number of series / bars /
# rows, every colour drawn; PNG dimensions), plus the errors (no -o, a bad extension, an unknown
# kind, a bad size).
#
#   plot_e2e.sh <path-to-meshplan> <repo-root> [KEEP_DIR]
#
# With KEEP_DIR the figures are left there (scripts/figures.sh uses it for docs/figures/).
# Prints "ok - ..." / "FAIL - ..." per check, then "N passed, M failed"; exits 1 on a failure.
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 <path-to-meshplan> <repo-root> [KEEP_DIR]" >&2
    exit 2
fi
MP=$1
ROOT=$2
CHECK="python3 $ROOT/tests/plot_check.py"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/meshplan-plot.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
OUTDIR=${3:-$TMP}
mkdir -p "$OUTDIR"
PASSED=0
FAILED=0

ok() { PASSED=$((PASSED + 1)); echo "ok - $1"; }
bad() { FAILED=$((FAILED + 1)); echo "FAIL - $1"; sed 's/^/    /' "$TMP/log"; }

# figure NAME KIND "CHECKS" ARGS...: draw NAME.svg and NAME.png, check both.
figure() {
    local name=$1 kind=$2 checks=$3
    shift 3
    for ext in svg png; do
        if ! "$MP" plot "$kind" "$@" -o "$OUTDIR/$name.$ext" >"$TMP/log" 2>&1; then
            bad "plot $kind -> $name.$ext: exit status $?"
            continue
        fi
        if [ "$ext" = svg ]; then
            # shellcheck disable=SC2086
            if $CHECK "$OUTDIR/$name.svg" "$kind" $checks >"$TMP/log" 2>&1; then
                ok "plot $kind: $name.svg ($checks)"
            else
                bad "plot $kind: $name.svg"
            fi
        elif $CHECK "$OUTDIR/$name.png" png 960 600 >"$TMP/log" 2>&1; then
            ok "plot $kind: $name.png is 960x600"
        else
            bad "plot $kind: $name.png"
        fi
    done
}

JOB70=(--model llama3-70b --gpu h100-sxm5-80gb --gpus 64)
PLAN70="tp=8,pp=4,vpp=2,gb=128,zero=1,recompute=selective"

figure scale scale "series=5 points=5 xlabel=(count ylabel=(tokens/s y2label=(%" \
    --model llama3-70b --gpu h100-sxm5-80gb --gpus 64:1024 --gb 1024
figure pareto pareto "series=3 refs=1 xlabel=(bytes) ylabel=(tokens/s)" \
    --model llama3-8b --gpu h100-sxm5-80gb --gpus 64 --gb 512
figure memory memory "bars=4 segments>=5 refs=1 xlabel=stage ylabel=(bytes)" \
    "${JOB70[@]}" --plan "$PLAN70"
figure parts parts "rows=2 segments>=3 spans>=6 xlabel=(seconds)" \
    "${JOB70[@]}" --plan "$PLAN70" --simulate
figure timeline timeline "rows=20 segments>=6 spans>=100 xlabel=(seconds)" \
    "${JOB70[@]}" --plan "tp=8,pp=4,vpp=2,gb=32,zero=1,recompute=selective"
figure collective collective "series=6 points=31 xlabel=(bytes ylabel=(bytes/s" \
    --op all_reduce --gpu h100-sxm5-80gb --gpus 16

# A size of one's own.
if "$MP" plot memory "${JOB70[@]}" --plan "$PLAN70" --width 640 --height 400 -o "$TMP/small.png" >"$TMP/log" 2>&1 &&
    $CHECK "$TMP/small.png" png 640 400 >"$TMP/log" 2>&1; then
    ok "plot --width 640 --height 400 gives a 640x400 PNG"
else
    bad "plot --width 640 --height 400"
fi

# expect_error NAME MESSAGE ARGS...: exit 2 and MESSAGE on stderr.
expect_error() {
    local name=$1 msg=$2
    shift 2
    "$MP" "$@" >"$TMP/out" 2>"$TMP/log"
    local rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "$msg" "$TMP/log"; then
        ok "$name"
    else
        echo "exit status $rc, expected 2 and \"$msg\"" >>"$TMP/log"
        bad "$name"
    fi
}
expect_error "plot without -o" "-o FILE.svg or -o FILE.png is required" plot memory "${JOB70[@]}" --plan "$PLAN70"
expect_error "plot to a .pdf" "expected a file name ending in .svg or .png" plot memory "${JOB70[@]}" --plan "$PLAN70" -o x.pdf
expect_error "plot of an unknown kind" "kind = \"pie\"" plot pie -o x.svg
expect_error "plot with a bad width" "width = 50" plot memory "${JOB70[@]}" --plan "$PLAN70" --width 50 -o "$TMP/x.svg"
expect_error "plot with another command's option" "unknown option \"--sizes\"" plot memory "${JOB70[@]}" --plan "$PLAN70" --sizes 8:8G -o "$TMP/x.svg"
expect_error "plot memory of a plan that cannot be formed" "tp = 3" plot memory "${JOB70[@]}" --plan "tp=3,gb=128" -o "$TMP/x.svg"
expect_error "plot into a missing folder" "cannot write" plot memory "${JOB70[@]}" --plan "$PLAN70" -o "$TMP/no/such/dir/x.svg"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]

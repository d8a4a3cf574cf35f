#!/usr/bin/env bash
# tests/install_test.sh BUILD_DIR SOURCE_DIR — `cmake --install` into a temporary prefix, then
# check what a user of the installed library gets: the layout, the soname, examples/predict.c
# built with `cc ... $(pkg-config --cflags --libs meshplan)` (shared) and with --static, its
# answer equal to the CLI's, the man page rendering every command of `meshplan help`, and the
# bash completion completing commands, options and catalog keys; the worked example of
# meshplan.h's comment compiled and run.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
P=$(mktemp -d /tmp/meshplan-install.XXXXXX)
trap 'rm -rf "$P"' EXIT
CC=${CC:-cc}
read -r -a XFLAGS <<< "${EXAMPLE_CFLAGS:-}"
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }

cmake --install "$BUILD" --prefix "$P" >/dev/null
for f in bin/meshplan lib/libmeshplan.a lib/libmeshplan.so lib/libmeshplan.so.0 \
         lib/libmeshplan.so.0.1.0 include/meshplan/meshplan.h include/meshplan/api.h \
         lib/pkgconfig/meshplan.pc share/man/man1/meshplan.1 \
         share/bash-completion/completions/meshplan; do
    [ -e "$P/$f" ] || fail "$f not installed"
done
[ "$(readlink "$P/lib/libmeshplan.so")" = libmeshplan.so.0 ] || fail "libmeshplan.so -> $(readlink "$P/lib/libmeshplan.so")"
[ "$(readlink "$P/lib/libmeshplan.so.0")" = libmeshplan.so.0.1.0 ] || fail "libmeshplan.so.0 link"
soname=$(objdump -p "$P/lib/libmeshplan.so.0.1.0" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = libmeshplan.so.0 ] || fail "soname is '$soname', expected libmeshplan.so.0"
echo "installed: $(cd "$P" && find . -type f -o -type l | sort | tr '\n' ' ')"
echo "soname: $soname"

export PKG_CONFIG_PATH="$P/lib/pkgconfig"
pkg-config --exists meshplan || fail "pkg-config does not find meshplan.pc"
[ "$(pkg-config --modversion meshplan)" = 0.1.0 ] || fail "version $(pkg-config --modversion meshplan)"
# Shared: the soname resolves into the prefix (rpath here; ldconfig for a system prefix).
"$CC" ${XFLAGS[@]+"${XFLAGS[@]}"} -std=c11 -Wall -Werror "$SRC/examples/predict.c" $(pkg-config --cflags --libs meshplan) \
    -Wl,-rpath,"$P/lib" -o "$P/predict"
grep -q "libmeshplan.so.0 => $P/lib/libmeshplan.so.0" <<< "$(ldd "$P/predict")" || fail "predict does not load $P/lib/libmeshplan.so.0"
# Static: the archive with what pkg-config --static says it needs.
"$CC" ${XFLAGS[@]+"${XFLAGS[@]}"} -std=c11 -Wall -Werror "$SRC/examples/predict.c" $(pkg-config --cflags meshplan) "$P/lib/libmeshplan.a" \
    $(pkg-config --static --libs meshplan | sed 's/-lmeshplan//') -o "$P/predict_static"
grep -q libmeshplan <<< "$(ldd "$P/predict_static")" && fail "predict_static loads the shared library"

out=$("$P/predict")
echo "$out"
mfu=$(printf '%s\n' "$out" | sed -n 's/.*MFU \([0-9.]*\),.*/\1/p')
[ -n "$mfu" ] || fail "predict printed no MFU"
[ "$("$P/predict_static")" = "$out" ] || fail "shared and static builds disagree"
cli=$("$P/bin/meshplan" predict --model llama3-70b --gpu h100-sxm5-80gb --gpus 64 \
      --plan "tp=8,pp=2,gb=128,seq=8192,zero=1,recompute=selective" --json |
      sed -n 's/.*"mfu": *\([0-9.]*\).*/\1/p')
[ "$(printf '%.3f' "$cli")" = "$mfu" ] || fail "example MFU $mfu, CLI $cli"
# A bad input is refused with the field named and exit 2.
set +e
err=$("$P/predict" llama3-70b h100-sxm5-80gb 64 "tp=3" 2>&1); rc=$?
set -e
[ $rc -eq 2 ] || fail "bad plan: exit $rc, expected 2"
grep -q "plan.tp = 3" <<< "$err" || fail "bad plan: message does not name plan.tp: $err"

# The worked example in the umbrella header's comment compiles and runs as shown.
{
    printf '#include <stdio.h>\n#include <stdlib.h>\n#include <meshplan/meshplan.h>\nint main(void)\n{\n'
    sed -n '/Worked example/,/\*\//p' "$P/include/meshplan/meshplan.h" | sed -n 's/^ \*   //p'
    printf 'return 0;\n}\n'
} > "$P/header_example.c"
"$CC" ${XFLAGS[@]+"${XFLAGS[@]}"} -std=c11 -Wall -Werror "$P/header_example.c" $(pkg-config --cflags --libs meshplan) \
    -Wl,-rpath,"$P/lib" -o "$P/header_example"
hx=$("$P/header_example")
echo "meshplan.h example: $hx"
grep -qE "^[0-9]+ tokens/s, MFU 0\.[0-9]{3}, bound by " <<< "$hx" || fail "meshplan.h example printed: $hx"

# The man page renders and has a section per command of `meshplan help`, with its options.
page=$(groff -man -Tascii -P-cbou "$P/share/man/man1/meshplan.1" 2>/dev/null || true)
grep -q "^NAME" <<< "$page" || fail "man page does not render"
for c in $("$P/bin/meshplan" help | awk '/^commands:/ { on = 1; next } /^[^ ]/ { on = 0 } on && /^  [a-z]/ { print $1 }'); do
    [ "$c" = help ] && continue
    grep -q -- "^   $c\$" <<< "$page" || fail "man page lacks a section for command $c"
    # the whole help first: awk leaving at its first match would cut the pipe (SIGPIPE under
    # pipefail, as the sanitized build's slower exit showed)
    help=$("$P/bin/meshplan" "$c" --help)
    opt=$(awk '/^options:/ { on = 1; next } on && /^  --/ { print $1; exit }' <<< "$help")
    [ -z "$opt" ] || grep -q -- "$opt" <<< "$page" || fail "man page lacks $c's option $opt"
done

# The completion: commands, a command's options, catalog keys.
PATH="$P/bin:$PATH"
# shellcheck disable=SC1091
source "$P/share/bash-completion/completions/meshplan"
complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _meshplan; echo "${COMPREPLY[*]}"; }
[[ " $(complete_words meshplan pre) " == *" predict "* ]] || fail "completion: commands"
[[ " $(complete_words meshplan predict --gp) " == *" --gpus "* ]] || fail "completion: options"
[[ " $(complete_words meshplan predict --gpu h100-s) " == *" h100-sxm5-80gb "* ]] || fail "completion: GPU keys"
[[ " $(complete_words meshplan run --model llama3-7) " == *" llama3-70b "* ]] || fail "completion: model keys"
echo "install_test: ok (prefix layout, soname, pkg-config shared+static, man page, completion)"

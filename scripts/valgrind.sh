#!/usr/bin/env bash
# scripts/valgrind.sh — the whole test suite under Valgrind memcheck: builds build-valgrind/
# (no sanitizers; valgrind and ASan do not mix), runs every test program (tests/test_*,
# replay_*) under memcheck, and the CLI tests (cli_e2e.sh, bad_inputs.sh) with every meshplan
# call under memcheck. Any invalid read/write, use of uninitialised memory, bad free or leak
# (definite or indirect) fails it.
#
#   scripts/valgrind.sh          prints one line per program and "valgrind: N clean, M with errors"
#
# Logs: build-valgrind/valgrind/*.log. Installs valgrind when missing (scripts/setup.sh --valgrind).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
B=build-valgrind
bash scripts/setup.sh --valgrind || exit 1
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHPLAN_SANITIZE=OFF >/dev/null &&
    cmake --build "$B" -j"${JOBS:-2}" >/dev/null || { echo "valgrind: build failed"; exit 1; }
LOGS=$B/valgrind
rm -rf "$LOGS"
mkdir -p "$LOGS"
VG=(valgrind --tool=memcheck --error-exitcode=99 --leak-check=full
    --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
    --track-fds=no --quiet)
clean=0
dirty=0
start=$(date +%s)

report() { # NAME STATUS LOGGLOB
    local name=$1 rc=$2 errs
    errs=$(cat $3 2>/dev/null | grep -cE '^==[0-9]+== (Invalid|Conditional|Use of uninit|Mismatched|[0-9,]+ bytes in [0-9,]+ blocks are (definitely|indirectly))' || true)
    if [ "$rc" -eq 0 ] && [ "$errs" -eq 0 ]; then
        clean=$((clean + 1))
        printf 'valgrind: %-28s clean\n' "$name"
    else
        dirty=$((dirty + 1))
        printf 'valgrind: %-28s ERRORS (exit %d, %d reports; %s)\n' "$name" "$rc" "$errs" "$3"
    fi
}

# Test programs, with the arguments ctest gives them.
while IFS= read -r line; do
    name=${line%% *}
    cmd=${line#* }
    # shellcheck disable=SC2086
    (cd "$B/tests" && "${VG[@]}" --log-file="$ROOT/$LOGS/$name.log" $cmd >"$ROOT/$LOGS/$name.out" 2>&1)
    report "$name" $? "$LOGS/$name.log"
done < <(cd "$B" && ctest -N -V 2>/dev/null | awk '
    /^[0-9]+: Test command:/ { sub(/^[0-9]+: Test command: /, ""); cmd = $0 }
    /Test +#[0-9]+:/ { n = $NF; if (cmd !~ /\.sh/) { gsub(/"/, "", cmd); print n " " cmd } }')

# CLI tests: every meshplan call under memcheck, through a wrapper.
W=$LOGS/meshplan
cat >"$W" <<WRAP
#!/usr/bin/env bash
exec ${VG[*]} --log-file=$ROOT/$LOGS/\$VG_TEST.%p.log $ROOT/$B/meshplan "\$@"
WRAP
chmod +x "$W"
export VG_TEST
for t in cli_e2e bad_inputs; do
    VG_TEST=$t bash "tests/$t.sh" "$W" "$ROOT" >"$LOGS/$t.out" 2>&1
    rc=$?
    report "$t ($(tail -1 "$LOGS/$t.out"))" $rc "$LOGS/$t.*.log"
done

echo "valgrind: $clean clean, $dirty with errors, $(( $(date +%s) - start )) s"
[ "$dirty" -eq 0 ]

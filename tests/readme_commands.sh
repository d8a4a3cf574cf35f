#!/usr/bin/env bash
# tests/readme_commands.sh SOURCE_DIR [BUILD_DIR] — run every command line of README.md, as a
# user pasting it would, so that the README cannot drift from the tool. BUILD_DIR (default
# SOURCE_DIR/build) is what build/ means in the commands: the build under test.
#
# The rule. A command line is a line inside a ``` code block (or an indented 4-space block of
# the set-up commands) that, after an optional "$ " prompt and optional leading VAR=value
# assignments, starts with one of
#     build/  meshplan  .venv/bin/  python3  cmake  cc  curl  bash tests/
# A line ending in '\' continues on the next. "meshplan" at the start is build/meshplan. Each
# command runs with bash from a scratch mirror of the repository root (every top-level entry
# linked, so files a command writes — step.json, fig.svg, .venv — land in the mirror; ../shared
# is linked beside it when present) and must exit 0 within 300 s ($README_TIMEOUT_S; the
# sanitizer build, ten times slower, sets 300). Lines starting with
# "bash scripts/" or "bash fuzz/" and "build-fuzz/" are the set-up, the test suite itself,
# Valgrind and fuzzing: CI (.ci/run) runs those; they are counted and listed, not run here.
# Commands naming ../shared/ are skipped with a message when it is absent (a fresh clone), and so
# are the lines that read a file a skipped line writes with -o.
# Lines after "$ cmd" in a block are its sample output, not commands. The commands run with
# /usr/bin first on PATH, as on the fresh Debian machine the README is written for (python3 is
# then Debian's, with the python3-* packages scripts/setup.sh installs, not a pyenv or conda
# one). Prints how many ran.
set -uo pipefail
SRC=$(cd "${1:-.}" && pwd)
BUILD=$(cd "${2:-$SRC/build}" && pwd)
README="$SRC/README.md"
W=$(mktemp -d /tmp/meshplan-readme.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir "$W/repo"
# In a git checkout the files git ignores (a README line's own outputs from an earlier run) are
# not linked: a command writing them must write the mirror's copy, never the checkout's.
git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1 && GIT=1 || GIT=0
for e in "$SRC"/* "$SRC"/.[!.]*; do
    [ -e "$e" ] || continue
    case "$(basename "$e")" in .git|.venv|build) continue ;; esac
    [ $GIT -eq 1 ] && git -C "$SRC" check-ignore -q "$(basename "$e")" && continue
    ln -s "$e" "$W/repo/$(basename "$e")"
done
ln -s "$BUILD" "$W/repo/build"
[ -d "$SRC/../shared" ] && ln -s "$(cd "$SRC/../shared" && pwd)" "$W/shared"

# Extract: one command per line of $W/commands (continuations joined).
python3 - "$README" > "$W/commands" <<'PY'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
starts = ("build/", "meshplan ", ".venv/bin/", "python3 ", "cmake ", "cc ", "curl ",
          "bash tests/", "bash scripts/", "bash fuzz/", "build-fuzz/")
fence = False
out = []
i = 0
while i < len(lines):
    line = lines[i]
    i += 1
    if line.startswith("```"):
        fence = not fence
        continue
    if fence:
        text = line.strip()
    elif line.startswith("    ") and not line.startswith("     "):
        text = line.strip()        # the indented set-up block at the top
    else:
        continue
    prompt = text.startswith("$ ")
    if prompt:
        text = text[2:]
    body = re.sub(r"^([A-Z_][A-Z0-9_]*=\S*\s+)*", "", text)
    if not body.startswith(starts) and not body == "meshplan":
        continue
    while text.endswith("\\") and i < len(lines):
        text = text[:-1] + " " + lines[i].strip()
        i += 1
    print(text)
PY

export PATH="/usr/bin:$PATH"
ran=0 failed=0 notrun=0 skipped=0 skipped_outputs=""
start=$(date +%s)
while IFS= read -r cmd; do
    body=$(sed -E 's/^([A-Z_][A-Z0-9_]*=[^ ]*[[:space:]]+)*//' <<< "$cmd")
    case "$body" in
        "bash scripts/"*|"bash fuzz/"*|build-fuzz/*)
            notrun=$((notrun + 1)); echo "not run (CI runs it): $cmd"; continue ;;
    esac
    # ... and so are the lines that read what a skipped line would have written (its -o FILE).
    needs_skipped=0
    for f in $skipped_outputs; do [[ "$cmd" == *"$f"* ]] && needs_skipped=1; done
    if { [[ "$cmd" == *"../shared/"* ]] && [ ! -e "$W/shared" ]; } || [ $needs_skipped -eq 1 ]; then
        skipped=$((skipped + 1)); echo "skipped (no ../shared): $cmd"
        o=$(sed -nE 's/.*(^| )-o +([^ ]+).*/\2/p' <<< "$cmd")
        [ -n "$o" ] && skipped_outputs="$skipped_outputs $o"
        continue
    fi
    run=$(sed -E 's#(^|[;&|(] *)meshplan #\1build/meshplan #g' <<< "$cmd")
    # In a sanitizer build Python loads the instrumented library with the runtimes preloaded.
    if [ -n "${SANITIZER_PRELOAD:-}" ] && [[ "$body" == python3* || "$body" == .venv/bin/* ]]; then
        run="LD_PRELOAD=$SANITIZER_PRELOAD ASAN_OPTIONS=detect_leaks=0 $run"
    fi
    t0=$(date +%s.%N)
    out=$(cd "$W/repo" && timeout "${README_TIMEOUT_S:-300}" bash -c "$run" 2>&1 </dev/null)
    rc=$?
    t=$(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)")
    ran=$((ran + 1))
    if [ $rc -ne 0 ]; then
        failed=$((failed + 1))
        echo "FAIL (exit $rc, ${t} s): $cmd"
        printf '%s\n' "$out" | tail -5 | sed 's/^/    /'
    else
        echo "ok (${t} s): $cmd"
    fi
done < "$W/commands"
# What the commands left in the repository root must be ignored by git, so that a user who ran
# them (and `git add -A`) commits none of it (found by a new user: a sweep's CSV and checkpoint
# had been committed).
if [ $GIT -eq 1 ]; then
    for e in "$W/repo"/* "$W/repo"/.[!.]*; do
        [ -e "$e" ] && [ ! -L "$e" ] || continue
        name=$(basename "$e")
        [ -d "$e" ] && name="$name/" # as git sees a directory (.venv/), present in SRC or not
        if ! git -C "$SRC" check-ignore -q --no-index "$name"; then
            failed=$((failed + 1))
            echo "FAIL: a README command leaves $name in the repository root, and .gitignore does not name it"
        fi
    done
fi
echo "readme: ran $ran command lines of README.md in $(( $(date +%s) - start )) s: $((ran - failed)) passed, $failed failed; $skipped skipped (no ../shared), $notrun not run (scripts CI runs)"
[ $failed -eq 0 ]

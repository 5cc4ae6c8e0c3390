#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lint.sh - formatting and static analysis.
#
#   scripts/lint.sh            clang-format check, clang-tidy, then the docs check (what
#                              `make lint` runs)
#   scripts/lint.sh format     rewrite every file with clang-format -i (`make format`)
#   scripts/lint.sh format-check | tidy | docs | licence
#
# clang-format covers every *.c/*.h under include src tests bench examples fuzz adapters
# tools. clang-tidy covers src/ (the library), adapters/ and tools/ (the programs; not
# their tests), using the compile_commands.json of the plain build tree build/check, which
# is configured here when it is missing. The docs
# check is scripts/check_errors_doc.sh: docs/errors.md against the error table and the
# headers (ctest runs it too, as errors_doc). The licence check is scripts/spdx.sh: every
# source file carries an SPDX-License-Identifier line.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$BAND_ROOT"

format_check()
{
    local cf
    cf=$(tool clang-format) || return 1
    local n
    n=$(c_sources | tr -cd '\0' | wc -c)
    echo "-- $($cf --version | head -n 1): checking $n files"
    ((n)) || return 0
    # One line per file that differs (VERBOSE=1 shows every place).
    local f bad=0 log
    log=$(mktemp)
    while IFS= read -r -d '' f; do
        if ! "$cf" --dry-run -Werror --style=file "$f" >"$log" 2>&1; then
            bad=$((bad + 1))
            echo "  not formatted: $f ($(grep -c 'error:' "$log") places)"
            if [[ "${VERBOSE:-0}" == 1 ]]; then
                cat "$log"
            fi
        fi
    done < <(c_sources)
    rm -f "$log"
    if ((bad)); then
        echo "lint: clang-format: $bad files differ (run 'make format'; VERBOSE=1 for details)" >&2
        return 1
    fi
    echo "-- clang-format: clean"
}

format_apply()
{
    local cf
    cf=$(tool clang-format) || return 1
    c_sources | xargs -0 -r "$cf" -i --style=file
    echo "-- clang-format: formatted $(c_sources | tr -cd '\0' | wc -c) files"
}

tidy()
{
    local ct dir="$PLAIN_DIR"
    ct=$(tool clang-tidy) || return 1
    # (Re-)configure the plain tree: cheap, and it picks up new files in src/.
    mkdir -p "$BUILD_ROOT"
    band_configure "$dir" "${PLAIN_ARGS[@]}" >"$BUILD_ROOT/lint-configure.log" 2>&1 || {
        cat "$BUILD_ROOT/lint-configure.log"
        echo "lint: configuring $dir failed" >&2
        return 1
    }
    # The build compiles each library source three times (shared, static, and the tests'
    # library with its BAND_TESTING hooks), and clang-tidy -p analyses every entry of a
    # file: keep one entry per file, the shipped build's, so each is analysed once.
    local db="$BUILD_ROOT/lint-db"
    mkdir -p "$db"
    python3 - "$dir/compile_commands.json" "$db/compile_commands.json" <<'PY' || return 1
import json, sys
entries = json.load(open(sys.argv[1]))
def testing(e):
    return "-DBAND_TESTING" in e.get("command", " ".join(e.get("arguments", [])))
kept = {}
for e in entries:
    if e["file"] not in kept or (testing(kept[e["file"]]) and not testing(e)):
        kept[e["file"]] = e
json.dump(list(kept.values()), open(sys.argv[2], "w"), indent=1)
PY
    local files=()
    # tools/ has a .clang-tidy of its own (its comments say what it changes and why).
    mapfile -d '' files < <(find src adapters tools -type f -name '*.c' -not -path '*/tests/*' -print0 | sort -z)
    echo "-- $($ct --version | grep -m1 -i version | sed 's/^ *//'): ${#files[@]} files in src/, adapters/ and tools/"
    ((${#files[@]})) || return 0
    local out
    out=$(mktemp -d)
    # One clang-tidy per file, JOBS at a time; each file's report is printed whole.
    local rc=0
    printf '%s\0' "${files[@]}" |
        xargs -0 -P "$JOBS" -I{} sh -c \
            'f="$1"; log="$2/$(echo "$f" | tr / _).log"
             if ! "$3" --quiet -p "$4" "$f" >"$log" 2>&1; then echo "$f" >>"$2/failed"; fi' \
            _ {} "$out" "$ct" "$db" || rc=1
    local f
    for f in "${files[@]}"; do
        local log
        log="$out/$(echo "$f" | tr / _).log"
        # drop clang-tidy's "N warnings generated." chatter
        if grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' "$log" |
            grep -q .; then
            echo "---- clang-tidy $f"
            grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' "$log"
        fi
    done
    if [[ -f "$out/failed" ]]; then
        echo "lint: clang-tidy failed on: $(tr '\n' ' ' <"$out/failed")" >&2
        rc=1
    fi
    rm -rf "$out"
    ((rc == 0)) && echo "-- clang-tidy: clean"
    return "$rc"
}

docs()
{
    bash "$BAND_ROOT/scripts/check_errors_doc.sh"
}

licence()
{
    bash "$BAND_ROOT/scripts/spdx.sh" check
}

case "${1:-all}" in
all)
    rc=0
    format_check || rc=1
    tidy || rc=1
    docs || rc=1
    licence || rc=1
    exit "$rc"
    ;;
format) format_apply ;;
format-check) format_check ;;
licence) licence ;;
tidy) tidy ;;
docs) docs ;;
*)
    echo "usage: $0 [all|format|format-check|tidy|docs]" >&2
    exit 2
    ;;
esac

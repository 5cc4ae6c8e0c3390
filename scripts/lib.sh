# SPDX-License-Identifier: MIT
# lib.sh - shared helpers for band's scripts (sourced, not run).
#
# Environment knobs (all optional):
#   JOBS=2            parallel compile jobs
#   CTEST_JOBS=2      parallel ctest jobs
#   BAND_GENERATOR    CMake generator; default Ninja when `ninja` is on PATH, else Unix Makefiles
#   BUILD_ROOT=build  where the build trees go

# shellcheck shell=bash

BAND_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${JOBS:-2}
CTEST_JOBS=${CTEST_JOBS:-2}
BUILD_ROOT=${BUILD_ROOT:-build}
if [[ -z "${BAND_GENERATOR:-}" ]]; then
    if command -v ninja >/dev/null 2>&1; then
        BAND_GENERATOR=Ninja
    else
        BAND_GENERATOR="Unix Makefiles"
    fi
fi

# The plain gcc tree build/check: `make check`'s first build, and the compile database that
# clang-tidy reads.
PLAIN_DIR="$BUILD_ROOT/check"
PLAIN_ARGS=(-DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBAND_WERROR=ON
    -DBAND_BUILD_TESTS=ON -DBAND_BUILD_BENCH=ON -DBAND_BUILD_EXAMPLES=ON -DBAND_BUILD_FUZZ=OFF
    -DBAND_SANITIZE=)

# banner TEXT... - a line that stands out in a long CI log
banner()
{
    local line="=================================================================================="
    printf '\n%s\n==== %s\n%s\n' "$line" "$*" "$line"
}

# band_configure BUILD_DIR CMAKE_ARGS... - configure (or re-configure) a build tree.
# A tree configured with another compiler is wiped first, so switching CC never trips
# CMake's "you have changed variables that require your cache to be deleted".
band_configure()
{
    local dir=$1
    shift
    local cc=""
    local a
    for a in "$@"; do
        case $a in -DCMAKE_C_COMPILER=*) cc=${a#-DCMAKE_C_COMPILER=} ;; esac
    done
    if [[ -f "$dir/CMakeCache.txt" ]]; then
        local old_gen old_cc
        old_gen=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$dir/CMakeCache.txt")
        old_cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt")
        if [[ "$old_gen" != "$BAND_GENERATOR" ]] ||
            { [[ -n "$cc" ]] && [[ "$old_cc" != "$(command -v "$cc" || echo "$cc")" ]] &&
                [[ "$old_cc" != "$cc" ]]; }; then
            echo "-- $dir was configured with '$old_gen' / '$old_cc': starting afresh"
            rm -rf "$dir"
        fi
    fi
    cmake -S "$BAND_ROOT" -B "$dir" -G "$BAND_GENERATOR" "$@"
}

# band_build BUILD_DIR [TARGETS...]
band_build()
{
    local dir=$1
    shift
    local t=()
    local x
    for x in "$@"; do
        t+=(--target "$x")
    done
    cmake --build "$dir" -j "$JOBS" "${t[@]}"
}

# band_ctest BUILD_DIR [CTEST_ARGS...]
band_ctest()
{
    local dir=$1
    shift
    ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$CTEST_JOBS" "$@"
}

# tool NAME - the command for clang-format / clang-tidy (plain name, else the -14 one)
tool()
{
    if command -v "$1" >/dev/null 2>&1; then
        echo "$1"
    elif command -v "$1-14" >/dev/null 2>&1; then
        echo "$1-14"
    else
        echo "missing command: $1 (run 'make deps')" >&2
        return 1
    fi
}

# c_sources - every *.c / *.h of ours that clang-format checks, NUL-separated
c_sources()
{
    local dirs=() d
    for d in include src tests bench examples fuzz adapters tools; do
        [[ -d "$BAND_ROOT/$d" ]] && dirs+=("$d")
    done
    ((${#dirs[@]})) || return 0
    (cd "$BAND_ROOT" && find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' \) \
        -not -path 'fuzz/corpus/*' -print0 | sort -z)
}

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# abi_check.sh - compare the ABI of the current tree's shared libraries with an older
# release's, with libabigail's abidiff (Debian: abigail-tools). Run at release time; not
# part of `make check` (docs/abi.md).
#
#   scripts/abi_check.sh [OLD_REF]
#
# OLD_REF is any git revision (a tag, a commit, HEAD~1); by default the newest tag that is
# an ancestor of HEAD^ (the release before this one). Both sides are built the same way:
# Debug with -g -Og, the libraries alone (no tests, bench, examples or fuzz), each adapter
# when its tree builds it here. The old side comes from `git archive OLD_REF`, the new one
# is this working tree as it is, uncommitted changes included. Each is installed into its
# own prefix under ABI_WORK (default build/abi), and for libband, libband-uv and
# libband-fd `abidiff --headers-dir1 <old>/include --headers-dir2 <new>/include` compares
# the two: only types reachable from the installed headers count.
#
# abidiff sees only what the exported functions reach. The inline ABI (the headers' inline
# fast paths read struct band_sem_prefix and struct band_fair_handle_prefix inside band's
# objects) is compared apart: those structs, their BAND_*_PREFIX_* encodings and the
# BAND_*_INLINE_ABI values, as the installed headers define them (comments stripped).
#
# Prints each library's soname on both sides, abidiff's report and a verdict, the inline
# ABI's verdict, then a summary. Exit status:
#   0  no library changed its ABI incompatibly under the same soname: either nothing
#      incompatible changed, or the soname changed with it (libband.so.0.1 to .0.2: the
#      new library cannot be mistaken for the old one). Additions under the same soname
#      are reported ("compatible changes") and are fine for a new minor release only.
#   1  an incompatible change (abidiff's ABI_INCOMPATIBLE_CHANGE: a removed or changed
#      function, a changed type layout...) under an unchanged soname, a library that the
#      old side had and the new side lacks, or an inline ABI change under the same
#      soname or without a new BAND_*_INLINE_ABI value: the soname (the minor version
#      before 1.0) must change, or the change must go.
#   2  a build, an install or abidiff itself failed, or no OLD_REF was found.
# Environment: ABI_WORK, JOBS, BAND_GENERATOR (scripts/lib.sh), CC.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$BAND_ROOT"

die()
{
    echo "abi_check: $*" >&2
    exit 2
}

case "${1:-}" in
-h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
(($# <= 1)) || die "usage: $0 [OLD_REF]"
for t in abidiff git tar readelf cmake; do
    command -v "$t" >/dev/null 2>&1 || die "needs $t (abidiff: Debian package abigail-tools)"
done

old_ref=${1:-}
if [[ -z "$old_ref" ]]; then
    old_ref=$(git describe --tags --abbrev=0 HEAD^ 2>/dev/null) ||
        die "no tag before HEAD: name the old revision, e.g. $0 HEAD~1"
fi
old_commit=$(git rev-parse --verify --quiet "$old_ref^{commit}") ||
    die "'$old_ref' is not a git revision"

work=${ABI_WORK:-$BUILD_ROOT/abi}
mkdir -p "$work"
work=$(cd "$work" && pwd)
rm -rf "$work/old-src" "$work/old-build" "$work/old" "$work/new-build" "$work/new"
mkdir -p "$work/old-src"
git archive "$old_commit" | tar -x -C "$work/old-src"

ARGS=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-g -Og" -DBAND_BUILD_TESTS=OFF
    -DBAND_BUILD_BENCH=OFF -DBAND_BUILD_EXAMPLES=OFF -DBAND_BUILD_TOOLS=OFF -DBAND_BUILD_FUZZ=OFF -DBAND_SANITIZE=
    -DBAND_WERROR=OFF)

# build SIDE SOURCE - configure, build and install SOURCE into $work/SIDE
build()
{
    local side=$1 src=$2 log="$work/$1-build.log"
    echo "== abi_check: building $side ($src)"
    if ! { cmake -S "$src" -B "$work/$side-build" -G "$BAND_GENERATOR" "${ARGS[@]}" &&
        cmake --build "$work/$side-build" -j "$JOBS" &&
        cmake --install "$work/$side-build" --prefix "$work/$side"; } >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        die "building $side failed (whole log: $log)"
    fi
}
build old "$work/old-src"
build new "$BAND_ROOT"

# lib_file PREFIX NAME - the real file of libNAME.so under PREFIX, or nothing
lib_file()
{
    local f
    f=$(find "$1" -name "lib$2.so" \( -type f -o -type l \) | head -n 1)
    [[ -n "$f" ]] && readlink -f "$f"
    return 0
}
soname()
{
    readelf -d "$1" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p'
}

rc=0
summary=()
for lib in band band-uv band-fd; do
    old=$(lib_file "$work/old" "$lib")
    new=$(lib_file "$work/new" "$lib")
    banner "lib$lib.so: $old_ref ($(git rev-parse --short "$old_commit")) -> working tree"
    if [[ -z "$old" && -z "$new" ]]; then
        echo "lib$lib.so is built on neither side here: skipped"
        summary+=("lib$lib.so: not built on either side")
        continue
    elif [[ -z "$old" ]]; then
        echo "lib$lib.so is new: nothing to compare"
        summary+=("lib$lib.so: new library")
        continue
    elif [[ -z "$new" ]]; then
        echo "lib$lib.so was there in $old_ref and is not built now: INCOMPATIBLE"
        summary+=("lib$lib.so: REMOVED")
        rc=1
        continue
    fi
    old_so=$(soname "$old")
    new_so=$(soname "$new")
    echo "soname: $old_so -> $new_so"
    report="$work/abidiff-$lib.txt"
    set +e
    abidiff --headers-dir1 "$work/old/include" --headers-dir2 "$work/new/include" \
        "$old" "$new" >"$report" 2>&1
    status=$?
    set -e
    cat "$report"
    if ((status & 3)); then
        die "abidiff failed on lib$lib.so (status $status)"
    fi
    # "Functions changes summary: R Removed, C Changed (F filtered out), A Added functions"
    counts=$(sed -n 's/^\(Functions\|Variables\) changes summary: \([0-9]*\) Removed[^,]*, \([0-9]*\) Changed.*, \([0-9]*\) Added.*/\1 \2 \3 \4/p' "$report" |
        awk '{ r += $2; c += $3; a += $4 } END { printf "%d removed, %d changed, %d added", r, c, a }')
    if ((status & 8)); then
        if [[ "$old_so" == "$new_so" ]]; then
            verdict="INCOMPATIBLE changes under the same soname $new_so"
            rc=1
        else
            verdict="incompatible changes, soname changed ($old_so -> $new_so): allowed"
        fi
    elif ((status & 4)); then
        verdict="compatible changes only (additions: fine for a new minor release)"
        [[ "$old_so" != "$new_so" ]] && verdict+=", soname changed ($old_so -> $new_so)"
    else
        verdict="no ABI change"
        [[ "$old_so" != "$new_so" ]] && verdict+=", soname changed ($old_so -> $new_so)"
    fi
    verdict+="; functions and variables: $counts"
    echo "-> lib$lib.so: $verdict"
    summary+=("lib$lib.so: $verdict")
done

# The inline ABI: what the headers' inline fast paths read from band's objects (struct
# band_sem_prefix, struct band_fair_handle_prefix, their BAND_*_PREFIX_* encodings,
# BAND_*_INLINE_ABI). abidiff cannot see it, since no exported function takes those types:
# compare their definitions, comments stripped, side by side.
# inline_abi PREFIX - those definitions in PREFIX/include/band/*.h, one a line
inline_abi()
{
    local f
    for f in "$1"/include/band/*.h; do
        "${CC:-cc}" -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null || true
    done | awk '
        /^#define BAND_[A-Z0-9_]*(INLINE_ABI|_PREFIX_[A-Z0-9_]*|_MAX_CLASSES)([ (]|$)/ {
            $1 = $1; print; next
        }
        /^struct band_[a-z0-9_]*_prefix *\{/ { inb = 1 }
        inb { $1 = $1; if ($0 != "") print }
        inb && /^\};/ { inb = 0 }'
}
banner "inline ABI (BAND_SEM_INLINE_ABI, BAND_FAIR_INLINE_ABI): $old_ref -> working tree"
inline_abi "$work/old" >"$work/inline-old.txt"
inline_abi "$work/new" >"$work/inline-new.txt"
core_old=$(soname "$(lib_file "$work/old" band)")
core_new=$(soname "$(lib_file "$work/new" band)")
if [[ ! -s "$work/inline-old.txt" && ! -s "$work/inline-new.txt" ]]; then
    verdict="none on either side"
elif cmp -s "$work/inline-old.txt" "$work/inline-new.txt"; then
    verdict="unchanged"
else
    diff -u "$work/inline-old.txt" "$work/inline-new.txt" || true
    if cmp -s <(grep 'INLINE_ABI' "$work/inline-old.txt") \
        <(grep 'INLINE_ABI' "$work/inline-new.txt"); then
        verdict="CHANGED without a new BAND_*_INLINE_ABI value"
        rc=1
    elif [[ "$core_old" == "$core_new" ]]; then
        verdict="CHANGED under the same soname $core_new"
        rc=1
    else
        verdict="changed with BAND_*_INLINE_ABI and the soname ($core_old -> $core_new): allowed"
    fi
fi
echo "-> inline ABI: $verdict"
summary+=("inline ABI: $verdict")

banner "abi_check: $old_ref -> working tree"
printf '%s\n' "${summary[@]}"
if ((rc)); then
    echo "abi_check: FAILED: an incompatible change needs a new soname (the next minor" \
        "version before 1.0, docs/abi.md)"
else
    echo "abi_check: ok"
fi
exit "$rc"

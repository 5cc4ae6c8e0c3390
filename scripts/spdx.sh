#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# spdx.sh - every source, build and configuration file names its licence (MIT, LICENSE).
#
#   scripts/spdx.sh check     list the files without an SPDX line; exit 1 if any
#   scripts/spdx.sh add       give each of them one, in its language's comment syntax
#
# A file counts as a source file by its name (C, CMake, shell, Python, awk, make, the
# .in templates and the tool configurations); test corpora, data and prose do not. The
# line must be within the first three lines (after a #! line or a "---" YAML start).
# Files come from `git ls-files` in a checkout and from find(1) in an unpacked tarball.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

TAG="SPDX-License-Identifier: MIT"

list_files()
{
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files --cached --others --exclude-standard
    else
        find . -path ./build -prune -o -path ./debian -prune -o -type f -print | sed 's|^\./||'
    fi
}

# Prints the comment style a file takes ("c", "hash") or nothing when it is not source.
style_of()
{
    case $1 in
    *.c | *.h | *.h.in) echo c ;;
    *.cmake | *.cmake.in | */CMakeLists.txt | CMakeLists.txt) echo hash ;;
    *.sh | *.py | *.awk | *.pc.in | *.gp) echo hash ;;
    Makefile | */Makefile | .ci/run | .clang-format | .clang-tidy | .editorconfig | .gitignore) echo hash ;;
    debian/rules | debian/*.install | debian/watch) echo hash ;;
    *) ;;
    esac
}

has_tag()
{
    head -n 3 "$1" | grep -qF "$TAG"
}

missing()
{
    local f
    while IFS= read -r f; do
        [[ -f $f && -n $(style_of "$f") ]] || continue
        has_tag "$f" || echo "$f"
    done < <(list_files)
}

add_one()
{
    local f=$1 line tmp
    case $(style_of "$f") in
    c) line="/* $TAG */" ;;
    hash) line="# $TAG" ;;
    esac
    tmp=$(mktemp)
    if head -n 1 "$f" | grep -q '^#!'; then
        { head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$tmp"
    else
        { echo "$line"; cat "$f"; } >"$tmp"
    fi
    cat "$tmp" >"$f" # keeps the file's mode
    rm -f "$tmp"
}

case ${1:-check} in
check)
    bad=$(missing)
    if [[ -n $bad ]]; then
        echo "spdx: these files have no '$TAG' line (run scripts/spdx.sh add):" >&2
        sed 's/^/  /' <<<"$bad" >&2
        exit 1
    fi
    echo "-- spdx: every source file names its licence"
    ;;
add)
    missing | while IFS= read -r f; do
        add_one "$f"
        echo "spdx: added to $f"
    done
    ;;
*)
    echo "usage: scripts/spdx.sh check|add" >&2
    exit 2
    ;;
esac

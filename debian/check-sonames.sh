#!/bin/sh
# SPDX-License-Identifier: MIT
# check-sonames.sh PACKAGE... - each runtime library package holds shared libraries whose
# SONAME gives exactly its name (Debian policy 8.1: libfoo.so.0.2 -> libfoo0.2, and
# libfoo2.so.1 -> libfoo2-1), and no other package holds a shared library.
#
# Run by debian/rules after dh_install. The sonames follow the version (libband.so.0.MINOR
# before 1.0): when they change, the package names in debian/control, the *.install and
# *.symbols files must be renamed with them, and this stops the build until they are.
set -eu

fail=0
for pkg in "$@"; do
    case $pkg in
    *-dev | *-doc | *-dbg) runtime=0 ;;
    lib*) runtime=1 ;;
    *) runtime=0 ;;
    esac
    found=0
    for f in $(find "debian/$pkg" -type f -name '*.so*' 2>/dev/null | sort); do
        soname=$(objdump -p "$f" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
        [ -n "$soname" ] || continue
        found=1
        if [ "$runtime" = 0 ]; then
            echo "check-sonames: $pkg is not a library package but holds $f ($soname)" >&2
            fail=1
            continue
        fi
        name=${soname%%.so*}
        version=${soname#"$name".so}
        version=${version#.}
        case $name in
        *[0-9]) expected=$name-$version ;;
        *) expected=$name$version ;;
        esac
        if [ "$expected" != "$pkg" ]; then
            echo "check-sonames: $f has SONAME $soname, so its package must be named" \
                "$expected, not $pkg (rename it in debian/control, debian/$pkg.install" \
                "and debian/$pkg.symbols)" >&2
            fail=1
        else
            echo "check-sonames: $pkg: $soname"
        fi
    done
    if [ "$runtime" = 1 ] && [ "$found" = 0 ]; then
        echo "check-sonames: $pkg holds no shared library" >&2
        fail=1
    fi
done
exit "$fail"

#!/bin/sh
# SPDX-License-Identifier: MIT
# make_install.sh - the make_install test (see CMakeLists.txt beside this file).
#
#   make_install.sh <source-dir> <work-dir> <make> <cc> <version> <soversion>
#
# Runs `make install` and `make uninstall` of <source-dir>'s Makefile as a user would,
# with BUILD_ROOT=<work-dir>/b, BAND_SKIP_DEPS unset and stubs of apt-get, apt, dpkg,
# dpkg-query and sudo first on PATH that log any call, and checks:
#  1. make install PREFIX=<work-dir>/prefix (a directory that does not exist yet): no stub
#     was called and scripts/deps.sh did not run (no "deps:" line), the tree
#     BUILD_ROOT/install has tests, bench, examples and fuzz off and built none of them,
#     the headers, libband.so.<version> with soname libband.so.<soversion>, libband.a,
#     band.pc and bandConfig.cmake are installed, and a program built with
#     -I<prefix>/include -L<libdir> -lband -Wl,-rpath,<libdir> runs without
#     LD_LIBRARY_PATH;
#  2. make uninstall: the prefix is gone (every file and every directory it created);
#  3. make install PREFIX=/band-test-prefix DESTDIR=<work-dir>/dest, over a DESTDIR that
#     already holds <prefix>/lib/pkgconfig/other.pc and an empty <prefix>/share: the files
#     land under DESTDIR only; make uninstall then leaves exactly other.pc, its directories
#     and the empty share.
# Exits non-zero on the first failure.
set -eu

src=$1
work=$2
make=$3
cc=$4
version=$5
soversion=$6

rm -rf "$work"
mkdir -p "$work/stub"
log=$work/stub.log
for t in apt-get apt dpkg dpkg-query sudo; do
    printf '#!/bin/sh\necho "%s $*" >>"%s"\nexit 97\n' "$t" "$log" >"$work/stub/$t"
    chmod +x "$work/stub/$t"
done

# run_make LOG ARGS... - make -C <source> ARGS as a user would run it, output in LOG
run_make()
{
    out=$1
    shift
    echo "== make_install: make $*"
    if ! env -u BAND_SKIP_DEPS -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u DESTDIR \
        PATH="$work/stub:$PATH" CC="$cc" JOBS=2 \
        "$make" -C "$src" BUILD_ROOT="$work/b" "$@" >"$out" 2>&1; then
        cat "$out"
        echo "make_install: make $* failed" >&2
        exit 1
    fi
    if [ -s "$log" ]; then
        echo "make_install: make $* ran package tools:" >&2
        cat "$log" >&2
        exit 1
    fi
    if grep -n '^deps:' "$out"; then
        echo "make_install: make $* ran scripts/deps.sh" >&2
        exit 1
    fi
}

# 1. make install into a fresh prefix
prefix=$work/prefix
run_make "$work/install.log" install PREFIX="$prefix"
cache=$work/b/install/CMakeCache.txt
for opt in BAND_BUILD_TESTS BAND_BUILD_BENCH BAND_BUILD_EXAMPLES BAND_BUILD_FUZZ; do
    if ! grep -q "^$opt:[A-Z]*=OFF\$" "$cache"; then
        echo "make_install: $cache: $(grep "^$opt:" "$cache" || echo "no $opt"), want OFF" >&2
        exit 1
    fi
done
built=$(find "$work/b/install" -type f \( -name 'test_*' -o -name 'stress_*' -o -name 'model_*' \
    -o -name 'band_bench' -o -name 'band_demo' -o -name 'fuzz_*' \) -perm -u+x | head -n 3)
if [ -n "$built" ]; then
    echo "make_install: make install built more than the libraries: $built" >&2
    exit 1
fi
libdir=$(dirname "$(find "$prefix" -name "libband.so.$version" | head -n 1)")
for f in "$prefix/include/band/band.h" "$prefix/include/band/version.h" \
    "$libdir/libband.so" "$libdir/libband.so.$soversion" "$libdir/libband.a" \
    "$libdir/pkgconfig/band.pc" "$libdir/cmake/band/bandConfig.cmake"; do
    test -e "$f" || { echo "make_install: missing $f" >&2; exit 1; }
done
soname=$(readelf -d "$libdir/libband.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
if [ "$soname" != "libband.so.$soversion" ]; then
    echo "make_install: soname '$soname', want libband.so.$soversion" >&2
    exit 1
fi
echo "installed $(find "$prefix" -type f | wc -l) files; libband.so.$version, soname $soname"
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/consumer" "$(dirname "$0")/consumer.c" \
    -I"$prefix/include" -L"$libdir" -lband -Wl,-rpath,"$libdir"
env -u LD_LIBRARY_PATH "$work/consumer"

# 2. make uninstall: nothing left
run_make "$work/uninstall.log" uninstall
if [ -e "$prefix" ]; then
    echo "make_install: make uninstall left:" >&2
    find "$prefix" | sort >&2
    exit 1
fi
echo "make uninstall: $prefix is gone"

# 3. DESTDIR over directories that are not band's
dest=$work/dest
vprefix=/band-test-prefix
mkdir -p "$dest$vprefix/lib/pkgconfig" "$dest$vprefix/share"
echo "Name: other" >"$dest$vprefix/lib/pkgconfig/other.pc"
(cd "$dest" && find . | sort) >"$work/before.txt"
run_make "$work/install-destdir.log" install PREFIX="$vprefix" DESTDIR="$dest"
if [ -e "$vprefix" ]; then
    echo "make_install: DESTDIR ignored: $vprefix exists" >&2
    exit 1
fi
if ! test -f "$dest$vprefix/include/band/band.h" ||
    ! test -f "$dest$vprefix/lib/libband.so.$version"; then
    echo "make_install: nothing installed under DESTDIR $dest$vprefix" >&2
    exit 1
fi
if ! grep -q "prefix=\${pcfiledir}" "$dest$vprefix/lib/pkgconfig/band.pc"; then
    echo "make_install: band.pc is not relocatable" >&2
    exit 1
fi
run_make "$work/uninstall-destdir.log" uninstall
(cd "$dest" && find . | sort) >"$work/after.txt"
if ! diff -u "$work/before.txt" "$work/after.txt"; then
    echo "make_install: make uninstall under DESTDIR did not restore what was there" >&2
    exit 1
fi
echo "make uninstall under DESTDIR: only what was there before is left"

echo "make_install: ok"

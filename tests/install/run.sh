#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh - the install_consumer test (see CMakeLists.txt beside this file).
#
#   run.sh <build-dir> <work-dir> <cmake> <cc> <generator> <version> <soversion> [<pkg-config>]
#
# 1. cmake --install <build-dir> --prefix <work-dir>/prefix; the sonames are
#    lib<name>.so.<soversion> (libband-uv and libband-fd need libband.so.<soversion>), each
#    with its lib<name>.so.<version> file and lib<name>.so link (readelf or objdump -p)
# 2. cc consumer.c $(pkg-config --cflags --libs band), run with LD_LIBRARY_PATH; band.pc
#    says <version>, band-uv.pc and band-fd.pc require band = <version> and are refused
#    beside a band.pc of another version
# 3. find_package(band CONFIG) in cmake-consumer/ with CMAKE_PREFIX_PATH=<prefix>, run the
#    shared (band::band) and static (band::band_static) consumers
# 4. version-check/: which find_package(band <version>) requests the package version file
#    accepts (only the same MAJOR.MINOR before 1.0), and that a component left by another
#    band version is refused
# When libband-uv was installed (band/uv.h is there), also: consumer_uv.c built with
# $(pkg-config --cflags --libs band-uv), and find_package(band COMPONENTS uv) consumers of
# band::band_uv and band::band_uv_static. Likewise for libband-fd (band/fd.h, band-fd,
# COMPONENTS fd), and when both are there, both adapter headers in one file in both orders.
# Exits non-zero on the first failure.
set -eu

build=$1
work=$2
cmake=$3
cc=$4
generator=$5
version=$6
soversion=$7
pkgconfig=${8:-}
other=${version%.*}.$((${version##*.} + 1)) # the next patch release: another version
here=$(cd "$(dirname "$0")" && pwd)

prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"

echo "== install_consumer: cmake --install into $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 || {
    cat "$work/install.log"
    exit 1
}

for f in include/band/band.h include/band/version.h; do
    test -f "$prefix/$f" || { echo "install_consumer: missing $f" >&2; exit 1; }
done
libdir=$(dirname "$(find "$prefix" -name 'libband.so' | head -n 1)")
test -n "$libdir" && test -f "$libdir/libband.a" || {
    echo "install_consumer: libband.so or libband.a not installed" >&2
    exit 1
}
uv=0
if [ -f "$prefix/include/band/uv.h" ]; then
    uv=1
    for f in libband-uv.so libband-uv.a pkgconfig/band-uv.pc cmake/band/bandUvTargets.cmake; do
        test -f "$libdir/$f" || { echo "install_consumer: libband-uv: missing $f" >&2; exit 1; }
    done
fi
fd=0
if [ -f "$prefix/include/band/fd.h" ]; then
    fd=1
    for f in libband-fd.so libband-fd.a pkgconfig/band-fd.pc cmake/band/bandFdTargets.cmake; do
        test -f "$libdir/$f" || { echo "install_consumer: libband-fd: missing $f" >&2; exit 1; }
    done
fi
if find "$prefix/include" -name '*internal*' | grep -q .; then
    echo "install_consumer: a private header was installed" >&2
    exit 1
fi

# dynamic TAG FILE - the values of TAG (SONAME, NEEDED) in FILE's dynamic section
dynamic()
{
    if command -v readelf >/dev/null 2>&1; then
        readelf -d "$2" | sed -n "s/.*($1).*\[\(.*\)\]\$/\1/p"
    elif command -v objdump >/dev/null 2>&1; then
        objdump -p "$2" | awk -v t="$1" '$1 == t { print $2 }'
    else
        echo "install_consumer: neither readelf nor objdump (binutils) to read sonames" >&2
        exit 1
    fi
}
# check_soname NAME - lib<NAME>.so -> lib<NAME>.so.<soversion> -> lib<NAME>.so.<version>,
# with soname lib<NAME>.so.<soversion>
check_soname()
{
    so=$libdir/lib$1.so
    for f in "$so" "$so.$soversion" "$so.$version"; do
        test -e "$f" || { echo "install_consumer: missing $f" >&2; exit 1; }
    done
    if ! test -L "$so" || ! test -L "$so.$soversion" || test -L "$so.$version"; then
        echo "install_consumer: lib$1.so and lib$1.so.$soversion must be links to" \
            "lib$1.so.$version" >&2
        exit 1
    fi
    got=$(dynamic SONAME "$so.$version")
    if [ "$got" != "lib$1.so.$soversion" ]; then
        echo "install_consumer: lib$1.so.$version has soname '$got'," \
            "want lib$1.so.$soversion" >&2
        exit 1
    fi
    echo "lib$1.so.$version: soname $got"
}
check_soname band
# built A - whether adapter A (uv or fd) was installed
built()
{
    case $1 in
    uv) [ "$uv" = 1 ] ;;
    fd) [ "$fd" = 1 ] ;;
    esac
}
for a in uv fd; do
    built "$a" || continue
    check_soname "band-$a"
    if ! dynamic NEEDED "$libdir/libband-$a.so.$version" | grep -qx "libband.so.$soversion"; then
        echo "install_consumer: libband-$a.so.$version does not need libband.so.$soversion:" \
            "$(dynamic NEEDED "$libdir/libband-$a.so.$version" | tr '\n' ' ')" >&2
        exit 1
    fi
done

if [ -n "$pkgconfig" ]; then
    echo "== install_consumer: pkg-config consumer"
    PKG_CONFIG_PATH=$libdir/pkgconfig
    export PKG_CONFIG_PATH
    "$pkgconfig" --exists --print-errors band
    echo "pkg-config band: version $("$pkgconfig" --modversion band)," \
        "cflags $("$pkgconfig" --cflags band), libs $("$pkgconfig" --libs band)"
    if [ "$("$pkgconfig" --modversion band)" != "$version" ]; then
        echo "install_consumer: band.pc says version $("$pkgconfig" --modversion band)," \
            "want $version" >&2
        exit 1
    fi
    # Each adapter's .pc requires exactly the band it was built with: beside a band.pc of
    # any other version (a copy of the directory with band.pc edited) it is refused.
    for a in uv fd; do
        built "$a" || continue
        req=$("$pkgconfig" --print-requires "band-$a" | grep '^band ' || true)
        if [ "$req" != "band = $version" ]; then
            echo "install_consumer: band-$a.pc requires '$req', want 'band = $version'" >&2
            exit 1
        fi
        rm -rf "$work/pc-other"
        cp -R "$libdir/pkgconfig" "$work/pc-other"
        sed "s/^Version: .*/Version: $other/" "$libdir/pkgconfig/band.pc" \
            >"$work/pc-other/band.pc"
        if PKG_CONFIG_PATH=$work/pc-other "$pkgconfig" --exists "band-$a"; then
            echo "install_consumer: band-$a.pc is accepted beside band $other" >&2
            exit 1
        fi
        echo "band-$a.pc: requires band = $version, refused beside band $other"
    done
    # shellcheck disable=SC2046 # word splitting of the flags is intended
    "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$work/consumer_pc" \
        "$here/consumer.c" $("$pkgconfig" --cflags --libs band)
    LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/consumer_pc"
    if [ "$uv" = 1 ]; then
        "$pkgconfig" --exists --print-errors band-uv
        echo "pkg-config band-uv: cflags $("$pkgconfig" --cflags band-uv)," \
            "libs $("$pkgconfig" --libs band-uv)"
        # shellcheck disable=SC2046
        "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$work/consumer_uv_pc" \
            "$here/consumer_uv.c" $("$pkgconfig" --cflags --libs band-uv)
        LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/consumer_uv_pc"
    fi
    if [ "$fd" = 1 ]; then
        "$pkgconfig" --exists --print-errors band-fd
        # shellcheck disable=SC2046
        "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$work/consumer_fd_pc" \
            "$here/consumer_fd.c" $("$pkgconfig" --cflags --libs band-fd)
        LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/consumer_fd_pc"
    fi
    if [ "$fd" = 1 ] && [ "$uv" = 1 ]; then
        # Both adapter headers, in both orders, in one translation unit.
        for order in "fd uv" "uv fd"; do
            set -- $order
            printf '#define _POSIX_C_SOURCE 200809L\n#include <band/%s.h>\n#include <band/%s.h>\nint main(void) { return 0; }\n' \
                "$1" "$2" >"$work/both.c"
            # shellcheck disable=SC2046
            "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only "$work/both.c" \
                $("$pkgconfig" --cflags band-uv band-fd)
        done
        echo "band/uv.h and band/fd.h: both orders compile"
    fi
    unset PKG_CONFIG_PATH
else
    echo "== install_consumer: pkg-config not found, skipping the pkg-config consumer"
fi

echo "== install_consumer: find_package(band CONFIG) consumer"
"$cmake" -S "$here/cmake-consumer" -B "$work/cmake-consumer" -G "$generator" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DBAND_REQUEST="${version%.*}" \
    -DBAND_CONSUMER_UV="$uv" -DBAND_CONSUMER_FD="$fd" >"$work/cmake-configure.log" 2>&1 || {
    cat "$work/cmake-configure.log"
    exit 1
}
grep 'found band' "$work/cmake-configure.log" || true
"$cmake" --build "$work/cmake-consumer" >"$work/cmake-build.log" 2>&1 || {
    cat "$work/cmake-build.log"
    exit 1
}
"$work/cmake-consumer/consumer"
"$work/cmake-consumer/consumer_static"
if [ "$uv" = 1 ]; then
    "$work/cmake-consumer/consumer_uv"
    "$work/cmake-consumer/consumer_uv_static"
fi
if [ "$fd" = 1 ]; then
    "$work/cmake-consumer/consumer_fd"
    "$work/cmake-consumer/consumer_fd_static"
fi

echo "== install_consumer: find_package(band <version>) against band $version"
# A copy of the prefix whose fd (else uv) component claims another version of band.
stale=""
cmakedir=$libdir/cmake/band
for a in Fd Uv; do
    if [ -f "$cmakedir/band${a}Version.cmake" ]; then
        rm -rf "$work/stale"
        cp -R "$prefix" "$work/stale"
        printf 'set(band_%s_VERSION "%s")\n' "$(echo "$a" | tr FU fu)" "$other" \
            >"$work/stale/${cmakedir#"$prefix"/}/band${a}Version.cmake"
        stale=$(echo "$a" | tr FU fu)
        break
    fi
done
"$cmake" -S "$here/version-check" -B "$work/version-check" -G "$generator" \
    -DCMAKE_C_COMPILER="$cc" -DBAND_PREFIX="$prefix" -DBAND_EXPECT_VERSION="$version" \
    -DBAND_STALE_PREFIX="${stale:+$work/stale}" -DBAND_STALE_COMPONENT="$stale" \
    >"$work/version-check.log" 2>&1 || {
    cat "$work/version-check.log"
    exit 1
}
grep '^-- version-check:' "$work/version-check.log"

echo "install_consumer: ok"

#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh - the install_consumer test (see CMakeLists.txt beside this file).
#
#   run.sh <build-dir> <work-dir> <cmake> <cc> <generator> [<pkg-config>]
#
# 1. cmake --install <build-dir> --prefix <work-dir>/prefix
# 2. cc consumer.c $(pkg-config --cflags --libs band), run with LD_LIBRARY_PATH
# 3. find_package(band CONFIG) in cmake-consumer/ with CMAKE_PREFIX_PATH=<prefix>, run the
#    shared (band::band) and static (band::band_static) consumers
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
pkgconfig=${6:-}
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

if [ -n "$pkgconfig" ]; then
    echo "== install_consumer: pkg-config consumer"
    PKG_CONFIG_PATH=$libdir/pkgconfig
    export PKG_CONFIG_PATH
    "$pkgconfig" --exists --print-errors band
    echo "pkg-config band: version $("$pkgconfig" --modversion band)," \
        "cflags $("$pkgconfig" --cflags band), libs $("$pkgconfig" --libs band)"
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

echo "install_consumer: ok"

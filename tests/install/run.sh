#!/bin/sh
# run.sh - the install_consumer test (see CMakeLists.txt beside this file).
#
#   run.sh <build-dir> <work-dir> <cmake> <cc> <generator> [<pkg-config>]
#
# 1. cmake --install <build-dir> --prefix <work-dir>/prefix
# 2. cc consumer.c $(pkg-config --cflags --libs band), run with LD_LIBRARY_PATH
# 3. find_package(band CONFIG) in cmake-consumer/ with CMAKE_PREFIX_PATH=<prefix>, run the
#    shared (band::band) and static (band::band_static) consumers
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
    unset PKG_CONFIG_PATH
else
    echo "== install_consumer: pkg-config not found, skipping the pkg-config consumer"
fi

echo "== install_consumer: find_package(band CONFIG) consumer"
"$cmake" -S "$here/cmake-consumer" -B "$work/cmake-consumer" -G "$generator" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    >"$work/cmake-configure.log" 2>&1 || {
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

echo "install_consumer: ok"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# deps.sh - install the Debian 12 packages band's build, tests and checks need.
#
# Installs only what is missing (checked with dpkg-query): `apt-get update` runs once, and
# only when something has to be installed. Never prompts. As non-root it uses sudo when
# available (sudo -n: no password prompt), and otherwise fails naming the packages.
# Set BAND_SKIP_DEPS=1 to skip everything (a machine prepared some other way).
set -euo pipefail

if [[ "${BAND_SKIP_DEPS:-0}" == 1 ]]; then
    echo "deps: BAND_SKIP_DEPS=1, not checking packages"
    exit 0
fi

packages=(
    build-essential    # gcc 12, make, libc headers
    cmake
    pkg-config
    python3            # scripts/check_api.py, the fuzz corpus generators
    debhelper          # the deb suite (scripts/check_deb.sh): dh, debian/rules
    dpkg-dev           # the deb suite: dpkg-buildpackage, dpkg-gensymbols, dpkg-architecture
    lintian            # the deb suite: lintian --fail-on error,warning on the packages
    fakeroot           # the deb suite: dpkg-buildpackage's root command (needed by a
                       # package without Rules-Requires-Root: no; band's says no)
    man-db             # the deb suite: man -w on the installed man pages
    libcmocka-dev      # unit tests
    clang-14
    clang              # the `clang` command
    libclang-rt-14-dev # clang's sanitizer and libFuzzer runtimes
    clang-format-14
    clang-format       # the `clang-format` command
    clang-tidy-14
    clang-tidy         # the `clang-tidy` command
    libuv1-dev         # libband-uv and the download example
    liburing-dev       # libband-fd's io_uring test
    libhiredis-dev     # libband-redis (adapters/redis): the Redis backend of band_keyrate
    redis-server       # libband-redis's test_redis: a private server on 127.0.0.1
    libcurl4-openssl-dev # the download example's and band-pipe's HTTP client
    libgdal-dev        # band-pipe (tools/pipe): decode, reproject and write rasters
    nginx-light        # the download example's HTTP server on 127.0.0.1
    gnuplot-nox        # scripts/bench_plot.sh: make bench's plots, ctest bench_plot_smoke
    doxygen            # the API reference and man pages (BAND_BUILD_DOCS, ctest api_reference)
    curl               # ctest uv_metrics_scrape: scrapes the /metrics endpoint
    prometheus         # ctest uv_metrics_scrape: `promtool check metrics` lints the text
    python3-aiohttp    # make bench-pipe: the asyncio pipeline (bench/pipe/asyncio_pipeline.py)
    python3-rasterio   # make bench-pipe: the asyncio pipeline's decode, reproject and write
    parallel           # make bench-pipe: GNU parallel running curl + gdalwarp per tile
    gdal-bin           # make bench-pipe: gdalwarp, for two of the contenders; the pipe_e2e_*
                       # tests (tests/pipe/e2e_*.sh): gdalinfo -json reads band-pipe's outputs
    jq                 # the pipe_e2e_* tests: checks band-pipe's JSON lines log
    time               # make bench-pipe: /usr/bin/time -f %M, each run's peak RSS
    etcd-server        # libband-etcd's tests: a private 3-member cluster on 127.0.0.1
    etcd-client        # etcdctl: the etcd mutex recipe in make bench, test fault checks
    libjansson-dev     # libband-etcd (adapters/etcd): the JSON gateway's request bodies
    spin               # ctest etcd_model_spin: the Promela model of the etcd budget
    faketime           # libband-etcd's clock test: a client whose clock is moved
)
pkgs=("${packages[@]}")

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: not a Debian system (no dpkg-query/apt-get); install by hand:" >&2
    echo "      ${pkgs[*]}" >&2
    exit 1
fi

missing=()
for p in "${pkgs[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    if [[ "$status" != "installed" ]]; then
        missing+=("$p")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "deps: all ${#pkgs[@]} packages present"
else
    echo "deps: installing ${missing[*]}"
    sudo=()
    if [[ "$(id -u)" != 0 ]]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            echo "deps: missing packages and not root (no password-less sudo either)." >&2
            echo "      As root run: apt-get update && apt-get install -y ${missing[*]}" >&2
            exit 1
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt_opts=(-q -o DPkg::Lock::Timeout=600)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y \
        --no-install-recommends "${missing[@]}"
fi

# The commands the checks call by their plain names.
for cmd in cc cmake pkg-config clang clang-format clang-tidy curl promtool; do
    if ! command -v "$cmd" >/dev/null 2>&1; then
        echo "deps: '$cmd' is still not on PATH after installing packages" >&2
        exit 1
    fi
done

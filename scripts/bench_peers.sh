#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_peers.sh - run the peer benchmark suite with band's harness in the same rounds.
#
#   scripts/bench_peers.sh            (or: make bench-peers)
#
# Environment:
#   PEERS_DIR    the peer suite (its run_all.sh, aggregate.py, c/ go/ rust/ ...); default
#                ../shared/peers-bench relative to the top of this checkout. It may be
#                read-only: it is copied first.
#   BUILD_DIR    the band build holding bench/band_peer_harness (default build/release)
#   PEERS_WORK   where the writable copy goes (default $BUILD_DIR/peers-bench; replaced,
#                except the Rust and Go build caches, which are kept between runs)
#   PEERS_ONLY   the peers to run, a subset of "c go rust java python" (run_all.sh's ONLY);
#                default: c, plus each of go, rust (cargo), java (javac), python (python3)
#                whose toolchain is on PATH. Rust also needs Debian's crate registry
#                (/usr/share/cargo/registry) and is left out by default when it is absent.
#   REPS, W1_ITERS, ...   passed on to run_all.sh (its workload parameters)
#
# run_all.sh prints the table; this script then checks that band's rows are in it (fails
# otherwise), copies the raw results to $BUILD_DIR/bench/peers.tsv and, when gnuplot is
# installed and $BUILD_DIR/bench/results.tsv exists (make bench), redraws the plots with
# the peers beside band.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
PEERS_DIR=${PEERS_DIR:-../shared/peers-bench}
BUILD_DIR=${BUILD_DIR:-build/release}
PEERS_WORK=${PEERS_WORK:-$BUILD_DIR/peers-bench}

if [[ ! -f "$PEERS_DIR/run_all.sh" || ! -f "$PEERS_DIR/aggregate.py" ]]; then
    echo "bench-peers: no peer suite at PEERS_DIR=$PEERS_DIR (resolved from $top)." >&2
    echo "  Set PEERS_DIR to the folder that holds run_all.sh and aggregate.py," >&2
    echo "  e.g. make bench-peers PEERS_DIR=/path/to/peers-bench" >&2
    exit 1
fi
harness=$BUILD_DIR/bench/band_peer_harness
if [[ ! -x "$harness" ]]; then
    echo "bench-peers: $harness is missing: build it first (make release, or" >&2
    echo "  cmake --build $BUILD_DIR --target band_peer_harness)" >&2
    exit 1
fi
harness=$(cd "$(dirname "$harness")" && pwd)/$(basename "$harness")

if [[ -z "${PEERS_ONLY:-}" ]]; then
    PEERS_ONLY=c
    command -v go >/dev/null 2>&1 && PEERS_ONLY+=" go"
    command -v cargo >/dev/null 2>&1 && [[ -d /usr/share/cargo/registry ]] && PEERS_ONLY+=" rust"
    command -v javac >/dev/null 2>&1 && PEERS_ONLY+=" java"
    command -v python3 >/dev/null 2>&1 && PEERS_ONLY+=" python"
fi

# A fresh writable copy; the Rust target/ and Go caches of an earlier copy are kept.
mkdir -p "$PEERS_WORK"
src=$(cd "$PEERS_DIR" && pwd)
work=$(cd "$PEERS_WORK" && pwd)
if [[ "$src" == "$work" ]]; then
    echo "bench-peers: PEERS_WORK must not be PEERS_DIR itself" >&2
    exit 1
fi
find "$work" -mindepth 1 -maxdepth 1 ! -name rust ! -name go -exec rm -rf {} +
for d in rust go; do
    [[ -d "$work/$d" ]] && find "$work/$d" -mindepth 1 -maxdepth 1 ! -name target \
        ! -name .gocache ! -name .gopath -exec rm -rf {} +
done
cp -R "$src"/. "$work"/
rm -f "$work"/results/latest.* 2>/dev/null || true

echo "bench-peers: peers '$PEERS_ONLY' and $harness, in $work"
(cd "$work" && ONLY="$PEERS_ONLY" EXTRA_HARNESS="$harness" ./run_all.sh)

latest=$work/results/latest.tsv
if [[ ! -s "$latest" ]]; then
    echo "bench-peers: run_all.sh left no $latest" >&2
    exit 1
fi
rows=$(grep -c -P '^RESULT\t[^\t]*\tband[ _]' "$latest" || true)
if [[ "$rows" == 0 ]]; then
    echo "bench-peers: band's harness rows are not in $latest (see $work/results/log-*.txt)" >&2
    exit 1
fi
mkdir -p "$BUILD_DIR/bench"
cp "$latest" "$BUILD_DIR/bench/peers.tsv"
echo "bench-peers: $rows band rows; raw results in $BUILD_DIR/bench/peers.tsv," \
    "tables in $work/results/latest.md"
if command -v gnuplot >/dev/null 2>&1 && [[ -s "$BUILD_DIR/bench/results.tsv" ]]; then
    bash scripts/bench_plot.sh "$BUILD_DIR/bench/results.tsv" "$BUILD_DIR/bench/plots" \
        "$BUILD_DIR/bench/peers.tsv"
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo_plot.sh - draw what `band_demo --data DIR` measured, with gnuplot.
#
#   scripts/demo_plot.sh DATADIR [OUTDIR]
#
# Reads the TSV files band_demo wrote into DATADIR and writes into OUTDIR (default
# DATADIR, created if needed), each plot as PNG and as SVG:
#   in-flight.png, .svg   parts 1 and 2 over time: transfers in flight and payload bytes
#                         allocated, with band and without, each limit drawn as a line
#                         (transfers-band.tsv, transfers-handoff.tsv, jobs-budget.tsv,
#                         jobs-count.tsv)
#   overload.png, .svg    part 5: goodput and late (wasted) work against offered load for
#                         each queue discipline (overload.tsv)
#   tenants.png, .svg     part 4: each batch tenant's share of the grants beside the share
#                         its weight entitles it to (tenants.tsv)
# The gnuplot scripts are scripts/demo_plot/*.gp. PNG through gnuplot's pngcairo terminal,
# its png terminal when cairo is missing. Exits non-zero when gnuplot is missing or fails,
# an input is missing, or an output file is missing or empty; prints the files written.
set -euo pipefail

usage() {
    echo "usage: $0 DATADIR [OUTDIR]" >&2
    exit 2
}
(($# == 1 || $# == 2)) || usage
data=$1
outdir=${2:-$1}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "demo_plot: gnuplot is not installed (Debian: apt-get install gnuplot-nox; make deps)" >&2
    exit 1
fi
for f in transfers-band transfers-handoff jobs-budget jobs-count tenants overload; do
    if [[ ! -s "$data/$f.tsv" ]]; then
        echo "demo_plot: $data/$f.tsv is missing or empty (run band_demo --data $data)" >&2
        exit 1
    fi
done
mkdir -p "$outdir"

if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then
    pngterm='pngcairo noenhanced font "sans,10"'
elif gnuplot -e 'set terminal png' >/dev/null 2>&1; then
    pngterm='png noenhanced'
else
    echo "demo_plot: this gnuplot has neither the pngcairo nor the png terminal" >&2
    exit 1
fi

# gnuplot strings are in single quotes: a path with one in it cannot be passed.
for p in "$data" "$outdir"; do
    if [[ $p == *"'"* ]]; then
        echo "demo_plot: a path with a single quote is not supported: $p" >&2
        exit 1
    fi
done

for plot in in-flight overload tenants; do
    gnuplot -e "data='$data'; out='$outdir/$plot'; pngterm='$pngterm'" "$here/demo_plot/$plot.gp"
    for ext in png svg; do
        if [[ ! -s "$outdir/$plot.$ext" ]]; then
            echo "demo_plot: gnuplot did not write $outdir/$plot.$ext" >&2
            exit 1
        fi
        echo "demo_plot: $outdir/$plot.$ext"
    done
done

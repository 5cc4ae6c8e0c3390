#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_demo_plots.sh - ctest demo_plots: run the demonstration in its quick mode with a
# data directory, then draw its plots, and check what came out.
#
#   check_demo_plots.sh BAND_DEMO DEMO_PLOT_SH OUTDIR
#
# Fails when band_demo exits non-zero, does not print its three verdict lines (parts 1-3,
# tenants, overload), or writes a TSV file without its rows; when scripts/demo_plot.sh
# (gnuplot) fails; or when a plot is missing, small, not a PNG, or an SVG that does not
# parse as XML with an <svg> root holding drawn paths.
set -euo pipefail
(($# == 3)) || { echo "usage: $0 BAND_DEMO DEMO_PLOT_SH OUTDIR" >&2; exit 2; }
demo=$1
plot=$2
out=$3

fail() {
    echo "demo_plots: $*" >&2
    exit 1
}

rm -rf "$out"
mkdir -p "$out"
"$demo" --quick --data "$out/data" >"$out/stdout.txt" || {
    cat "$out/stdout.txt"
    fail "band_demo --quick exited with $?"
}
cat "$out/stdout.txt"

verdicts=$(grep -c '^verdict: ' "$out/stdout.txt" || true)
[[ $verdicts == 3 ]] || fail "band_demo printed $verdicts verdict lines, want 3"

# Rows each TSV must have (the header not counted): the timelines one per change, the
# tenants one per batch tenant, the overload sweep 5 disciplines x 5 loads + 2 slowed.
rows() { grep -v '^#' "$1" | tail -n +2 | wc -l; }
for f in transfers-band transfers-handoff jobs-budget jobs-count; do
    n=$(rows "$out/data/$f.tsv")
    ((n > 100)) || fail "$f.tsv has $n rows, want more than 100"
done
n=$(rows "$out/data/tenants.tsv")
((n == 4)) || fail "tenants.tsv has $n rows, want 4"
n=$(rows "$out/data/overload.tsv")
((n == 27)) || fail "overload.tsv has $n rows, want 27"

command -v gnuplot >/dev/null 2>&1 ||
    fail "gnuplot is not installed (Debian: gnuplot-nox; scripts/deps.sh installs it)"
bash "$plot" "$out/data" "$out/plots" || fail "scripts/demo_plot.sh exited with $?"

for p in in-flight overload tenants; do
    png=$out/plots/$p.png
    svg=$out/plots/$p.svg
    [[ -f $png && -f $svg ]] || fail "$p: no PNG or no SVG"
    size=$(stat -c %s "$png")
    ((size > 10000)) || fail "$png is $size bytes, want more than 10000"
    [[ $(head -c 8 "$png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
        fail "$png is not a PNG"
    python3 - "$svg" <<'PY' || fail "$svg is not a drawn SVG"
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
if not root.tag.endswith("svg"):
    sys.exit(f"root element is {root.tag}")
drawn = [e for e in root.iter() if e.tag.rsplit("}", 1)[-1] in ("path", "polyline", "rect")]
if len(drawn) < 20:
    sys.exit(f"only {len(drawn)} path, polyline or rect elements")
PY
done
echo "demo_plots: verdicts, data and plots in $out"

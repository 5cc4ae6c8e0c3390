#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_plot.sh - draw band_bench's figures (and the peer suite's) with gnuplot.
#
#   scripts/bench_plot.sh RESULTS.tsv OUTDIR [PEERS.tsv]
#
# RESULTS.tsv is what `band_bench --tsv FILE` writes (format: bench/bench_util.h); PEERS.tsv
# is a raw result file of the peer benchmark suite (its results/latest.tsv: RESULT lines).
# Writes into OUTDIR (created if needed):
#   scale-<workload>.png   section (s): M ops/s against threads (log2 axis), band's row
#                          beside its baselines, min-max over the rounds as error bars
#   section-<x>.png        every other section of RESULTS.tsv: the median of each row as a
#                          bar (band's rows in red), labelled with band time / row time
#   ratios.png             every baseline row of those sections: band's speed / the
#                          baseline's (1 / band_x; right of 1 = band faster), log axis
#   peers-<workload>.png   with PEERS.tsv: median of each peer per workload (band_peer_harness
#                          rows in red), log axis
# and OUTDIR/data/ with the data files and the gnuplot script. PNG through gnuplot's
# pngcairo terminal (its png terminal when cairo is missing; SVG when neither exists).
# Exits non-zero when gnuplot is missing, an input is unreadable, or a plot file was not
# produced or is empty; prints the files written.
set -euo pipefail

usage() {
    echo "usage: $0 RESULTS.tsv OUTDIR [PEERS.tsv]" >&2
    exit 2
}
(($# == 2 || $# == 3)) || usage
results=$1
outdir=$2
peers=${3:-}

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "bench_plot: gnuplot is not installed (Debian: apt-get install gnuplot-nox; make deps)" >&2
    exit 1
fi
if [[ ! -r "$results" ]] || ! head -1 "$results" | grep -q '^kind	section	workload'; then
    echo "bench_plot: $results is not a band_bench --tsv file" >&2
    exit 1
fi
if [[ -n "$peers" && ! -r "$peers" ]]; then
    echo "bench_plot: cannot read the peer results $peers" >&2
    exit 1
fi

mkdir -p "$outdir/data"
data=$outdir/data
rm -f "$data"/*.dat "$data"/plot.gp

if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then
    term='pngcairo noenhanced font "sans,9"'
    ext=png
elif gnuplot -e 'set terminal png' >/dev/null 2>&1; then
    term='png noenhanced'
    ext=png
else
    term='svg noenhanced'
    ext=svg
fi

slug() { # a file-name-safe form of $1
    printf '%s' "$1" | LC_ALL=C tr '[:upper:]' '[:lower:]' | LC_ALL=C tr -c 'a-z0-9' '-' | sed 's/--*/-/g; s/^-//; s/-$//'
}

# gnuplot string literal: double quotes escaped
q() {
    printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"
}

gp=$data/plot.gp
expected=()
{
    echo "set datafile separator tab"
    echo "set grid"
    echo "set key outside right top"
} >"$gp"

BAND_RGB=0xd62728 BASE_RGB=0x1f77b4 INFO_RGB=0x7f7f7f

# ------------------------------------------------------------------ section (s): scaling
mapfile -t scale_wl < <(awk -F'\t' '$1 == "row" && $2 == "s" && !seen[$3]++ { print $3 }' "$results")
for wl in "${scale_wl[@]}"; do
    s=$(slug "$wl")
    mapfile -t vars < <(awk -F'\t' -v w="$wl" '$1 == "row" && $2 == "s" && $3 == w && !seen[$4]++ { print $4 }' "$results")
    plots=()
    for i in "${!vars[@]}"; do
        v=${vars[$i]}
        f=$data/scale-$s-$i.dat
        awk -F'\t' -v w="$wl" -v v="$v" 'BEGIN { OFS = "\t" }
            $1 == "row" && $2 == "s" && $3 == w && $4 == v && $8 != "-" { print $6, $8, $9, $10 }' \
            "$results" >"$f"
        [[ -s "$f" ]] || continue
        role=$(awk -F'\t' -v w="$wl" -v v="$v" '$1 == "row" && $2 == "s" && $3 == w && $4 == v { print $5; exit }' "$results")
        if [[ "$role" == band ]]; then style="lw 3 lc rgb '#d62728' pt 7"; else style="lw 1.5 pt $((i + 4))"; fi
        plots+=("'$f' using 1:2:3:4 with yerrorlines $style title $(q "$v")")
    done
    ((${#plots[@]} > 0)) || continue
    out=$outdir/scale-$s.$ext
    expected+=("$out")
    {
        echo "set terminal $term size 1000,520"
        echo "set output $(q "$out")"
        echo "set title $(q "(s) $wl: throughput against threads (median of the rounds, bars: min-max)")"
        echo "set logscale x 2"
        echo "set xtics (1, 2, 4, 8, 16, 32)"
        echo "set xrange [0.8:40]"
        echo "set logscale y"
        echo "set xlabel 'threads'"
        echo "set ylabel 'M ops/s (higher is better)'"
        echo "set key outside top center horizontal"
        printf 'plot %s\n' "$(
            IFS=,
            echo "${plots[*]}"
        )"
        echo "unset logscale"
        echo "unset xrange"
        echo "set xtics autofreq"
        echo "set key outside right top"
        echo "set output"
    } >>"$gp"
done

# Horizontal bars from a data file of columns label, value, rgb, text (one bar a line, the
# first on top). $5: 0 linear axis from 0; 1 log axis, bars from 1 (ratios); 2 log axis,
# bars from a power of ten below the smallest value (absolute figures).
bars() { # file out title xlabel axis
    local f=$1 out=$2 title=$3 xlabel=$4 axis=$5 n h lo hi
    n=$(wc -l <"$f")
    h=$((140 + 26 * n))
    read -r lo hi < <(awk -F'\t' 'NR == 1 { lo = hi = $2 } { if ($2 < lo) lo = $2; if ($2 > hi) hi = $2 }
        END { print lo, hi }' "$f")
    expected+=("$out")
    {
        echo "set terminal $term size 1000,$h"
        echo "set output $(q "$out")"
        echo "set title $(q "$title")"
        echo "set xlabel $(q "$xlabel")"
        echo "unset ylabel"
        echo "set yrange [$n - 0.4:-0.6]"
        echo "set ytics nomirror"
        echo "set grid x"
        echo "unset key"
        echo "set lmargin 58"
        echo "set rmargin 4"
        echo "set style fill solid 0.8 border -1"
        case "$axis" in
        1)
            echo "set logscale x"
            echo "set xrange [$lo < 1 ? $lo / 1.5 : 0.8:($hi > 1 ? $hi : 1) * 3]"
            echo "plot '$f' using (\$2 >= 1 ? 1 : \$2):0:(\$2 >= 1 ? 1 : \$2):(\$2 >= 1 ? \$2 : 1):(\$0 - 0.38):(\$0 + 0.38):3:ytic(1) with boxxyerror lc rgb variable, '' using (\$2 >= 1 ? \$2 : 1):0:4 with labels left offset 0.6,0 font ',8'"
            ;;
        2)
            echo "set logscale x"
            echo "floor = 10 ** floor(log10($lo))"
            echo "set xrange [floor:$hi * 4]"
            echo "plot '$f' using (\$2):0:(floor):2:(\$0 - 0.38):(\$0 + 0.38):3:ytic(1) with boxxyerror lc rgb variable, '' using 2:0:4 with labels left offset 0.6,0 font ',8'"
            ;;
        *)
            echo "set xrange [0:$hi * 1.45]"
            echo "plot '$f' using (\$2 / 2):0:(0):2:(\$0 - 0.38):(\$0 + 0.38):3:ytic(1) with boxxyerror lc rgb variable, '' using 2:0:4 with labels left offset 0.6,0 font ',8'"
            ;;
        esac
        echo "unset logscale x"
        echo "set yrange [*:*]"
        echo "set xrange [*:*]"
        echo "set ytics mirror"
        echo "set grid"
        echo "set lmargin -1"
        echo "set rmargin -1"
        echo "set key outside right top"
        echo "set output"
    } >>"$gp"
}

# ------------------------------------------------------------------ other sections: bars
mapfile -t sections < <(awk -F'\t' '$1 == "row" && $2 != "s" && !seen[$2]++ { print $2 }' "$results")
for sec in "${sections[@]}"; do
    f=$data/section-$sec.dat
    # the unit of the section's first band row (or first row); rows in other units are left out
    unit=$(awk -F'\t' -v x="$sec" '$1 == "row" && $2 == x && $8 != "-" { if ($5 == "band") { print $7; exit } if (u == "") u = $7 } END { if (u != "") print u }' "$results" | head -1)
    wls=$(awk -F'\t' -v x="$sec" '$1 == "row" && $2 == x && !seen[$3]++ { n++ } END { print n + 0 }' "$results")
    awk -F'\t' -v x="$sec" -v u="$unit" -v br=$((BAND_RGB)) -v bl=$((BASE_RGB)) -v inf=$((INFO_RGB)) -v multi="$wls" '
        BEGIN { OFS = "\t" }
        $1 == "row" && $2 == x && $7 == u && $8 != "-" {
            label = (multi > 1 && index($4, $3) == 0) ? $3 ": " $4 : $4
            rgb = $5 == "band" ? br : ($5 == "info" ? inf : bl)
            text = sprintf("%.3g", $8)
            if ($11 != "-" && $5 != "band")
                text = text sprintf("  (band time / this: %.2fx)", $11)
            print label, $8, rgb, text
        }' "$results" >"$f"
    [[ -s "$f" ]] || continue
    title=$(awk -F'\t' -v x="$sec" '$1 == "row" && $2 == x { print $3; exit }' "$results")
    ((wls > 1)) && title="$title, ..."
    case "$unit" in
    ns* | *ns) better="lower is better" ;;
    *) better="higher is better" ;;
    esac
    bars "$f" "$outdir/section-$sec.$ext" "($sec) $title: median of the rounds (band in red)" \
        "$unit ($better)" 0
done

# ------------------------------------------------------------------ ratios of every section
f=$data/ratios.dat
awk -F'\t' 'BEGIN { OFS = "\t" }
    $1 == "row" && $2 != "s" && $5 == "baseline" && $11 != "-" && $11 + 0 > 0 {
        r = 1 / $11
        print "(" $2 ") " $4, r, (r >= 1 ? 3066944 : 16744206), sprintf("%.2fx", r)
    }' "$results" >"$f"
if [[ -s "$f" ]]; then
    bars "$f" "$outdir/ratios.$ext" \
        "band's speed / each baseline's, same rounds (median of per-round ratios; > 1: band faster)" \
        "band speed / baseline speed (log scale)" 1
fi

# ------------------------------------------------------------------ peers
if [[ -n "$peers" ]]; then
    # medians per (workload, peer, metric); W3 only its hand-off cost; no calibration rows
    awk -F'\t' 'BEGIN { OFS = "\t" }
        $1 == "RESULT" && $5 != "" && $3 !~ /^\(calibration\)/ {
            if ($2 ~ /^W3/ && $4 != "ns/handoff") next
            print $2, $3, $4, $5 + 0
        }' "$peers" | LC_ALL=C sort -t$'\t' -k1,1 -k2,2 -k3,3 -k4,4g |
        awk -F'\t' 'BEGIN { OFS = "\t" }
            function flush() { if (n > 0) print k1, k2, k3, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }
            { key = $1 FS $2 FS $3
              if (key != last) { flush(); n = 0; last = key; k1 = $1; k2 = $2; k3 = $3 }
              v[++n] = $4 }
            END { flush() }' >"$data/peers-medians.tsv"
    mapfile -t pw < <(cut -f1,3 "$data/peers-medians.tsv" | awk '!seen[$0]++')
    for wm in "${pw[@]}"; do
        w=${wm%%$'\t'*}
        m=${wm#*$'\t'}
        s=$(slug "$w-$m")
        f=$data/peers-$s.dat
        awk -F'\t' -v w="$w" -v m="$m" -v br=$((BAND_RGB)) -v bl=$((BASE_RGB)) 'BEGIN { OFS = "\t" }
            $1 == w && $3 == m {
                v = (m == "ops/s" || m == "msgs/s") ? $4 / 1e6 : $4
                lang = $2; sub(/ .*/, "", lang)
                rgb = ($2 ~ /^band/) ? br : (lang == "C" ? bl : (lang == "Go" ? 1548236 : (lang == "Rust" ? 16744206 : (lang == "Java" ? 9197131 : 9725885))))
                print $2, v, rgb, sprintf("%.3g", v)
            }' "$data/peers-medians.tsv" >"$f"
        [[ -s "$f" ]] || continue
        case "$m" in
        ops/s) xl="M ops/s (higher is better, log scale)" ;;
        msgs/s) xl="M msgs/s (higher is better, log scale)" ;;
        *) xl="$m (lower is better, log scale)" ;;
        esac
        bars "$f" "$outdir/peers-$s.$ext" "peer suite $w: median over the rounds (band in red)" "$xl" 2
    done
fi

if ((${#expected[@]} == 0)); then
    echo "bench_plot: nothing to plot in $results" >&2
    exit 1
fi
rm -f "${expected[@]}"
if ! gnuplot "$gp" >"$data/gnuplot.log" 2>&1; then
    cat "$data/gnuplot.log" >&2
    echo "bench_plot: gnuplot failed on $gp" >&2
    exit 1
fi
bad=0
for f in "${expected[@]}"; do
    if [[ ! -s "$f" ]]; then
        echo "bench_plot: $f was not produced (see $data/gnuplot.log)" >&2
        bad=1
    fi
done
((bad == 0)) || exit 1
echo "bench_plot: ${#expected[@]} plots in $outdir:"
printf '  %s\n' "${expected[@]}"

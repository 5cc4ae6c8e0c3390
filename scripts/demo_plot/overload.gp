# SPDX-License-Identifier: MIT
# overload.gp - band_demo part 5: goodput and wasted work against offered load, one line per
# queue discipline. Run by scripts/demo_plot.sh with
# -e "data='DIR'; out='PATH WITHOUT EXTENSION'; pngterm='TERMINAL'".
set datafile separator "\t"
set datafile commentschars "#"
f = data.'/overload.tsv'
# columns: 1 mode, 2 load, 3 service_ms, 4 offered, 5 in_time, 6 late, 9 goodput
is(m) = strcol(1) eq m
do for [k = 1:2] {
    if (k == 1) {
        set terminal @pngterm size 1100,560
        set output out.'.png'
    } else {
        set terminal svg size 1100,560 dynamic noenhanced font "sans,11"
        set output out.'.svg'
    }
    set multiplot layout 1,2 title "band_demo: one server of 2000 requests/s, deadline 40 ms, each load from idle"
    set grid
    set xlabel "offered load, x capacity"
    set xrange [0:3.2]
    set bmargin 8
    set key at screen 0.5, screen 0.02 center bottom horizontal maxrows 2 box opaque width 1
    set ylabel "served in time per second, % of capacity"
    set yrange [0:115]
    set title "goodput"
    plot (x < 1 ? 100 * x : 100) with lines dt 2 lw 1.5 lc rgb "gray40" title "ideal", \
         f using (is('fifo-32') ? $2 : 1/0):(100 * $9) with linespoints lw 2 pt 7 lc rgb "#ff7f0e" title "FIFO, queue of 32", \
         f using (is('fifo-1024') ? $2 : 1/0):(100 * $9) with linespoints lw 2 pt 5 lc rgb "#d62728" title "FIFO, queue of 1024", \
         f using (is('deadline-32') ? $2 : 1/0):(100 * $9) with linespoints lw 2 pt 9 lc rgb "#2ca02c" title "deadline-aware, 32", \
         f using (is('deadline-lifo-32') ? $2 : 1/0):(100 * $9) with linespoints lw 2 pt 11 lc rgb "#9467bd" title "deadline-aware + LIFO, 32", \
         f using (is('lifo-1024') ? $2 : 1/0):(100 * $9) with linespoints lw 2 pt 13 lc rgb "#1f77b4" title "adaptive LIFO, 1024"
    unset key
    set ylabel "served after the deadline, % of offered"
    set yrange [0:105]
    set title "wasted work: served too late"
    plot f using (is('fifo-32') ? $2 : 1/0):(100 * $6 / $4) with linespoints lw 2 pt 7 lc rgb "#ff7f0e" title "FIFO, queue of 32", \
         f using (is('fifo-1024') ? $2 : 1/0):(100 * $6 / $4) with linespoints lw 2 pt 5 lc rgb "#d62728" title "FIFO, queue of 1024", \
         f using (is('deadline-32') ? $2 : 1/0):(100 * $6 / $4) with linespoints lw 2 pt 9 lc rgb "#2ca02c" title "deadline-aware, 32", \
         f using (is('deadline-lifo-32') ? $2 : 1/0):(100 * $6 / $4) with linespoints lw 2 pt 11 lc rgb "#9467bd" title "deadline-aware + LIFO, 32", \
         f using (is('lifo-1024') ? $2 : 1/0):(100 * $6 / $4) with linespoints lw 2 pt 13 lc rgb "#1f77b4" title "adaptive LIFO, 1024"
    unset multiplot
    unset output
}

# SPDX-License-Identifier: MIT
# in-flight.gp - band_demo parts 1 and 2 over time: transfers in flight and payload bytes
# allocated, with band and without, each limit drawn as a wide grey line. Run by scripts/demo_plot.sh
# with -e "data='DIR'; out='PATH WITHOUT EXTENSION'; pngterm='TERMINAL'".
set datafile separator "\t"
set datafile commentschars "#"
do for [k = 1:2] {
    if (k == 1) {
        set terminal @pngterm size 1000,760
        set output out.'.png'
    } else {
        set terminal svg size 1000,760 dynamic noenhanced font "sans,11"
        set output out.'.svg'
    }
    set multiplot layout 2,1 title "band_demo: in-flight work with band and without (every change measured)"
    set grid ytics
    set key top right box opaque
    set xlabel "ms since the run started"
    set ylabel "transfers in flight (log scale)"
    set logscale y
    set yrange [0.8:3000]
    set title "part 1: 40 producers hand transfers to 4 consumers through 8 permits"
    plot 8 with lines lw 6 lc rgb "#c8c8c8" title "limit: 8", \
         data.'/transfers-handoff.tsv' every ::1 using 1:($2 > 0 ? $2 : 1/0) with steps lw 1.5 lc rgb "#d62728" title "without: permit released at hand-off", \
         data.'/transfers-band.tsv' every ::1 using 1:($2 > 0 ? $2 : 1/0) with steps lw 1.5 lc rgb "#1f77b4" title "with band: the permit moves with the transfer"
    unset logscale y
    set yrange [0:*]
    set ylabel "payload allocated, MiB"
    set title "part 2: 600 jobs of 1 KiB to 8 MiB on 16 threads"
    plot 8 with lines lw 6 lc rgb "#c8c8c8" title "limit: 8 MiB", \
         data.'/jobs-count.tsv' every ::1 using 1:2 with steps lw 1.5 lc rgb "#d62728" title "without: a count semaphore of 8 slots x 1 MiB", \
         data.'/jobs-budget.tsv' every ::1 using 1:2 with steps lw 1.5 lc rgb "#1f77b4" title "with band: a band_budget of 8 MiB"
    unset multiplot
    unset output
}

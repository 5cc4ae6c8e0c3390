# SPDX-License-Identifier: MIT
# tenants.gp - band_demo part 4: each batch tenant's share of the grants beside the share
# its weight entitles it to. Run by scripts/demo_plot.sh with
# -e "data='DIR'; out='PATH WITHOUT EXTENSION'; pngterm='TERMINAL'".
set datafile separator "\t"
set datafile commentschars "#"
f = data.'/tenants.tsv'
# columns: 1 tenant, 2 weight, 3 threads, 4 grants, 5 share, 6 entitled
label(t, w, n) = sprintf("%s\nweight %d, %d threads", t, w, n)
do for [k = 1:2] {
    if (k == 1) {
        set terminal @pngterm size 800,480
        set output out.'.png'
    } else {
        set terminal svg size 800,480 dynamic noenhanced font "sans,11"
        set output out.'.svg'
    }
    set title "band_demo: tenants share 6 batch slots through one band_fair"
    set style data histograms
    set style histogram clustered gap 1
    set style fill solid 0.85 border -1
    set boxwidth 0.9
    set grid ytics
    set key top right box opaque
    set ylabel "share of the batch grants, %"
    set yrange [0:60]
    set xrange [-0.6:3.6]
    set bmargin 4
    set xtics nomirror
    plot f every ::1 using 5:xtic(label(strcol(1), column(2), column(3))) lc rgb "#1f77b4" title "measured share", \
         '' every ::1 using 6 lc rgb "#bbbbbb" title "entitled by weight", \
         '' every ::1 using ($0 - 1.0/6):($5 + 2):(sprintf("%.1f%%", $5)) with labels notitle, \
         '' every ::1 using ($0 + 1.0/6):($6 + 2):(sprintf("%.1f%%", $6)) with labels notitle
    unset output
}

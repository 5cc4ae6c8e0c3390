/* SPDX-License-Identifier: MIT */
/*
 * plot.h - the run's time series as a picture (--plot FILE.svg): two panels, tiles in
 * flight per stage against each stage's limit, and memory reserved (and really allocated)
 * against the memory budget. Drawn by gnuplot (Debian: gnuplot-nox; its svg and pngcairo
 * terminals). Loop thread (it reads struct pipe_stats); it blocks while gnuplot runs.
 */
#ifndef PIPE_PLOT_H
#define PIPE_PLOT_H

#include <stddef.h>

#include "stats.h"

/* @path ends in ".svg" or ".png"; writes <stem>.svg, <stem>.png and the data <stem>.tsv
 * (one row per sample: t in seconds, in flight and limit per stage, reserved, allocated,
 * memory budget and RSS in MiB, open descriptors; a '#' header line). Runs gnuplot from
 * PATH on a generated script (<stem>.gp while it runs, removed after). Returns 0, or -1 with a
 * message in @err: a path with another ending, a file that cannot be written, gnuplot missing
 * ("gnuplot not found on PATH (Debian: gnuplot-nox)") or gnuplot failing. With no samples
 * the plots have empty panels. */
int plot_write(const char *path, const struct pipe_stats *s, char *err, size_t errlen);

#endif /* PIPE_PLOT_H */

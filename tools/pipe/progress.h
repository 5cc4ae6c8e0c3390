/* SPDX-License-Identifier: MIT */
/*
 * progress.h - the one-line progress display on a terminal, redrawn in place.
 *
 * Loop thread only (it reads struct pipe_stats). The caller decides whether a terminal is
 * attached (isatty) and calls these only then: they draw unconditionally.
 */
#ifndef PIPE_PROGRESS_H
#define PIPE_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stats.h"

/* Redraw the progress line on @tty: carriage return, the line, clear to end of line, then
 * fflush. The line fits in min(100, terminal width from TIOCGWINSZ) - 1 columns (100 when
 * the width is unknown): its parts are, in this order, and the last ones are dropped first,
 *   "412/1000 tiles, 3 failed  fetch 8/8 decode 2/2 write 1/3  mem 412M/1.0G  47 req/s  0:12"
 * finished/total (done, skipped, failed, abandoned), tiles in each stage against the limit
 * of its budget (fetch: connections, decode: cpu, write: disk), memory reserved against
 * the memory budget (with --memory-by-count: slots in use, and the bytes really held), the
 * request rate of the last sample (requests started over its last second) and the time
 * since @s->t0 at @now. Write errors are ignored (a display only). */
void progress_draw(FILE *tty, const struct pipe_stats *s, band_time now);

/* Erase the progress line (carriage return, clear to end of line) and fflush, so the
 * next output starts on a clean line. */
void progress_clear(FILE *tty);

/* Format @bytes in binary human units into @buf: "512B", "4.0K", "412M", "1.5G" (one
 * decimal below 10 of a unit, none above). Returns @buf. MT-safe. */
char *progress_human_bytes(char *buf, size_t len, uint64_t bytes);

#endif /* PIPE_PROGRESS_H */

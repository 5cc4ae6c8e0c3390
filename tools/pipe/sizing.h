/* SPDX-License-Identifier: MIT */
/*
 * sizing.h - every budget's size, from the command line or from the machine, and where
 * each number came from.
 *
 * The numbers follow the resource: cpu slots from the cores this process may use, memory
 * from the cgroup limit or physical memory, descriptors from RLIMIT_NOFILE, writes from
 * whether the output device spins. Only the fetch bound depends on the remote service:
 * it is a fixed count unless --connections auto measures it online.
 */
#ifndef PIPE_SIZING_H
#define PIPE_SIZING_H

#include <stdint.h>
#include <stdio.h>

#include "opts.h"
#include "tile.h"

#define SIZING_ORIGIN_MAX   200
#define SIZING_FDS_PER_TILE 2 /* a socket or source file while fetching, a file while writing */

struct pipe_sizes {
    uint64_t limit[BUDGET_COUNT]; /* requests: per second, 0 = unlimited until throttled;
                                     connections with auto: the starting limit */
    char origin[BUDGET_COUNT][SIZING_ORIGIN_MAX];
    int connections_auto;
    uint64_t connections_max;     /* auto: the highest limit it may reach */
    uint64_t cores;               /* cores this process may use */
    uint64_t nofile;              /* RLIMIT_NOFILE (soft) */
    uint64_t fd_reserved;         /* descriptors kept outside the tiles' units */
    uint64_t fd_budget;           /* what may be open at once: fd_reserved + units x per tile */
    uint64_t gdal_cache;          /* GDAL's block cache, reserved from memory at start */
    uint64_t warp_work;           /* warp working memory, reserved by each decode job */
    uint64_t body_share;          /* the most bytes fetched bodies may hold until decoded: a third
                                     of memory after GDAL's cache */
    uint64_t decode_share;        /* the rest: one tile's decode (decoded + reprojected + warp
                                     buffers) may need at most this */
    char note[SIZING_ORIGIN_MAX]; /* a remark printed with the table ("" for none) */
};

/* Size every budget for a run writing into @outdir (NULL: not known yet; the disk budget
 * then assumes an SSD). @http: the input has http(s) URLs. Returns 0, or -1 with the
 * reason in @err (a budget that cannot be sized, e.g. RLIMIT_NOFILE too low). */
int sizing_compute(const struct pipe_opts *o, int http, const char *outdir, struct pipe_sizes *z,
                   char *err, size_t errlen);

/* The table printed at start: one line per budget with its size and origin. */
void sizing_print(FILE *out, const struct pipe_sizes *z, int memory_by_count);

/* "1.5 MiB", "832 B" into @buf; returns @buf. */
char *sizing_human(uint64_t bytes, char *buf, size_t len);

#endif /* PIPE_SIZING_H */

/* SPDX-License-Identifier: MIT */
/*
 * pipeline.h - the run: tiles through fetch, decode+reproject and write, every stage
 * bounded by the budget of the resource it exhausts.
 *
 * One libuv loop thread owns every tile and every wait. A tile takes, in this order and
 * never holding one while waiting for an earlier one:
 *
 *   descriptors (1 unit)  from its start to its end, so overlapping stages cannot push open
 *                         descriptors past the process limit;
 *   connections (1)       for its HTTP transfer, then requests (a rate booking) before it;
 *   memory (body bytes)   reserved from Content-Length before the body is read;
 *   -> channel "fetched"  bounded by count and bytes: a fast fetcher waits here;
 *   cpu (1) + memory      (decoded + reprojected + warp buffers, from the raster's header)
 *                         through one admission, never one then the other; reconciled with
 *                         what was really used, the body's bytes freed once decoded;
 *   -> channel "reprojected"  bounded by count and bytes;
 *   disk (1)              for the write to a temporary name and the rename.
 *
 * Every wait is asynchronous on the loop (band_uv); decode+reproject runs on cpu worker
 * threads and writes on disk worker threads (band_exec), which report back to the loop.
 */
#ifndef PIPE_PIPELINE_H
#define PIPE_PIPELINE_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "opts.h"
#include "sizing.h"
#include "stats.h"
#include "tile.h"

struct pipe_run_config {
    const struct pipe_opts *opts;
    const struct pipe_sizes *sizes;
    struct tile *tiles; /* the input, in order; results are written into them */
    size_t ntiles;
    const char *outdir;
    FILE *progress; /* the terminal for the live line, or NULL */
};

struct pipe_run_result {
    int interrupted;       /* 0, 1 (stopped admitting), 2 (abandoned) */
    int verify_failed;     /* --verify saw a budget exceeded */
    char verify_text[256]; /* what it saw */
    double loop_cpu_share; /* CPU time of the loop thread / wall time */
    uint64_t cpu_borrowed; /* idle cpu slots large warps borrowed, one warp thread each */
    int log_failed;        /* writing --log failed */
};

/* Run the pipeline over every tile of @cfg; fills @st (initialised here) and @res.
 * Returns 0 when the run took place (tile failures included), -1 on a set-up failure
 * (printed to stderr). SIGINT and SIGTERM are handled during the run. */
int pipe_run(const struct pipe_run_config *cfg, struct pipe_stats *st, struct pipe_run_result *res);

#endif /* PIPE_PIPELINE_H */

/* SPDX-License-Identifier: MIT */
/*
 * opts.h - band-pipe's command line.
 *
 * A value the user did not give stays "unset" (OPT_UNSET), so sizing.c can say where each
 * budget's number came from: the command line, or the machine.
 */
#ifndef PIPE_OPTS_H
#define PIPE_OPTS_H

#include <stdint.h>
#include <stdio.h>

#define OPT_UNSET (-1)

struct pipe_opts {
    const char *input;  /* URL list, "-" (stdin) or a directory; NULL: the demonstration */
    const char *outdir; /* output directory; NULL: the demonstration's own */
    const char *crs;    /* target CRS, "EPSG:3857" */
    int compress;       /* the output's enum raster_codec; RASTER_ZSTD */
    int resampling;     /* the warp's enum raster_resampling; RASTER_BILINEAR */

    int64_t connections; /* OPT_UNSET or >= 1 */
    int connections_auto;
    int64_t requests; /* per second; OPT_UNSET: unlimited until the server throttles */
    int64_t cpu, disk, descriptors; /* OPT_UNSET or >= 1 */
    int64_t memory;                 /* bytes; OPT_UNSET or >= 1 */
    int memory_by_count; /* a count semaphore sized for the typical tile instead of bytes */

    const char *log;  /* --log FILE: JSON lines */
    const char *plot; /* --plot FILE.svg|.png: both are written */
    int verify, resume, quiet, keep;
    int progress; /* OPT_UNSET: when stderr is a terminal; 0 or 1 */
    unsigned retries;

    const char *generate; /* --generate DIR */
    const char *serve;    /* --serve DIR */
    unsigned tiles;       /* --tiles (the generated set) */
    uint64_t seed;
    unsigned server_rate, server_burst; /* the private nginx's request limit */
    int server_policy;                  /* where it states RateLimit-Policy: enum nginx_policy */
};

/* Parse argv into @o (defaults first). Returns 0, 1 when --help or --version printed what
 * was asked (exit 0), or -1 with the reason in @err (exit 2). Not thread-safe (getopt_long
 * keeps its state in globals): main calls it before any other thread starts. */
int opts_parse(int argc, char **argv, struct pipe_opts *o, char *err, size_t errlen);

void opts_usage(FILE *out);

/* "123", "64K", "1.5M", "2G" (powers of 1024) into bytes. 0 or -1 (not a size, or 0). */
int opts_parse_size(const char *s, uint64_t *out);

#endif /* PIPE_OPTS_H */

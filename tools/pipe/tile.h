/* SPDX-License-Identifier: MIT */
/*
 * tile.h - one unit of work: a raster fetched, decoded, reprojected and written.
 *
 * The pipeline owns every tile (an array sized from the input list) and moves each through
 * its stages on the loop thread; a worker thread touches a tile only while it runs that
 * tile's decode or write job. The reporting code reads tiles on the loop thread.
 */
#ifndef PIPE_TILE_H
#define PIPE_TILE_H

#include <stddef.h>
#include <stdint.h>

#include <band/band.h>

/* The stages a tile goes through, in order. */
enum pipe_stage {
    STAGE_FETCH = 0,  /* connection + request rate: the body into memory */
    STAGE_DECODE = 1, /* cpu slot + decoded bytes: decode and reproject */
    STAGE_WRITE = 2,  /* disk slot: compressed GeoTIFF to a temporary name, renamed */
    STAGE_COUNT = 3,
};

/* The budgets, each named after the resource it protects. */
enum pipe_budget {
    BUDGET_DESCRIPTORS = 0, /* units: one per tile from its start to its end */
    BUDGET_CONNECTIONS = 1, /* count: open fetches */
    BUDGET_REQUESTS = 2,    /* rate: requests per second */
    BUDGET_CPU = 3,         /* count: decode+reproject jobs running */
    BUDGET_MEMORY = 4,      /* bytes: bodies, decoded and reprojected rasters */
    BUDGET_DISK = 5,        /* count: writes running */
    BUDGET_COUNT = 6,
};

/* Where a tile ended. */
enum tile_result {
    TILE_PENDING = 0,   /* not finished (never started, or stopped by an interruption) */
    TILE_DONE = 1,      /* written and renamed to its final name */
    TILE_SKIPPED = 2,   /* --resume: its output was already complete */
    TILE_FAILED = 3,    /* failed; reason and detail say why */
    TILE_ABANDONED = 4, /* in flight when a second interruption abandoned it */
};

/* Why a tile failed (TILE_FAILED). */
enum tile_reason {
    REASON_NONE = 0,
    REASON_HTTP = 1,        /* the server answered an error status (detail: the status) */
    REASON_UNREACHABLE = 2, /* connection failed after the bounded retries */
    REASON_NOT_FOUND = 3,   /* a file:// or local path that does not exist */
    REASON_NO_LENGTH = 4,   /* no Content-Length: the body cannot be reserved first */
    REASON_TOO_LARGE = 5,   /* body or raster larger than the whole memory budget */
    REASON_CORRUPT = 6,     /* GDAL cannot read it as a raster */
    REASON_WARP = 7,        /* reprojection failed */
    REASON_WRITE = 8,       /* writing the output failed (disk full, permission) */
    REASON_THROTTLED = 9,   /* still throttled (429/503) after the bounded retries */
    REASON_COUNT = 10,
};

/* Names for the enums above ("fetch", "descriptors", "done", "http", ...). */
const char *pipe_stage_name(int stage);
const char *pipe_budget_name(int budget);
const char *tile_result_name(int result);
const char *tile_reason_name(int reason);

#define TILE_DETAIL_MAX 160

struct tile {
    size_t index;                 /* position in the input list */
    char *source;                 /* URL (http://, https://, file://) or local path, as given */
    char *name;                   /* output base name without extension, unique in the run */
    char *out_path;               /* final output path: <outdir>/<name>.tif */
    int result;                   /* enum tile_result */
    int reason;                   /* enum tile_reason when TILE_FAILED */
    char detail[TILE_DETAIL_MAX]; /* human-readable detail of a failure ("HTTP 404") */

    /* sizes, in bytes (0 until known) */
    uint64_t body_bytes;           /* Content-Length or file size: reserved before the read */
    uint64_t decoded_bytes;        /* width x height x bands x type size, from the header */
    uint64_t warped_bytes;         /* the reprojected raster's size, from the suggested output */
    uint64_t output_bytes;         /* size of the written file */
    uint64_t reserved;             /* bytes of the memory budget this tile holds now */
    unsigned width, height, bands; /* of the source raster, from its header */

    /* times on band's clock (band_now()), 0 when not reached */
    band_time t_start; /* took its descriptor unit */
    band_time t_stage_start[STAGE_COUNT];
    band_time t_stage_end[STAGE_COUNT];
    band_time t_end;                /* finished (any result) */
    band_time waited[BUDGET_COUNT]; /* total time spent waiting for each budget */
    unsigned attempts;              /* fetch attempts (retries after 429/503/errors) */
    unsigned throttled;             /* 429/503 answers received for this tile */
};

#endif /* PIPE_TILE_H */

/* SPDX-License-Identifier: MIT */
/*
 * pipe_internal.h - the run's state, shared by pipeline.c (stages and budgets), fetch.c
 * (the fetch stage) and jobs.c (the worker jobs). Everything here belongs to the loop
 * thread, except what a worker job touches of its own tile while it runs.
 */
#ifndef PIPE_INTERNAL_H
#define PIPE_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <band/band.h>
#include <band/uv.h>
#include <curl/curl.h>
#include <uv.h>

#include "curl_uv.h"
#include "jlog.h"
#include "pipeline.h"
#include "raster.h"

struct pipe;

/* Where a tile is; the loop moves it forward. */
enum tctx_state {
    TS_WAIT_UNIT = 0, /* not started */
    TS_WAIT_CONN,     /* waiting for a connection */
    TS_WAIT_RATE,     /* waiting for its request slot */
    TS_BACKOFF,       /* waiting before a retry */
    TS_TRANSFER,      /* in curl (or reading a local file) */
    TS_WAIT_BODY,     /* in curl, paused, waiting for the body's bytes */
    TS_TO_DECODE,     /* sending into, or queued in, the channel to the decoders */
    TS_WAIT_ADMIT,    /* waiting for cpu + memory */
    TS_DECODING,      /* a cpu worker has it */
    TS_TO_WRITE,      /* sending into, or queued in, the channel to the writers */
    TS_WAIT_DISK,     /* waiting for a disk slot */
    TS_WRITING,       /* a disk worker has it */
    TS_FINISHED,
};

/* One tile's run-time state. */
struct tctx {
    struct curl_uv_xfer xfer; /* first member: curl_uv hands it back */
    struct pipe *p;
    struct tile *t;
    int state;         /* enum tctx_state */
    int local;         /* a local file (file:// or a path): no connection, no request rate */
    char *url;         /* what curl fetches */
    char *path;        /* the local path for a local file */
    int abandon;       /* a second interruption came while a worker had it */
    unsigned in_stage; /* bit per stage: inside it now */

    band_time wait_since; /* when the current budget wait began */
    int wait_budget;      /* which budget it waits for, -1 none */

    struct tctx *self; /* the element sent into the channels (a pointer to this) */
    band_chan_send_op send;
    band_uv_op send_op;     /* the send into a channel: its callback may still be due when
                               the next stage already received the tile and waits for a budget */
    band_uv_op op;          /* the one budget wait in progress */
    band_waiter w;          /* its waiter (semaphores, budgets) */
    struct tctx *rate_next; /* the next in the queue for the request pace */
    band_permit unit;       /* descriptors */
    band_permit conn;       /* connections (also the adaptive limit's semaphore) */
    int conn_limit_held;    /* the adaptive limit counts this fetch in flight */
    band_time req_start;    /* when the current attempt's request was sent */

    /* the body */
    char errbuf[CURL_ERROR_SIZE];
    long status;                 /* HTTP status of the current attempt */
    band_time retry_after;       /* from the current attempt's Retry-After, 0: none */
    uint64_t policy_q, policy_w; /* RateLimit-Policy q;w= of the current attempt */
    int throttle_seen;           /* its 429/503 headers already slowed the run */
    int fail_reason;             /* set by a callback that aborted the transfer */
    char fail_detail[TILE_DETAIL_MAX];
    char *body;              /* the buffer */
    band_admit_req body_req; /* its bytes: the memory budget and the bodies' share */
    band_admit_grant body_grant;
    size_t body_len, body_size;
    uv_work_t read_work; /* a local file read on libuv's pool */
    int read_errno;

    /* decode + reproject */
    band_admit_req req;
    band_admit_grant grant;
    struct raster *decoded, *warped;
    band_job job;
    int job_rc;
    int job_reason;
    char job_detail[TILE_DETAIL_MAX];
    uint64_t slot_held; /* --memory-by-count: slots of the count semaphore held */
    int admit_cpu_only; /* the pending admission asks for a cpu slot alone */

    struct tctx *done_next; /* on the completions list */
};

/* A stage's channel and the one receive that feeds its dispatcher. */
struct dispatch {
    struct pipe *p;
    band_chan *chan;
    band_chan_recv_op recv;
    band_uv_op op;
    struct tctx *got; /* where the receive writes the element */
    int receiving;    /* a receive is bound */
    int busy;         /* a received tile waits for the stage's budget */
};

struct pipe {
    const struct pipe_run_config *cfg;
    const struct pipe_opts *o;
    const struct pipe_sizes *z;
    struct pipe_stats *st;
    struct pipe_run_result *res;

    uv_loop_t loop;
    int loop_inited;
    band_uv *bu;
    struct curl_uv *cu;
    band_cancel *stop;    /* the first interruption: no tile starts, and tiles that have
                             moved no byte yet (waiting for a connection or a request
                             slot) stop waiting; tiles whose bytes move finish */
    band_cancel *abandon; /* the second: every wait ends, transfers stop */
    uv_signal_t sigint, sigterm;
    uv_timer_t sampler;
    uv_async_t done_async;
    pthread_mutex_t done_lock;
    struct tctx *done_head, **done_tail; /* jobs finished by workers */

    band_sem *descriptors, *connections, *cpu, *disk;
    band_limit *conn_limit;              /* --connections auto: its semaphore is `connections` */
    band_rate *requests;                 /* NULL: unlimited */
    uint64_t requests_rate;              /* per second, 0 = unlimited */
    band_time requests_resume;           /* no request starts before this (Retry-After) */
    struct tctx *rate_head, **rate_tail; /* requests waiting for the pace, oldest first */
    uv_timer_t pacer;                    /* sends from rate_head when the pace allows */
    uint64_t requests_sent;              /* requests sent so far */
    band_time first_sent;                /* when the first was */
    int answered;                        /* the first answer (headers or failure) came */
    band_budget *memory;
    band_sem *bodies;        /* the share of memory fetched bodies may hold until decoded */
    band_permit gdal_cache;  /* GDAL's block cache, reserved at start */
    band_sem *mem_slots;     /* --memory-by-count */
    uint64_t mem_slots_size; /* slots after the first tile was measured, 0 before */
    band_exec *cpu_pool, *disk_pool;
    struct dispatch to_decode, to_write;

    struct tctx *ctx;
    size_t next;       /* next tile to start */
    size_t unfinished; /* tiles started and not finished */
    int feeding;       /* the feeder waits for a descriptor unit */
    struct tctx *feeder_tile;
    int stopping; /* 1 after the first interruption, 2 after the second */
    int closing;

    _Atomic uint64_t allocated;    /* bytes in tile buffers now (bodies, rasters) */
    _Atomic uint64_t cpu_borrowed; /* idle cpu slots large warps borrowed (jobs.c) */
    _Atomic uint64_t allocated_peak;
    uint64_t req_bucket[10]; /* requests started in each of the last ten sample periods */
    uint64_t ok_bucket[10];  /* requests answered 2xx in each of them */
    int pace_probing;        /* the pace is an estimate (no RateLimit-Policy): probe upward */
    band_time pace_changed;  /* when the pace last changed */
    size_t bucket;

    struct jlog *log;
    struct verify *verify;
    band_time t0;
    int bytes_budgeted; /* 1: memory is reserved in bytes (the default) */
};

/* pipeline.c */
void pipe_wait_begin(struct tctx *c, int budget);
void pipe_wait_end(struct tctx *c, int acquired);
void pipe_stage_begin(struct tctx *c, int stage);
void pipe_stage_end(struct tctx *c, int stage);
void pipe_fail(struct tctx *c, int reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pipe_finish(struct tctx *c, int result); /* TILE_DONE, TILE_PENDING, TILE_ABANDONED */
void pipe_use(struct pipe *p, int budget, int64_t delta);
void pipe_throttled(struct tctx *c);      /* a 429 or 503 answer: slow the request rate */
void pipe_policy_seen(struct tctx *c);    /* an answer stated the server's pace */
void pipe_fetched(struct tctx *c);        /* the body is whole and probed: on to the decoders */
void pipe_release_memory(struct tctx *c); /* everything the tile holds of memory */
void pipe_alloc_add(struct pipe *p, uint64_t n);
void pipe_alloc_sub(struct pipe *p, uint64_t n);
void pipe_memory_changed(struct pipe *p);

/* fetch.c */
void fetch_start(struct tctx *c);   /* the tile holds its unit: fetch it */
void fetch_abandon(struct tctx *c); /* a second interruption: stop its transfer now */
void fetch_free_body(struct tctx *c);
void fetch_stop_waiting(struct pipe *p); /* an interruption: requests waiting for the pace
                                            are not sent */
void fetch_read_local(struct tctx *c);   /* the bytes are reserved: read the file */

/* jobs.c */
void jobs_decode(band_job *job); /* on a cpu worker */
void jobs_write(band_job *job);  /* on a disk worker */
void jobs_post(struct tctx *c);  /* hand a finished job back to the loop */

#endif /* PIPE_INTERNAL_H */

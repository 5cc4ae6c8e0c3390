/* SPDX-License-Identifier: MIT */
/*
 * pipeline.c - the stages, their budgets and channels, and the run's life (pipeline.h).
 */
#include "pipe_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "procfs.h"
#include "progress.h"
#include "verify.h"

/* ---- counting ------------------------------------------------------------------------ */

void pipe_use(struct pipe *p, int budget, int64_t delta)
{
    stats_budget_change(p->st, budget, delta, 0, band_now());
}

void pipe_wait_begin(struct tctx *c, int budget)
{
    c->wait_budget = budget;
    c->wait_since = band_now();
    stats_budget_change(c->p->st, budget, 0, 1, c->wait_since);
}

void pipe_wait_end(struct tctx *c, int acquired)
{
    if (c->wait_budget < 0)
        return;
    band_time now = band_now();
    band_time waited = now - c->wait_since;
    struct stats_budget *b = &c->p->st->budget[c->wait_budget];
    c->t->waited[c->wait_budget] += waited;
    b->waited += waited;
    (void)acquired; /* grants are counted where the units are taken */
    stats_budget_change(c->p->st, c->wait_budget, 0, -1, now);
    c->wait_budget = -1;
}

/* A tile is inside a stage while it holds the stage's budget: fetch from its connection
 * (or, for a local file, its read) to the whole body, decode while a cpu worker has it,
 * write while a disk worker has it. A fetch retried after a 429 leaves the stage while it
 * waits again, so the stage's count never passes its budget. */
void pipe_stage_begin(struct tctx *c, int stage)
{
    struct pipe_stats *st = c->p->st;
    if (c->in_stage & (1u << stage))
        return;
    c->in_stage |= 1u << stage;
    band_time now = band_now();
    if (c->t->t_stage_start[stage] == 0)
        c->t->t_stage_start[stage] = now;
    if (++st->stage_in_flight[stage] > st->stage_peak[stage])
        st->stage_peak[stage] = st->stage_in_flight[stage];
    jlog_event(c->p->log, c->t, "stage_start", stage, now, c->p->t0);
}

void pipe_stage_end(struct tctx *c, int stage)
{
    struct pipe_stats *st = c->p->st;
    if (!(c->in_stage & (1u << stage)))
        return;
    c->in_stage &= ~(1u << stage);
    c->t->t_stage_end[stage] = band_now();
    st->stage_in_flight[stage]--;
    jlog_event(c->p->log, c->t, "stage_end", stage, c->t->t_stage_end[stage], c->p->t0);
}

void pipe_alloc_add(struct pipe *p, uint64_t n)
{
    uint64_t now = atomic_fetch_add(&p->allocated, n) + n;
    uint64_t peak = atomic_load(&p->allocated_peak);
    while (now > peak && !atomic_compare_exchange_weak(&p->allocated_peak, &peak, now)) {
        /* peak reloaded: try again while ours is higher */
    }
}

void pipe_alloc_sub(struct pipe *p, uint64_t n)
{
    atomic_fetch_sub(&p->allocated, n);
}

/* The memory budget's row: bytes reserved (or slots held, by count). */
void pipe_memory_changed(struct pipe *p)
{
    struct stats_budget *b = &p->st->budget[BUDGET_MEMORY];
    /* Units held, not capacity - available: a large request at the head of the queue has
     * units set aside for it that nobody holds yet. */
    uint64_t in_use = 0;
    if (p->bytes_budgeted) {
        band_budget_stats bs;
        if (band_budget_get_stats(p->memory, &bs) == 0)
            in_use = bs.in_use;
    } else {
        band_sem_stats ss;
        if (band_sem_get_stats(p->mem_slots, &ss) == 0)
            in_use = ss.in_use;
    }
    stats_budget_change(p->st, BUDGET_MEMORY, (int64_t)in_use - (int64_t)b->in_use, 0, band_now());
    if (p->bytes_budgeted && in_use > p->st->peak_reserved)
        p->st->peak_reserved = in_use;
}

/* ---- the end of a tile --------------------------------------------------------------- */

static void maybe_end(struct pipe *p);
static void feed(struct pipe *p);

/* Give back everything @c still holds except its descriptor unit. */
static void release_all(struct tctx *c)
{
    struct pipe *p = c->p;
    if (c->conn.count != 0) { /* only on paths that failed before the transfer ended */
        if (c->conn_limit_held) {
            (void)band_permit_forget(&c->conn);
            (void)band_limit_on_done(p->conn_limit, c->req_start, band_now(), BAND_LIMIT_IGNORE);
            c->conn_limit_held = 0;
        } else {
            (void)band_permit_release(&c->conn);
        }
        pipe_use(p, BUDGET_CONNECTIONS, -1);
    }
    fetch_free_body(c);
    if (c->decoded != NULL) {
        raster_free(c->decoded);
        c->decoded = NULL;
    }
    if (c->warped != NULL) {
        raster_free(c->warped);
        c->warped = NULL;
        pipe_alloc_sub(p, c->t->warped_bytes);
    }
    if (band_admit_held(&c->grant, p->cpu) > 0) {
        (void)band_admit_release_part(&c->grant, p->cpu, 1);
        pipe_use(p, BUDGET_CPU, -1);
    }
    if (c->grant.n > 0)
        band_admit_release(&c->grant);
    c->grant = (band_admit_grant)BAND_ADMIT_GRANT_INIT;
    c->t->reserved = 0;
    pipe_memory_changed(p);
    for (int s = 0; s < STAGE_COUNT; s++)
        pipe_stage_end(c, s);
}

void pipe_finish(struct tctx *c, int result)
{
    struct pipe *p = c->p;
    struct pipe_stats *st = p->st;
    struct tile *t = c->t;
    if (c->state == TS_FINISHED)
        return;
    release_all(c);
    c->state = TS_FINISHED;
    t->result = result;
    t->t_end = band_now();
    const char *event = "tile_stopped";
    switch (result) {
    case TILE_DONE:
        st->done++;
        st->bytes_out += t->output_bytes;
        event = "tile_done";
        break;
    case TILE_FAILED:
        st->failed++;
        st->failed_by_reason[t->reason]++;
        event = "tile_failed";
        break;
    case TILE_ABANDONED:
        st->abandoned++;
        event = "tile_abandoned";
        break;
    default:
        st->pending++;
        break;
    }
    jlog_event(p->log, t, event, -1, t->t_end, p->t0);
    if (c->unit.count != 0) {
        (void)band_permit_release(&c->unit);
        pipe_use(p, BUDGET_DESCRIPTORS, -1);
    }
    p->unfinished--;
    feed(p);
    maybe_end(p);
}

void pipe_fail(struct tctx *c, int reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->t->detail, sizeof(c->t->detail), fmt, ap);
    va_end(ap);
    c->t->reason = reason;
    pipe_finish(c, TILE_FAILED);
}

void pipe_release_memory(struct tctx *c)
{
    release_all(c);
}

/* ---- the request rate ------------------------------------------------------------------ */

/* Set the request budget to @tokens per @secs seconds, if that is slower than now (a pace
 * only ever slows the run: a rate the user gave, or one a server stated, stays the bound
 * when it is lower). @origin says where the pace came from. */
static void set_pace(struct pipe *p, uint64_t tokens, uint64_t secs, const char *origin)
{
    struct pipe_stats *st = p->st;
    uint64_t per_sec = tokens / secs > 0 ? tokens / secs : 1;
    if (p->requests_rate != 0 && per_sec >= p->requests_rate)
        return;
    int rc = p->requests == NULL
                 ? band_rate_create(&p->requests, tokens, (band_time)secs * BAND_SEC, 1, NULL)
                 : band_rate_set(p->requests, tokens, (band_time)secs * BAND_SEC, 1);
    if (rc == 0) {
        (void)band_rate_set_name(p->requests, "requests");
        p->requests_rate = per_sec;
        snprintf(st->requests_origin, sizeof(st->requests_origin), "%s", origin);
        st->budget[BUDGET_REQUESTS].limit = per_sec;
        st->budget[BUDGET_REQUESTS].origin = st->requests_origin;
    }
}

/* The server states its pace (RateLimit-Policy: q;w=W, q requests per W seconds): keep to
 * it, less a tenth for the jitter of the loop, from this answer on, before any 429. */
void pipe_policy_seen(struct tctx *c)
{
    char origin[sizeof(c->p->st->requests_origin)];
    if (c->policy_q == 0 || c->policy_w == 0)
        return;
    snprintf(origin, sizeof(origin),
             "the server's pace: RateLimit-Policy %" PRIu64 ";w=%" PRIu64 ", less 10%%",
             c->policy_q, c->policy_w);
    set_pace(c->p, c->policy_q * 9, c->policy_w * 10, origin);
    c->p->pace_probing = 0;
}

/* A 429 or 503: wait for its Retry-After, and from now on keep to the server's pace. */
void pipe_throttled(struct tctx *c)
{
    struct pipe *p = c->p;
    struct pipe_stats *st = p->st;
    band_time now = band_now();
    st->throttled++;
    c->t->throttled++;
    if (st->first_retry_after != 0 && c->req_start > st->first_retry_after)
        st->throttled_after_first_retry_after++;
    if (c->retry_after > 0) {
        if (st->first_retry_after == 0)
            st->first_retry_after = now;
        if (p->requests_resume < now + c->retry_after)
            p->requests_resume = now + c->retry_after;
    }
    if (c->policy_q > 0) {
        pipe_policy_seen(c);
        return;
    }
    /* No stated pace: what the server answered with 2xx over the last second, less a
     * fifth, halved at every further throttling. */
    uint64_t ok = 0;
    for (size_t i = 0; i < 10; i++)
        ok += p->ok_bucket[i];
    uint64_t tokens = ok * 4 / 5;
    if (p->requests_rate > 0 && p->requests_rate / 2 < tokens)
        tokens = p->requests_rate / 2;
    if (tokens < 1)
        tokens = 1;
    char origin[sizeof(st->requests_origin)];
    snprintf(origin, sizeof(origin),
             "throttled, no stated pace: from %" PRIu64
             "/s (the 2xx of the last second), +10%% per 5 s without a 429",
             tokens);
    set_pace(p, tokens, 1, origin);
    p->pace_probing = 1;
    p->pace_changed = now;
}

/* Without a stated pace, the estimate from the answers of one second is low (a server
 * that allows a burst answers it in the first moments): probe upward, a tenth every five
 * seconds without a throttling answer, and a further 429 halves it again. */
static void pace_probe(struct pipe *p, band_time now)
{
    if (!p->pace_probing || p->requests == NULL || now - p->pace_changed < 5 * BAND_SEC ||
        now - p->requests_resume < 5 * BAND_SEC)
        return;
    uint64_t up = p->requests_rate + (p->requests_rate / 10 > 0 ? p->requests_rate / 10 : 1);
    if (band_rate_set(p->requests, up, BAND_SEC, 1) == 0) {
        p->requests_rate = up;
        p->st->budget[BUDGET_REQUESTS].limit = up;
    }
    p->pace_changed = now;
}

/* ---- decode: channel, admission, job ------------------------------------------------- */

static void dispatch_next(struct dispatch *d);
static void on_decode_admit(band_uv_op *op, int status);
static void on_disk(band_uv_op *op, int status);

static void on_sent(band_uv_op *op, int status)
{
    struct tctx *c = op->data;
    if (status != 0)
        pipe_finish(c, c->p->stopping >= 2 ? TILE_ABANDONED : TILE_PENDING);
}

/* Into a stage's channel, declaring @bytes (no more than the channel's byte bound: a
 * tile larger than it passes alone). */
static void send_to(struct tctx *c, struct dispatch *d, uint64_t bytes, int state)
{
    struct pipe *p = c->p;
    band_chan_stats cs;
    if (band_chan_get_stats(d->chan, &cs) == 0 && cs.byte_capacity > 0 && bytes > cs.byte_capacity)
        bytes = cs.byte_capacity;
    c->state = state;
    c->self = c;
    c->send_op.data = c;
    int rc = band_uv_bind(p->bu, &c->send_op, &c->send.w, on_sent, BAND_FOREVER, p->abandon);
    if (rc != 0) {
        pipe_finish(c, TILE_PENDING);
        return;
    }
    rc = band_chan_send_async(d->chan, &c->self, bytes, &c->send);
    (void)band_uv_start(&c->send_op, rc);
}

void pipe_fetched(struct tctx *c)
{
    pipe_stage_end(c, STAGE_FETCH);
    send_to(c, &c->p->to_decode, c->body_len, TS_TO_DECODE);
}

static void decode_submit(struct tctx *c);

static void decode_admit(struct tctx *c)
{
    struct pipe *p = c->p;
    struct tile *t = c->t;
    uint64_t need = t->decoded_bytes + t->warped_bytes + p->z->warp_work;
    if (p->bytes_budgeted && need > p->z->decode_share) {
        char h1[32], h2[32], h3[32];
        p->to_decode.busy = 0;
        pipe_fail(c, REASON_TOO_LARGE,
                  "raster %ux%ux%u needs %s decoded and reprojected, more than the %s of "
                  "the %s memory budget that decoding may hold",
                  t->width, t->height, t->bands, sizing_human(need, h1, sizeof(h1)),
                  sizing_human(p->z->decode_share, h2, sizeof(h2)),
                  sizing_human(band_budget_capacity(p->memory), h3, sizeof(h3)));
        dispatch_next(&p->to_decode);
        return;
    }
    c->state = TS_WAIT_ADMIT;
    c->slot_held = p->bytes_budgeted ? need : 1;
    decode_submit(c);
}

/* Queue the tile for cpu and memory together, or, while every cpu slot is taken, for a
 * cpu slot alone first. A request queued on both holds its place in the memory budget's
 * FIFO while it waits for the cores, and every body reservation behind it waits too,
 * though memory is not short: fetching would stop whenever the cores are full. Once a
 * slot is free it goes straight back and both are asked for at once, so the tile never
 * holds one while it waits for the other, and it queues on memory only when memory is
 * what is short. */
static void decode_submit(struct tctx *c)
{
    struct pipe *p = c->p;
    band_sem *mem = p->bytes_budgeted ? band_budget_sem(p->memory) : p->mem_slots;
    c->admit_cpu_only = band_sem_available(p->cpu) == 0;
    band_admit_req_init(&c->req, NULL, NULL);
    (void)band_admit_req_add(&c->req, p->cpu, 1);
    if (!c->admit_cpu_only)
        (void)band_admit_req_add(&c->req, mem, c->slot_held);
    c->op.data = c;
    /* Counted as waiting for whichever of the two is short now. */
    pipe_wait_begin(c, c->admit_cpu_only                        ? BUDGET_CPU
                       : band_sem_available(mem) < c->slot_held ? BUDGET_MEMORY
                                                                : BUDGET_CPU);
    int rc = band_uv_bind(p->bu, &c->op, &c->req.w, on_decode_admit, BAND_FOREVER, p->abandon);
    if (rc != 0) {
        pipe_wait_end(c, 0);
        p->to_decode.busy = 0;
        pipe_finish(c, TILE_PENDING);
        dispatch_next(&p->to_decode);
        return;
    }
    rc = band_admit_acquire_async(&c->req);
    (void)band_uv_start(&c->op, rc);
}

static void on_decode_admit(band_uv_op *op, int status)
{
    struct tctx *c = op->data;
    struct pipe *p = c->p;
    if (status == 0 && c->admit_cpu_only) {
        /* A slot is free: give it back and ask for both. The wait for the cpu ends here;
         * what follows is counted for whichever of the two is short then. */
        band_admit_grant g = BAND_ADMIT_GRANT_INIT;
        if (band_admit_req_grant(&c->req, &g) == 0)
            band_admit_release(&g);
        pipe_wait_end(c, 0);
        decode_submit(c);
        return;
    }
    pipe_wait_end(c, status == 0);
    p->to_decode.busy = 0;
    if (status == 0 && band_admit_req_grant(&c->req, &c->grant) != 0)
        status = BAND_EINVAL;
    if (status != 0) {
        if (status == BAND_ECANCELED)
            pipe_finish(c, TILE_ABANDONED);
        else
            pipe_fail(c, REASON_TOO_LARGE, "cpu and memory admission: %s", band_strerror(status));
        dispatch_next(&p->to_decode);
        return;
    }
    pipe_use(p, BUDGET_CPU, 1);
    if (p->bytes_budgeted)
        c->t->reserved += c->slot_held;
    pipe_memory_changed(p);
    pipe_stage_begin(c, STAGE_DECODE);
    c->state = TS_DECODING;
    band_job_init(&c->job, jobs_decode, c);
    int rc = band_exec_try_run(p->cpu_pool, &c->job);
    if (rc != 0)
        pipe_fail(c, REASON_WARP, "the cpu workers refused the job: %s", band_strerror(rc));
    dispatch_next(&p->to_decode);
}

/* --memory-by-count: the count is the budget over the first tile's working set. */
static void size_slots(struct pipe *p, const struct tctx *c)
{
    if (p->bytes_budgeted || p->mem_slots_size != 0)
        return;
    uint64_t ws = c->t->body_bytes + c->t->decoded_bytes + c->t->warped_bytes + p->z->warp_work;
    uint64_t slots = ws > 0 ? p->z->limit[BUDGET_MEMORY] / ws : 1;
    if (slots < 1)
        slots = 1;
    if (slots > 1)
        (void)band_sem_release(p->mem_slots, slots - 1);
    p->mem_slots_size = slots;
    p->st->memory_by_count = slots;
    p->st->budget[BUDGET_MEMORY].limit = slots;
}

static void decode_done(struct tctx *c)
{
    struct pipe *p = c->p;
    (void)band_admit_release_part(&c->grant, p->cpu, 1);
    pipe_use(p, BUDGET_CPU, -1);
    if (c->job_rc == 0)
        size_slots(p, c);
    if (p->bytes_budgeted) /* reconciled to the reprojected raster by the job */
        c->t->reserved = band_admit_held(&c->grant, band_budget_sem(p->memory));
    pipe_memory_changed(p);
    pipe_stage_end(c, STAGE_DECODE);
    if (c->abandon) {
        pipe_finish(c, TILE_ABANDONED);
        return;
    }
    if (c->job_rc != 0) {
        pipe_fail(c, c->job_reason, "%s", c->job_detail);
        return;
    }
    send_to(c, &p->to_write, c->t->warped_bytes, TS_TO_WRITE);
}

/* ---- write: channel, disk slot, job -------------------------------------------------- */

static void write_acquire(struct tctx *c)
{
    struct pipe *p = c->p;
    c->state = TS_WAIT_DISK;
    c->op.data = c;
    pipe_wait_begin(c, BUDGET_DISK);
    int rc = band_uv_bind(p->bu, &c->op, &c->w, on_disk, BAND_FOREVER, p->abandon);
    if (rc != 0) {
        pipe_wait_end(c, 0);
        p->to_write.busy = 0;
        pipe_finish(c, TILE_PENDING);
        dispatch_next(&p->to_write);
        return;
    }
    rc = band_sem_acquire_async(p->disk, 1, &c->w);
    (void)band_uv_start(&c->op, rc);
}

static band_permit disk_permit_of(struct tctx *c)
{
    band_permit d = BAND_PERMIT_INIT;
    (void)band_permit_adopt(&d, c->p->disk, 1);
    return d;
}

static void on_disk(band_uv_op *op, int status)
{
    struct tctx *c = op->data;
    struct pipe *p = c->p;
    pipe_wait_end(c, status == 0);
    p->to_write.busy = 0;
    if (status != 0) {
        pipe_finish(c, status == BAND_ECANCELED ? TILE_ABANDONED : TILE_PENDING);
        dispatch_next(&p->to_write);
        return;
    }
    pipe_use(p, BUDGET_DISK, 1);
    pipe_stage_begin(c, STAGE_WRITE);
    c->state = TS_WRITING;
    band_job_init(&c->job, jobs_write, c);
    int rc = band_exec_try_run(p->disk_pool, &c->job);
    if (rc != 0) {
        (void)band_sem_release(p->disk, 1);
        pipe_use(p, BUDGET_DISK, -1);
        pipe_fail(c, REASON_WRITE, "the disk workers refused the job: %s", band_strerror(rc));
    }
    dispatch_next(&p->to_write);
}

static void write_done(struct tctx *c)
{
    struct pipe *p = c->p;
    band_permit d = disk_permit_of(c);
    (void)band_permit_release(&d);
    pipe_use(p, BUDGET_DISK, -1);
    if (c->job_rc != 0) {
        pipe_fail(c, c->job_reason, "%s", c->job_detail);
        return;
    }
    /* Renamed into place: complete even if a second interruption came meanwhile. */
    pipe_finish(c, TILE_DONE);
}

/* ---- dispatchers: one receive at a time, the next once the last tile got its budget --- */

static void on_recv(band_uv_op *op, int status)
{
    struct dispatch *d = op->data;
    struct pipe *p = d->p;
    d->receiving = 0;
    if (status != 0)
        return; /* closed: the run is over */
    struct tctx *c = d->got;
    if (p->stopping >= 2) {
        pipe_finish(c, TILE_ABANDONED);
        dispatch_next(d);
        return;
    }
    d->busy = 1;
    if (d == &p->to_decode)
        decode_admit(c);
    else
        write_acquire(c);
}

static void dispatch_next(struct dispatch *d)
{
    struct pipe *p = d->p;
    if (d->receiving || d->busy || p->closing)
        return;
    d->op.data = d;
    int rc = band_uv_bind(p->bu, &d->op, &d->recv.w, on_recv, BAND_FOREVER, NULL);
    if (rc != 0)
        return;
    d->receiving = 1;
    rc = band_chan_recv_async(d->chan, &d->got, &d->recv);
    (void)band_uv_start(&d->op, rc);
}

/* ---- completions from the workers ---------------------------------------------------- */

static void on_jobs_done(uv_async_t *a)
{
    struct pipe *p = a->data;
    pthread_mutex_lock(&p->done_lock);
    struct tctx *list = p->done_head;
    p->done_head = NULL;
    p->done_tail = &p->done_head;
    pthread_mutex_unlock(&p->done_lock);
    while (list != NULL) {
        struct tctx *c = list;
        list = c->done_next;
        if (c->state == TS_DECODING)
            decode_done(c);
        else if (c->state == TS_WRITING)
            write_done(c);
    }
}

/* ---- the feeder: one tile at a time takes a descriptor unit and starts ---------------- */

static void on_unit(band_uv_op *op, int status)
{
    struct tctx *c = op->data;
    struct pipe *p = c->p;
    p->feeding = 0;
    pipe_wait_end(c, status == 0);
    if (status != 0) {
        maybe_end(p); /* interrupted before it started: it stays pending */
        return;
    }
    (void)band_permit_adopt(&c->unit, p->descriptors, 1);
    pipe_use(p, BUDGET_DESCRIPTORS, 1);
    p->next++;
    p->unfinished++;
    c->t->t_start = band_now();
    jlog_event(p->log, c->t, "tile_started", -1, c->t->t_start, p->t0);
    fetch_start(c);
    feed(p);
}

static void feed(struct pipe *p)
{
    while (!p->feeding && !p->stopping && p->next < p->cfg->ntiles) {
        struct tctx *c = &p->ctx[p->next];
        if (c->t->result != TILE_PENDING) { /* skipped by --resume */
            p->next++;
            continue;
        }
        c->op.data = c;
        pipe_wait_begin(c, BUDGET_DESCRIPTORS);
        if (band_uv_bind(p->bu, &c->op, &c->w, on_unit, BAND_FOREVER, p->stop) != 0) {
            pipe_wait_end(c, 0);
            return;
        }
        p->feeding = 1;
        int rc = band_sem_acquire_async(p->descriptors, 1, &c->w);
        (void)band_uv_start(&c->op, rc);
    }
}

/* ---- sampling, signals, the end ------------------------------------------------------ */

static void on_sample(uv_timer_t *tm)
{
    struct pipe *p = tm->data;
    struct pipe_stats *st = p->st;
    struct stats_sample row;
    memset(&row, 0, sizeof(row));
    for (int b = 0; b < BUDGET_COUNT; b++) {
        row.in_use[b] = st->budget[b].in_use;
        row.limit[b] = st->budget[b].limit;
    }
    if (p->conn_limit != NULL)
        row.limit[BUDGET_CONNECTIONS] = st->budget[BUDGET_CONNECTIONS].limit =
            band_limit_current(p->conn_limit);
    for (int s = 0; s < STAGE_COUNT; s++)
        row.stage_in_flight[s] = st->stage_in_flight[s];
    row.done = st->done + st->failed + st->abandoned + st->skipped;
    uint64_t reqs = 0;
    for (size_t i = 0; i < 10; i++)
        reqs += p->req_bucket[i];
    row.request_rate = (double)reqs; /* ten periods of 100 ms: per second */
    p->bucket = (p->bucket + 1) % 10;
    p->req_bucket[p->bucket] = 0;
    p->ok_bucket[p->bucket] = 0;
    pace_probe(p, band_now());
    row.open_fds = procfs_open_fds();
    row.rss = procfs_rss();
    row.allocated = atomic_load(&p->allocated);
    if (row.open_fds > st->peak_fds)
        st->peak_fds = row.open_fds;
    if (row.rss > st->peak_rss)
        st->peak_rss = row.rss;
    st->allocated = atomic_load(&p->allocated);
    st->peak_allocated = atomic_load(&p->allocated_peak);
    (void)stats_sample_add(st, &row);
    if (p->cfg->progress != NULL)
        progress_draw(p->cfg->progress, st, band_now());
}

static void on_signal(uv_signal_t *sig, int signum)
{
    struct pipe *p = sig->data;
    (void)signum;
    if (p->stopping == 0) {
        p->stopping = 1;
        p->st->interrupted = 1;
        if (p->cfg->progress != NULL)
            progress_clear(p->cfg->progress);
        fprintf(stderr, "band-pipe: interrupted: no new tile starts, tiles in flight finish "
                        "(interrupt again to abandon them)\n");
        (void)band_cancel_request(p->stop);
        fetch_stop_waiting(p);
        maybe_end(p);
        return;
    }
    if (p->stopping == 1) {
        p->stopping = 2;
        p->st->interrupted = 2;
        fprintf(stderr, "band-pipe: abandoning the tiles in flight\n");
        (void)band_cancel_request(p->abandon);
        for (size_t i = 0; i < p->cfg->ntiles; i++) {
            struct tctx *c = &p->ctx[i];
            if (c->state == TS_TRANSFER)
                fetch_abandon(c);
            else if (c->state == TS_DECODING || c->state == TS_WRITING)
                c->abandon = 1;
        }
        maybe_end(p);
    }
}

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

static void on_curl_closed(void *data)
{
    struct pipe *p = data;
    p->cu = NULL;
}

static void on_uv_closed(void *data)
{
    (void)data;
}

static void maybe_end(struct pipe *p)
{
    if (p->closing || p->unfinished > 0)
        return;
    if (p->feeding) {
        if (!p->stopping)
            return; /* the next tile is about to start */
        return;     /* its wait was cancelled with the stop token: on_unit comes back */
    }
    if (!p->stopping && p->next < p->cfg->ntiles)
        return;
    p->closing = 1;
    (void)band_chan_close(p->to_decode.chan);
    (void)band_chan_close(p->to_write.chan);
    on_sample(&p->sampler); /* the last row */
    uv_timer_stop(&p->sampler);
    uv_close((uv_handle_t *)&p->sampler, on_closed);
    uv_timer_stop(&p->pacer);
    uv_close((uv_handle_t *)&p->pacer, on_closed);
    uv_signal_stop(&p->sigint);
    uv_signal_stop(&p->sigterm);
    uv_close((uv_handle_t *)&p->sigint, on_closed);
    uv_close((uv_handle_t *)&p->sigterm, on_closed);
    uv_close((uv_handle_t *)&p->done_async, on_closed);
    curl_uv_close(p->cu, on_curl_closed, p);
    (void)band_uv_close(p->bu, on_uv_closed, p);
}

/* ---- set-up and tear-down ------------------------------------------------------------ */

static uint64_t budgeted_bytes(void *arg)
{
    struct pipe *p = arg;
    return atomic_load(&p->allocated);
}

static int is_local(const char *src, const char **path)
{
    if (strncmp(src, "file://", 7) == 0) {
        *path = src + 7;
        return 1;
    }
    if (strstr(src, "://") == NULL) {
        *path = src;
        return 1;
    }
    return 0;
}

static int make_prims(struct pipe *p, char *err, size_t errlen)
{
    const struct pipe_sizes *z = p->z;
    band_chan_opts co;
    int rc;
#define TRY(call, what)                                                                            \
    do {                                                                                           \
        if ((rc = (call)) != 0) {                                                                  \
            snprintf(err, errlen, "%s: %s", what, band_strerror(rc));                              \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)
    TRY(band_sem_create(&p->descriptors, z->limit[BUDGET_DESCRIPTORS], NULL), "descriptors");
    (void)band_sem_set_name(p->descriptors, "descriptors");
    if (z->connections_auto) {
        band_limit_opts lo;
        memset(&lo, 0, sizeof(lo));
        /* Additive increase while answers come back, multiplicative decrease on a 429,
         * a 503, a 5xx or a transport error. Round trips say little here: on a
         * heavy-tailed set they follow the tiles' sizes, not the server's queue. */
        lo.algorithm = BAND_LIMIT_AIMD;
        lo.initial = z->limit[BUDGET_CONNECTIONS];
        lo.min = 1;
        lo.max = z->connections_max;
        lo.backoff = 0.75;
        TRY(band_limit_create(&p->conn_limit, &lo), "connections (adaptive)");
        (void)band_limit_set_name(p->conn_limit, "connections");
        p->connections = band_limit_sem(p->conn_limit);
    } else {
        TRY(band_sem_create(&p->connections, z->limit[BUDGET_CONNECTIONS], NULL), "connections");
        (void)band_sem_set_name(p->connections, "connections");
    }
    if (z->limit[BUDGET_REQUESTS] > 0) {
        TRY(band_rate_create(&p->requests, z->limit[BUDGET_REQUESTS], BAND_SEC, 1, NULL),
            "requests");
        (void)band_rate_set_name(p->requests, "requests");
        p->requests_rate = z->limit[BUDGET_REQUESTS];
    }
    TRY(band_sem_create(&p->cpu, z->limit[BUDGET_CPU], NULL), "cpu");
    (void)band_sem_set_name(p->cpu, "cpu");
    TRY(band_sem_create(&p->disk, z->limit[BUDGET_DISK], NULL), "disk");
    (void)band_sem_set_name(p->disk, "disk");
    TRY(band_budget_create(&p->memory, z->limit[BUDGET_MEMORY], NULL), "memory");
    (void)band_budget_set_name(p->memory, "memory");
    if (p->bytes_budgeted) {
        TRY(band_sem_create(&p->bodies, z->body_share, NULL), "the bodies' share of memory");
        (void)band_sem_set_name(p->bodies, "memory (fetched bodies)");
    } else {
        TRY(band_sem_create(&p->mem_slots, 1, NULL), "memory slots");
        (void)band_sem_set_name(p->mem_slots, "memory");
    }
    /* GDAL's block cache is memory the pipeline holds for the whole run. */
    if (z->gdal_cache > 0)
        TRY(band_permit_try_acquire(&p->gdal_cache, band_budget_sem(p->memory), z->gdal_cache),
            "reserving GDAL's block cache from the memory budget");
    TRY(band_exec_create(&p->cpu_pool, (unsigned)z->limit[BUDGET_CPU], z->limit[BUDGET_CPU] * 2,
                         NULL),
        "cpu workers");
    (void)band_exec_set_name(p->cpu_pool, "cpu");
    TRY(band_exec_create(&p->disk_pool, (unsigned)z->limit[BUDGET_DISK], z->limit[BUDGET_DISK] * 2,
                         NULL),
        "disk workers");
    (void)band_exec_set_name(p->disk_pool, "disk");
    /* The channels: twice the next stage's slots, and half the memory budget in bytes, so
     * a fast stage waits instead of building a backlog in front of a slow one. */
    memset(&co, 0, sizeof(co));
    co.byte_capacity = z->limit[BUDGET_MEMORY] / 2;
    TRY(band_chan_create(&p->to_decode.chan, sizeof(struct tctx *), z->limit[BUDGET_CPU] * 2, &co),
        "channel to the decoders");
    (void)band_chan_set_name(p->to_decode.chan, "fetched");
    TRY(band_chan_create(&p->to_write.chan, sizeof(struct tctx *), z->limit[BUDGET_DISK] * 2, &co),
        "channel to the writers");
    (void)band_chan_set_name(p->to_write.chan, "reprojected");
#undef TRY
    return 0;
}

static void free_prims(struct pipe *p)
{
    if (p->cpu_pool != NULL) {
        (void)band_exec_shutdown(p->cpu_pool, 0);
        (void)band_exec_join(p->cpu_pool);
        (void)band_exec_destroy(p->cpu_pool);
    }
    if (p->disk_pool != NULL) {
        (void)band_exec_shutdown(p->disk_pool, 0);
        (void)band_exec_join(p->disk_pool);
        (void)band_exec_destroy(p->disk_pool);
    }
    (void)band_chan_destroy(p->to_decode.chan);
    (void)band_chan_destroy(p->to_write.chan);
    if (p->gdal_cache.count != 0)
        (void)band_permit_release(&p->gdal_cache);
    (void)band_budget_destroy(p->memory);
    (void)band_sem_destroy(p->mem_slots);
    (void)band_sem_destroy(p->bodies);
    (void)band_sem_destroy(p->cpu);
    (void)band_sem_destroy(p->disk);
    (void)band_rate_destroy(p->requests);
    if (p->conn_limit != NULL)
        (void)band_limit_destroy(p->conn_limit);
    else
        (void)band_sem_destroy(p->connections);
    (void)band_sem_destroy(p->descriptors);
    (void)band_cancel_destroy(p->stop);
    (void)band_cancel_destroy(p->abandon);
}

static double thread_cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int pipe_run(const struct pipe_run_config *cfg, struct pipe_stats *st, struct pipe_run_result *res)
{
    struct pipe *p = calloc(1, sizeof(*p));
    char err[256];
    int ret = -1;
    memset(res, 0, sizeof(*res));
    if (p == NULL || stats_init(st, cfg->ntiles, band_now()) != 0) {
        fprintf(stderr, "band-pipe: out of memory\n");
        free(p);
        return -1;
    }
    p->cfg = cfg;
    p->o = cfg->opts;
    p->z = cfg->sizes;
    p->st = st;
    p->res = res;
    p->t0 = st->t0;
    p->bytes_budgeted = !cfg->opts->memory_by_count;
    p->done_tail = &p->done_head;
    p->ctx = calloc(cfg->ntiles > 0 ? cfg->ntiles : 1, sizeof(*p->ctx));
    pthread_mutex_init(&p->done_lock, NULL);
    st->fd_budget = p->z->fd_budget;
    st->memory_bytes = p->z->limit[BUDGET_MEMORY];
    for (int b = 0; b < BUDGET_COUNT; b++) {
        st->budget[b].limit = p->z->limit[b];
        st->budget[b].origin = p->z->origin[b];
    }
    if (p->ctx == NULL || band_cancel_create(&p->stop, NULL) != 0 ||
        band_cancel_create(&p->abandon, NULL) != 0) {
        fprintf(stderr, "band-pipe: out of memory\n");
        goto out;
    }
    if (make_prims(p, err, sizeof(err)) != 0) {
        fprintf(stderr, "band-pipe: %s\n", err);
        goto out;
    }
    pipe_memory_changed(p);
    for (size_t i = 0; i < cfg->ntiles; i++) {
        struct tctx *c = &p->ctx[i];
        const char *path = NULL;
        c->p = p;
        c->t = &cfg->tiles[i];
        c->wait_budget = -1;
        c->unit = (band_permit)BAND_PERMIT_INIT;
        c->conn = (band_permit)BAND_PERMIT_INIT;
        c->grant = (band_admit_grant)BAND_ADMIT_GRANT_INIT;
        c->body_grant = (band_admit_grant)BAND_ADMIT_GRANT_INIT;
        c->url = c->t->source;
        c->local = is_local(c->t->source, &path);
        c->path = (char *)path;
        if (c->t->result != TILE_PENDING) {
            c->state = TS_FINISHED;
            if (c->t->result == TILE_SKIPPED)
                st->skipped++;
        }
    }
    if (cfg->opts->log != NULL) {
        p->log = jlog_open(cfg->opts->log, err, sizeof(err));
        if (p->log == NULL) {
            fprintf(stderr, "band-pipe: --log: %s\n", err);
            goto out;
        }
        for (size_t i = 0; i < cfg->ntiles; i++)
            if (cfg->tiles[i].result == TILE_SKIPPED)
                jlog_event(p->log, &cfg->tiles[i], "tile_skipped", -1, band_now(), p->t0);
    }
    if (cfg->opts->verify) {
        struct verify_limits vl = {p->z->fd_budget, p->z->limit[BUDGET_MEMORY], budgeted_bytes, p};
        if (verify_start(&p->verify, &vl, err, sizeof(err)) != 0) {
            fprintf(stderr, "band-pipe: --verify: %s\n", err);
            goto out;
        }
    }

    if (uv_loop_init(&p->loop) != 0) {
        fprintf(stderr, "band-pipe: cannot set up the event loop\n");
        goto out;
    }
    p->loop_inited = 1;
    if (band_uv_create(&p->bu, &p->loop) != 0 || curl_uv_create(&p->loop, &p->cu) != 0) {
        fprintf(stderr, "band-pipe: cannot set up the event loop\n");
        goto out;
    }
    curl_multi_setopt(
        curl_uv_multi(p->cu), CURLMOPT_MAXCONNECTS,
        (long)(p->z->connections_auto ? p->z->connections_max : p->z->limit[BUDGET_CONNECTIONS]));
    uv_async_init(&p->loop, &p->done_async, on_jobs_done);
    p->done_async.data = p;
    uv_signal_init(&p->loop, &p->sigint);
    uv_signal_init(&p->loop, &p->sigterm);
    p->sigint.data = p->sigterm.data = p;
    uv_signal_start(&p->sigint, on_signal, SIGINT);
    uv_signal_start(&p->sigterm, on_signal, SIGTERM);
    uv_timer_init(&p->loop, &p->sampler);
    p->sampler.data = p;
    uv_timer_init(&p->loop, &p->pacer);
    p->pacer.data = p;
    p->rate_tail = &p->rate_head;
    uv_timer_start(&p->sampler, on_sample, STATS_SAMPLE_NS / BAND_MSEC,
                   STATS_SAMPLE_NS / BAND_MSEC);
    p->to_decode.p = p;
    p->to_write.p = p;

    double cpu0 = thread_cpu_seconds();
    band_time w0 = band_now();
    dispatch_next(&p->to_decode);
    dispatch_next(&p->to_write);
    feed(p);
    maybe_end(p); /* nothing to do at all (every tile skipped) */
    uv_run(&p->loop, UV_RUN_DEFAULT);
    band_time wall = band_now() - w0;
    res->loop_cpu_share = wall > 0 ? (thread_cpu_seconds() - cpu0) / ((double)wall / 1e9) : 0;
    res->cpu_borrowed = atomic_load(&p->cpu_borrowed);
    if (p->cfg->progress != NULL)
        progress_clear(p->cfg->progress);
    st->t_end = band_now();
    stats_settle(st, st->t_end);
    st->allocated = atomic_load(&p->allocated);
    st->peak_allocated = atomic_load(&p->allocated_peak);
    res->interrupted = p->stopping;
    st->pending = st->total - st->done - st->failed - st->skipped - st->abandoned;
    ret = 0;

out:
    if (p->verify != NULL) {
        struct verify_result vr;
        if (verify_stop(p->verify, &vr) == 0) {
            if (vr.peak_fds > st->peak_fds)
                st->peak_fds = vr.peak_fds;
            if (vr.peak_rss > st->peak_rss)
                st->peak_rss = vr.peak_rss;
            if (vr.violations > 0) {
                res->verify_failed = 1;
                snprintf(res->verify_text, sizeof(res->verify_text), "%s", vr.first_violation);
            }
        }
    }
    if (p->bu != NULL) {
        if (!band_uv_is_closed(p->bu)) {
            (void)band_uv_close(p->bu, on_uv_closed, p);
            uv_run(&p->loop, UV_RUN_DEFAULT);
        }
        (void)band_uv_destroy(p->bu);
    }
    if (p->loop_inited) {
        uv_run(&p->loop, UV_RUN_NOWAIT);
        (void)uv_loop_close(&p->loop);
    }
    if (p->log != NULL && jlog_close(p->log) != 0)
        res->log_failed = 1;
    free_prims(p);
    pthread_mutex_destroy(&p->done_lock);
    free(p->ctx);
    free(p);
    return ret;
}

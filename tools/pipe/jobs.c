/* SPDX-License-Identifier: MIT */
/*
 * jobs.c - the work that runs on worker threads: decode+reproject on the cpu executor,
 * the write on the disk executor. A job touches only its own tile context; the loop
 * counts and moves the tile on once jobs_post() handed it back.
 */
#include "pipe_internal.h"

#include <stdio.h>
#include <string.h>

void jobs_post(struct tctx *c)
{
    struct pipe *p = c->p;
    pthread_mutex_lock(&p->done_lock);
    c->done_next = NULL;
    *p->done_tail = c;
    p->done_tail = &c->done_next;
    pthread_mutex_unlock(&p->done_lock);
    uv_async_send(&p->done_async);
}

/* A large warp borrows the cpu slots that nobody waits for, one warp thread for each, so
 * that a core does not idle while one large tile keeps the other busy: at the start,
 * while tiles still trickle in, and at the end. Try-acquire never passes a queued
 * request, so a tile waiting for its cpu slot is never delayed by a borrow it did not
 * see; one that comes later waits at most for this warp. Small warps gain nothing. */
#define BORROW_MIN_BYTES ((uint64_t)8 << 20)
#define BORROW_MAX       15u

static unsigned borrow_cpu(struct pipe *p, uint64_t warped_bytes)
{
    unsigned n = 0;
    if (warped_bytes < BORROW_MIN_BYTES)
        return 0;
    while (n < BORROW_MAX && band_sem_try_acquire(p->cpu, 1) == 0)
        n++;
    return n;
}

/* Decode every pixel, free the body (its bytes go back to the budget at once), reproject,
 * free the decoded raster, and keep only the reprojected raster's bytes reserved. */
void jobs_decode(band_job *job)
{
    struct tctx *c = job->arg;
    struct pipe *p = c->p;
    uint64_t dec = 0, warped = 0;
    c->job_rc = 0;
    c->job_detail[0] = '\0';
    if (raster_decode(c->body, c->body_len, &c->decoded, &dec, c->job_detail,
                      sizeof(c->job_detail)) != 0) {
        c->job_rc = -1;
        c->job_reason = REASON_CORRUPT;
        jobs_post(c);
        return;
    }
    pipe_alloc_add(p, dec);
    fetch_free_body(c);
    unsigned borrowed = borrow_cpu(p, c->t->warped_bytes);
    int wrc = raster_warp(c->decoded, p->o->crs, (enum raster_resampling)p->o->resampling,
                          1 + borrowed, &c->warped, &warped, c->job_detail, sizeof(c->job_detail));
    if (borrowed > 0) {
        (void)band_sem_release(p->cpu, borrowed);
        atomic_fetch_add_explicit(&p->cpu_borrowed, borrowed, memory_order_relaxed);
    }
    if (wrc != 0) {
        c->job_rc = -1;
        c->job_reason = REASON_WARP;
    } else {
        pipe_alloc_add(p, warped);
    }
    /* Keep reserved only what stays: the reprojected raster (the body's bytes went back
     * with its buffer; the decoded raster's and the warp buffers' go back now). */
    if (p->bytes_budgeted)
        (void)band_admit_reconcile(&c->grant, band_budget_sem(p->memory), warped);
    raster_free(c->decoded);
    c->decoded = NULL;
    pipe_alloc_sub(p, dec);
    c->t->warped_bytes = warped;
    jobs_post(c);
}

/* Write to a temporary name and rename: nothing half-written is ever left. */
void jobs_write(band_job *job)
{
    struct tctx *c = job->arg;
    const struct pipe *p = c->p;
    uint64_t bytes = 0;
    c->job_rc = 0;
    c->job_detail[0] = '\0';
    if (raster_write(c->warped, c->t->out_path, (enum raster_codec)p->o->compress, &bytes,
                     c->job_detail, sizeof(c->job_detail)) != 0) {
        c->job_rc = -1;
        c->job_reason = REASON_WRITE;
    }
    c->t->output_bytes = bytes;
    jobs_post(c);
}

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
    if (raster_warp(c->decoded, p->o->crs, &c->warped, &warped, c->job_detail,
                    sizeof(c->job_detail)) != 0) {
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
    uint64_t bytes = 0;
    c->job_rc = 0;
    c->job_detail[0] = '\0';
    if (raster_write(c->warped, c->t->out_path, &bytes, c->job_detail, sizeof(c->job_detail)) !=
        0) {
        c->job_rc = -1;
        c->job_reason = REASON_WRITE;
    }
    c->t->output_bytes = bytes;
    jobs_post(c);
}

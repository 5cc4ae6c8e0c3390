/* SPDX-License-Identifier: MIT */
/*
 * verify.c - the --verify sampler thread (verify.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "verify.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errtext.h"
#include "procfs.h"

struct verify {
    struct verify_limits lim;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop; /* under mu */
    band_time t0;
    struct verify_result r; /* the sampler thread's until it is joined */
};

static void sample(struct verify *v)
{
    uint64_t fds = procfs_open_fds(), rss = procfs_rss();
    uint64_t bytes = v->lim.budgeted_bytes ? v->lim.budgeted_bytes(v->lim.arg) : 0;
    struct verify_result *r = &v->r;
    r->samples++;
    if (fds > r->peak_fds)
        r->peak_fds = fds;
    if (rss > r->peak_rss)
        r->peak_rss = rss;
    if (bytes > r->peak_bytes)
        r->peak_bytes = bytes;
    int over_fds = v->lim.fd_budget > 0 && fds > v->lim.fd_budget;
    int over_bytes = v->lim.bytes_budget > 0 && bytes > v->lim.bytes_budget;
    if (!over_fds && !over_bytes)
        return;
    r->violations++;
    if (r->first_violation[0] != '\0')
        return;
    band_time t = band_now() - v->t0;
    if (t <= 0)
        t = 1; /* 0 means "none" */
    r->first_violation_t = t;
    double sec = (double)t / (double)BAND_SEC;
    if (over_fds)
        snprintf(r->first_violation, sizeof r->first_violation,
                 "at %.3f s: %llu open descriptors > %llu", sec, (unsigned long long)fds,
                 (unsigned long long)v->lim.fd_budget);
    else
        snprintf(r->first_violation, sizeof r->first_violation,
                 "at %.3f s: %llu budgeted bytes > %llu", sec, (unsigned long long)bytes,
                 (unsigned long long)v->lim.bytes_budget);
}

static void *run(void *arg)
{
    struct verify *v = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&v->mu);
    while (!v->stop) {
        next.tv_nsec += VERIFY_PERIOD_NS;
        if (next.tv_nsec >= BAND_SEC) {
            next.tv_sec += 1;
            next.tv_nsec -= BAND_SEC;
        }
        while (!v->stop && pthread_cond_timedwait(&v->cv, &v->mu, &next) != ETIMEDOUT)
            ;
        if (v->stop)
            break;
        pthread_mutex_unlock(&v->mu);
        sample(v);
        /* after a stall (a suspended process), resume from now rather than catch up */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec + 1)
            next = now;
        pthread_mutex_lock(&v->mu);
    }
    pthread_mutex_unlock(&v->mu);
    sample(v);
    return NULL;
}

int verify_start(struct verify **out, const struct verify_limits *l, char *err, size_t errlen)
{
    if (out == NULL || l == NULL) {
        snprintf(err, errlen, "verify: no limits given");
        return -1;
    }
    *out = NULL;
    struct verify *v = calloc(1, sizeof *v);
    if (v == NULL) {
        snprintf(err, errlen, "verify: out of memory");
        return -1;
    }
    v->lim = *l;
    v->t0 = band_now();
    pthread_condattr_t ca;
    int e = pthread_condattr_init(&ca);
    if (e == 0) {
        e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        if (e == 0)
            e = pthread_cond_init(&v->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    if (e != 0) {
        snprintf(err, errlen, "verify: condition variable: %s", errtext(e));
        free(v);
        return -1;
    }
    e = pthread_mutex_init(&v->mu, NULL);
    if (e != 0) {
        snprintf(err, errlen, "verify: mutex: %s", errtext(e));
        pthread_cond_destroy(&v->cv);
        free(v);
        return -1;
    }
    sample(v); /* before the thread exists: no race on v->r */
    e = pthread_create(&v->thread, NULL, run, v);
    if (e != 0) {
        snprintf(err, errlen, "verify: cannot start the sampler thread: %s", errtext(e));
        pthread_mutex_destroy(&v->mu);
        pthread_cond_destroy(&v->cv);
        free(v);
        return -1;
    }
    *out = v;
    return 0;
}

int verify_stop(struct verify *v, struct verify_result *out)
{
    if (v == NULL) {
        if (out != NULL)
            memset(out, 0, sizeof *out);
        return 0;
    }
    pthread_mutex_lock(&v->mu);
    v->stop = 1;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
    pthread_join(v->thread, NULL);
    if (out != NULL)
        *out = v->r;
    pthread_mutex_destroy(&v->mu);
    pthread_cond_destroy(&v->cv);
    free(v);
    return 0;
}

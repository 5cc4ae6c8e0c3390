/* SPDX-License-Identifier: MIT */
/*
 * test_fair_util.h - request recorders shared by the band_fair unit tests.
 *
 * A struct freq is a band_fair_acquire_op with what it asks for and a wake counter; its
 * wake appends the request's id to a shared grant log, so a test can read the order in which
 * requests were completed. The tests that use the log are single-threaded (wakes run on the
 * releasing thread).
 */
#ifndef BAND_TEST_FAIR_UTIL_H
#define BAND_TEST_FAIR_UTIL_H

#include "test.h"

#include <string.h>

#include "prim/fair/fair_internal.h"

#define FAIR_LOG_MAX 8192

struct fair_log {
    unsigned len;
    int ids[FAIR_LOG_MAX];
    uint64_t keys[FAIR_LOG_MAX];
    int statuses[FAIR_LOG_MAX];
};

struct freq;
typedef void freq_hook_fn(struct freq *q);

struct freq {
    band_fair_acquire_op r; /* first member */
    uint64_t key;           /* what freq_submit() asks for */
    uint32_t cls;
    uint64_t n;
    int id;
    atomic_int wakes;
    atomic_int status;
    struct fair_log *log;
    freq_hook_fn *hook;
    void *ctx;
};

static inline void freq_wake(band_waiter *w)
{
    struct freq *q = (struct freq *)(void *)w;
    int st = band_waiter_status(w);
    atomic_store(&q->status, st);
    if (q->log != NULL && q->log->len < FAIR_LOG_MAX) {
        q->log->ids[q->log->len] = q->id;
        q->log->keys[q->log->len] = q->key;
        q->log->statuses[q->log->len] = st;
        q->log->len++;
    }
    if (q->hook != NULL)
        q->hook(q);
    atomic_fetch_add(&q->wakes, 1);
}

static inline void freq_init(struct freq *q, int id, struct fair_log *log, uint64_t key,
                             uint32_t cls, uint64_t n)
{
    memset(q, 0, sizeof(*q));
    band_waiter_init(&q->r.w, freq_wake, q);
    q->key = key;
    q->cls = cls;
    q->n = n;
    q->id = id;
    atomic_init(&q->wakes, 0);
    atomic_init(&q->status, 12345);
    q->log = log;
}

/* Submit @q (freq_init()) to @f: band_fair_acquire_async() with its key, class and units. */
static inline int freq_submit(band_fair *f, struct freq *q)
{
    return band_fair_acquire_async(f, q->key, q->cls, q->n, &q->r);
}

/* Create a fair with @capacity units, @classes classes, and base quantum @quantum. */
static inline band_fair *fair_new(uint64_t capacity, uint32_t classes, uint64_t quantum)
{
    band_fair_opts opts = {0};
    opts.classes = classes;
    opts.quantum = quantum;
    band_fair *f = NULL;
    if (band_fair_create(&f, capacity, &opts) != 0)
        return NULL;
    return f;
}

static inline int fair_set(band_fair *f, uint64_t key, uint32_t weight, uint64_t cap,
                           uint64_t reserve)
{
    band_fair_key_opts o = {weight, cap, reserve};
    return band_fair_key_set(f, key, &o);
}

#endif /* BAND_TEST_FAIR_UTIL_H */

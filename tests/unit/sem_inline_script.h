/* SPDX-License-Identifier: MIT */
/*
 * sem_inline_script.h - one scripted run over band_sem_try_acquire() and band_sem_release(),
 * included by two translation units: test_sem_inline.c (the header's inline fast path)
 * and sem_inline_exported.c (BAND_NO_INLINE: the exported functions). Each defines
 * SEM_INLINE_SCRIPT as the name of the function to generate.
 *
 * The script drives a semaphore (or a budget's semaphore) through every state the fast
 * paths must tell apart: permits available or short, a waiter queued (SLOW), a debt,
 * close, requests of 0, 1, a few, 2^32 and 2^32 + 1 (the add-first limit), the maximum and
 * above it, releases that overflow, and a NULL semaphore. After every call it records the
 * answer, the permits available and the refusal counters, so that the two runs can be
 * compared entry by entry.
 */
#include <string.h>

#include <band/budget.h>
#include <band/sem.h>

#include "sem_inline_log.h"

static uint64_t sis_next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * UINT64_C(2685821657736338717);
}

static void sis_noop_wake(band_waiter *w)
{
    (void)w;
}

static void sis_record(struct sem_inline_log *log, band_sem *s, int rc)
{
    band_sem_stats st;
    struct sem_inline_entry *e;
    if (log->n >= SEM_INLINE_LOG_MAX)
        return;
    e = &log->e[log->n++];
    memset(e, 0, sizeof(*e));
    e->rc = rc;
    if (s != NULL && band_sem_get_stats(s, &st) == 0) {
        e->available = st.available;
        e->try_refusals = st.try_refusals;
        e->too_big = st.too_big;
        e->debt = st.debt;
        e->waiters = st.waiters;
        e->grants = st.grants;
    }
}

int SEM_INLINE_SCRIPT(uint64_t seed, int budget, struct sem_inline_log *log);

int SEM_INLINE_SCRIPT(uint64_t seed, int budget, struct sem_inline_log *log)
{
    static const uint64_t sizes[] = {0,
                                     1,
                                     1,
                                     1,
                                     2,
                                     3,
                                     7,
                                     UINT64_C(1) << 32,
                                     (UINT64_C(1) << 32) + 1,
                                     BAND_MAX_UNITS - 1,
                                     BAND_MAX_UNITS,
                                     BAND_MAX_UNITS + 1,
                                     UINT64_MAX};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    band_sem *s = NULL;
    band_budget *b = NULL;
    band_waiter w;
    int pending = 0;
    uint64_t x = seed | 1;

    log->n = 0;
    if (budget) {
        if (band_budget_create(&b, 16, NULL) != 0)
            return -1;
        s = band_budget_sem(b);
    } else if (band_sem_create(&s, 4, NULL) != 0) {
        return -1;
    }
    band_waiter_init(&w, sis_noop_wake, NULL);
    for (int i = 0; i < 4000; i++) {
        uint64_t r = sis_next(&x);
        uint64_t n = sizes[(r >> 8) % (uint64_t)nsizes];
        switch (r % 16) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4:
            sis_record(log, s, band_sem_try_acquire(s, n));
            break;
        case 5:
        case 6:
        case 7:
        case 8:
        case 9:
            sis_record(log, s, band_sem_release(s, n));
            break;
        case 10: /* queue a waiter: SLOW until it is granted or leaves */
            if (!pending) {
                int rc = band_sem_acquire_async(s, 1 + (r >> 20) % 8, &w);
                pending = rc == BAND_PENDING;
                sis_record(log, s, rc);
            }
            break;
        case 11: /* withdraw it (it may have been granted meanwhile: then it holds) */
            if (pending) {
                sis_record(log, s, band_waiter_cancel(&w, BAND_ECANCELED));
                pending = 0;
            }
            break;
        case 12: /* a debt: SLOW until repaid */
            if (!budget)
                sis_record(log, s, band_sem_reduce(s, 1 + (r >> 20) % 4));
            break;
        case 13: /* calls on NULL: the fast paths refuse them as the functions do */
            sis_record(log, NULL, band_sem_try_acquire(NULL, n));
            sis_record(log, NULL, band_sem_release(NULL, n));
            break;
        case 14:
            if ((r >> 20) % 64 == 0)
                sis_record(log, s, band_sem_close(s));
            break;
        default:
            sis_record(log, s, (int)band_sem_drain(s, (r >> 20) % 4));
            break;
        }
    }
    if (pending) {
        (void)band_waiter_cancel(&w, BAND_ECANCELED);
        (void)band_sem_close(s);
    }
    if (budget)
        return band_budget_destroy(b);
    return band_sem_destroy(s);
}

/* SPDX-License-Identifier: MIT */
/*
 * fair_inline_script.h - one scripted run over band_fair_handle_try_acquire() and
 * band_fair_handle_release(), included by two translation units: test_fair_inline.c (the
 * header's inline fast paths) and fair_inline_exported.c (BAND_NO_INLINE: the exported
 * functions). Each defines FAIR_INLINE_SCRIPT as the name of the function to generate.
 *
 * The script drives a fair through every state the fast paths must tell apart: a key
 * below and at its cap, a key with a reservation, a class's headroom reached, the whole
 * capacity in use, a request queued (the gate shut), close, requests of 0, of the limit
 * and above it, a class out of range, releases of 0 and of more than the key holds, and a
 * NULL handle. After every call it records the answer, the units in use, the refusal
 * counters and every key's and class's units and grant counters, so that the two runs
 * can be compared entry by entry.
 */
#include <string.h>

#include <band/fair.h>

#include "fair_inline_log.h"

static uint64_t fis_next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * UINT64_C(2685821657736338717);
}

static void fis_wake(band_waiter *w)
{
    (void)w;
}

static void fis_record(struct fair_inline_log *log, band_fair *f, int op, int rc)
{
    band_fair_stats st;
    struct fair_inline_entry *e;
    if (log->n >= FAIR_INLINE_LOG_MAX)
        return;
    e = &log->e[log->n++];
    memset(e, 0, sizeof(*e));
    e->rc = rc;
    e->op = op;
    if (band_fair_get_stats(f, &st) != 0) {
        e->rc = 1000;
        return;
    }
    e->in_use = st.in_use;
    e->waiters = st.waiters;
    e->try_refusals = st.try_refusals;
    e->too_big = st.too_big;
    for (int c = 0; c < 2; c++) {
        e->cls_granted[c] = st.cls[c].granted;
        e->cls_units[c] = st.cls[c].granted_units;
    }
    for (int k = 0; k < FAIR_INLINE_KEYS; k++) {
        band_fair_key_stats ks;
        if (band_fair_key_get_stats(f, (uint64_t)k + 1, &ks) != 0) {
            e->rc = 1001;
            return;
        }
        e->held[k] = ks.held;
        e->granted[k] = ks.granted;
        e->units[k] = ks.granted_units;
    }
}

int FAIR_INLINE_SCRIPT(uint64_t seed, struct fair_inline_log *log);

int FAIR_INLINE_SCRIPT(uint64_t seed, struct fair_inline_log *log)
{
    enum { CAP = 20, NH = 5 };
    band_fair *f = NULL;
    band_fair_opts o;
    band_fair_key_opts ko;
    band_fair_handle *h[NH] = {NULL};
    band_fair_acquire_op op;
    int queued = 0, rc;
    uint64_t x = seed | 1;
    log->n = 0;
    memset(&o, 0, sizeof(o));
    o.classes = 2;
    o.headroom[1] = 4; /* class 1 may fill 16 of the 20 units */
    if (band_fair_create(&f, CAP, &o) != 0)
        return 1;
    memset(&ko, 0, sizeof(ko));
    ko.weight = 1;
    ko.cap = 5; /* key 2: a cap below the capacity */
    if (band_fair_key_set(f, 2, &ko) != 0)
        return 2;
    ko.cap = 8;
    ko.reserve = 3; /* key 3: a reservation, always the lock */
    if (band_fair_key_set(f, 3, &ko) != 0)
        return 3;
    /* keys 1..3, two handles on key 2; key 4 queues requests without a handle */
    for (int i = 0; i < NH; i++)
        if (band_fair_handle_get(f, i < 3 ? (uint64_t)i + 1 : 2, &h[i]) != 0)
            return 4;
    for (int step = 0; step < 6000; step++) {
        uint64_t r = fis_next(&x);
        band_fair_handle *hh = h[r % NH];
        uint32_t cls = (uint32_t)((r >> 8) % 8 == 0 ? 2 + (r >> 11) % 3 : (r >> 8) % 2);
        uint64_t n;
        switch ((r >> 16) % 16) {
        case 0:
            n = 0;
            break;
        case 1:
            n = CAP + 1 + (r >> 24) % 3; /* above every limit */
            break;
        case 2:
            n = 16 + (r >> 24) % 5; /* about the class limits */
            break;
        default:
            n = 1 + (r >> 24) % 4;
        }
        if ((r >> 32) % 64 == 0)
            hh = NULL;
        switch ((r >> 40) % 16) {
        case 0: /* queue a request the capacity cannot take now (shuts the gate), or drop it */
            if (!queued) {
                band_waiter_init(&op.w, fis_wake, NULL);
                rc = band_fair_acquire_async(f, 4, 0, CAP, &op);
                if (rc == BAND_PENDING)
                    queued = 1;
                else if (rc == 0)
                    rc = band_fair_release(f, 4, CAP);
            } else {
                rc = band_waiter_cancel(&op.w, BAND_ECANCELED);
                if (rc == BAND_EALREADY) /* granted by a release: give it back */
                    rc = band_fair_release(f, 4, CAP);
                queued = 0;
            }
            fis_record(log, f, 0, rc);
            break;
        case 1:
        case 2:
        case 3:
        case 4:
        case 5:
        case 6: /* release */
            fis_record(log, f, 1, band_fair_handle_release(hh, n % 8));
            break;
        default: /* try */
            fis_record(log, f, 2, band_fair_handle_try_acquire(hh, cls, n));
        }
        if (step == 5000)
            fis_record(log, f, 3, band_fair_close(f));
    }
    if (queued) {
        rc = band_waiter_cancel(&op.w, BAND_ECANCELED);
        if (rc == BAND_EALREADY)
            band_fair_release(f, 4, CAP);
    }
    for (int i = 0; i < NH; i++) {
        band_fair_key_stats ks;
        if (band_fair_key_get_stats(f, i < 3 ? (uint64_t)i + 1 : 2, &ks) != 0)
            return 5;
        if (ks.held > 0 && band_fair_handle_release(h[i], ks.held) != 0)
            return 6;
    }
    for (int i = 0; i < NH; i++)
        band_fair_handle_put(h[i]);
    band_fair_close(f);
    return band_fair_destroy(f) == 0 ? 0 : 7;
}

/*
 * overload.c - answers for overload, and the front door that gives them.
 *
 * Design notes
 * ------------
 * The door decides with the cheapest checks first and takes nothing it might have to
 * give back, except one case: permits are taken before tokens (a permit try is a CAS and
 * its release another), because a rate token spent on a request that then finds no
 * capacity would be lost for good, while a permit given back a few nanoseconds later is
 * not. Counters are relaxed atomics: the door takes no lock of its own.
 *
 * Retry-After for BUSY and SHED: a request queued now would start after about
 * (waiters + n) / concurrency mean hold times. The mean hold time is an exponential moving
 * average (1/8) of what band_door_done() measured; concurrency is the most permits the
 * door has seen held at once (a plain semaphore does not know its own capacity).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "band/histo.h"
#include "band/overload.h"
#include "core/internal.h"

/* ---------------------------------------------------------------- answers */

static const int http_of[BAND_ANSWER_KINDS] = {200, 202, 503, 429, 503, 413, 503};

band_answer band_answer_from(int rc, int source, band_time retry_after)
{
    band_answer a;
    a.reason = rc;
    a.retry_after = retry_after > 0 ? retry_after : 0;
    switch (rc) {
    case 0:
        a.kind = BAND_ANSWER_ACCEPT;
        a.retry_after = 0;
        break;
    case BAND_EAGAIN:
    case BAND_ETIMEDOUT:
        a.kind = source == BAND_FROM_RATE ? BAND_ANSWER_OVER_QUOTA : BAND_ANSWER_BUSY;
        break;
    case BAND_E2BIG:
        a.kind = BAND_ANSWER_TOO_BIG;
        a.retry_after = 0; /* it never fits: retrying is pointless */
        break;
    case BAND_ECLOSED:
    case BAND_ECANCELED:
        a.kind = BAND_ANSWER_GONE;
        a.retry_after = 0;
        break;
    default:
        a.kind = BAND_ANSWER_BUSY;
        break;
    }
    a.http_status = http_of[a.kind];
    return a;
}

uint32_t band_answer_retry_after_s(const band_answer *a)
{
    if (a == NULL || (a->kind != BAND_ANSWER_BUSY && a->kind != BAND_ANSWER_OVER_QUOTA &&
                      a->kind != BAND_ANSWER_SHED))
        return 0;
    band_time s = a->retry_after / BAND_SEC + (a->retry_after % BAND_SEC != 0);
    if (s < 1)
        return 1;
    return s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

const char *band_answer_name(int kind)
{
    static const char *const names[BAND_ANSWER_KINDS] = {"accept", "later",   "busy", "over_quota",
                                                         "shed",   "too_big", "gone"};
    return kind >= 0 && kind < BAND_ANSWER_KINDS ? names[kind] : "?";
}

/* ---------------------------------------------------------------- the door */

struct band_door {
    band_sem *sem;
    band_rate *rate;
    band_chan *backlog;
    int classes;
    uint64_t headroom[BAND_DOOR_CLASSES];
    band_time wait;
    band_histo *hold;
    atomic_int closed;
    _Atomic int64_t mean_hold;  /* ns, 0 until the first measurement */
    _Atomic uint64_t in_flight; /* permits handed out and not yet done */
    _Atomic uint64_t peak;      /* the most ever in flight */
    _Atomic uint64_t answers[BAND_ANSWER_KINDS];
    _Atomic uint64_t admitted[BAND_DOOR_CLASSES];
    _Atomic uint64_t refused[BAND_DOOR_CLASSES];
    _Atomic uint64_t waited;
};

int band_door_create(band_door **out, const band_door_opts *o)
{
    if (out == NULL || o == NULL || o->classes < 0 || o->classes > BAND_DOOR_CLASSES ||
        o->wait < 0 || (o->backlog != NULL && o->sem == NULL))
        return BAND_EINVAL;
    int classes = o->classes == 0 ? 1 : o->classes;
    for (int c = 1; c < classes; c++)
        if (o->headroom[c] < o->headroom[c - 1])
            return BAND_EINVAL;
    band_door *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return BAND_ENOMEM;
    d->sem = o->sem;
    d->rate = o->rate;
    d->backlog = o->backlog;
    d->classes = classes;
    memcpy(d->headroom, o->headroom, sizeof(d->headroom));
    d->wait = o->wait;
    d->hold = o->hold;
    *out = d;
    return 0;
}

int band_door_destroy(band_door *d)
{
    free(d);
    return 0;
}

int band_door_close(band_door *d)
{
    if (d == NULL)
        return BAND_EINVAL;
    atomic_store_explicit(&d->closed, 1, memory_order_release);
    return 0;
}

static void count(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* The Retry-After estimate for a request of @n that finds no room. */
static band_time busy_retry_after(band_door *d, uint64_t n)
{
    int64_t hold = atomic_load_explicit(&d->mean_hold, memory_order_relaxed);
    if (hold <= 0 || d->sem == NULL)
        return BAND_SEC;
    band_sem_stats st;
    uint64_t waiters = band_sem_get_stats(d->sem, &st) == 0 ? st.waiting_units : 0;
    uint64_t conc = atomic_load_explicit(&d->peak, memory_order_relaxed);
    if (conc == 0)
        conc = 1;
    uint64_t rounds = (waiters + n + conc - 1) / conc;
    if (rounds > (uint64_t)(INT64_MAX / hold))
        return INT64_MAX;
    return (band_time)rounds * hold;
}

static void note_in_flight(band_door *d, uint64_t n)
{
    uint64_t now = atomic_fetch_add_explicit(&d->in_flight, n, memory_order_relaxed) + n;
    uint64_t peak = atomic_load_explicit(&d->peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(
                             &d->peak, &peak, now, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* Record @a for class @cls and store it. */
static int answer(band_door *d, int cls, band_answer a, band_answer *ans)
{
    count(&d->answers[a.kind]);
    if (a.kind == BAND_ANSWER_ACCEPT)
        count(&d->admitted[cls]);
    else if (a.kind != BAND_ANSWER_LATER)
        count(&d->refused[cls]);
    *ans = a;
    return 0;
}

static band_answer make(int kind, int reason, band_time retry_after)
{
    band_answer a = {kind, http_of[kind], retry_after, reason};
    return a;
}

/* No permits now: the backlog if it has room, else BUSY (or TOO_BIG, GONE). */
static int no_room(band_door *d, int cls, int rc, uint64_t n, const void *job, band_answer *ans)
{
    if (rc == BAND_EAGAIN || rc == BAND_ETIMEDOUT) {
        if (job != NULL && d->backlog != NULL) {
            int qrc = band_chan_try_send(d->backlog, job, 0);
            if (qrc == 0)
                return answer(d, cls, make(BAND_ANSWER_LATER, 0, 0), ans);
        }
        return answer(d, cls, make(BAND_ANSWER_BUSY, rc, busy_retry_after(d, n)), ans);
    }
    return answer(d, cls, band_answer_from(rc, BAND_FROM_CAPACITY, 0), ans);
}

int band_door_admit(band_door *d, int cls, uint64_t n, const void *job, band_permit *permit,
                    band_answer *ans, band_time deadline, band_cancel *cancel)
{
    if (d == NULL || ans == NULL || n == 0 || cls < 0 || cls >= d->classes ||
        (d->sem != NULL && (permit == NULL || permit->sem != NULL)))
        return BAND_EINVAL;
    if (atomic_load_explicit(&d->closed, memory_order_acquire))
        return answer(d, cls, make(BAND_ANSWER_GONE, BAND_ECLOSED, 0), ans);

    int waited = 0, have_tokens = 0;
    if (d->sem != NULL) {
        /* Shed first: class cls must leave headroom[cls] permits for the classes above. */
        uint64_t avail = band_sem_available(d->sem);
        if (d->headroom[cls] > 0 && (avail < n || avail - n < d->headroom[cls]))
            return answer(d, cls, make(BAND_ANSWER_SHED, BAND_EAGAIN, busy_retry_after(d, n)), ans);
        int rc = band_permit_try_acquire(permit, d->sem, n);
        if (rc == BAND_EAGAIN && d->wait > 0) {
            /* Never wait for permits that a rate refusal would then throw away: take the
             * tokens first. If the wait fails they stay spent (the price of waiting). */
            if (d->rate != NULL) {
                band_time retry = 0;
                int rrc = band_rate_try(d->rate, n, &retry);
                if (rrc != 0)
                    return answer(d, cls, band_answer_from(rrc, BAND_FROM_RATE, retry), ans);
                have_tokens = 1;
            }
            band_time until = band_deadline_after(d->wait);
            rc =
                band_permit_acquire(permit, d->sem, n, until < deadline ? until : deadline, cancel);
            waited = rc == 0;
        }
        if (rc != 0)
            return no_room(d, cls, rc, n, job, ans);
    }
    if (d->rate != NULL && !have_tokens) {
        band_time retry = 0;
        int rrc = band_rate_try(d->rate, n, &retry);
        if (rrc != 0) {
            if (d->sem != NULL)
                band_permit_release(permit); /* both or neither */
            return answer(d, cls, band_answer_from(rrc, BAND_FROM_RATE, retry), ans);
        }
    }
    if (waited)
        count(&d->waited);
    if (d->sem != NULL)
        note_in_flight(d, n);
    return answer(d, cls, make(BAND_ANSWER_ACCEPT, 0, 0), ans);
}

int band_door_done(band_door *d, band_permit *permit, band_time admitted_at)
{
    if (d == NULL || permit == NULL)
        return BAND_EINVAL;
    uint64_t n = permit->count;
    if (permit->sem != NULL) {
        band_permit_release(permit);
        atomic_fetch_sub_explicit(&d->in_flight, n, memory_order_relaxed);
    }
    if (admitted_at > 0) {
        band_time now = band_now();
        int64_t sample = now > admitted_at ? now - admitted_at : 0;
        if (d->hold != NULL)
            band_histo_record(d->hold, (uint64_t)sample);
        int64_t old = atomic_load_explicit(&d->mean_hold, memory_order_relaxed);
        int64_t next;
        do {
            next = old == 0 ? sample : old + (sample - old) / 8;
            if (next <= 0)
                next = 1;
        } while (!atomic_compare_exchange_weak_explicit(
            &d->mean_hold, &old, next, memory_order_relaxed, memory_order_relaxed));
    }
    return 0;
}

int band_door_get_stats(const band_door *cd, band_door_stats *out)
{
    if (cd == NULL || out == NULL)
        return BAND_EINVAL;
    band_door *d = (band_door *)cd;
    memset(out, 0, sizeof(*out));
    for (int k = 0; k < BAND_ANSWER_KINDS; k++)
        out->answers[k] = atomic_load_explicit(&d->answers[k], memory_order_relaxed);
    for (int c = 0; c < BAND_DOOR_CLASSES; c++) {
        out->admitted[c] = atomic_load_explicit(&d->admitted[c], memory_order_relaxed);
        out->refused[c] = atomic_load_explicit(&d->refused[c], memory_order_relaxed);
    }
    out->waited = atomic_load_explicit(&d->waited, memory_order_relaxed);
    out->mean_hold = atomic_load_explicit(&d->mean_hold, memory_order_relaxed);
    return 0;
}

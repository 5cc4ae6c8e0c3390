/* SPDX-License-Identifier: MIT */
/*
 * front_door.c - the front door: every request gets an overload answer before its work
 * starts (band/front_door.h).
 *
 * Design notes
 * ------------
 * The door decides with the cheapest checks first and takes nothing it might have to
 * give back, except one case: permits are taken before tokens (a permit try is a CAS and
 * its release another), because a rate token spent on a request that then finds no
 * capacity would be lost for good, while a permit given back a few nanoseconds later is
 * not. That order holds on every path, the wait for permits included: tokens are taken
 * only once the permits are held, and a rate refusal then gives the permits back, so a
 * request ends holding both or neither whether its wait times out, a bound closes, or it
 * is shed. Before it waits the door reads the rate budget's counters (nothing taken): no
 * tokens now means OVER_QUOTA at once instead of a wait whose permits would be given
 * back. Counters are relaxed atomics: no admission takes a lock of the door's own (its
 * mutex guards only the name, for set_name and get_stats). Only an admission that waits
 * for permits counts itself in @waiting, which destroy reads to refuse while one is inside.
 *

 * A request that can never be admitted (more than a semaphore can hold, more than a
 * budget's capacity minus the class's headroom, more tokens than the rate's burst) is
 * TOO_BIG, never "retry later". Those checks read the bounds' counters, which takes their
 * locks briefly, so they run only on the paths that are refusing or about to wait; the
 * path that admits at once costs a CAS and one rate try as before.
 *
 * Retry-After for BUSY and SHED: a request queued now would start after about
 * (waiters + n) / concurrency mean hold times. The mean hold time is an exponential moving
 * average (1/8) of what band_front_door_done() measured; concurrency is the most permits the
 * door has seen held at once (a plain semaphore does not know its own capacity).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "band/front_door.h"
#include "band/histo.h"
#include "compose/answer_internal.h"
#include "core/internal.h"
#include "core/name.h"

struct band_front_door {
    band_sem *sem;
    band_rate *rate;
    band_chan *backlog;
    int classes;
    uint64_t headroom[BAND_FRONT_DOOR_CLASSES];
    band_time wait;
    band_histo *hold;
    atomic_int closed;
    _Atomic uint64_t waiting;   /* admissions waiting for permits now */
    _Atomic int64_t mean_hold;  /* ns, 0 until the first measurement */
    _Atomic uint64_t in_flight; /* permits handed out and not yet done */
    _Atomic uint64_t peak;      /* the most ever in flight */
    _Atomic uint64_t answers[BAND_ANSWER_KINDS];
    _Atomic uint64_t admitted[BAND_FRONT_DOOR_CLASSES];
    _Atomic uint64_t refused[BAND_FRONT_DOOR_CLASSES];
    _Atomic uint64_t waited;
    pthread_mutex_t name_lock; /* guards name */
    char name[BAND_NAME_MAX];
};

int band_front_door_create(band_front_door **out, const band_front_door_opts *opts)
{
    static const band_front_door_opts defaults;
    const band_front_door_opts *o = opts != NULL ? opts : &defaults;
    if (out == NULL || o->classes < 0 || o->classes > BAND_FRONT_DOOR_CLASSES || o->wait < 0 ||
        (o->backlog != NULL && o->sem == NULL))
        return BAND_EINVAL;
    int classes = o->classes == 0 ? 1 : o->classes;
    for (int c = 0; c < classes; c++)
        if (o->headroom[c] > BAND_MAX_UNITS || (c > 0 && o->headroom[c] < o->headroom[c - 1]))
            return BAND_EINVAL;
    band_front_door *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return BAND_ENOMEM;
    if (pthread_mutex_init(&d->name_lock, NULL) != 0) {
        free(d);
        return BAND_ENOMEM;
    }
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

int band_front_door_destroy(band_front_door *d)
{
    if (d == NULL)
        return 0;
    if (atomic_load_explicit(&d->waiting, memory_order_acquire) != 0)
        return BAND_EBUSY; /* an admission is waiting for permits inside the door */
    (void)pthread_mutex_destroy(&d->name_lock);
    free(d);
    return 0;
}

int band_front_door_set_name(band_front_door *d, const char *name)
{
    if (d == NULL)
        return BAND_EINVAL;
    return band__set_name(d->name, name, &d->name_lock);
}

int band_front_door_close(band_front_door *d)
{
    if (d == NULL)
        return BAND_EINVAL;
    atomic_store_explicit(&d->closed, 1, memory_order_release);
    return 0;
}

int band_front_door_is_closed(const band_front_door *d)
{
    return d != NULL && atomic_load_explicit(&d->closed, memory_order_acquire) != 0;
}

static void count(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* The Retry-After estimate for a request of @n that finds no room. */
static band_time busy_retry_after(band_front_door *d, uint64_t n)
{
    int64_t hold = atomic_load_explicit(&d->mean_hold, memory_order_relaxed);
    if (hold <= 0 || d->sem == NULL)
        return BAND_SEC;
    band_sem_stats st;
    uint64_t waiters = band_sem_get_stats(d->sem, &st) == 0 ? st.waiting_units : 0;
    uint64_t conc = atomic_load_explicit(&d->peak, memory_order_relaxed);
    if (conc == 0)
        conc = 1;
    uint64_t units; /* waiters + n, saturating: 2^64 - 1 units never drain anyway */
    if (__builtin_add_overflow(waiters, n, &units))
        units = UINT64_MAX;
    uint64_t rounds = units / conc + (units % conc != 0);
    if (rounds > (uint64_t)(INT64_MAX / hold))
        return INT64_MAX;
    return (band_time)rounds * hold;
}

static void note_in_flight(band_front_door *d, uint64_t n)
{
    uint64_t now = atomic_fetch_add_explicit(&d->in_flight, n, memory_order_relaxed) + n;
    uint64_t peak = atomic_load_explicit(&d->peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(
                             &d->peak, &peak, now, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* Record @a for class @cls and store it. */
static int answer(band_front_door *d, int cls, band_answer a, band_answer *ans)
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
    return band__answer_make(kind, reason, retry_after);
}

/* 1 when the semaphore can never give class @cls @n permits: more than any semaphore
 * holds, or than a budget's current capacity leaves after the class's headroom. */
static int sem_never_fits(band_front_door *d, int cls, uint64_t n)
{
    uint64_t h = d->headroom[cls]; /* <= BAND_MAX_UNITS (create checks it) */
    if (n > BAND_MAX_UNITS || h > BAND_MAX_UNITS - n)
        return 1;
    band_sem_stats st;
    return band_sem_get_stats(d->sem, &st) == 0 && st.is_budget &&
           (n > st.capacity || h > st.capacity - n);
}

/*
 * What the rate budget would answer for @n tokens now, read from its counters without
 * taking anything: 0 (they are there), BAND_E2BIG (more than the burst), BAND_ECLOSED, or
 * BAND_EAGAIN with *@retry the time until the missing whole tokens have flowed in (at most
 * one token interval above the bucket's exact figure, since the counters show whole
 * tokens only).
 */
static int rate_peek(band_front_door *d, uint64_t n, band_time *retry)
{
    band_rate_stats st;
    *retry = 0;
    if (band_rate_get_stats(d->rate, &st) != 0)
        return 0; /* cannot happen for a valid rate; the rate try decides then */
    if (st.closed)
        return BAND_ECLOSED;
    if (n > st.burst)
        return BAND_E2BIG;
    if (st.available >= n)
        return 0;
    uint64_t need = n - st.available, ns;
    if (st.period <= 0 || st.tokens == 0 || __builtin_mul_overflow(need, (uint64_t)st.period, &ns))
        *retry = INT64_MAX;
    else
        *retry = (band_time)(ns / st.tokens + (ns % st.tokens != 0));
    if (*retry < 0)
        *retry = INT64_MAX;
    return BAND_EAGAIN;
}

static int too_big(band_front_door *d, int cls, band_answer *ans)
{
    return answer(d, cls, make(BAND_ANSWER_TOO_BIG, BAND_E2BIG, 0), ans);
}

/* Class @cls has less room than its headroom: SHED, or TOO_BIG when it never will. */
static int shed(band_front_door *d, int cls, uint64_t n, band_answer *ans)
{
    band_time retry = 0;
    if (sem_never_fits(d, cls, n) || (d->rate != NULL && rate_peek(d, n, &retry) == BAND_E2BIG))
        return too_big(d, cls, ans);
    return answer(d, cls, make(BAND_ANSWER_SHED, BAND_EAGAIN, busy_retry_after(d, n)), ans);
}

/* Return permits taken for a request that is then refused, so that only ACCEPT hands
 * permits over. A release can fail only with BAND_EOVERFLOW, when other code released
 * extra permits into the semaphore until it is full; the permits are forgotten then, as
 * band_permit_release_scoped() does, since the semaphore cannot take them back. */
static void give_back(band_permit *permit)
{
    band_permit_release_scoped(permit);
}

/* No permits now: the backlog if it has room, else BUSY (or TOO_BIG, GONE). */
static int no_room(band_front_door *d, int cls, int rc, uint64_t n, const void *job,
                   band_answer *ans)
{
    if (rc == BAND_EAGAIN || rc == BAND_ETIMEDOUT) {
        if (job != NULL && d->backlog != NULL) {
            int qrc = band_chan_try_send(d->backlog, job, 0);
            if (qrc == 0)
                return answer(d, cls, make(BAND_ANSWER_LATER, 0, 0), ans);
        }
        return answer(d, cls, make(BAND_ANSWER_BUSY, rc, busy_retry_after(d, n)), ans);
    }
    return answer(d, cls, band_answer_from(rc, BAND_ANSWER_FROM_CAPACITY, 0), ans);
}

/* The permits are held (or the door has no semaphore): take the tokens, both or neither,
 * and accept. @waited says whether the permits came from a wait. */
static int take_tokens(band_front_door *d, int cls, uint64_t n, band_permit *permit,
                       band_answer *ans, int waited)
{
    if (d->rate != NULL) {
        band_time retry = 0;
        int rrc = band_rate_try_acquire(d->rate, n, &retry);
        if (rrc != 0) {
            if (d->sem != NULL)
                give_back(permit); /* both or neither */
            return answer(d, cls, band_answer_from(rrc, BAND_ANSWER_FROM_RATE, retry), ans);
        }
    }
    if (waited)
        count(&d->waited);
    if (d->sem != NULL)
        note_in_flight(d, n);
    return answer(d, cls, make(BAND_ANSWER_ACCEPT, 0, 0), ans);
}

/* Wait for the permits (class without headroom, opts.wait > 0), then decide. The wait
 * counts in @waiting from before it queues until the door's last access, so destroy
 * refuses meanwhile. */
static int wait_then_take(band_front_door *d, int cls, uint64_t n, const void *job,
                          band_permit *permit, band_answer *ans, band_time deadline,
                          band_cancel *cancel)
{
    band_time until = band_deadline_after(d->wait);
    atomic_fetch_add_explicit(&d->waiting, 1, memory_order_relaxed);
    int rc = band_permit_acquire(permit, d->sem, n, until < deadline ? until : deadline, cancel);
    int res;
    if (rc == 0 && atomic_load_explicit(&d->closed, memory_order_acquire)) {
        give_back(permit); /* closed while it waited */
        res = answer(d, cls, make(BAND_ANSWER_GONE, BAND_ECLOSED, 0), ans);
    } else if (rc != 0) {
        res = no_room(d, cls, rc, n, job, ans);
    } else {
        res = take_tokens(d, cls, n, permit, ans, 1);
    }
    atomic_fetch_sub_explicit(&d->waiting, 1, memory_order_release); /* the last access */
    return res;
}

int band_front_door_admit(band_front_door *d, int cls, uint64_t n, const void *job,
                          band_permit *permit, band_answer *ans, band_time deadline,
                          band_cancel *cancel)
{
    if (d == NULL || ans == NULL || n == 0 || cls < 0 || cls >= d->classes ||
        (d->sem != NULL && (permit == NULL || permit->sem != NULL)))
        return BAND_EINVAL;
    if (atomic_load_explicit(&d->closed, memory_order_acquire))
        return answer(d, cls, make(BAND_ANSWER_GONE, BAND_ECLOSED, 0), ans);

    if (d->sem != NULL) {
        /* The semaphore would call this BAND_EINVAL; for the door it is a request that
         * can never fit. */
        if (n > BAND_MAX_UNITS)
            return too_big(d, cls, ans);
        /* Shed first: class cls must leave headroom[cls] permits for the classes above. */
        uint64_t h = d->headroom[cls];
        if (h > 0) {
            uint64_t avail = band_sem_available(d->sem);
            if (avail < n || avail - n < h)
                return shed(d, cls, n, ans);
        }
        int rc = band_permit_try_acquire(permit, d->sem, n);
        if (rc == BAND_EAGAIN) {
            /* The room fell below the headroom since the check: shed. Such a class never
             * queues for permits, where it would stand ahead of more urgent work. */
            if (h > 0)
                return shed(d, cls, n, ans);
            band_time retry = 0;
            int rrc = d->rate != NULL ? rate_peek(d, n, &retry) : 0;
            if (rrc == BAND_E2BIG || rrc == BAND_ECLOSED)
                return answer(d, cls, band_answer_from(rrc, BAND_ANSWER_FROM_RATE, 0), ans);
            if (d->wait > 0) {
                /* Never wait for permits that a rate refusal would then give back. */
                if (rrc == BAND_EAGAIN)
                    return answer(d, cls, make(BAND_ANSWER_OVER_QUOTA, BAND_EAGAIN, retry), ans);
                return wait_then_take(d, cls, n, job, permit, ans, deadline, cancel);
            }
        }
        if (rc != 0)
            return no_room(d, cls, rc, n, job, ans);
    }
    /* Tokens only now, with the permits held: both or neither. */
    return take_tokens(d, cls, n, permit, ans, 0);
}

int band_front_door_done(band_front_door *d, band_permit *permit, band_time admitted_at)
{
    if (d == NULL || admitted_at < 0)
        return BAND_EINVAL;
    band_time now = admitted_at > 0 ? band_now() : 0;
    if (admitted_at > now)
        return BAND_EINVAL; /* admitted in the future: not a band_now() of an admission */
    if (d->sem != NULL) {
        /* Only permits of this door's semaphore, and no more than it handed out. */
        if (permit == NULL || permit->sem != d->sem || permit->count == 0)
            return BAND_EINVAL;
        uint64_t n = permit->count;
        uint64_t cur = atomic_load_explicit(&d->in_flight, memory_order_relaxed);
        do {
            if (cur < n)
                return BAND_EINVAL;
        } while (!atomic_compare_exchange_weak_explicit(
            &d->in_flight, &cur, cur - n, memory_order_relaxed, memory_order_relaxed));
        int rc = band_permit_release(permit);
        if (rc != 0) { /* BAND_EOVERFLOW: the permit keeps its permits, still in flight */
            atomic_fetch_add_explicit(&d->in_flight, n, memory_order_relaxed);
            return rc;
        }
    } else if (permit != NULL && permit->sem != NULL) {
        return BAND_EINVAL; /* a door without a semaphore hands out no permits */
    }
    if (admitted_at > 0) {
        int64_t sample = now - admitted_at;
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

int band_front_door_get_stats(const band_front_door *cd, band_front_door_stats *out)
{
    if (cd == NULL || out == NULL)
        return BAND_EINVAL;
    band_front_door *d = (band_front_door *)cd; /* the name's mutex is not part of the value */
    memset(out, 0, sizeof(*out));
    (void)pthread_mutex_lock(&d->name_lock);
    memcpy(out->name, d->name, sizeof(out->name));
    (void)pthread_mutex_unlock(&d->name_lock);
    out->closed = atomic_load_explicit(&d->closed, memory_order_acquire) != 0;
    for (int k = 0; k < BAND_ANSWER_KINDS; k++)
        out->answers[k] = atomic_load_explicit(&d->answers[k], memory_order_relaxed);
    for (int c = 0; c < BAND_FRONT_DOOR_CLASSES; c++) {
        out->admitted[c] = atomic_load_explicit(&d->admitted[c], memory_order_relaxed);
        out->refused[c] = atomic_load_explicit(&d->refused[c], memory_order_relaxed);
    }
    out->waited = atomic_load_explicit(&d->waited, memory_order_relaxed);
    out->mean_hold = atomic_load_explicit(&d->mean_hold, memory_order_relaxed);
    return 0;
}

/*
 * rate.c - the rate budget (GCRA).
 *
 * Design notes
 * ------------
 * The whole state is the theoretical arrival time TAT: the moment the bucket will be
 * full again if nobody takes more. With emission interval T = period / tokens and
 * tolerance tau = burst * T, a request for n tokens has its slot at
 *     slot = max(TAT, now) + n*T - tau
 * and may start then (at once when slot <= now); taking it moves TAT to
 * max(TAT, now) + n*T. This is the token bucket, minus the refill bookkeeping.
 *
 * Times are kept exactly as (nanoseconds, fraction/tokens): T is a quotient and a
 * remainder, so no rounding accumulates. A rate change starts a new generation: the
 * fraction of TAT is rounded up to a whole nanosecond (less than 1 ns, in the bucket's
 * favour) so that it can be re-expressed in the new denominator.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "band/rate.h"
#include "core/internal.h"

/* A time with a fraction: ns + fr / den, 0 <= fr < den. */
struct vt {
    int64_t ns;
    uint64_t fr;
};

struct band_rate {
    pthread_mutex_t lock; /* guards everything below */
    band_clock_fn *clock;
    void *clock_ctx;
    band_sleep_fn *sleep;
    void *sleep_ctx;
    uint64_t tokens, burst;
    band_time period;
    uint64_t gen;       /* bumped by band_rate_set() */
    struct vt interval; /* T = period / tokens */
    struct vt tau;      /* burst * T */
    struct vt tat;
    band_time last; /* the latest time the clock hook returned */
    int closed;
    uint64_t granted, granted_tokens, delayed, cancelled;
    uint64_t refused_rate, refused_deadline, refused_too_big, refused_closed;
};

/* ---------------------------------------------------------------- exact time arithmetic */

static int vt_cmp(struct vt a, struct vt b)
{
    if (a.ns != b.ns)
        return a.ns < b.ns ? -1 : 1;
    return a.fr < b.fr ? -1 : a.fr > b.fr;
}

static struct vt vt_max(struct vt a, struct vt b)
{
    return vt_cmp(a, b) >= 0 ? a : b;
}

/* a + b; 0, or BAND_EOVERFLOW (nothing stored). */
static int vt_add(struct vt a, struct vt b, uint64_t den, struct vt *out)
{
    uint64_t fr = a.fr + b.fr; /* both < den, so no wrap while den <= 2^63 */
    int64_t carry = fr >= den;
    int64_t ns;
    if (__builtin_add_overflow(a.ns, b.ns, &ns) || __builtin_add_overflow(ns, carry, &ns))
        return BAND_EOVERFLOW;
    out->ns = ns;
    out->fr = carry ? fr - den : fr;
    return 0;
}

/* a - b, for a and b whose difference fits (callers compare first). */
static struct vt vt_sub(struct vt a, struct vt b, uint64_t den)
{
    struct vt d;
    int borrow = a.fr < b.fr;
    d.ns = a.ns - b.ns - borrow;
    d.fr = borrow ? a.fr + den - b.fr : a.fr - b.fr;
    return d;
}

/* n * interval; 0 or BAND_EOVERFLOW. */
static int vt_mul(struct vt t, uint64_t n, uint64_t den, struct vt *out)
{
    uint64_t ns, fr;
    if (__builtin_mul_overflow((uint64_t)t.ns, n, &ns) || __builtin_mul_overflow(t.fr, n, &fr))
        return BAND_EOVERFLOW;
    uint64_t whole = ns + fr / den;
    if (whole < ns || whole > (uint64_t)INT64_MAX)
        return BAND_EOVERFLOW;
    out->ns = (int64_t)whole;
    out->fr = fr % den;
    return 0;
}

/* Whole nanoseconds, rounded up (a slot is never reported early). */
static band_time vt_ceil(struct vt t)
{
    return t.fr > 0 && t.ns < INT64_MAX ? t.ns + 1 : t.ns;
}

static struct vt vt_of(band_time ns)
{
    struct vt t = {ns, 0};
    return t;
}

/* ---------------------------------------------------------------- settings */

static band_time default_clock(void *ctx)
{
    (void)ctx;
    return band_now();
}

static void default_sleep(void *ctx, band_time until)
{
    (void)ctx;
    struct timespec ts = {(time_t)(until / BAND_SEC), (long)(until % BAND_SEC)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Interval and tolerance for a setting; 0, BAND_EINVAL or BAND_EOVERFLOW. */
static int derive(uint64_t tokens, band_time period, uint64_t burst, struct vt *interval,
                  struct vt *tau)
{
    if (tokens == 0 || period <= 0 || burst == 0 || tokens > (uint64_t)INT64_MAX)
        return BAND_EINVAL;
    uint64_t depth;
    if (__builtin_mul_overflow(burst, (uint64_t)period, &depth) || depth > (uint64_t)INT64_MAX)
        return BAND_EOVERFLOW;
    interval->ns = (int64_t)((uint64_t)period / tokens);
    interval->fr = (uint64_t)period % tokens;
    return vt_mul(*interval, burst, tokens, tau);
}

int band_rate_create(band_rate **out, const band_rate_opts *o)
{
    if (out == NULL || o == NULL || (o->sleep != NULL && o->clock == NULL))
        return BAND_EINVAL;
    struct vt interval, tau;
    int rc = derive(o->tokens, o->period, o->burst, &interval, &tau);
    if (rc != 0)
        return rc;
    band_rate *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return BAND_ENOMEM;
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return BAND_ENOMEM;
    }
    r->clock = o->clock != NULL ? o->clock : default_clock;
    r->clock_ctx = o->clock_ctx;
    r->sleep = o->sleep != NULL ? o->sleep : (o->clock == NULL ? default_sleep : NULL);
    r->sleep_ctx = o->sleep_ctx;
    r->tokens = o->tokens;
    r->period = o->period;
    r->burst = o->burst;
    r->interval = interval;
    r->tau = tau;
    r->tat = vt_of(INT64_MIN / 2); /* long ago: the bucket starts full */
    r->last = INT64_MIN;
    *out = r;
    return 0;
}

int band_rate_create_simple(band_rate **out, uint64_t per_second, uint64_t burst)
{
    band_rate_opts o;
    memset(&o, 0, sizeof(o));
    o.tokens = per_second;
    o.period = BAND_SEC;
    o.burst = burst;
    return band_rate_create(out, &o);
}

int band_rate_destroy(band_rate *r)
{
    if (r == NULL)
        return 0;
    pthread_mutex_destroy(&r->lock);
    free(r);
    return 0;
}

int band_rate_set(band_rate *r, uint64_t tokens, band_time period, uint64_t burst)
{
    if (r == NULL)
        return BAND_EINVAL;
    struct vt interval, tau;
    int rc = derive(tokens, period, burst, &interval, &tau);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&r->lock);
    r->tat = vt_of(vt_ceil(r->tat)); /* re-expressed in the new denominator */
    r->tokens = tokens;
    r->period = period;
    r->burst = burst;
    r->interval = interval;
    r->tau = tau;
    r->gen++;
    pthread_mutex_unlock(&r->lock);
    return 0;
}

int band_rate_close(band_rate *r)
{
    if (r == NULL)
        return BAND_EINVAL;
    pthread_mutex_lock(&r->lock);
    r->closed = 1;
    pthread_mutex_unlock(&r->lock);
    return 0;
}

/* ---------------------------------------------------------------- taking tokens */

/* The time now (lock held). A clock that steps back is read as no time elapsed: the
 * bucket's time never goes backwards, so no booking made at once turns "not due" again and
 * no counter is taken back for what it never counted. */
static band_time now_locked(band_rate *r)
{
    band_time now = r->clock(r->clock_ctx);
    if (now < r->last)
        return r->last;
    r->last = now;
    return now;
}

/*
 * The slot of @n tokens at @now (lock held): *@slot when it may start, *@end the TAT
 * after taking it. 0, BAND_E2BIG, BAND_ECLOSED or BAND_EOVERFLOW; refusals are counted.
 */
static int slot_locked(band_rate *r, uint64_t n, band_time now, struct vt *slot, struct vt *end,
                       struct vt *cost)
{
    if (r->closed) {
        r->refused_closed++;
        return BAND_ECLOSED;
    }
    if (n > r->burst) {
        r->refused_too_big++;
        return BAND_E2BIG;
    }
    struct vt start = vt_max(r->tat, vt_of(now));
    if (vt_mul(r->interval, n, r->tokens, cost) != 0 || vt_add(start, *cost, r->tokens, end) != 0)
        return BAND_EOVERFLOW;
    *slot = vt_sub(*end, r->tau, r->tokens); /* tau >= cost: slot <= start */
    return 0;
}

static void take_locked(band_rate *r, uint64_t n, struct vt end)
{
    r->tat = end;
    r->granted++;
    r->granted_tokens += n;
}

int band_rate_try(band_rate *r, uint64_t n, band_time *retry_after)
{
    if (retry_after != NULL)
        *retry_after = 0;
    if (r == NULL || n == 0)
        return BAND_EINVAL;
    pthread_mutex_lock(&r->lock);
    band_time now = now_locked(r);
    struct vt slot, end, cost;
    int rc = slot_locked(r, n, now, &slot, &end, &cost);
    if (rc == 0) {
        if (vt_cmp(slot, vt_of(now)) <= 0) {
            take_locked(r, n, end);
        } else {
            r->refused_rate++;
            if (retry_after != NULL)
                *retry_after = vt_ceil(vt_sub(slot, vt_of(now), r->tokens));
            rc = BAND_EAGAIN;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int band_rate_reserve(band_rate *r, uint64_t n, band_time deadline, band_rate_ticket *t,
                      band_time *delay)
{
    if (delay != NULL)
        *delay = 0;
    if (r == NULL || t == NULL || t->rate != NULL || n == 0)
        return BAND_EINVAL;
    pthread_mutex_lock(&r->lock);
    band_time now = now_locked(r);
    struct vt slot, end, cost;
    int rc = slot_locked(r, n, now, &slot, &end, &cost);
    if (rc == 0) {
        band_time at = vt_cmp(slot, vt_of(now)) <= 0 ? now : vt_ceil(slot);
        if (delay != NULL)
            *delay = at - now;
        if (at > now && at > deadline) { /* a past deadline still takes what is there */
            r->refused_deadline++;
            rc = BAND_ETIMEDOUT; /* nothing booked; *delay is the retry-after */
        } else {
            take_locked(r, n, end);
            r->delayed += at > now;
            t->rate = r;
            t->at = at;
            t->_n = n;
            t->_cost_ns = cost.ns;
            t->_cost_fr = cost.fr;
            t->_gen = r->gen;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int band_rate_ticket_cancel(band_rate_ticket *t)
{
    if (t == NULL || t->rate == NULL)
        return BAND_EINVAL;
    band_rate *r = t->rate;
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    band_time now = now_locked(r);
    if (t->at <= now) {
        rc = BAND_EALREADY; /* due: the work may start, the tokens stay spent */
    } else {
        /* After a rate change the fraction has another denominator: give back the whole
         * nanoseconds only (never more than the booking took). */
        struct vt cost = {t->_cost_ns, t->_gen == r->gen ? t->_cost_fr : 0};
        /* Not due means TAT lies past this booking's slot, so TAT - cost is a real time;
         * never below now (a bucket is never more than full). */
        r->tat = vt_max(vt_sub(r->tat, cost, r->tokens), vt_of(now));
        r->cancelled++;
        r->granted--;
        r->granted_tokens -= t->_n;
        r->delayed--;
    }
    pthread_mutex_unlock(&r->lock);
    t->rate = NULL;
    t->at = 0;
    return rc;
}

int band_rate_wait(band_rate *r, uint64_t n, band_time deadline, band_time *retry_after)
{
    if (retry_after != NULL)
        *retry_after = 0;
    if (r == NULL || n == 0 || r->sleep == NULL)
        return BAND_EINVAL;
    band_rate_ticket t = BAND_RATE_TICKET_INIT;
    band_time delay = 0;
    int rc = band_rate_reserve(r, n, deadline, &t, &delay);
    if (rc == BAND_ETIMEDOUT && retry_after != NULL)
        *retry_after = delay;
    if (rc != 0)
        return rc;
    if (delay > 0)
        r->sleep(r->sleep_ctx, t.at);
    return 0;
}

/* ---------------------------------------------------------------- observability */

/* Whole tokens in the bucket at @now (lock held). */
static uint64_t available_locked(const band_rate *r, band_time now)
{
    /* free = now + tau - max(TAT, now): the part of the bucket's depth not yet spent. */
    struct vt top, free;
    if (vt_add(vt_of(now), r->tau, r->tokens, &top) != 0)
        return r->burst;
    struct vt used = vt_max(r->tat, vt_of(now));
    if (vt_cmp(top, used) <= 0)
        return 0;
    free = vt_sub(top, used, r->tokens);
    /* tokens = floor(free / T) = floor((free.ns * den + free.fr) / period) */
    uint64_t scaled;
    if (__builtin_mul_overflow((uint64_t)free.ns, r->tokens, &scaled) ||
        __builtin_add_overflow(scaled, free.fr, &scaled))
        return r->burst;
    uint64_t n = scaled / (uint64_t)r->period;
    return n < r->burst ? n : r->burst;
}

uint64_t band_rate_available(const band_rate *cr)
{
    if (cr == NULL)
        return 0;
    band_rate *r = (band_rate *)cr; /* the lock is logically const */
    pthread_mutex_lock(&r->lock);
    uint64_t n = available_locked(r, now_locked(r));
    pthread_mutex_unlock(&r->lock);
    return n;
}

int band_rate_get_stats(const band_rate *cr, band_rate_stats *out)
{
    if (cr == NULL || out == NULL)
        return BAND_EINVAL;
    band_rate *r = (band_rate *)cr;
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&r->lock);
    out->tokens = r->tokens;
    out->burst = r->burst;
    out->period = r->period;
    out->available = available_locked(r, now_locked(r));
    out->granted = r->granted;
    out->granted_tokens = r->granted_tokens;
    out->delayed = r->delayed;
    out->refused_rate = r->refused_rate;
    out->refused_deadline = r->refused_deadline;
    out->refused_too_big = r->refused_too_big;
    out->refused_closed = r->refused_closed;
    out->cancelled = r->cancelled;
    out->closed = r->closed;
    pthread_mutex_unlock(&r->lock);
    return 0;
}

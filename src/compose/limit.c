/* SPDX-License-Identifier: MIT */
/*
 * limit.c - the adaptive concurrency limit (band/limit.h).
 *
 * Design notes
 * ------------
 * State: the controller's limit is a double (limit_f) so that small steps (smoothing,
 * fractional increases) accumulate; the semaphore follows its rounded value. Everything
 * the estimator keeps is protected by mu. `limit` (the rounded, applied value) is also
 * stored atomically so band_limit_current() is one load.
 *
 * Samples and windows. Each report is a sample (rtt = now - start). Every sample updates
 * min_rtt and the smoothed RTT. A window collects the samples of requests that started at
 * or after the last change of the limit (window_start), so the judgement of a limit is
 * made only from requests that ran under it; when it holds `window` samples (default: the
 * current limit, one round trip's worth when saturated) it closes and the algorithm
 * adjusts the limit once.
 *
 * Congestion (a drop; for AIMD also a round trip above rtt_limit) acts at once rather than
 * at the end of a window, but only if the request started at or after the last decrease:
 * the requests in flight when the limit was cut report the same congestion, and cutting
 * again for each of them would collapse the limit (TCP's one reduction per round trip).
 *
 * Time arithmetic. Times are caller-supplied int64 nanoseconds with any origin, so every
 * difference is computed with overflow checks: a round trip that does not fit in a
 * band_time is refused with BAND_EINVAL before anything changes, and an elapsed time that
 * does not fit (a report from the far past) is treated as "not elapsed". Estimates kept
 * in doubles (the window's mean) are converted back saturating at INT64_MAX, and the
 * smoothed RTT moves by a step that is clamped to never pass the sample, so an RTT of
 * INT64_MAX saturates the estimates instead of wrapping them.
 *
 * In flight. on_done() and adopt() change the in-flight count with a compare-and-swap
 * that refuses to go below 0 or above max (no caller can hold more permits than the
 * highest limit), and on_done() decides that before it records anything: a report
 * without a permit changes nothing.
 *
 * Applying a change: under mu, the new rounded limit is compared with the applied one and
 * the difference is recorded as applied; after mu is released the delta goes to the
 * semaphore (band_sem_release for growth, band_sem_reduce for shrink). Wakes of acquirers
 * may run inside band_sem_release; doing it after the unlock means no user code runs under
 * mu (a wake may report a sample itself). Two adjustments racing to the semaphore apply
 * their deltas in either order: release and reduce both move the logical balance by
 * exactly their amount (debt absorbs a reduce below zero and is repaid first), so the
 * balance after both is the same.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "band/limit.h"
#include "core/internal.h"
#include "core/name.h"
#include "prim/sem_priv.h" /* band__sem_base_add: the limit grows its semaphore */

#define DEFAULT_MAX           1000
#define DEFAULT_BACKOFF       0.9
#define DEFAULT_INCREASE      1.0
#define DEFAULT_SMOOTHING     0.2
#define DEFAULT_TOLERANCE     1.0
#define DEFAULT_RTT_SMOOTHING 0.125
#define GRADIENT_FLOOR        0.5

struct band_limit {
    band_sem *sem;
    atomic_uint_fast64_t limit;    /* applied (rounded) limit; written under mu */
    atomic_uint_fast64_t inflight; /* permits counted in flight */

    pthread_mutex_t mu; /* protects everything below */
    band_limit_opts o;  /* with defaults filled in */
    double limit_f;
    band_time window_start;  /* samples of requests started before it are stale */
    band_time last_decrease; /* congestion from requests started before it is ignored */
    band_time min_rtt, srtt, window_rtt;
    band_time min_rtt_since; /* when min_rtt started collecting (valid while min_rtt > 0) */
    int have_srtt;           /* srtt holds a sample (an RTT of 0 is one) */
    double gradient;
    uint64_t win_n, win_max_inflight;
    double win_sum;
    uint64_t samples, drops, ignored, windows, increases, decreases;
    char name[BAND_NAME_MAX];
};

/* sqrt for the default queue size, without libm: Newton's method on a positive double. */
static double limit_sqrt(double x)
{
    if (x <= 0)
        return 0;
    double r = x > 1 ? x / 2 : 1;
    for (int i = 0; i < 40; i++) {
        double n = 0.5 * (r + x / r);
        if (n == r)
            break;
        r = n;
    }
    return r;
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* A non-negative double as a band_time, saturating at INT64_MAX (2^63 is the first double
 * that does not fit). */
static band_time time_of(double v)
{
    if (!(v > 0))
        return 0;
    if (v >= 9223372036854775808.0)
        return INT64_MAX;
    return (band_time)v;
}

/* One step of an exponential moving average of non-negative times: @avg moves the
 * fraction @w (0 < w <= 1) of the way to @sample. The step is clamped to the distance, so
 * double rounding never carries the average past the sample or out of [0, INT64_MAX]. */
static band_time ewma_time(band_time avg, band_time sample, double w)
{
    band_time delta = sample - avg; /* both in [0, INT64_MAX]: no overflow */
    double step = w * (double)delta;
    band_time s;
    if (delta >= 0)
        s = step >= (double)delta ? delta : (band_time)step;
    else
        s = step <= (double)delta ? delta : (band_time)step;
    if ((delta >= 0 && s > delta) || (delta < 0 && s < delta))
        s = delta;
    return avg + s;
}

/* Fill in defaults and check @in; 0 or BAND_EINVAL. */
static int limit_opts(band_limit_opts *o, const band_limit_opts *in)
{
    *o = *in;
    if (o->algorithm != BAND_LIMIT_AIMD && o->algorithm != BAND_LIMIT_GRADIENT)
        return BAND_EINVAL;
    if (o->min == 0)
        o->min = 1;
    if (o->max == 0)
        o->max = o->min > DEFAULT_MAX ? o->min : DEFAULT_MAX;
    if (o->initial == 0)
        o->initial = o->min;
    if (o->backoff == 0)
        o->backoff = DEFAULT_BACKOFF;
    if (o->increase == 0)
        o->increase = DEFAULT_INCREASE;
    if (o->smoothing == 0)
        o->smoothing = DEFAULT_SMOOTHING;
    if (o->tolerance == 0)
        o->tolerance = DEFAULT_TOLERANCE;
    if (o->rtt_smoothing == 0)
        o->rtt_smoothing = DEFAULT_RTT_SMOOTHING;
    if (o->min > o->max || o->max > BAND_MAX_UNITS || o->initial < o->min || o->initial > o->max)
        return BAND_EINVAL;
    if (!(o->backoff > 0 && o->backoff < 1) || !(o->increase > 0) || !isfinite(o->increase) ||
        !(o->smoothing > 0 && o->smoothing <= 1) || !(o->tolerance >= 1) ||
        !isfinite(o->tolerance) || !(o->queue >= 0) || !isfinite(o->queue) ||
        !(o->rtt_smoothing > 0 && o->rtt_smoothing <= 1) || o->rtt_limit < 0 ||
        o->min_rtt_reset < 0)
        return BAND_EINVAL;
    return 0;
}

int band_limit_create(band_limit **out, const band_limit_opts *opts)
{
    static const band_limit_opts defaults;
    if (out == NULL)
        return BAND_EINVAL;
    band_limit_opts o;
    int rc = limit_opts(&o, opts != NULL ? opts : &defaults);
    if (rc != 0)
        return rc;
    band_limit *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return BAND_ENOMEM;
    rc = band_sem_create(&l->sem, o.initial, NULL);
    if (rc != 0) {
        free(l);
        return rc;
    }
    if (pthread_mutex_init(&l->mu, NULL) != 0) {
        (void)band_sem_destroy(l->sem);
        free(l);
        return BAND_ENOMEM;
    }
    l->o = o;
    l->limit_f = (double)o.initial;
    atomic_init(&l->limit, o.initial);
    atomic_init(&l->inflight, 0);
    l->window_start = INT64_MIN;
    l->last_decrease = INT64_MIN;
    l->gradient = 1.0;
    *out = l;
    return 0;
}

int band_limit_destroy(band_limit *l)
{
    if (l == NULL)
        return 0;
    int rc = band_sem_destroy(l->sem);
    if (rc != 0)
        return rc;
    (void)pthread_mutex_destroy(&l->mu);
    free(l);
    return 0;
}

int band_limit_set_name(band_limit *l, const char *name)
{
    if (l == NULL)
        return BAND_EINVAL;
    return band__set_name(l->name, name, &l->mu);
}

int band_limit_close(band_limit *l)
{
    if (l == NULL)
        return BAND_EINVAL;
    return band_sem_close(l->sem);
}

int band_limit_is_closed(const band_limit *l)
{
    return l != NULL && band_sem_is_closed(l->sem);
}

band_sem *band_limit_sem(band_limit *l)
{
    return l == NULL ? NULL : l->sem;
}

uint64_t band_limit_current(const band_limit *l)
{
    if (l == NULL)
        return 0;
    return atomic_load_explicit(&l->limit, memory_order_relaxed);
}

int band_limit_try_acquire(band_limit *l)
{
    if (l == NULL)
        return BAND_EINVAL;
    int rc = band_sem_try_acquire(l->sem, 1);
    if (rc == 0)
        atomic_fetch_add_explicit(&l->inflight, 1, memory_order_relaxed);
    return rc;
}

int band_limit_acquire(band_limit *l, band_time deadline, band_cancel *cancel)
{
    if (l == NULL)
        return BAND_EINVAL;
    int rc = band_sem_acquire(l->sem, 1, deadline, cancel);
    if (rc == 0)
        atomic_fetch_add_explicit(&l->inflight, 1, memory_order_relaxed);
    return rc;
}

int band_limit_adopt(band_limit *l)
{
    if (l == NULL)
        return BAND_EINVAL;
    /* Nobody can hold more permits than the highest limit: more adoptions than that are
     * permits the semaphore never handed out. */
    uint64_t n = atomic_load_explicit(&l->inflight, memory_order_relaxed);
    do {
        if (n >= l->o.max)
            return BAND_EINVAL;
    } while (!atomic_compare_exchange_weak_explicit(&l->inflight, &n, n + 1, memory_order_relaxed,
                                                    memory_order_relaxed));
    return 0;
}

/* Move the controller's limit to @v (clamped), start a new window at @now, and return
 * the signed change of the rounded limit, which the caller applies after unlocking. */
static int64_t limit_set_locked(band_limit *l, double v, band_time now)
{
    v = clampd(v, (double)l->o.min, (double)l->o.max);
    uint64_t old = atomic_load_explicit(&l->limit, memory_order_relaxed);
    uint64_t nu = (uint64_t)(v + 0.5);
    nu = nu < l->o.min ? l->o.min : (nu > l->o.max ? l->o.max : nu);
    if (v > l->limit_f)
        l->increases++;
    else if (v < l->limit_f)
        l->decreases++;
    l->limit_f = v;
    atomic_store_explicit(&l->limit, nu, memory_order_relaxed);
    l->window_start = now;
    l->win_n = 0;
    l->win_sum = 0;
    l->win_max_inflight = 0;
    return (int64_t)nu - (int64_t)old;
}

/* Apply a change of the rounded limit to the semaphore (no lock held). */
static void limit_apply(band_limit *l, int64_t delta)
{
    if (delta > 0) {
        band__sem_base_add(l->sem, (uint64_t)delta); /* the semaphore's capacity grows */
        (void)band_sem_release(l->sem, (uint64_t)delta);
    } else if (delta < 0)
        (void)band_sem_reduce(l->sem, (uint64_t)-delta);
}

/* A full window closed: one adjustment by the algorithm. */
static int64_t limit_window_locked(band_limit *l, band_time now)
{
    double lim = l->limit_f;
    /* Half the permits unused: demand, not capacity, bounded this window. */
    int app_limited = (double)l->win_max_inflight * 2 < lim;
    double avg = l->win_sum / (double)l->win_n;
    l->window_rtt = time_of(avg);
    l->windows++;
    double target;
    if (l->o.algorithm == BAND_LIMIT_AIMD) {
        target = app_limited ? lim : lim + l->o.increase;
    } else {
        double g = avg > 0 ? l->o.tolerance * (double)l->min_rtt / avg : 1.0;
        g = clampd(g, GRADIENT_FLOOR, 1.0);
        l->gradient = g;
        double q = l->o.queue > 0 ? l->o.queue : limit_sqrt(lim);
        double est = lim * g + q;
        if (app_limited && est > lim)
            est = lim;
        target = lim * (1 - l->o.smoothing) + est * l->o.smoothing;
    }
    return limit_set_locked(l, target, now);
}

/* Check a report: 0 with its round trip in *@rtt, or BAND_EINVAL (nothing changes). */
static int sample_check(const band_limit *l, band_time start, band_time now, int outcome,
                        band_time *rtt)
{
    if (l == NULL || now < start ||
        (outcome != BAND_LIMIT_OK && outcome != BAND_LIMIT_DROPPED && outcome != BAND_LIMIT_IGNORE))
        return BAND_EINVAL;
    if (__builtin_sub_overflow(now, start, rtt))
        return BAND_EINVAL; /* longer than any band_time: not a measurement */
    return 0;
}

/* Record a checked sample of a request that ran with @inflight permits counted in flight
 * (itself included), and apply the change of the limit it causes. */
static void sample_record(band_limit *l, band_time start, band_time now, band_time rtt, int outcome,
                          uint64_t inflight)
{
    int64_t delta = 0;

    (void)pthread_mutex_lock(&l->mu);
    if (outcome == BAND_LIMIT_IGNORE) {
        l->ignored++;
        goto out;
    }
    l->samples++;
    int dropped = outcome == BAND_LIMIT_DROPPED;
    if (dropped) {
        l->drops++;
    } else {
        band_time elapsed;
        if (l->o.min_rtt_reset > 0 && l->min_rtt > 0 &&
            !__builtin_sub_overflow(now, l->min_rtt_since, &elapsed) &&
            elapsed >= l->o.min_rtt_reset)
            l->min_rtt = 0;
        if (l->min_rtt == 0) {
            l->min_rtt = rtt > 0 ? rtt : 1;
            l->min_rtt_since = now;
        } else if (rtt < l->min_rtt) {
            l->min_rtt = rtt > 0 ? rtt : 1;
        }
        if (!l->have_srtt) {
            l->srtt = rtt;
            l->have_srtt = 1;
        } else {
            l->srtt = ewma_time(l->srtt, rtt, l->o.rtt_smoothing);
        }
    }
    int congested = dropped || (l->o.algorithm == BAND_LIMIT_AIMD && l->o.rtt_limit > 0 &&
                                rtt > l->o.rtt_limit);
    if (congested) {
        if (start >= l->last_decrease) {
            l->last_decrease = now;
            delta = limit_set_locked(l, l->limit_f * l->o.backoff, now);
        }
        goto out;
    }
    if (start < l->window_start)
        goto out; /* ran under an older limit */
    l->win_n++;
    l->win_sum += (double)rtt;
    if (inflight > l->win_max_inflight)
        l->win_max_inflight = inflight;
    uint64_t need =
        l->o.window > 0 ? l->o.window : atomic_load_explicit(&l->limit, memory_order_relaxed);
    if (l->win_n >= need)
        delta = limit_window_locked(l, now);
out:
    (void)pthread_mutex_unlock(&l->mu);
    limit_apply(l, delta);
}

int band_limit_sample(band_limit *l, band_time start, band_time now, int outcome)
{
    band_time rtt;
    int rc = sample_check(l, start, now, outcome, &rtt);
    if (rc != 0)
        return rc;
    sample_record(l, start, now, rtt, outcome,
                  atomic_load_explicit(&l->inflight, memory_order_relaxed));
    return 0;
}

int band_limit_on_done(band_limit *l, band_time start, band_time now, int outcome)
{
    band_time rtt;
    int rc = sample_check(l, start, now, outcome, &rtt);
    if (rc != 0)
        return rc;
    /* Only a permit counted in flight goes back: a report without one would add a permit
     * the limit never had. Decided before anything is recorded. */
    uint64_t n = atomic_load_explicit(&l->inflight, memory_order_relaxed);
    do {
        if (n == 0)
            return BAND_EINVAL;
    } while (!atomic_compare_exchange_weak_explicit(&l->inflight, &n, n - 1, memory_order_relaxed,
                                                    memory_order_relaxed));
    sample_record(l, start, now, rtt, outcome, n);
    (void)band_sem_release(l->sem, 1);
    return 0;
}

int band_limit_get_stats(const band_limit *l, band_limit_stats *out)
{
    if (l == NULL || out == NULL)
        return BAND_EINVAL;
    band_limit *m = (band_limit *)(uintptr_t)l; /* the mutex is not part of the value */
    memset(out, 0, sizeof(*out));
    (void)pthread_mutex_lock(&m->mu);
    memcpy(out->name, l->name, sizeof(out->name));
    out->algorithm = l->o.algorithm;
    out->limit = atomic_load_explicit(&l->limit, memory_order_relaxed);
    out->limit_exact = l->limit_f;
    out->min = l->o.min;
    out->max = l->o.max;
    out->min_rtt = l->min_rtt;
    out->smoothed_rtt = l->srtt;
    out->window_rtt = l->window_rtt;
    out->gradient = l->gradient;
    out->samples = l->samples;
    out->drops = l->drops;
    out->ignored = l->ignored;
    out->windows = l->windows;
    out->increases = l->increases;
    out->decreases = l->decreases;
    (void)pthread_mutex_unlock(&m->mu);
    out->inflight = atomic_load_explicit(&l->inflight, memory_order_relaxed);
    out->closed = band_sem_is_closed(l->sem);
    return 0;
}

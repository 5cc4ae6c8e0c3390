/*
 * rate.c - the rate budget (GCRA).
 *
 * Design notes
 * ------------
 * GCRA keeps one time, the moment the bucket will be full again. Here it is kept relative
 * to the bucket's own time @last (the latest time the clock hook returned): @missing is
 * how far the bucket is from full at @last, in units of 1/tokens of a nanosecond. One
 * token is @period of those units (period / tokens ns), so the same number also reads as
 * "tokens missing × period":
 *
 *   - time refills: dt nanoseconds later, missing -= dt × tokens (not below 0: full);
 *   - n tokens cost n × period units; the bucket holds burst × period units (its depth);
 *   - a request for n tokens may start once missing + n × period <= depth, that is after
 *     (missing + n × period - depth) / tokens nanoseconds, rounded up (never early);
 *   - whole tokens in the bucket: (depth - missing) / period, rounded down.
 *
 * Every step is an exact integer operation, so a rate of 3 per second gives slots at
 * exactly 1/3 s, 2/3 s, 1 s, and no rounding accumulates. Keeping the state relative to
 * @last means no absolute time is ever computed except a booking's slot, so the clock may
 * read anything from INT64_MIN to INT64_MAX.
 *
 * Bounds: derive() keeps burst × period <= INT64_MAX. A booking is refused with
 * BAND_EOVERFLOW unless the bucket would be full again within INT64_MAX ns and no later
 * than INT64_MAX (the invariant fits()), so every delay, retry-after and slot fits in a
 * band_time and @missing < 2^63 × tokens < 2^126. The sums below stay under 2^128.
 *
 * A change of settings keeps what has accrued (as the token bucket of Go's x/time/rate
 * does): the bucket is first brought to now under the old rate, then the tokens it holds
 * (negative when bookings run ahead) are kept, clamped to a lower burst:
 *     tokens missing after = max(0, tokens missing before + new burst - old burst)
 *     missing' = ceil(that × old period × new period / old period)
 * The one rounding is up, by less than 1/tokens' ns, in the bucket's favour.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "band/rate.h"
#include "core/block.h"
#include "core/internal.h"
#include "core/name.h"

#if !defined(__SIZEOF_INT128__)
#error "src/rate.c needs a compiler with 128-bit integers (GCC or Clang on a 64-bit target)"
#endif
__extension__ typedef unsigned __int128 u128;

struct band_rate {
    pthread_mutex_t lock; /* guards everything below */
    band_rate_clock_fn *clock;
    void *clock_ctx;
    band_rate_sleep_fn *sleep;
    void *sleep_ctx;
    uint64_t tokens, burst;
    band_time period;
    band_time last; /* the bucket's time: the latest time the clock hook returned */
    u128 missing;   /* how far from full at @last, in 1/tokens ns (see above); 0: full */
    int closed;
    char name[BAND_NAME_MAX];
    uint64_t granted, granted_tokens, delayed, cancelled;
    uint64_t refused_rate, refused_deadline, refused_too_big, refused_closed;
};

/* ---------------------------------------------------------------- arithmetic */

static u128 depth_of(uint64_t burst, band_time period)
{
    return (u128)burst * (uint64_t)period;
}

/* ceil(@a / @b) for @b >= 1 (no wrap: the + 1 only happens when @b >= 2). */
static u128 ceil_div(u128 a, uint64_t b)
{
    if (a >> 64 == 0) { /* the common case, without a call to a 128-bit division */
        uint64_t lo = (uint64_t)a;
        return lo / b + (lo % b != 0);
    }
    return a / b + (a % b != 0);
}

/* ceil(@a × @b / @c) for @c >= 1, through a 192-bit product: 0, or BAND_EOVERFLOW when the
 * result does not fit in 128 bits. */
static int muldiv_ceil(u128 a, uint64_t b, uint64_t c, u128 *out)
{
    /* a × b = hi × 2^64 + lo, and hi = qh × c + rh, lo = ql × c + rl, so
     * a × b / c = qh × 2^64 + ql + (rh × 2^64 + rl) / c, where rh, rl < c < 2^64. */
    u128 hi = (a >> 64) * b;
    u128 lo = (u128)(uint64_t)a * b;
    u128 qh = hi / c, rh = hi % c;
    u128 ql = lo / c, rl = lo % c;
    if (qh >> 64 != 0)
        return BAND_EOVERFLOW;
    u128 mid = (rh << 64) + rl;
    u128 low = ql + mid / c + (mid % c != 0); /* ql < 2^127 and mid / c < 2^64 */
    u128 q = (qh << 64) + low;
    if (q < low)
        return BAND_EOVERFLOW;
    *out = q;
    return 0;
}

/* 1 when a bucket @missing units (1/@tokens ns) from full at @now is full again within
 * INT64_MAX ns and no later than INT64_MAX (so every slot and delay fits in a band_time):
 * ceil(missing / tokens) <= room, that is missing <= room x tokens. */
static int fits(u128 missing, uint64_t tokens, band_time now)
{
    uint64_t room = now >= 0 ? (uint64_t)(INT64_MAX - now) : (uint64_t)INT64_MAX;
    return missing <= (u128)room * tokens;
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

/* 0, BAND_EINVAL or BAND_EOVERFLOW for a setting. */
static int check_settings(uint64_t tokens, band_time period, uint64_t burst)
{
    if (tokens == 0 || period <= 0 || burst == 0 || tokens > (uint64_t)INT64_MAX)
        return BAND_EINVAL;
    if (depth_of(burst, period) > (u128)INT64_MAX)
        return BAND_EOVERFLOW; /* the bucket's depth in time must be representable */
    return 0;
}

int band_rate_create(band_rate **out, uint64_t tokens, band_time period, uint64_t burst,
                     const band_rate_opts *opts)
{
    static const band_rate_opts defaults;
    const band_rate_opts *o = opts != NULL ? opts : &defaults;
    if (out == NULL || (o->sleep != NULL && o->clock == NULL))
        return BAND_EINVAL;
    int rc = check_settings(tokens, period, burst);
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
    r->tokens = tokens;
    r->period = period;
    r->burst = burst;
    r->last = INT64_MIN; /* the first clock reading is at or after it */
    r->missing = 0;      /* the bucket starts full */
    *out = r;
    return 0;
}

int band_rate_destroy(band_rate *r)
{
    if (r == NULL)
        return 0;
    pthread_mutex_destroy(&r->lock);
    free(r);
    return 0;
}

int band_rate_set_name(band_rate *r, const char *name)
{
    if (r == NULL)
        return BAND_EINVAL;
    return band__set_name(r->name, name, &r->lock);
}

/*
 * Bring the bucket to the clock's time (lock held) and return that time. A clock that
 * steps back is read as no time elapsed: the bucket's time never goes backwards, so no
 * booking made at once turns "not due" again and nothing refills twice.
 */
static band_time advance_locked(band_rate *r)
{
    band_time now = r->clock(r->clock_ctx);
    if (now <= r->last)
        return r->last;
    uint64_t dt = (uint64_t)now - (uint64_t)r->last; /* up to 2^64 - 1 */
    u128 refill = (u128)dt * r->tokens;              /* < 2^127 */
    r->missing = refill >= r->missing ? 0 : r->missing - refill;
    r->last = now;
    return now;
}

int band_rate_set(band_rate *r, uint64_t tokens, band_time period, uint64_t burst)
{
    if (r == NULL)
        return BAND_EINVAL;
    int rc = check_settings(tokens, period, burst);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&r->lock);
    band_time now = advance_locked(r);
    /* Tokens missing under the new burst, times the old period: what the bucket holds is
     * kept, and a lower burst clamps it (the bucket cannot be more than full). */
    u128 gap = r->missing + depth_of(burst, r->period); /* < 2^126 + 2^127 */
    u128 old_depth = depth_of(r->burst, r->period);
    gap = gap > old_depth ? gap - old_depth : 0;
    u128 missing;
    if (muldiv_ceil(gap, (uint64_t)period, (uint64_t)r->period, &missing) != 0 ||
        !fits(missing, tokens, now)) {
        rc = BAND_EOVERFLOW; /* owed for longer than a band_time can say: nothing changes */
    } else {
        r->missing = missing;
        r->tokens = tokens;
        r->period = period;
        r->burst = burst;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
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

int band_rate_is_closed(const band_rate *cr)
{
    if (cr == NULL)
        return 0;
    band_rate *r = (band_rate *)cr; /* the lock is logically const */
    pthread_mutex_lock(&r->lock);
    int closed = r->closed;
    pthread_mutex_unlock(&r->lock);
    return closed;
}

/* ---------------------------------------------------------------- taking tokens */

/*
 * @n tokens at the bucket's time (lock held, advanced): *@after is @missing once they are
 * taken, *@wait the nanoseconds until they may start (0: now). 0, BAND_ECLOSED or
 * BAND_E2BIG; refusals are counted. *@wait always fits: it is at most the time until the
 * bucket is full now, since n × period <= depth.
 */
static int book_locked(band_rate *r, uint64_t n, u128 *after, band_time *wait)
{
    if (r->closed) {
        r->refused_closed++;
        return BAND_ECLOSED;
    }
    if (n > r->burst) {
        r->refused_too_big++;
        return BAND_E2BIG;
    }
    u128 depth = depth_of(r->burst, r->period);
    *after = r->missing + (u128)n * (uint64_t)r->period;
    *wait = *after > depth ? (band_time)ceil_div(*after - depth, r->tokens) : 0;
    return 0;
}

static void take_locked(band_rate *r, uint64_t n, u128 after)
{
    r->missing = after;
    r->granted++;
    /* Saturates: once it reaches UINT64_MAX it stays there (a cancel cannot tell how much
     * of it is real). */
    if (__builtin_add_overflow(r->granted_tokens, n, &r->granted_tokens))
        r->granted_tokens = UINT64_MAX;
}

int band_rate_try_acquire(band_rate *r, uint64_t n, band_time *retry_after)
{
    if (retry_after != NULL)
        *retry_after = 0;
    if (r == NULL || n == 0)
        return BAND_EINVAL;
    pthread_mutex_lock(&r->lock);
    band_time now = advance_locked(r);
    u128 after;
    band_time wait;
    int rc = book_locked(r, n, &after, &wait);
    if (rc == 0) {
        if (wait > 0) {
            r->refused_rate++;
            if (retry_after != NULL)
                *retry_after = wait;
            rc = BAND_EAGAIN;
        } else if (!fits(after, r->tokens, now)) {
            rc = BAND_EOVERFLOW; /* full again only after INT64_MAX */
        } else {
            take_locked(r, n, after);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int band_rate_reserve(band_rate *r, uint64_t n, band_rate_ticket *t, band_time *delay,
                      band_time deadline)
{
    if (delay != NULL)
        *delay = 0;
    if (r == NULL || t == NULL || t->rate != NULL || n == 0)
        return BAND_EINVAL;
    pthread_mutex_lock(&r->lock);
    band_time now = advance_locked(r);
    u128 after;
    band_time wait;
    int rc = book_locked(r, n, &after, &wait);
    if (rc == 0 && !fits(after, r->tokens, now))
        rc = BAND_EOVERFLOW; /* nothing booked */
    if (rc == 0) {
        band_time at = now + wait; /* fits() bounds it by INT64_MAX */
        if (delay != NULL)
            *delay = wait;
        if (wait > 0 && at > deadline) { /* a past deadline still takes what is there */
            r->refused_deadline++;
            rc = BAND_ETIMEDOUT; /* nothing booked; *delay is the retry-after */
        } else {
            take_locked(r, n, after);
            r->delayed += wait > 0;
            t->rate = r;
            t->at = at;
            t->_n = n;
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
    band_time now = advance_locked(r);
    if (t->at <= now) {
        rc = BAND_EALREADY; /* due: the work may start, the tokens stay spent */
    } else {
        /* Not due, so it was delayed when it was booked (the bucket's time never goes
         * back). Its tokens go back at the current rate: a change of settings keeps
         * tokens, not time. Never beyond full. */
        u128 back = (u128)t->_n * (uint64_t)r->period;
        r->missing = back >= r->missing ? 0 : r->missing - back;
        r->cancelled++;
        r->granted--;
        if (r->granted_tokens != UINT64_MAX)
            r->granted_tokens -= t->_n;
        r->delayed--;
    }
    pthread_mutex_unlock(&r->lock);
    t->rate = NULL;
    t->at = 0;
    t->_n = 0;
    return rc;
}

int band_rate_acquire(band_rate *r, uint64_t n, band_time *retry_after, band_time deadline,
                      band_cancel *cancel)
{
    if (retry_after != NULL)
        *retry_after = 0;
    if (r == NULL || n == 0 || r->sleep == NULL)
        return BAND_EINVAL;
    band_rate_ticket t = BAND_RATE_TICKET_INIT;
    band_time delay = 0;
    /* A requested token means "do not wait", as a past deadline does. */
    int cancelled = band_cancel_is_requested(cancel);
    int rc = band_rate_reserve(r, n, &t, &delay, cancelled ? 0 : deadline);
    if (rc == BAND_ETIMEDOUT && retry_after != NULL)
        *retry_after = delay;
    if (rc == BAND_ETIMEDOUT && cancelled)
        rc = BAND_ECANCELED;
    if (rc != 0)
        return rc;
    if (delay <= 0)
        return 0;
    if (r->sleep != default_sleep || cancel == NULL) {
        r->sleep(r->sleep_ctx, t.at);
        return 0;
    }
    if (band__sleep_until(t.at, cancel) == 0)
        return 0;
    /* Cancelled before the slot came: give the booking back, as a cancelled ticket does. */
    (void)band_rate_ticket_cancel(&t);
    return BAND_ECANCELED;
}

/* ---------------------------------------------------------------- observability */

/* Whole tokens in the bucket (lock held, advanced). */
static uint64_t available_locked(const band_rate *r)
{
    u128 depth = depth_of(r->burst, r->period);
    if (r->missing >= depth)
        return 0;
    return (uint64_t)((depth - r->missing) / (uint64_t)r->period); /* <= burst */
}

uint64_t band_rate_available(const band_rate *cr)
{
    if (cr == NULL)
        return 0;
    band_rate *r = (band_rate *)cr; /* the lock and the refill are logically const */
    pthread_mutex_lock(&r->lock);
    (void)advance_locked(r);
    uint64_t n = available_locked(r);
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
    (void)advance_locked(r);
    memcpy(out->name, r->name, sizeof(out->name));
    out->tokens = r->tokens;
    out->burst = r->burst;
    out->period = r->period;
    out->available = available_locked(r);
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

/* SPDX-License-Identifier: MIT */
/*
 * rate_model.c - the reference token bucket of band_rate and the op interpreter that
 * compares it with the real thing (see rate_model.h).
 *
 * The library computes GCRA: how far the bucket is from full, relative to its own time.
 * The reference is the textbook bucket, written out the long way from rate.h:
 *
 *  - the level L counts the tokens held in units of 1/period of a token (so one token is
 *    `period` units, the bucket holds at most burst × period, and each nanosecond adds
 *    `tokens` units up to that); a booking may drive L below zero, and its slot is when L
 *    would be back at zero;
 *  - the bucket's time is the latest time the clock hook returned: the hook itself moves
 *    the reference forward, and a clock behind it adds nothing;
 *  - try takes n tokens when L >= n × period, else refuses with the time until it would
 *    be, rounded up; reserve and wait book at once when the tokens are there whatever the
 *    deadline, else at the time L would be back at n × period, refused when that lies
 *    after the deadline; a cancel before the slot puts n × period (current period) back;
 *  - a booking is refused with EOVERFLOW when the bucket would be full again only after
 *    INT64_MAX or more than INT64_MAX ns from now;
 *  - band_rate_set() keeps the tokens held: L' = floor(L × period' / period), at most
 *    burst' × period' (exact runs only keep small enough numbers for this in 128 bits).
 *
 * Byte format (all multi-byte numbers little-endian): byte 0 picks the run (exact unless
 * (b & 7) == 7), then the bucket's settings and the starting clock as read by
 * read_settings() and read_start(); then each operation is an op byte (see decode_op())
 * followed by its arguments. fuzz/make_rate_corpus.py writes the seed corpus with this
 * format.
 */
#include "rate_model.h"

#include "model_input.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/error.h"
#include "band/rate.h"
#include "prim/rate_internal.h"

#define NT 8 /* bookings the driver can hold */

/* The largest settings of an exact run: every product the reference forms fits in 127
 * bits (L >= -(2^63 + 1) × tokens - burst × period, and L × period' < 2^84 × 2^40). */
#define EXACT_TOKENS (UINT64_C(1) << 20)
#define EXACT_PERIOD (INT64_C(1) << 40)
#define EXACT_BURST  (UINT64_C(1) << 20)

__extension__ typedef __int128 i128;

struct booking {
    int live;
    band_time at;
    uint64_t n;
};

struct rate_model {
    band_rate *r;
    band_rate_ticket tk[NT];
    struct booking b[NT];
    struct model_input in;

    /* the fake clock */
    band_time clock; /* what the hook returns */
    band_time seen;  /* the bucket's time: the latest value the hook returned */
    int seen_any;
    int sleeps; /* sleep hook calls in this op */
    band_time slept_until;

    /* the reference */
    int extreme;
    uint64_t tokens, burst;
    band_time period;
    i128 level; /* exact runs: tokens held x period, as of @seen */
    int closed;
    uint64_t granted, granted_tokens, delayed, cancelled;
    uint64_t refused_rate, refused_deadline, refused_too_big, refused_closed;

    uint64_t opno;
    int in_race; /* an operation interleaved in a try's fast path is running */
    int trace;
    int failed;
    char err[1024];
    struct rate_model_counts counts;
};

/* ---------------------------------------------------------------------------------- */
/* failure reporting                                                                   */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(struct rate_model *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    m->failed = 1;
    int k = snprintf(m->err, sizeof(m->err),
                     "op #%llu (%s: %llu tokens per %lld ns, burst %llu, clock %lld, bucket "
                     "time %lld): ",
                     (unsigned long long)m->opno, m->extreme ? "extreme" : "exact",
                     (unsigned long long)m->tokens, (long long)m->period,
                     (unsigned long long)m->burst, (long long)m->clock, (long long)m->seen);
    if (k < 0 || (size_t)k >= sizeof(m->err))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + k, sizeof(m->err) - (size_t)k, fmt, ap);
    va_end(ap);
}

static void expect_rc(struct rate_model *m, const char *what, int expected, int actual)
{
    if (expected != actual)
        fail(m, "%s: expected %d (%s), got %d (%s)", what, expected, band_err_name(expected),
             actual, band_err_name(actual));
}

static void expect_i64(struct rate_model *m, const char *what, int64_t expected, int64_t actual)
{
    if (expected != actual)
        fail(m, "%s: expected %lld, got %lld", what, (long long)expected, (long long)actual);
}

static void expect_u64(struct rate_model *m, const char *what, uint64_t expected, uint64_t actual)
{
    if (expected != actual)
        fail(m, "%s: expected %llu, got %llu", what, (unsigned long long)expected,
             (unsigned long long)actual);
}

static void expect_true(struct rate_model *m, const char *what, int cond)
{
    if (!cond)
        fail(m, "%s", what);
}

static void count_rc(struct rate_model *m, int rc)
{
    switch (rc) {
    case BAND_EAGAIN:
        m->counts.eagain++;
        break;
    case BAND_ETIMEDOUT:
        m->counts.etimedout++;
        break;
    case BAND_E2BIG:
        m->counts.e2big++;
        break;
    case BAND_ECLOSED:
        m->counts.eclosed++;
        break;
    case BAND_EINVAL:
        m->counts.einval++;
        break;
    case BAND_EOVERFLOW:
        m->counts.eoverflow++;
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------------------------- */
/* input                                                                               */

static uint8_t next_byte(struct rate_model *m)
{
    return model_input_byte(&m->in);
}

static uint64_t next_u64(struct rate_model *m)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)next_byte(m) << (8 * i);
    return v;
}

/* A number in [0, @hi], using as few bytes as the range needs. */
static uint64_t read_upto(struct rate_model *m, uint64_t hi)
{
    if (hi == 0)
        return 0;
    if (hi < 256)
        return next_byte(m) % (hi + 1);
    if (hi < 65536) {
        uint64_t v = next_byte(m);
        v |= (uint64_t)next_byte(m) << 8;
        return v % (hi + 1);
    }
    uint64_t v = next_u64(m);
    return hi == UINT64_MAX ? v : v % (hi + 1);
}

/* A size in [1, @max]: mostly 1..8, often up to 1000, sometimes anything up to @max. */
static uint64_t read_size(struct rate_model *m, uint64_t max)
{
    uint8_t b = next_byte(m);
    uint64_t v;
    if (b < 160)
        v = 1 + b % 8;
    else if (b < 230)
        v = 1 + read_upto(m, 999);
    else
        v = 1 + read_upto(m, max - 1);
    return v < max ? v : max;
}

static i128 clamp_time(i128 t)
{
    if (t > INT64_MAX)
        return INT64_MAX;
    if (t < INT64_MIN)
        return INT64_MIN;
    return t;
}

/* One token's worth of time, at least 1 ns: the scale of clock steps and deadlines. */
static i128 step_of(const struct rate_model *m)
{
    return (i128)m->period / (i128)m->tokens + 1;
}

/* A span of time: mostly up to two tokens' worth, sometimes up to the bucket's depth
 * twice over, rarely anything. */
static i128 read_span(struct rate_model *m)
{
    uint8_t b = next_byte(m);
    i128 step = step_of(m);
    if (b < 200) {
        i128 hi = 2 * step;
        return (i128)read_upto(m, hi > (i128)UINT64_MAX ? UINT64_MAX : (uint64_t)hi);
    }
    if (b < 245) {
        i128 hi = 2 * (i128)m->burst * step;
        return (i128)read_upto(m, hi > (i128)INT64_MAX ? (uint64_t)INT64_MAX : (uint64_t)hi);
    }
    return (i128)(next_u64(m) >> 1);
}

/* A token count: mostly small, often up to the burst, sometimes the burst, one above it
 * (E2BIG), 0 (EINVAL) or near UINT64_MAX. */
static uint64_t read_n(struct rate_model *m)
{
    uint8_t b = next_byte(m);
    uint64_t small = m->burst < 8 ? m->burst : 8;
    if (b < 150)
        return 1 + b % small;
    if (b < 200)
        return 1 + read_upto(m, m->burst); /* up to burst + 1 */
    if (b < 220)
        return m->burst;
    if (b < 235)
        return m->burst + 1;
    if (b < 245)
        return 0;
    return UINT64_MAX - (b & 3);
}

/* A deadline on the hook's clock: BAND_FOREVER, INT64_MIN, in the past, now, or ahead. */
static band_time read_deadline(struct rate_model *m)
{
    uint8_t b = next_byte(m);
    if (b < 40)
        return BAND_FOREVER;
    if (b < 50)
        return INT64_MIN;
    if (b < 75)
        return (band_time)clamp_time((i128)m->clock - 1 - read_span(m));
    if (b < 90)
        return m->clock;
    return (band_time)clamp_time((i128)m->clock + read_span(m));
}

static const uint64_t x_tokens[] = {1,
                                    2,
                                    3,
                                    1000,
                                    1000000000,
                                    (UINT64_C(1) << 32) + 1,
                                    UINT64_C(1) << 62,
                                    (uint64_t)INT64_MAX - 1,
                                    (uint64_t)INT64_MAX};
static const band_time x_periods[] = {
    1,        2, 3, 1000, BAND_SEC, INT64_C(1) << 40, INT64_MAX / 3, INT64_MAX / 2, INT64_MAX - 1,
    INT64_MAX};

struct settings {
    uint64_t tokens, burst;
    band_time period;
};

/* Settings for an exact or extreme run; with @invalid, one time in eight an invalid or
 * overflowing one. */
static struct settings read_settings(struct rate_model *m, int invalid)
{
    struct settings s;
    uint8_t b = next_byte(m);
    if (m->extreme) {
        s.tokens = x_tokens[next_byte(m) % (sizeof(x_tokens) / sizeof(x_tokens[0]))];
        s.period = x_periods[next_byte(m) % (sizeof(x_periods) / sizeof(x_periods[0]))];
        uint64_t full = (uint64_t)(INT64_MAX / s.period); /* the largest burst allowed */
        switch (next_byte(m) % 6) {
        case 0:
            s.burst = 1;
            break;
        case 1:
            s.burst = full < 2 ? full : 2 + (uint64_t)(next_byte(m) % 6);
            break;
        case 2:
            s.burst = full;
            break;
        case 3:
            s.burst = full > 1 ? full - 1 : 1;
            break;
        case 4:
            s.burst = full / 2 + 1;
            break;
        default:
            s.burst = full;
            break;
        }
        if (s.burst > full)
            s.burst = full;
    } else {
        s.tokens = read_size(m, EXACT_TOKENS);
        s.period = (band_time)read_size(m, (uint64_t)EXACT_PERIOD);
        s.burst = read_size(m, EXACT_BURST);
    }
    if (invalid && (b & 7) == 0) {
        switch ((b >> 3) % 7) {
        case 0:
            s.tokens = 0;
            break;
        case 1:
            s.period = 0;
            break;
        case 2:
            s.period = (b & 0x80) ? INT64_MIN : -1;
            break;
        case 3:
            s.burst = 0;
            break;
        case 4:
            s.tokens = (b & 0x80) ? UINT64_MAX : (uint64_t)INT64_MAX + 1;
            break;
        case 5:
            s.burst = (uint64_t)(INT64_MAX / s.period) + 1; /* depth past INT64_MAX */
            break;
        default:
            s.burst = UINT64_MAX;
            break;
        }
    }
    return s;
}

/* What band_rate_create() and band_rate_set() answer for @s before looking at the state. */
static int settings_rc(struct settings s)
{
    if (s.tokens == 0 || s.period <= 0 || s.burst == 0 || s.tokens > (uint64_t)INT64_MAX)
        return BAND_EINVAL;
    if ((i128)s.burst * s.period > (i128)INT64_MAX)
        return BAND_EOVERFLOW;
    return 0;
}

/* The starting clock: mostly small, sometimes negative or at the ends of the range. */
static band_time read_start(struct rate_model *m)
{
    uint8_t b = next_byte(m);
    if (b < 180)
        return (band_time)read_upto(m, 1000000);
    if (b < 200)
        return -(band_time)read_upto(m, 1000000);
    if (b < 215)
        return INT64_MIN;
    if (b < 235)
        return INT64_MIN + (band_time)read_upto(m, 65535);
    if (b < 255)
        return INT64_MAX - (band_time)read_upto(m, UINT64_C(1) << 40);
    return INT64_MAX;
}

/* ---------------------------------------------------------------------------------- */
/* the reference                                                                       */

static i128 depth(const struct rate_model *m)
{
    return (i128)m->burst * m->period;
}

static i128 ceil_div(i128 a, i128 b)
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

static i128 floor_div(i128 a, i128 b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* 1 when a level of @level (1/period tokens) is full again within INT64_MAX ns and no
 * later than INT64_MAX, at @tokens per ns and depth @d. */
static int fits(const struct rate_model *m, i128 level, i128 d, uint64_t tokens)
{
    i128 ns = ceil_div(d - level, (i128)tokens);
    i128 room = m->seen >= 0 ? (i128)INT64_MAX - m->seen : (i128)INT64_MAX;
    return ns <= room;
}

/* The clock hook: the bucket's time follows the latest value returned. */
static band_time hook_clock(void *ctx)
{
    struct rate_model *m = ctx;
    if (!m->seen_any) {
        m->seen_any = 1;
        m->seen = m->clock;
    } else if (m->clock > m->seen) {
        if (!m->extreme) {
            m->level += ((i128)m->clock - m->seen) * (i128)m->tokens;
            if (m->level > depth(m))
                m->level = depth(m);
        }
        m->seen = m->clock;
    } else if (m->clock < m->seen) {
        m->counts.stale_clock++;
    }
    return m->clock;
}

static void hook_sleep(void *ctx, band_time until)
{
    struct rate_model *m = ctx;
    m->sleeps++;
    m->slept_until = until;
    if (until > m->clock)
        m->clock = until;
}

static void grant(struct rate_model *m, uint64_t n)
{
    m->granted++;
    if (__builtin_add_overflow(m->granted_tokens, n, &m->granted_tokens))
        m->granted_tokens = UINT64_MAX;
    m->counts.granted++;
}

/* ---------------------------------------------------------------------------------- */
/* operations                                                                          */

static void op_try(struct rate_model *m);
static void op_book(struct rate_model *m, int wait_op);
static void op_cancel(struct rate_model *m);
static void op_set(struct rate_model *m);
static void op_close(struct rate_model *m);
static void op_available(struct rate_model *m);

/* The test hook of a raced try: another operation, at the same clock, between the fast
 * path's read of the word and its compare-and-swap. It completes first, so the reference
 * applies it first; the try's own expectation is computed after the call. */
static void race_hook(void *ctx)
{
    struct rate_model *m = ctx;
    m->in_race = 1;
    m->counts.raced++;
    switch (next_byte(m) % 6) {
    case 0:
        op_try(m);
        break;
    case 1:
        op_book(m, 0);
        break;
    case 2:
        op_cancel(m);
        break;
    case 3:
        op_set(m);
        break;
    case 4:
        op_close(m);
        break;
    default:
        op_available(m);
        break;
    }
    m->in_race = 0;
}

static void op_try(struct rate_model *m)
{
    uint64_t n = read_n(m);
    uint64_t avail = m->extreme ? band_rate_available(m->r) : 0;
    /* Exact runs only: the extreme checks read available() before the call. */
    int race = !m->extreme && !m->in_race && next_byte(m) < 64;
    if (race)
        band__rate_cas_hook(m->r, race_hook, m);
    band_time retry = -1;
    int rc = band_rate_try_acquire(m->r, n, &retry);
    if (race)
        band__rate_cas_hook(m->r, NULL, NULL); /* when the try never reached its CAS */
    count_rc(m, rc);
    int want;
    band_time want_retry = 0;
    if (n == 0) {
        want = BAND_EINVAL;
    } else if (m->closed) {
        want = BAND_ECLOSED;
        m->refused_closed++;
    } else if (n > m->burst) {
        want = BAND_E2BIG;
        m->refused_too_big++;
    } else if (m->extreme) {
        /* Taken exactly when available() counts the tokens (EOVERFLOW allowed then). */
        if (avail < n) {
            want = BAND_EAGAIN;
            expect_true(m, "try: a refusal's retry-after is > 0", retry > 0);
            want_retry = retry;
            m->refused_rate++;
        } else if (rc == BAND_EOVERFLOW) {
            want = BAND_EOVERFLOW;
        } else {
            want = 0;
            grant(m, n);
        }
    } else {
        i128 after = m->level - (i128)n * m->period;
        if (after >= 0) {
            if (!fits(m, after, depth(m), m->tokens)) {
                want = BAND_EOVERFLOW;
            } else {
                want = 0;
                m->level = after;
                grant(m, n);
            }
        } else {
            want = BAND_EAGAIN;
            want_retry = (band_time)ceil_div(-after, (i128)m->tokens);
            m->refused_rate++;
        }
    }
    expect_rc(m, "try", want, rc);
    expect_i64(m, "try retry-after", want_retry, retry);
}

/* reserve (@wait_op 0) or wait (1). */
static void op_book(struct rate_model *m, int wait_op)
{
    int i = (int)(next_byte(m) % NT);
    int busy_ticket = 0;
    if (!wait_op && m->b[i].live) {
        if ((next_byte(m) & 3) == 0) {
            busy_ticket = 1; /* a ticket that is not empty: EINVAL */
        } else {
            for (int k = 0; k < NT; k++)
                if (!m->b[k].live) {
                    i = k;
                    break;
                }
            busy_ticket = m->b[i].live;
        }
    }
    uint64_t n = read_n(m);
    band_time deadline = read_deadline(m);
    uint64_t avail = m->extreme ? band_rate_available(m->r) : 0;
    band_time before_at = m->tk[i].at;
    band_time delay = -1;
    m->sleeps = 0;
    int rc = wait_op ? band_rate_acquire(m->r, n, &delay, deadline, NULL)
                     : band_rate_reserve(m->r, n, &m->tk[i], &delay, deadline);
    count_rc(m, rc);
    const char *what = wait_op ? "wait" : "reserve";
    int want;
    band_time want_delay = 0;
    band_time at = 0;
    if (n == 0 || busy_ticket) {
        want = BAND_EINVAL;
    } else if (m->closed) {
        want = BAND_ECLOSED;
        m->refused_closed++;
    } else if (n > m->burst) {
        want = BAND_E2BIG;
        m->refused_too_big++;
    } else if (m->extreme) {
        /* The contract, where the arithmetic cannot be followed. */
        band_time wait = rc == 0 && !wait_op ? delay : 0;
        if (rc == 0) {
            want = 0;
            if (!wait_op) {
                expect_true(m, "reserve: delay >= 0", delay >= 0);
                expect_true(m, "reserve: starts at once exactly when the tokens are there",
                            (delay == 0) == (avail >= n));
                at = m->tk[i].at;
                expect_true(m, "reserve: slot = bucket time + delay",
                            (i128)at == (i128)m->seen + delay);
                expect_true(m, "reserve: a delayed slot is never after the deadline",
                            delay == 0 || at <= deadline);
                want_delay = delay;
            } else {
                expect_true(m, "wait: slept exactly when the tokens were not there",
                            (m->sleeps > 0) == (avail < n));
                wait = m->sleeps > 0 ? m->slept_until - m->seen : 0;
                at = m->seen + wait;
                expect_true(m, "wait: slept until a slot after now, never after the deadline",
                            m->sleeps == 0 || (wait > 0 && at <= deadline));
            }
        } else if (rc == BAND_ETIMEDOUT) {
            want = BAND_ETIMEDOUT;
            want_delay = delay;
            expect_true(m, "refused by the deadline: delay > 0, tokens not there",
                        delay > 0 && avail < n);
            expect_true(m, "refused by the deadline: the slot is after it",
                        (i128)m->seen + delay > (i128)deadline);
            m->refused_deadline++;
        } else {
            want = BAND_EOVERFLOW; /* always allowed here */
        }
        if (rc == 0) {
            grant(m, n);
            if (wait > 0) {
                m->delayed++;
                m->counts.delayed++;
            }
        }
    } else {
        i128 after = m->level - (i128)n * m->period;
        i128 wait = after >= 0 ? 0 : ceil_div(-after, (i128)m->tokens);
        if (!fits(m, after, depth(m), m->tokens)) {
            want = BAND_EOVERFLOW;
        } else if (wait > 0 && (i128)m->seen + wait > (i128)deadline) {
            want = BAND_ETIMEDOUT;
            want_delay = (band_time)wait;
            m->refused_deadline++;
        } else {
            want = 0;
            at = (band_time)(m->seen + wait);
            want_delay = wait_op ? 0 : (band_time)wait;
            m->level = after;
            grant(m, n);
            if (wait > 0) {
                m->delayed++;
                m->counts.delayed++;
            }
            if (wait_op) {
                expect_i64(m, "wait: sleeps", wait > 0, m->sleeps);
                if (wait > 0)
                    expect_i64(m, "wait: slept until the slot", at, m->slept_until);
            } else {
                expect_i64(m, "reserve: slot", at, m->tk[i].at);
            }
        }
    }
    expect_rc(m, what, want, rc);
    expect_i64(m, wait_op ? "wait retry-after" : "reserve delay", want_delay, delay);
    if (rc == 0 && deadline < m->seen)
        m->counts.past_deadline++;
    if (wait_op) {
        if (rc != 0)
            expect_i64(m, "refused wait: sleeps", 0, m->sleeps);
        m->counts.sleeps += (uint64_t)m->sleeps;
    } else if (rc == 0) {
        expect_true(m, "reserve: ticket filled", m->tk[i].rate == m->r);
        m->b[i].live = 1;
        m->b[i].at = at;
        m->b[i].n = n;
    } else if (!busy_ticket) {
        expect_true(m, "refused reserve: ticket still empty", m->tk[i].rate == NULL);
    } else {
        expect_i64(m, "refused reserve: ticket unchanged", before_at, m->tk[i].at);
    }
}

static void op_cancel(struct rate_model *m)
{
    uint8_t b = next_byte(m);
    if (b >= 248) {
        expect_rc(m, "cancel(NULL)", BAND_EINVAL, band_rate_ticket_cancel(NULL));
        m->counts.einval++;
        return;
    }
    int i = b % NT;
    for (int k = 0; k < NT && !m->b[i].live && (b & 0x40) == 0; k++)
        i = (i + 1) % NT; /* mostly a booking that is held */
    int rc = band_rate_ticket_cancel(&m->tk[i]);
    count_rc(m, rc);
    int want;
    if (!m->b[i].live) {
        want = BAND_EINVAL;
    } else if (m->b[i].at <= m->seen) {
        want = BAND_EALREADY;
        m->b[i].live = 0;
        m->counts.ealready++;
    } else {
        want = 0;
        m->b[i].live = 0;
        if (!m->extreme) {
            m->level += (i128)m->b[i].n * m->period;
            if (m->level > depth(m))
                m->level = depth(m);
        }
        m->cancelled++;
        m->granted--;
        if (m->granted_tokens != UINT64_MAX)
            m->granted_tokens -= m->b[i].n;
        m->delayed--;
        m->counts.cancels_ok++;
    }
    expect_rc(m, "cancel", want, rc);
    expect_true(m, "cancel: ticket empty after", m->tk[i].rate == NULL);
}

static void op_set(struct rate_model *m)
{
    struct settings s = read_settings(m, 1);
    uint64_t before = band_rate_available(m->r);
    i128 old_level = m->level;
    int rc = band_rate_set(m->r, s.tokens, s.period, s.burst);
    count_rc(m, rc);
    int want = settings_rc(s);
    if (want == 0 && m->extreme) {
        want = rc == BAND_EOVERFLOW ? BAND_EOVERFLOW : 0;
    } else if (want == 0) {
        i128 level = floor_div(m->level * s.period, m->period);
        i128 d = (i128)s.burst * s.period;
        if (level > d)
            level = d;
        if (!fits(m, level, d, s.tokens)) {
            want = BAND_EOVERFLOW;
        } else {
            m->level = level;
        }
    }
    expect_rc(m, "set", want, rc);
    if (rc == BAND_EOVERFLOW)
        expect_u64(m, "refused set: nothing changes", before, band_rate_available(m->r));
    if (rc != 0 || want != 0)
        return;
    m->tokens = s.tokens;
    m->period = s.period;
    m->burst = s.burst;
    m->counts.sets_ok++;
    if (!m->extreme && old_level > (i128)s.burst * (i128)m->period)
        m->counts.sets_clamped++;
    if (!m->extreme && old_level < 0)
        m->counts.sets_owing++;
    if (m->extreme && before > s.burst)
        m->counts.sets_clamped++;
    /* The whole tokens held stay, clamped to the new burst. */
    uint64_t after = band_rate_available(m->r);
    expect_u64(m, "set: whole tokens kept", before < s.burst ? before : s.burst, after);
}

static void op_advance(struct rate_model *m)
{
    m->clock = (band_time)clamp_time((i128)m->clock + read_span(m));
}

static void op_step_back(struct rate_model *m)
{
    m->clock = (band_time)clamp_time((i128)m->clock - read_span(m));
}

static void op_jump(struct rate_model *m)
{
    uint8_t b = next_byte(m);
    switch (b % 6) {
    case 0:
        m->clock = INT64_MIN + (band_time)read_upto(m, 255);
        break;
    case 1:
        m->clock = -(band_time)read_upto(m, 255);
        break;
    case 2:
        m->clock = (band_time)read_upto(m, 255);
        break;
    case 3:
        /* just before the bucket could no longer be refilled */
        m->clock = (band_time)clamp_time((i128)INT64_MAX - (i128)m->burst * step_of(m) -
                                         (i128)read_upto(m, 255));
        break;
    case 4:
        m->clock = INT64_MAX - (band_time)read_upto(m, 255);
        break;
    default:
        m->clock = b & 0x80 ? INT64_MAX : INT64_MIN;
        break;
    }
}

static uint64_t ref_available(const struct rate_model *m)
{
    return m->level <= 0 ? 0 : (uint64_t)(m->level / m->period);
}

static void op_available(struct rate_model *m)
{
    uint64_t got = band_rate_available(m->r);
    if (m->extreme)
        expect_true(m, "available <= burst", got <= m->burst);
    else
        expect_u64(m, "available", ref_available(m), got);
}

static void check_stats(struct rate_model *m, const char *when)
{
    band_rate_stats st;
    int rc = band_rate_get_stats(m->r, &st);
    if (rc != 0) {
        fail(m, "%s: get_stats returned %d", when, rc);
        return;
    }
    expect_u64(m, "stats.tokens", m->tokens, st.tokens);
    expect_i64(m, "stats.period", m->period, st.period);
    expect_u64(m, "stats.burst", m->burst, st.burst);
    if (m->extreme)
        expect_true(m, "stats.available <= burst", st.available <= m->burst);
    else
        expect_u64(m, "stats.available", ref_available(m), st.available);
    expect_u64(m, "stats.granted", m->granted, st.granted);
    expect_u64(m, "stats.granted_tokens", m->granted_tokens, st.granted_tokens);
    expect_u64(m, "stats.delayed", m->delayed, st.delayed);
    expect_u64(m, "stats.refused_rate", m->refused_rate, st.refused_rate);
    expect_u64(m, "stats.refused_deadline", m->refused_deadline, st.refused_deadline);
    expect_u64(m, "stats.refused_too_big", m->refused_too_big, st.refused_too_big);
    expect_u64(m, "stats.refused_closed", m->refused_closed, st.refused_closed);
    expect_u64(m, "stats.cancelled", m->cancelled, st.cancelled);
    expect_i64(m, "stats.closed", m->closed, st.closed);
    expect_true(m, "stats.delayed <= granted", st.delayed <= st.granted);
}

static void op_close(struct rate_model *m)
{
    if ((next_byte(m) & 7) == 0) {
        expect_rc(m, "close(NULL)", BAND_EINVAL, band_rate_close(NULL));
        m->counts.einval++;
    }
    expect_rc(m, "close", 0, band_rate_close(m->r));
    m->closed = 1;
}

/* ---------------------------------------------------------------------------------- */
/* buckets                                                                             */

static void reset_tickets(struct rate_model *m)
{
    for (int i = 0; i < NT; i++) {
        band_rate_ticket z = BAND_RATE_TICKET_INIT;
        m->tk[i] = z;
        m->b[i].live = 0;
    }
}

static void destroy_bucket(struct rate_model *m)
{
    if (m->r == NULL)
        return;
    (void)band_rate_destroy(m->r); /* bookings held become dangling: forget them */
    m->r = NULL;
    reset_tickets(m);
}

/* A new bucket from the input: an invalid setting first now and then (its refusal is
 * checked), then a valid one. 0, or -1 after a mismatch. */
static int create_bucket(struct rate_model *m)
{
    destroy_bucket(m);
    struct settings s = read_settings(m, 1);
    m->clock = read_start(m);
    band_rate_opts o;
    memset(&o, 0, sizeof(o));
    o.clock = hook_clock;
    o.clock_ctx = m;
    o.sleep = hook_sleep;
    o.sleep_ctx = m;
    for (int attempt = 0; attempt < 2; attempt++) {
        band_rate *r = NULL;
        int rc = band_rate_create(&r, s.tokens, s.period, s.burst, &o);
        int want = settings_rc(s);
        expect_rc(m, "create", want, rc);
        if (m->failed) {
            if (rc == 0)
                (void)band_rate_destroy(r);
            return -1;
        }
        if (rc == 0) {
            m->r = r;
            break;
        }
        count_rc(m, rc);
        s = read_settings(m, 0); /* then a valid one */
    }
    if (m->r == NULL) {
        fail(m, "create: a valid setting was refused");
        return -1;
    }
    m->tokens = s.tokens;
    m->period = s.period;
    m->burst = s.burst;
    m->level = depth(m); /* starts full */
    m->seen_any = 0;
    m->seen = INT64_MIN;
    m->closed = 0;
    m->granted = m->granted_tokens = m->delayed = m->cancelled = 0;
    m->refused_rate = m->refused_deadline = m->refused_too_big = m->refused_closed = 0;
    m->counts.buckets++;
    m->counts.extreme_runs += (uint64_t)m->extreme;
    return 0;
}

static const char *const op_names[RM_OP_COUNT] = {
    "try",  "reserve", "wait",      "cancel", "advance", "step_back",
    "jump", "set",     "available", "stats",  "close",   "recreate",
};

static enum rate_model_op decode_op(struct rate_model *m)
{
    uint8_t b = next_byte(m);
    if (m->closed && (b & 3) == 0)
        return RM_OP_RECREATE; /* a closed bucket refuses everything: do not linger */
    if (b < 50)
        return RM_OP_TRY;
    if (b < 95)
        return RM_OP_RESERVE;
    if (b < 110)
        return RM_OP_WAIT;
    if (b < 135)
        return RM_OP_CANCEL;
    if (b < 180)
        return RM_OP_ADVANCE;
    if (b < 197)
        return RM_OP_STEP_BACK;
    if (b < 199)
        return RM_OP_JUMP; /* may leave the clock behind for the rest of the bucket's life */
    if (b < 215)
        return RM_OP_SET;
    if (b < 230)
        return RM_OP_AVAILABLE;
    if (b < 250)
        return RM_OP_STATS;
    if (b < 252)
        return RM_OP_CLOSE;
    if (b < 254)
        return RM_OP_RECREATE;
    return RM_OP_ADVANCE;
}

static void step(struct rate_model *m)
{
    enum rate_model_op op = decode_op(m);
    m->opno++;
    m->counts.ops[op]++;
    switch (op) {
    case RM_OP_TRY:
        op_try(m);
        break;
    case RM_OP_RESERVE:
        op_book(m, 0);
        break;
    case RM_OP_WAIT:
        op_book(m, 1);
        break;
    case RM_OP_CANCEL:
        op_cancel(m);
        break;
    case RM_OP_ADVANCE:
        op_advance(m);
        break;
    case RM_OP_STEP_BACK:
        op_step_back(m);
        break;
    case RM_OP_JUMP:
        op_jump(m);
        break;
    case RM_OP_SET:
        op_set(m);
        break;
    case RM_OP_AVAILABLE:
        op_available(m);
        break;
    case RM_OP_STATS:
        check_stats(m, "stats");
        break;
    case RM_OP_CLOSE:
        op_close(m);
        break;
    case RM_OP_RECREATE:
        (void)create_bucket(m);
        break;
    case RM_OP_COUNT:
        break;
    }
    if (m->trace)
        fprintf(stderr,
                "#%llu %-9s | %llu/%lld ns burst %llu clock %lld time %lld level %lld%s%s\n",
                (unsigned long long)m->opno, op_names[op], (unsigned long long)m->tokens,
                (long long)m->period, (unsigned long long)m->burst, (long long)m->clock,
                (long long)m->seen, m->extreme ? 0LL : (long long)m->level,
                m->closed ? " closed" : "", m->failed ? " MISMATCH" : "");
}

/* ---------------------------------------------------------------------------------- */
/* runs                                                                                */

struct rate_model *rate_model_new(void)
{
    struct rate_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    reset_tickets(m);
    const char *t = getenv("RATE_MODEL_TRACE");
    m->trace = t != NULL && *t != '\0' && *t != '0';
    return m;
}

void rate_model_free(struct rate_model *m)
{
    if (m == NULL)
        return;
    destroy_bucket(m);
    free(m);
}

static int run(struct rate_model *m, uint64_t max_ops)
{
    m->failed = 0;
    m->err[0] = '\0';
    m->opno = 0;
    m->extreme = (next_byte(m) & 7) == 7;
    if (create_bucket(m) != 0) {
        destroy_bucket(m);
        return -1;
    }
    for (uint64_t i = 0; i < max_ops && !m->failed; i++) {
        if (model_input_done(&m->in))
            break;
        step(m);
    }
    if (!m->failed)
        check_stats(m, "final");
    destroy_bucket(m);
    return m->failed ? -1 : 0;
}

int rate_model_run_bytes(struct rate_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    return run(m, UINT64_MAX);
}

int rate_model_run_seed(struct rate_model *m, uint64_t seed, uint64_t ops)
{
    model_input_seed(&m->in, seed);
    return run(m, ops);
}

const char *rate_model_error(const struct rate_model *m)
{
    return m->err;
}

const struct rate_model_counts *rate_model_counts(const struct rate_model *m)
{
    return &m->counts;
}

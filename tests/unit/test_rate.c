/* SPDX-License-Identifier: MIT */
/*
 * test_rate.c - the rate budget (band/rate.h), on a fake clock.
 *
 * Every test drives time by hand: the clock hook reads a counter and the sleep hook of
 * band_rate_acquire() moves it forward, so slots and retry-afters are checked to the
 * nanosecond. One test uses the real clock to check that a wait is never early.
 */
#include "test.h"

#include <string.h>

#include "band/rate.h"

struct fake_clock {
    band_time now;
    int sleeps;
};

static band_time fake_now(void *ctx)
{
    return ((struct fake_clock *)ctx)->now;
}

static void fake_sleep(void *ctx, band_time until)
{
    struct fake_clock *fc = ctx;
    fc->sleeps++;
    if (until > fc->now)
        fc->now = until;
}

static band_rate *mk(struct fake_clock *fc, uint64_t tokens, band_time period, uint64_t burst)
{
    band_rate_opts o;
    memset(&o, 0, sizeof(o));
    o.clock = fake_now;
    o.clock_ctx = fc;
    o.sleep = fake_sleep;
    o.sleep_ctx = fc;
    band_rate *r = NULL;
    assert_int_equal(band_rate_create(&r, tokens, period, burst, &o), 0);
    assert_non_null(r);
    return r;
}

static band_rate_stats stats_of(const band_rate *r)
{
    band_rate_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_rate_get_stats(r, &st), 0);
    return st;
}

static void test_create_args(void **state)
{
    (void)state;
    band_rate *r = NULL;
    band_rate_opts o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(band_rate_create(NULL, 1, BAND_SEC, 1, &o), BAND_EINVAL);
    assert_int_equal(band_rate_create(NULL, 1, BAND_SEC, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_rate_create(&r, 0, 0, 0, &o), BAND_EINVAL);        /* all zero */
    assert_int_equal(band_rate_create(&r, 1, BAND_SEC, 0, &o), BAND_EINVAL); /* burst 0 */
    assert_int_equal(band_rate_create(&r, 1, 0, 1, &o), BAND_EINVAL);        /* period 0 */
    assert_int_equal(band_rate_create(&r, 1, -1, 1, &o), BAND_EINVAL);
    /* Depth 2^64 ns. */
    assert_int_equal(band_rate_create(&r, 1, INT64_MAX, 2, &o), BAND_EOVERFLOW);
    o.sleep = fake_sleep; /* a sleep hook needs the clock it sleeps on */
    assert_int_equal(band_rate_create(&r, 1, BAND_SEC, 1, &o), BAND_EINVAL);
    assert_null(r);
    assert_int_equal(band_rate_create(&r, 0, BAND_SEC, 1, NULL), BAND_EINVAL);
    assert_null(r);
    /* NULL options and zero-initialised ones both mean the real clock. */
    memset(&o, 0, sizeof(o));
    assert_int_equal(band_rate_create(&r, 10, BAND_SEC, 5, &o), 0);
    assert_u64_equal(band_rate_available(r), 5);
    assert_int_equal(band_rate_destroy(r), 0);
    r = NULL;
    assert_int_equal(band_rate_create(&r, 10, BAND_SEC, 5, NULL), 0);
    assert_u64_equal(band_rate_available(r), 5);
    assert_int_equal(band_rate_destroy(r), 0);
    assert_int_equal(band_rate_destroy(NULL), 0);
    assert_u64_equal(band_rate_available(NULL), 0);
}

/* The bucket starts full; once empty, try refuses with the exact retry-after. */
static void test_starts_full_then_refuses(void **state)
{
    (void)state;
    struct fake_clock fc = {1000 * BAND_SEC, 0};
    band_rate *r = mk(&fc, 1, BAND_SEC, 5);
    assert_u64_equal(band_rate_available(r), 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(band_rate_try_acquire(r, 1, NULL), 0);
    band_time retry = -1;
    assert_int_equal(band_rate_try_acquire(r, 1, &retry), BAND_EAGAIN);
    assert_int_equal(retry, BAND_SEC);
    assert_int_equal(band_rate_try_acquire(r, 3, &retry), BAND_EAGAIN);
    assert_int_equal(retry, 3 * BAND_SEC);
    fc.now += BAND_SEC - 1;
    assert_int_equal(band_rate_try_acquire(r, 1, &retry), BAND_EAGAIN);
    assert_int_equal(retry, 1); /* never early, never late */
    fc.now += 1;
    assert_int_equal(band_rate_try_acquire(r, 1, NULL), 0);
    fc.now += 10 * BAND_SEC; /* refills to the burst, not beyond */
    assert_u64_equal(band_rate_available(r), 5);
    band_rate_stats st = stats_of(r);
    assert_u64_equal(st.granted, 6);
    assert_u64_equal(st.granted_tokens, 6);
    assert_u64_equal(st.refused_rate, 3);
    assert_u64_equal(st.available, 5);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* A request above the burst can never succeed: E2BIG at once, counted. */
static void test_too_big(void **state)
{
    (void)state;
    struct fake_clock fc = {0, 0};
    band_rate *r = mk(&fc, 10, BAND_SEC, 4);
    band_rate_ticket t = BAND_RATE_TICKET_INIT;
    assert_int_equal(band_rate_try_acquire(r, 5, NULL), BAND_E2BIG);
    assert_int_equal(band_rate_reserve(r, 5, &t, NULL, BAND_FOREVER), BAND_E2BIG);
    assert_int_equal(band_rate_acquire(r, 5, NULL, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_null(t.rate);
    assert_int_equal(band_rate_try_acquire(r, 4, NULL), 0);
    assert_int_equal(band_rate_try_acquire(r, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_rate_try_acquire(NULL, 1, NULL), BAND_EINVAL);
    assert_u64_equal(stats_of(r).refused_too_big, 3);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* 3 per second is 333333333.33 ns per token: the fraction never drifts. (A burst above 1
 * keeps the bucket from overflowing when the caller arrives a fraction of a ns late: a
 * full bucket loses what flows in, by definition.) */
static void test_fractional_rate_is_exact(void **state)
{
    (void)state;
    struct fake_clock fc = {0, 0};
    band_rate *r = mk(&fc, 3, BAND_SEC, 3);
    assert_int_equal(band_rate_try_acquire(r, 3, NULL), 0);
    for (int i = 1; i <= 3000; i++) {
        band_time retry = 0;
        if (band_rate_try_acquire(r, 1, &retry) == BAND_EAGAIN) {
            fc.now += retry; /* the exact ceiling of the slot */
            assert_int_equal(band_rate_try_acquire(r, 1, NULL), 0);
        }
        /* Token i may start at ceil(i / 3 s). */
        band_time want = (band_time)((i * BAND_SEC + 2) / 3);
        assert_int_equal(fc.now, want);
    }
    assert_int_equal(fc.now, 1000 * BAND_SEC);
    assert_u64_equal(stats_of(r).granted_tokens, 3003);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* reserve books consecutive slots and reports each delay; a booking past the deadline is
 * refused at once with its retry-after and books nothing. */
static void test_reserve_delays_and_deadline(void **state)
{
    (void)state;
    struct fake_clock fc = {50 * BAND_SEC, 0};
    band_rate *r = mk(&fc, 10, BAND_SEC, 2); /* 100 ms per token */
    band_rate_ticket t[4] = {BAND_RATE_TICKET_INIT, BAND_RATE_TICKET_INIT, BAND_RATE_TICKET_INIT,
                             BAND_RATE_TICKET_INIT};
    band_time d = -1;
    assert_int_equal(band_rate_reserve(r, 2, &t[0], &d, BAND_FOREVER), 0);
    assert_int_equal(d, 0); /* from the full bucket */
    assert_int_equal(t[0].at, fc.now);
    assert_int_equal(band_rate_reserve(r, 1, &t[1], &d, BAND_FOREVER), 0);
    assert_int_equal(d, 100 * BAND_MSEC);
    assert_int_equal(band_rate_reserve(r, 2, &t[2], &d, BAND_FOREVER), 0);
    assert_int_equal(d, 300 * BAND_MSEC);
    assert_int_equal(t[2].at, fc.now + 300 * BAND_MSEC);
    /* The next one would wait 400 ms: a deadline 399 ms away refuses it. */
    assert_int_equal(band_rate_reserve(r, 1, &t[3], &d, fc.now + 399 * BAND_MSEC), BAND_ETIMEDOUT);
    assert_int_equal(d, 400 * BAND_MSEC);
    assert_null(t[3].rate);
    assert_int_equal(band_rate_reserve(r, 1, &t[3], &d, fc.now + 400 * BAND_MSEC), 0);
    assert_int_equal(d, 400 * BAND_MSEC);
    assert_int_equal(band_rate_reserve(r, 1, &t[3], &d, BAND_FOREVER), BAND_EINVAL); /* full */
    band_rate_stats st = stats_of(r);
    assert_u64_equal(st.granted, 4);
    assert_u64_equal(st.granted_tokens, 6);
    assert_u64_equal(st.delayed, 3);
    assert_u64_equal(st.refused_deadline, 1);
    assert_u64_equal(st.available, 0);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* Cancelling a booking that is not due gives its tokens back; a due one stays spent. */
static void test_ticket_cancel(void **state)
{
    (void)state;
    struct fake_clock fc = {0, 0};
    band_rate *r = mk(&fc, 10, BAND_SEC, 1);
    band_rate_ticket a = BAND_RATE_TICKET_INIT, b = BAND_RATE_TICKET_INIT;
    band_rate_ticket c = BAND_RATE_TICKET_INIT;
    band_time d;
    assert_int_equal(band_rate_reserve(r, 1, &a, &d, BAND_FOREVER), 0); /* now */
    assert_int_equal(band_rate_reserve(r, 1, &b, &d, BAND_FOREVER), 0); /* +100 ms */
    assert_int_equal(band_rate_reserve(r, 1, &c, &d, BAND_FOREVER), 0); /* +200 ms */
    assert_int_equal(d, 200 * BAND_MSEC);
    assert_int_equal(band_rate_ticket_cancel(&a), BAND_EALREADY); /* due at once */
    assert_null(a.rate);
    assert_int_equal(band_rate_ticket_cancel(&c), 0);
    assert_null(c.rate);
    assert_int_equal(band_rate_ticket_cancel(&c), BAND_EINVAL);
    assert_int_equal(band_rate_ticket_cancel(NULL), BAND_EINVAL);
    /* c's slot is free again: the next booking gets it. */
    assert_int_equal(band_rate_reserve(r, 1, &c, &d, BAND_FOREVER), 0);
    assert_int_equal(d, 200 * BAND_MSEC);
    fc.now += 100 * BAND_MSEC;
    assert_int_equal(band_rate_ticket_cancel(&b), BAND_EALREADY); /* its time has come */
    band_rate_stats st = stats_of(r);
    assert_u64_equal(st.cancelled, 1);
    assert_u64_equal(st.granted, 3);
    assert_u64_equal(st.granted_tokens, 3);
    assert_u64_equal(st.delayed, 2);
    /* Cancelling the last booking refills nothing beyond the burst. */
    assert_int_equal(band_rate_ticket_cancel(&c), 0);
    fc.now += 10 * BAND_SEC;
    assert_u64_equal(band_rate_available(r), 1);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* wait sleeps until its slot (the fake sleep moves the clock); past the deadline it is
 * refused at once, without sleeping and without taking anything. */
static void test_wait(void **state)
{
    (void)state;
    struct fake_clock fc = {7, 0};
    band_rate *r = mk(&fc, 1, 10 * BAND_MSEC, 1);
    assert_int_equal(band_rate_acquire(r, 1, NULL, BAND_FOREVER, NULL), 0);
    assert_int_equal(fc.sleeps, 0);
    assert_int_equal(band_rate_acquire(r, 1, NULL, BAND_FOREVER, NULL), 0);
    assert_int_equal(fc.sleeps, 1);
    assert_int_equal(fc.now, 7 + 10 * BAND_MSEC);
    band_time retry = 0;
    assert_int_equal(band_rate_acquire(r, 1, &retry, fc.now + 5 * BAND_MSEC, NULL), BAND_ETIMEDOUT);
    assert_int_equal(retry, 10 * BAND_MSEC);
    assert_int_equal(fc.sleeps, 1);
    assert_int_equal(band_rate_acquire(r, 1, &retry, fc.now + 10 * BAND_MSEC, NULL), 0);
    assert_int_equal(fc.now, 7 + 20 * BAND_MSEC);
    band_rate_stats st = stats_of(r);
    assert_u64_equal(st.granted, 3);
    assert_u64_equal(st.refused_deadline, 1);
    assert_int_equal(band_rate_destroy(r), 0);

    /* A custom clock without a sleep hook cannot wait. */
    band_rate_opts o;
    memset(&o, 0, sizeof(o));
    o.clock = fake_now;
    o.clock_ctx = &fc;
    assert_int_equal(band_rate_create(&r, 1, BAND_SEC, 1, &o), 0);
    assert_int_equal(band_rate_acquire(r, 1, NULL, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_rate_try_acquire(r, 1, NULL), 0);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* The real clock: a wait is never early. */
static void test_wait_real_clock_never_early(void **state)
{
    (void)state;
    band_rate *r = NULL;
    assert_int_equal(band_rate_create(&r, 200, BAND_SEC, 1, NULL), 0); /* 5 ms per token */
    assert_int_equal(band_rate_acquire(r, 1, NULL, BAND_FOREVER, NULL), 0);
    band_time t0 = band_now();
    assert_int_equal(band_rate_acquire(r, 1, NULL, BAND_FOREVER, NULL), 0);
    assert_true(band_now() - t0 >= 4 * BAND_MSEC); /* its slot was about 5 ms after t0 */
    assert_int_equal(band_rate_destroy(r), 0);
}

/* A rate change applies to tokens taken from then on; booked time stays booked. */
static void test_set_rate(void **state)
{
    (void)state;
    struct fake_clock fc = {0, 0};
    band_rate *r = mk(&fc, 1, BAND_SEC, 1);
    band_rate_ticket t = BAND_RATE_TICKET_INIT;
    band_time d;
    assert_int_equal(band_rate_try_acquire(r, 1, NULL), 0);
    assert_int_equal(band_rate_reserve(r, 1, &t, &d, BAND_FOREVER), 0);
    assert_int_equal(d, BAND_SEC);
    assert_int_equal(band_rate_set(r, 10, BAND_SEC, 2), 0); /* 100 ms per token, burst 2 */
    assert_int_equal(t.at, BAND_SEC);                       /* a booking is never moved */
    /* The bucket holds -1 token (one booked ahead): the next token needs two more, 200 ms
     * at the new rate. */
    band_rate_ticket u = BAND_RATE_TICKET_INIT;
    assert_int_equal(band_rate_reserve(r, 1, &u, &d, BAND_FOREVER), 0);
    assert_int_equal(d, 200 * BAND_MSEC);
    assert_int_equal(band_rate_set(r, 0, BAND_SEC, 1), BAND_EINVAL);
    assert_int_equal(band_rate_set(r, 1, INT64_MAX, 2), BAND_EOVERFLOW);
    assert_int_equal(band_rate_set(NULL, 1, BAND_SEC, 1), BAND_EINVAL);
    band_rate_stats st = stats_of(r);
    assert_u64_equal(st.tokens, 10);
    assert_u64_equal(st.burst, 2);
    assert_int_equal(st.period, BAND_SEC);
    /* A cancel gives the booking's token back at the current rate, also for the booking
     * made before the change: the bucket is left two tokens short, full at 200 ms. */
    assert_int_equal(band_rate_ticket_cancel(&u), 0);
    assert_int_equal(band_rate_ticket_cancel(&t), 0);
    band_time retry = 0;
    fc.now = 200 * BAND_MSEC - 1;
    assert_int_equal(band_rate_try_acquire(r, 2, &retry), BAND_EAGAIN);
    assert_int_equal(retry, 1);
    fc.now = 200 * BAND_MSEC;
    assert_int_equal(band_rate_try_acquire(r, 2, NULL), 0);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* A rate change keeps what has accrued: the state is advanced to now under the old rate,
 * and what remains is repaid at the new one. */
static void test_set_rate_keeps_accrual(void **state)
{
    (void)state;
    struct fake_clock fc = {0, 0};
    band_rate *r = mk(&fc, 10, BAND_SEC, 10); /* 100 ms per token */
    band_time retry = 0, d = 0;
    assert_int_equal(band_rate_try_acquire(r, 10, NULL), 0); /* drained at 0 */
    assert_int_equal(band_rate_try_acquire(r, 1, &retry), BAND_EAGAIN);
    assert_int_equal(retry, 100 * BAND_MSEC);
    fc.now = 50 * BAND_MSEC;                                 /* half a token has accrued */
    assert_int_equal(band_rate_set(r, 20, BAND_SEC, 10), 0); /* 50 ms per token */
    assert_int_equal(band_rate_try_acquire(r, 1, &retry), BAND_EAGAIN);
    assert_int_equal(retry, 25 * BAND_MSEC); /* the other half at the new rate */
    band_rate_ticket t = BAND_RATE_TICKET_INIT;
    assert_int_equal(band_rate_reserve(r, 1, &t, &d, BAND_FOREVER), 0);
    assert_int_equal(t.at, 75 * BAND_MSEC);
    assert_int_equal(d, 25 * BAND_MSEC);
    fc.now = 75 * BAND_MSEC + 50 * BAND_MSEC * 9; /* the other nine refill at 50 ms each */
    assert_u64_equal(band_rate_available(r), 9);
    fc.now += 50 * BAND_MSEC - 1;
    assert_u64_equal(band_rate_available(r), 9);
    fc.now += 1;
    assert_u64_equal(band_rate_available(r), 10);
    assert_int_equal(band_rate_destroy(r), 0);

    /* Lowering the rate: half of a 100 ms token has accrued at 50 ms; at 5 per second the
     * other half takes 100 ms. */
    fc.now = 0;
    r = mk(&fc, 10, BAND_SEC, 1);
    assert_int_equal(band_rate_try_acquire(r, 1, NULL), 0);
    fc.now = 50 * BAND_MSEC;
    assert_int_equal(band_rate_set(r, 5, BAND_SEC, 1), 0);
    assert_int_equal(band_rate_try_acquire(r, 1, &retry), BAND_EAGAIN);
    assert_int_equal(retry, 100 * BAND_MSEC);
    fc.now = 150 * BAND_MSEC;
    assert_int_equal(band_rate_try_acquire(r, 1, NULL), 0);
    assert_int_equal(band_rate_destroy(r), 0);

    /* A debt of booked tokens stays owed in tokens: two bookings ahead at 1 per second
     * (the bucket is two tokens short at 0) are repaid in 200 ms at 10 per second. */
    fc.now = 0;
    r = mk(&fc, 1, BAND_SEC, 1);
    band_rate_ticket a = BAND_RATE_TICKET_INIT, b = BAND_RATE_TICKET_INIT;
    assert_int_equal(band_rate_reserve(r, 1, &a, &d, BAND_FOREVER), 0);
    assert_int_equal(band_rate_reserve(r, 1, &b, &d, BAND_FOREVER), 0);
    assert_int_equal(d, BAND_SEC);
    assert_int_equal(band_rate_set(r, 10, BAND_SEC, 1), 0);
    assert_int_equal(b.at, BAND_SEC); /* a booking is never moved */
    assert_int_equal(band_rate_try_acquire(r, 1, &retry), BAND_EAGAIN);
    assert_int_equal(retry, 200 * BAND_MSEC);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* A burst change keeps what has accrued: the bucket holds what it held (clamped to a
 * lower burst) and refills at the rate up to the new burst. */
static void test_set_burst_keeps_accrual(void **state)
{
    (void)state;
    struct fake_clock fc = {0, 0};
    band_rate *r = mk(&fc, 1, BAND_SEC, 3);
    band_time retry = 0;
    assert_int_equal(band_rate_try_acquire(r, 3, NULL), 0); /* empty */
    assert_int_equal(band_rate_set(r, 1, BAND_SEC, 20), 0);
    assert_u64_equal(band_rate_available(r), 0); /* nothing minted */
    assert_int_equal(band_rate_try_acquire(r, 1, &retry), BAND_EAGAIN);
    assert_int_equal(retry, BAND_SEC);
    fc.now = 5 * BAND_SEC;
    assert_u64_equal(band_rate_available(r), 5);
    fc.now = 20 * BAND_SEC;
    assert_u64_equal(band_rate_available(r), 20);
    fc.now = 30 * BAND_SEC;
    assert_u64_equal(band_rate_available(r), 20);
    /* Lowered below what it holds: clamped. */
    assert_int_equal(band_rate_try_acquire(r, 10, NULL), 0); /* 10 held */
    assert_int_equal(band_rate_set(r, 1, BAND_SEC, 5), 0);
    assert_u64_equal(band_rate_available(r), 5);
    fc.now += 100 * BAND_SEC;
    assert_u64_equal(band_rate_available(r), 5);
    /* Lowered above what it holds: kept, and the refill stops at the new burst. */
    assert_int_equal(band_rate_try_acquire(r, 4, NULL), 0); /* 1 held */
    fc.now += BAND_SEC / 2;                                 /* 1.5 held */
    assert_int_equal(band_rate_set(r, 1, BAND_SEC, 2), 0);
    assert_u64_equal(band_rate_available(r), 1);
    assert_int_equal(band_rate_try_acquire(r, 2, &retry), BAND_EAGAIN);
    assert_int_equal(retry, BAND_SEC / 2);
    fc.now += BAND_SEC / 2;
    assert_u64_equal(band_rate_available(r), 2);
    fc.now += 10 * BAND_SEC;
    assert_u64_equal(band_rate_available(r), 2);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* A deadline at or before now means "only if it can be had now", as everywhere else. */
static void test_past_deadline_takes_what_is_there(void **state)
{
    (void)state;
    struct fake_clock fc = {10 * BAND_SEC, 0};
    band_rate *r = mk(&fc, 1, BAND_SEC, 3);
    band_rate_ticket t = BAND_RATE_TICKET_INIT;
    band_time d = -1;
    assert_int_equal(band_rate_reserve(r, 1, &t, &d, fc.now - 1), 0);
    assert_int_equal(d, 0);
    assert_int_equal(t.at, fc.now);
    band_rate_ticket u = BAND_RATE_TICKET_INIT;
    assert_int_equal(band_rate_reserve(r, 1, &u, &d, INT64_MIN), 0);
    assert_int_equal(d, 0);
    band_time retry = -1;
    assert_int_equal(band_rate_acquire(r, 1, &retry, fc.now - BAND_SEC, NULL), 0);
    assert_int_equal(retry, 0);
    assert_int_equal(fc.sleeps, 0);
    /* Empty now: a past deadline refuses at once, with the retry-after. */
    band_rate_ticket v = BAND_RATE_TICKET_INIT;
    assert_int_equal(band_rate_reserve(r, 1, &v, &d, fc.now), BAND_ETIMEDOUT);
    assert_int_equal(d, BAND_SEC);
    assert_null(v.rate);
    assert_int_equal(band_rate_acquire(r, 1, &retry, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(retry, BAND_SEC);
    assert_int_equal(fc.sleeps, 0);
    band_rate_stats st = stats_of(r);
    assert_u64_equal(st.granted, 3);
    assert_u64_equal(st.delayed, 0);
    assert_u64_equal(st.refused_deadline, 2);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* A clock that steps back: no time elapsed. No counter wraps, the bucket is not drained
 * by the step, and a booking made at once stays due. */
static void test_clock_steps_back(void **state)
{
    (void)state;
    struct fake_clock fc = {1000 * BAND_MSEC, 0};
    band_rate *r = mk(&fc, 10, BAND_SEC, 1);
    band_rate_ticket t = BAND_RATE_TICKET_INIT;
    band_time d = -1, retry = -1;
    assert_int_equal(band_rate_reserve(r, 1, &t, &d, BAND_FOREVER), 0);
    assert_int_equal(d, 0); /* at once: not delayed */
    fc.now = 500 * BAND_MSEC;
    assert_int_equal(band_rate_ticket_cancel(&t), BAND_EALREADY); /* it was due at 1 s */
    band_rate_stats st = stats_of(r);
    assert_u64_equal(st.delayed, 0);
    assert_u64_equal(st.cancelled, 0);
    assert_u64_equal(st.granted, 1);
    /* The next token is 100 ms after 1 s, whatever the clock says meanwhile. */
    assert_int_equal(band_rate_try_acquire(r, 1, &retry), BAND_EAGAIN);
    assert_int_equal(retry, 100 * BAND_MSEC);
    fc.now = 1050 * BAND_MSEC;
    assert_int_equal(band_rate_try_acquire(r, 1, &retry), BAND_EAGAIN);
    assert_int_equal(retry, 50 * BAND_MSEC);
    /* A delayed booking, then a step back: cancelling it gives its token back once. */
    band_rate_ticket u = BAND_RATE_TICKET_INIT;
    assert_int_equal(band_rate_reserve(r, 1, &u, &d, BAND_FOREVER), 0);
    assert_int_equal(u.at, 1100 * BAND_MSEC);
    fc.now = 0;
    assert_int_equal(band_rate_ticket_cancel(&u), 0);
    st = stats_of(r);
    assert_u64_equal(st.delayed, 0);
    assert_u64_equal(st.cancelled, 1);
    assert_u64_equal(st.granted, 1);
    assert_u64_equal(st.available, 0);
    fc.now = 1100 * BAND_MSEC;
    assert_u64_equal(band_rate_available(r), 1);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* The ends of the clock's range: a bucket starts full whatever the clock reads; near
 * INT64_MAX the tokens still in the bucket are counted, and what cannot be represented
 * is refused with EOVERFLOW, changing nothing. */
static void test_clock_extremes(void **state)
{
    (void)state;
    struct fake_clock fc = {INT64_MIN, 0};
    band_rate *r = mk(&fc, 1, INT64_MAX / 2, 1);
    assert_u64_equal(band_rate_available(r), 1);
    assert_int_equal(band_rate_try_acquire(r, 1, NULL), 0);
    assert_u64_equal(band_rate_available(r), 0);
    band_rate_ticket t = BAND_RATE_TICKET_INIT, u = BAND_RATE_TICKET_INIT;
    band_time d = -1;
    assert_int_equal(band_rate_reserve(r, 1, &t, &d, BAND_FOREVER), 0);
    assert_int_equal(d, INT64_MAX / 2);
    assert_int_equal(t.at, INT64_MIN + INT64_MAX / 2);
    /* A third token would leave the bucket 3 x (INT64_MAX / 2) ns from full. */
    assert_int_equal(band_rate_reserve(r, 1, &u, &d, BAND_FOREVER), BAND_EOVERFLOW);
    assert_null(u.rate);
    fc.now = INT64_MAX; /* 2^64 - 1 ns later: full again */
    assert_u64_equal(band_rate_available(r), 1);
    assert_int_equal(band_rate_ticket_cancel(&t), BAND_EALREADY);
    assert_int_equal(band_rate_try_acquire(r, 1, NULL), BAND_EOVERFLOW); /* refill past INT64_MAX */
    assert_u64_equal(band_rate_available(r), 1);
    assert_int_equal(band_rate_destroy(r), 0);

    fc.now = INT64_MAX - 2 * BAND_SEC;
    r = mk(&fc, 1, BAND_SEC, 5);
    assert_int_equal(band_rate_try_acquire(r, 2, NULL), 0); /* full again exactly at INT64_MAX */
    assert_u64_equal(band_rate_available(r), 3);
    assert_int_equal(band_rate_try_acquire(r, 1, NULL), BAND_EOVERFLOW);
    assert_u64_equal(band_rate_available(r), 3);
    fc.now += BAND_SEC;
    assert_u64_equal(band_rate_available(r), 4);
    band_rate_stats st = stats_of(r);
    assert_u64_equal(st.granted, 1);
    assert_u64_equal(st.granted_tokens, 2);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* The ends of the settings' range. */
static void test_settings_extremes(void **state)
{
    (void)state;
    struct fake_clock fc = {0, 0};
    band_rate_opts o;
    memset(&o, 0, sizeof(o));
    o.clock = fake_now;
    o.clock_ctx = &fc;
    o.sleep = fake_sleep;
    o.sleep_ctx = &fc;
    band_rate *r = NULL;
    uint64_t tokens, burst;
    band_time period;
    tokens = (uint64_t)INT64_MAX + 1;
    period = BAND_SEC;
    burst = 1;
    assert_int_equal(band_rate_create(&r, tokens, period, burst, &o), BAND_EINVAL);
    tokens = 1;
    period = INT64_MIN;
    assert_int_equal(band_rate_create(&r, tokens, period, burst, &o), BAND_EINVAL);
    period = 1;
    burst = UINT64_MAX;
    assert_int_equal(band_rate_create(&r, tokens, period, burst, &o), BAND_EOVERFLOW);
    burst = (uint64_t)INT64_MAX; /* INT64_MAX tokens of 1 ns each */
    assert_int_equal(band_rate_create(&r, tokens, period, burst, &o), 0);
    assert_u64_equal(band_rate_available(r), (uint64_t)INT64_MAX);
    assert_int_equal(band_rate_try_acquire(r, UINT64_MAX, NULL), BAND_E2BIG);
    assert_int_equal(band_rate_try_acquire(r, (uint64_t)INT64_MAX, NULL), 0);
    band_time retry = 0;
    assert_int_equal(band_rate_try_acquire(r, (uint64_t)INT64_MAX, &retry), BAND_EAGAIN);
    assert_int_equal(retry, INT64_MAX);
    assert_int_equal(band_rate_set(r, (uint64_t)INT64_MAX, 1, 1), 0);
    assert_u64_equal(band_rate_available(r), 0);
    assert_int_equal(band_rate_set(r, (uint64_t)INT64_MAX, INT64_MAX, 1), 0);
    assert_int_equal(band_rate_set(r, (uint64_t)INT64_MAX + 1, 1, 1), BAND_EINVAL);
    assert_int_equal(band_rate_set(r, 1, 0, 1), BAND_EINVAL);
    assert_int_equal(band_rate_set(r, 1, 1, 0), BAND_EINVAL);
    band_rate_stats st = stats_of(r);
    assert_u64_equal(st.tokens, (uint64_t)INT64_MAX);
    assert_int_equal(st.period, INT64_MAX);
    assert_u64_equal(st.burst, 1);
    assert_int_equal(band_rate_destroy(r), 0);

    /* A change that would leave the bucket too far from full to represent is refused and
     * changes nothing: 8 tokens owed at 1 per ns become 6 at 1 per 2^62 ns. */
    tokens = 1;
    period = 1;
    burst = 4;
    assert_int_equal(band_rate_create(&r, tokens, period, burst, &o), 0);
    band_rate_ticket t = BAND_RATE_TICKET_INIT;
    band_time d = -1;
    assert_int_equal(band_rate_try_acquire(r, 4, NULL), 0);
    assert_int_equal(band_rate_reserve(r, 4, &t, &d, BAND_FOREVER), 0);
    assert_int_equal(d, 4);
    assert_int_equal(band_rate_set(r, 1, INT64_MAX / 2, 2), BAND_EOVERFLOW);
    st = stats_of(r);
    assert_u64_equal(st.tokens, 1);
    assert_int_equal(st.period, 1);
    assert_u64_equal(st.burst, 4);
    assert_int_equal(band_rate_try_acquire(r, 1, &retry), BAND_EAGAIN);
    assert_int_equal(retry, 5);
    assert_int_equal(band_rate_destroy(r), 0);

    /* granted_tokens saturates instead of wrapping: four takes of 2^62 tokens. */
    tokens = 4;
    period = 1;
    burst = UINT64_C(1) << 62;
    assert_int_equal(band_rate_create(&r, tokens, period, burst, &o), 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(band_rate_try_acquire(r, UINT64_C(1) << 62, NULL), 0);
        fc.now += INT64_C(1) << 60;
    }
    st = stats_of(r);
    assert_u64_equal(st.granted, 4);
    assert_u64_equal(st.granted_tokens, UINT64_MAX);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* A name is copied, reported by the stats, replaced and cleared; one that does not fit is
 * refused and changes nothing. */
static void test_set_name(void **state)
{
    (void)state;
    struct fake_clock fc = {0, 0};
    band_rate *r = mk(&fc, 1, BAND_SEC, 3);
    assert_string_equal(stats_of(r).name, "");
    char name[] = "api-quota";
    assert_int_equal(band_rate_set_name(r, name), 0);
    name[0] = 'X'; /* copied, not kept */
    assert_string_equal(stats_of(r).name, "api-quota");
    char longest[BAND_NAME_MAX];
    memset(longest, 'n', sizeof(longest) - 1);
    longest[sizeof(longest) - 1] = '\0';
    assert_int_equal(band_rate_set_name(r, longest), 0);
    assert_string_equal(stats_of(r).name, longest);
    char too_long[BAND_NAME_MAX + 1];
    memset(too_long, 'x', sizeof(too_long) - 1);
    too_long[sizeof(too_long) - 1] = '\0';
    assert_int_equal(band_rate_set_name(r, too_long), BAND_EINVAL);
    assert_string_equal(stats_of(r).name, longest);
    assert_int_equal(band_rate_set_name(r, NULL), 0);
    assert_string_equal(stats_of(r).name, "");
    assert_int_equal(band_rate_set_name(NULL, "x"), BAND_EINVAL);
    assert_int_equal(band_rate_destroy(r), 0);
}

static void test_close(void **state)
{
    (void)state;
    struct fake_clock fc = {0, 0};
    band_rate *r = mk(&fc, 1, BAND_SEC, 3);
    band_rate_ticket t = BAND_RATE_TICKET_INIT;
    band_time d;
    assert_int_equal(band_rate_reserve(r, 3, &t, &d, BAND_FOREVER), 0);
    band_rate_ticket u = BAND_RATE_TICKET_INIT;
    assert_int_equal(band_rate_reserve(r, 1, &u, &d, BAND_FOREVER), 0);
    assert_int_equal(band_rate_is_closed(r), 0);
    assert_int_equal(band_rate_close(r), 0);
    assert_int_equal(band_rate_is_closed(r), 1);
    assert_int_equal(band_rate_close(r), 0); /* a second close changes nothing */
    assert_int_equal(band_rate_is_closed(r), 1);
    assert_int_equal(band_rate_close(NULL), BAND_EINVAL);
    assert_int_equal(band_rate_is_closed(NULL), 0);
    assert_int_equal(band_rate_try_acquire(r, 1, NULL), BAND_ECLOSED);
    assert_int_equal(band_rate_acquire(r, 1, NULL, BAND_FOREVER, NULL), BAND_ECLOSED);
    band_rate_ticket v = BAND_RATE_TICKET_INIT;
    assert_int_equal(band_rate_reserve(r, 1, &v, &d, BAND_FOREVER), BAND_ECLOSED);
    assert_int_equal(band_rate_ticket_cancel(&u), 0); /* bookings can still be given back */
    band_rate_stats st = stats_of(r);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.refused_closed, 3);
    assert_int_equal(band_rate_destroy(r), 0);
}

/* Bookings far into the future: the sum that would overflow is refused, nothing changes. */
static void test_overflow_is_refused(void **state)
{
    (void)state;
    struct fake_clock fc = {0, 0};
    band_rate *r = mk(&fc, 1, INT64_MAX / 4, 1);
    band_rate_ticket t[6];
    int booked = 0, overflow = 0;
    for (int i = 0; i < 6; i++) {
        band_rate_ticket z = BAND_RATE_TICKET_INIT;
        t[i] = z;
        int rc = band_rate_reserve(r, 1, &t[i], NULL, BAND_FOREVER);
        if (rc == 0)
            booked++;
        else if (rc == BAND_EOVERFLOW)
            overflow++;
        else
            fail_msg("reserve returned %d", rc);
    }
    assert_int_equal(booked, 4); /* slots at 0, 1/4, 2/4 and 3/4 of INT64_MAX */
    assert_int_equal(overflow, 2);
    assert_u64_equal(stats_of(r).granted, 4);
    assert_int_equal(band_rate_destroy(r), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_args),
        cmocka_unit_test(test_starts_full_then_refuses),
        cmocka_unit_test(test_too_big),
        cmocka_unit_test(test_fractional_rate_is_exact),
        cmocka_unit_test(test_reserve_delays_and_deadline),
        cmocka_unit_test(test_ticket_cancel),
        cmocka_unit_test(test_wait),
        cmocka_unit_test(test_wait_real_clock_never_early),
        cmocka_unit_test(test_set_rate),
        cmocka_unit_test(test_set_rate_keeps_accrual),
        cmocka_unit_test(test_set_burst_keeps_accrual),
        cmocka_unit_test(test_past_deadline_takes_what_is_there),
        cmocka_unit_test(test_clock_steps_back),
        cmocka_unit_test(test_clock_extremes),
        cmocka_unit_test(test_settings_extremes),
        cmocka_unit_test(test_set_name),
        cmocka_unit_test(test_close),
        cmocka_unit_test(test_overflow_is_refused),
    };
    return cmocka_run_group_tests_name("test_rate", tests, NULL, NULL);
}

/*
 * model_rate.c - band_rate against a plain token bucket, on random operation sequences.
 *
 * The library computes GCRA (one theoretical arrival time, exact fractions). The model is
 * the textbook bucket, written independently in integers: the level L counts tokens in
 * units of 1/period, time adds `tokens` units per nanosecond, the bucket holds at most
 * burst × period, and a booking may drive the level below zero (its slot is when the level
 * would be back at zero). For every operation - try, reserve with a deadline, cancel a
 * random booking, advance the fake clock, read the available tokens - the outcome, the
 * retry-after or delay, the booked slot and, at the end, every counter must agree.
 */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "band/rate.h"

#define OPS     20000
#define SEEDS   20
#define TICKETS 8

struct model {
    int64_t tokens, period, burst; /* small: every product fits in int64 */
    int64_t level;                 /* in 1/period tokens */
    band_time now;
    struct {
        int live;
        band_time at;
        int64_t n;
    } t[TICKETS];
    uint64_t granted, granted_tokens, delayed, refused_rate, refused_deadline, refused_too_big,
        cancelled;
};

static band_time clock_of(void *ctx)
{
    return ((struct model *)ctx)->now;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static void advance(struct model *m, band_time dt)
{
    m->now += dt;
    m->level += dt * m->tokens;
    if (m->level > m->burst * m->period)
        m->level = m->burst * m->period;
}

static void run_seed(uint64_t seed)
{
    uint64_t rng = seed;
    struct model m;
    memset(&m, 0, sizeof(m));
    m.tokens = (int64_t)test_rng_range(&rng, 1, 7);
    m.period = (int64_t)test_rng_range(&rng, 1, 1000);
    m.burst = (int64_t)test_rng_range(&rng, 1, 6);
    m.level = m.burst * m.period;
    m.now = (band_time)test_rng_range(&rng, 0, 1000000);

    band_rate_opts o;
    memset(&o, 0, sizeof(o));
    o.tokens = (uint64_t)m.tokens;
    o.period = m.period;
    o.burst = (uint64_t)m.burst;
    o.clock = clock_of;
    o.clock_ctx = &m;
    band_rate *r = NULL;
    assert_int_equal(band_rate_create(&r, &o), 0);
    band_rate_ticket tk[TICKETS];
    for (int i = 0; i < TICKETS; i++) {
        band_rate_ticket z = BAND_RATE_TICKET_INIT;
        tk[i] = z;
    }
    /* One token's worth of time, at least 1 ns: the scale of the clock steps. */
    int64_t step = m.period / m.tokens + 1;

    for (int op = 0; op < OPS; op++) {
        uint64_t kind = test_rng_range(&rng, 0, 99);
        int64_t n = (int64_t)test_rng_range(&rng, 1, (uint64_t)m.burst + 1); /* +1: E2BIG */
        if (kind < 30) {
            band_time retry = -1;
            int rc = band_rate_try(r, (uint64_t)n, &retry);
            int want;
            band_time want_retry = 0;
            if (n > m.burst) {
                want = BAND_E2BIG;
                m.refused_too_big++;
            } else if (m.level >= n * m.period) {
                want = 0;
                m.level -= n * m.period;
                m.granted++;
                m.granted_tokens += (uint64_t)n;
            } else {
                want = BAND_EAGAIN;
                want_retry = ceil_div(n * m.period - m.level, m.tokens);
                m.refused_rate++;
            }
            if (rc != want || retry != want_retry)
                fail_msg("seed %llu op %d: try(%lld) = %d retry %lld, model %d retry %lld",
                         (unsigned long long)seed, op, (long long)n, rc, (long long)retry, want,
                         (long long)want_retry);
        } else if (kind < 55) {
            int i = (int)test_rng_range(&rng, 0, TICKETS - 1);
            if (m.t[i].live)
                continue;
            band_time deadline =
                m.now + (band_time)test_rng_range(&rng, 0, (uint64_t)(step * 4 * m.burst));
            band_time delay = -1;
            int rc = band_rate_reserve(r, (uint64_t)n, deadline, &tk[i], &delay);
            int want;
            band_time want_delay = 0;
            if (n > m.burst) {
                want = BAND_E2BIG;
                m.refused_too_big++;
            } else {
                int64_t after = m.level - n * m.period;
                want_delay = after >= 0 ? 0 : ceil_div(-after, m.tokens);
                if (m.now + want_delay > deadline) {
                    want = BAND_ETIMEDOUT;
                    m.refused_deadline++;
                } else {
                    want = 0;
                    m.level = after;
                    m.t[i].live = 1;
                    m.t[i].at = m.now + want_delay;
                    m.t[i].n = n;
                    m.granted++;
                    m.granted_tokens += (uint64_t)n;
                    m.delayed += want_delay > 0;
                }
            }
            if (rc != want || delay != want_delay || (rc == 0 && tk[i].at != m.t[i].at))
                fail_msg("seed %llu op %d: reserve(%lld) = %d delay %lld, model %d delay %lld",
                         (unsigned long long)seed, op, (long long)n, rc, (long long)delay, want,
                         (long long)want_delay);
        } else if (kind < 70) {
            int i = (int)test_rng_range(&rng, 0, TICKETS - 1);
            int rc = band_rate_ticket_cancel(&tk[i]);
            int want;
            if (!m.t[i].live) {
                want = BAND_EINVAL;
            } else if (m.t[i].at <= m.now) {
                want = BAND_EALREADY;
                m.t[i].live = 0;
            } else {
                want = 0;
                m.t[i].live = 0;
                m.level += m.t[i].n * m.period;
                if (m.level > m.burst * m.period)
                    m.level = m.burst * m.period;
                m.cancelled++;
                m.granted--;
                m.granted_tokens -= (uint64_t)m.t[i].n;
                m.delayed--;
            }
            if (rc != want)
                fail_msg("seed %llu op %d: cancel = %d, model %d", (unsigned long long)seed, op, rc,
                         want);
        } else if (kind < 95) {
            advance(&m, (band_time)test_rng_range(&rng, 0, (uint64_t)step * 2));
        } else {
            uint64_t want = m.level <= 0 ? 0 : (uint64_t)(m.level / m.period);
            assert_u64_equal(band_rate_available(r), want);
        }
    }
    band_rate_stats st;
    assert_int_equal(band_rate_get_stats(r, &st), 0);
    assert_u64_equal(st.granted, m.granted);
    assert_u64_equal(st.granted_tokens, m.granted_tokens);
    assert_u64_equal(st.delayed, m.delayed);
    assert_u64_equal(st.refused_rate, m.refused_rate);
    assert_u64_equal(st.refused_deadline, m.refused_deadline);
    assert_u64_equal(st.refused_too_big, m.refused_too_big);
    assert_u64_equal(st.cancelled, m.cancelled);
    assert_int_equal(band_rate_destroy(r), 0);
}

static void test_model(void **state)
{
    (void)state;
    for (uint64_t s = 1; s <= SEEDS; s++)
        run_seed(s * UINT64_C(0x9e3779b97f4a7c15));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model),
    };
    return cmocka_run_group_tests_name("model_rate", tests, NULL, NULL);
}

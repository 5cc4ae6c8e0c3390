/* SPDX-License-Identifier: MIT */
/*
 * test_keyrate.c - keyed rate budgets (band/keyrate.h), on a fake clock.
 *
 * Time moves by hand, so every grant, refusal and retry-after is checked to the
 * nanosecond; one key is checked against band_rate on the same clock, and a small table
 * against a large one to show that dropping idle keys changes no answer.
 */
#include "test.h"

#include <string.h>

#include "admit/keyrate_internal.h"
#include "band/keyrate.h"

struct fake_clock {
    band_time now;
};

static band_time fake_now(void *ctx)
{
    return ((struct fake_clock *)ctx)->now;
}

static band_keyrate_opts opts_of(struct fake_clock *fc, size_t max_keys, unsigned shards, int full)
{
    band_keyrate_opts o;
    memset(&o, 0, sizeof(o));
    o.clock = fake_now;
    o.clock_ctx = fc;
    o.max_keys = max_keys;
    o.shards = shards;
    o.full = full;
    return o;
}

static band_keyrate *mk(struct fake_clock *fc, uint64_t tokens, band_time period, uint64_t burst,
                        size_t max_keys, unsigned shards, int full)
{
    band_keyrate_opts o = opts_of(fc, max_keys, shards, full);
    band_keyrate *k = NULL;
    assert_int_equal(band_keyrate_create(&k, tokens, period, burst, &o), 0);
    assert_non_null(k);
    return k;
}

static band_keyrate_stats stats_of(const band_keyrate *k)
{
    band_keyrate_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_keyrate_get_stats(k, &st), 0);
    return st;
}

/* try_acquire on a NUL-terminated key. */
static int take(band_keyrate *k, const char *key, uint64_t n, band_time *ra)
{
    return band_keyrate_try_acquire(k, key, strlen(key), n, ra);
}

static uint64_t avail(const band_keyrate *k, const char *key)
{
    return band_keyrate_available(k, key, strlen(key));
}

static void test_create_args(void **state)
{
    (void)state;
    band_keyrate *k = NULL;
    band_keyrate_opts o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(band_keyrate_create(NULL, 1, BAND_SEC, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_keyrate_create(&k, 0, BAND_SEC, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_keyrate_create(&k, 1, 0, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_keyrate_create(&k, 1, -1, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_keyrate_create(&k, 1, BAND_SEC, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_keyrate_create(&k, (uint64_t)INT64_MAX + 1, BAND_SEC, 1, NULL),
                     BAND_EINVAL);
    assert_int_equal(band_keyrate_create(&k, 1, INT64_MAX, 2, NULL), BAND_EOVERFLOW);
    o.full = 2;
    assert_int_equal(band_keyrate_create(&k, 1, BAND_SEC, 1, &o), BAND_EINVAL);
    o.full = BAND_KEYRATE_FULL_REFUSE;
    o.max_key_len = BAND_KEYRATE_KEY_LEN_MAX + 1;
    assert_int_equal(band_keyrate_create(&k, 1, BAND_SEC, 1, &o), BAND_EINVAL);
    o.max_key_len = 0;
    o.shards = BAND_KEYRATE_SHARDS_MAX + 1;
    assert_int_equal(band_keyrate_create(&k, 1, BAND_SEC, 1, &o), BAND_EINVAL);
    o.shards = 0;
    o.max_keys = ((size_t)1 << 31) + 1;
    assert_int_equal(band_keyrate_create(&k, 1, BAND_SEC, 1, &o), BAND_EINVAL);
    assert_null(k);

    assert_int_equal(band_keyrate_create(&k, 5, BAND_SEC, 7, NULL), 0);
    band_keyrate_stats st = stats_of(k);
    assert_u64_equal(st.max_keys, BAND_KEYRATE_MAX_KEYS_DEFAULT);
    assert_int_equal(st.shards, BAND_KEYRATE_SHARDS_DEFAULT);
    assert_u64_equal(st.tokens, 5);
    assert_u64_equal(st.burst, 7);
    assert_int_equal(st.period, BAND_SEC);
    assert_u64_equal(st.keys, 0);
    assert_string_equal(st.name, "");
    assert_int_equal(band_keyrate_destroy(k), 0);
    assert_int_equal(band_keyrate_destroy(NULL), 0);

    /* More shards than keys: one key per shard. */
    o.max_keys = 3;
    o.shards = 8;
    assert_int_equal(band_keyrate_create(&k, 1, BAND_SEC, 1, &o), 0);
    st = stats_of(k);
    assert_int_equal(st.shards, 3);
    assert_u64_equal(st.max_keys, 3);
    band_keyrate_destroy(k);
}

static void test_keys_are_independent(void **state)
{
    (void)state;
    struct fake_clock fc = {1000};
    band_keyrate *k = mk(&fc, 3, BAND_SEC, 3, 0, 0, 0);
    band_time ra = -1;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(take(k, "alice", 1, &ra), 0);
        assert_int_equal(ra, 0);
    }
    assert_int_equal(take(k, "alice", 1, &ra), BAND_EAGAIN);
    assert_int_equal(ra, 333333334); /* ceil(1 s / 3) */
    assert_u64_equal(avail(k, "alice"), 0);
    assert_u64_equal(avail(k, "bob"), 3);
    assert_int_equal(take(k, "bob", 3, &ra), 0);
    fc.now += 333333333;
    assert_int_equal(take(k, "alice", 1, &ra), BAND_EAGAIN);
    assert_int_equal(ra, 1);
    fc.now += 1;
    assert_int_equal(take(k, "alice", 1, &ra), 0);
    assert_int_equal(ra, 0);
    /* Exact thirds: after one more second alice has exactly 3 again (no drift). */
    fc.now += BAND_SEC - 1;
    assert_u64_equal(avail(k, "alice"), 2);
    fc.now += 1;
    assert_u64_equal(avail(k, "alice"), 3);
    band_keyrate_stats st = stats_of(k);
    assert_u64_equal(st.granted, 5);
    assert_u64_equal(st.granted_tokens, 7);
    assert_u64_equal(st.refused_rate, 2);
    assert_u64_equal(st.keys, 0); /* both are full again */
    band_keyrate_destroy(k);
}

static void test_weighted_and_too_big(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    band_keyrate *k = mk(&fc, 3, BAND_SEC, 3, 0, 0, 0);
    band_time ra = -1;
    assert_int_equal(take(k, "t", 4, &ra), BAND_E2BIG);
    assert_int_equal(ra, 0);
    assert_int_equal(take(k, "t", 2, &ra), 0);
    assert_int_equal(take(k, "t", 3, &ra), BAND_EAGAIN);
    assert_int_equal(ra, 666666667); /* two tokens missing: ceil(2 s / 3) */
    assert_int_equal(take(k, "t", 1, &ra), 0);
    assert_int_equal(take(k, "t", 3, NULL), BAND_EAGAIN);
    assert_int_equal(take(k, "t", 0, &ra), BAND_EINVAL);
    band_keyrate_stats st = stats_of(k);
    assert_u64_equal(st.refused_too_big, 1);
    assert_u64_equal(st.refused_rate, 2);
    assert_u64_equal(st.granted_tokens, 3);
    band_keyrate_destroy(k);
}

/* One key answers exactly as a band_rate with the same settings on the same clock. */
static void test_one_key_is_band_rate(void **state)
{
    (void)state;
    static const struct {
        uint64_t tokens, burst;
        band_time period;
    } cfg[] = {{3, 5, BAND_SEC}, {1, 1, 7}, {1000000, 100, BAND_SEC}, {7, 13, 1000003}};
    for (size_t c = 0; c < TEST_COUNTOF(cfg); c++) {
        struct fake_clock fc = {12345};
        band_keyrate *k = mk(&fc, cfg[c].tokens, cfg[c].period, cfg[c].burst, 4, 1, 0);
        band_rate_opts ro;
        memset(&ro, 0, sizeof(ro));
        ro.clock = fake_now;
        ro.clock_ctx = &fc;
        band_rate *r = NULL;
        assert_int_equal(band_rate_create(&r, cfg[c].tokens, cfg[c].period, cfg[c].burst, &ro), 0);
        uint64_t x = 0x9e3779b97f4a7c15 * (c + 1);
        for (int i = 0; i < 20000; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint64_t n = 1 + x % (cfg[c].burst + 1); /* sometimes above the burst */
            fc.now += (band_time)((x >> 20) % (uint64_t)(cfg[c].period / 2 + 2));
            band_time ra1 = -1, ra2 = -2;
            int rc1 = band_keyrate_try_acquire(k, "key", 3, n, &ra1);
            int rc2 = band_rate_try_acquire(r, n, &ra2);
            assert_int_equal(rc1, rc2);
            assert_int_equal(ra1, ra2);
            assert_u64_equal(band_keyrate_available(k, "key", 3), band_rate_available(r));
        }
        band_rate_destroy(r);
        band_keyrate_destroy(k);
    }
}

/* A small table that drops idle keys answers as a table that never needs to. */
static void test_idle_eviction_changes_no_answer(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    band_keyrate *small = mk(&fc, 2, BAND_SEC, 4, 3, 1, BAND_KEYRATE_FULL_REFUSE);
    band_keyrate *big = mk(&fc, 2, BAND_SEC, 4, 1000, 1, BAND_KEYRATE_FULL_REFUSE);
    uint64_t x = 88172645463325252u;
    uint64_t compared = 0, refused = 0;
    for (int i = 0; i < 50000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char key[2] = {(char)('a' + x % 6), 0};
        uint64_t n = 1 + (x >> 8) % 4;
        fc.now += (band_time)((x >> 16) % BAND_SEC);
        band_time ra1 = -1, ra2 = -2;
        int rc1 = take(small, key, n, &ra1);
        int rc2 = take(big, key, n, &ra2);
        if (rc1 == BAND_ENOSPC) {
            /* Only when three other keys are short of full, and then nothing changed. */
            refused++;
            assert_int_equal(ra1, 0);
            assert_u64_equal(avail(small, key), 4);
            assert_int_equal(rc2, 0);                              /* a key that is full grants */
            assert_int_equal(band_keyrate_forget(big, key, 1), 0); /* keep them alike */
            assert_u64_equal(stats_of(big).keys, 3);
            continue;
        }
        compared++;
        assert_int_equal(rc1, rc2);
        assert_int_equal(ra1, ra2);
        assert_u64_equal(avail(small, key), avail(big, key));
    }
    print_message("compared %llu, refused %llu\n", (unsigned long long)compared,
                  (unsigned long long)refused);
    assert_true(compared > 35000);
    assert_true(refused > 1000);
    band_keyrate_stats st = stats_of(small);
    assert_true(st.evicted_idle > 1000);
    assert_u64_equal(st.refused_full, refused);
    assert_u64_equal(st.evicted_busy, 0);
    band_keyrate_destroy(small);
    band_keyrate_destroy(big);
}

static void test_full_refuse(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    band_keyrate *k = mk(&fc, 1, BAND_SEC, 2, 2, 1, BAND_KEYRATE_FULL_REFUSE);
    band_time ra = -1;
    assert_int_equal(take(k, "a", 1, &ra), 0);
    assert_int_equal(take(k, "b", 2, &ra), 0);
    assert_int_equal(take(k, "c", 1, &ra), BAND_ENOSPC);
    assert_int_equal(ra, 0);
    assert_u64_equal(avail(k, "c"), 2);        /* nothing of c was kept */
    assert_int_equal(take(k, "a", 1, &ra), 0); /* keys in the table still work */
    assert_int_equal(band__keyrate_held(k, 0), 2);
    fc.now += BAND_SEC; /* b has one back, a none of its two */
    assert_int_equal(take(k, "c", 1, &ra), BAND_ENOSPC);
    fc.now += BAND_SEC; /* a is full again: idle, its node is dropped for c */
    assert_int_equal(take(k, "c", 1, &ra), 0);
    assert_u64_equal(avail(k, "a"), 2);
    assert_u64_equal(avail(k, "b"), 2);
    band_keyrate_stats st = stats_of(k);
    assert_u64_equal(st.refused_full, 2);
    assert_u64_equal(st.evicted_busy, 0);
    assert_u64_equal(st.keys, 1);
    assert_true(st.evicted_idle >= 1);
    band_keyrate_destroy(k);
}

static void test_full_evict_closest_to_full(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    band_keyrate *k = mk(&fc, 1, BAND_SEC, 3, 2, 1, BAND_KEYRATE_FULL_EVICT);
    band_time ra = -1;
    assert_int_equal(take(k, "a", 3, &ra), 0);
    assert_int_equal(take(k, "b", 1, &ra), 0);
    assert_int_equal(take(k, "c", 2, &ra), 0); /* b is closest to full: dropped */
    assert_u64_equal(avail(k, "b"), 3);        /* lenient: b starts full again */
    assert_u64_equal(avail(k, "a"), 0);
    assert_u64_equal(avail(k, "c"), 1);
    band_keyrate_stats st = stats_of(k);
    assert_u64_equal(st.evicted_busy, 1);
    assert_u64_equal(st.keys, 2);
    /* A tie goes to the key that left full first: one second later a misses 2 and c 1;
     * c takes one more and misses 2 too, but a left full before c. */
    fc.now += BAND_SEC;
    assert_u64_equal(avail(k, "a"), 1);
    assert_u64_equal(avail(k, "c"), 2);
    assert_int_equal(take(k, "c", 1, &ra), 0); /* c misses 2, as a does */
    assert_int_equal(take(k, "d", 1, &ra), 0); /* a left full first: a goes */
    assert_u64_equal(avail(k, "a"), 3);
    assert_u64_equal(avail(k, "c"), 1);
    assert_u64_equal(avail(k, "d"), 2);
    st = stats_of(k);
    assert_u64_equal(st.evicted_busy, 2);
    band_keyrate_destroy(k);
}

/* Each shard holds its share: a new key meets a full table when its own shard is full. */
static void test_shards_hold_their_share(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    band_keyrate *k = mk(&fc, 1, BAND_SEC, 1, 8, 4, BAND_KEYRATE_FULL_REFUSE);
    char keys[3][16];
    int found = 0;
    for (int i = 0; found < 3 && i < 100000; i++) {
        char buf[16];
        int len = snprintf(buf, sizeof(buf), "k%d", i);
        if (band__keyrate_shard_of(k, buf, (size_t)len) == 2)
            memcpy(keys[found++], buf, sizeof(buf));
    }
    assert_int_equal(found, 3);
    assert_int_equal(take(k, keys[0], 1, NULL), 0);
    assert_int_equal(take(k, keys[1], 1, NULL), 0);
    assert_int_equal(band__keyrate_held(k, 2), 2);
    assert_int_equal(take(k, keys[2], 1, NULL), BAND_ENOSPC);
    band_keyrate_stats st = stats_of(k);
    assert_u64_equal(st.keys, 2);
    assert_u64_equal(st.refused_full, 1);
    band_keyrate_destroy(k);
}

static void test_forget(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    band_keyrate *k = mk(&fc, 1, BAND_SEC, 2, 0, 0, 0);
    assert_int_equal(take(k, "a", 2, NULL), 0);
    assert_int_equal(band_keyrate_forget(k, "a", 1), 0);
    assert_u64_equal(avail(k, "a"), 2);
    assert_int_equal(band_keyrate_forget(k, "a", 1), BAND_ENOENT);
    assert_int_equal(band_keyrate_forget(k, "never", 5), BAND_ENOENT);
    assert_int_equal(take(k, "b", 1, NULL), 0);
    fc.now += BAND_SEC; /* b is idle: as absent */
    assert_int_equal(band_keyrate_forget(k, "b", 1), BAND_ENOENT);
    assert_int_equal(band_keyrate_forget(NULL, "a", 1), BAND_EINVAL);
    assert_int_equal(band_keyrate_forget(k, NULL, 1), BAND_EINVAL);
    char longkey[BAND_KEYRATE_KEY_LEN_DEFAULT + 1];
    memset(longkey, 'x', sizeof(longkey));
    assert_int_equal(band_keyrate_forget(k, longkey, sizeof(longkey)), BAND_EINVAL);
    band_keyrate_stats st = stats_of(k);
    assert_u64_equal(st.forgotten, 1);
    assert_u64_equal(st.keys, 0);
    band_keyrate_destroy(k);
}

static void test_key_bytes(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    band_keyrate_opts o = opts_of(&fc, 16, 1, 0);
    o.max_key_len = 9;
    band_keyrate *k = NULL;
    assert_int_equal(band_keyrate_create(&k, 1, BAND_SEC, 1, &o), 0);
    static const char a[] = {'x', 0, 'y'}, b[] = {'x', 0, 'z'};
    band_time ra = -1;
    assert_int_equal(band_keyrate_try_acquire(k, a, 3, 1, &ra), 0);
    assert_int_equal(band_keyrate_try_acquire(k, b, 3, 1, &ra), 0);    /* differs after NUL */
    assert_int_equal(band_keyrate_try_acquire(k, a, 1, 1, &ra), 0);    /* a prefix is another key */
    assert_int_equal(band_keyrate_try_acquire(k, NULL, 0, 1, &ra), 0); /* the empty key */
    assert_int_equal(band_keyrate_try_acquire(k, "", 0, 1, &ra), BAND_EAGAIN);
    assert_int_equal(ra, BAND_SEC);
    assert_int_equal(band_keyrate_try_acquire(k, "123456789", 9, 1, &ra), 0);
    assert_int_equal(band_keyrate_try_acquire(k, "1234567890", 10, 1, &ra), BAND_EINVAL);
    assert_int_equal(ra, 0);
    assert_int_equal(band_keyrate_try_acquire(k, NULL, 1, 1, &ra), BAND_EINVAL);
    assert_int_equal(band_keyrate_try_acquire(NULL, "a", 1, 1, &ra), BAND_EINVAL);
    assert_u64_equal(band_keyrate_available(k, "1234567890", 10), 0);
    assert_u64_equal(band_keyrate_available(NULL, "a", 1), 0);
    assert_u64_equal(band_keyrate_available(k, a, 3), 0);
    assert_u64_equal(stats_of(k).keys, 5);
    band_keyrate_destroy(k);
}

static void test_set_keeps_shortfall(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    band_keyrate *k = mk(&fc, 10, BAND_SEC, 10, 0, 4, 0);
    assert_int_equal(take(k, "a", 10, NULL), 0);
    assert_int_equal(take(k, "b", 4, NULL), 0);
    fc.now += BAND_SEC / 2; /* a holds 5, b is full */
    assert_int_equal(band_keyrate_set(k, 20, BAND_SEC, 10), 0);
    assert_u64_equal(avail(k, "a"), 5);
    assert_u64_equal(avail(k, "b"), 10);
    fc.now += BAND_SEC / 10; /* two more at the new rate */
    assert_u64_equal(avail(k, "a"), 7);
    band_time ra = -1;
    assert_int_equal(take(k, "a", 10, &ra), BAND_EAGAIN);
    assert_int_equal(ra, 150000000); /* three missing at 20/s */
    /* A key keeps its shortfall: 3 short of 4 holds 1, 3 short of 8 holds 5. */
    assert_int_equal(band_keyrate_set(k, 20, BAND_SEC, 4), 0);
    assert_u64_equal(avail(k, "a"), 1);
    assert_int_equal(band_keyrate_set(k, 20, BAND_SEC, 8), 0);
    assert_u64_equal(avail(k, "a"), 5);
    assert_u64_equal(avail(k, "b"), 8); /* full stays full, like a key never seen */
    assert_u64_equal(avail(k, "new"), 8);
    assert_int_equal(take(k, "a", 8, NULL), BAND_EAGAIN);
    assert_int_equal(take(k, "a", 5, NULL), 0);
    assert_int_equal(band_keyrate_set(k, 20, BAND_SEC, 2), 0); /* 8 short, at most 2 */
    assert_u64_equal(avail(k, "a"), 0);
    assert_int_equal(band_keyrate_set(k, 20, BAND_SEC, 8), 0);
    assert_u64_equal(avail(k, "a"), 6);
    /* A slower rate re-counts the shortfall, rounding up: 2 tokens short at 20/s is
     * 100 ms; at 3/s it is 2 tokens, 666666667 ns. */
    assert_int_equal(band_keyrate_set(k, 3, BAND_SEC, 8), 0);
    assert_int_equal(take(k, "a", 8, &ra), BAND_EAGAIN);
    assert_int_equal(ra, 666666667);
    assert_int_equal(take(k, "a", 9, &ra), BAND_E2BIG);
    band_keyrate_stats st = stats_of(k);
    assert_u64_equal(st.tokens, 3);
    assert_u64_equal(st.burst, 8);
    assert_int_equal(band_keyrate_set(k, 0, BAND_SEC, 8), BAND_EINVAL);
    assert_int_equal(band_keyrate_set(k, 1, INT64_MAX, 8), BAND_EOVERFLOW);
    assert_int_equal(band_keyrate_set(NULL, 1, BAND_SEC, 8), BAND_EINVAL);
    assert_u64_equal(stats_of(k).burst, 8);
    band_keyrate_destroy(k);
}

static void test_clock_steps_back(void **state)
{
    (void)state;
    struct fake_clock fc = {10 * BAND_SEC};
    band_keyrate *k = mk(&fc, 1, BAND_SEC, 1, 0, 1, 0);
    band_time ra = -1;
    assert_int_equal(take(k, "a", 1, &ra), 0);
    fc.now = 5 * BAND_SEC; /* no time elapsed */
    assert_int_equal(take(k, "a", 1, &ra), BAND_EAGAIN);
    assert_int_equal(ra, BAND_SEC);
    fc.now = 11 * BAND_SEC - 1;
    assert_int_equal(take(k, "a", 1, &ra), BAND_EAGAIN);
    assert_int_equal(ra, 1);
    /* The ends of the band_time range. */
    fc.now = INT64_MAX;
    assert_int_equal(take(k, "a", 1, &ra), 0);
    assert_int_equal(take(k, "a", 1, &ra), BAND_EAGAIN);
    assert_int_equal(ra, BAND_SEC);
    band_keyrate_destroy(k);
    fc.now = INT64_MIN;
    k = mk(&fc, (uint64_t)INT64_MAX, 1, 1, 0, 1, 0);
    assert_int_equal(take(k, "a", 1, &ra), 0);
    assert_int_equal(take(k, "a", 1, &ra), BAND_EAGAIN);
    assert_int_equal(ra, 1);
    fc.now = INT64_MAX; /* 2^64 - 1 ns x INT64_MAX tokens of refill */
    assert_int_equal(take(k, "a", 1, &ra), 0);
    band_keyrate_destroy(k);
}

static void test_name_and_close(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    band_keyrate *k = mk(&fc, 1, BAND_SEC, 1, 0, 0, 0);
    assert_int_equal(band_keyrate_set_name(k, "per-tenant"), 0);
    assert_string_equal(stats_of(k).name, "per-tenant");
    char longname[BAND_NAME_MAX + 1];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[BAND_NAME_MAX] = 0;
    assert_int_equal(band_keyrate_set_name(k, longname), BAND_EINVAL);
    assert_string_equal(stats_of(k).name, "per-tenant");
    assert_int_equal(band_keyrate_set_name(k, NULL), 0);
    assert_string_equal(stats_of(k).name, "");
    assert_int_equal(band_keyrate_set_name(NULL, "x"), BAND_EINVAL);
    assert_int_equal(take(k, "a", 1, NULL), 0);
    assert_int_equal(band_keyrate_is_closed(k), 0);
    assert_int_equal(band_keyrate_close(k), 0);
    assert_int_equal(band_keyrate_close(k), 0);
    assert_int_equal(band_keyrate_is_closed(k), 1);
    assert_int_equal(band_keyrate_is_closed(NULL), 0);
    assert_int_equal(band_keyrate_close(NULL), BAND_EINVAL);
    band_time ra = -1;
    assert_int_equal(take(k, "b", 1, &ra), BAND_ECLOSED);
    assert_int_equal(ra, 0);
    assert_int_equal(band_keyrate_forget(k, "a", 1), 0);
    band_keyrate_stats st = stats_of(k);
    assert_u64_equal(st.refused_closed, 1);
    assert_int_equal(st.closed, 1);
    assert_int_equal(band_keyrate_get_stats(NULL, &st), BAND_EINVAL);
    assert_int_equal(band_keyrate_get_stats(k, NULL), BAND_EINVAL);
    band_keyrate_destroy(k);
}

/* A backend that keeps its buckets in an inner in-process table, and can be "down". */
struct fake_backend {
    band_keyrate *inner;
    int down;
    uint64_t calls, tokens, burst;
    band_time period;
};

static void fake_settings(struct fake_backend *b, uint64_t tokens, band_time period, uint64_t burst)
{
    if (tokens != b->tokens || period != b->period || burst != b->burst) {
        (void)band_keyrate_set(b->inner, tokens, period, burst);
        b->tokens = tokens;
        b->period = period;
        b->burst = burst;
    }
}

static int fake_try(void *ctx, const void *key, size_t keylen, uint64_t n, uint64_t tokens,
                    band_time period, uint64_t burst, band_time *retry_after)
{
    struct fake_backend *b = ctx;
    b->calls++;
    if (b->down)
        return BAND_EBUSY; /* any code but 0 and EAGAIN: could not decide */
    fake_settings(b, tokens, period, burst);
    return band_keyrate_try_acquire(b->inner, key, keylen, n, retry_after);
}

static int fake_available(void *ctx, const void *key, size_t keylen, uint64_t tokens,
                          band_time period, uint64_t burst, uint64_t *out)
{
    struct fake_backend *b = ctx;
    if (b->down)
        return BAND_EBUSY;
    fake_settings(b, tokens, period, burst);
    *out = band_keyrate_available(b->inner, key, keylen);
    return 0;
}

static int fake_forget(void *ctx, const void *key, size_t keylen)
{
    struct fake_backend *b = ctx;
    return b->down ? BAND_EBUSY : band_keyrate_forget(b->inner, key, keylen);
}

static void test_backend(void **state)
{
    (void)state;
    struct fake_clock fc = {0};
    struct fake_backend fb = {NULL, 0, 0, 3, 5, BAND_SEC};
    fb.inner = mk(&fc, 3, BAND_SEC, 5, 0, 0, 0);
    band_keyrate_backend be = {fake_try, fake_available, fake_forget, &fb};
    band_keyrate_opts o;
    memset(&o, 0, sizeof(o));
    o.backend = &be;
    band_keyrate *k = NULL;
    band_keyrate_backend half = be;
    half.forget = NULL;
    o.backend = &half;
    assert_int_equal(band_keyrate_create(&k, 3, BAND_SEC, 5, &o), BAND_EINVAL);
    o.backend = &be;
    o.fail = 2;
    assert_int_equal(band_keyrate_create(&k, 3, BAND_SEC, 5, &o), BAND_EINVAL);
    o.fail = BAND_KEYRATE_FAIL_CLOSED;
    assert_int_equal(band_keyrate_create(&k, 3, BAND_SEC, 5, &o), 0);

    band_time ra = -1;
    assert_int_equal(take(k, "a", 5, &ra), 0);
    assert_int_equal(take(k, "a", 1, &ra), BAND_EAGAIN);
    assert_int_equal(ra, 333333334);
    assert_int_equal(take(k, "a", 6, &ra), BAND_E2BIG); /* decided here */
    assert_int_equal(fb.calls, 2);
    assert_u64_equal(avail(k, "a"), 0);
    assert_u64_equal(avail(k, "b"), 5);
    /* Settings go with every call. */
    assert_int_equal(band_keyrate_set(k, 6, BAND_SEC, 5), 0);
    assert_u64_equal(avail(k, "a"), 0); /* the fake applies them now */
    fc.now += BAND_SEC / 2;             /* three back at 6/s */
    assert_u64_equal(avail(k, "a"), 3);
    assert_int_equal(band_keyrate_forget(k, "a", 1), 0);
    assert_int_equal(band_keyrate_forget(k, "a", 1), BAND_ENOENT);

    fb.down = 1; /* fail closed */
    assert_int_equal(take(k, "a", 1, &ra), BAND_EUNAVAIL);
    assert_int_equal(ra, 0);
    assert_u64_equal(avail(k, "a"), 0);
    assert_int_equal(band_keyrate_forget(k, "a", 1), BAND_EUNAVAIL);
    band_keyrate_stats st = stats_of(k);
    assert_u64_equal(st.granted, 1);
    assert_u64_equal(st.refused_rate, 1);
    assert_u64_equal(st.refused_too_big, 1);
    assert_u64_equal(st.forgotten, 1);
    assert_u64_equal(st.backend_errors, 3);
    assert_u64_equal(st.failed_open, 0);
    assert_u64_equal(st.keys, 0);
    assert_int_equal(band_keyrate_close(k), 0);
    assert_int_equal(take(k, "a", 1, &ra), BAND_ECLOSED);
    band_keyrate_destroy(k);

    o.fail = BAND_KEYRATE_FAIL_OPEN; /* fail open: granted, and counted */
    assert_int_equal(band_keyrate_create(&k, 3, BAND_SEC, 5, &o), 0);
    assert_int_equal(take(k, "a", 1, &ra), 0);
    assert_int_equal(take(k, "a", 5, &ra), 0);
    assert_u64_equal(avail(k, "a"), 5);
    fb.down = 0;
    assert_int_equal(take(k, "z", 5, &ra), 0);
    assert_int_equal(take(k, "z", 1, &ra), BAND_EAGAIN);
    st = stats_of(k);
    assert_u64_equal(st.granted, 3);
    assert_u64_equal(st.failed_open, 2);
    assert_u64_equal(st.backend_errors, 3);
    band_keyrate_destroy(k);
    band_keyrate_destroy(fb.inner);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_args),
        cmocka_unit_test(test_keys_are_independent),
        cmocka_unit_test(test_weighted_and_too_big),
        cmocka_unit_test(test_one_key_is_band_rate),
        cmocka_unit_test(test_idle_eviction_changes_no_answer),
        cmocka_unit_test(test_full_refuse),
        cmocka_unit_test(test_full_evict_closest_to_full),
        cmocka_unit_test(test_shards_hold_their_share),
        cmocka_unit_test(test_forget),
        cmocka_unit_test(test_key_bytes),
        cmocka_unit_test(test_set_keeps_shortfall),
        cmocka_unit_test(test_clock_steps_back),
        cmocka_unit_test(test_name_and_close),
        cmocka_unit_test(test_backend),
    };
    return cmocka_run_group_tests_name("test_keyrate", tests, NULL, NULL);
}

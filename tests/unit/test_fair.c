/* SPDX-License-Identifier: MIT */
/*
 * test_fair.c - the rules of band_fair (fair.h), one test each: arguments, try/release,
 * whole grants, per-key FIFO, the per-key cap, reservations (borrowing, protection,
 * served first), priority headroom and stalls, cancel (both outcomes, cancel of the
 * turn), blocking acquire with deadlines, close, key configuration, wakes that call back,
 * counters, names. Class 0 is the most urgent. Fairness shares and the registry bound are in
 * test_fair_share.c.
 *
 * Every test checks band__fair_check() as it goes.
 */
#include "test_fair_util.h"

#define CHECK(f) assert_int_equal(band__fair_check(f), 0)

struct fixture {
    band_fair *f;
    struct fair_log log;
    struct freq q[16];
};

static int setup(void **state)
{
    struct fixture *x = calloc(1, sizeof(*x));
    if (x == NULL)
        return -1;
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *x = *state;
    int rc = 0;
    if (x->f != NULL) {
        band_fair_close(x->f);
        rc = band_fair_destroy(x->f);
    }
    free(x);
    return rc == 0 ? 0 : -1;
}

static band_fair_stats stats_of(const band_fair *f)
{
    band_fair_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_fair_get_stats(f, &st), 0);
    return st;
}

static band_fair_key_stats key_stats(const band_fair *f, uint64_t key)
{
    band_fair_key_stats ks;
    memset(&ks, 0xee, sizeof(ks));
    assert_int_equal(band_fair_key_get_stats(f, key, &ks), 0);
    return ks;
}

/* Submit q[i] for @key/@cls/@n and expect @rc. */
static void submit(struct fixture *x, int i, uint64_t key, uint32_t cls, uint64_t n, int rc)
{
    freq_init(&x->q[i], i, &x->log, key, cls, n);
    assert_int_equal(freq_submit(x->f, &x->q[i]), rc);
    CHECK(x->f);
}

/* Macros, so that a failure names the line of the test. */
#define assert_granted(x, i)                                                                       \
    do {                                                                                           \
        assert_int_equal(atomic_load(&(x)->q[i].wakes), 1);                                        \
        assert_int_equal(atomic_load(&(x)->q[i].status), 0);                                       \
    } while (0)

#define assert_waiting(x, i)                                                                       \
    do {                                                                                           \
        assert_int_equal(atomic_load(&(x)->q[i].wakes), 0);                                        \
        assert_int_equal(band_waiter_is_pending(&(x)->q[i].r.w), 1);                               \
    } while (0)

/* ---------------------------------------------------------------------------------- */

static void test_create_args(void **state)
{
    (void)state;
    band_fair_opts o = {0};
    band_fair *f = (band_fair *)(uintptr_t)0x1234;
    assert_int_equal(band_fair_create(NULL, 10, &o), BAND_EINVAL);
    assert_int_equal(band_fair_create(NULL, 10, NULL), BAND_EINVAL);
    assert_int_equal(band_fair_create(&f, 0, &o), BAND_EINVAL);
    assert_int_equal(band_fair_create(&f, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_fair_create(&f, BAND_FAIR_MAX_CAPACITY + 1, &o), BAND_EINVAL);
    o = (band_fair_opts){0};
    o.classes = BAND_FAIR_MAX_CLASSES + 1;
    assert_int_equal(band_fair_create(&f, 10, &o), BAND_EINVAL);
    o = (band_fair_opts){0};
    o.quantum = BAND_FAIR_MAX_QUANTUM + 1;
    assert_int_equal(band_fair_create(&f, 10, &o), BAND_EINVAL);
    o = (band_fair_opts){0};
    o.default_weight = BAND_FAIR_MAX_WEIGHT + 1;
    assert_int_equal(band_fair_create(&f, 10, &o), BAND_EINVAL);
    o = (band_fair_opts){0};
    o.default_cap = 11;
    assert_int_equal(band_fair_create(&f, 10, &o), BAND_EINVAL);
    o = (band_fair_opts){0};
    o.classes = 3;
    o.headroom[1] = 5;
    o.headroom[2] = 2; /* decreasing: class 2 would leave less than class 1 */
    assert_int_equal(band_fair_create(&f, 10, &o), BAND_EINVAL);
    o.headroom[2] = 10; /* not below the capacity: class 2 could never be granted */
    assert_int_equal(band_fair_create(&f, 10, &o), BAND_EINVAL);
    o.headroom[2] = 11;
    assert_int_equal(band_fair_create(&f, 10, &o), BAND_EINVAL);
    o.headroom[1] = 1;
    o.headroom[2] = 2;
    o.headroom[0] = 1; /* nothing is more urgent than class 0 */
    assert_int_equal(band_fair_create(&f, 10, &o), BAND_EINVAL);
    o.headroom[0] = 0;
    o.headroom[3] = 2; /* a class the fair does not have */
    assert_int_equal(band_fair_create(&f, 10, &o), BAND_EINVAL);
    assert_ptr_equal(f, (band_fair *)(uintptr_t)0x1234); /* unchanged on failure */

    o.headroom[3] = 0;
    assert_int_equal(band_fair_create(&f, 10, &o), 0);
    CHECK(f);
    band_fair_stats st = stats_of(f);
    assert_u64_equal(st.capacity, 10);
    assert_u64_equal(st.in_use, 0);
    assert_int_equal(st.classes, 3);
    assert_u64_equal(st.cls[0].headroom, 0);
    assert_u64_equal(st.cls[1].headroom, 1);
    assert_u64_equal(st.cls[2].headroom, 2);
    assert_u64_equal(st.max_keys, BAND_FAIR_DEFAULT_MAX_KEYS);
    assert_u64_equal(st.keys, 0);
    assert_int_equal(st.closed, 0);
    assert_string_equal(st.name, "");
    assert_int_equal(band_fair_destroy(f), 0);
    assert_int_equal(band_fair_destroy(NULL), 0);

    /* NULL options: the defaults */
    f = NULL;
    assert_int_equal(band_fair_create(&f, 7, NULL), 0);
    st = stats_of(f);
    assert_u64_equal(st.capacity, 7);
    assert_int_equal(st.classes, 1);
    assert_u64_equal(st.cls[0].headroom, 0);
    assert_u64_equal(st.max_keys, BAND_FAIR_DEFAULT_MAX_KEYS);
    assert_int_equal(band_fair_try_acquire(f, 1, 0, 7), 0); /* default cap: the capacity */
    assert_int_equal(band_fair_release(f, 1, 7), 0);
    assert_int_equal(band_fair_destroy(f), 0);

    /* NULLs everywhere else */
    band_fair_acquire_op op;
    band_waiter_init(&op.w, NULL, NULL);
    assert_int_equal(band_fair_try_acquire(NULL, 1, 0, 1), BAND_EINVAL);
    assert_int_equal(band_fair_acquire(NULL, 1, 0, 1, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_fair_acquire_async(NULL, 1, 0, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_fair_acquire_async(NULL, 1, 0, 1, &op), BAND_EINVAL);
    assert_int_equal(band_fair_release(NULL, 1, 1), BAND_EINVAL);
    assert_int_equal(band_fair_close(NULL), BAND_EINVAL);
    assert_int_equal(band_fair_is_closed(NULL), 0);
    assert_int_equal(band_fair_set_name(NULL, "x"), BAND_EINVAL);
    assert_int_equal(band_fair_key_set(NULL, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_fair_key_unset(NULL, 1), BAND_EINVAL);
    assert_int_equal(band_fair_get_stats(NULL, NULL), BAND_EINVAL);
    size_t cnt;
    assert_int_equal(band_fair_list_keys(NULL, NULL, 0, &cnt), BAND_EINVAL);
}

/* set_name copies the name into the counters; too long is refused and changes nothing. */
static void test_name(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(4, 1, 1);
    assert_non_null(x->f);
    assert_string_equal(stats_of(x->f).name, "");
    char name[BAND_NAME_MAX + 1];
    memset(name, 'a', sizeof(name));
    name[BAND_NAME_MAX - 1] = '\0'; /* the longest that fits */
    assert_int_equal(band_fair_set_name(x->f, name), 0);
    assert_string_equal(stats_of(x->f).name, name);
    name[BAND_NAME_MAX - 1] = 'a';
    name[BAND_NAME_MAX] = '\0'; /* one byte too many */
    assert_int_equal(band_fair_set_name(x->f, name), BAND_EINVAL);
    assert_int_equal(strlen(stats_of(x->f).name), BAND_NAME_MAX - 1);
    assert_int_equal(band_fair_set_name(x->f, "tenants"), 0);
    assert_string_equal(stats_of(x->f).name, "tenants");
    assert_int_equal(band_fair_set_name(x->f, NULL), 0);
    assert_string_equal(stats_of(x->f).name, "");
    CHECK(x->f);
}

static void test_try_release(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(10, 1, 1);
    assert_non_null(x->f);
    assert_int_equal(band_fair_try_acquire(x->f, 1, 1, 1), BAND_EINVAL); /* class range */
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 0), 0);           /* n = 0 */
    assert_u64_equal(stats_of(x->f).keys, 0); /* ... creates no key state */
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 6), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 2, 0, 4), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 3, 0, 1), BAND_EAGAIN);
    CHECK(x->f);
    band_fair_stats st = stats_of(x->f);
    assert_u64_equal(st.in_use, 10);
    assert_u64_equal(st.keys, 2); /* key 3 was refused and evicted at once */
    assert_u64_equal(st.try_refusals, 1);
    assert_u64_equal(key_stats(x->f, 1).held, 6);
    assert_int_equal(key_stats(x->f, 3).live, 0);

    assert_int_equal(band_fair_release(x->f, 1, 7), BAND_EINVAL); /* more than held */
    assert_int_equal(band_fair_release(x->f, 3, 1), BAND_EINVAL); /* holds nothing */
    assert_int_equal(band_fair_release(x->f, 1, 0), 0);
    assert_int_equal(band_fair_release(x->f, 1, 6), 0);
    assert_int_equal(key_stats(x->f, 1).live, 0); /* idle: evicted */
    assert_int_equal(band_fair_release(x->f, 2, 4), 0);
    st = stats_of(x->f);
    assert_u64_equal(st.in_use, 0);
    assert_u64_equal(st.keys, 0);
    assert_u64_equal(st.keys_created, 3);
    assert_u64_equal(st.keys_evicted, 3);
    CHECK(x->f);
}

static void test_too_big(void **state)
{
    struct fixture *x = *state;
    band_fair_opts o = {0};
    o.classes = 2;
    o.headroom[1] = 4; /* class 1 may fill 6 of the 10 */
    o.default_cap = 8;
    assert_int_equal(band_fair_create(&x->f, 10, &o), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 9), BAND_E2BIG); /* over the cap */
    assert_int_equal(band_fair_try_acquire(x->f, 1, 1, 7), BAND_E2BIG); /* over 10 - 4 */
    assert_int_equal(band_fair_acquire(x->f, 1, 1, 7, BAND_FOREVER, NULL), BAND_E2BIG);
    submit(x, 0, 1, 0, 9, BAND_E2BIG);
    assert_int_equal(band_waiter_status(&x->q[0].r.w), BAND_E2BIG);
    assert_int_equal(band_waiter_is_pending(&x->q[0].r.w), 0);
    assert_int_equal(fair_set(x->f, 2, 1, 10, 0), 0); /* a configured cap of 10 */
    assert_int_equal(band_fair_try_acquire(x->f, 2, 0, 10), 0);
    assert_int_equal(band_fair_release(x->f, 2, 10), 0);
    band_fair_stats st = stats_of(x->f);
    assert_u64_equal(st.too_big, 4);
    assert_u64_equal(st.keys, 1); /* only the pinned key 2 */
    CHECK(x->f);
}

static void test_async_whole_grants_and_key_fifo(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(10, 1, 100);
    assert_int_equal(band_fair_try_acquire(x->f, 9, 0, 10), 0);
    submit(x, 0, 1, 0, 3, BAND_PENDING);
    submit(x, 1, 1, 0, 1, BAND_PENDING);
    assert_waiting(x, 0);
    assert_int_equal(band_waiter_status(&x->q[0].r.w), BAND_PENDING);
    /* 2 units free: the key's head wants 3, and its later request of 1 may not pass it */
    assert_int_equal(band_fair_release(x->f, 9, 2), 0);
    assert_waiting(x, 0);
    assert_waiting(x, 1);
    assert_u64_equal(key_stats(x->f, 1).held, 0); /* nothing granted piecemeal */
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 1), BAND_EAGAIN);
    assert_int_equal(band_fair_release(x->f, 9, 1), 0);
    assert_granted(x, 0);
    assert_waiting(x, 1);
    assert_int_equal(band_fair_release(x->f, 9, 1), 0);
    assert_granted(x, 1);
    assert_int_equal(x->log.len, 2);
    assert_int_equal(x->log.ids[0], 0);
    assert_int_equal(x->log.ids[1], 1);
    band_fair_key_stats ks = key_stats(x->f, 1);
    assert_u64_equal(ks.held, 4);
    assert_u64_equal(ks.granted, 2);
    assert_u64_equal(ks.granted_units, 4);
    assert_u64_equal(ks.queued, 2);
    assert_u64_equal(ks.waiters, 0);
    /* a submission that completes at once: 0, no wake */
    assert_int_equal(band_fair_release(x->f, 9, 6), 0);
    submit(x, 2, 1, 0, 2, 0);
    assert_int_equal(atomic_load(&x->q[2].wakes), 0);
    assert_int_equal(band_waiter_status(&x->q[2].r.w), 0);
    /* a pending waiter cannot be submitted twice */
    submit(x, 3, 1, 0, 9, BAND_PENDING);
    assert_int_equal(freq_submit(x->f, &x->q[3]), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&x->q[3].r.w, BAND_ECANCELED), 0);
    CHECK(x->f);
}

/* A thousand queued requests of one key cannot push out a newcomer with one. */
static void test_thousand_vs_one(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(1, 1, 1);
    enum { N = 1000 };
    struct freq *big = calloc(N, sizeof(*big));
    assert_non_null(big);
    assert_int_equal(band_fair_try_acquire(x->f, 100, 0, 1), 0);
    for (int i = 0; i < N; i++) {
        freq_init(&big[i], 1000 + i, &x->log, 1, 0, 1);
        assert_int_equal(freq_submit(x->f, &big[i]), BAND_PENDING);
    }
    submit(x, 0, 2, 0, 1, BAND_PENDING);
    /* Release and pass on: the newcomer is served within the first two grants. */
    uint64_t holder = 100;
    for (int g = 0; g < 2; g++) {
        assert_int_equal(band_fair_release(x->f, holder, 1), 0);
        holder = x->log.keys[x->log.len - 1];
    }
    assert_granted(x, 0);
    band_fair_close(x->f);
    for (int i = 0; i < N; i++)
        assert_int_equal(atomic_load(&big[i].wakes), 1);
    CHECK(x->f);
    free(big);
}

static void test_cap(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(10, 1, 1);
    assert_int_equal(fair_set(x->f, 1, 1, 2, 0), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 2), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 1), BAND_EAGAIN); /* at its cap */
    submit(x, 0, 1, 0, 1, BAND_PENDING);
    /* A capped key stalls nobody: another key gets the free units. */
    assert_int_equal(band_fair_try_acquire(x->f, 2, 0, 8), 0);
    assert_false(stats_of(x->f).cls[0].stalled);
    assert_int_equal(band_fair_release(x->f, 2, 8), 0);
    assert_waiting(x, 0); /* still capped */
    assert_int_equal(band_fair_release(x->f, 1, 1), 0);
    assert_granted(x, 0);
    assert_u64_equal(key_stats(x->f, 1).held, 2);
    /* lowering the cap revokes nothing; queued requests above it fail with E2BIG */
    submit(x, 1, 1, 0, 2, BAND_PENDING);
    assert_int_equal(fair_set(x->f, 1, 1, 1, 0), 0);
    assert_int_equal(atomic_load(&x->q[1].wakes), 1);
    assert_int_equal(atomic_load(&x->q[1].status), BAND_E2BIG);
    assert_u64_equal(key_stats(x->f, 1).held, 2);
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 1), BAND_EAGAIN);
    assert_int_equal(band_fair_release(x->f, 1, 2), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 1), 0);
    CHECK(x->f);
}

static void test_reservation(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(10, 1, 1);
    assert_int_equal(fair_set(x->f, 1, 1, 11, 0), BAND_EINVAL); /* cap > capacity */
    assert_int_equal(fair_set(x->f, 1, 1, 3, 4), BAND_EINVAL);  /* reserve > cap */
    assert_int_equal(fair_set(x->f, 1, 0, 3, 0), BAND_EINVAL);  /* weight 0 */
    assert_int_equal(fair_set(x->f, 1, 1, 0, 4), 0);            /* R: reserve 4 */
    assert_int_equal(fair_set(x->f, 2, 1, 0, 7), BAND_EINVAL);  /* 4 + 7 > 10 */
    assert_int_equal(key_stats(x->f, 2).live, 0);
    assert_u64_equal(stats_of(x->f).reserved, 4);

    /* Borrowing: while R waits for nothing, X may use R's reservation. */
    assert_int_equal(band_fair_try_acquire(x->f, 2, 0, 10), 0);
    /* R queues 3 (within its reservation): its unused reservation is now protected. */
    submit(x, 0, 1, 0, 3, BAND_PENDING);
    submit(x, 1, 2, 0, 1, BAND_PENDING);                /* X wants one more */
    assert_int_equal(band_fair_release(x->f, 2, 2), 0); /* free 2: R needs 3, X may not borrow */
    assert_waiting(x, 0);
    assert_waiting(x, 1);
    assert_int_equal(band_fair_try_acquire(x->f, 3, 0, 1), BAND_EAGAIN); /* nor may Y */
    assert_int_equal(band_fair_release(x->f, 2, 1), 0);                  /* free 3 */
    assert_granted(x, 0);
    assert_waiting(x, 1);
    /* R holds 3 and waits for nothing: X's request is served from the next release */
    assert_int_equal(band_fair_release(x->f, 2, 1), 0);
    assert_granted(x, 1);
    assert_int_equal(x->log.ids[0], 0);
    assert_int_equal(x->log.ids[1], 1);
    CHECK(x->f);

    /* A request within the reservation passes a stalled class (served before the DRR). */
    band_fair_stats st = stats_of(x->f); /* in_use: R 3, X 7 + 1 - 1 ... */
    assert_u64_equal(st.in_use, 10);
    assert_int_equal(band_fair_release(x->f, 2, 1), 0); /* free 1 */
    submit(x, 2, 2, 0, 3, BAND_PENDING);                /* X: needs 3, stalls the class */
    assert_true(stats_of(x->f).cls[0].stalled);
    assert_int_equal(band_fair_try_acquire(x->f, 3, 0, 1), BAND_EAGAIN); /* Y may not pass */
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 1), 0); /* R within its reservation */
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 1), BAND_EAGAIN);
    band_fair_close(x->f);
    assert_int_equal(atomic_load(&x->q[2].status), BAND_ECLOSED);
    CHECK(x->f);
}

/* Reservations never deadlock: two reserved keys with heads beyond their reservations. */
static void test_reservation_no_deadlock(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(10, 1, 100);
    assert_int_equal(fair_set(x->f, 1, 1, 0, 3), 0);
    assert_int_equal(fair_set(x->f, 2, 1, 0, 5), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 3, 0, 10), 0);
    submit(x, 0, 1, 0, 9, BAND_PENDING);
    submit(x, 1, 2, 0, 9, BAND_PENDING);
    submit(x, 2, 3, 0, 8, BAND_PENDING);
    assert_int_equal(band_fair_release(x->f, 3, 10), 0); /* nothing held now */
    assert_int_equal(x->log.len, 1);
    for (int round = 0; round < 2; round++) {
        uint64_t k = x->log.keys[x->log.len - 1];
        uint64_t n = x->q[x->log.ids[x->log.len - 1]].n;
        assert_int_equal(band_fair_release(x->f, k, n), 0);
    }
    assert_int_equal(x->log.len, 3);
    assert_granted(x, 0);
    assert_granted(x, 1);
    assert_granted(x, 2);
    CHECK(x->f);
}

static void test_priority_headroom(void **state)
{
    struct fixture *x = *state;
    band_fair_opts o = {0};
    o.classes = 2;
    o.headroom[1] = 4;
    assert_int_equal(band_fair_create(&x->f, 10, &o), 0);
    /* Class 1 may fill the capacity only up to 6: it leaves 4 units for class 0. */
    assert_int_equal(band_fair_try_acquire(x->f, 1, 1, 6), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 2, 1, 1), BAND_EAGAIN);
    assert_int_equal(band_fair_try_acquire(x->f, 3, 0, 4), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 3, 0, 1), BAND_EAGAIN);
    /* Both classes wait: a release goes to class 0 first. */
    submit(x, 0, 2, 1, 1, BAND_PENDING);
    submit(x, 1, 4, 0, 1, BAND_PENDING);
    assert_int_equal(band_fair_release(x->f, 1, 1), 0);
    assert_waiting(x, 0);
    assert_granted(x, 1);
    /* class 1 fits again only once in_use is at most 5 (6 with its request) */
    assert_int_equal(band_fair_release(x->f, 4, 1), 0); /* in_use 9 */
    assert_waiting(x, 0);
    assert_int_equal(band_fair_release(x->f, 3, 4), 0); /* in_use 5 */
    assert_granted(x, 0);                               /* in_use 6: key 1 5, key 2 1 */
    /* class 0 may still use the 4 units class 1 leaves free */
    assert_int_equal(band_fair_try_acquire(x->f, 5, 0, 3), 0); /* in_use 9 */
    submit(x, 2, 5, 0, 2, BAND_PENDING);                       /* free 1: class 0 stalls */
    band_fair_stats st = stats_of(x->f);
    assert_true(st.cls[0].stalled);
    assert_false(st.cls[1].stalled);
    assert_int_equal(band_fair_release(x->f, 1, 4), 0); /* in_use 5 */
    assert_granted(x, 2);                               /* in_use 7 */
    st = stats_of(x->f);
    assert_false(st.cls[0].stalled);
    assert_u64_equal(st.in_use, 7);
    assert_u64_equal(st.cls[0].headroom, 0);
    assert_u64_equal(st.cls[1].headroom, 4);
    assert_u64_equal(st.cls[0].granted, 4);
    assert_u64_equal(st.cls[0].granted_units, 10);
    assert_u64_equal(st.cls[1].granted, 2);
    assert_u64_equal(st.cls[0].waiters, 0);
    assert_u64_equal(st.cls[0].queued, 2);
    CHECK(x->f);
}

static void test_less_urgent_waits_behind_stalled(void **state)
{
    struct fixture *x = *state;
    band_fair_opts o = {0};
    o.classes = 2;
    o.headroom[1] = 1;
    assert_int_equal(band_fair_create(&x->f, 10, &o), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 1, 1, 8), 0);
    submit(x, 0, 2, 0, 5, BAND_PENDING); /* class 0 wants 5, free 2: stalls */
    assert_int_equal(band_fair_try_acquire(x->f, 3, 1, 1), BAND_EAGAIN); /* would fit 9 */
    submit(x, 1, 3, 1, 1, BAND_PENDING);
    assert_int_equal(band_fair_release(x->f, 1, 2), 0); /* free 4 */
    assert_waiting(x, 0);
    assert_waiting(x, 1);
    assert_int_equal(band_fair_release(x->f, 1, 1), 0); /* free 5 */
    assert_granted(x, 0);
    assert_waiting(x, 1); /* in_use 10 */
    assert_int_equal(band_fair_release(x->f, 2, 5), 0);
    assert_granted(x, 1);
    CHECK(x->f);
}

/* A grant at once can end a stall: here a reserved key's grant lifts the protection that
 * stalled another class, and that class's turn is granted inside the try call. */
static void test_grant_now_ends_stall(void **state)
{
    struct fixture *x = *state;
    band_fair_opts o = {0};
    o.classes = 2;
    o.headroom[1] = 5;
    assert_int_equal(band_fair_create(&x->f, 10, &o), 0);
    assert_int_equal(fair_set(x->f, 1, 1, 0, 4), 0);           /* R: reserve 4 */
    assert_int_equal(band_fair_try_acquire(x->f, 2, 1, 3), 0); /* in_use 3 */
    submit(x, 0, 1, 1, 4, BAND_PENDING); /* R, class 1: 3 + 4 > 10 - 5, protected (unmet 4) */
    submit(x, 1, 3, 0, 4, BAND_PENDING); /* X, class 0: free 7 - 4 < 4: stalled */
    band_fair_stats st = stats_of(x->f);
    assert_true(st.cls[0].stalled || st.cls[1].stalled);
    assert_true(st.cls[0].stalled);
    assert_waiting(x, 1);
    /* R takes 2 in class 0, within its reservation: unmet 2 < its queued 4, so R is no longer
     * protected and X fits (free 5 - 4 >= 0). */
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 2), 0);
    assert_granted(x, 1);
    assert_waiting(x, 0);
    assert_false(stats_of(x->f).cls[0].stalled);
    CHECK(x->f);
}

static void test_cancel(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(10, 1, 100);
    assert_int_equal(band_fair_try_acquire(x->f, 9, 0, 7), 0);
    submit(x, 0, 1, 0, 5, BAND_PENDING); /* has the turn, free 3: stalls */
    submit(x, 1, 2, 0, 1, BAND_PENDING);
    assert_true(stats_of(x->f).cls[0].stalled);
    /* Cancelling the turn lets the next request in, before the cancel returns. */
    assert_int_equal(band_waiter_cancel(&x->q[0].r.w, BAND_ECANCELED), 0);
    assert_int_equal(atomic_load(&x->q[0].wakes), 0);
    assert_int_equal(band_waiter_status(&x->q[0].r.w), BAND_ECANCELED);
    assert_granted(x, 1);
    assert_int_equal(key_stats(x->f, 1).live, 0); /* idle after the cancel: evicted */
    /* Cancel after completion: BAND_EALREADY; not pending: BAND_EINVAL. */
    assert_int_equal(band_waiter_cancel(&x->q[1].r.w, BAND_ECANCELED), BAND_EALREADY);
    submit(x, 2, 3, 0, 3, BAND_PENDING);
    assert_int_equal(band_fair_release(x->f, 9, 1), 0);
    assert_granted(x, 2);
    assert_int_equal(band_waiter_cancel(&x->q[2].r.w, BAND_ECANCELED), BAND_EALREADY);
    submit(x, 3, 4, 0, 4, BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&x->q[3].r.w, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_waiter_cancel(&x->q[3].r.w, BAND_ETIMEDOUT), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&x->q[3].r.w, 5), BAND_EINVAL);
    band_fair_stats st = stats_of(x->f);
    assert_u64_equal(st.cls[0].cancels, 1);
    assert_u64_equal(st.cls[0].timeouts, 1);
    assert_u64_equal(st.waiters, 0);
    /* a cancelled request can be submitted again; it joins the back */
    submit(x, 3, 4, 0, 4, BAND_PENDING);
    assert_int_equal(band_fair_release(x->f, 9, 6), 0);
    assert_granted(x, 3);
    CHECK(x->f);
}

/* BAND_EALREADY: a wake that cancels itself sees the completion won. */
static void cancel_self_hook(struct freq *q)
{
    *(int *)q->ctx = band_waiter_cancel(&q->r.w, BAND_ECANCELED);
}

static void release_hook(struct freq *q)
{
    band_fair *f = q->ctx;
    /* the wake may call back: release what was just granted, and read stats */
    band_fair_stats st;
    (void)band_fair_get_stats(f, &st);
    (void)band_fair_release(f, q->key, q->n);
}

static void test_wake_calls_back(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(2, 1, 1);
    assert_int_equal(band_fair_try_acquire(x->f, 9, 0, 2), 0);
    for (int i = 0; i < 6; i++) {
        freq_init(&x->q[i], i, &x->log, (uint64_t)(i % 3), 0, 1);
        x->q[i].hook = release_hook;
        x->q[i].ctx = x->f;
        assert_int_equal(freq_submit(x->f, &x->q[i]), BAND_PENDING);
    }
    assert_int_equal(band_fair_release(x->f, 9, 2), 0);
    /* every request was granted (each wake released, letting in the next) */
    for (int i = 0; i < 6; i++)
        assert_granted(x, i);
    assert_u64_equal(stats_of(x->f).in_use, 0);
    assert_u64_equal(stats_of(x->f).keys, 0);

    int rc = 12345;
    assert_int_equal(band_fair_try_acquire(x->f, 9, 0, 2), 0);
    freq_init(&x->q[7], 7, &x->log, 1, 0, 1);
    x->q[7].hook = cancel_self_hook;
    x->q[7].ctx = &rc;
    assert_int_equal(freq_submit(x->f, &x->q[7]), BAND_PENDING);
    assert_int_equal(band_fair_release(x->f, 9, 1), 0);
    assert_granted(x, 7);
    assert_int_equal(rc, BAND_EALREADY); /* completion won: the wake owns the grant */
    CHECK(x->f);
}

struct blocker_arg {
    band_fair *f;
    uint64_t key;
    uint64_t n;
    band_time deadline;
};

static int blocker_main(void *p)
{
    struct blocker_arg *a = p;
    return band_fair_acquire(a->f, a->key, 0, a->n, a->deadline, NULL);
}

static bool cond_waiters(void *p)
{
    band_fair_stats st;
    band_fair_get_stats(p, &st);
    return st.waiters >= 1;
}

static void test_blocking(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(4, 1, 1);
    assert_int_equal(band_fair_acquire(x->f, 1, 0, 4, BAND_FOREVER, NULL), 0);
    /* a past deadline does not wait and does not queue */
    assert_int_equal(band_fair_acquire(x->f, 2, 0, 1, band_now() - 1, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_fair_acquire(x->f, 2, 0, 1, 0, NULL), BAND_ETIMEDOUT);
    assert_u64_equal(stats_of(x->f).cls[0].queued, 0);
    /* a short deadline times out through a cancel */
    assert_int_equal(band_fair_acquire(x->f, 2, 0, 1, band_deadline_after(2 * BAND_MSEC), NULL),
                     BAND_ETIMEDOUT);
    assert_u64_equal(stats_of(x->f).cls[0].timeouts, 1);
    assert_int_equal(key_stats(x->f, 2).live, 0);
    /* another thread's release wakes a blocked acquire */
    struct blocker_arg a = {x->f, 2, 3, BAND_FOREVER};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, blocker_main, &a), 0);
    assert_true(test_wait_until(cond_waiters, x->f, 5 * BAND_SEC));
    assert_int_equal(band_fair_release(x->f, 1, 3), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_u64_equal(key_stats(x->f, 2).held, 3);
    band_fair_key_stats ks = key_stats(x->f, 2);
    assert_u64_equal(ks.granted, 1);
    assert_true(ks.wait_ns_total > 0);
    assert_true(ks.wait_ns_max == ks.wait_ns_total);
    /* close wakes a blocked acquire with BAND_ECLOSED */
    a.n = 1;
    assert_int_equal(test_thread_start(&t, blocker_main, &a), 0);
    assert_true(test_wait_until(cond_waiters, x->f, 5 * BAND_SEC));
    assert_int_equal(band_fair_close(x->f), 0);
    assert_int_equal(test_thread_join(&t), BAND_ECLOSED);
    CHECK(x->f);
}

static void test_close(void **state)
{
    struct fixture *x = *state;
    band_fair_opts o = {0};
    o.classes = 2;
    assert_int_equal(band_fair_create(&x->f, 4, &o), 0);
    assert_int_equal(band_fair_is_closed(x->f), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 1, 1, 4), 0);
    submit(x, 0, 2, 1, 1, BAND_PENDING);
    submit(x, 1, 3, 0, 2, BAND_PENDING);
    submit(x, 2, 2, 0, 1, BAND_PENDING);
    assert_int_equal(band_fair_destroy(x->f), BAND_EBUSY);
    assert_int_equal(band_fair_is_closed(x->f), 0);
    assert_int_equal(band_fair_close(x->f), 0);
    assert_int_equal(band_fair_is_closed(x->f), 1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(atomic_load(&x->q[i].wakes), 1);
        assert_int_equal(atomic_load(&x->q[i].status), BAND_ECLOSED);
    }
    assert_int_equal(band_fair_close(x->f), 0); /* twice is harmless */
    assert_int_equal(band_fair_is_closed(x->f), 1);
    assert_int_equal(band_fair_try_acquire(x->f, 1, 1, 0), BAND_ECLOSED);
    assert_int_equal(band_fair_try_acquire(x->f, 5, 1, 1), BAND_ECLOSED);
    submit(x, 3, 5, 1, 1, BAND_ECLOSED);
    assert_int_equal(band_waiter_status(&x->q[3].r.w), BAND_ECLOSED);
    band_fair_stats st = stats_of(x->f);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.closed_fails, 3);
    assert_u64_equal(st.keys, 1);                       /* key 1 still holds */
    assert_int_equal(band_fair_release(x->f, 1, 4), 0); /* release works after close */
    assert_u64_equal(stats_of(x->f).keys, 0);
    CHECK(x->f);
}

static void test_key_config(void **state)
{
    struct fixture *x = *state;
    band_fair_opts o = {0};
    o.max_keys = 2;
    assert_int_equal(band_fair_create(&x->f, 10, &o), 0);
    assert_int_equal(fair_set(x->f, 1, 3, 5, 2), 0);
    band_fair_key_stats ks = key_stats(x->f, 1);
    assert_int_equal(ks.live, 1);
    assert_int_equal(ks.pinned, 1);
    assert_int_equal(ks.weight, 3);
    assert_u64_equal(ks.cap, 5);
    assert_u64_equal(ks.reserve, 2);
    assert_int_equal(fair_set(x->f, 1, BAND_FAIR_MAX_WEIGHT + 1, 5, 2), BAND_EINVAL);
    assert_int_equal(fair_set(x->f, 2, 1, 0, 0), 0);
    assert_int_equal(fair_set(x->f, 3, 1, 0, 0), BAND_ENOMEM); /* two pinned keys: full */
    assert_int_equal(band_fair_try_acquire(x->f, 4, 0, 1), BAND_ENOMEM);
    assert_u64_equal(stats_of(x->f).key_refusals, 2);
    assert_int_equal(band_fair_key_unset(x->f, 2), 0);
    assert_int_equal(band_fair_key_unset(x->f, 77), 0); /* unknown key: nothing to do */
    assert_int_equal(key_stats(x->f, 2).live, 0);       /* idle and unpinned: evicted */
    assert_int_equal(band_fair_try_acquire(x->f, 4, 0, 1), 0);
    assert_int_equal(band_fair_key_unset(x->f, 1), 0);
    assert_int_equal(key_stats(x->f, 1).live, 0);
    band_fair_stats st = stats_of(x->f);
    assert_u64_equal(st.keys_pinned, 0);
    assert_u64_equal(st.reserved, 0);
    assert_u64_equal(st.keys, 1);
    /* a configured key keeps its counters while idle */
    assert_int_equal(fair_set(x->f, 1, 1, 0, 0), 0);
    assert_int_equal(band_fair_try_acquire(x->f, 1, 0, 2), 0);
    assert_int_equal(band_fair_release(x->f, 1, 2), 0);
    ks = key_stats(x->f, 1);
    assert_int_equal(ks.live, 1);
    assert_u64_equal(ks.granted, 1);
    /* list_keys */
    band_fair_key_stats list[4];
    size_t n = 99;
    assert_int_equal(band_fair_list_keys(x->f, list, 4, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(band_fair_list_keys(x->f, list, 1, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(band_fair_list_keys(x->f, NULL, 1, &n), BAND_EINVAL);
    CHECK(x->f);
}

/* A large request is not starved by a flood of small ones of another key. */
static void test_large_not_starved(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(10, 1, 1);
    assert_int_equal(band_fair_try_acquire(x->f, 2, 0, 10), 0);
    submit(x, 0, 1, 0, 10, BAND_PENDING);
    /* key 2 keeps releasing one and asking for one: it must not take it back */
    for (int i = 0; i < 9; i++) {
        assert_int_equal(band_fair_release(x->f, 2, 1), 0);
        assert_int_equal(band_fair_try_acquire(x->f, 2, 0, 1), BAND_EAGAIN);
    }
    assert_waiting(x, 0);
    assert_int_equal(band_fair_release(x->f, 2, 1), 0);
    assert_granted(x, 0);
    CHECK(x->f);
}

/* A request far above the quantum is served without spinning rounds (skip-ahead). */
static void test_large_request_small_quantum(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(BAND_FAIR_MAX_CAPACITY, 1, 1);
    assert_int_equal(band_fair_try_acquire(x->f, 9, 0, BAND_FAIR_MAX_CAPACITY), 0);
    submit(x, 0, 1, 0, BAND_FAIR_MAX_CAPACITY / 2, BAND_PENDING);
    submit(x, 1, 2, 0, BAND_FAIR_MAX_CAPACITY / 4, BAND_PENDING);
    band_time t0 = band_now();
    assert_int_equal(band_fair_release(x->f, 9, BAND_FAIR_MAX_CAPACITY), 0);
    assert_true(band_now() - t0 < BAND_SEC);
    assert_granted(x, 0);
    assert_granted(x, 1);
    /* the first one gained its credit while it was alone (DRR rounds pass while it waits
     * for capacity), so it goes first */
    assert_int_equal(x->log.ids[0], 0);
    CHECK(x->f);
}

/* Requests of 2^60 units over a quantum of 1 are each due 2^60 rounds after the last:
 * after four rounds of them the rounds are rebased (they would wrap after a few more), and
 * the round robin goes on exactly as before. */
static void test_round_rebase(void **state)
{
    struct fixture *x = *state;
    const uint64_t max = BAND_FAIR_MAX_CAPACITY, big = UINT64_C(1) << 60; /* one at a time */
    x->f = fair_new(max, 1, 1);
    assert_int_equal(band_fair_try_acquire(x->f, 99, 0, max), 0);
    enum { PER_KEY = 5 };
    for (int i = 0; i < 3 * PER_KEY; i++)
        submit(x, i, (uint64_t)(i % 3) + 1, 0, big, BAND_PENDING);
    assert_int_equal(band_fair_release(x->f, 99, max), 0);
    uint64_t highest = 0;
    bool rebased = false;
    for (unsigned g = 0; g < 3 * PER_KEY; g++) {
        assert_int_equal(x->log.len, g + 1);
        assert_u64_equal(x->log.keys[g], g % 3 + 1); /* strictly 1, 2, 3, 1, 2, 3, ... */
        uint64_t v = x->f->cls[0].vround;
        rebased = rebased || v < highest;
        highest = v > highest ? v : highest;
        CHECK(x->f);
        assert_int_equal(band_fair_release(x->f, x->log.keys[g], big), 0);
    }
    assert_true(rebased);
    assert_u64_equal(stats_of(x->f).in_use, 0);
    CHECK(x->f);
}

/* A request larger than the quantum keeps the rounds it waited: its key's releases (which
 * put the key's flows where they belong) do not move it back. */
static unsigned large_waits_for(bool releases)
{
    static struct fair_log log;
    memset(&log, 0, sizeof(log));
    static struct freq q[12];
    band_fair *f = fair_new(8, 1, 1);
    assert_non_null(f);
    assert_int_equal(band_fair_try_acquire(f, 1, 0, 3), 0);  /* key 1 holds 3 */
    assert_int_equal(band_fair_try_acquire(f, 99, 0, 5), 0); /* the rest is held */
    for (int i = 0; i < 10; i++) {
        freq_init(&q[i], i, &log, 2, 0, 1); /* key 2: one unit at a time */
        assert_int_equal(freq_submit(f, &q[i]), BAND_PENDING);
    }
    freq_init(&q[10], 10, &log, 1, 0, 4); /* key 1: 4 units, due 4 rounds ahead */
    assert_int_equal(freq_submit(f, &q[10]), BAND_PENDING);
    uint64_t placeholder = 5, held1 = 3;
    unsigned served = 0, before = 0;
    while (atomic_load(&q[10].wakes) == 0) {
        if (placeholder > 0) {
            assert_int_equal(band_fair_release(f, 99, 1), 0);
            placeholder--;
        } else {
            assert_int_equal(band_fair_release(f, 2, 1), 0); /* a grant of key 2 ends */
        }
        for (; served < log.len; served++) {
            if (log.keys[served] != 2)
                continue;
            before++;
            if (releases && held1 > 0) {
                assert_int_equal(band_fair_release(f, 1, 1), 0);
                held1--;
            }
        }
        assert_int_equal(band__fair_check(f), 0);
    }
    band_fair_close(f);
    assert_int_equal(band_fair_destroy(f), 0);
    return before;
}

static void test_large_keeps_its_rounds(void **state)
{
    (void)state;
    /* Key 2's flow is in the current round when key 1's starts, so key 1's request is due
     * four rounds later, after four units of key 2 (equal weights: equal units). */
    assert_int_equal(large_waits_for(false), 4);
    assert_int_equal(large_waits_for(true), 4);
}

/* A key that asks for one unit at a time, and is evicted between requests, is not served
 * twice in a round. It asks again after its release, which has already let the backlogged
 * key into the next round, so it comes second there: one grant in three. */
static void test_returning_key_alternates(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(1, 1, 1);
    assert_int_equal(band_fair_try_acquire(x->f, 99, 0, 1), 0);
    for (int i = 0; i < 10; i++)
        submit(x, i, 1, 0, 1, BAND_PENDING); /* key 1: backlogged */
    submit(x, 10, 2, 0, 1, BAND_PENDING);    /* key 2: one at a time */
    assert_int_equal(band_fair_release(x->f, 99, 1), 0);
    static const uint64_t want[12] = {1, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1};
    for (unsigned g = 0; g < 12; g++) {
        assert_int_equal(x->log.len, g + 1);
        uint64_t k = x->log.keys[g];
        assert_u64_equal(k, want[g]);
        if (k == 2) {
            int i = x->log.ids[g];
            assert_int_equal(band_fair_release(x->f, 2, 1), 0); /* idle: evicted */
            assert_int_equal(key_stats(x->f, 2).live, 0);
            submit(x, i, 2, 0, 1, BAND_PENDING); /* and back */
        } else {
            assert_int_equal(band_fair_release(x->f, 1, 1), 0);
        }
    }
    CHECK(x->f);
}

/* The units queued in a class never wrap: the submission past 2^64 - 1 is refused. */
static void test_queue_overflow(void **state)
{
    struct fixture *x = *state;
    const uint64_t max = BAND_FAIR_MAX_CAPACITY;
    x->f = fair_new(max, 1, 1);
    assert_int_equal(band_fair_try_acquire(x->f, 99, 0, max), 0);
    for (int i = 0; i < 8; i++)
        submit(x, i, (uint64_t)i, 0, max, BAND_PENDING);
    submit(x, 8, 8, 0, max, BAND_EOVERFLOW);
    assert_int_equal(band_waiter_status(&x->q[8].r.w), BAND_EOVERFLOW);
    assert_int_equal(key_stats(x->f, 8).live, 0);
    assert_u64_equal(stats_of(x->f).cls[0].waiting_units, 8 * max);
    CHECK(x->f);
}

static void test_counters(void **state)
{
    struct fixture *x = *state;
    x->f = fair_new(2, 2, 1);
    assert_int_equal(band_fair_try_acquire(x->f, 1, 1, 2), 0);
    submit(x, 0, 1, 1, 1, BAND_PENDING);
    submit(x, 1, 1, 0, 2, BAND_PENDING);
    band_fair_key_stats ks = key_stats(x->f, 1);
    assert_u64_equal(ks.held, 2);
    assert_u64_equal(ks.waiters, 2);
    assert_u64_equal(ks.waiting_units, 3);
    assert_u64_equal(ks.queued, 2);
    band_fair_stats st = stats_of(x->f);
    assert_u64_equal(st.cls[1].waiters, 1);
    assert_u64_equal(st.cls[0].waiters, 1);
    assert_u64_equal(st.cls[0].waiting_units, 2);
    assert_u64_equal(st.waiters, 2);
    assert_int_equal(band_fair_release(x->f, 1, 2), 0);
    assert_granted(x, 1); /* class 0 first */
    assert_waiting(x, 0);
    ks = key_stats(x->f, 1);
    assert_u64_equal(ks.granted, 2);
    assert_u64_equal(ks.granted_units, 4);
    assert_u64_equal(ks.waiters, 1);
    assert_int_equal(band_waiter_cancel(&x->q[0].r.w, BAND_ECANCELED), 0);
    ks = key_stats(x->f, 1);
    assert_u64_equal(ks.cancels, 1);
    st = stats_of(x->f);
    assert_u64_equal(st.cls[0].granted, 1);
    assert_u64_equal(st.cls[0].queued, 1);
    assert_u64_equal(st.cls[1].granted, 1);
    assert_u64_equal(st.cls[1].cancels, 1);
    assert_u64_equal(st.in_use, 2);
    CHECK(x->f);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_args),
        T(test_name),
        T(test_try_release),
        T(test_too_big),
        T(test_async_whole_grants_and_key_fifo),
        T(test_thousand_vs_one),
        T(test_cap),
        T(test_reservation),
        T(test_reservation_no_deadlock),
        T(test_priority_headroom),
        T(test_less_urgent_waits_behind_stalled),
        T(test_grant_now_ends_stall),
        T(test_cancel),
        T(test_wake_calls_back),
        T(test_blocking),
        T(test_close),
        T(test_key_config),
        T(test_large_not_starved),
        T(test_large_request_small_quantum),
        T(test_round_rebase),
        T(test_large_keeps_its_rounds),
        T(test_returning_key_alternates),
        T(test_queue_overflow),
        T(test_counters),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * test_latch.c - the latch (latch.h): creation, count-down and its limits, open for good,
 * try/async/blocking waits, cancel (both outcomes), deadlines, arrive_and_wait with
 * threads, wakes that call back into the latch, counters.
 */
#include "test.h"

#include <string.h>

#include "band/latch.h"

struct fixture {
    band_latch *l;
    struct wake_log log;
    struct wake_rec rec[8];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_latch_create(&f->l, 3) != 0) {
        free(f);
        return -1;
    }
    wake_log_init(&f->log);
    for (int i = 0; i < 8; i++)
        wake_rec_init(&f->rec[i], i, &f->log);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    int rc = band_latch_destroy(f->l);
    free(f);
    return rc == 0 ? 0 : -1;
}

static band_latch_stats stats_of(const band_latch *l)
{
    band_latch_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_latch_get_stats(l, &st), 0);
    return st;
}

static int count_of(struct wake_rec *r)
{
    return atomic_load(&r->count);
}

static void test_create_args(void **state)
{
    (void)state;
    band_latch *l = (band_latch *)(uintptr_t)0x1234;
    assert_int_equal(band_latch_create(NULL, 1), BAND_EINVAL);
    assert_int_equal(band_latch_create(&l, UINT64_MAX), 0);
    assert_u64_equal(band_latch_count(l), UINT64_MAX);
    assert_int_equal(band_latch_try_wait(l), BAND_EAGAIN);
    assert_int_equal(band_latch_count_down(l, UINT64_MAX), 0);
    assert_int_equal(band_latch_try_wait(l), 0);
    assert_int_equal(band_latch_destroy(l), 0);
    assert_int_equal(band_latch_destroy(NULL), 0);
}

static void test_null_args(void **state)
{
    struct fixture *f = *state;
    band_latch_stats st;
    assert_int_equal(band_latch_count_down(NULL, 1), BAND_EINVAL);
    assert_int_equal(band_latch_try_wait(NULL), BAND_EINVAL);
    assert_int_equal(band_latch_wait(NULL, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_latch_wait_async(NULL, &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_latch_wait_async(f->l, NULL), BAND_EINVAL);
    assert_int_equal(band_latch_arrive_and_wait(NULL, 1, 0, NULL), BAND_EINVAL);
    assert_u64_equal(band_latch_count(NULL), 0);
    assert_int_equal(band_latch_get_stats(NULL, &st), BAND_EINVAL);
    assert_int_equal(band_latch_get_stats(f->l, NULL), BAND_EINVAL);
    band_waiter nowake;
    band_waiter_init(&nowake, NULL, NULL);
    assert_int_equal(band_latch_wait_async(f->l, &nowake), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&nowake), 0);
    assert_u64_equal(band_latch_count(f->l), 3);
}

static void test_zero_is_open(void **state)
{
    (void)state;
    band_latch *l;
    struct wake_rec r;
    wake_rec_init(&r, 0, NULL);
    assert_int_equal(band_latch_create(&l, 0), 0);
    assert_int_equal(band_latch_try_wait(l), 0);
    assert_int_equal(band_latch_wait(l, 0, NULL), 0);
    assert_int_equal(band_latch_wait(l, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_latch_wait_async(l, &r.w), 0);
    assert_int_equal(atomic_load(&r.count), 0);
    assert_int_equal(band_latch_count_down(l, 0), 0);
    assert_int_equal(band_latch_count_down(l, 1), BAND_EINVAL);
    assert_int_equal(band_latch_destroy(l), 0);
}

static void test_count_down_limits(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_latch_count_down(f->l, 4), BAND_EINVAL);
    assert_int_equal(band_latch_count_down(f->l, UINT64_MAX), BAND_EINVAL);
    assert_u64_equal(band_latch_count(f->l), 3);
    assert_int_equal(band_latch_count_down(f->l, 0), 0);
    assert_int_equal(band_latch_count_down(f->l, 2), 0);
    assert_u64_equal(band_latch_count(f->l), 1);
    assert_int_equal(band_latch_try_wait(f->l), BAND_EAGAIN);
    assert_int_equal(band_latch_count_down(f->l, 2), BAND_EINVAL);
    assert_int_equal(band_latch_count_down(f->l, 1), 0);
    assert_int_equal(band_latch_try_wait(f->l), 0);
    /* Open for good: no count-down past zero, ever. */
    assert_int_equal(band_latch_count_down(f->l, 1), BAND_EINVAL);
    assert_u64_equal(band_latch_count(f->l), 0);
    band_latch_stats st = stats_of(f->l);
    assert_u64_equal(st.misuse, 4);
    assert_u64_equal(st.opened, 1);
}

static void test_open_releases_waiters_once(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 4; i++)
        assert_int_equal(band_latch_wait_async(f->l, &f->rec[i].w), BAND_PENDING);
    assert_int_equal(band_latch_count_down(f->l, 1), 0);
    assert_int_equal(band_latch_count_down(f->l, 1), 0);
    assert_int_equal(atomic_load(&f->log.len), 0);
    assert_int_equal(band_latch_count_down(f->l, 1), 0);
    assert_int_equal(atomic_load(&f->log.len), 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(f->log.ids[i], i);
        assert_int_equal(f->log.statuses[i], 0);
        assert_int_equal(count_of(&f->rec[i]), 1);
        assert_true(pthread_equal(f->rec[i].thread, pthread_self()));
    }
    /* Stays open: later waits complete at once, without a wake. */
    assert_int_equal(band_latch_wait_async(f->l, &f->rec[5].w), 0);
    assert_int_equal(count_of(&f->rec[5]), 0);
    assert_int_equal(band_latch_wait(f->l, 0, NULL), 0);
    assert_int_equal(band_latch_try_wait(f->l), 0);
    band_latch_stats st = stats_of(f->l);
    assert_u64_equal(st.queued, 4);
    assert_u64_equal(st.released, 4);
}

static void test_cancel_both_outcomes(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_latch_wait_async(f->l, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_latch_wait_async(f->l, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_status(&f->rec[0].w), BAND_ECANCELED);
    assert_int_equal(band_latch_count_down(f->l, 3), 0);
    assert_int_equal(count_of(&f->rec[0]), 0);
    assert_int_equal(count_of(&f->rec[1]), 1);
    assert_int_equal(band_waiter_cancel(&f->rec[1].w, BAND_ECANCELED), BAND_EALREADY);
    band_latch_stats st = stats_of(f->l);
    assert_u64_equal(st.cancels, 1);
    assert_u64_equal(st.released, 1);
}

static void test_destroy_busy(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_latch_wait_async(f->l, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_latch_destroy(f->l), BAND_EBUSY);
    assert_int_equal(band_latch_count_down(f->l, 3), 0); /* still alive */
    assert_int_equal(count_of(&f->rec[0]), 1);
}

static void test_deadlines(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_latch_wait(f->l, 0, NULL), BAND_ETIMEDOUT);
    assert_u64_equal(stats_of(f->l).queued, 0);
    band_time t0 = band_now();
    assert_int_equal(band_latch_wait(f->l, t0 + 10 * BAND_MSEC, NULL), BAND_ETIMEDOUT);
    assert_true(band_now() - t0 >= 10 * BAND_MSEC);
    band_latch_stats st = stats_of(f->l);
    assert_u64_equal(st.queued, 1);
    assert_u64_equal(st.timeouts, 1);
    assert_u64_equal(st.waiters, 0);
    /* arrive_and_wait counts down even when its wait times out. */
    assert_int_equal(band_latch_arrive_and_wait(f->l, 1, 0, NULL), BAND_ETIMEDOUT);
    assert_u64_equal(band_latch_count(f->l), 2);
    /* A refused count-down does not wait at all. */
    assert_int_equal(band_latch_arrive_and_wait(f->l, 5, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_u64_equal(band_latch_count(f->l), 2);
    assert_int_equal(band_latch_arrive_and_wait(f->l, 2, 0, NULL), 0); /* opens: satisfied */
}

struct arrive_arg {
    band_latch *l;
    atomic_int *before;
    int seen; /* arrivals seen after the wait: must be all of them */
};

static int arriver(void *arg)
{
    struct arrive_arg *a = arg;
    atomic_fetch_add(a->before, 1);
    int rc = band_latch_arrive_and_wait(a->l, 1, band_deadline_after(60 * BAND_SEC), NULL);
    a->seen = atomic_load(a->before);
    return rc;
}

/* std::latch's rendezvous: nobody passes before everybody arrived. */
static void test_arrive_and_wait_threads(void **state)
{
    (void)state;
    enum { N = 4 };
    band_latch *l;
    atomic_int before;
    atomic_init(&before, 0);
    assert_int_equal(band_latch_create(&l, N), 0);
    struct arrive_arg args[N];
    struct test_thread th[N];
    for (int i = 0; i < N; i++) {
        args[i].l = l;
        args[i].before = &before;
        args[i].seen = -1;
        assert_int_equal(test_thread_start(&th[i], arriver, &args[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(test_thread_join(&th[i]), 0);
        assert_int_equal(args[i].seen, N);
    }
    assert_int_equal(band_latch_try_wait(l), 0);
    assert_int_equal(band_latch_destroy(l), 0);
}

static void hook_count_down_and_wait(struct wake_rec *r)
{
    struct fixture *f = r->ctx;
    r->hook_rc = band_latch_count_down(f->l, 1);                                /* open: EINVAL */
    r->hook_u64 = (uint64_t)(int64_t)band_latch_wait_async(f->l, &f->rec[7].w); /* 0 */
}

static void test_wake_calls_back(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_count_down_and_wait;
    f->rec[0].ctx = f;
    assert_int_equal(band_latch_wait_async(f->l, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_latch_count_down(f->l, 3), 0);
    assert_int_equal(count_of(&f->rec[0]), 1);
    assert_int_equal(f->rec[0].hook_rc, BAND_EINVAL);
    assert_int_equal((int)(int64_t)f->rec[0].hook_u64, 0);
    assert_int_equal(count_of(&f->rec[7]), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_args),
        T(test_null_args),
        cmocka_unit_test(test_zero_is_open),
        T(test_count_down_limits),
        T(test_open_releases_waiters_once),
        T(test_cancel_both_outcomes),
        T(test_destroy_busy),
        T(test_deadlines),
        cmocka_unit_test(test_arrive_and_wait_threads),
        T(test_wake_calls_back),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

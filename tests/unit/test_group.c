/* SPDX-License-Identifier: MIT */
/*
 * test_group.c - the wait group (group.h): argument checks, add/done and their limits,
 * try_wait, async and blocking waits, release on reaching 0 (FIFO, exactly once, on the done
 * thread), rounds, cancel (both outcomes), deadlines, wakes that call back into the group,
 * counters.
 */
#include "test.h"

#include <string.h>

#include "band/group.h"

struct fixture {
    band_group *g;
    struct wake_log log;
    struct wake_rec rec[8];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_group_create(&f->g) != 0) {
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
    int rc = band_group_destroy(f->g);
    free(f);
    return rc == 0 ? 0 : -1;
}

static band_group_stats stats_of(const band_group *g)
{
    band_group_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_group_get_stats(g, &st), 0);
    return st;
}

static int count_of(struct wake_rec *r)
{
    return atomic_load(&r->count);
}

/* ---------------------------------------------------------------------------------- */

static void test_create_destroy_args(void **state)
{
    (void)state;
    band_group *g = (band_group *)(uintptr_t)0x1234;
    assert_int_equal(band_group_create(NULL), BAND_EINVAL);
    assert_int_equal(band_group_create(&g), 0);
    assert_u64_equal(band_group_count(g), 0);
    band_group_stats st = stats_of(g);
    assert_u64_equal(st.count, 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.queued, 0);
    assert_u64_equal(st.released, 0);
    assert_u64_equal(st.timeouts, 0);
    assert_u64_equal(st.cancels, 0);
    assert_u64_equal(st.zeroes, 0);
    assert_u64_equal(st.misuse, 0);
    /* A count above 0 does not stop destruction. */
    assert_int_equal(band_group_add(g, 3), 0);
    assert_int_equal(band_group_destroy(g), 0);
    assert_int_equal(band_group_destroy(NULL), 0);
}

static void test_null_args(void **state)
{
    struct fixture *f = *state;
    band_group_stats st;
    assert_int_equal(band_group_add(NULL, 1), BAND_EINVAL);
    assert_int_equal(band_group_done(NULL), BAND_EINVAL);
    assert_int_equal(band_group_done_n(NULL, 1), BAND_EINVAL);
    assert_u64_equal(band_group_count(NULL), 0);
    assert_int_equal(band_group_try_wait(NULL), BAND_EINVAL);
    assert_int_equal(band_group_wait(NULL, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_group_wait_async(NULL, &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_group_wait_async(f->g, NULL), BAND_EINVAL);
    assert_int_equal(band_group_get_stats(NULL, &st), BAND_EINVAL);
    assert_int_equal(band_group_get_stats(f->g, NULL), BAND_EINVAL);
    band_waiter nowake;
    band_waiter_init(&nowake, NULL, NULL);
    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_wait_async(f->g, &nowake), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&nowake), 0);
    assert_u64_equal(stats_of(f->g).queued, 0);
    assert_int_equal(band_group_done(f->g), 0);
}

static void test_add_done_count(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_group_add(f->g, 0), 0);
    assert_u64_equal(band_group_count(f->g), 0);
    assert_int_equal(band_group_add(f->g, 5), 0);
    assert_int_equal(band_group_add(f->g, 2), 0);
    assert_u64_equal(band_group_count(f->g), 7);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(band_group_done_n(f->g, 0), 0);
    assert_int_equal(band_group_done_n(f->g, 4), 0);
    assert_u64_equal(band_group_count(f->g), 2);
    assert_int_equal(band_group_done_n(f->g, 2), 0);
    assert_u64_equal(band_group_count(f->g), 0);
    assert_u64_equal(stats_of(f->g).zeroes, 1);
}

/* try_wait answers at once, never queues, and follows every round. */
static void test_try_wait(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_group_try_wait(f->g), 0);
    assert_int_equal(band_group_add(f->g, 2), 0);
    assert_int_equal(band_group_try_wait(f->g), BAND_EAGAIN);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(band_group_try_wait(f->g), BAND_EAGAIN);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(band_group_try_wait(f->g), 0);
    /* A new round. */
    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_try_wait(f->g), BAND_EAGAIN);
    band_group_stats st = stats_of(f->g);
    assert_u64_equal(st.queued, 0); /* it never queued */
    assert_u64_equal(st.waiters, 0);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(band_group_try_wait(f->g), 0);
    assert_u64_equal(stats_of(f->g).zeroes, 2);
}

/* done below zero is refused and changes nothing: the count never wraps. */
static void test_done_below_zero_is_einval(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_group_done(f->g), BAND_EINVAL);
    assert_u64_equal(band_group_count(f->g), 0);
    assert_int_equal(band_group_done_n(f->g, 0), 0); /* 0 is always fine */
    assert_int_equal(band_group_add(f->g, 3), 0);
    assert_int_equal(band_group_done_n(f->g, 4), BAND_EINVAL);
    assert_int_equal(band_group_done_n(f->g, UINT64_MAX), BAND_EINVAL);
    assert_u64_equal(band_group_count(f->g), 3);
    /* A refused done releases nobody. */
    assert_int_equal(band_group_wait_async(f->g, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_group_done_n(f->g, 5), BAND_EINVAL);
    assert_int_equal(count_of(&f->rec[0]), 0);
    band_group_stats st = stats_of(f->g);
    assert_u64_equal(st.misuse, 4);
    assert_u64_equal(st.count, 3);
    assert_int_equal(band_group_done_n(f->g, 3), 0);
    assert_int_equal(count_of(&f->rec[0]), 1);
}

static void test_add_overflow(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_group_add(f->g, BAND_GROUP_MAX), 0);
    assert_int_equal(band_group_add(f->g, 1), BAND_EOVERFLOW);
    assert_int_equal(band_group_add(f->g, BAND_GROUP_MAX), BAND_EOVERFLOW);
    assert_u64_equal(band_group_count(f->g), BAND_GROUP_MAX);
    assert_int_equal(band_group_add(f->g, 0), 0);
    assert_int_equal(band_group_done_n(f->g, BAND_GROUP_MAX - 1), 0);
    assert_int_equal(band_group_add(f->g, BAND_GROUP_MAX - 1), 0);
    assert_int_equal(band_group_add(f->g, 1), BAND_EOVERFLOW);
    assert_int_equal(band_group_done_n(f->g, BAND_GROUP_MAX), 0);
    assert_u64_equal(band_group_count(f->g), 0);
}

static void test_wait_async_at_zero_completes_now(void **state)
{
    struct fixture *f = *state;
    f->rec[0].w._u.status = 99; /* overwritten by the immediate completion */
    assert_int_equal(band_group_wait_async(f->g, &f->rec[0].w), 0);
    assert_int_equal(band_waiter_status(&f->rec[0].w), 0);
    assert_int_equal(band_waiter_is_pending(&f->rec[0].w), 0);
    assert_int_equal(count_of(&f->rec[0]), 0); /* no wake */
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), BAND_EINVAL);
    assert_u64_equal(stats_of(f->g).queued, 0);
}

/* Reaching 0 releases every waiter, in arrival order, once, on the done thread. */
static void test_release_all_fifo_exactly_once(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_group_add(f->g, 2), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(band_group_wait_async(f->g, &f->rec[i].w), BAND_PENDING);
    /* The same waiter cannot be submitted twice while pending; it is left alone. */
    assert_int_equal(band_group_wait_async(f->g, &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->rec[0].w), 1);
    assert_u64_equal(stats_of(f->g).waiters, 5);

    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(atomic_load(&f->log.len), 0);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(atomic_load(&f->log.len), 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(f->log.ids[i], i);
        assert_int_equal(f->log.statuses[i], 0);
        assert_int_equal(count_of(&f->rec[i]), 1);
        assert_int_equal(atomic_load(&f->rec[i].pending_in), 0);
        assert_true(pthread_equal(f->rec[i].thread, pthread_self()));
        assert_int_equal(band_waiter_cancel(&f->rec[i].w, BAND_ECANCELED), BAND_EALREADY);
    }
    /* Further dones and adds wake nobody again. */
    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_done(f->g), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(count_of(&f->rec[i]), 1);
    band_group_stats st = stats_of(f->g);
    assert_u64_equal(st.queued, 5);
    assert_u64_equal(st.released, 5);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.zeroes, 2);
}

/* A count that rises after 0 starts a new round; old waiters are not woken again. */
static void test_rounds(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(count_of(&f->rec[0]), 1);

    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[1].w), BAND_PENDING);
    /* The same waiter may be resubmitted once its wake ran. */
    assert_int_equal(band_group_wait_async(f->g, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(count_of(&f->rec[1]), 0);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(count_of(&f->rec[1]), 1);
    assert_int_equal(count_of(&f->rec[0]), 2);
    int ids[] = {0, 1, 0};
    assert_int_equal(atomic_load(&f->log.len), 3);
    for (unsigned i = 0; i < TEST_COUNTOF(ids); i++)
        assert_int_equal(f->log.ids[i], ids[i]);
}

static void test_cancel_both_outcomes(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[2].w), BAND_PENDING);

    assert_int_equal(band_waiter_cancel(&f->rec[1].w, 0), BAND_EINVAL); /* not a reason */
    assert_int_equal(band_waiter_cancel(&f->rec[1].w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_status(&f->rec[1].w), BAND_ECANCELED);
    assert_int_equal(band_waiter_cancel(&f->rec[1].w, BAND_ECANCELED), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&f->rec[2].w, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_waiter_status(&f->rec[2].w), BAND_ETIMEDOUT);
    band_group_stats st = stats_of(f->g);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.cancels, 1);
    assert_u64_equal(st.timeouts, 1);
    /* Cancel never affects the count. */
    assert_u64_equal(st.count, 1);

    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(count_of(&f->rec[0]), 1);
    assert_int_equal(count_of(&f->rec[1]), 0); /* cancelled: never woken */
    assert_int_equal(count_of(&f->rec[2]), 0);
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(band_waiter_status(&f->rec[0].w), 0);
    st = stats_of(f->g);
    assert_u64_equal(st.released, 1);
    assert_u64_equal(st.queued, 3);
}

static void test_destroy_busy(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_group_destroy(f->g), BAND_EBUSY);
    assert_u64_equal(stats_of(f->g).waiters, 1); /* nothing was freed */
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
    /* teardown destroys it (count 1 does not matter) */
}

static void test_wait_past_deadline(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_group_wait(f->g, 0, NULL), 0); /* count 0: satisfied, no waiting */
    assert_int_equal(band_group_wait(f->g, band_now() - BAND_SEC, NULL), 0);
    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_wait(f->g, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_group_wait(f->g, band_now(), NULL), BAND_ETIMEDOUT);
    band_group_stats st = stats_of(f->g);
    assert_u64_equal(st.queued, 0); /* never queued: counts nowhere */
    assert_u64_equal(st.timeouts, 0);
    assert_int_equal(band_group_done(f->g), 0);
}

static void test_wait_times_out(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_group_add(f->g, 1), 0);
    band_time t0 = band_now();
    assert_int_equal(band_group_wait(f->g, t0 + 20 * BAND_MSEC, NULL), BAND_ETIMEDOUT);
    assert_true(band_now() - t0 >= 20 * BAND_MSEC);
    band_group_stats st = stats_of(f->g);
    assert_u64_equal(st.queued, 1);
    assert_u64_equal(st.timeouts, 1);
    assert_u64_equal(st.waiters, 0);
    assert_int_equal(band_group_done(f->g), 0);
}

struct waiter_arg {
    band_group *g;
    band_time deadline;
};

static int blocking_waiter(void *arg)
{
    struct waiter_arg *a = arg;
    return band_group_wait(a->g, a->deadline, NULL);
}

static bool cond_waiters(void *arg)
{
    band_group_stats st;
    return band_group_get_stats(arg, &st) == 0 && st.waiters >= 2;
}

static void test_blocking_wait_released_by_done(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_group_add(f->g, 2), 0);
    struct waiter_arg a = {f->g, BAND_FOREVER};
    struct waiter_arg b = {f->g, band_deadline_after(60 * BAND_SEC)};
    struct test_thread ta, tb;
    assert_int_equal(test_thread_start(&ta, blocking_waiter, &a), 0);
    assert_int_equal(test_thread_start(&tb, blocking_waiter, &b), 0);
    assert_true(test_wait_until(cond_waiters, f->g, 10 * BAND_SEC));
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(test_thread_join(&ta), 0);
    assert_int_equal(test_thread_join(&tb), 0);
    band_group_stats st = stats_of(f->g);
    assert_u64_equal(st.released, 2);
    assert_u64_equal(st.timeouts, 0);
}

/* --- wakes that call back into the group (no deadlock: wakes run after unlocking) --- */

static void hook_add_and_wait_again(struct wake_rec *r)
{
    struct fixture *f = r->ctx;
    r->hook_rc = band_group_add(f->g, 1);
    /* A new round: the resubmitted sibling waits for it. */
    int rc = band_group_wait_async(f->g, &f->rec[7].w);
    r->hook_u64 = (uint64_t)(int64_t)rc;
}

static void test_wake_adds_and_waits(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_add_and_wait_again;
    f->rec[0].ctx = f;
    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(count_of(&f->rec[0]), 1);
    assert_int_equal(f->rec[0].hook_rc, 0);
    assert_int_equal((int)(int64_t)f->rec[0].hook_u64, BAND_PENDING);
    assert_u64_equal(band_group_count(f->g), 1);
    assert_int_equal(count_of(&f->rec[7]), 0);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(count_of(&f->rec[7]), 1);
}

static void hook_done(struct wake_rec *r)
{
    struct fixture *f = r->ctx;
    r->hook_rc = band_group_done(f->g);
}

/* Waiters of round 1 run dones of round 2 from their wakes: each done is its own call. */
static void test_wake_calls_done(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 2; i++) {
        f->rec[i].hook = hook_done;
        f->rec[i].ctx = f;
    }
    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_group_done(f->g), 0);
    /* Both wakes tried a done on a count of 0: refused, not wrapped. */
    assert_int_equal(f->rec[0].hook_rc, BAND_EINVAL);
    assert_int_equal(f->rec[1].hook_rc, BAND_EINVAL);
    assert_u64_equal(band_group_count(f->g), 0);
    assert_u64_equal(stats_of(f->g).misuse, 2);
}

static void hook_cancel_sibling(struct wake_rec *r)
{
    struct fixture *f = r->ctx;
    r->hook_rc = band_waiter_cancel(&f->rec[1].w, BAND_ECANCELED);
}

/* Every waiter a done completes is decided before any wake runs. */
static void test_wake_cancels_completed_sibling(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_cancel_sibling;
    f->rec[0].ctx = f;
    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(f->rec[0].hook_rc, BAND_EALREADY);
    assert_int_equal(count_of(&f->rec[1]), 1);
    assert_int_equal(atomic_load(&f->rec[1].status), 0);
}

static void hook_stats(struct wake_rec *r)
{
    struct fixture *f = r->ctx;
    band_group_stats st;
    r->hook_rc = band_group_get_stats(f->g, &st);
    r->hook_u64 = st.waiters;
}

static void test_wake_reads_stats(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_stats;
    f->rec[0].ctx = f;
    assert_int_equal(band_group_add(f->g, 1), 0);
    assert_int_equal(band_group_wait_async(f->g, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_group_done(f->g), 0);
    assert_int_equal(f->rec[0].hook_rc, 0);
    assert_u64_equal(f->rec[0].hook_u64, 0);
}

/* --- memory written by tasks before done is visible after the wait --- */

struct task_arg {
    band_group *g;
    int *slot;
};

static int task(void *arg)
{
    struct task_arg *a = arg;
    *a->slot = 42; /* plain write: the group's done/wait must order it (TSan checks) */
    return band_group_done(a->g);
}

static void test_done_publishes_writes(void **state)
{
    struct fixture *f = *state;
    enum { N = 4 };
    int slots[N] = {0};
    struct task_arg args[N];
    struct test_thread th[N];
    assert_int_equal(band_group_add(f->g, N), 0);
    for (int i = 0; i < N; i++) {
        args[i].g = f->g;
        args[i].slot = &slots[i];
        assert_int_equal(test_thread_start(&th[i], task, &args[i]), 0);
    }
    assert_int_equal(band_group_wait(f->g, BAND_FOREVER, NULL), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(slots[i], 42);
    for (int i = 0; i < N; i++)
        assert_int_equal(test_thread_join(&th[i]), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_destroy_args),
        T(test_null_args),
        T(test_add_done_count),
        T(test_try_wait),
        T(test_done_below_zero_is_einval),
        T(test_add_overflow),
        T(test_wait_async_at_zero_completes_now),
        T(test_release_all_fifo_exactly_once),
        T(test_rounds),
        T(test_cancel_both_outcomes),
        T(test_destroy_busy),
        T(test_wait_past_deadline),
        T(test_wait_times_out),
        T(test_blocking_wait_released_by_done),
        T(test_wake_adds_and_waits),
        T(test_wake_calls_done),
        T(test_wake_cancels_completed_sibling),
        T(test_wake_reads_stats),
        T(test_done_publishes_writes),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

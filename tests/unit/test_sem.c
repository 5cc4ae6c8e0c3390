/* SPDX-License-Identifier: MIT */
/*
 * test_sem.c - the weighted FIFO semaphore (sem.h): argument checks, strict FIFO with
 * partial grants, head-of-line blocking, cancel of a partially granted head, debt, drain,
 * overflow, close, blocking acquire, wakes that call back into the semaphore, counters.
 *
 * Every test gets a fresh semaphore (setup) and checks band__sem_check() as it goes.
 */
#include "test.h"

#include <malloc.h>
#include <string.h>

#include "core/block.h"
#include "prim/sem_internal.h"

#define MAXP BAND_MAX_UNITS

struct fixture {
    band_sem *sem;
    struct wake_log log;
    struct wake_rec rec[8];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_sem_create(&f->sem, 0, NULL) != 0) {
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
    band_sem_close(f->sem);
    int rc = band_sem_destroy(f->sem);
    free(f);
    return rc == 0 ? 0 : -1;
}

static band_sem_stats stats_of(const band_sem *s)
{
    band_sem_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    return st;
}

#define CHECK(s) assert_int_equal(band__sem_check(s), 0)

/* The wake log holds exactly @n entries with the ids in @ids. */
static void assert_log(struct wake_log *log, const int *ids, unsigned n)
{
    assert_int_equal(atomic_load(&log->len), n);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(log->ids[i], ids[i]);
}

/* ---------------------------------------------------------------------------------- */
/* create, destroy, names                                                              */

static void test_create_args(void **state)
{
    (void)state;
    band_sem *s = (band_sem *)(uintptr_t)0x1234;
    assert_int_equal(band_sem_create(NULL, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_sem_create(&s, MAXP + 1, NULL), BAND_EINVAL);
    assert_ptr_equal(s, (band_sem *)(uintptr_t)0x1234); /* unchanged on failure */
    assert_int_equal(band_sem_create(&s, UINT64_MAX, NULL), BAND_EINVAL);
    band_sem_opts bad = {.deadline_aware = 3};
    assert_int_equal(band_sem_create(&s, 1, &bad), BAND_EINVAL);
    assert_ptr_equal(s, (band_sem *)(uintptr_t)0x1234);

    assert_int_equal(band_sem_create(&s, MAXP, NULL), 0);
    assert_u64_equal(band_sem_available(s), MAXP);
    CHECK(s);
    assert_int_equal(band_sem_destroy(s), 0);

    /* A zero-initialised band_sem_opts is the defaults, as NULL is. */
    band_sem_opts zero = {0};
    assert_int_equal(band_sem_create(&s, 0, &zero), 0);
    assert_u64_equal(band_sem_available(s), 0);
    assert_int_equal(band_sem_is_closed(s), 0);
    assert_int_equal(band_sem_destroy(s), 0);
    assert_int_equal(band_sem_destroy(NULL), 0);
}

static void test_fresh_stats(void **state)
{
    (void)state;
    band_sem *s;
    assert_int_equal(band_sem_create(&s, 7, NULL), 0);
    band_sem_stats st = stats_of(s);
    assert_string_equal(st.name, "");
    assert_int_equal(st.closed, 0);
    assert_int_equal(st.is_budget, 0);
    assert_u64_equal(st.capacity, 7);
    assert_u64_equal(st.in_use, 0);
    assert_u64_equal(st.available, 7);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.waiting_units, 0);
    assert_u64_equal(st.head_granted, 0);
    assert_u64_equal(st.queued, 0);
    assert_u64_equal(st.grants, 0);
    assert_u64_equal(st.timeouts, 0);
    assert_u64_equal(st.cancels, 0);
    assert_u64_equal(st.closed_fails, 0);
    assert_u64_equal(st.try_refusals, 0);
    assert_u64_equal(st.too_big, 0);
    assert_u64_equal(st.wait_ns_total, 0);
    assert_u64_equal(st.wait_ns_max, 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

static void test_destroy_busy(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_destroy(f->sem), BAND_EBUSY);
    /* Nothing was freed: the semaphore still works. */
    assert_int_equal(stats_of(f->sem).waiters, 1);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    /* Queued again, then closed: destroy succeeds (done by teardown). */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_destroy(f->sem), BAND_EBUSY);
    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    CHECK(f->sem);
}

static void test_set_name(void **state)
{
    struct fixture *f = *state;
    char name[BAND_NAME_MAX + 1];

    assert_int_equal(band_sem_set_name(f->sem, "downloads"), 0);
    assert_string_equal(stats_of(f->sem).name, "downloads");

    memset(name, 'a', BAND_NAME_MAX - 1);
    name[BAND_NAME_MAX - 1] = '\0'; /* 47 characters: fits */
    assert_int_equal(band_sem_set_name(f->sem, name), 0);
    assert_string_equal(stats_of(f->sem).name, name);

    memset(name, 'b', BAND_NAME_MAX);
    name[BAND_NAME_MAX] = '\0'; /* 48 characters: does not fit, nothing changes */
    assert_int_equal(band_sem_set_name(f->sem, name), BAND_EINVAL);
    name[BAND_NAME_MAX - 1] = '\0';
    memset(name, 'a', BAND_NAME_MAX - 1);
    assert_string_equal(stats_of(f->sem).name, name);

    assert_int_equal(band_sem_set_name(f->sem, ""), 0);
    assert_string_equal(stats_of(f->sem).name, "");
    assert_int_equal(band_sem_set_name(f->sem, "x"), 0);
    assert_int_equal(band_sem_set_name(f->sem, NULL), 0);
    assert_string_equal(stats_of(f->sem).name, "");
    assert_int_equal(band_sem_set_name(NULL, "x"), BAND_EINVAL);
}

/* ---------------------------------------------------------------------------------- */
/* argument checks                                                                     */

static void test_null_sem(void **state)
{
    (void)state;
    band_waiter w;
    band_waiter_init(&w, wake_rec_fn, NULL);
    band_sem_stats st;
    assert_int_equal(band_sem_try_acquire(NULL, 1), BAND_EINVAL);
    assert_int_equal(band_sem_acquire(NULL, 1, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_sem_acquire_async(NULL, 1, &w), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&w), 0);
    assert_int_equal(band_sem_release(NULL, 1), BAND_EINVAL);
    assert_int_equal(band_sem_reduce(NULL, 1), BAND_EINVAL);
    assert_u64_equal(band_sem_drain(NULL, 1), 0);
    assert_u64_equal(band_sem_available(NULL), 0);
    assert_int_equal(band_sem_close(NULL), BAND_EINVAL);
    assert_int_equal(band_sem_is_closed(NULL), 0);
    assert_int_equal(band_sem_get_stats(NULL, &st), BAND_EINVAL);
}

static void test_get_stats_null_out(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_get_stats(f->sem, NULL), BAND_EINVAL);
}

static void test_too_many_permits_is_einval(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 5), 0);
    assert_int_equal(band_sem_try_acquire(f->sem, MAXP + 1), BAND_EINVAL);
    assert_int_equal(band_sem_try_acquire(f->sem, UINT64_MAX), BAND_EINVAL);
    assert_int_equal(band_sem_acquire(f->sem, MAXP + 1, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_sem_acquire_async(f->sem, MAXP + 1, &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->rec[0].w), 0);
    /* EINVAL comes before ECLOSED. */
    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(band_sem_try_acquire(f->sem, MAXP + 1), BAND_EINVAL);
    assert_int_equal(band_sem_acquire(f->sem, MAXP + 1, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_sem_acquire_async(f->sem, MAXP + 1, &f->rec[0].w), BAND_EINVAL);
    band_waiter nowake;
    band_waiter_init(&nowake, NULL, NULL);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &nowake), BAND_EINVAL);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, NULL), BAND_EINVAL);

    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.available, 5);
    assert_u64_equal(st.too_big, 0); /* a plain semaphore never answers E2BIG */
    assert_u64_equal(st.try_refusals, 0);
    assert_u64_equal(st.queued, 0);
    CHECK(f->sem);
}

static void test_max_request_is_valid(void **state)
{
    struct fixture *f = *state;
    /* MAXP itself is a valid request: it queues and is granted by a release of MAXP. */
    assert_int_equal(band_sem_try_acquire(f->sem, MAXP), BAND_EAGAIN);
    assert_int_equal(band_sem_acquire_async(f->sem, MAXP, &f->rec[0].w), BAND_PENDING);
    assert_u64_equal(stats_of(f->sem).waiting_units, MAXP);
    assert_int_equal(band_sem_release(f->sem, MAXP), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(band_waiter_status(&f->rec[0].w), 0);
    assert_u64_equal(band_sem_available(f->sem), 0);
    assert_int_equal(band_sem_release(f->sem, MAXP), 0);
    assert_int_equal(band_sem_try_acquire(f->sem, MAXP), 0);
    CHECK(f->sem);
}

/* The units asked for by all queued waiters may not pass 2^64 - 1: EOVERFLOW, no queueing. */
static void test_queue_units_overflow(void **state)
{
    struct fixture *f = *state;
    static struct wake_rec recs[16];
    uint64_t total = 0;
    int queued = 0;
    for (int i = 0; i < 16; i++) {
        wake_rec_init(&recs[i], i, NULL);
        int rc = band_sem_acquire_async(f->sem, MAXP, &recs[i].w);
        if (total <= UINT64_MAX - MAXP) {
            assert_int_equal(rc, BAND_PENDING);
            total += MAXP;
            queued++;
        } else {
            assert_int_equal(rc, BAND_EOVERFLOW);
            assert_int_equal(band_waiter_is_pending(&recs[i].w), 0);
            assert_int_equal(band_waiter_status(&recs[i].w), BAND_EOVERFLOW);
        }
    }
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.waiters, (uint64_t)queued);
    assert_u64_equal(st.waiting_units, total);
    assert_u64_equal(st.queued, (uint64_t)queued);
    /* Small requests still fit until the total reaches 2^64 - 1 exactly. */
    assert_u64_equal(total, 8 * MAXP);
    assert_int_equal(band_sem_acquire_async(f->sem, UINT64_MAX - total, &recs[15].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &recs[14].w), BAND_EOVERFLOW);
    assert_u64_equal(stats_of(f->sem).waiting_units, UINT64_MAX);
    CHECK(f->sem);
    assert_int_equal(band_sem_close(f->sem), 0);
    for (int i = 0; i < 16; i++) {
        int closed = band_waiter_status(&recs[i].w) == BAND_ECLOSED;
        assert_int_equal(atomic_load(&recs[i].count), closed);
    }
    assert_u64_equal(stats_of(f->sem).closed_fails, 9);
}

/* ---------------------------------------------------------------------------------- */
/* try_acquire                                                                         */

static void test_try_acquire(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 5), 0);
    assert_int_equal(band_sem_try_acquire(f->sem, 3), 0);
    assert_u64_equal(band_sem_available(f->sem), 2);
    assert_int_equal(band_sem_try_acquire(f->sem, 3), BAND_EAGAIN);
    assert_u64_equal(band_sem_available(f->sem), 2); /* a refusal takes nothing */
    assert_int_equal(band_sem_try_acquire(f->sem, 2), 0);
    assert_int_equal(band_sem_try_acquire(f->sem, 1), BAND_EAGAIN);
    assert_int_equal(band_sem_try_acquire(f->sem, 0), 0);
    assert_u64_equal(band_sem_available(f->sem), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.try_refusals, 2);
    assert_u64_equal(st.queued, 0);
    assert_u64_equal(st.grants, 0); /* fast-path grants are not counted */
    CHECK(f->sem);
}

static void test_zero_succeeds_with_waiters(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_acquire_async(f->sem, 3, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_try_acquire(f->sem, 0), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 0, &f->rec[1].w), 0);
    assert_int_equal(band_waiter_is_pending(&f->rec[1].w), 0);
    assert_int_equal(band_sem_acquire(f->sem, 0, 0, NULL), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.queued, 1);
    assert_u64_equal(st.try_refusals, 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
}

static void test_try_never_barges(void **state)
{
    struct fixture *f = *state;
    /* 2 available, a waiter wants 3: it takes the 2 as a partial grant; try(1) refused. */
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 3, &f->rec[0].w), BAND_PENDING);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.head_granted, 2);
    assert_int_equal(band_sem_try_acquire(f->sem, 1), BAND_EAGAIN);
    assert_int_equal(band_sem_acquire(f->sem, 1, 0, NULL), BAND_ETIMEDOUT);
    /* An async acquisition queues behind it rather than barging. */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    const int order1[] = {0};
    assert_log(&f->log, order1, 1);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    const int order2[] = {0, 1};
    assert_log(&f->log, order2, 2);
    assert_u64_equal(stats_of(f->sem).try_refusals, 1);
    CHECK(f->sem);
}

/* ---------------------------------------------------------------------------------- */
/* FIFO, partial grants, head-of-line blocking                                         */

static void test_fifo_wake_order(void **state)
{
    struct fixture *f = *state;
    const uint64_t want[] = {1, 2, 1, 3, 1};
    for (int i = 0; i < 5; i++)
        assert_int_equal(band_sem_acquire_async(f->sem, want[i], &f->rec[i].w), BAND_PENDING);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.waiters, 5);
    assert_u64_equal(st.waiting_units, 8);
    assert_u64_equal(st.queued, 5);

    /* One release completes the first four in order, the fifth gets nothing yet. */
    assert_int_equal(band_sem_release(f->sem, 7), 0);
    const int order[] = {0, 1, 2, 3};
    assert_log(&f->log, order, 4);
    st = stats_of(f->sem);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.waiting_units, 1);
    assert_u64_equal(st.grants, 4);
    assert_u64_equal(st.head_granted, 0);
    assert_u64_equal(st.available, 0);
    CHECK(f->sem);

    assert_int_equal(band_sem_release(f->sem, 3), 0); /* 1 to the last, 2 left over */
    const int order2[] = {0, 1, 2, 3, 4};
    assert_log(&f->log, order2, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(atomic_load(&f->rec[i].count), 1);
        assert_int_equal(f->log.statuses[i], 0);
    }
    assert_u64_equal(band_sem_available(f->sem), 2);
    CHECK(f->sem);
}

static void test_partial_grants_accumulate(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 4, &f->rec[0].w), BAND_PENDING);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.head_granted, 1); /* took what was available on arrival */
    assert_u64_equal(st.available, 0);
    CHECK(f->sem);
    for (uint64_t i = 2; i <= 3; i++) {
        assert_int_equal(band_sem_release(f->sem, 1), 0);
        st = stats_of(f->sem);
        assert_u64_equal(st.head_granted, i);
        assert_u64_equal(st.available, 0);
        assert_int_equal(atomic_load(&f->rec[0].count), 0);
        CHECK(f->sem);
    }
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    st = stats_of(f->sem);
    assert_u64_equal(st.head_granted, 0);
    assert_u64_equal(st.available, 1);
    assert_u64_equal(st.waiters, 0);
    CHECK(f->sem);
}

/* Three left, the head wants five, the next wants one: the next waits too. */
static void test_head_of_line_blocking(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 5, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.head_granted, 3);
    assert_u64_equal(st.waiters, 2);
    assert_u64_equal(st.waiting_units, 6);
    /* Nothing is released: the one-unit waiter still waits, and a try cannot take one. */
    assert_int_equal(band_sem_try_acquire(f->sem, 1), BAND_EAGAIN);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    assert_int_equal(band_waiter_is_pending(&f->rec[1].w), 1);
    CHECK(f->sem);

    /* One more: still short of five, the small waiter still waits. */
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    assert_u64_equal(stats_of(f->sem).head_granted, 4);

    /* The fifth completes the head; only the next release reaches the small waiter. */
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    const int order[] = {0, 1};
    assert_log(&f->log, order, 2);
    CHECK(f->sem);
}

/* A released permit goes past available straight to the head, and the rest beyond. */
static void test_release_spills_over(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_acquire_async(f->sem, 2, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 3, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 4), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.head_granted, 2); /* the new head keeps the remaining 2 */
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.waiting_units, 3);
    CHECK(f->sem);
}

/* ---------------------------------------------------------------------------------- */
/* cancel                                                                              */

/* The head had 3 of 5; cancelling it hands them to the next waiters, then to available. */
static void test_cancel_partial_head_passes_permits_on(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 5, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[2].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 4, &f->rec[3].w), BAND_PENDING);
    assert_u64_equal(stats_of(f->sem).head_granted, 3);

    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
    /* The wakes of the waiters its permits completed ran on this thread, in order. */
    const int order[] = {1, 2};
    assert_log(&f->log, order, 2);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    assert_int_equal(band_waiter_status(&f->rec[0].w), BAND_ECANCELED);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.head_granted, 1); /* the last one went on to the 4-unit head */
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.cancels, 1);
    assert_u64_equal(st.grants, 2);
    CHECK(f->sem);

    /* Cancelling the last one returns its single permit to available. */
    assert_int_equal(band_waiter_cancel(&f->rec[3].w, BAND_ETIMEDOUT), 0);
    st = stats_of(f->sem);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.head_granted, 0);
    assert_u64_equal(st.available, 1);
    assert_u64_equal(st.timeouts, 1);
    assert_u64_equal(st.cancels, 1);
    assert_int_equal(atomic_load(&f->rec[3].count), 0);
    CHECK(f->sem);
}

/* A partially granted head's permits repay the debt before anyone else. */
static void test_cancel_partial_head_repays_debt_first(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 5, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_reduce(f->sem, 2), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.debt, 2);
    assert_u64_equal(st.head_granted, 3); /* held back, not revoked */
    CHECK(f->sem);

    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
    st = stats_of(f->sem);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.waiters, 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 1); /* 3 = 2 debt + 1 for the next */
    CHECK(f->sem);
}

static void test_cancel_partial_head_debt_absorbs_all(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 5, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_reduce(f->sem, 7), 0);
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.debt, 4);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.head_granted, 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    CHECK(f->sem);
    assert_int_equal(band_sem_release(f->sem, 5), 0); /* 4 repay the debt, 1 to the waiter */
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    assert_u64_equal(band_sem_available(f->sem), 0);
    CHECK(f->sem);
}

static void test_cancel_middle_waiter(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 2, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 5, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[2].w), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->rec[1].w, BAND_ECANCELED), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.waiters, 2);
    assert_u64_equal(st.waiting_units, 3);
    assert_u64_equal(st.head_granted, 1); /* the head is untouched */
    assert_u64_equal(st.available, 0);
    assert_int_equal(atomic_load(&f->log.len), 0);
    CHECK(f->sem);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    const int order[] = {0, 2};
    assert_log(&f->log, order, 2);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    CHECK(f->sem);
}

/* Cancelling a head that has nothing lets the next one become the head (and take what
 * becomes available only from later releases). */
static void test_cancel_empty_head(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_acquire_async(f->sem, 2, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    CHECK(f->sem);
}

/* ---------------------------------------------------------------------------------- */
/* wakes that call back into the same semaphore                                        */

static void hook_release(struct wake_rec *r)
{
    r->hook_rc = band_sem_release((band_sem *)r->ctx, r->hook_u64);
}

static void hook_try(struct wake_rec *r)
{
    r->hook_rc = band_sem_try_acquire((band_sem *)r->ctx, r->hook_u64);
    r->hook_u64 = band_sem_available((band_sem *)r->ctx);
}

static struct wake_rec *hook_async_target;
static void hook_async(struct wake_rec *r)
{
    r->hook_rc = band_sem_acquire_async((band_sem *)r->ctx, r->hook_u64, &hook_async_target->w);
}

static void hook_stats(struct wake_rec *r)
{
    band_sem_stats st;
    r->hook_rc = band_sem_get_stats((band_sem *)r->ctx, &st);
    if (r->hook_rc == 0)
        r->hook_rc = band__sem_check((band_sem *)r->ctx);
    r->hook_u64 = st.waiters;
}

static void hook_cancel_next(struct wake_rec *r)
{
    struct wake_rec *next = r + 1;
    r->hook_rc = band_waiter_cancel(&next->w, BAND_ECANCELED);
}

/* The wake returns its grant: the next waiter is completed from inside that wake. */
static void test_wake_releases_into_same_sem(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_release;
    f->rec[0].ctx = f->sem;
    f->rec[0].hook_u64 = 2;
    assert_int_equal(band_sem_acquire_async(f->sem, 2, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 2, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(f->rec[0].hook_rc, 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    const int order[] = {0, 1};
    assert_log(&f->log, order, 2);
    assert_u64_equal(band_sem_available(f->sem), 0);
    assert_u64_equal(stats_of(f->sem).waiters, 0);
    CHECK(f->sem);
}

/* All completions are decided under the lock before any wake runs. */
static void test_wake_try_acquires_same_sem(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_try;
    f->rec[0].ctx = f->sem;
    f->rec[0].hook_u64 = 1;
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_int_equal(f->rec[0].hook_rc, 0);  /* both waiters served; 1 was left to take */
    assert_u64_equal(f->rec[0].hook_u64, 0); /* available seen after taking it */
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    assert_u64_equal(band_sem_available(f->sem), 0);
    CHECK(f->sem);
}

static void test_wake_acquires_async_same_sem(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_async;
    f->rec[0].ctx = f->sem;
    f->rec[0].hook_u64 = 1;
    hook_async_target = &f->rec[2];
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 2, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    /* rec[1] is the head with 1 of 2, so the new acquisition queues behind it. */
    assert_int_equal(f->rec[0].hook_rc, BAND_PENDING);
    assert_int_equal(atomic_load(&f->rec[2].count), 0); /* submitting never wakes */
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.waiters, 2);
    assert_u64_equal(st.head_granted, 1);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    const int order[] = {0, 1, 2};
    assert_log(&f->log, order, 3);
    CHECK(f->sem);
}

static void test_wake_reads_stats_same_sem(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 3; i++) {
        f->rec[i].hook = hook_stats;
        f->rec[i].ctx = f->sem;
        assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[i].w), BAND_PENDING);
    }
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[3].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(f->rec[i].hook_rc, 0);
        assert_u64_equal(f->rec[i].hook_u64, 1); /* the 4th is still queued */
    }
    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(atomic_load(&f->rec[3].count), 1);
    assert_int_equal(band_waiter_status(&f->rec[3].w), BAND_ECLOSED);
}

/* A wake that cancels a waiter which the same release already completed: EALREADY. */
static void test_wake_cancels_completed_sibling(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_cancel_next;
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(f->rec[0].hook_rc, BAND_EALREADY);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    assert_int_equal(band_waiter_status(&f->rec[1].w), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.grants, 2);
    assert_u64_equal(st.cancels, 0);
    CHECK(f->sem);
}

/* A wake that cancels a sibling that is still queued: 0, and no wake for it. */
static void test_wake_cancels_queued_sibling(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_cancel_next;
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 2, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[2].w), BAND_PENDING);
    /* 2 units: rec0 completes, rec1 holds 1 of 2; rec0's wake cancels rec1, whose unit
     * completes rec2 from inside that cancel. */
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(f->rec[0].hook_rc, 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    assert_int_equal(atomic_load(&f->rec[2].count), 1);
    const int order[] = {0, 2};
    assert_log(&f->log, order, 2);
    assert_u64_equal(band_sem_available(f->sem), 0);
    assert_u64_equal(stats_of(f->sem).waiters, 0);
    CHECK(f->sem);
}

/* Exactly once: many waiters, several kinds of ending, each counted once. */
static void test_wake_exactly_once(void **state)
{
    struct fixture *f = *state;
    enum { N = 64 };
    static struct wake_rec recs[N];
    for (int i = 0; i < N; i++) {
        wake_rec_init(&recs[i], i, NULL);
        assert_int_equal(band_sem_acquire_async(f->sem, (uint64_t)(i % 3) + 1, &recs[i].w),
                         BAND_PENDING);
    }
    int cancelled = 0;
    for (int i = 0; i < N; i += 5) {
        assert_int_equal(band_waiter_cancel(&recs[i].w, BAND_ECANCELED), 0);
        cancelled++;
    }
    /* Release one at a time, and try cancelling everything after each release. */
    int ealready = 0;
    for (int k = 0; k < 40; k++) {
        assert_int_equal(band_sem_release(f->sem, 1), 0);
        for (int i = 1; i < N; i += 7) {
            int rc = band_waiter_cancel(&recs[i].w, BAND_ETIMEDOUT);
            if (rc == BAND_EALREADY)
                ealready++;
            else if (rc == 0)
                cancelled++;
            else
                assert_int_equal(rc, BAND_EINVAL); /* cancelled by an earlier pass */
        }
        CHECK(f->sem);
    }
    assert_int_equal(band_sem_close(f->sem), 0);
    int woken = 0, closed = 0;
    for (int i = 0; i < N; i++) {
        int c = atomic_load(&recs[i].count);
        int st = band_waiter_status(&recs[i].w);
        assert_true(c == 0 || c == 1);
        if (c == 1) {
            woken++;
            assert_true(st == 0 || st == BAND_ECLOSED);
            closed += st == BAND_ECLOSED;
        } else {
            assert_true(st == BAND_ECANCELED || st == BAND_ETIMEDOUT);
        }
        assert_int_equal(band_waiter_is_pending(&recs[i].w), 0);
    }
    assert_int_equal(woken + cancelled, N);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.queued, N);
    assert_u64_equal(st.grants + st.cancels + st.timeouts + st.closed_fails, N);
    assert_u64_equal(st.closed_fails, (uint64_t)closed);
    assert_u64_equal(st.grants, (uint64_t)(woken - closed));
    (void)ealready;
}

/* ---------------------------------------------------------------------------------- */
/* release and overflow                                                                */

static void test_release_zero(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 0), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
    assert_u64_equal(band_sem_available(f->sem), 0);
}

static void test_release_overflow(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, MAXP), 0);
    assert_u64_equal(band_sem_available(f->sem), MAXP);
    assert_int_equal(band_sem_release(f->sem, 1), BAND_EOVERFLOW);
    assert_int_equal(band_sem_release(f->sem, UINT64_MAX), BAND_EOVERFLOW);
    assert_u64_equal(band_sem_available(f->sem), MAXP);
    assert_int_equal(band_sem_try_acquire(f->sem, 10), 0);
    assert_int_equal(band_sem_release(f->sem, 11), BAND_EOVERFLOW);
    assert_u64_equal(band_sem_available(f->sem), MAXP - 10);
    assert_int_equal(band_sem_release(f->sem, 10), 0);
    assert_u64_equal(band_sem_available(f->sem), MAXP);
    CHECK(f->sem);
}

/* Overflow counts what is left after the debt and the waiters took their share; nothing
 * changes when it fails. */
static void test_release_overflow_after_waiters_and_debt(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_acquire_async(f->sem, 5, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_reduce(f->sem, 3), 0);
    /* 3 debt + 5 for the waiter + MAXP available = MAXP + 8 fits exactly. */
    assert_int_equal(band_sem_release(f->sem, MAXP + 9), BAND_EOVERFLOW);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.debt, 3);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.available, 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    CHECK(f->sem);

    assert_int_equal(band_sem_release(f->sem, MAXP + 8), 0);
    st = stats_of(f->sem);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.available, MAXP);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    CHECK(f->sem);
}

/* ---------------------------------------------------------------------------------- */
/* reduce (debt) and drain                                                             */

static void test_reduce_available_first(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 10), 0);
    assert_int_equal(band_sem_reduce(f->sem, 4), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.available, 6);
    assert_u64_equal(st.debt, 0);
    assert_int_equal(band_sem_reduce(f->sem, 9), 0);
    st = stats_of(f->sem);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.debt, 3);
    assert_int_equal(band_sem_reduce(f->sem, 0), 0);
    assert_u64_equal(stats_of(f->sem).debt, 3);
    /* With debt, nothing is available, not even for try. */
    assert_int_equal(band_sem_try_acquire(f->sem, 1), BAND_EAGAIN);
    assert_int_equal(band_sem_try_acquire(f->sem, 0), 0);
    CHECK(f->sem);
}

/* The article's example: eight slots fully held, reduce by three, all eight return. */
static void test_reduce_eight_slots_by_three(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 8), 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(band_sem_try_acquire(f->sem, 1), 0);
    assert_int_equal(band_sem_reduce(f->sem, 3), 0);
    assert_u64_equal(stats_of(f->sem).debt, 3);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(band_sem_release(f->sem, 1), 0);
        band_sem_stats st = stats_of(f->sem);
        assert_u64_equal(st.debt, i < 3 ? (uint64_t)(2 - i) : 0);
        assert_u64_equal(st.available, i < 3 ? 0 : (uint64_t)(i - 2));
        CHECK(f->sem);
    }
    assert_u64_equal(band_sem_available(f->sem), 5);
}

/* The debt is repaid before any queued waiter. */
static void test_deficit_repaid_before_waiters(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_reduce(f->sem, 2), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.debt, 2);
    assert_u64_equal(st.waiters, 1);

    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_u64_equal(stats_of(f->sem).debt, 1);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_u64_equal(stats_of(f->sem).debt, 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    CHECK(f->sem);

    /* One release that spans debt, waiter and available. */
    assert_int_equal(band_sem_acquire_async(f->sem, 2, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_reduce(f->sem, 3), 0);
    assert_int_equal(band_sem_release(f->sem, 6), 0);
    st = stats_of(f->sem);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.available, 1);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    CHECK(f->sem);
}

/* A reduce while the head holds a partial grant leaves that grant alone. */
static void test_reduce_does_not_revoke_partial(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 4, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_reduce(f->sem, 1), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.head_granted, 2);
    assert_u64_equal(st.debt, 1);
    assert_int_equal(band_sem_release(f->sem, 2), 0); /* 1 debt, 1 to the head: 3 of 4 */
    st = stats_of(f->sem);
    assert_u64_equal(st.head_granted, 3);
    assert_u64_equal(st.debt, 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    CHECK(f->sem);
}

static void test_reduce_overflow(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_reduce(f->sem, MAXP), 0); /* nothing available: all debt */
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.debt, MAXP);
    assert_int_equal(band_sem_reduce(f->sem, 1), BAND_EOVERFLOW);
    assert_u64_equal(stats_of(f->sem).debt, MAXP);
    assert_int_equal(band_sem_reduce(f->sem, 0), 0);
    /* Repay all of it at once. */
    assert_int_equal(band_sem_release(f->sem, MAXP), 0);
    st = stats_of(f->sem);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.available, 0);
    CHECK(f->sem);
}

static void test_reduce_overflow_changes_nothing(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 5), 0);
    assert_int_equal(band_sem_reduce(f->sem, MAXP + 6), BAND_EOVERFLOW);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.available, 5);
    assert_u64_equal(st.debt, 0);
    assert_int_equal(band_sem_reduce(f->sem, UINT64_MAX), BAND_EOVERFLOW);
    assert_u64_equal(band_sem_available(f->sem), 5);
    CHECK(f->sem);
}

static void test_drain(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 5), 0);
    assert_u64_equal(band_sem_drain(f->sem, 3), 3);
    assert_u64_equal(band_sem_available(f->sem), 2);
    assert_u64_equal(band_sem_drain(f->sem, 10), 2);
    assert_u64_equal(band_sem_drain(f->sem, 10), 0);
    assert_u64_equal(band_sem_drain(f->sem, 0), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.debt, 0); /* drain never creates debt */
    /* What was drained is held by the caller and can be released. */
    assert_int_equal(band_sem_release(f->sem, 5), 0);
    assert_u64_equal(band_sem_drain(f->sem, UINT64_MAX), 5);
    CHECK(f->sem);
}

/* Draining a fully held budget takes nothing and owes nothing; a waiter's partial grant is
 * not drained. */
static void test_drain_creates_no_debt(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 8), 0);
    assert_int_equal(band_sem_try_acquire(f->sem, 8), 0);
    assert_u64_equal(band_sem_drain(f->sem, 3), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.available, 0);
    assert_int_equal(band_sem_release(f->sem, 8), 0);
    assert_u64_equal(band_sem_available(f->sem), 8); /* unlike reduce(3): all 8 are back */

    assert_int_equal(band_sem_acquire_async(f->sem, 10, &f->rec[0].w), BAND_PENDING);
    assert_u64_equal(band_sem_drain(f->sem, 100), 0);
    st = stats_of(f->sem);
    assert_u64_equal(st.head_granted, 8);
    assert_u64_equal(st.debt, 0);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    CHECK(f->sem);
}

/* ---------------------------------------------------------------------------------- */
/* close                                                                               */

static void test_close_with_pending_waiters(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 5, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 3, &f->rec[2].w), BAND_PENDING);
    assert_int_equal(band_sem_try_acquire(f->sem, 0), 0);

    assert_int_equal(band_sem_close(f->sem), 0);
    const int order[] = {0, 1, 2};
    assert_log(&f->log, order, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(atomic_load(&f->rec[i].count), 1);
        assert_int_equal(f->log.statuses[i], BAND_ECLOSED);
        assert_int_equal(band_waiter_status(&f->rec[i].w), BAND_ECLOSED);
    }
    assert_int_equal(band_sem_is_closed(f->sem), 1);
    band_sem_stats st = stats_of(f->sem);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.available, 2); /* the head's partial grant came back */
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.waiting_units, 0);
    assert_u64_equal(st.head_granted, 0);
    assert_u64_equal(st.closed_fails, 3);
    assert_u64_equal(st.grants, 0);
    CHECK(f->sem);

    /* Future acquisitions fail; n == 0 too. */
    assert_int_equal(band_sem_try_acquire(f->sem, 1), BAND_ECLOSED);
    assert_int_equal(band_sem_try_acquire(f->sem, 0), BAND_ECLOSED);
    assert_int_equal(band_sem_acquire(f->sem, 1, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(band_sem_acquire(f->sem, 0, 0, NULL), BAND_ECLOSED);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[3].w), BAND_ECLOSED);
    assert_int_equal(band_sem_acquire_async(f->sem, 0, &f->rec[3].w), BAND_ECLOSED);
    assert_int_equal(atomic_load(&f->rec[3].count), 0);
    assert_int_equal(band_waiter_is_pending(&f->rec[3].w), 0);

    /* Held permits can still be released; drain and reduce still work. */
    assert_int_equal(band_sem_release(f->sem, 4), 0);
    assert_u64_equal(band_sem_available(f->sem), 6);
    assert_u64_equal(band_sem_drain(f->sem, 1), 1);
    assert_int_equal(band_sem_reduce(f->sem, 1), 0);
    assert_u64_equal(band_sem_available(f->sem), 4);

    /* Closing twice is harmless and wakes nobody again. */
    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(atomic_load(&f->log.len), 3);
    st = stats_of(f->sem);
    assert_u64_equal(st.closed_fails, 3);
    assert_u64_equal(st.try_refusals, 0); /* ECLOSED is not a try refusal */
    CHECK(f->sem);
}

static void test_close_partial_repays_debt(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 5, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_reduce(f->sem, 2), 0);
    assert_int_equal(band_sem_close(f->sem), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.available, 1);
    CHECK(f->sem);
}

static void hook_acquire_after_close(struct wake_rec *r)
{
    r->hook_rc = band_sem_acquire_async((band_sem *)r->ctx, 1, &r->w);
}

/* A wake run by close can call back in: it sees the semaphore closed. */
static void test_close_wake_calls_back(void **state)
{
    struct fixture *f = *state;
    f->rec[0].hook = hook_acquire_after_close;
    f->rec[0].ctx = f->sem;
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(f->rec[0].hook_rc, BAND_ECLOSED);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(band_waiter_is_pending(&f->rec[0].w), 0);
}

/* ---------------------------------------------------------------------------------- */
/* blocking acquire                                                                    */

static void test_acquire_immediate(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_int_equal(band_sem_acquire(f->sem, 2, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_sem_acquire(f->sem, 1, 0, NULL), 0); /* past deadline but available */
    assert_u64_equal(band_sem_available(f->sem), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.queued, 0);
    assert_u64_equal(st.waiters, 0);
}

static void test_acquire_past_deadline(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    band_time t0 = band_now();
    assert_int_equal(band_sem_acquire(f->sem, 2, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_sem_acquire(f->sem, 2, t0 - 1, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_sem_acquire(f->sem, 2, band_now(), NULL), BAND_ETIMEDOUT);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.available, 1); /* nothing kept */
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.head_granted, 0);
    assert_u64_equal(st.queued, 0); /* "do not wait": it never queued */
    assert_u64_equal(st.timeouts, 0);
    /* With a waiter queued, a past deadline times out even if n would fit. */
    assert_int_equal(band_sem_acquire_async(f->sem, 3, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire(f->sem, 1, 0, NULL), BAND_ETIMEDOUT);
    assert_u64_equal(stats_of(f->sem).waiters, 1);
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
    assert_u64_equal(band_sem_available(f->sem), 1);
    CHECK(f->sem);
}

struct acq_arg {
    band_sem *sem;
    uint64_t n;
    band_time deadline;
    band_time rel_timeout; /* if nonzero, deadline = band_deadline_after(rel_timeout) */
};

static int acquire_thread(void *p)
{
    struct acq_arg *a = p;
    band_time d = a->rel_timeout != 0 ? band_deadline_after(a->rel_timeout) : a->deadline;
    return band_sem_acquire(a->sem, a->n, d, NULL);
}

static void wait_waiters(band_sem *s, uint64_t n)
{
    struct sem_waiters_cond c = {s, n};
    assert_true(test_wait_until(test_cond_sem_waiters, &c, 20 * BAND_SEC));
}

static bool cond_queued(void *arg)
{
    struct sem_waiters_cond *c = arg;
    band_sem_stats st;
    return band_sem_get_stats(c->sem, &st) == 0 && st.queued >= c->waiters;
}

/* Waits until @n acquisitions have queued since creation (a counter: it cannot be missed). */
static void wait_queued(band_sem *s, uint64_t n)
{
    struct sem_waiters_cond c = {s, n};
    assert_true(test_wait_until(cond_queued, &c, 20 * BAND_SEC));
}

/*
 * The spin before a blocking acquisition queues adapts: a queued wait of W <= 50 us grows
 * it to 2W (at most 50 us), a longer wait halves it, never below 1 us.
 */
static void test_spin_budget_adapts(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 1000); /* the floor, at first */
    band__sem_spin_learn(f->sem, 10 * BAND_USEC);
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 20000);
    band__sem_spin_learn(f->sem, 5 * BAND_USEC); /* shorter: keeps the larger budget */
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 20000);
    band__sem_spin_learn(f->sem, 400 * BAND_USEC);
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 800000);
    band__sem_spin_learn(f->sem, 600 * BAND_USEC);
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 1000000); /* capped */
    band__sem_spin_learn(f->sem, 1000 * BAND_USEC + 1);          /* holders keep permits long */
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 500000);
    for (int i = 0; i < 10; i++)
        band__sem_spin_learn(f->sem, BAND_SEC);
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 1000);
}

/* A real wait: the spin runs out while the permit stays held (the budget halves), the
 * acquisition queues, and its grant after well over 50 us halves it again. */
/* A spin cut short by the call's deadline or token says nothing about holders: the budget
 * stays. A requested token or a past deadline means no spin at all. */
static void test_spin_ends_at_deadline_and_cancel(void **state)
{
    struct fixture *f = *state;
    band__sem_spin_learn(f->sem, 400 * BAND_USEC); /* 800 us */
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 800000);
    /* the fixture's semaphore has no permits: every acquisition below finds none */
    assert_int_equal(band_sem_acquire(f->sem, 1, band_now() + 50 * BAND_USEC, NULL),
                     BAND_ETIMEDOUT);
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 800000);
    assert_int_equal(band_sem_acquire(f->sem, 1, band_now() - 1, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 800000);
    band_cancel *c = NULL;
    assert_int_equal(band_cancel_create(&c, NULL), 0);
    assert_int_equal(band_cancel_request(c), 0);
    assert_int_equal(band_sem_acquire(f->sem, 1, BAND_FOREVER, c), BAND_ECANCELED);
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 800000);
    assert_int_equal(band_cancel_destroy(c), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.queued, 0);
    assert_u64_equal(st.available, 0);
    CHECK(f->sem);
}

static void test_spin_budget_after_long_hold(void **state)
{
    struct fixture *f = *state;
    band__sem_spin_learn(f->sem, 20 * BAND_USEC); /* 40 us */
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 40000);
    struct acq_arg a = {f->sem, 1, BAND_FOREVER, 0};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, acquire_thread, &a), 0);
    wait_waiters(f->sem, 1);
    assert_int_equal(band__sleep_until(band_now() + 5 * BAND_MSEC, NULL), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_int_equal(band__sem_spin_budget_ns(f->sem), 10000);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.queued, 1);
    assert_u64_equal(st.grants, 1);
    assert_u64_equal(st.available, 0);
    CHECK(f->sem);
}

static void test_acquire_granted_by_other_thread(void **state)
{
    struct fixture *f = *state;
    struct acq_arg a = {f->sem, 3, BAND_FOREVER, 0};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, acquire_thread, &a), 0);
    wait_waiters(f->sem, 1);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_u64_equal(stats_of(f->sem).head_granted, 2);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(test_thread_join(&t), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.available, 1);
    assert_u64_equal(st.queued, 1);
    assert_u64_equal(st.grants, 1);
    assert_u64_equal(st.waiters, 0);
    CHECK(f->sem);
}

static void test_acquire_fifo_between_threads(void **state)
{
    struct fixture *f = *state;
    struct acq_arg a1 = {f->sem, 2, BAND_FOREVER, 0};
    struct acq_arg a2 = {f->sem, 1, BAND_FOREVER, 0};
    struct test_thread t1, t2;
    assert_int_equal(test_thread_start(&t1, acquire_thread, &a1), 0);
    wait_waiters(f->sem, 1);
    assert_int_equal(test_thread_start(&t2, acquire_thread, &a2), 0);
    wait_waiters(f->sem, 2);
    /* One permit: it goes to the head (t1), so t2 keeps waiting. */
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.waiters, 2);
    assert_u64_equal(st.head_granted, 1);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(test_thread_join(&t1), 0);
    assert_int_equal(atomic_load(&t2.done), 0); /* no permit for it yet */
    assert_u64_equal(stats_of(f->sem).waiters, 1);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(test_thread_join(&t2), 0);
    CHECK(f->sem);
}

static void test_acquire_closed_while_blocked(void **state)
{
    struct fixture *f = *state;
    struct acq_arg a = {f->sem, 3, BAND_FOREVER, 0};
    struct test_thread t;
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(test_thread_start(&t, acquire_thread, &a), 0);
    wait_waiters(f->sem, 1);
    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(test_thread_join(&t), BAND_ECLOSED);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.available, 1);
    assert_u64_equal(st.closed_fails, 1);
    CHECK(f->sem);
}

/* A blocked acquisition that times out gives its partial grant to the next waiter. Whether
 * the release of 2 lands before or after the timeout, the end state is the same. */
static void test_acquire_timeout_returns_partial(void **state)
{
    struct fixture *f = *state;
    struct acq_arg a = {f->sem, 5, 0, 250 * BAND_MSEC};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, acquire_thread, &a), 0);
    wait_queued(f->sem, 1); /* it queued (it may even have timed out already) */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    band_sem_stats st = stats_of(f->sem);
    if (st.waiters == 2) /* the thread had not timed out yet: it holds the 2 */
        assert_u64_equal(st.head_granted, 2);
    assert_int_equal(test_thread_join(&t), BAND_ETIMEDOUT);
    /* The wake of rec0 ran on whichever thread completed it; it is counted once. */
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(band_waiter_status(&f->rec[0].w), 0);
    st = stats_of(f->sem);
    assert_u64_equal(st.available, 1);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.timeouts, 1);
    assert_u64_equal(st.grants, 1);
    assert_u64_equal(st.queued, 2);
    CHECK(f->sem);
}

/* A deadline that passes while blocked, with nothing released: ETIMEDOUT, nothing held. */
static void test_acquire_times_out_while_blocked(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    band_time t0 = band_now();
    assert_int_equal(band_sem_acquire(f->sem, 2, band_deadline_after(20 * BAND_MSEC), NULL),
                     BAND_ETIMEDOUT);
    band_time t1 = band_now();
    assert_true(t1 - t0 >= 20 * BAND_MSEC); /* did not give up early */
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.available, 1);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.timeouts, 1);
    assert_u64_equal(st.queued, 1);
    /* It waited (from queueing to the timeout) no longer than the call took. */
    assert_true(st.wait_ns_max > 0);
    assert_true(st.wait_ns_max <= (uint64_t)(t1 - t0));
    assert_true(st.wait_ns_total >= st.wait_ns_max);
    CHECK(f->sem);
}

/* ---------------------------------------------------------------------------------- */
/* counters                                                                            */

static bool now_past(void *arg)
{
    return band_now() >= *(band_time *)arg;
}

static void test_stats_counters(void **state)
{
    struct fixture *f = *state;
    band_sem_stats st;
    assert_int_equal(band_sem_set_name(f->sem, "stats"), 0);

    assert_int_equal(band_sem_acquire_async(f->sem, 2, &f->rec[0].w), BAND_PENDING);
    band_time t0 = band_now();
    band_time until = t0 + 2 * BAND_MSEC;
    assert_true(test_wait_until(now_past, &until, 10 * BAND_SEC)); /* let time pass */
    assert_int_equal(band_sem_release(f->sem, 2), 0);              /* grant after >= 2 ms */
    st = stats_of(f->sem);
    assert_true(st.wait_ns_max >= (uint64_t)(2 * BAND_MSEC));
    assert_u64_equal(st.wait_ns_total, st.wait_ns_max);

    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[2].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 4, &f->rec[3].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 2, &f->rec[4].w), BAND_PENDING);
    assert_int_equal(band_sem_try_acquire(f->sem, 1), BAND_EAGAIN);
    assert_int_equal(band_sem_try_acquire(f->sem, 7), BAND_EAGAIN);
    assert_int_equal(band_waiter_cancel(&f->rec[1].w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_cancel(&f->rec[2].w, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_sem_reduce(f->sem, 2), 0);

    st = stats_of(f->sem);
    assert_string_equal(st.name, "stats");
    assert_int_equal(st.closed, 0);
    assert_int_equal(st.is_budget, 0);
    /* Created with 0, grown only by releases handed straight to waiters, which no snapshot
     * saw free: the capacity stays 0, and in use is what the debt leaves beyond the free
     * partial grant. */
    assert_u64_equal(st.capacity, 0);
    assert_u64_equal(st.in_use, 1);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.debt, 2);
    assert_u64_equal(st.waiters, 2);
    assert_u64_equal(st.waiting_units, 6);
    assert_u64_equal(st.head_granted, 1);
    assert_u64_equal(st.queued, 5);
    assert_u64_equal(st.grants, 1);
    assert_u64_equal(st.timeouts, 1);
    assert_u64_equal(st.cancels, 1);
    assert_u64_equal(st.closed_fails, 0);
    assert_u64_equal(st.try_refusals, 2);
    assert_u64_equal(st.too_big, 0);
    assert_true(st.wait_ns_total >= st.wait_ns_max);

    assert_int_equal(band_sem_close(f->sem), 0);
    st = stats_of(f->sem);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.closed_fails, 2);
    assert_u64_equal(st.debt, 1); /* the head's 1 repaid one of the 2 */
    assert_u64_equal(st.queued, st.grants + st.timeouts + st.cancels + st.closed_fails);
    CHECK(f->sem);
}

/*
 * No acquisition, hand-off, cancel or close allocates: the waiters are the caller's
 * memory. glibc's allocator statistics must not move while 10^4 waiters queue, are
 * partly cancelled, granted and closed. (Under ASan, malloc is not glibc's and the check
 * is vacuous; the plain and TSan builds make it count.)
 */
#define NOALLOC_N 10000
static void test_no_allocation_per_acquisition(void **state)
{
    struct fixture *f = *state;
    struct wake_rec *recs = calloc(NOALLOC_N, sizeof(*recs));
    assert_non_null(recs);
    for (int i = 0; i < NOALLOC_N; i++)
        wake_rec_init(&recs[i], i, NULL);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 before = mallinfo2();
#endif
    for (int i = 0; i < NOALLOC_N; i++)
        assert_int_equal(band_sem_acquire_async(f->sem, 1 + (uint64_t)(i % 3), &recs[i].w),
                         BAND_PENDING);
    for (int i = 0; i < NOALLOC_N; i += 2)
        assert_int_equal(band_waiter_cancel(&recs[i].w, BAND_ECANCELED), 0);
    for (int i = 0; i < NOALLOC_N / 2; i++)
        assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_int_equal(band_sem_close(f->sem), 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 after = mallinfo2();
    assert_u64_equal(after.uordblks, before.uordblks);
    assert_u64_equal(after.hblkhd, before.hblkhd);
#endif
    int woken = 0;
    for (int i = 0; i < NOALLOC_N; i++) {
        assert_int_equal(atomic_load(&recs[i].count), i % 2 == 0 ? 0 : 1);
        woken += atomic_load(&recs[i].count);
    }
    assert_int_equal(woken, NOALLOC_N / 2);
    free(recs);
}

/* The semaphore never reads a waiter's deadline: a past deadline on an async waiter does
 * not time it out (front ends enforce deadlines by cancelling). */
static void pause_for(band_time ns)
{
    band_time until = band_now() + ns;
    while (band_now() < until)
        ;
}

/* Deadline-aware (opt-in, band_sem_opts): once the pace of grants to queued waiters is
 * measured, an acquisition that would miss its deadline in the queue is refused at once. */
static void test_deadline_aware(void **state)
{
    struct fixture *f = *state;
    band_sem *s = NULL;
    band_sem_opts bad = {.deadline_aware = 2};
    assert_int_equal(band_sem_create(&s, 0, &bad), BAND_EINVAL);
    bad.deadline_aware = -1;
    assert_int_equal(band_sem_create(&s, 0, &bad), BAND_EINVAL);
    assert_null(s);
    band_sem_opts on = {.deadline_aware = 1};
    assert_int_equal(band_sem_create(&s, 0, &on), 0);
    assert_int_equal(band_sem_acquire_async(s, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(s, 1, &f->rec[1].w), BAND_PENDING);
    assert_u64_equal(stats_of(s).grant_pace_ns, 0); /* not measured: nobody refused */
    assert_int_equal(band_sem_release(s, 1), 0);    /* grants rec 0 */
    pause_for(40 * BAND_MSEC);
    assert_int_equal(band_sem_release(s, 1), 0); /* grants rec 1, 40 ms later */
    band_sem_stats st = stats_of(s);
    assert_true(st.grant_pace_ns >= 40 * BAND_MSEC);

    /* Nothing available: 15 ms is not enough for one unit at this pace. */
    f->rec[2].w.deadline = band_now() + 15 * BAND_MSEC;
    assert_int_equal(band_sem_acquire_async(s, 1, &f->rec[2].w), BAND_ETIMEDOUT);
    assert_int_equal(band_waiter_status(&f->rec[2].w), BAND_ETIMEDOUT);
    assert_int_equal(band_sem_acquire(s, 1, band_now() + 15 * BAND_MSEC, NULL), BAND_ETIMEDOUT);
    /* A second is worth waiting for; and behind it, a FOREVER waiter always queues. */
    f->rec[3].w.deadline = band_now() + BAND_SEC;
    assert_int_equal(band_sem_acquire_async(s, 1, &f->rec[3].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(s, 1, &f->rec[4].w), BAND_PENDING);
    st = stats_of(s);
    assert_u64_equal(st.refused_deadline, 2);
    assert_u64_equal(st.waiters, 2);
    assert_u64_equal(st.timeouts, 0);                   /* refused, not timed out in the queue */
    assert_int_equal(atomic_load(&f->rec[2].count), 0); /* refused at once: no wake */
    assert_int_equal(band_sem_release(s, 4), 0);        /* rec 0, 1 and the queued two */
    assert_int_equal(atomic_load(&f->rec[3].count), 1);
    assert_int_equal(atomic_load(&f->rec[4].count), 1);
    assert_u64_equal(band_sem_available(s), 2);
    CHECK(s);
    assert_int_equal(band_sem_destroy(s), 0);

    /* Off (the fixture's semaphore, default options), the same deadline queues under the
     * same measured pace. */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[6].w), BAND_PENDING);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[7].w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    pause_for(40 * BAND_MSEC);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_true(stats_of(f->sem).grant_pace_ns >= 40 * BAND_MSEC);
    f->rec[5].w.deadline = band_now() + BAND_MSEC;
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[5].w), BAND_PENDING);
    assert_u64_equal(stats_of(f->sem).refused_deadline, 0);
    assert_int_equal(band_waiter_cancel(&f->rec[5].w, BAND_ECANCELED), 0);
    CHECK(f->sem);
}

static void test_async_deadline_is_not_read(void **state)
{
    struct fixture *f = *state;
    f->rec[0].w.deadline = 1; /* long past */
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_try_acquire(f->sem, 0), 0);
    assert_int_equal(band_sem_release(f->sem, 0), 0);
    assert_int_equal(band_waiter_is_pending(&f->rec[0].w), 1);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    band_sem_stats st = stats_of(f->sem);
    assert_u64_equal(st.timeouts, 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(band_waiter_status(&f->rec[0].w), 0);
    CHECK(f->sem);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_args),
        cmocka_unit_test(test_fresh_stats),
        T(test_destroy_busy),
        T(test_set_name),
        cmocka_unit_test(test_null_sem),
        T(test_get_stats_null_out),
        T(test_too_many_permits_is_einval),
        T(test_max_request_is_valid),
        T(test_queue_units_overflow),
        T(test_try_acquire),
        T(test_zero_succeeds_with_waiters),
        T(test_try_never_barges),
        T(test_fifo_wake_order),
        T(test_partial_grants_accumulate),
        T(test_head_of_line_blocking),
        T(test_spin_budget_adapts),
        T(test_spin_budget_after_long_hold),
        T(test_spin_ends_at_deadline_and_cancel),
        T(test_release_spills_over),
        T(test_cancel_partial_head_passes_permits_on),
        T(test_cancel_partial_head_repays_debt_first),
        T(test_cancel_partial_head_debt_absorbs_all),
        T(test_cancel_middle_waiter),
        T(test_cancel_empty_head),
        T(test_wake_releases_into_same_sem),
        T(test_wake_try_acquires_same_sem),
        T(test_wake_acquires_async_same_sem),
        T(test_wake_reads_stats_same_sem),
        T(test_wake_cancels_completed_sibling),
        T(test_wake_cancels_queued_sibling),
        T(test_wake_exactly_once),
        T(test_release_zero),
        T(test_release_overflow),
        T(test_release_overflow_after_waiters_and_debt),
        T(test_reduce_available_first),
        T(test_reduce_eight_slots_by_three),
        T(test_deficit_repaid_before_waiters),
        T(test_reduce_does_not_revoke_partial),
        T(test_reduce_overflow),
        T(test_reduce_overflow_changes_nothing),
        T(test_drain),
        T(test_drain_creates_no_debt),
        T(test_close_with_pending_waiters),
        T(test_close_partial_repays_debt),
        T(test_close_wake_calls_back),
        T(test_acquire_immediate),
        T(test_acquire_past_deadline),
        T(test_acquire_granted_by_other_thread),
        T(test_acquire_fifo_between_threads),
        T(test_acquire_closed_while_blocked),
        T(test_acquire_timeout_returns_partial),
        T(test_acquire_times_out_while_blocked),
        T(test_stats_counters),
        T(test_no_allocation_per_acquisition),
        T(test_async_deadline_is_not_read),
        T(test_deadline_aware),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * test_budget.c - byte budgets (budget.h): capacity checks (E2BIG at once, counted),
 * release limit, shrink (debt, E2BIG for queued requests that no longer fit), grow,
 * counters, and the budgeted buffers (alloc, alloc_reserved, realloc, free).
 */
#include "test.h"

#include <stdalign.h>
#include <string.h>

#include "prim/sem_internal.h"

#define MAXP BAND_MAX_UNITS

struct fixture {
    band_budget *b;
    band_sem *s; /* band_budget_sem(b) */
    struct wake_log log;
    struct wake_rec rec[8];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_budget_create(&f->b, 10, NULL) != 0) {
        free(f);
        return -1;
    }
    f->s = band_budget_sem(f->b);
    wake_log_init(&f->log);
    for (int i = 0; i < 8; i++)
        wake_rec_init(&f->rec[i], i, &f->log);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    band_budget_close(f->b);
    int rc = band_budget_destroy(f->b);
    free(f);
    return rc == 0 ? 0 : -1;
}

static band_budget_stats stats_of(const band_budget *b)
{
    band_budget_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_budget_get_stats(b, &st), 0);
    return st;
}

#define CHECK(f) assert_int_equal(band__sem_check((f)->s), 0)

static void assert_log(struct wake_log *log, const int *ids, const int *statuses, unsigned n)
{
    assert_int_equal(atomic_load(&log->len), n);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(log->ids[i], ids[i]);
        assert_int_equal(log->statuses[i], statuses[i]);
    }
}

/* ---------------------------------------------------------------------------------- */
/* create, destroy, stats                                                              */

static void test_create_args(void **state)
{
    (void)state;
    band_budget *b = (band_budget *)(uintptr_t)0x1234;
    assert_int_equal(band_budget_create(NULL, 10, NULL), BAND_EINVAL);
    assert_int_equal(band_budget_create(&b, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_budget_create(&b, MAXP + 1, NULL), BAND_EINVAL);
    assert_ptr_equal(b, (band_budget *)(uintptr_t)0x1234);
    assert_int_equal(band_budget_create(&b, MAXP, NULL), 0);
    assert_u64_equal(band_budget_capacity(b), MAXP);
    assert_u64_equal(band_budget_available(b), MAXP);
    assert_int_equal(band_budget_destroy(b), 0);
    assert_int_equal(band_budget_destroy(NULL), 0);
    assert_null(band_budget_sem(NULL));
    assert_u64_equal(band_budget_capacity(NULL), 0);
    assert_u64_equal(band_budget_available(NULL), 0);
}

static void test_fresh_stats(void **state)
{
    struct fixture *f = *state;
    assert_non_null(f->s);
    assert_int_equal(band_budget_set_name(f->b, "payload"), 0);
    band_budget_stats st = stats_of(f->b);
    assert_string_equal(st.name, "payload");
    assert_int_equal(st.closed, 0);
    assert_u64_equal(st.capacity, 10);
    assert_u64_equal(st.in_use, 0);
    assert_u64_equal(st.available, 10);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.too_big, 0);
    /* The same counters through the semaphore view. */
    band_sem_stats st2;
    assert_int_equal(band_sem_get_stats(f->s, &st2), 0);
    assert_string_equal(st2.name, "payload");
    assert_int_equal(st2.is_budget, 1);
    assert_u64_equal(st2.capacity, 10);
    assert_int_equal(band_budget_get_stats(NULL, &st), BAND_EINVAL);
    assert_int_equal(band_budget_get_stats(f->b, NULL), BAND_EINVAL);
    assert_int_equal(band_budget_set_name(NULL, "x"), BAND_EINVAL);
}

/* band_budget_get_stats() reports, field by field, what band_sem_get_stats() reports
 * for the budget's semaphore, in a state with a debt, a partial grant and every kind of
 * refusal counted. */
static void test_stats_match_sem_view(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_set_name(f->b, "bytes"), 0);
    assert_int_equal(band_budget_try_acquire(f->b, 7), 0);
    assert_int_equal(band_budget_try_acquire(f->b, 11), BAND_E2BIG);
    assert_int_equal(band_budget_try_acquire(f->b, 4), BAND_EAGAIN);
    assert_int_equal(band_budget_acquire(f->b, 4, band_now() + 20 * BAND_MSEC, NULL),
                     BAND_ETIMEDOUT);
    assert_int_equal(band_budget_acquire_async(f->b, 5, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 2, &f->rec[1].w), 0);
    assert_int_equal(band_budget_release(f->b, 2), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 2, &f->rec[2].w), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 3, &f->rec[3].w), BAND_PENDING);
    assert_int_equal(band_budget_acquire_async(f->b, 1, &f->rec[4].w), BAND_PENDING);
    assert_int_equal(band_budget_acquire_async(f->b, 3, &f->rec[5].w), BAND_PENDING);
    assert_int_equal(band_budget_release(f->b, 2), 0); /* rec 3 granted */
    assert_int_equal(band_budget_release(f->b, 2), 0); /* rec 4 granted, rec 5 has 1 */
    assert_int_equal(atomic_load(&f->rec[3].count), 1);
    assert_int_equal(atomic_load(&f->rec[4].count), 1);
    assert_int_equal(band_budget_shrink(f->b, 2), 0); /* nothing available: debt 2 */

    band_budget_stats b;
    band_sem_stats s;
    assert_int_equal(band_budget_get_stats(f->b, &b), 0);
    assert_int_equal(band_sem_get_stats(f->s, &s), 0);
    assert_string_equal(b.name, "bytes");
    assert_string_equal(b.name, s.name);
    assert_int_equal(b.closed, 0);
    assert_int_equal(b.closed, s.closed);
    assert_u64_equal(b.capacity, 8);
    assert_u64_equal(b.capacity, s.capacity);
    assert_u64_equal(b.in_use, 9); /* 3 + 2 + 3 + 1 held */
    assert_u64_equal(b.in_use, s.in_use);
    assert_u64_equal(b.available, 0);
    assert_u64_equal(b.available, s.available);
    assert_u64_equal(b.debt, 2);
    assert_u64_equal(b.debt, s.debt);
    assert_u64_equal(b.waiters, 1);
    assert_u64_equal(b.waiters, s.waiters);
    assert_u64_equal(b.waiting_units, 3);
    assert_u64_equal(b.waiting_units, s.waiting_units);
    assert_u64_equal(b.head_granted, 1);
    assert_u64_equal(b.head_granted, s.head_granted);
    assert_u64_equal(b.queued, 5);
    assert_u64_equal(b.queued, s.queued);
    assert_u64_equal(b.grants, 2);
    assert_u64_equal(b.grants, s.grants);
    assert_u64_equal(b.timeouts, 1);
    assert_u64_equal(b.timeouts, s.timeouts);
    assert_u64_equal(b.cancels, 1);
    assert_u64_equal(b.cancels, s.cancels);
    assert_u64_equal(b.try_refusals, 1);
    assert_u64_equal(b.try_refusals, s.try_refusals);
    assert_u64_equal(b.too_big, 1);
    assert_u64_equal(b.too_big, s.too_big);
    assert_true(b.wait_ns_max >= 20 * BAND_MSEC); /* the timed-out acquisition */
    assert_u64_equal(b.wait_ns_max, s.wait_ns_max);
    assert_u64_equal(b.wait_ns_total, s.wait_ns_total);
    assert_u64_equal(b.refused_deadline, s.refused_deadline);
    assert_u64_equal(b.grant_pace_ns, s.grant_pace_ns);
    assert_int_equal(band_budget_close(f->b), 0); /* rec 5 fails */
    assert_int_equal(atomic_load(&f->rec[5].status), BAND_ECLOSED);
    assert_int_equal(band_budget_get_stats(f->b, &b), 0);
    assert_int_equal(band_sem_get_stats(f->s, &s), 0);
    assert_int_equal(b.closed, 1);
    assert_int_equal(b.closed, s.closed);
    assert_u64_equal(b.closed_fails, 1);
    assert_u64_equal(b.closed_fails, s.closed_fails);
    assert_u64_equal(b.debt, 1); /* rec 5's partial grant repaid part of it */
    assert_u64_equal(b.in_use, 9);
    assert_u64_equal(b.in_use, s.in_use);
    CHECK(f);
}

/* band_budget_set_name(): copied, at most BAND_NAME_MAX bytes with its NUL (a longer name
 * changes nothing), NULL clears it; the same name shows through the semaphore view. */
static void test_set_name(void **state)
{
    struct fixture *f = *state;
    char name[BAND_NAME_MAX + 1];
    memset(name, 'a', BAND_NAME_MAX - 1);
    name[BAND_NAME_MAX - 1] = '\0';
    assert_int_equal(band_budget_set_name(f->b, name), 0);
    name[0] = 'z'; /* copied: the caller's buffer is not kept */
    band_sem_stats ss;
    assert_int_equal(band_sem_get_stats(f->s, &ss), 0);
    assert_int_equal(ss.name[0], 'a');
    assert_int_equal(strlen(ss.name), BAND_NAME_MAX - 1);
    memset(name, 'b', BAND_NAME_MAX);
    name[BAND_NAME_MAX] = '\0';
    assert_int_equal(band_budget_set_name(f->b, name), BAND_EINVAL);
    band_budget_stats st = stats_of(f->b);
    assert_int_equal(st.name[0], 'a');
    assert_int_equal(strlen(st.name), BAND_NAME_MAX - 1);
    assert_int_equal(band_budget_set_name(f->b, NULL), 0);
    assert_string_equal(stats_of(f->b).name, "");
}

/* band_budget_is_closed(): 0 for NULL and before close, 1 after a close through the budget
 * or through its semaphore. */
static void test_is_closed(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_is_closed(NULL), 0);
    assert_int_equal(band_budget_is_closed(f->b), 0);
    assert_int_equal(band_budget_close(f->b), 0);
    assert_int_equal(band_budget_is_closed(f->b), 1);
    assert_int_equal(band_budget_close(f->b), 0); /* twice is harmless */
    assert_int_equal(band_budget_is_closed(f->b), 1);
    band_budget *b = NULL;
    assert_int_equal(band_budget_create(&b, 3, NULL), 0);
    assert_int_equal(band_sem_close(band_budget_sem(b)), 0);
    assert_int_equal(band_budget_is_closed(b), 1);
    assert_int_equal(band_budget_destroy(b), 0);
}

/* band_budget_opts: an out-of-range option is refused before anything is allocated; the
 * wait histogram records each queued request's wait; deadline-aware refuses at once a
 * request that the measured pace says would miss its deadline. */
static void test_opts(void **state)
{
    struct fixture *f = *state;
    band_budget *b = (band_budget *)(uintptr_t)0x1234;
    band_budget_opts bad = {.deadline_aware = 2};
    assert_int_equal(band_budget_create(&b, 10, &bad), BAND_EINVAL);
    assert_ptr_equal(b, (band_budget *)(uintptr_t)0x1234);
    band_budget_opts zero = {0};
    assert_int_equal(band_budget_create(&b, 10, &zero), 0);
    assert_int_equal(band_budget_destroy(b), 0);

    band_histo h;
    band_histo_init(&h);
    band_budget_opts o = {.deadline_aware = 1, .wait_histo = &h};
    assert_int_equal(band_budget_create(&b, 4, &o), 0);
    assert_int_equal(band_budget_try_acquire(b, 4), 0);
    assert_int_equal(band_budget_acquire(b, 1, band_now() + BAND_MSEC, NULL), BAND_ETIMEDOUT);
    /* Two queued requests granted 20 ms apart measure the pace. */
    assert_int_equal(band_budget_acquire_async(b, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_budget_acquire_async(b, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_budget_release(b, 1), 0);
    band_time until = band_now() + 20 * BAND_MSEC;
    while (band_now() < until)
        ;
    assert_int_equal(band_budget_release(b, 1), 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    band_budget_stats st;
    assert_int_equal(band_budget_get_stats(b, &st), 0);
    assert_true(st.grant_pace_ns >= 20 * BAND_MSEC);
    /* 5 ms is not enough for one unit at this pace: refused at once, no wake. */
    f->rec[2].w.deadline = band_now() + 5 * BAND_MSEC;
    assert_int_equal(band_budget_acquire_async(b, 1, &f->rec[2].w), BAND_ETIMEDOUT);
    assert_int_equal(atomic_load(&f->rec[2].count), 0);
    assert_int_equal(band_budget_get_stats(b, &st), 0);
    assert_u64_equal(st.refused_deadline, 1);
    assert_u64_equal(st.waiters, 0);
    /* The timed-out request and the two granted ones waited in the queue; the refused one
     * never queued. */
    band_histo_snapshot snap;
    assert_int_equal(band_histo_read(&h, &snap), 0);
    assert_u64_equal(snap.count, 3);
    assert_int_equal(band_budget_release(b, 4), 0);
    assert_u64_equal(band_budget_available(b), 4);
    assert_int_equal(band_budget_destroy(b), 0);
}

static void test_destroy_busy(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 10), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 1, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_budget_destroy(f->b), BAND_EBUSY);
    assert_u64_equal(stats_of(f->b).waiters, 1);
    assert_int_equal(band_budget_close(f->b), 0);
    assert_int_equal(band_waiter_status(&f->rec[0].w), BAND_ECLOSED);
}

static void test_in_use(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 3), 0);
    assert_int_equal(band_budget_acquire(f->b, 4, BAND_FOREVER, NULL), 0);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.in_use, 7);
    assert_u64_equal(st.available, 3);
    /* A head's partial grant is not in use yet. */
    assert_int_equal(band_budget_acquire_async(f->b, 5, &f->rec[0].w), BAND_PENDING);
    st = stats_of(f->b);
    assert_u64_equal(st.in_use, 7);
    assert_u64_equal(st.head_granted, 3);
    assert_u64_equal(st.available, 0);
    assert_int_equal(band_budget_release(f->b, 2), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    st = stats_of(f->b);
    assert_u64_equal(st.in_use, 10);
    assert_u64_equal(st.available, 0);
    assert_int_equal(band_budget_release(f->b, 10), 0);
    assert_u64_equal(stats_of(f->b).in_use, 0);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* capacity: E2BIG and the release limit                                               */

static void test_e2big_at_once(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 11), BAND_E2BIG);
    assert_int_equal(band_budget_acquire(f->b, 11, BAND_FOREVER, NULL), BAND_E2BIG); /* no wait */
    assert_int_equal(band_budget_acquire_async(f->b, 11, &f->rec[0].w), BAND_E2BIG);
    assert_int_equal(band_waiter_is_pending(&f->rec[0].w), 0);
    assert_int_equal(band_waiter_status(&f->rec[0].w), BAND_E2BIG); /* ended, and says so */
    assert_int_equal(band_waiter_cancel(&f->rec[0].w, BAND_ECANCELED), BAND_EINVAL);
    assert_int_equal(band_sem_try_acquire(f->s, UINT64_C(1) << 40), BAND_E2BIG);
    assert_int_equal(band_sem_acquire(f->s, 11, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_int_equal(band_sem_acquire_async(f->s, 11, &f->rec[0].w), BAND_E2BIG);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);

    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.too_big, 6);
    assert_u64_equal(st.try_refusals, 0);
    assert_u64_equal(st.queued, 0);
    assert_u64_equal(st.available, 10);

    /* Exactly the capacity is fine, even while it is all in use: it waits. */
    assert_int_equal(band_budget_try_acquire(f->b, 10), 0);
    assert_int_equal(band_budget_try_acquire(f->b, 10), BAND_EAGAIN);
    assert_int_equal(band_budget_acquire_async(f->b, 10, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_budget_release(f->b, 10), 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    assert_int_equal(band_waiter_status(&f->rec[1].w), 0);
    CHECK(f);
}

/* EINVAL before E2BIG before ECLOSED. */
static void test_check_order(void **state)
{
    struct fixture *f = *state;
    band_waiter nowake;
    band_waiter_init(&nowake, NULL, NULL);
    assert_int_equal(band_budget_try_acquire(NULL, 11), BAND_EINVAL);
    assert_int_equal(band_budget_acquire(NULL, 11, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_budget_acquire_async(NULL, 11, &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_budget_try_acquire(f->b, MAXP + 1), BAND_EINVAL);
    assert_int_equal(band_budget_acquire(f->b, MAXP + 1, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_budget_acquire_async(f->b, MAXP + 1, &f->rec[0].w), BAND_EINVAL);
    assert_int_equal(band_budget_acquire_async(f->b, 11, &nowake), BAND_EINVAL);
    assert_int_equal(band_budget_acquire_async(f->b, 11, NULL), BAND_EINVAL);
    assert_u64_equal(stats_of(f->b).too_big, 0);

    assert_int_equal(band_budget_close(f->b), 0);
    assert_int_equal(band_budget_try_acquire(f->b, 11), BAND_E2BIG);
    assert_int_equal(band_budget_acquire(f->b, 11, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_int_equal(band_budget_acquire_async(f->b, 11, &f->rec[0].w), BAND_E2BIG);
    assert_int_equal(band_budget_try_acquire(f->b, 10), BAND_ECLOSED);
    assert_int_equal(band_budget_acquire(f->b, 10, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(band_budget_acquire_async(f->b, 10, &f->rec[0].w), BAND_ECLOSED);
    assert_int_equal(band_budget_try_acquire(f->b, MAXP + 1), BAND_EINVAL);
    assert_u64_equal(stats_of(f->b).too_big, 3);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
}

static void test_release_beyond_capacity(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_release(f->b, 1), BAND_EOVERFLOW);
    assert_int_equal(band_sem_release(f->s, 1), BAND_EOVERFLOW);
    assert_u64_equal(band_budget_available(f->b), 10);
    assert_int_equal(band_budget_try_acquire(f->b, 5), 0);
    assert_int_equal(band_budget_release(f->b, 6), BAND_EOVERFLOW);
    assert_u64_equal(band_budget_available(f->b), 5);
    assert_int_equal(band_budget_release(f->b, 5), 0);
    assert_u64_equal(band_budget_available(f->b), 10);
    assert_int_equal(band_budget_release(NULL, 1), BAND_EINVAL);
    assert_int_equal(band_budget_release(f->b, 0), 0);
    CHECK(f);
}

/* With a waiter: the units the waiter will hold once granted are not the releaser's to
 * return. 10 held, the waiter wants 4: at most 10 come back, then the waiter's 4. */
static void test_release_beyond_capacity_with_waiter(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 10), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 4, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_budget_release(f->b, 15), BAND_EOVERFLOW);
    assert_int_equal(band_budget_release(f->b, 11), BAND_EOVERFLOW);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.head_granted, 0);
    assert_u64_equal(st.available, 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    assert_int_equal(band_budget_release(f->b, 10), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_u64_equal(band_budget_available(f->b), 6);
    assert_int_equal(band_budget_release(f->b, 4), 0);
    assert_u64_equal(band_budget_available(f->b), 10);
    CHECK(f);
}

/* The head's partial grant is held for the waiter, not free: a release that, counted with
 * it, would return more than callers hold is refused. Capacity 10, 8 taken, the head wants
 * 5 and holds the other 2, so at most 8 can come back. */
static void test_release_counts_head_partial_grant(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 8), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 5, &f->rec[0].w), BAND_PENDING);
    assert_u64_equal(stats_of(f->b).head_granted, 2);
    assert_int_equal(band_sem_release(f->s, 9), BAND_EOVERFLOW);
    assert_int_equal(band_budget_release(f->b, 9), BAND_EOVERFLOW);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_adopt(&p, f->s, 9), 0);
    assert_int_equal(band_permit_release(&p), BAND_EOVERFLOW);
    assert_u64_equal(p.count, 9); /* it keeps what it could not return */
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.head_granted, 2);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.in_use, 8);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    CHECK(f);

    /* What is held comes back, then the waiter's own units. */
    assert_int_equal(band_budget_release(f->b, 8), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(band_waiter_status(&f->rec[0].w), 0);
    assert_u64_equal(band_budget_available(f->b), 5);
    assert_int_equal(band_budget_release(f->b, 5), 0);
    assert_u64_equal(band_budget_available(f->b), 10);
    assert_int_equal(band_budget_release(f->b, 1), BAND_EOVERFLOW);
    CHECK(f);
}

/* The same with a debt: the units owed are held by callers too. Capacity 10, 8 taken, the
 * head holds 2 of its 5, a shrink by 3 owes 3: callers hold 8, and 8 may come back. */
static void test_release_counts_head_partial_grant_with_debt(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 8), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 5, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_budget_shrink(f->b, 3), 0);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.capacity, 7);
    assert_u64_equal(st.debt, 3);
    assert_u64_equal(st.head_granted, 2);
    assert_u64_equal(st.in_use, 8);
    assert_int_equal(band_budget_release(f->b, 9), BAND_EOVERFLOW);
    st = stats_of(f->b);
    assert_u64_equal(st.debt, 3);
    assert_u64_equal(st.head_granted, 2);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);

    assert_int_equal(band_budget_release(f->b, 8), 0); /* 3 to the debt, 3 to the head */
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_u64_equal(band_budget_available(f->b), 2);
    assert_int_equal(band_budget_release(f->b, 5), 0);
    assert_u64_equal(band_budget_available(f->b), 7);
    assert_int_equal(band_budget_release(f->b, 1), BAND_EOVERFLOW);
    CHECK(f);
}

/*
 * Releases racing with capacity changes. Nothing is ever held, so every release is one of
 * units never acquired and must be refused, whatever capacity change it meets half done;
 * and each shrink and grow must succeed, leaving the budget as it was.
 */
struct capacity_race {
    band_budget *b;
    atomic_int stop;
    atomic_int accepted; /* releases that answered 0 (there must be none) */
    uint64_t releases;
};

static int capacity_race_releaser(void *arg)
{
    struct capacity_race *r = arg;
    while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        int rc = band_budget_release(r->b, 5);
        r->releases++;
        if (rc != BAND_EOVERFLOW) {
            atomic_fetch_add(&r->accepted, 1);
            return rc;
        }
    }
    return BAND_EOVERFLOW;
}

static void test_release_races_capacity_change(void **state)
{
    struct fixture *f = *state;
    struct capacity_race r = {f->b, 0, 0, 0};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, capacity_race_releaser, &r), 0);
    band_time end = band_now() + (test_under_sanitizer() ? 3 : 1) * BAND_SEC;
    int failed = 0;
    uint64_t rounds = 0;
    while (rounds < 2000000 && band_now() < end && atomic_load(&r.accepted) == 0) {
        if (band_budget_shrink(f->b, 5) != 0 || band_budget_grow(f->b, 5) != 0) {
            failed = 1;
            break;
        }
        rounds++;
    }
    atomic_store(&r.stop, 1);
    int rc = test_thread_join(&t);
    print_message("capacity race: %llu rounds, %llu releases\n", (unsigned long long)rounds,
                  (unsigned long long)r.releases);
    assert_int_equal(atomic_load(&r.accepted), 0);
    assert_int_equal(rc, BAND_EOVERFLOW);
    assert_int_equal(failed, 0);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.capacity, 10);
    assert_u64_equal(st.available, 10);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.in_use, 0);
    CHECK(f);
}

/* Legal releases racing with capacity changes: a worker takes 3 units and returns them,
 * over and over, while the main thread shrinks and grows. Every release returns units
 * the worker holds, so each must be accepted, whichever change it meets. */
struct capacity_churn {
    band_budget *b;
    atomic_int stop;
    int refused; /* releases that did not answer 0 (there must be none) */
    uint64_t cycles;
};

static int capacity_churn_worker(void *arg)
{
    struct capacity_churn *c = arg;
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        if (band_budget_try_acquire(c->b, 3) != 0)
            continue;
        int rc = band_budget_release(c->b, 3);
        c->cycles++;
        if (rc != 0) {
            c->refused++;
            return rc;
        }
    }
    return 0;
}

static void test_held_release_races_capacity_change(void **state)
{
    struct fixture *f = *state;
    struct capacity_churn c = {f->b, 0, 0, 0};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, capacity_churn_worker, &c), 0);
    band_time end = band_now() + (test_under_sanitizer() ? 3 : 1) * BAND_SEC;
    int failed = 0;
    uint64_t rounds = 0;
    while (rounds < 1000000 && band_now() < end) {
        if (band_budget_shrink(f->b, 5) != 0 || band_budget_grow(f->b, 5) != 0) {
            failed = 1;
            break;
        }
        rounds++;
    }
    atomic_store(&c.stop, 1);
    assert_int_equal(test_thread_join(&t), 0);
    print_message("capacity churn: %llu rounds, %llu acquire/release cycles\n",
                  (unsigned long long)rounds, (unsigned long long)c.cycles);
    assert_int_equal(c.refused, 0);
    assert_int_equal(failed, 0);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.capacity, 10);
    assert_u64_equal(st.available, 10);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.in_use, 0);
    CHECK(f);
}

/* The article's budget: three left, the head wants five, the one-unit waiter waits. */
static void test_head_of_line_blocking(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 7), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 5, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_budget_acquire_async(f->b, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_budget_try_acquire(f->b, 1), BAND_EAGAIN);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.head_granted, 3);
    assert_u64_equal(st.available, 0);
    assert_int_equal(band_budget_release(f->b, 2), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    assert_int_equal(band_budget_release(f->b, 1), 0);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* shrink and grow                                                                     */

static void test_shrink_args(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_shrink(f->b, 10), BAND_EINVAL);
    assert_int_equal(band_budget_shrink(f->b, 11), BAND_EINVAL);
    assert_int_equal(band_budget_shrink(f->b, UINT64_MAX), BAND_EINVAL);
    assert_int_equal(band_budget_shrink(NULL, 1), BAND_EINVAL);
    assert_u64_equal(band_budget_capacity(f->b), 10);
    assert_int_equal(band_budget_shrink(f->b, 0), 0);
    assert_int_equal(band_budget_shrink(f->b, 9), 0);
    assert_u64_equal(band_budget_capacity(f->b), 1);
    assert_u64_equal(band_budget_available(f->b), 1);
    assert_int_equal(band_budget_shrink(f->b, 1), BAND_EINVAL); /* keeps at least one */
    assert_int_equal(band_budget_try_acquire(f->b, 2), BAND_E2BIG);
    CHECK(f);
}

static void test_shrink_creates_debt(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 8), 0);
    assert_int_equal(band_budget_shrink(f->b, 5), 0);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.capacity, 5);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.debt, 3);
    assert_u64_equal(st.in_use, 8); /* nothing held is revoked */
    CHECK(f);
    assert_int_equal(band_budget_try_acquire(f->b, 1), BAND_EAGAIN);
    assert_int_equal(band_budget_release(f->b, 2), 0);
    st = stats_of(f->b);
    assert_u64_equal(st.debt, 1);
    assert_u64_equal(st.available, 0);
    assert_int_equal(band_budget_release(f->b, 6), 0);
    st = stats_of(f->b);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.available, 5);
    assert_u64_equal(st.in_use, 0);
    assert_int_equal(band_budget_release(f->b, 1), BAND_EOVERFLOW);
    CHECK(f);
}

/* Queued requests larger than the new capacity end with E2BIG through their wakes; the
 * head's partial grant repays the debt, then goes to the next waiter. */
static void test_shrink_fails_too_big_waiters(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 6), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 8, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_budget_acquire_async(f->b, 3, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_budget_acquire_async(f->b, 9, &f->rec[2].w), BAND_PENDING);
    assert_int_equal(band_budget_acquire_async(f->b, 2, &f->rec[3].w), BAND_PENDING);
    assert_u64_equal(stats_of(f->b).head_granted, 4);

    assert_int_equal(band_budget_shrink(f->b, 3), 0); /* capacity 7 */
    const int ids[] = {0, 2};
    const int sts[] = {BAND_E2BIG, BAND_E2BIG};
    assert_log(&f->log, ids, sts, 2);
    assert_int_equal(band_waiter_status(&f->rec[0].w), BAND_E2BIG);
    assert_int_equal(band_waiter_status(&f->rec[2].w), BAND_E2BIG);
    assert_int_equal(band_waiter_is_pending(&f->rec[1].w), 1);
    assert_int_equal(band_waiter_is_pending(&f->rec[3].w), 1);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.capacity, 7);
    assert_u64_equal(st.debt, 0);         /* 3 of the head's 4 repaid it */
    assert_u64_equal(st.head_granted, 1); /* the last one went to the new head */
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.waiters, 2);
    assert_u64_equal(st.waiting_units, 5);
    assert_u64_equal(st.in_use, 6);
    assert_u64_equal(st.too_big, 2);
    assert_u64_equal(st.queued, 4);
    CHECK(f);

    assert_int_equal(band_budget_release(f->b, 6), 0);
    const int ids2[] = {0, 2, 1, 3};
    const int sts2[] = {BAND_E2BIG, BAND_E2BIG, 0, 0};
    assert_log(&f->log, ids2, sts2, 4);
    st = stats_of(f->b);
    assert_u64_equal(st.available, 2);
    assert_u64_equal(st.in_use, 5);
    assert_u64_equal(st.grants, 2);
    for (int i = 0; i < 4; i++)
        assert_int_equal(atomic_load(&f->rec[i].count), 1);
    CHECK(f);
}

static void hook_reacquire_smaller(struct wake_rec *r)
{
    /* On E2BIG, ask again for what the budget can still hold. */
    if (band_waiter_status(&r->w) == BAND_E2BIG)
        r->hook_rc = band_budget_acquire_async((band_budget *)r->ctx, r->hook_u64, &r->w);
}

/* A wake run by shrink may call back into the budget. */
static void test_shrink_wake_calls_back(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 10), 0);
    f->rec[0].hook = hook_reacquire_smaller;
    f->rec[0].ctx = f->b;
    f->rec[0].hook_u64 = 4;
    assert_int_equal(band_budget_acquire_async(f->b, 9, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_budget_shrink(f->b, 5), 0);
    assert_int_equal(f->rec[0].hook_rc, BAND_PENDING);
    assert_int_equal(band_waiter_is_pending(&f->rec[0].w), 1);
    assert_int_equal(band_budget_release(f->b, 9), 0); /* 5 debt, 4 to the waiter */
    assert_int_equal(atomic_load(&f->rec[0].count), 2);
    assert_int_equal(band_waiter_status(&f->rec[0].w), 0);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.in_use, 5); /* 1 still held + 4 granted */
    assert_u64_equal(st.available, 0);
    CHECK(f);
}

/* band_sem_reduce() on a budget's semaphore is band_budget_shrink(). */
static void test_sem_reduce_is_shrink(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 8), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 6, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_sem_reduce(f->s, 10), BAND_EINVAL); /* not below the capacity */
    assert_int_equal(band_sem_reduce(f->s, 5), 0);
    const int ids[] = {0};
    const int sts[] = {BAND_E2BIG};
    assert_log(&f->log, ids, sts, 1);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.capacity, 5);
    assert_u64_equal(st.debt, 3); /* 2 available went first; the head's 2 repaid 2 of 5 */
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.in_use, 8);
    assert_u64_equal(st.too_big, 1);
    assert_int_equal(band_sem_reduce(f->s, 0), 0);
    assert_int_equal(band_budget_release(f->b, 8), 0);
    assert_u64_equal(band_budget_available(f->b), 5);
    CHECK(f);
}

/* The semaphore view of a budget is destroyed with the budget, not on its own. */
static void test_sem_destroy_of_budget_view(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_sem_destroy(f->s), BAND_EINVAL);
    assert_u64_equal(band_budget_available(f->b), 10); /* still alive */
}

/* Forgetting a budget permit retires the capacity it stood for; queued requests that no
 * longer fit end with E2BIG. */
static void test_permit_forget_shrinks_budget(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, f->s, 4), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 7, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_budget_acquire_async(f->b, 2, &f->rec[1].w), BAND_PENDING);
    assert_u64_equal(stats_of(f->b).head_granted, 6);
    assert_u64_equal(band_permit_forget(&p), 4);
    assert_null(p.sem);
    /* Capacity 6: the 7-unit head fails, its 6 go on: 2 to the next, 4 available. */
    const int ids[] = {0, 1};
    const int sts[] = {BAND_E2BIG, 0};
    assert_log(&f->log, ids, sts, 2);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.capacity, 6);
    assert_u64_equal(st.available, 4);
    assert_u64_equal(st.in_use, 2);
    assert_u64_equal(st.debt, 0);
    assert_int_equal(band_budget_release(f->b, 2), 0);
    assert_int_equal(band_budget_release(f->b, 1), BAND_EOVERFLOW);
    CHECK(f);
}

/* Forgetting more units than the current capacity after a shrink left a debt: the units
 * that were to repay the debt are gone, so the debt must go too (nothing is held after the
 * forget), and a later grow must not repay a debt nobody owes. */
static void test_permit_forget_beyond_capacity_with_debt(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, f->s, 8), 0);
    assert_int_equal(band_budget_shrink(f->b, 5), 0); /* capacity 5, debt 3 */
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.debt, 3);
    assert_u64_equal(st.in_use, 8);
    assert_u64_equal(band_permit_forget(&p), 8);
    st = stats_of(f->b);
    assert_u64_equal(st.in_use, 0); /* nobody holds anything */
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.available, st.capacity);
    assert_int_equal(band_budget_grow(f->b, 10), 0);
    st = stats_of(f->b);
    assert_u64_equal(st.available, st.capacity);
    assert_u64_equal(st.in_use, 0);
    CHECK(f);
}

static void test_grow(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 10), 0);
    assert_int_equal(band_budget_shrink(f->b, 4), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 5, &f->rec[0].w), BAND_PENDING);
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.capacity, 6);
    assert_u64_equal(st.debt, 4);

    assert_int_equal(band_budget_grow(f->b, 6), 0); /* 4 repay the debt, 2 to the waiter */
    st = stats_of(f->b);
    assert_u64_equal(st.capacity, 12);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.head_granted, 2);
    assert_u64_equal(st.available, 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    assert_int_equal(band_budget_grow(f->b, 3), 0); /* completes it */
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(band_budget_release(f->b, 10), 0);
    st = stats_of(f->b);
    assert_u64_equal(st.capacity, 15);
    assert_u64_equal(st.available, 10);
    assert_u64_equal(st.in_use, 5);
    /* A request that was too big now fits. */
    assert_int_equal(band_budget_try_acquire(f->b, 11), BAND_EAGAIN);
    assert_int_equal(band_budget_try_acquire(f->b, 16), BAND_E2BIG);
    CHECK(f);
}

static void test_grow_args(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_grow(NULL, 1), BAND_EINVAL);
    assert_int_equal(band_budget_grow(f->b, 0), 0);
    assert_int_equal(band_budget_grow(f->b, MAXP - 10), 0);
    assert_u64_equal(band_budget_capacity(f->b), MAXP);
    assert_u64_equal(band_budget_available(f->b), MAXP);
    assert_int_equal(band_budget_grow(f->b, 1), BAND_EOVERFLOW);
    assert_u64_equal(band_budget_capacity(f->b), MAXP);
    assert_int_equal(band_budget_shrink(f->b, MAXP - 1), 0);
    assert_u64_equal(band_budget_capacity(f->b), 1);
    assert_u64_equal(band_budget_available(f->b), 1);
    CHECK(f);
}

static void test_close(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 8), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 4, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_budget_acquire_async(f->b, 1, &f->rec[1].w), BAND_PENDING);
    assert_int_equal(band_budget_close(f->b), 0);
    const int ids[] = {0, 1};
    const int sts[] = {BAND_ECLOSED, BAND_ECLOSED};
    assert_log(&f->log, ids, sts, 2);
    band_budget_stats st = stats_of(f->b);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.available, 2);
    assert_u64_equal(st.in_use, 8);
    assert_u64_equal(st.closed_fails, 2);
    assert_int_equal(band_sem_is_closed(f->s), 1);
    assert_int_equal(band_budget_release(f->b, 8), 0);
    assert_u64_equal(band_budget_available(f->b), 10);
    assert_int_equal(band_budget_close(f->b), 0);
    assert_int_equal(band_budget_close(NULL), BAND_EINVAL);
    CHECK(f);
}

/* ---------------------------------------------------------------------------------- */
/* budgeted buffers                                                                    */

static void test_alloc_free(void **state)
{
    struct fixture *f = *state;
    void *buf = NULL;
    assert_int_equal(band_budget_alloc(f->b, 7, &buf, BAND_FOREVER, NULL), 0);
    assert_non_null(buf);
    assert_int_equal((uintptr_t)buf % alignof(max_align_t), 0);
    memset(buf, 0x5a, 7); /* the payload is writable (ASan checks the bounds) */
    assert_int_equal(band_budget_buf_size(buf), 7);
    assert_ptr_equal(band_budget_buf_owner(buf), f->b);
    assert_u64_equal(band_budget_available(f->b), 3);
    assert_u64_equal(stats_of(f->b).in_use, 7);

    void *buf2 = NULL;
    assert_int_equal(band_budget_alloc(f->b, 3, &buf2, 0, NULL), 0);
    assert_u64_equal(band_budget_available(f->b), 0);
    band_budget_free(buf);
    assert_u64_equal(band_budget_available(f->b), 7);
    band_budget_free(buf2);
    assert_u64_equal(band_budget_available(f->b), 10);
    assert_u64_equal(stats_of(f->b).in_use, 0);
    band_budget_free(NULL);
    assert_int_equal(band_budget_buf_size(NULL), 0);
    assert_null(band_budget_buf_owner(NULL));
    CHECK(f);
}

static void test_alloc_zero(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 10), 0);
    void *buf = NULL;
    assert_int_equal(band_budget_alloc(f->b, 0, &buf, 0, NULL), 0); /* reserves nothing */
    assert_non_null(buf);
    assert_int_equal(band_budget_buf_size(buf), 0);
    assert_ptr_equal(band_budget_buf_owner(buf), f->b);
    band_budget_free(buf);
    assert_u64_equal(band_budget_available(f->b), 0);
    assert_int_equal(band_budget_release(f->b, 10), 0);
}

static void test_alloc_errors(void **state)
{
    struct fixture *f = *state;
    void *const sentinel = (void *)(uintptr_t)0x1234;
    void *buf = sentinel;
    assert_int_equal(band_budget_alloc(NULL, 1, &buf, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_budget_alloc(f->b, 1, NULL, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_budget_alloc(f->b, 11, &buf, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_ptr_equal(buf, sentinel);
    assert_u64_equal(stats_of(f->b).too_big, 1);

    assert_int_equal(band_budget_try_acquire(f->b, 6), 0);
    band_time t0 = band_now();
    assert_int_equal(band_budget_alloc(f->b, 5, &buf, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_budget_alloc(f->b, 5, &buf, t0 - BAND_SEC, NULL), BAND_ETIMEDOUT);
    assert_ptr_equal(buf, sentinel);
    assert_u64_equal(band_budget_available(f->b), 4);
    /* A past deadline still allocates when the units are there now. */
    assert_int_equal(band_budget_alloc(f->b, 4, &buf, 0, NULL), 0);
    assert_int_equal(band_budget_buf_size(buf), 4);
    band_budget_free(buf);

    assert_int_equal(band_budget_close(f->b), 0);
    buf = sentinel;
    assert_int_equal(band_budget_alloc(f->b, 1, &buf, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_ptr_equal(buf, sentinel);
    assert_int_equal(band_budget_release(f->b, 6), 0);
    CHECK(f);
}

static void test_alloc_enomem_returns_reservation(void **state)
{
    (void)state;
    if (test_under_sanitizer()) /* sanitizers abort on impossible allocations */
        skip();
    band_budget *b;
    assert_int_equal(band_budget_create(&b, MAXP, NULL), 0);
    void *buf = NULL;
    assert_int_equal(band_budget_alloc(b, (size_t)MAXP, &buf, BAND_FOREVER, NULL), BAND_ENOMEM);
    assert_null(buf);
    assert_u64_equal(band_budget_available(b), MAXP);
    assert_int_equal(band_budget_destroy(b), 0);
}

struct alloc_arg {
    band_budget *b;
    size_t len;
    void *buf;
};

static int alloc_thread(void *p)
{
    struct alloc_arg *a = p;
    return band_budget_alloc(a->b, a->len, &a->buf, BAND_FOREVER, NULL);
}

/* alloc blocks until a free returns enough units; the reservation is one acquisition. */
static void test_alloc_blocks_until_free(void **state)
{
    struct fixture *f = *state;
    void *big = NULL;
    assert_int_equal(band_budget_alloc(f->b, 8, &big, 0, NULL), 0);
    struct alloc_arg a = {f->b, 5, NULL};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, alloc_thread, &a), 0);
    struct sem_waiters_cond c = {f->s, 1};
    assert_true(test_wait_until(test_cond_sem_waiters, &c, 20 * BAND_SEC));
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.head_granted, 2);
    band_budget_free(big);
    assert_int_equal(test_thread_join(&t), 0);
    assert_non_null(a.buf);
    assert_int_equal(band_budget_buf_size(a.buf), 5);
    memset(a.buf, 1, 5);
    assert_u64_equal(band_budget_available(f->b), 5);
    band_budget_free(a.buf);
    assert_u64_equal(band_budget_available(f->b), 10);
    CHECK(f);
}

static void test_alloc_reserved(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_budget_try_acquire(f->b, 10), 0);
    assert_int_equal(band_budget_acquire_async(f->b, 6, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_budget_release(f->b, 10), 0);
    assert_int_equal(band_waiter_status(&f->rec[0].w), 0);
    void *buf = NULL;
    assert_int_equal(band_budget_alloc_reserved(f->b, 6, &buf), 0);
    assert_int_equal(band_budget_buf_size(buf), 6);
    assert_ptr_equal(band_budget_buf_owner(buf), f->b);
    assert_u64_equal(band_budget_available(f->b), 4); /* no second reservation */
    band_budget_free(buf);                            /* returns the adopted units */
    assert_u64_equal(band_budget_available(f->b), 10);
    assert_int_equal(band_budget_alloc_reserved(NULL, 1, &buf), BAND_EINVAL);
    assert_int_equal(band_budget_alloc_reserved(f->b, 1, NULL), BAND_EINVAL);
    CHECK(f);
}

static void test_realloc_grow_and_shrink(void **state)
{
    struct fixture *f = *state;
    char *buf = NULL;
    void *vp = NULL;
    assert_int_equal(band_budget_alloc(f->b, 3, &vp, 0, NULL), 0);
    buf = vp;
    memcpy(buf, "abc", 3);
    assert_int_equal(band_budget_realloc(&vp, 8, 0, NULL), 0); /* reserves 5 more */
    buf = vp;
    assert_int_equal(band_budget_buf_size(vp), 8);
    assert_memory_equal(buf, "abc", 3);
    memset(buf + 3, 'd', 5);
    assert_u64_equal(band_budget_available(f->b), 2);
    assert_u64_equal(stats_of(f->b).in_use, 8);

    assert_int_equal(band_budget_realloc(&vp, 2, 0, NULL), 0); /* returns 6 */
    buf = vp;
    assert_int_equal(band_budget_buf_size(vp), 2);
    assert_memory_equal(buf, "ab", 2);
    assert_u64_equal(band_budget_available(f->b), 8);

    assert_int_equal(band_budget_realloc(&vp, 2, 0, NULL), 0); /* same size: nothing changes */
    assert_u64_equal(band_budget_available(f->b), 8);
    assert_int_equal(band_budget_realloc(&vp, 0, 0, NULL), 0);
    assert_int_equal(band_budget_buf_size(vp), 0);
    assert_u64_equal(band_budget_available(f->b), 10);
    band_budget_free(vp);
    assert_u64_equal(band_budget_available(f->b), 10);
    CHECK(f);
}

static void test_realloc_failure_keeps_buffer(void **state)
{
    struct fixture *f = *state;
    void *vp = NULL;
    assert_int_equal(band_budget_alloc(f->b, 4, &vp, 0, NULL), 0);
    memcpy(vp, "wxyz", 4);
    void *const orig = vp;
    assert_int_equal(band_budget_try_acquire(f->b, 4), 0); /* 2 left */

    /* No room and a past deadline: ETIMEDOUT, buffer and reservation unchanged. */
    assert_int_equal(band_budget_realloc(&vp, 7, 0, NULL), BAND_ETIMEDOUT);
    assert_ptr_equal(vp, orig);
    assert_int_equal(band_budget_buf_size(vp), 4);
    assert_memory_equal(vp, "wxyz", 4);
    assert_u64_equal(band_budget_available(f->b), 2);

    /* Larger than the capacity: E2BIG at once, counted. */
    assert_int_equal(band_budget_realloc(&vp, 11, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_ptr_equal(vp, orig);
    assert_int_equal(band_budget_buf_size(vp), 4);
    assert_u64_equal(band_budget_available(f->b), 2);
    assert_u64_equal(stats_of(f->b).too_big, 1);

    assert_int_equal(band_budget_realloc(NULL, 1, 0, NULL), BAND_EINVAL);
    void *nullbuf = NULL;
    assert_int_equal(band_budget_realloc(&nullbuf, 1, 0, NULL), BAND_EINVAL);

    /* Closed: growing fails, the buffer stays; shrinking and freeing still work. */
    assert_int_equal(band_budget_close(f->b), 0);
    assert_int_equal(band_budget_realloc(&vp, 5, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_ptr_equal(vp, orig);
    assert_int_equal(band_budget_buf_size(vp), 4);
    assert_int_equal(band_budget_realloc(&vp, 1, BAND_FOREVER, NULL), 0);
    assert_memory_equal(vp, "w", 1);
    assert_u64_equal(band_budget_available(f->b), 5);
    band_budget_free(vp);
    assert_u64_equal(band_budget_available(f->b), 6);
    assert_int_equal(band_budget_release(f->b, 4), 0);
    assert_u64_equal(band_budget_available(f->b), 10);
    CHECK(f);
}

/* A size above the capacity is BAND_E2BIG at once, whatever the size: even one too big
 * for the allocator's arithmetic, which must not turn into BAND_ENOMEM. Nothing is
 * reserved or allocated, and the buffer is unchanged. */
static void test_realloc_huge_is_e2big(void **state)
{
    struct fixture *f = *state;
    void *vp = NULL;
    assert_int_equal(band_budget_alloc(f->b, 4, &vp, 0, NULL), 0);
    memcpy(vp, "wxyz", 4);
    void *const orig = vp;
    const size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - sizeof(max_align_t)};
    for (size_t i = 0; i < TEST_COUNTOF(huge); i++) {
        assert_int_equal(band_budget_alloc(f->b, huge[i], &vp, BAND_FOREVER, NULL), BAND_E2BIG);
        assert_ptr_equal(vp, orig);
        if (band_budget_realloc(&vp, huge[i], BAND_FOREVER, NULL) != BAND_E2BIG)
            fail_msg("realloc to SIZE_MAX - %zu: not BAND_E2BIG", SIZE_MAX - huge[i]);
        assert_ptr_equal(vp, orig);
        assert_int_equal(band_budget_buf_size(vp), 4);
        assert_memory_equal(vp, "wxyz", 4);
    }
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.too_big, 2 * TEST_COUNTOF(huge));
    assert_u64_equal(st.available, 6);
    assert_u64_equal(st.in_use, 4);
    band_budget_free(vp);
    assert_u64_equal(band_budget_available(f->b), 10);
    CHECK(f);
}

/* alloc_reserved adopts units the caller holds; callers can hold at most the capacity
 * plus what a shrink left owed. A size above that is a reservation that cannot exist:
 * BAND_E2BIG before any allocation, counted. One within it is adopted, even above the
 * capacity after a shrink. */
static void test_alloc_reserved_beyond_what_can_be_held(void **state)
{
    struct fixture *f = *state;
    void *const sentinel = (void *)(uintptr_t)0x1234;
    void *buf = sentinel;
    assert_int_equal(band_budget_alloc_reserved(f->b, 11, &buf), BAND_E2BIG);
    assert_ptr_equal(buf, sentinel);
    assert_int_equal(band_budget_alloc_reserved(f->b, SIZE_MAX, &buf), BAND_E2BIG);
    assert_ptr_equal(buf, sentinel);
    assert_u64_equal(stats_of(f->b).too_big, 2);

    assert_int_equal(band_budget_try_acquire(f->b, 8), 0);
    assert_int_equal(band_budget_shrink(f->b, 5), 0); /* capacity 5, debt 3 */
    assert_int_equal(band_budget_alloc_reserved(f->b, 9, &buf), BAND_E2BIG);
    assert_ptr_equal(buf, sentinel);
    assert_int_equal(band_budget_alloc_reserved(f->b, 8, &buf), 0); /* the 8 held */
    assert_int_equal(band_budget_buf_size(buf), 8);
    memset(buf, 7, 8);
    assert_u64_equal(stats_of(f->b).too_big, 3);
    band_budget_free(buf); /* 3 repay the debt, 5 become available */
    band_budget_stats st = stats_of(f->b);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.available, 5);
    assert_u64_equal(st.in_use, 0);
    CHECK(f);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_args),
        T(test_fresh_stats),
        T(test_stats_match_sem_view),
        T(test_set_name),
        T(test_is_closed),
        T(test_opts),
        T(test_destroy_busy),
        T(test_in_use),
        T(test_e2big_at_once),
        T(test_check_order),
        T(test_release_beyond_capacity),
        T(test_release_beyond_capacity_with_waiter),
        T(test_release_counts_head_partial_grant),
        T(test_release_counts_head_partial_grant_with_debt),
        T(test_release_races_capacity_change),
        T(test_held_release_races_capacity_change),
        T(test_head_of_line_blocking),
        T(test_shrink_args),
        T(test_shrink_creates_debt),
        T(test_shrink_fails_too_big_waiters),
        T(test_shrink_wake_calls_back),
        T(test_sem_reduce_is_shrink),
        T(test_sem_destroy_of_budget_view),
        T(test_permit_forget_shrinks_budget),
        T(test_permit_forget_beyond_capacity_with_debt),
        T(test_grow),
        T(test_grow_args),
        T(test_close),
        T(test_alloc_free),
        T(test_alloc_zero),
        T(test_alloc_errors),
        cmocka_unit_test(test_alloc_enomem_returns_reservation),
        T(test_alloc_blocks_until_free),
        T(test_alloc_reserved),
        T(test_realloc_grow_and_shrink),
        T(test_realloc_failure_keeps_buffer),
        T(test_realloc_huge_is_e2big),
        T(test_alloc_reserved_beyond_what_can_be_held),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

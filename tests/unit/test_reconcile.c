/* SPDX-License-Identifier: MIT */
/*
 * test_reconcile.c - band_permit_reconcile() (permit.h): estimate, then reconcile a plain
 * permit with what the work used. A surplus is released (waking waiters), a shortfall is
 * charged at once from the available units and then as debt that later releases repay
 * before any waiter, never waiting, on semaphores and budgets alike, open or closed.
 * (band_admit_reconcile(), the same for a multi-budget grant, is in test_admit.c.)
 *
 * Fixture: a plain semaphore S (5 permits) and a budget B (capacity 10). Deterministic,
 * single-threaded; band__sem_check() after every step.
 */
#include "test.h"

#include "prim/sem_internal.h"

struct fixture {
    band_sem *s;
    band_budget *b;
    struct wake_log log;
    struct wake_rec rec[2];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_sem_create(&f->s, 5, NULL) != 0 || band_budget_create(&f->b, 10, NULL) != 0)
        return -1;
    wake_log_init(&f->log);
    for (int i = 0; i < 2; i++)
        wake_rec_init(&f->rec[i], 100 + i, &f->log);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    int bad = band_sem_destroy(f->s) != 0;
    bad |= band_budget_destroy(f->b) != 0;
    free(f);
    return bad ? -1 : 0;
}

static band_sem_stats stats_of(const band_sem *s)
{
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    return st;
}

#define CHECK(f)                                                                                   \
    do {                                                                                           \
        assert_int_equal(band__sem_check((f)->s), 0);                                              \
        assert_int_equal(band__sem_check(band_budget_sem((f)->b)), 0);                             \
    } while (0)

static void test_surplus_released(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, f->s, 4), 0);
    assert_int_equal(band_sem_acquire_async(f->s, 2, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_permit_reconcile(&p, 3), 0); /* 1 back: the waiter has its 2 */
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(atomic_load(&f->rec[0].status), 0);
    assert_ptr_equal(p.sem, f->s);
    assert_u64_equal(p.count, 3);
    assert_u64_equal(band_sem_available(f->s), 0);
    assert_int_equal(band_permit_reconcile(&p, 3), 0); /* no change */
    assert_u64_equal(p.count, 3);
    assert_int_equal(band_permit_reconcile(&p, 0), 0); /* used nothing: all back, empty */
    assert_ptr_equal(p.sem, NULL);
    assert_u64_equal(p.count, 0);
    assert_u64_equal(band_sem_available(f->s), 3);
    assert_int_equal(band_sem_release(f->s, 2), 0);
    assert_u64_equal(band_sem_available(f->s), 5);
    CHECK(f);
}

static void test_shortfall_from_available(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, f->s, 1), 0);
    assert_int_equal(band_permit_reconcile(&p, 4), 0);
    assert_u64_equal(p.count, 4);
    band_sem_stats st = stats_of(f->s);
    assert_u64_equal(st.available, 1);
    assert_u64_equal(st.debt, 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->s), 5);
    CHECK(f);
}

static void test_shortfall_becomes_debt(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, f->s, 4), 0);
    /* Used 8: the 1 available is taken, 3 are owed. */
    assert_int_equal(band_permit_reconcile(&p, 8), 0);
    assert_u64_equal(p.count, 8);
    band_sem_stats st = stats_of(f->s);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.debt, 3);
    assert_int_equal(band_sem_try_acquire(f->s, 1), BAND_EAGAIN);
    assert_int_equal(band_sem_acquire_async(f->s, 1, &f->rec[0].w), BAND_PENDING);
    /* Releases repay the debt before the waiter. */
    band_permit part = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_split(&p, 3, &part), 0);
    assert_int_equal(band_permit_release(&part), 0);
    assert_u64_equal(stats_of(f->s).debt, 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    assert_int_equal(band_permit_release(&p), 0); /* 5: 1 to the waiter, 4 available */
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_u64_equal(band_sem_available(f->s), 4);
    assert_int_equal(band_sem_release(f->s, 1), 0);
    assert_u64_equal(band_sem_available(f->s), 5);
    CHECK(f);
}

static void test_never_waits(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, f->s, 5), 0);
    assert_int_equal(band_sem_acquire_async(f->s, 2, &f->rec[0].w), BAND_PENDING);
    assert_int_equal(band_permit_reconcile(&p, 7), 0); /* all owed, at once */
    band_sem_stats st = stats_of(f->s);
    assert_u64_equal(st.debt, 2);
    assert_u64_equal(st.waiters, 1);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    /* Closed: what was used is still recorded. */
    assert_int_equal(band_sem_close(f->s), 0);
    assert_int_equal(atomic_load(&f->rec[0].status), BAND_ECLOSED);
    assert_int_equal(band_permit_reconcile(&p, 9), 0);
    assert_u64_equal(stats_of(f->s).debt, 4);
    assert_int_equal(band_permit_release(&p), 0);
    st = stats_of(f->s);
    assert_u64_equal(st.available, 5);
    assert_u64_equal(st.debt, 0);
    CHECK(f);
}

static void test_budget_capacity_kept(void **state)
{
    struct fixture *f = *state;
    band_sem *bs = band_budget_sem(f->b);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, bs, 8), 0);
    /* Used 15 of a budget of 10: 2 available taken, 5 owed; the capacity stays 10. */
    assert_int_equal(band_permit_reconcile(&p, 15), 0);
    band_sem_stats st = stats_of(bs);
    assert_u64_equal(st.capacity, 10);
    assert_u64_equal(st.available, 0);
    assert_u64_equal(st.debt, 5);
    assert_u64_equal(st.in_use, 15);
    assert_int_equal(band_budget_try_acquire(f->b, 1), BAND_EAGAIN);
    assert_int_equal(band_permit_reconcile(&p, 12), 0); /* a surplus of 3 repays debt */
    st = stats_of(bs);
    assert_u64_equal(st.debt, 2);
    assert_u64_equal(st.in_use, 12);
    assert_int_equal(band_permit_release(&p), 0);
    st = stats_of(bs);
    assert_u64_equal(st.available, 10);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.in_use, 0);
    CHECK(f);
}

static void test_errors_change_nothing(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_reconcile(NULL, 1), BAND_EINVAL);
    assert_int_equal(band_permit_reconcile(&p, 1), BAND_EINVAL); /* empty: no semaphore */
    assert_int_equal(band_permit_try_acquire(&p, f->s, 1), 0);
    assert_int_equal(band_permit_reconcile(&p, BAND_MAX_UNITS + 1), BAND_EINVAL);
    assert_u64_equal(p.count, 1);
    /* The debt may not pass the maximum. */
    assert_int_equal(band_sem_reduce(f->s, BAND_MAX_UNITS), 0); /* 4 taken */
    assert_u64_equal(stats_of(f->s).debt, BAND_MAX_UNITS - 4);
    assert_int_equal(band_permit_reconcile(&p, 6), BAND_EOVERFLOW);
    assert_u64_equal(p.count, 1);
    assert_u64_equal(stats_of(f->s).debt, BAND_MAX_UNITS - 4);
    assert_int_equal(band_permit_reconcile(&p, 5), 0);
    assert_u64_equal(stats_of(f->s).debt, BAND_MAX_UNITS);
    assert_int_equal(band_permit_release(&p), 0);
    CHECK(f);
    /* A surplus the budget refuses (units released by someone else) stays in the permit. */
    band_permit q = BAND_PERMIT_INIT;
    band_sem *bs = band_budget_sem(f->b);
    assert_int_equal(band_permit_adopt(&q, bs, 4), 0); /* never acquired: all 10 free */
    assert_int_equal(band_permit_reconcile(&q, 1), BAND_EOVERFLOW);
    assert_u64_equal(q.count, 4);
    assert_u64_equal(band_sem_available(bs), 10);
    CHECK(f);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_surplus_released), T(test_shortfall_from_available), T(test_shortfall_becomes_debt),
        T(test_never_waits),      T(test_budget_capacity_kept),     T(test_errors_change_nothing),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * test_permit.c - permits as values (permit.h): acquire/adopt into empty permits only,
 * idempotent release, split, merge (same semaphore, overflow), forget, and
 * BAND_SCOPED_PERMIT on every path out of a block.
 */
#include "test.h"

#include "prim/sem_internal.h"

#define MAXP BAND_MAX_UNITS

struct fixture {
    band_sem *sem;
    band_sem *other;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_sem_create(&f->sem, 10, NULL) != 0 || band_sem_create(&f->other, 10, NULL) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    band_sem_close(f->sem);
    band_sem_close(f->other);
    int rc = band_sem_destroy(f->sem) | band_sem_destroy(f->other);
    free(f);
    return rc == 0 ? 0 : -1;
}

#define CHECK(s) assert_int_equal(band__sem_check(s), 0)

static void assert_permit(const band_permit *p, const band_sem *s, uint64_t count)
{
    assert_ptr_equal(p->sem, s);
    assert_u64_equal(p->count, count);
}

static void test_init_is_empty(void **state)
{
    (void)state;
    band_permit p = BAND_PERMIT_INIT;
    assert_null(p.sem);
    assert_u64_equal(p.count, 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_permit_forget(&p), 0);
}

static void test_try_acquire(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, f->sem, 4), 0);
    assert_permit(&p, f->sem, 4);
    assert_u64_equal(band_sem_available(f->sem), 6);

    /* Non-empty: refused, nothing taken, nothing overwritten. */
    assert_int_equal(band_permit_try_acquire(&p, f->sem, 1), BAND_EINVAL);
    assert_int_equal(band_permit_try_acquire(&p, f->other, 1), BAND_EINVAL);
    assert_permit(&p, f->sem, 4);
    assert_u64_equal(band_sem_available(f->sem), 6);
    assert_u64_equal(band_sem_available(f->other), 10);

    band_permit q = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&q, f->sem, 7), BAND_EAGAIN);
    assert_null(q.sem);
    assert_u64_equal(q.count, 0);
    assert_int_equal(band_permit_try_acquire(NULL, f->sem, 1), BAND_EINVAL);
    assert_int_equal(band_permit_try_acquire(&q, NULL, 1), BAND_EINVAL);
    assert_int_equal(band_permit_try_acquire(&q, f->sem, MAXP + 1), BAND_EINVAL);
    assert_null(q.sem);
    assert_u64_equal(band_sem_available(f->sem), 6);

    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 10);
    CHECK(f->sem);
}

static void test_acquire_blocking(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_acquire(&p, f->sem, 10, BAND_FOREVER, NULL), 0);
    assert_permit(&p, f->sem, 10);
    assert_int_equal(band_permit_acquire(&p, f->sem, 1, BAND_FOREVER, NULL), BAND_EINVAL);
    band_permit q = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_acquire(&q, f->sem, 1, 0, NULL), BAND_ETIMEDOUT);
    assert_null(q.sem);
    assert_int_equal(band_permit_acquire(NULL, f->sem, 1, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_permit_release(&p), 0);
    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(band_permit_acquire(&q, f->sem, 1, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_null(q.sem);
    assert_u64_equal(band_sem_available(f->sem), 10);
}

/* Adopt the permits an async acquisition was granted. */
static void test_adopt_after_async(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 0, NULL);
    assert_int_equal(band_sem_try_acquire(f->sem, 10), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 3, &r.w), BAND_PENDING);
    assert_int_equal(band_sem_release(f->sem, 5), 0);
    assert_int_equal(atomic_load(&r.count), 1);
    assert_int_equal(band_waiter_status(&r.w), 0);

    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_adopt(&p, f->sem, 3), 0);
    assert_permit(&p, f->sem, 3);
    assert_int_equal(band_permit_adopt(&p, f->sem, 1), BAND_EINVAL); /* not empty */
    assert_permit(&p, f->sem, 3);
    band_permit q = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_adopt(NULL, f->sem, 1), BAND_EINVAL);
    assert_int_equal(band_permit_adopt(&q, NULL, 1), BAND_EINVAL);
    assert_null(q.sem);

    assert_u64_equal(band_sem_available(f->sem), 2);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 5);
    CHECK(f->sem);
}

static void test_release_idempotent(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, f->sem, 3), 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_null(p.sem);
    assert_u64_equal(p.count, 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 10);
    /* An emptied permit can be filled again. */
    assert_int_equal(band_permit_try_acquire(&p, f->sem, 2), 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 10);
}

/* Releasing a permit completes waiters like any release. */
static void test_release_wakes_waiter(void **state)
{
    struct fixture *f = *state;
    struct wake_rec r;
    wake_rec_init(&r, 0, NULL);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, f->sem, 10), 0);
    assert_int_equal(band_sem_acquire_async(f->sem, 4, &r.w), BAND_PENDING);
    assert_int_equal(band_permit_release(&p), 0);
    assert_int_equal(atomic_load(&r.count), 1);
    assert_u64_equal(band_sem_available(f->sem), 6);
    CHECK(f->sem);
}

static void test_release_overflow_keeps_permits(void **state)
{
    struct fixture *f = *state;
    band_sem *s;
    assert_int_equal(band_sem_create(&s, MAXP, NULL), 0);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_adopt(&p, s, 2), 0); /* permits it never handed out */
    assert_int_equal(band_permit_release(&p), BAND_EOVERFLOW);
    assert_permit(&p, s, 2);
    assert_u64_equal(band_sem_available(s), MAXP);
    assert_int_equal(band_sem_try_acquire(s, 2), 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_null(p.sem);
    assert_u64_equal(band_sem_available(s), MAXP);
    assert_int_equal(band_sem_destroy(s), 0);
    (void)f;
}

static void test_split(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT, out = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, f->sem, 5), 0);

    assert_int_equal(band_permit_split(&p, 6, &out), BAND_EINVAL); /* more than it holds */
    assert_permit(&p, f->sem, 5);
    assert_null(out.sem);
    assert_u64_equal(out.count, 0);

    assert_int_equal(band_permit_split(&p, 2, &out), 0);
    assert_permit(&p, f->sem, 3);
    assert_permit(&out, f->sem, 2);

    band_permit full = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&full, f->sem, 1), 0);
    assert_int_equal(band_permit_split(&p, 1, &full), BAND_EINVAL); /* out not empty */
    assert_permit(&p, f->sem, 3);
    assert_permit(&full, f->sem, 1);

    band_permit empty = BAND_PERMIT_INIT, out2 = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_split(&empty, 1, &out2), BAND_EINVAL); /* p empty */
    assert_int_equal(band_permit_split(NULL, 1, &out2), BAND_EINVAL);
    assert_int_equal(band_permit_split(&p, 1, NULL), BAND_EINVAL);
    assert_null(out2.sem);

    /* Releasing the parts returns exactly what was taken. */
    assert_u64_equal(band_sem_available(f->sem), 4);
    assert_int_equal(band_permit_release(&out), 0);
    assert_int_equal(band_permit_release(&full), 0);
    assert_u64_equal(band_sem_available(f->sem), 7);
    assert_int_equal(band_permit_split(&p, 3, &out), 0); /* all of it: p is empty */
    assert_u64_equal(p.count, 0);
    assert_null(p.sem);
    assert_permit(&out, f->sem, 3);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 7);
    assert_int_equal(band_permit_release(&out), 0);
    assert_u64_equal(band_sem_available(f->sem), 10);
    CHECK(f->sem);
}

static void test_merge(void **state)
{
    struct fixture *f = *state;
    band_permit a = BAND_PERMIT_INIT, b = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&a, f->sem, 3), 0);
    assert_int_equal(band_permit_try_acquire(&b, f->sem, 4), 0);
    assert_int_equal(band_permit_merge(&a, &b), 0);
    assert_permit(&a, f->sem, 7);
    assert_null(b.sem);
    assert_u64_equal(b.count, 0);

    /* Empty into non-empty and non-empty into empty both work. */
    band_permit e = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_merge(&a, &e), 0);
    assert_permit(&a, f->sem, 7);
    assert_int_equal(band_permit_merge(&e, &a), 0);
    assert_permit(&e, f->sem, 7);
    assert_null(a.sem);
    assert_u64_equal(a.count, 0);

    assert_int_equal(band_permit_merge(NULL, &e), BAND_EINVAL);
    assert_int_equal(band_permit_merge(&e, NULL), BAND_EINVAL);
    assert_permit(&e, f->sem, 7);

    assert_int_equal(band_permit_release(&e), 0);
    assert_u64_equal(band_sem_available(f->sem), 10);
    CHECK(f->sem);
}

static void test_merge_different_sems(void **state)
{
    struct fixture *f = *state;
    band_permit a = BAND_PERMIT_INIT, b = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&a, f->sem, 3), 0);
    assert_int_equal(band_permit_try_acquire(&b, f->other, 4), 0);
    assert_int_equal(band_permit_merge(&a, &b), BAND_EINVAL);
    assert_permit(&a, f->sem, 3); /* nothing changed, nothing lost */
    assert_permit(&b, f->other, 4);
    assert_int_equal(band_permit_release(&a), 0);
    assert_int_equal(band_permit_release(&b), 0);
    assert_u64_equal(band_sem_available(f->sem), 10);
    assert_u64_equal(band_sem_available(f->other), 10);
}

static void test_merge_overflow(void **state)
{
    struct fixture *f = *state;
    band_permit a = BAND_PERMIT_INIT, b = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_adopt(&a, f->sem, MAXP), 0);
    assert_int_equal(band_permit_adopt(&b, f->sem, 1), 0);
    assert_int_equal(band_permit_merge(&a, &b), BAND_EOVERFLOW);
    assert_permit(&a, f->sem, MAXP);
    assert_permit(&b, f->sem, 1);
    assert_int_equal(band_permit_merge(&b, &a), BAND_EOVERFLOW);
    assert_permit(&a, f->sem, MAXP);
    assert_permit(&b, f->sem, 1);

    /* Exactly MAXP fits. */
    band_permit c = BAND_PERMIT_INIT, d = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_adopt(&c, f->sem, MAXP - 1), 0);
    assert_int_equal(band_permit_merge(&c, &b), 0);
    assert_permit(&c, f->sem, MAXP);
    assert_int_equal(band_permit_adopt(&d, f->sem, 0), 0);
    assert_int_equal(band_permit_merge(&c, &d), 0);
    assert_u64_equal(c.count, MAXP);

    /* Adopted for the test only: forget rather than release. */
    assert_u64_equal(band_permit_forget(&a), MAXP);
    assert_u64_equal(band_permit_forget(&c), MAXP);
    assert_u64_equal(band_sem_available(f->sem), 10);
}

static void test_forget(void **state)
{
    struct fixture *f = *state;
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, f->sem, 4), 0);
    assert_u64_equal(band_permit_forget(&p), 4);
    assert_null(p.sem);
    assert_u64_equal(p.count, 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 6); /* gone for good */
    assert_u64_equal(band_permit_forget(NULL), 0);
    assert_u64_equal(band_permit_forget(&p), 0);
}

/* A budget's permit cannot hold more than the budget's callers can: its capacity plus
 * what a shrink left owed. Adopting more is BAND_E2BIG, counted, and the permit stays
 * empty; units held across a shrink can still be adopted. */
static void test_budget_adopt_beyond_capacity(void **state)
{
    (void)state;
    band_budget *b;
    assert_int_equal(band_budget_create(&b, 10, NULL), 0);
    band_sem *s = band_budget_sem(b);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_adopt(&p, s, 11), BAND_E2BIG);
    assert_null(p.sem);
    assert_u64_equal(p.count, 0);
    assert_int_equal(band_permit_adopt(&p, s, MAXP), BAND_E2BIG);
    assert_int_equal(band_permit_adopt(&p, s, MAXP + 1), BAND_EINVAL);
    assert_null(p.sem);
    {
        /* Nothing to release on the way out: the budget keeps its capacity. */
        BAND_SCOPED_PERMIT band_permit q = BAND_PERMIT_INIT;
        assert_int_equal(band_permit_adopt(&q, s, 12), BAND_E2BIG);
    }
    assert_u64_equal(band_budget_capacity(b), 10);
    assert_u64_equal(band_budget_available(b), 10);

    assert_int_equal(band_budget_try_acquire(b, 8), 0);
    assert_int_equal(band_budget_shrink(b, 5), 0); /* capacity 5, debt 3 */
    assert_int_equal(band_permit_adopt(&p, s, 9), BAND_E2BIG);
    assert_int_equal(band_permit_adopt(&p, s, 8), 0); /* the 8 held across the shrink */
    assert_int_equal(band_permit_release(&p), 0);
    band_budget_stats st;
    assert_int_equal(band_budget_get_stats(b, &st), 0);
    assert_u64_equal(st.too_big, 4);
    assert_u64_equal(st.capacity, 5);
    assert_u64_equal(st.available, 5);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.in_use, 0);
    CHECK(s);
    assert_int_equal(band_budget_destroy(b), 0);
}

/* A budget's semaphore keeps its capacity check through permits. */
static void test_budget_sem_permit(void **state)
{
    (void)state;
    band_budget *b;
    assert_int_equal(band_budget_create(&b, 100, NULL), 0);
    band_sem *s = band_budget_sem(b);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&p, s, 101), BAND_E2BIG);
    assert_int_equal(band_permit_acquire(&p, s, 101, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_null(p.sem);
    assert_int_equal(band_permit_acquire(&p, s, 60, BAND_FOREVER, NULL), 0);
    band_permit q = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_try_acquire(&q, s, 41), BAND_EAGAIN);
    assert_int_equal(band_permit_split(&p, 20, &q), 0);
    assert_u64_equal(band_budget_available(b), 40);
    assert_int_equal(band_permit_release(&q), 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_budget_available(b), 100);
    band_budget_stats st;
    assert_int_equal(band_budget_get_stats(b, &st), 0);
    assert_u64_equal(st.too_big, 2);
    assert_u64_equal(st.in_use, 0);
    assert_int_equal(band_budget_destroy(b), 0);
}

/* ---------------------------------------------------------------------------------- */
/* BAND_SCOPED_PERMIT                                                                  */

#ifdef BAND_SCOPED_PERMIT

/* Returns early from inside the scope: the permit is released. */
static int scoped_early_return(band_sem *s, int fail_at, uint64_t *seen_avail)
{
    BAND_SCOPED_PERMIT band_permit p = BAND_PERMIT_INIT;
    if (band_permit_try_acquire(&p, s, 3) != 0)
        return -1;
    *seen_avail = band_sem_available(s);
    if (fail_at == 1)
        return 1;
    BAND_SCOPED_PERMIT band_permit q = BAND_PERMIT_INIT;
    if (band_permit_try_acquire(&q, s, 2) != 0)
        return -2;
    if (fail_at == 2)
        return 2;
    return 0;
}

/* Leaves the block with goto, break and continue. */
static uint64_t scoped_goto(band_sem *s)
{
    uint64_t inside = 0;
    {
        BAND_SCOPED_PERMIT band_permit p = BAND_PERMIT_INIT;
        if (band_permit_try_acquire(&p, s, 4) != 0)
            goto out;
        inside = band_sem_available(s);
        if (inside < 100)
            goto out; /* leaves the block: cleanup runs */
        inside = 0;
    }
out:
    return inside;
}

static unsigned scoped_loop(band_sem *s, uint64_t *max_held)
{
    unsigned iterations = 0;
    *max_held = 0;
    for (int i = 0; i < 10; i++) {
        BAND_SCOPED_PERMIT band_permit p = BAND_PERMIT_INIT;
        if (band_permit_try_acquire(&p, s, 2) != 0)
            break;
        iterations++;
        uint64_t held = 10 - band_sem_available(s);
        if (held > *max_held)
            *max_held = held;
        if (i % 2 == 0)
            continue; /* released before the next iteration */
        if (i == 7)
            break; /* released on the way out */
    }
    return iterations;
}

/* A permit moved out of the scope survives it. */
static band_permit scoped_move_out(band_sem *s)
{
    band_permit kept = BAND_PERMIT_INIT;
    BAND_SCOPED_PERMIT band_permit p = BAND_PERMIT_INIT;
    if (band_permit_try_acquire(&p, s, 5) == 0) {
        kept = p;
        p = (band_permit)BAND_PERMIT_INIT;
    }
    return kept;
}

static void test_scoped_permit(void **state)
{
    struct fixture *f = *state;
    uint64_t seen = 0;
    assert_int_equal(scoped_early_return(f->sem, 1, &seen), 1);
    assert_u64_equal(seen, 7);
    assert_u64_equal(band_sem_available(f->sem), 10);
    assert_int_equal(scoped_early_return(f->sem, 2, &seen), 2);
    assert_u64_equal(band_sem_available(f->sem), 10);
    assert_int_equal(scoped_early_return(f->sem, 0, &seen), 0);
    assert_u64_equal(band_sem_available(f->sem), 10);

    /* The failure path: nothing acquired, nothing released. */
    assert_int_equal(band_sem_try_acquire(f->sem, 9), 0);
    assert_int_equal(scoped_early_return(f->sem, 0, &seen), -1);
    assert_u64_equal(band_sem_available(f->sem), 1);
    assert_int_equal(band_sem_release(f->sem, 3), 0);
    assert_int_equal(scoped_early_return(f->sem, 0, &seen), -2); /* q failed, p released */
    assert_u64_equal(seen, 1);
    assert_u64_equal(band_sem_available(f->sem), 4);
    assert_int_equal(band_sem_release(f->sem, 6), 0);

    assert_u64_equal(scoped_goto(f->sem), 6);
    assert_u64_equal(band_sem_available(f->sem), 10);

    uint64_t max_held;
    assert_int_equal(scoped_loop(f->sem, &max_held), 8);
    assert_u64_equal(max_held, 2); /* one iteration's permit at a time */
    assert_u64_equal(band_sem_available(f->sem), 10);

    band_permit kept = scoped_move_out(f->sem);
    assert_permit(&kept, f->sem, 5);
    assert_u64_equal(band_sem_available(f->sem), 5);
    assert_int_equal(band_permit_release(&kept), 0);
    assert_u64_equal(band_sem_available(f->sem), 10);
    CHECK(f->sem);
}

/* The scoped cleanup forgets permits that cannot be returned. */
static void test_release_scoped_overflow_forgets(void **state)
{
    (void)state;
    band_sem *s;
    assert_int_equal(band_sem_create(&s, MAXP, NULL), 0);
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_adopt(&p, s, 3), 0);
    band_permit_release_scoped(&p);
    assert_null(p.sem);
    assert_u64_equal(p.count, 0);
    assert_u64_equal(band_sem_available(s), MAXP);
    band_permit_release_scoped(&p); /* empty: nothing */
    assert_int_equal(band_sem_destroy(s), 0);
}
#endif

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_is_empty),
        T(test_try_acquire),
        T(test_acquire_blocking),
        T(test_adopt_after_async),
        T(test_release_idempotent),
        T(test_release_wakes_waiter),
        T(test_release_overflow_keeps_permits),
        T(test_split),
        T(test_merge),
        T(test_merge_different_sems),
        T(test_merge_overflow),
        T(test_forget),
        cmocka_unit_test(test_budget_sem_permit),
        cmocka_unit_test(test_budget_adopt_beyond_capacity),
#ifdef BAND_SCOPED_PERMIT
        T(test_scoped_permit),
        cmocka_unit_test(test_release_scoped_overflow_forgets),
#endif
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

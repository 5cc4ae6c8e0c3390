/* SPDX-License-Identifier: MIT */
/*
 * test_sem_inline.c - the inline fast paths of band/sem.h against the exported functions.
 *
 * A program built against the header calls band_sem_try_acquire() and band_sem_release()
 * through static inline code over the semaphore's public prefix; one built with
 * BAND_NO_INLINE calls the exported functions. The same scripted runs (sem_inline_script.h:
 * every state the fast paths must tell apart, on a semaphore and on a budget's semaphore)
 * go through both, and every answer, permit count and counter must be the same. The
 * prefix layout itself is checked too: the state word and the flags word are where the
 * header says, with the encoding it states.
 */
#include "test.h"

#include <string.h>

#define SEM_INLINE_SCRIPT sem_inline_script_inline
#include "sem_inline_script.h"

#if (defined(__GNUC__) || defined(__clang__)) && !defined(BAND_SEM_HAVE_INLINE)
#error "band/sem.h should provide the inline fast path with this compiler"
#endif

static struct sem_inline_log log_inline, log_exported;

static void compare_runs(uint64_t seed, int budget)
{
    assert_int_equal(0, sem_inline_script_inline(seed, budget, &log_inline));
    assert_int_equal(0, sem_inline_script_exported(seed, budget, &log_exported));
    assert_true(log_inline.n > 1000);
    assert_int_equal(log_inline.n, log_exported.n);
    for (int i = 0; i < log_inline.n; i++) {
        const struct sem_inline_entry *a = &log_inline.e[i], *b = &log_exported.e[i];
        if (memcmp(a, b, sizeof(*a)) != 0)
            fail_msg("seed %llu budget %d, entry %d: inline rc %d avail %llu refusals %llu "
                     "too_big %llu debt %llu; exported rc %d avail %llu refusals %llu "
                     "too_big %llu debt %llu",
                     (unsigned long long)seed, budget, i, a->rc, (unsigned long long)a->available,
                     (unsigned long long)a->try_refusals, (unsigned long long)a->too_big,
                     (unsigned long long)a->debt, b->rc, (unsigned long long)b->available,
                     (unsigned long long)b->try_refusals, (unsigned long long)b->too_big,
                     (unsigned long long)b->debt);
    }
}

static void test_same_outcomes(void **state)
{
    (void)state;
    assert_int_equal(1, sem_inline_exported_is_plain());
    for (uint64_t seed = 1; seed <= 40; seed++) {
        compare_runs(seed * UINT64_C(0x9e3779b97f4a7c15), 0);
        compare_runs(seed * UINT64_C(0x9e3779b97f4a7c15), 1);
    }
}

/* The runs reach what they are meant to: refusals, overflows, E2BIG, EINVAL, closes. */
static void test_script_coverage(void **state)
{
    (void)state;
    int seen_again = 0, seen_overflow = 0, seen_inval = 0, seen_closed = 0, seen_2big = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        for (int budget = 0; budget < 2; budget++) {
            assert_int_equal(0, sem_inline_script_inline(seed * UINT64_C(0x9e3779b97f4a7c15),
                                                         budget, &log_inline));
            for (int i = 0; i < log_inline.n; i++) {
                int rc = log_inline.e[i].rc;
                seen_again += rc == BAND_EAGAIN;
                seen_overflow += rc == BAND_EOVERFLOW;
                seen_inval += rc == BAND_EINVAL;
                seen_closed += rc == BAND_ECLOSED;
                seen_2big += rc == BAND_E2BIG;
            }
        }
    }
    assert_true(seen_again > 0 && seen_overflow > 0 && seen_inval > 0 && seen_closed > 0 &&
                seen_2big > 0);
}

/* The public prefix: where the header's inline code looks is where the library writes. */
static void test_prefix_layout(void **state)
{
    (void)state;
    band_sem *s = NULL;
    band_budget *b = NULL;
    assert_int_equal(0, band_sem_create(&s, 5, NULL));
    const struct band_sem_prefix *p = (const struct band_sem_prefix *)(const void *)s;
    assert_int_equal(5u << BAND_SEM_PREFIX_SHIFT, __atomic_load_n(&p->state, __ATOMIC_RELAXED));
    assert_int_equal(0, p->flags & BAND_SEM_PREFIX_F_OUTOFLINE);
    assert_int_equal(0, band_sem_reduce(s, 7)); /* 5 taken, 2 owed: SLOW */
    assert_int_equal(BAND_SEM_PREFIX_SLOW, __atomic_load_n(&p->state, __ATOMIC_RELAXED));
    assert_int_equal(0, band_sem_close(s));
    assert_int_equal(BAND_SEM_PREFIX_SLOW | BAND_SEM_PREFIX_CLOSED,
                     __atomic_load_n(&p->state, __ATOMIC_RELAXED));
    assert_int_equal(0, band_sem_destroy(s));

    assert_int_equal(0, band_budget_create(&b, 9, NULL));
    p = (const struct band_sem_prefix *)(const void *)band_budget_sem(b);
    assert_int_equal(9u << BAND_SEM_PREFIX_SHIFT, __atomic_load_n(&p->state, __ATOMIC_RELAXED));
    assert_int_equal(BAND_SEM_PREFIX_F_OUTOFLINE, p->flags & BAND_SEM_PREFIX_F_OUTOFLINE);
    assert_int_equal(0, band_budget_destroy(b));
}

/* band_sem_release_finish() refuses what the inline path never passes it. */
static void test_release_finish_args(void **state)
{
    (void)state;
    band_sem *s = NULL;
    band_budget *b = NULL;
    assert_int_equal(0, band_sem_create(&s, 0, NULL));
    assert_int_equal(BAND_EINVAL, band_sem_release_finish(NULL, 1, 0));
    assert_int_equal(BAND_EINVAL, band_sem_release_finish(s, 0, 0));
    assert_int_equal(BAND_EINVAL, band_sem_release_finish(s, BAND_SEM_PREFIX_ADD_MAX + 1, 0));
    assert_int_equal(0, band_sem_release_finish(s, 1, 0)); /* no waiter, no overflow */
    assert_int_equal(0, band_sem_available(s));
    assert_int_equal(0, band_budget_create(&b, 4, NULL));
    assert_int_equal(BAND_EINVAL, band_sem_release_finish(band_budget_sem(b), 1, 0));
    assert_int_equal(4, band_sem_available(band_budget_sem(b)));
    assert_int_equal(0, band_budget_destroy(b));
    assert_int_equal(0, band_sem_destroy(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_outcomes),
        cmocka_unit_test(test_script_coverage),
        cmocka_unit_test(test_prefix_layout),
        cmocka_unit_test(test_release_finish_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

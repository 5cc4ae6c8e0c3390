/* SPDX-License-Identifier: MIT */
/*
 * test_fair_inline.c - the inline fast paths of band/fair.h against the exported functions.
 *
 * A program built against the header calls band_fair_handle_try_acquire() and
 * band_fair_handle_release() through static inline code over the handle's public prefix;
 * one built with BAND_NO_INLINE calls the exported functions. The same scripted runs
 * (fair_inline_script.h: every state the fast paths must tell apart) go through both, and
 * every answer, unit count and counter must be the same. The prefix layout itself is
 * checked too: the words are where the header says, with the encoding it states.
 */
#include "test.h"

#include <stddef.h>
#include <string.h>

#define FAIR_INLINE_SCRIPT fair_inline_script_inline
#include "fair_inline_script.h"

#if (defined(__GNUC__) || defined(__clang__)) && !defined(BAND_FAIR_HAVE_INLINE)
#error "band/fair.h should provide the inline fast path with this compiler"
#endif

static struct fair_inline_log log_inline, log_exported;

static void compare_runs(uint64_t seed)
{
    assert_int_equal(0, fair_inline_script_inline(seed, &log_inline));
    assert_int_equal(0, fair_inline_script_exported(seed, &log_exported));
    assert_true(log_inline.n > 1000);
    assert_int_equal(log_inline.n, log_exported.n);
    for (int i = 0; i < log_inline.n; i++) {
        const struct fair_inline_entry *a = &log_inline.e[i], *b = &log_exported.e[i];
        if (memcmp(a, b, sizeof(*a)) != 0)
            fail_msg("seed %llu, entry %d (op %d): inline rc %d in_use %llu refusals %llu "
                     "too_big %llu; exported rc %d in_use %llu refusals %llu too_big %llu",
                     (unsigned long long)seed, i, a->op, a->rc, (unsigned long long)a->in_use,
                     (unsigned long long)a->try_refusals, (unsigned long long)a->too_big, b->rc,
                     (unsigned long long)b->in_use, (unsigned long long)b->try_refusals,
                     (unsigned long long)b->too_big);
    }
}

static void test_same_outcomes(void **state)
{
    (void)state;
    assert_int_equal(1, fair_inline_exported_is_plain());
    for (uint64_t seed = 1; seed <= 40; seed++)
        compare_runs(seed * UINT64_C(0x9e3779b97f4a7c15));
}

/* The runs reach what they are meant to: grants, refusals, E2BIG, EINVAL, closes, a queued
 * request, releases of units. */
static void test_script_coverage(void **state)
{
    (void)state;
    int grants = 0, again = 0, inval = 0, closed = 0, big = 0, pending = 0, released = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        assert_int_equal(
            0, fair_inline_script_inline(seed * UINT64_C(0x9e3779b97f4a7c15), &log_inline));
        for (int i = 1; i < log_inline.n; i++) {
            const struct fair_inline_entry *e = &log_inline.e[i];
            grants += e->op == 2 && e->rc == 0 && e->in_use > log_inline.e[i - 1].in_use;
            released += e->op == 1 && e->rc == 0 && e->in_use < log_inline.e[i - 1].in_use;
            again += e->rc == BAND_EAGAIN;
            inval += e->rc == BAND_EINVAL;
            closed += e->rc == BAND_ECLOSED;
            big += e->rc == BAND_E2BIG;
            pending += e->waiters > 0 && e->op == 2;
        }
    }
    assert_true(grants > 100 && released > 100 && again > 0 && inval > 0 && closed > 0 && big > 0 &&
                pending > 0);
}

/* The public prefix: where the header's inline code looks is where the library writes. */
static void test_prefix_layout(void **state)
{
    (void)state;
    band_fair *f = NULL;
    band_fair_handle *h = NULL, *hr = NULL;
    band_fair_opts o;
    band_fair_key_opts ko;
    memset(&o, 0, sizeof(o));
    o.classes = 3;
    o.headroom[1] = 2;
    o.headroom[2] = 5;
    assert_int_equal(0, band_fair_create(&f, 10, &o));
    memset(&ko, 0, sizeof(ko));
    ko.weight = 1;
    ko.cap = 4;
    assert_int_equal(0, band_fair_key_set(f, 1, &ko));
    ko.reserve = 2;
    assert_int_equal(0, band_fair_key_set(f, 2, &ko));
    assert_int_equal(0, band_fair_handle_get(f, 1, &h));
    assert_int_equal(0, band_fair_handle_get(f, 2, &hr));
    const struct band_fair_handle_prefix *p = (const void *)h, *pr = (const void *)hr;
    assert_int_equal(3, p->nclasses);
    assert_int_equal(10, p->limit[0]);
    assert_int_equal(8, p->limit[1]);
    assert_int_equal(5, p->limit[2]);
    assert_int_equal(0, __atomic_load_n(p->state, __ATOMIC_RELAXED));
    assert_int_equal(4, __atomic_load_n(&p->key[1], __ATOMIC_RELAXED));  /* fast cap: the cap */
    assert_int_equal(0, __atomic_load_n(&pr->key[1], __ATOMIC_RELAXED)); /* reserved: 0 */
    assert_ptr_equal(p->state, pr->state);
    assert_int_equal(0, band_fair_handle_try_acquire(h, 1, 3));
    assert_int_equal(3, __atomic_load_n(p->state, __ATOMIC_RELAXED));
    assert_int_equal(3, __atomic_load_n(&p->key[0], __ATOMIC_RELAXED));
    assert_int_equal(1, p->count[1].granted);
    assert_int_equal(3, p->count[1].units);
    assert_int_equal(0, band_fair_handle_try_acquire(hr, 0, 2)); /* the lock's grant */
    assert_int_equal(5, __atomic_load_n(p->state, __ATOMIC_RELAXED));
    assert_int_equal(2, __atomic_load_n(&pr->key[0], __ATOMIC_RELAXED));
    assert_int_equal(0, pr->count[0].granted); /* counted by the key, not the handle */
    ko.reserve = 0;
    assert_int_equal(0, band_fair_key_set(f, 2, &ko));
    assert_int_equal(4, __atomic_load_n(&pr->key[1], __ATOMIC_RELAXED));
    /* a key whose cap binds no grant: the handle counts its own units */
    _Static_assert(offsetof(struct band_fair_handle_prefix, busy) == 216 &&
                       offsetof(struct band_fair_handle_prefix, taken) == 224 &&
                       offsetof(struct band_fair_handle_prefix, given) == 232,
                   "the handle's own units");
    band_fair_handle *hs = NULL;
    assert_int_equal(0, band_fair_handle_get(f, 3, &hs));
    const struct band_fair_handle_prefix *ps = (const void *)hs;
    assert_true(__atomic_load_n(&ps->key[1], __ATOMIC_RELAXED) == BAND_FAIR_PREFIX_SPLIT);
    assert_int_equal(0, band_fair_handle_try_acquire(hs, 0, 2));
    assert_int_equal(7, __atomic_load_n(p->state, __ATOMIC_RELAXED));
    assert_int_equal(0, __atomic_load_n(&ps->key[0], __ATOMIC_RELAXED));
    assert_int_equal(2, __atomic_load_n(&ps->taken, __ATOMIC_RELAXED));
    assert_int_equal(0, __atomic_load_n(&ps->given, __ATOMIC_RELAXED));
    assert_int_equal(0, __atomic_load_n(&ps->busy, __ATOMIC_RELAXED));
    assert_int_equal(1, ps->count[0].granted);
    assert_int_equal(0, band_fair_handle_release(hs, 1));
    assert_int_equal(1, __atomic_load_n(&ps->given, __ATOMIC_RELAXED));
    assert_int_equal(6, __atomic_load_n(p->state, __ATOMIC_RELAXED));
    ko.cap = 4; /* the cap binds: the handle's unit moves to the key's shared word */
    assert_int_equal(0, band_fair_key_set(f, 3, &ko));
    assert_int_equal(4, __atomic_load_n(&ps->key[1], __ATOMIC_RELAXED));
    assert_int_equal(1, __atomic_load_n(&ps->key[0], __ATOMIC_RELAXED));
    assert_int_equal(2, __atomic_load_n(&ps->given, __ATOMIC_RELAXED));
    assert_int_equal(0, band_fair_handle_release(hs, 1));
    assert_int_equal(0, __atomic_load_n(&ps->key[0], __ATOMIC_RELAXED));
    assert_int_equal(5, __atomic_load_n(p->state, __ATOMIC_RELAXED));
    assert_int_equal(0, band_fair_handle_put(hs));
    assert_int_equal(0, band_fair_close(f));
    assert_int_equal(BAND_FAIR_PREFIX_SLOW | 5, __atomic_load_n(p->state, __ATOMIC_RELAXED));
    assert_int_equal(0, band_fair_handle_release(h, 3));
    assert_int_equal(0, band_fair_handle_release(hr, 2));
    assert_int_equal(BAND_FAIR_PREFIX_SLOW, __atomic_load_n(p->state, __ATOMIC_RELAXED));
    assert_int_equal(0, band_fair_handle_put(h));
    assert_int_equal(0, band_fair_handle_put(hr));
    assert_int_equal(0, band_fair_destroy(f));
}

/* The finish functions refuse what the inline path never passes them, and do what it
 * leaves to them. */
static void test_finish_args(void **state)
{
    (void)state;
    band_fair *f = NULL;
    band_fair_handle *h = NULL;
    band_fair_key_stats ks;
    assert_int_equal(0, band_fair_create(&f, 10, NULL));
    assert_int_equal(0, band_fair_handle_get(f, 1, &h));
    assert_int_equal(BAND_EINVAL, band_fair_handle_try_finish(NULL, 0, 1, 0));
    assert_int_equal(BAND_EINVAL, band_fair_handle_try_finish(h, 1, 1, 0));
    assert_int_equal(BAND_EINVAL, band_fair_handle_try_finish(h, 0, 0, 0));
    assert_int_equal(BAND_EINVAL, band_fair_handle_release_finish(NULL));
    assert_int_equal(0, band_fair_handle_release_finish(h)); /* nothing queued: no change */
    /* as the inline try after its first compare-and-swap, the key's one failing */
    const struct band_fair_handle_prefix *p = (const void *)h;
    __atomic_fetch_add(p->state, 2, __ATOMIC_ACQ_REL);
    assert_int_equal(0, band_fair_handle_try_finish(h, 0, 2, 7)); /* stale held: retried */
    assert_int_equal(0, band_fair_key_get_stats(f, 1, &ks));
    assert_int_equal(2, ks.held);
    assert_int_equal(1, ks.granted);
    assert_int_equal(2, __atomic_load_n(p->state, __ATOMIC_RELAXED));
    assert_int_equal(0, band_fair_handle_release(h, 2));
    assert_int_equal(0, band_fair_handle_put(h));
    assert_int_equal(0, band_fair_destroy(f));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_outcomes),
        cmocka_unit_test(test_script_coverage),
        cmocka_unit_test(test_prefix_layout),
        cmocka_unit_test(test_finish_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

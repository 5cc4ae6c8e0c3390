/* SPDX-License-Identifier: MIT */
/*
 * stress_fair_overrelease.c - two threads race to release the same units of one key: the
 * units a handle took, released through that handle by one thread and, by the other, by key
 * id, through a second handle of the key, or both in turn. The key holds UNITS units and
 * each thread releases one unit UNITS times, so exactly UNITS of the 2 * UNITS releases may
 * succeed and the rest must answer BAND_EINVAL and change nothing (band/fair.h: a release of
 * more than the key holds). A release checked against a count that the other releaser
 * changes without a read-modify-write would let both succeed now and then, and the fair
 * would then count more units free than its capacity; so after every round the key holds
 * nothing, nothing is in use, and band__fair_check() holds. The two start each round
 * together, yield now and then, and (on Linux, with two processors or more) run on
 * processors of their own, so that the releases overlap whenever both get a time slice
 * rather than taking turns on one processor.
 * Bounded by rounds and wall time (1.5 s; 0.75 s under sanitizers).
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_setaffinity() */
#endif
#include "test.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "prim/fair/fair_internal.h"

enum { UNITS = 2048, ROUNDS = 4000, KEY = 3, YIELD_EVERY = 128 };

struct race {
    band_fair *f;
    band_fair_handle *ha;     /* the taker's handle, released through by the main thread */
    band_fair_handle *hb;     /* the other thread's handle of the same key */
    _Atomic unsigned go;      /* the round the other thread may release in; UINT_MAX: stop */
    _Atomic unsigned started; /* the round the other thread is about to release in */
    _Atomic unsigned done;
    /* written by the other thread in round r, read by the main thread after done == r */
    uint64_t b_ok, b_einval, b_other;
};

#if defined(__linux__)
/* Put the calling thread on the @which-th (0 or 1) processor it may run on, when it may run
 * on two or more, keeping its old set in *@old: the two releasers then run at once whenever
 * both get a time slice, instead of taking turns on one processor. */
static void pin(int which, cpu_set_t *old)
{
    CPU_ZERO(old);
    if (sched_getaffinity(0, sizeof(*old), old) != 0 || CPU_COUNT(old) < 2) {
        CPU_ZERO(old);
        return;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    for (size_t c = 0, seen = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, old) && seen++ == (size_t)which) {
            CPU_SET(c, &one);
            break;
        }
    }
    (void)sched_setaffinity(0, sizeof(one), &one);
}

static void unpin(const cpu_set_t *old)
{
    if (CPU_COUNT(old) > 0)
        (void)sched_setaffinity(0, sizeof(*old), old);
}
#else
typedef int cpu_set_t;
static void pin(int which, cpu_set_t *old)
{
    (void)which;
    *old = 0;
}
static void unpin(const cpu_set_t *old)
{
    (void)old;
}
#endif

static void spin_pause(unsigned *spins)
{
    if (++*spins % 64 == 0)
        sched_yield(); /* more threads than cores: let the other side run */
}

/* One release by the other thread, the way round @r says. */
static int release_other(struct race *rc, unsigned r, int i)
{
    switch (r % 3) {
    case 0:
        return band_fair_release(rc->f, KEY, 1);
    case 1:
        return band_fair_handle_release(rc->hb, 1);
    default:
        return i % 2 ? band_fair_release(rc->f, KEY, 1) : band_fair_handle_release(rc->hb, 1);
    }
}

static int other_main(void *arg)
{
    struct race *rc = arg;
    cpu_set_t old;
    pin(1, &old);
    for (unsigned r = 1;; r++) {
        unsigned spins = 0, g;
        while ((g = atomic_load(&rc->go)) < r)
            spin_pause(&spins);
        if (g == UINT_MAX) {
            unpin(&old);
            return 0;
        }
        atomic_store(&rc->started, r);
        uint64_t ok = 0, einval = 0, other = 0;
        for (int i = 0; i < UNITS; i++) {
            if (i % YIELD_EVERY == YIELD_EVERY - 1)
                sched_yield(); /* stretch the round over the other side's time slices */
            int e = release_other(rc, r, i);
            if (e == 0)
                ok++;
            else if (e == BAND_EINVAL)
                einval++;
            else
                other++;
        }
        rc->b_ok = ok;
        rc->b_einval = einval;
        rc->b_other = other;
        atomic_store(&rc->done, r);
    }
}

static void test_race(void **state)
{
    (void)state;
    struct race rc;
    memset(&rc, 0, sizeof(rc));
    assert_int_equal(band_fair_create(&rc.f, UNITS, NULL), 0);
    assert_int_equal(band_fair_handle_get(rc.f, KEY, &rc.ha), 0);
    assert_int_equal(band_fair_handle_get(rc.f, KEY, &rc.hb), 0);
    atomic_init(&rc.go, 0);
    atomic_init(&rc.started, 0);
    atomic_init(&rc.done, 0);
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, other_main, &rc), 0);
    cpu_set_t old;
    pin(0, &old);

    band_time end =
        band_deadline_after(test_under_sanitizer() ? 3 * BAND_SEC / 4 : 3 * BAND_SEC / 2);
    uint64_t rounds = 0, bad_takes = 0, bad_sums = 0, bad_codes = 0, bad_left = 0, bad_check = 0;
    uint64_t mixed = 0; /* rounds where both threads released some units */
    for (unsigned r = 1; r <= ROUNDS && (r <= 8 || band_now() < end); r++) {
        for (int i = 0; i < UNITS; i++)
            if (band_fair_handle_try_acquire(rc.ha, 0, 1) != 0)
                bad_takes++;
        atomic_store(&rc.go, r);
        unsigned spins = 0;
        while (atomic_load(&rc.started) < r) /* start together, so the releases overlap */
            spin_pause(&spins);
        uint64_t ok = 0, einval = 0, other = 0;
        for (int i = 0; i < UNITS; i++) {
            if (i % YIELD_EVERY == YIELD_EVERY - 1)
                sched_yield();
            int e = band_fair_handle_release(rc.ha, 1);
            if (e == 0)
                ok++;
            else if (e == BAND_EINVAL)
                einval++;
            else
                other++;
        }
        while (atomic_load(&rc.done) < r)
            spin_pause(&spins);
        if (ok + rc.b_ok != UNITS)
            bad_sums++; /* units released twice (or not at all) */
        if (einval + rc.b_einval != UNITS || other + rc.b_other != 0)
            bad_codes++;
        if (ok > 0 && rc.b_ok > 0)
            mixed++;
        band_fair_stats st;
        band_fair_key_stats ks;
        if (band_fair_get_stats(rc.f, &st) != 0 || band_fair_key_get_stats(rc.f, KEY, &ks) != 0 ||
            st.in_use != 0 || ks.held != 0)
            bad_left++;
        if (band__fair_check(rc.f) != 0)
            bad_check++;
        rounds++;
        if (bad_sums + bad_left > 0)
            break; /* the counters are off from here on */
    }
    atomic_store(&rc.go, UINT_MAX);
    assert_int_equal(test_thread_join(&t), 0);
    unpin(&old);
    print_message("stress_fair_overrelease: %llu rounds of %d units, %llu with both threads "
                  "releasing; double releases %llu, wrong codes %llu, units left %llu\n",
                  (unsigned long long)rounds, UNITS, (unsigned long long)mixed,
                  (unsigned long long)bad_sums, (unsigned long long)bad_codes,
                  (unsigned long long)bad_left);
    assert_u64_equal(bad_takes, 0);
    assert_u64_equal(bad_sums, 0);
    assert_u64_equal(bad_codes, 0);
    assert_u64_equal(bad_left, 0);
    assert_u64_equal(bad_check, 0);
    assert_int_equal(band_fair_handle_put(rc.hb), 0);
    assert_int_equal(band_fair_handle_put(rc.ha), 0);
    assert_int_equal(band_fair_close(rc.f), 0);
    assert_int_equal(band_fair_destroy(rc.f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

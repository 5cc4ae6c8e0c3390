/* SPDX-License-Identifier: MIT */
/*
 * stress_fair.c - threads on one band_fair: blocking acquires with short deadlines, async
 * requests that are cancelled or waited for, try acquires, floods of distinct keys against
 * a small key table, and a thread that reconfigures keys; the last scenario closes the fair
 * while all that runs; and a cancel racing, round after round, with the release that grants
 * the request (also when the release brings a key back from its cap). Each scenario is
 * bounded by iterations and wall time (2 s, 2 s, 1 s and 1 s; 1 s, 1 s, 1 s and 0.5 s under
 * sanitizers).
 *
 * Workers never assert (an assert belongs on the main thread, see tests/support/test.h):
 * they count errors (a wake seen twice, a wake after a successful cancel, a cancel that
 * neither removed nor found a completion, a release that failed) and the main thread
 * checks the counts, the invariants (band__fair_check) and that at quiescence every unit
 * is back and only pinned keys remain.
 */
#include "test.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "prim/fair/fair_internal.h"

enum { THREADS = 6, ITERS = 40000, KEYS = 12 };

struct shared {
    band_fair *f;
    band_time end;
    atomic_int stop;
    int closing; /* the main thread closes the fair mid-run: BAND_ECLOSED is expected */
};

struct areq {
    band_fair_acquire_op r;
    atomic_int wakes;
};

static void areq_wake(band_waiter *w)
{
    struct areq *a = (struct areq *)(void *)w;
    atomic_fetch_add_explicit(&a->wakes, 1, memory_order_release);
}

struct worker {
    struct shared *sh;
    struct test_thread t;
    uint64_t seed;
    uint64_t errors, grants, timeouts, cancels, refusals, iters, closed;
};

/* Spin (yielding) until @a's wake ran, for at most @ns. Returns true when it did. */
static bool wait_wake(struct areq *a, band_time ns)
{
    band_time deadline = band_deadline_after(ns);
    while (atomic_load_explicit(&a->wakes, memory_order_acquire) == 0) {
        if (band_now() > deadline)
            return false;
        sched_yield();
    }
    return true;
}

static void release_or_count(struct worker *w, uint64_t key, uint64_t n)
{
    if (test_rng_next(&w->seed) % 4 == 0)
        sched_yield(); /* hold it a moment: others queue behind */
    if (band_fair_release(w->sh->f, key, n) != 0)
        w->errors++;
}

static void op_blocking(struct worker *w, uint64_t key, uint32_t cls, uint64_t n)
{
    band_time dl = band_deadline_after((band_time)test_rng_range(&w->seed, 0, 200) * BAND_USEC);
    int rc = band_fair_acquire(w->sh->f, key, cls, n, dl, NULL);
    if (rc == 0) {
        w->grants++;
        release_or_count(w, key, n);
    } else if (rc == BAND_ETIMEDOUT) {
        w->timeouts++;
    } else if (rc == BAND_ENOMEM || rc == BAND_E2BIG) {
        w->refusals++;
    } else if (rc == BAND_ECLOSED && w->sh->closing) {
        w->closed++;
    } else {
        w->errors++;
    }
}

static void op_async(struct worker *w, uint64_t key, uint32_t cls, uint64_t n)
{
    struct areq a;
    band_waiter_init(&a.r.w, areq_wake, NULL);
    atomic_init(&a.wakes, 0);
    int rc = band_fair_acquire_async(w->sh->f, key, cls, n, &a.r);
    if (rc == 0) {
        w->grants++;
        release_or_count(w, key, n);
        return;
    }
    if (rc != BAND_PENDING) {
        if (rc == BAND_ENOMEM || rc == BAND_E2BIG)
            w->refusals++;
        else if (rc == BAND_ECLOSED && w->sh->closing)
            w->closed++;
        else
            w->errors++;
        return;
    }
    /* cancel at once, or after waiting a little */
    if (test_rng_next(&w->seed) % 2 == 0)
        (void)wait_wake(&a, (band_time)test_rng_range(&w->seed, 1, 300) * BAND_USEC);
    int c = band_waiter_cancel(&a.r.w, BAND_ECANCELED);
    if (c == 0) {
        w->cancels++;
        if (atomic_load(&a.wakes) != 0)
            w->errors++;
        return;
    }
    if (c != BAND_EALREADY || !wait_wake(&a, 5 * BAND_SEC)) {
        w->errors++;
        return;
    }
    if (atomic_load(&a.wakes) != 1)
        w->errors++;
    int st = band_waiter_status(&a.r.w);
    if (st == 0) {
        w->grants++;
        release_or_count(w, key, n);
    } else if (st == BAND_ECLOSED && w->sh->closing) {
        w->closed++;
    } else if (st != BAND_E2BIG) {
        w->errors++;
    }
}

static void op_try_flood(struct worker *w)
{
    uint64_t key = 1000 + test_rng_next(&w->seed) % 100000;
    int rc = band_fair_try_acquire(w->sh->f, key, 0, 1);
    if (rc == 0) {
        w->grants++;
        release_or_count(w, key, 1);
    } else if (rc == BAND_EAGAIN || rc == BAND_ENOMEM) {
        w->refusals++;
    } else if (rc == BAND_ECLOSED && w->sh->closing) {
        w->closed++;
    } else {
        w->errors++;
    }
}

static int worker_main(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < ITERS && !atomic_load(&w->sh->stop); i++) {
        if ((i & 63) == 0 && band_now() > w->sh->end)
            break;
        w->iters++;
        uint64_t key = test_rng_next(&w->seed) % KEYS;
        uint32_t cls = 2 - (uint32_t)(test_rng_next(&w->seed) % 3); /* 2: the least urgent */
        uint64_t n = test_rng_range(&w->seed, 1, 4);
        switch (test_rng_next(&w->seed) % 8) {
        case 0:
        case 1:
        case 2:
            op_blocking(w, key, cls, n);
            break;
        case 3:
        case 4:
        case 5:
            op_async(w, key, cls, n);
            break;
        default:
            op_try_flood(w);
            break;
        }
    }
    return 0;
}

/* Reconfigures key 5 (cap 2, reserve 1) and back, repeatedly. */
static int config_main(void *arg)
{
    struct shared *sh = arg;
    int errors = 0;
    for (int i = 0; i < 20000 && band_now() < sh->end && !atomic_load(&sh->stop); i++) {
        band_fair_key_opts o = {2, 2, 1};
        int rc = band_fair_key_set(sh->f, 5, &o);
        if (rc != 0 && rc != BAND_ENOMEM) /* a full key table refuses a new key */
            errors++;
        sched_yield();
        if (band_fair_key_unset(sh->f, 5) != 0)
            errors++;
        sched_yield();
    }
    return errors;
}

static void run_scenario(uint32_t max_keys, band_time secs_ns, int closing)
{
    band_fair_opts fo = {0};
    fo.classes = 3;
    fo.headroom[1] = 2; /* class 1 may fill 6 of the 8 units, class 2 only 5 */
    fo.headroom[2] = 3;
    fo.max_keys = max_keys;
    struct shared sh;
    assert_int_equal(band_fair_create(&sh.f, 8, &fo), 0);
    band_fair_key_opts o0 = {4, 0, 2};
    band_fair_key_opts o1 = {1, 4, 0};
    band_fair_key_opts o2 = {2, 0, 1};
    assert_int_equal(band_fair_key_set(sh.f, 0, &o0), 0);
    assert_int_equal(band_fair_key_set(sh.f, 1, &o1), 0);
    assert_int_equal(band_fair_key_set(sh.f, 2, &o2), 0);
    sh.end = band_deadline_after(secs_ns);
    sh.closing = closing;
    band_time close_at = band_deadline_after(secs_ns / 4);
    atomic_init(&sh.stop, 0);

    struct worker w[THREADS];
    memset(w, 0, sizeof(w));
    for (int i = 0; i < THREADS; i++) {
        w[i].sh = &sh;
        w[i].seed = 0x5eed0000u + (uint64_t)i * 7919u + max_keys;
        assert_int_equal(test_thread_start(&w[i].t, worker_main, &w[i]), 0);
    }
    struct test_thread ct;
    assert_int_equal(test_thread_start(&ct, config_main, &sh), 0);
    /* the main thread checks invariants while they run */
    int bad = 0;
    for (;;) {
        int running = 0;
        for (int i = 0; i < THREADS; i++)
            running += !atomic_load(&w[i].t.done);
        if (running == 0 || band_now() > sh.end || bad)
            break;
        if (closing && band_now() > close_at && band_fair_close(sh.f) != 0)
            bad = -1;
        bad = bad != 0 ? bad : band__fair_check(sh.f);
        sched_yield();
    }
    atomic_store(&sh.stop, 1);
    assert_int_equal(bad, 0);
    assert_int_equal(test_thread_join(&ct), 0);
    uint64_t errors = 0, grants = 0, timeouts = 0, cancels = 0, refusals = 0, iters = 0;
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(test_thread_join(&w[i].t), 0);
        errors += w[i].errors;
        grants += w[i].grants;
        timeouts += w[i].timeouts;
        cancels += w[i].cancels;
        refusals += w[i].refusals;
        iters += w[i].iters;
    }
    uint64_t closed = 0;
    for (int i = 0; i < THREADS; i++)
        closed += w[i].closed;
    print_message("stress_fair max_keys=%u%s: %llu ops, %llu grants, %llu timeouts, %llu cancels, "
                  "%llu refusals, %llu closed\n",
                  max_keys, closing ? " (closed mid-run)" : "", (unsigned long long)iters,
                  (unsigned long long)grants, (unsigned long long)timeouts,
                  (unsigned long long)cancels, (unsigned long long)refusals,
                  (unsigned long long)closed);
    assert_u64_equal(errors, 0);
    assert_true(grants > 0);
    assert_int_equal(band__fair_check(sh.f), 0);
    band_fair_stats st;
    assert_int_equal(band_fair_get_stats(sh.f, &st), 0);
    assert_u64_equal(st.in_use, 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.keys, st.keys_pinned); /* only configured keys survive */
    assert_true(st.keys <= max_keys);
    assert_int_equal(band_fair_close(sh.f), 0);
    assert_int_equal(band_fair_destroy(sh.f), 0);
}

static void test_stress_roomy_table(void **state)
{
    (void)state;
    run_scenario(4096, test_under_sanitizer() ? BAND_SEC : 2 * BAND_SEC, 0);
}

static void test_stress_tight_table(void **state)
{
    (void)state;
    run_scenario(8, test_under_sanitizer() ? BAND_SEC : 2 * BAND_SEC, 0);
}

/* Close races with every operation: queued requests end with BAND_ECLOSED exactly once. */
static void test_stress_close_mid_run(void **state)
{
    (void)state;
    run_scenario(64, BAND_SEC, 1);
}

/*
 * A cancel racing with the release that grants the request, round after round. Each
 * round the releasing thread holds what the request waits for, both threads meet, then
 * one releases while the other cancels. Even rounds: the request waits for capacity
 * (another key holds all of it). Odd rounds: the request's own key is at its cap, so the
 * request's flow is set aside, and the release of that key's unit brings it back and
 * grants it. The outcome must be exactly one of: the cancel returns 0 and no wake comes,
 * or it returns BAND_EALREADY and exactly one wake reports the grant (then the units are
 * the canceller's to release). Bounded by iterations and wall time.
 */
enum { RACE_ROUNDS = 20000, KEY_HOLDER = 100, KEY_CAPPED = 101, KEY_OTHER = 102 };

struct race {
    band_fair *f;
    atomic_uint queued;   /* the round whose request is queued: the releaser may start it */
    atomic_uint ready;    /* arrivals at the start line: 2 per round */
    atomic_uint released; /* the round whose release the releaser finished */
    atomic_int stop;
};

static void spin_a_little(uint64_t *seed)
{
    for (unsigned i = (unsigned)(test_rng_next(seed) % 64); i > 0; i--)
        atomic_signal_fence(memory_order_seq_cst);
}

/* Wait until *@v reaches @want or the race stops; false when it stopped. It spins a
 * while before it yields, so that both threads leave the start line together. */
static bool race_wait(struct race *r, atomic_uint *v, unsigned want)
{
    for (unsigned spins = 0; atomic_load_explicit(v, memory_order_acquire) < want; spins++) {
        if (atomic_load(&r->stop))
            return false;
        if (spins >= 2000)
            sched_yield();
    }
    return true;
}

/* The releasing thread: returns the number of releases that failed. */
static int releaser_main(void *arg)
{
    struct race *r = arg;
    uint64_t seed = 0x7e1ea5e;
    int errors = 0;
    for (unsigned k = 1;; k++) {
        if (!race_wait(r, &r->queued, k))
            return errors;
        atomic_fetch_add_explicit(&r->ready, 1, memory_order_acq_rel);
        if (!race_wait(r, &r->ready, 2 * k))
            return errors;
        spin_a_little(&seed);
        if (band_fair_release(r->f, k % 2 == 0 ? KEY_HOLDER : KEY_CAPPED, 1) != 0)
            errors++;
        atomic_store_explicit(&r->released, k, memory_order_release);
    }
}

struct race_counts {
    uint64_t errors, cancel_won, grant_won;
};

static void race_round(struct race *r, unsigned k, uint64_t *seed, struct race_counts *n)
{
    struct areq a;
    uint64_t key = k % 2 == 0 ? KEY_OTHER : KEY_CAPPED;
    /* capacity 2: even rounds the holder takes both units; odd rounds the capped key holds
     * its one unit and the holder the other */
    if (k % 2 == 0) {
        if (band_fair_try_acquire(r->f, KEY_HOLDER, 0, 2) != 0)
            n->errors++;
    } else if (band_fair_try_acquire(r->f, KEY_CAPPED, 0, 1) != 0 ||
               band_fair_try_acquire(r->f, KEY_HOLDER, 0, 1) != 0) {
        n->errors++;
    }
    band_waiter_init(&a.r.w, areq_wake, NULL);
    atomic_init(&a.wakes, 0);
    if (band_fair_acquire_async(r->f, key, 0, 1, &a.r) != BAND_PENDING)
        n->errors++;
    atomic_store_explicit(&r->queued, k, memory_order_release);
    atomic_fetch_add_explicit(&r->ready, 1, memory_order_acq_rel);
    (void)race_wait(r, &r->ready, 2 * k);
    spin_a_little(seed);
    int c = band_waiter_cancel(&a.r.w, BAND_ECANCELED);
    if (c == 0) {
        n->cancel_won++;
    } else if (c == BAND_EALREADY && wait_wake(&a, 5 * BAND_SEC) &&
               band_waiter_status(&a.r.w) == 0) {
        n->grant_won++;
        if (band_fair_release(r->f, key, 1) != 0)
            n->errors++;
    } else {
        n->errors++;
    }
    if (!race_wait(r, &r->released, k)) {
        n->errors++;
        return;
    }
    /* the releaser's release ran (and with it any wake): exactly one end, and quiet */
    if (atomic_load(&a.wakes) != (c == 0 ? 0 : 1))
        n->errors++;
    if (band_fair_release(r->f, KEY_HOLDER, 1) != 0)
        n->errors++;
    band_fair_stats st;
    band_fair_get_stats(r->f, &st);
    if (st.waiters != 0 || st.in_use != 0 || band__fair_check(r->f) != 0)
        n->errors++;
}

static void test_stress_cancel_races_release(void **state)
{
    (void)state;
    struct race r;
    assert_int_equal(band_fair_create(&r.f, 2, NULL), 0);
    band_fair_key_opts capped = {4, 1, 0}; /* weight 4, cap 1 */
    assert_int_equal(band_fair_key_set(r.f, KEY_CAPPED, &capped), 0);
    atomic_init(&r.queued, 0);
    atomic_init(&r.ready, 0);
    atomic_init(&r.released, 0);
    atomic_init(&r.stop, 0);
    band_time end = band_deadline_after(test_under_sanitizer() ? BAND_SEC / 2 : BAND_SEC);
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, releaser_main, &r), 0);
    struct race_counts n = {0, 0, 0};
    uint64_t seed = 0xca5ce1, rounds = 0;
    for (unsigned k = 1; k <= RACE_ROUNDS && band_now() < end && n.errors == 0; k++) {
        race_round(&r, k, &seed, &n);
        rounds++;
    }
    atomic_store(&r.stop, 1);
    assert_int_equal(test_thread_join(&t), 0);
    print_message("stress_fair cancel vs release: %llu rounds, cancel won %llu, grant won %llu\n",
                  (unsigned long long)rounds, (unsigned long long)n.cancel_won,
                  (unsigned long long)n.grant_won);
    assert_u64_equal(n.errors, 0);
    assert_u64_equal(n.cancel_won + n.grant_won, rounds);
    assert_true(rounds > 0);
    band_fair_stats st;
    assert_int_equal(band_fair_get_stats(r.f, &st), 0);
    assert_u64_equal(st.in_use, 0);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.keys, 1); /* the configured key */
    assert_int_equal(band__fair_check(r.f), 0);
    assert_int_equal(band_fair_destroy(r.f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stress_roomy_table),
        cmocka_unit_test(test_stress_tight_table),
        cmocka_unit_test(test_stress_close_mid_run),
        cmocka_unit_test(test_stress_cancel_races_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

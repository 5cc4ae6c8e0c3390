/*
 * stress_fair.c - threads on one band_fair: blocking acquires with short deadlines, async
 * requests that are cancelled or waited for, try acquires, floods of distinct keys against
 * a small key table, and a thread that reconfigures keys; the last scenario closes the fair
 * while all that runs. Each scenario is bounded by iterations and wall time (2 s, 2 s and
 * 1 s; 1 s each under sanitizers).
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
    band_fair_req r;
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
    band_fair_req_init(&a.r, areq_wake, NULL, key, cls, n);
    atomic_init(&a.wakes, 0);
    int rc = band_fair_acquire_async(w->sh->f, &a.r);
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
        uint32_t cls = (uint32_t)(test_rng_next(&w->seed) % 3);
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
    band_fair_config cfg;
    band_fair_config_init(&cfg, 8);
    cfg.classes = 3;
    cfg.thresholds[0] = 5;
    cfg.thresholds[1] = 6;
    cfg.max_keys = max_keys;
    struct shared sh;
    assert_int_equal(band_fair_create(&sh.f, &cfg), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stress_roomy_table),
        cmocka_unit_test(test_stress_tight_table),
        cmocka_unit_test(test_stress_close_mid_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

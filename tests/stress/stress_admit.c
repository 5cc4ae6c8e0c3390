/* SPDX-License-Identifier: MIT */
/*
 * stress_admit.c - the deadlock test for multi-budget admission.
 *
 * Worker threads admit random subsets of five budgets (three band_budgets, two plain
 * semaphores) named in random orders, with random amounts (sometimes too big), through
 * every front end: blocking without a deadline, blocking with short deadlines, async with
 * a cancel raced against the grant, and try. Beside them, plain acquisitions of single
 * budgets. Grants are held briefly, partly released early, adjusted (down at once, up
 * only with a short deadline: waiting for more while holding is incremental acquisition)
 * and reconciled (up by debt, never waiting).
 *
 * Scenario "run": must always finish (a deadlock hangs until the watchdog fails it), and
 * at quiescence every budget is whole again (available == capacity, no waiter, no
 * partial grant), every queued acquisition ended exactly once (queued == grants +
 * timeouts + cancels + closed fails) and band__sem_check() holds.
 * Scenario "close": the same, while the main thread closes two budgets midway; waiters on
 * them end with BAND_ECLOSED and everything held is still returned.
 *
 * Scenario "tree": the same with a capacity hierarchy (reservations, caps) mixed in;
 * "tree close": with closes, a tenant node among them.
 *
 * Scenario "fast": more threads (six), mostly lock-free admissions (try and blocking) and
 * plain tries on the same budgets, so that words move between the admission's check and
 * its CAS and partial takes are given back while others look; "fast close": with the
 * closes. The same checks at quiescence.
 *
 * Bounded by iterations per thread and by wall time (about 1.2 s per scenario). Only the main
 * thread asserts; workers count what they saw.
 */
#include "test.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include <time.h>

#include "admit/admit_internal.h"
#include "core/internal.h"
#include "prim/sem_internal.h"

#define NBUD     5
#define NTHREADS 4
#define NFAST    6 /* threads of the fast scenarios */

static const uint64_t caps[NBUD] = {3, 4, 6, 3, 2}; /* 0..2 budgets, 3..4 plain sems */

/* The tree scenario: root 6 > t1 (4, reserve 2) > l1 (3); root > t2 (4, reserve 2) > l2. */
#define NTREE 5
static const uint64_t tcaps[NTREE] = {6, 4, 4, 3, 3};

struct world {
    band_budget *bud[3];
    band_sem *s[NBUD];
    band_cap_tree *tn[NTREE]; /* NULL outside the tree scenario */
    band_time stop;
    long iters;
    int fast;
    atomic_int closing;
};

struct worker {
    struct test_thread t;
    struct world *w;
    uint64_t seed;
    long done;
    long granted, refused, cancelled, stuck, bad;
    int last_bad;
};

/* A request whose wake flags completion. */
struct areq {
    band_admit_req r;
    atomic_int woke;
};

static void areq_wake(band_waiter *w)
{
    struct areq *q = (struct areq *)(void *)w;
    atomic_store_explicit(&q->woke, 1, memory_order_release);
}

static void note_bad(struct worker *k, int rc)
{
    k->bad++;
    k->last_bad = rc;
}

/* Accepted refusals of an admission. */
static int refusal_ok(int rc)
{
    return rc == BAND_EAGAIN || rc == BAND_ETIMEDOUT || rc == BAND_E2BIG || rc == BAND_ECLOSED;
}

/* Build a request over a random subset of the budgets in a random order. */
static void build(struct worker *k, band_admit_req *r)
{
    int idx[NBUD] = {0, 1, 2, 3, 4};
    for (int i = NBUD - 1; i > 0; i--) {
        int j = (int)test_rng_range(&k->seed, 0, (uint64_t)i);
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    int m = (int)test_rng_range(&k->seed, 1, 4);
    for (int i = 0; i < m; i++) {
        int b = idx[i];
        uint64_t hi = caps[b] + (b < 3 ? 1 : 0); /* budgets: sometimes too big (E2BIG) */
        uint64_t amt = test_rng_range(&k->seed, 0, 7) == 0 ? 0 : test_rng_range(&k->seed, 1, hi);
        if (amt > caps[b] && b >= 3)
            amt = caps[b];
        (void)band_admit_req_add(r, k->w->s[b], amt);
    }
    if (k->w->tn[0] != NULL && test_rng_range(&k->seed, 0, 2) != 0) {
        int t = (int)test_rng_range(&k->seed, 0, NTREE - 1);
        (void)band_admit_req_add_tree(r, k->w->tn[t], test_rng_range(&k->seed, 1, 4));
    }
}

/* Use a grant a little: spin, release part, adjust down/up, reconcile, release the rest. */
static void use_grant(struct worker *k, band_admit_grant *g)
{
    k->granted++;
    for (int i = 0, n = (int)test_rng_range(&k->seed, 0, 50); i < n; i++)
        band__cpu_relax();
    if (g->n > 0 && test_rng_range(&k->seed, 0, 3) == 0) {
        band_permit *p = &g->p[test_rng_range(&k->seed, 0, g->n - 1)];
        if (p->count > 0) {
            int rc = band_admit_release_part(g, p->sem, 1);
            if (rc != 0)
                note_bad(k, rc);
        }
    }
    if (g->n > 0 && test_rng_range(&k->seed, 0, 3) == 0) {
        band_permit *p = &g->p[test_rng_range(&k->seed, 0, g->n - 1)];
        uint64_t to = test_rng_range(&k->seed, 0, p->count + 1);
        band_time dl = test_rng_range(&k->seed, 0, 1) ? 0 : band_deadline_after(50 * BAND_USEC);
        int rc = band_admit_adjust(g, p->sem, to, dl, NULL);
        if (rc != 0 && !refusal_ok(rc))
            note_bad(k, rc);
    }
    if (g->n > 0 && test_rng_range(&k->seed, 0, 3) == 0) {
        /* The work used more or less than it holds: charged or returned, never waiting
         * (closed budgets included); the release below settles any debt it left. */
        band_permit *p = &g->p[test_rng_range(&k->seed, 0, g->n - 1)];
        int rc = band_admit_reconcile(g, p->sem, test_rng_range(&k->seed, 0, p->count + 2));
        if (rc != 0)
            note_bad(k, rc);
    }
    int rc = band_admit_release(g);
    if (rc != 0)
        note_bad(k, rc);
}

/* Wait for an async request's wake, bounded by a generous watchdog. */
static int wait_woke(struct worker *k, struct areq *q)
{
    band_time limit = band_deadline_after(30 * BAND_SEC);
    unsigned spins = 0;
    while (!atomic_load_explicit(&q->woke, memory_order_acquire)) {
        if (++spins > 64)
            sched_yield();
        if ((spins & 1023) == 0 && band_now() > limit) {
            k->stuck++;
            return -1;
        }
    }
    return 0;
}

static void op_blocking(struct worker *k, int forever)
{
    band_admit_req r;
    band_admit_req_init(&r, NULL, NULL);
    build(k, &r);
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    band_time dl =
        forever ? BAND_FOREVER
                : band_deadline_after((band_time)test_rng_range(&k->seed, 0, 200) * BAND_USEC);
    int rc = band_admit_acquire(&r, &g, dl, NULL);
    if (rc == 0)
        use_grant(k, &g);
    else if (refusal_ok(rc))
        k->refused++;
    else
        note_bad(k, rc);
}

static void op_async(struct worker *k)
{
    struct areq q;
    band_admit_req_init(&q.r, areq_wake, NULL);
    atomic_init(&q.woke, 0);
    build(k, &q.r);
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    int rc = band_admit_acquire_async(&q.r);
    if (rc == BAND_PENDING) {
        int cancel = test_rng_range(&k->seed, 0, 2) != 0;
        for (int i = 0, n = (int)test_rng_range(&k->seed, 0, 200); cancel && i < n; i++)
            band__cpu_relax();
        int c = cancel ? band_waiter_cancel(&q.r.w, BAND_ECANCELED) : BAND_EALREADY;
        if (c == 0) {
            k->cancelled++;
            if (band_waiter_status(&q.r.w) != BAND_ECANCELED)
                note_bad(k, -1000);
            return;
        }
        if (c != BAND_EALREADY) {
            note_bad(k, c);
            return;
        }
        if (wait_woke(k, &q) != 0)
            return;
        rc = band_waiter_status(&q.r.w);
    }
    if (rc == 0) {
        int gr = band_admit_req_grant(&q.r, &g);
        if (gr != 0) {
            note_bad(k, gr);
            return;
        }
        use_grant(k, &g);
    } else if (refusal_ok(rc)) {
        k->refused++;
    } else {
        note_bad(k, rc);
    }
}

static void op_try(struct worker *k)
{
    band_admit_req r;
    band_admit_req_init(&r, NULL, NULL);
    build(k, &r);
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    int rc = band_admit_try_acquire(&r, &g);
    if (rc == 0)
        use_grant(k, &g);
    else if (refusal_ok(rc))
        k->refused++;
    else
        note_bad(k, rc);
}

static void op_plain(struct worker *k)
{
    int b = (int)test_rng_range(&k->seed, 0, NBUD - 1);
    band_sem *s = k->w->s[b];
    uint64_t n = test_rng_range(&k->seed, 1, caps[b]);
    if (k->w->tn[0] != NULL && test_rng_range(&k->seed, 0, 1) == 0) {
        int t = (int)test_rng_range(&k->seed, 0, NTREE - 1);
        s = band_cap_tree_sem(k->w->tn[t]);
        n = test_rng_range(&k->seed, 1, tcaps[t]);
    }
    band_time dl =
        test_rng_range(&k->seed, 0, 1)
            ? BAND_FOREVER
            : band_deadline_after((band_time)test_rng_range(&k->seed, 0, 100) * BAND_USEC);
    int rc = band_sem_acquire(s, n, dl, NULL);
    if (rc == 0) {
        for (int i = 0, m = (int)test_rng_range(&k->seed, 0, 30); i < m; i++)
            band__cpu_relax();
        rc = band_sem_release(s, n);
        if (rc != 0)
            note_bad(k, rc);
        k->granted++;
    } else if (refusal_ok(rc)) {
        k->refused++;
    } else {
        note_bad(k, rc);
    }
}

/* A plain try on one budget, held for a moment: it races with the admissions' words. */
static void op_plain_try(struct worker *k)
{
    int b = (int)test_rng_range(&k->seed, 0, NBUD - 1);
    uint64_t n = test_rng_range(&k->seed, 1, caps[b]);
    int rc = band_sem_try_acquire(k->w->s[b], n);
    if (rc == 0) {
        for (int i = 0, m = (int)test_rng_range(&k->seed, 0, 10); i < m; i++)
            band__cpu_relax();
        rc = band_sem_release(k->w->s[b], n);
        if (rc != 0)
            note_bad(k, rc);
        k->granted++;
    } else if (refusal_ok(rc)) {
        k->refused++;
    } else {
        note_bad(k, rc);
    }
}

static void fast_step(struct worker *k)
{
    switch (test_rng_range(&k->seed, 0, 9)) {
    case 0:
    case 1:
    case 2:
    case 3:
        op_try(k);
        break;
    case 4:
    case 5:
        op_blocking(k, 1);
        break;
    case 6:
        op_blocking(k, 0);
        break;
    case 7:
        op_plain(k);
        break;
    default:
        op_plain_try(k);
        break;
    }
}

static int worker_main(void *arg)
{
    struct worker *k = arg;
    for (k->done = 0; k->done < k->w->iters; k->done++) {
        if ((k->done & 15) == 0 && band_now() > k->w->stop)
            break;
        if (k->w->fast) {
            fast_step(k);
            if (k->stuck)
                break;
            continue;
        }
        switch (test_rng_range(&k->seed, 0, 9)) {
        case 0:
        case 1:
            op_blocking(k, 1);
            break;
        case 2:
        case 3:
            op_blocking(k, 0);
            break;
        case 4:
        case 5:
        case 6:
            op_async(k);
            break;
        case 7:
            op_try(k);
            break;
        default:
            op_plain(k);
            break;
        }
        if (k->stuck)
            break;
    }
    return 0;
}

static void world_init(struct world *w, int with_tree)
{
    memset(w, 0, sizeof(*w));
    if (with_tree) {
        assert_int_equal(band_cap_tree_create(&w->tn[0], NULL, tcaps[0], 0), 0);
        assert_int_equal(band_cap_tree_create(&w->tn[1], w->tn[0], tcaps[1], 2), 0);
        assert_int_equal(band_cap_tree_create(&w->tn[2], w->tn[0], tcaps[2], 2), 0);
        assert_int_equal(band_cap_tree_create(&w->tn[3], w->tn[1], tcaps[3], 0), 0);
        assert_int_equal(band_cap_tree_create(&w->tn[4], w->tn[2], tcaps[4], 0), 0);
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(band_budget_create(&w->bud[i], caps[i], NULL), 0);
        w->s[i] = band_budget_sem(w->bud[i]);
    }
    for (int i = 3; i < NBUD; i++)
        assert_int_equal(band_sem_create(&w->s[i], caps[i], NULL), 0);
    int slow = test_under_sanitizer();
    w->iters = slow ? 20000 : 200000;
    w->stop = band_deadline_after(1200 * BAND_MSEC);
    atomic_init(&w->closing, 0);
}

static void world_check_and_free(struct world *w)
{
    for (int i = 0; i < NBUD; i++) {
        band_sem_stats st;
        assert_int_equal(band_sem_get_stats(w->s[i], &st), 0);
        assert_int_equal(band__sem_check(w->s[i]), 0);
        assert_u64_equal(st.available, caps[i]);
        assert_u64_equal(st.waiters, 0);
        assert_u64_equal(st.waiting_units, 0);
        assert_u64_equal(st.head_granted, 0);
        assert_u64_equal(st.debt, 0);
        if (i < 3)
            assert_u64_equal(st.in_use, 0);
        assert_u64_equal(st.queued, st.grants + st.timeouts + st.cancels + st.closed_fails);
    }
    for (int i = NTREE - 1; i >= 0 && w->tn[0] != NULL; i--) {
        band_sem_stats st;
        assert_int_equal(band_sem_get_stats(band_cap_tree_sem(w->tn[i]), &st), 0);
        assert_int_equal(band__sem_check(band_cap_tree_sem(w->tn[i])), 0);
        assert_u64_equal(st.available, tcaps[i]);
        assert_u64_equal(st.in_use, 0);
        assert_u64_equal(st.waiters, 0);
        assert_u64_equal(st.head_granted, 0);
        assert_u64_equal(st.queued, st.grants + st.timeouts + st.cancels + st.closed_fails);
        assert_int_equal(band_cap_tree_destroy(w->tn[i]), 0);
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(band_budget_destroy(w->bud[i]), 0);
    for (int i = 3; i < NBUD; i++)
        assert_int_equal(band_sem_destroy(w->s[i]), 0);
}

static void run(int with_close, int with_tree, int fast)
{
    struct world w;
    world_init(&w, with_tree);
    w.fast = fast;
    int nthreads = fast ? NFAST : NTHREADS;
    uint64_t moved0 = atomic_load(&band__admit_fast_moved);
    uint64_t back0 = atomic_load(&band__admit_fast_gave_back);
    struct worker k[NFAST > NTHREADS ? NFAST : NTHREADS];
    memset(k, 0, sizeof(k));
    for (int i = 0; i < nthreads; i++) {
        k[i].w = &w;
        k[i].seed = 0x5eed0000u + (uint64_t)i * 7919u + (uint64_t)with_close * 2u +
                    (uint64_t)with_tree + (uint64_t)fast * 4u;
        assert_int_equal(test_thread_start(&k[i].t, worker_main, &k[i]), 0);
    }
    if (with_close) {
        struct timespec ts = {0, 300L * 1000L * 1000L};
        (void)nanosleep(&ts, NULL); /* let work pile up; not a synchronisation */
        assert_int_equal(band_budget_close(w.bud[1]), 0);
        assert_int_equal(band_sem_close(w.s[4]), 0);
        if (with_tree) /* a tenant: requests below it fail, queued or not there yet */
            assert_int_equal(band_sem_close(band_cap_tree_sem(w.tn[1])), 0);
    }
    long granted = 0, refused = 0, cancelled = 0, iters = 0;
    for (int i = 0; i < nthreads; i++) {
        assert_int_equal(test_thread_join(&k[i].t), 0);
        if (k[i].bad != 0 || k[i].stuck != 0)
            (void)fprintf(stderr, "worker %d: bad %ld (last %d), stuck %ld\n", i, k[i].bad,
                          k[i].last_bad, k[i].stuck);
        assert_int_equal(k[i].bad, 0);
        assert_int_equal(k[i].stuck, 0);
        granted += k[i].granted;
        refused += k[i].refused;
        cancelled += k[i].cancelled;
        iters += k[i].done;
    }
    (void)fprintf(stderr,
                  "stress_admit %s: %ld ops, %ld granted, %ld refused, %ld cancelled; "
                  "lock-free words moved before the CAS %llu, partial takes given back %llu\n",
                  fast        ? (with_close ? "fast close" : "fast")
                  : with_tree ? (with_close ? "tree close" : "tree")
                              : (with_close ? "close" : "run"),
                  iters, granted, refused, cancelled,
                  (unsigned long long)(atomic_load(&band__admit_fast_moved) - moved0),
                  (unsigned long long)(atomic_load(&band__admit_fast_gave_back) - back0));
    assert_true(granted > 0);
    world_check_and_free(&w);
}

static void test_run(void **state)
{
    (void)state;
    run(0, 0, 0);
}

static void test_close(void **state)
{
    (void)state;
    run(1, 0, 0);
}

static void test_tree(void **state)
{
    (void)state;
    run(0, 1, 0);
}

static void test_tree_close(void **state)
{
    (void)state;
    run(1, 1, 0);
}

static void test_fast(void **state)
{
    (void)state;
    run(0, 0, 1);
}

static void test_fast_close(void **state)
{
    (void)state;
    run(1, 0, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run),  cmocka_unit_test(test_close),
        cmocka_unit_test(test_tree), cmocka_unit_test(test_tree_close),
        cmocka_unit_test(test_fast), cmocka_unit_test(test_fast_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * stress_exec.c - submitters, a canceller and shutdowns racing on executors (exec.h).
 *
 * Each round creates an executor (2 workers, a small queue), and runs two submitter
 * threads (blocking run with a short deadline, and try_run) over a shared pool of jobs, a
 * canceller thread that cancels random jobs of the pool, and - in half of the rounds while
 * the submitters are still going - a shutdown from the main thread, alternating between
 * DRAIN and NOW. After the join the main thread checks, per job:
 *
 *   submission returned 0             -> it ran once, or was handed back once, not both
 *   submission returned BAND_ECANCELED -> handed back once (a cancel won a refused submit)
 *   any other refusal                  -> it neither ran nor was handed back
 *
 * and that the executor's counters agree (completed = runs, cancelled + drained =
 * handbacks, accepted = submissions that returned 0). A job's function and its handback
 * also check that the job is never touched twice at the same time (an "inside" flag).
 *
 * Bounded by rounds and by wall time (about 3 s; the check runs whatever rounds fit).
 *
 * A last case races threads on one band_limit (acquire, report random round trips, drops
 * and ignores) and checks that at quiescence its semaphore holds exactly the limit, with
 * no debt and nothing in flight: adjustments applied after the controller's mutex commute.
 */
#include "test.h"

#include <stdio.h>
#include <string.h>

#define POOL      512
#define MAX_ROUND 400
#define WALL_NS   (3 * BAND_SEC)

struct sjob {
    band_job job;
    atomic_int ran;
    atomic_int handed;
    atomic_int inside;
    atomic_int misuse; /* touched twice at once, or run after a handback */
    int submit_rc;     /* written by the submitter that claimed it */
};

struct round {
    band_exec *ex;
    struct sjob jobs[POOL];
    atomic_int next; /* next job to claim */
    atomic_int stop; /* canceller: stop */
    uint64_t seed;
};

static void sjob_fn(band_job *job)
{
    struct sjob *j = (struct sjob *)job;
    if (atomic_fetch_add(&j->inside, 1) != 0)
        atomic_fetch_add(&j->misuse, 1);
    if (atomic_load(&j->handed) != 0)
        atomic_fetch_add(&j->misuse, 1);
    atomic_fetch_add(&j->ran, 1);
    for (volatile int k = 0; k < 50; k++) {
    }
    atomic_fetch_sub(&j->inside, 1);
}

static void sjob_handback(band_job *job, int reason, void *ctx)
{
    (void)ctx;
    struct sjob *j = (struct sjob *)job;
    if (reason != BAND_ECANCELED && reason != BAND_ECLOSED)
        atomic_fetch_add(&j->misuse, 1);
    if (atomic_fetch_add(&j->inside, 1) != 0)
        atomic_fetch_add(&j->misuse, 1);
    atomic_fetch_add(&j->handed, 1);
    atomic_fetch_sub(&j->inside, 1);
}

static int submitter(void *arg)
{
    struct round *r = arg;
    int k;
    while ((k = atomic_fetch_add(&r->next, 1)) < POOL) {
        struct sjob *j = &r->jobs[k];
        int rc = (k & 1) ? band_exec_try_run(r->ex, &j->job)
                         : band_exec_run(r->ex, &j->job, band_now() + 200 * BAND_USEC, NULL);
        j->submit_rc = rc;
        if (rc == BAND_EAGAIN || rc == BAND_ETIMEDOUT) {
            /* one more try with a longer deadline */
            rc = band_exec_run(r->ex, &j->job, band_now() + 2 * BAND_MSEC, NULL);
            j->submit_rc = rc;
        }
    }
    return 0;
}

static int canceller(void *arg)
{
    struct round *r = arg;
    uint64_t rng = r->seed;
    int n = 0;
    while (!atomic_load(&r->stop)) {
        int hi = atomic_load(&r->next);
        if (hi > POOL)
            hi = POOL;
        if (hi > 0) {
            int k = (int)(test_rng_next(&rng) % (uint64_t)hi);
            if (band_exec_cancel(&r->jobs[k].job) == 0)
                n++;
        }
        if ((test_rng_next(&rng) & 7) == 0)
            sched_yield();
    }
    return n;
}

static void test_exec_races(void **state)
{
    (void)state;
    band_time until = band_now() + WALL_NS;
    int rounds = 0;
    uint64_t total_ran = 0, total_handed = 0, total_refused = 0;
    struct round *r = malloc(sizeof(*r));
    assert_non_null(r);
    while (rounds < MAX_ROUND && band_now() < until) {
        memset(r, 0, sizeof(*r));
        r->seed = (uint64_t)rounds * 7919u + 1u;
        for (int i = 0; i < POOL; i++)
            band_job_init(&r->jobs[i].job, sjob_fn, NULL);
        band_exec_opts o;
        memset(&o, 0, sizeof(o));
        o.handback = sjob_handback;
        assert_int_equal(band_exec_create(&r->ex, 2, (uint64_t)(1 + rounds % 8), &o), 0);

        struct test_thread sub[2], can;
        for (int i = 0; i < 2; i++)
            assert_int_equal(test_thread_start(&sub[i], submitter, r), 0);
        assert_int_equal(test_thread_start(&can, canceller, r), 0);
        int mode = (rounds & 2) ? BAND_EXEC_NOW : BAND_EXEC_DRAIN;
        int early = rounds & 1;
        if (early) {
            /* Shut down while the submitters are mid-pool. */
            while (atomic_load(&r->next) < POOL / 4)
                sched_yield();
            assert_int_equal(band_exec_shutdown(r->ex, mode), 0);
        }
        for (int i = 0; i < 2; i++)
            assert_int_equal(test_thread_join(&sub[i]), 0);
        atomic_store(&r->stop, 1);
        (void)test_thread_join(&can);
        if (!early)
            assert_int_equal(band_exec_shutdown(r->ex, mode), 0);
        assert_int_equal(band_exec_join(r->ex), 0);

        uint64_t ran = 0, handed = 0, accepted = 0;
        for (int i = 0; i < POOL; i++) {
            struct sjob *j = &r->jobs[i];
            int a = atomic_load(&j->ran), h = atomic_load(&j->handed);
            assert_int_equal(atomic_load(&j->misuse), 0);
            if (j->submit_rc == 0) {
                accepted++;
                assert_int_equal(a + h, 1);
            } else if (j->submit_rc == BAND_ECANCELED) {
                assert_int_equal(a, 0);
                assert_int_equal(h, 1);
            } else {
                assert_true(j->submit_rc == BAND_ECLOSED || j->submit_rc == BAND_EAGAIN ||
                            j->submit_rc == BAND_ETIMEDOUT);
                assert_int_equal(a + h, 0);
                total_refused++;
            }
            ran += (uint64_t)a;
            handed += (uint64_t)h;
        }
        band_exec_stats st;
        assert_int_equal(band_exec_get_stats(r->ex, &st), 0);
        assert_u64_equal(st.completed, ran);
        assert_u64_equal(st.cancelled + st.drained, handed);
        assert_u64_equal(st.accepted, accepted);
        assert_u64_equal(st.queued, 0);
        assert_u64_equal(st.running, 0);
        if (mode == BAND_EXEC_DRAIN)
            assert_u64_equal(st.drained, 0);
        assert_int_equal(band_exec_destroy(r->ex), 0);
        total_ran += ran;
        total_handed += handed;
        rounds++;
    }
    free(r);
    printf("[ STRESS   ] exec: %d rounds, %llu ran, %llu handed back, %llu refused\n", rounds,
           (unsigned long long)total_ran, (unsigned long long)total_handed,
           (unsigned long long)total_refused);
    assert_true(rounds >= 4);
}

/* Many short-lived executors with immediate shutdown while workers are busy: create,
 * submit, shut down NOW, join, destroy - checks thread start/stop and the drain race. */
static int busy_sub(void *arg)
{
    struct round *r = arg;
    int k;
    while ((k = atomic_fetch_add(&r->next, 1)) < 64)
        r->jobs[k].submit_rc = band_exec_try_run(r->ex, &r->jobs[k].job);
    return 0;
}

static void test_exec_churn(void **state)
{
    (void)state;
    band_time until = band_now() + BAND_SEC;
    struct round *r = malloc(sizeof(*r));
    assert_non_null(r);
    int n = 0;
    while (n < 200 && band_now() < until) {
        memset(r, 0, sizeof(*r));
        for (int i = 0; i < 64; i++)
            band_job_init(&r->jobs[i].job, sjob_fn, NULL);
        band_exec_opts o;
        memset(&o, 0, sizeof(o));
        o.handback = sjob_handback;
        assert_int_equal(band_exec_create(&r->ex, 1 + (unsigned)(n % 3), 16, &o), 0);
        struct test_thread t;
        assert_int_equal(test_thread_start(&t, busy_sub, r), 0);
        assert_int_equal(band_exec_shutdown(r->ex, BAND_EXEC_NOW), 0);
        assert_int_equal(test_thread_join(&t), 0);
        assert_int_equal(band_exec_destroy(r->ex), BAND_EBUSY); /* not joined yet */
        assert_int_equal(band_exec_join(r->ex), 0);
        assert_int_equal(band_exec_destroy(r->ex), 0);
        for (int i = 0; i < 64; i++) {
            struct sjob *j = &r->jobs[i];
            int total = atomic_load(&j->ran) + atomic_load(&j->handed);
            assert_int_equal(total, j->submit_rc == 0 ? 1 : 0);
            assert_int_equal(atomic_load(&j->misuse), 0);
        }
        n++;
    }
    free(r);
    printf("[ STRESS   ] exec churn: %d executors\n", n);
}

/* ---------------------------------------------------------------------------------- */
/* band_limit under threads                                                            */

#define LIM_THREADS 4
#define LIM_OPS     20000

struct lim_ctx {
    band_limit *l;
    atomic_llong clock; /* a shared fake clock: each operation advances it */
    int id;
    long granted, refused;
};

static int lim_worker(void *arg)
{
    struct lim_ctx *c = arg;
    uint64_t rng = (uint64_t)c->id * 31u + 5u;
    for (int i = 0; i < LIM_OPS; i++) {
        int rc = (i & 1) ? band_limit_try_acquire(c->l)
                         : band_limit_acquire(c->l, band_now() + 100 * BAND_USEC, NULL);
        if (rc != 0) {
            c->refused++;
            continue;
        }
        c->granted++;
        band_time start = (band_time)atomic_fetch_add(&c->clock, 3);
        band_time rtt = (band_time)test_rng_range(&rng, 50, 400);
        uint64_t r = test_rng_next(&rng) % 100;
        int outcome = r < 1 ? BAND_LIMIT_DROPPED : (r < 4 ? BAND_LIMIT_IGNORE : BAND_LIMIT_OK);
        if (band_limit_on_done(c->l, start, start + rtt, outcome) != 0)
            return -1;
    }
    return 0;
}

/* Threads acquire, report and race the controller's adjustments; at quiescence the
 * semaphore holds exactly the limit (no debt, nothing lost or granted twice). */
static void test_limit_threads(void **state)
{
    (void)state;
    for (int algo = 0; algo < 2; algo++) {
        band_limit_opts o;
        memset(&o, 0, sizeof(o));
        o.algorithm = algo;
        o.initial = 8;
        o.min = 2;
        o.max = 64;
        o.rtt_limit = 390;
        o.window = 16;
        band_limit *l = NULL;
        assert_int_equal(band_limit_create(&l, &o), 0);
        struct lim_ctx c[LIM_THREADS];
        struct test_thread th[LIM_THREADS];
        for (int i = 0; i < LIM_THREADS; i++) {
            memset(&c[i], 0, sizeof(c[i]));
            c[i].l = l;
            c[i].id = i;
            atomic_init(&c[i].clock, 1000);
            assert_int_equal(test_thread_start(&th[i], lim_worker, &c[i]), 0);
        }
        for (int k = 0; k < 50; k++) {
            band_limit_stats st;
            assert_int_equal(band_limit_get_stats(l, &st), 0);
            assert_true(st.limit >= 2 && st.limit <= 64);
        }
        long granted = 0;
        for (int i = 0; i < LIM_THREADS; i++) {
            assert_int_equal(test_thread_join(&th[i]), 0);
            granted += c[i].granted;
        }
        band_limit_stats st;
        assert_int_equal(band_limit_get_stats(l, &st), 0);
        assert_u64_equal(st.inflight, 0);
        assert_true(st.limit >= 2 && st.limit <= 64);
        assert_u64_equal(st.samples + st.ignored, (uint64_t)granted);
        band_sem_stats ss;
        assert_int_equal(band_sem_get_stats(band_limit_sem(l), &ss), 0);
        assert_u64_equal(ss.debt, 0);
        assert_u64_equal(ss.available, st.limit);
        assert_u64_equal(ss.waiters, 0);
        printf("[ STRESS   ] limit %s: %ld granted, limit %llu, %llu up, %llu down\n",
               algo == BAND_LIMIT_AIMD ? "AIMD" : "GRADIENT", granted, (unsigned long long)st.limit,
               (unsigned long long)st.increases, (unsigned long long)st.decreases);
        assert_int_equal(band_limit_destroy(l), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_races),
        cmocka_unit_test(test_exec_churn),
        cmocka_unit_test(test_limit_threads),
    };
    return cmocka_run_group_tests_name("stress_exec", tests, NULL, NULL);
}

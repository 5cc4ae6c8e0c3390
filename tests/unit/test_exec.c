/* SPDX-License-Identifier: MIT */
/*
 * test_exec.c - the bounded executor (exec.h): argument checks, FIFO execution, full queue
 * (try_run refuses, run times out or waits in order), per-job cancellation before start
 * (handed back exactly once), graceful and immediate shutdown, submitters blocked at
 * shutdown, jobs that resubmit themselves or shut the executor down, misuse from a worker,
 * and the queue-time and service-time histograms on a fake clock.
 *
 * A "gate" job blocks its worker on a latch until the test opens it, so the test controls
 * exactly what is queued and what runs. Only the main thread asserts; jobs and handbacks
 * record what they saw in the fixture.
 */
#include "test.h"

#include <string.h>

#define MAXJ 64

struct fixture {
    band_exec *ex;
    band_latch *gate;
    atomic_llong clock; /* fake clock for the histograms */
    band_job jobs[MAXJ];
    atomic_int ran[MAXJ];    /* times each job's function ran */
    atomic_int handed[MAXJ]; /* times each job was handed back */
    atomic_int reason[MAXJ]; /* the handback's reason */
    atomic_int order[MAXJ];  /* order[i] = the i-th job to run */
    atomic_int norder;
    atomic_int gate_started;
    long long service_add; /* a job's function advances the fake clock by this */
};

static struct fixture *g_f; /* jobs reach the fixture through their arg, handbacks via ctx */

static int job_index(struct fixture *f, band_job *job)
{
    return (int)(job - f->jobs);
}

static void job_fn(band_job *job)
{
    struct fixture *f = job->arg;
    int i = job_index(f, job);
    atomic_fetch_add(&f->ran[i], 1);
    int k = atomic_fetch_add(&f->norder, 1);
    if (k < MAXJ)
        atomic_store(&f->order[k], i);
    if (f->service_add != 0)
        atomic_fetch_add(&f->clock, f->service_add);
}

static void gate_fn(band_job *job)
{
    struct fixture *f = job->arg;
    atomic_fetch_add(&f->ran[job_index(f, job)], 1);
    atomic_store(&f->gate_started, 1);
    (void)band_latch_wait(f->gate, BAND_FOREVER, NULL);
}

static void handback_fn(band_job *job, int reason, void *ctx)
{
    struct fixture *f = ctx;
    int i = job_index(f, job);
    atomic_store(&f->reason[i], reason);
    atomic_fetch_add(&f->handed[i], 1);
}

static band_time fake_clock(void *ctx)
{
    struct fixture *f = ctx;
    return (band_time)atomic_load(&f->clock);
}

static int make_exec(struct fixture *f, unsigned workers, uint64_t cap)
{
    band_exec_opts o;
    memset(&o, 0, sizeof(o));
    o.handback = handback_fn;
    o.handback_ctx = f;
    o.clock = fake_clock;
    o.clock_ctx = f;
    int rc = band_exec_create(&f->ex, workers, cap, &o);
    if (rc == 0)
        rc = band_exec_set_name(f->ex, "test-exec");
    return rc;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_latch_create(&f->gate, 1) != 0) {
        free(f);
        return -1;
    }
    for (int i = 0; i < MAXJ; i++)
        band_job_init(&f->jobs[i], job_fn, f);
    g_f = f;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    (void)band_latch_count_down(f->gate, band_latch_count(f->gate));
    int rc = 0;
    if (f->ex != NULL) { /* shut down (a no-op if the test did), join, destroy */
        (void)band_exec_shutdown(f->ex, BAND_EXEC_DRAIN);
        rc = band_exec_join(f->ex);
        rc = rc != 0 ? rc : band_exec_destroy(f->ex);
    }
    (void)band_latch_destroy(f->gate);
    free(f);
    return rc == 0 ? 0 : -1;
}

static bool cond_gate_started(void *arg)
{
    struct fixture *f = arg;
    return atomic_load(&f->gate_started) != 0;
}

static bool cond_one_waiting(void *arg)
{
    struct fixture *f = arg;
    band_exec_stats st;
    return band_exec_get_stats(f->ex, &st) == 0 && st.waiting >= 1;
}

/* Submit job @i as a gate and wait until a worker runs it. */
static void start_gate(struct fixture *f, int i)
{
    band_job_init(&f->jobs[i], gate_fn, f);
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[i]), 0);
    assert_true(test_wait_until(cond_gate_started, f, 10 * BAND_SEC));
}

static void open_gate(struct fixture *f)
{
    assert_int_equal(band_latch_count_down(f->gate, 1), 0);
}

static band_exec_stats stats_of(struct fixture *f)
{
    band_exec_stats st;
    assert_int_equal(band_exec_get_stats(f->ex, &st), 0);
    return st;
}

/* ---------------------------------------------------------------------------------- */

static void test_create_args(void **state)
{
    struct fixture *f = *state;
    band_exec_opts o;
    memset(&o, 0, sizeof(o));
    band_exec *ex = NULL;
    assert_int_equal(band_exec_create(NULL, 1, 4, &o), BAND_EINVAL);
    assert_int_equal(band_exec_create(NULL, 1, 4, NULL), BAND_EINVAL);
    assert_int_equal(band_exec_create(&ex, 0, 4, &o), BAND_EINVAL); /* 0 workers */
    assert_int_equal(band_exec_create(&ex, BAND_EXEC_MAX_WORKERS + 1, 4, &o), BAND_EINVAL);
    assert_int_equal(band_exec_create(&ex, 1, 0, &o), BAND_EINVAL);
    assert_int_equal(band_exec_create(&ex, 1, BAND_MAX_UNITS + 1, NULL), BAND_EINVAL);
    assert_null(ex);
    assert_int_equal(band_exec_destroy(NULL), 0);
    assert_int_equal(band_exec_set_name(NULL, "x"), BAND_EINVAL);
    assert_int_equal(band_exec_shutdown(NULL, BAND_EXEC_DRAIN), BAND_EINVAL);
    assert_int_equal(band_exec_join(NULL), BAND_EINVAL);
    assert_int_equal(band_exec_get_stats(NULL, NULL), BAND_EINVAL);
    assert_int_equal(band_exec_get_histos(NULL, NULL, NULL), BAND_EINVAL);
    assert_int_equal(band_exec_cancel(NULL), BAND_EINVAL);
    assert_int_equal(band_job_state(NULL), BAND_EINVAL);

    assert_int_equal(make_exec(f, 2, 4), 0);
    assert_int_equal(band_exec_shutdown(f->ex, 5), BAND_EINVAL);
    assert_int_equal(band_exec_join(f->ex), BAND_EINVAL); /* not shut down: would hang */
    assert_int_equal(band_exec_try_run(f->ex, NULL), BAND_EINVAL);
    band_job nofn;
    band_job_init(&nofn, NULL, NULL);
    assert_int_equal(band_exec_try_run(f->ex, &nofn), BAND_EINVAL);
    assert_int_equal(band_exec_run(NULL, &f->jobs[0], 0, NULL), BAND_EINVAL);
    band_exec_stats st = stats_of(f);
    assert_int_equal(st.workers, 2);
    assert_u64_equal(st.capacity, 4);
    assert_int_equal(st.closed, 0);
    assert_string_equal(st.name, "test-exec");
}

/* The name is copied, cleared by NULL or "", and a name too long changes nothing. */
static void test_set_name(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(band_exec_create(&f->ex, 1, 2, NULL), 0); /* NULL opts: no hooks */
    assert_string_equal(stats_of(f).name, "");
    char name[BAND_NAME_MAX + 1];
    memset(name, 'x', sizeof(name));
    name[BAND_NAME_MAX - 1] = '\0';
    assert_int_equal(band_exec_set_name(f->ex, name), 0); /* the longest that fits */
    assert_string_equal(stats_of(f).name, name);
    name[BAND_NAME_MAX - 1] = 'x';
    name[BAND_NAME_MAX] = '\0';
    assert_int_equal(band_exec_set_name(f->ex, name), BAND_EINVAL);
    name[BAND_NAME_MAX - 1] = '\0';
    assert_string_equal(stats_of(f).name, name); /* unchanged */
    assert_int_equal(band_exec_set_name(f->ex, "pool"), 0);
    assert_string_equal(stats_of(f).name, "pool");
    assert_int_equal(band_exec_set_name(f->ex, ""), 0);
    assert_string_equal(stats_of(f).name, "");
    assert_int_equal(band_exec_set_name(f->ex, "pool"), 0);
    assert_int_equal(band_exec_set_name(f->ex, NULL), 0);
    assert_string_equal(stats_of(f).name, "");
}

/* One worker runs jobs in submission order; every job runs once; counters add up. */
static void test_fifo_and_counts(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(make_exec(f, 1, 8), 0);
    start_gate(f, 0);
    for (int i = 1; i <= 8; i++) {
        assert_int_equal(band_exec_run(f->ex, &f->jobs[i], BAND_FOREVER, NULL), 0);
        assert_int_equal(band_job_state(&f->jobs[i]), BAND_JOB_QUEUED);
    }
    /* Submitting a queued job again is refused and changes nothing. */
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[3]), BAND_EINVAL);
    band_exec_stats st = stats_of(f);
    assert_u64_equal(st.queued, 8);
    assert_u64_equal(st.running, 1);
    open_gate(f);
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0);
    assert_int_equal(band_exec_join(f->ex), 0);
    assert_int_equal(band_exec_join(f->ex), 0); /* twice is fine */
    assert_int_equal(atomic_load(&f->norder), 8);
    for (int i = 1; i <= 8; i++) {
        assert_int_equal(atomic_load(&f->ran[i]), 1);
        assert_int_equal(atomic_load(&f->order[i - 1]), i);
        assert_int_equal(band_job_state(&f->jobs[i]), BAND_JOB_RUNNING);
    }
    st = stats_of(f);
    assert_u64_equal(st.accepted, 9);
    assert_u64_equal(st.completed, 9);
    assert_u64_equal(st.queued, 0);
    assert_u64_equal(st.running, 0);
    assert_u64_equal(st.cancelled + st.drained, 0);
    assert_int_equal(st.closed, 1);
}

/* A full queue: try_run refuses with BAND_EAGAIN, run with a past deadline times out, and
 * the refused job is IDLE and untouched; a blocked run gets room when the worker pops. */
static void test_full(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(make_exec(f, 1, 2), 0);
    start_gate(f, 0);
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[1]), 0);
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[2]), 0);
    band_job *j3 = &f->jobs[3];
    assert_int_equal(band_exec_try_run(f->ex, j3), BAND_EAGAIN);
    assert_int_equal(band_job_state(j3), BAND_JOB_IDLE);
    assert_ptr_equal(j3->fn, job_fn);
    assert_ptr_equal(j3->arg, f);
    assert_int_equal(band_exec_run(f->ex, j3, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_exec_run(f->ex, j3, band_now() + BAND_MSEC, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_job_state(j3), BAND_JOB_IDLE);
    band_exec_stats st = stats_of(f);
    assert_u64_equal(st.refused_full, 3);
    /* Cancelling an idle job is refused. */
    assert_int_equal(band_exec_cancel(j3), BAND_EINVAL);
    open_gate(f);
    /* Now there is room again (the worker drains); run waits for it. */
    assert_int_equal(band_exec_run(f->ex, j3, BAND_FOREVER, NULL), 0);
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0);
    assert_int_equal(band_exec_join(f->ex), 0);
    for (int i = 1; i <= 3; i++)
        assert_int_equal(atomic_load(&f->ran[i]), 1);
}

/* Cancel before start: the job never runs and is handed back once with BAND_ECANCELED by
 * the worker that meets it; a running job answers BAND_EALREADY; a second cancel
 * BAND_EINVAL. A job handed back may be submitted again. */
static void test_cancel(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(make_exec(f, 1, 8), 0);
    start_gate(f, 0);
    assert_int_equal(band_exec_cancel(&f->jobs[0]), BAND_EALREADY); /* the gate runs */
    for (int i = 1; i <= 4; i++)
        assert_int_equal(band_exec_try_run(f->ex, &f->jobs[i]), 0);
    assert_int_equal(band_exec_cancel(&f->jobs[2]), 0);
    assert_int_equal(band_job_state(&f->jobs[2]), BAND_JOB_CANCELLED);
    assert_int_equal(band_exec_cancel(&f->jobs[2]), BAND_EINVAL);
    /* Still in the queue: resubmitting now would put it in twice. */
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[2]), BAND_EINVAL);
    assert_int_equal(band_exec_cancel(&f->jobs[4]), 0);
    open_gate(f);
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0);
    assert_int_equal(band_exec_join(f->ex), 0);
    assert_int_equal(atomic_load(&f->ran[1]), 1);
    assert_int_equal(atomic_load(&f->ran[3]), 1);
    assert_int_equal(atomic_load(&f->ran[2]), 0);
    assert_int_equal(atomic_load(&f->ran[4]), 0);
    assert_int_equal(atomic_load(&f->handed[2]), 1);
    assert_int_equal(atomic_load(&f->handed[4]), 1);
    assert_int_equal(atomic_load(&f->reason[2]), BAND_ECANCELED);
    assert_int_equal(atomic_load(&f->handed[1]) + atomic_load(&f->handed[3]), 0);
    assert_int_equal(band_job_state(&f->jobs[2]), BAND_JOB_IDLE); /* handed back */
    band_exec_stats st = stats_of(f);
    assert_u64_equal(st.cancelled, 2);
    assert_u64_equal(st.completed, 3);
    assert_u64_equal(st.accepted, 5);
    /* The executor is closed: a handed-back job is refused with BAND_ECLOSED. */
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[2]), BAND_ECLOSED);
    assert_int_equal(band_job_state(&f->jobs[2]), BAND_JOB_IDLE);
    assert_int_equal(band_exec_cancel(&f->jobs[1]), BAND_EALREADY);
}

/* Graceful shutdown: later submissions fail with BAND_ECLOSED; everything queued runs. */
static void test_shutdown_drain(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(make_exec(f, 2, 16), 0);
    start_gate(f, 0);
    for (int i = 1; i <= 10; i++)
        assert_int_equal(band_exec_try_run(f->ex, &f->jobs[i]), 0);
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0);
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0); /* harmless */
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[11]), BAND_ECLOSED);
    assert_int_equal(band_exec_run(f->ex, &f->jobs[11], BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(band_job_state(&f->jobs[11]), BAND_JOB_IDLE);
    open_gate(f);
    assert_int_equal(band_exec_join(f->ex), 0);
    for (int i = 1; i <= 10; i++) {
        assert_int_equal(atomic_load(&f->ran[i]), 1);
        assert_int_equal(atomic_load(&f->handed[i]), 0);
    }
    band_exec_stats st = stats_of(f);
    assert_u64_equal(st.refused_closed, 2);
    assert_u64_equal(st.completed, 11);
}

/* Immediate shutdown: the running job finishes, every queued job is handed back once
 * (BAND_ECLOSED, or BAND_ECANCELED for one cancelled before), nothing queued runs. */
static void test_shutdown_now(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(make_exec(f, 1, 16), 0);
    start_gate(f, 0);
    for (int i = 1; i <= 10; i++)
        assert_int_equal(band_exec_try_run(f->ex, &f->jobs[i]), 0);
    assert_int_equal(band_exec_cancel(&f->jobs[5]), 0);
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_NOW), 0);
    /* Handed back on this thread, before shutdown returned (the worker is at the gate). */
    for (int i = 1; i <= 10; i++) {
        assert_int_equal(atomic_load(&f->handed[i]), 1);
        assert_int_equal(atomic_load(&f->reason[i]), i == 5 ? BAND_ECANCELED : BAND_ECLOSED);
        assert_int_equal(band_job_state(&f->jobs[i]), i == 5 ? BAND_JOB_IDLE : BAND_JOB_DRAINED);
    }
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0); /* no downgrade */
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[11]), BAND_ECLOSED);
    open_gate(f);
    assert_int_equal(band_exec_join(f->ex), 0);
    assert_int_equal(atomic_load(&f->ran[0]), 1);
    for (int i = 1; i <= 10; i++)
        assert_int_equal(atomic_load(&f->ran[i]), 0);
    band_exec_stats st = stats_of(f);
    assert_u64_equal(st.drained, 9);
    assert_u64_equal(st.cancelled, 1);
    assert_u64_equal(st.completed, 1);
    assert_u64_equal(st.accepted, 11);
    /* A drained job may be submitted elsewhere (here: refused, closed) - it is the
     * caller's again. */
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[1]), BAND_ECLOSED);
}

/* A DRAIN shutdown can be upgraded to NOW while the queue still holds jobs. */
static void test_shutdown_upgrade(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(make_exec(f, 1, 8), 0);
    start_gate(f, 0);
    for (int i = 1; i <= 5; i++)
        assert_int_equal(band_exec_try_run(f->ex, &f->jobs[i]), 0);
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0);
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_NOW), 0);
    open_gate(f);
    assert_int_equal(band_exec_join(f->ex), 0);
    for (int i = 1; i <= 5; i++) {
        assert_int_equal(atomic_load(&f->ran[i]) + atomic_load(&f->handed[i]), 1);
        assert_int_equal(atomic_load(&f->ran[i]), 0);
    }
}

struct blocked_run {
    struct fixture *f;
    band_job *job;
};

static int blocked_run_fn(void *arg)
{
    struct blocked_run *b = arg;
    return band_exec_run(b->f->ex, b->job, BAND_FOREVER, NULL);
}

/* A submitter blocked on a full queue fails with BAND_ECLOSED when the executor shuts
 * down, and keeps its job. */
static void test_blocked_submitter_closed(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(make_exec(f, 1, 1), 0);
    start_gate(f, 0);
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[1]), 0);
    struct blocked_run b = {f, &f->jobs[2]};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, blocked_run_fn, &b), 0);
    assert_true(test_wait_until(cond_one_waiting, f, 10 * BAND_SEC));
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0);
    assert_int_equal(test_thread_join(&t), BAND_ECLOSED);
    assert_int_equal(band_job_state(&f->jobs[2]), BAND_JOB_IDLE);
    open_gate(f);
    assert_int_equal(band_exec_join(f->ex), 0);
    assert_int_equal(atomic_load(&f->ran[1]), 1);
    assert_int_equal(atomic_load(&f->ran[2]), 0);
}

/* A blocked submitter gets room when a worker pops (room goes to waiters in order). */
static void test_blocked_submitter_room(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(make_exec(f, 1, 1), 0);
    start_gate(f, 0);
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[1]), 0);
    struct blocked_run b = {f, &f->jobs[2]};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, blocked_run_fn, &b), 0);
    assert_true(test_wait_until(cond_one_waiting, f, 10 * BAND_SEC));
    /* A newcomer cannot take the room the waiting submitter is owed. */
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[3]), BAND_EAGAIN);
    open_gate(f);
    assert_int_equal(test_thread_join(&t), 0);
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0);
    assert_int_equal(band_exec_join(f->ex), 0);
    assert_int_equal(atomic_load(&f->ran[1]), 1);
    assert_int_equal(atomic_load(&f->ran[2]), 1);
}

/* A job resubmits itself from its own function, N times. */
static atomic_int g_self_runs;
static void self_fn(band_job *job)
{
    struct fixture *f = job->arg;
    if (atomic_fetch_add(&g_self_runs, 1) + 1 < 50)
        (void)band_exec_try_run(f->ex, job);
}

/* A job that shuts its own executor down, then tries join and destroy (refused: join
 * would wait for itself, and its workers are not joined, so destroy is busy). */
static atomic_int g_join_rc, g_destroy_rc;
static void shutdown_fn(band_job *job)
{
    struct fixture *f = job->arg;
    (void)band_exec_shutdown(f->ex, BAND_EXEC_DRAIN);
    atomic_store(&g_join_rc, band_exec_join(f->ex));
    atomic_store(&g_destroy_rc, band_exec_destroy(f->ex));
}

static void test_reentrant_jobs(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(make_exec(f, 2, 4), 0);
    atomic_store(&g_self_runs, 0);
    band_job_init(&f->jobs[0], self_fn, f);
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[0]), 0);
    /* Wait for the 50 runs: poll the counter (bounded). */
    band_time until = band_now() + 10 * BAND_SEC;
    while (atomic_load(&g_self_runs) < 50 && band_now() < until)
        sched_yield();
    assert_int_equal(atomic_load(&g_self_runs), 50);
    band_job_init(&f->jobs[1], shutdown_fn, f);
    assert_int_equal(band_exec_run(f->ex, &f->jobs[1], BAND_FOREVER, NULL), 0);
    /* The shutdown from inside the job closes the executor; join from here succeeds. */
    until = band_now() + 10 * BAND_SEC;
    while (stats_of(f).closed == 0 && band_now() < until)
        sched_yield();
    assert_int_equal(band_exec_join(f->ex), 0);
    assert_int_equal(atomic_load(&g_join_rc), BAND_EINVAL);
    assert_int_equal(atomic_load(&g_destroy_rc), BAND_EBUSY);
}

/* Queue time and service time, exactly, on the fake clock. */
static void test_histograms(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(make_exec(f, 1, 4), 0);
    atomic_store(&f->clock, 0);
    start_gate(f, 0); /* enqueued and started at 0: queue time 0 */
    atomic_store(&f->clock, 1000);
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[1]), 0); /* enqueued at 1000 */
    atomic_store(&f->clock, 5000);
    f->service_add = 250; /* job 1 runs from 5000 to 5250 */
    open_gate(f);         /* the gate ends at 5000: service 5000 */
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0);
    assert_int_equal(band_exec_join(f->ex), 0);
    band_histo_snapshot *q = malloc(sizeof(*q)), *s = malloc(sizeof(*s));
    assert_true(q && s);
    assert_int_equal(band_exec_get_histos(f->ex, q, s), 0);
    assert_u64_equal(q->count, 2);
    assert_u64_equal(q->min, 0);
    assert_u64_equal(q->max, 4000);
    assert_u64_equal(q->sum, 4000);
    assert_u64_equal(s->count, 2);
    assert_u64_equal(s->min, 250);
    assert_u64_equal(s->max, 5000);
    assert_u64_equal(s->sum, 5250);
    /* A percentile is its bucket's upper bound: 250 lies in [240, 255]. */
    assert_u64_equal(band_histo_percentile(s, 0.5),
                     band_histo_bucket_high(band_histo_bucket_of(250)));
    assert_u64_equal(band_histo_percentile(s, 1.0), 5000);
    /* Either pointer may be NULL. */
    assert_int_equal(band_exec_get_histos(f->ex, NULL, s), 0);
    assert_int_equal(band_exec_get_histos(f->ex, q, NULL), 0);
    free(q);
    free(s);
}

/* Without a handback callback, cancelled and drained jobs are simply not run. Uses the
 * real clock (clock NULL). */
static void test_no_handback(void **state)
{
    struct fixture *f = *state;
    band_exec_opts o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(band_exec_create(&f->ex, 1, 4, &o), 0);
    start_gate(f, 0);
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[1]), 0);
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[2]), 0);
    assert_int_equal(band_exec_cancel(&f->jobs[1]), 0);
    open_gate(f);
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0);
    assert_int_equal(band_exec_join(f->ex), 0);
    assert_int_equal(atomic_load(&f->ran[1]), 0);
    assert_int_equal(atomic_load(&f->ran[2]), 1);
    band_exec_stats st = stats_of(f);
    assert_u64_equal(st.cancelled, 1);
    band_histo_snapshot *s = malloc(sizeof(*s));
    assert_non_null(s);
    assert_int_equal(band_exec_get_histos(f->ex, NULL, s), 0);
    assert_u64_equal(s->count, 2);
    free(s);
}

/* Destroy never shuts down and never waits: BAND_EBUSY, changing nothing, until the
 * executor was shut down and joined; then it frees it. */
static void test_destroy_busy_until_joined(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(make_exec(f, 2, 32), 0);
    start_gate(f, 0);
    for (int i = 1; i < 32; i++)
        assert_int_equal(band_exec_run(f->ex, &f->jobs[i], BAND_FOREVER, NULL), 0);
    assert_int_equal(band_exec_destroy(f->ex), BAND_EBUSY); /* open */
    band_exec_stats st = stats_of(f);
    assert_int_equal(st.closed, 0); /* destroy did not shut it down */
    assert_u64_equal(st.accepted, 32);
    assert_int_equal(band_exec_shutdown(f->ex, BAND_EXEC_DRAIN), 0);
    assert_int_equal(band_exec_destroy(f->ex), BAND_EBUSY); /* shut down, not joined */
    assert_int_equal(band_exec_try_run(f->ex, &f->jobs[40]), BAND_ECLOSED);
    open_gate(f);
    assert_int_equal(band_exec_join(f->ex), 0);
    for (int i = 0; i < 32; i++)
        assert_int_equal(atomic_load(&f->ran[i]), 1); /* the gate (job 0) and the 31 others */
    assert_int_equal(atomic_load(&f->ran[40]), 0);
    assert_int_equal(band_exec_destroy(f->ex), 0);
    f->ex = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_and_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_now, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_upgrade, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocked_submitter_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocked_submitter_room, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reentrant_jobs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_histograms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_handback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_busy_until_joined, setup, teardown),
    };
    return cmocka_run_group_tests_name("exec", tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_exec.h - executor throughput: band_exec beside a plain thread pool.
 *
 * A self-contained benchmark section (static functions only; band_bench.c hooks it in):
 *
 *     #include "bench_exec.h"
 *     ...
 *     if (want('h'))
 *         g_failures += bench_exec_section(cfg.quick, cfg.reps);
 *
 * and "bench_exec.h" added to band_bench's source list in bench/CMakeLists.txt (for
 * dependency tracking only). It needs nothing from band_bench.c.
 *
 * Workload: the calling thread submits N jobs, one at a time, blocking when the queue is
 * full, to an executor with 2 worker threads and a queue of 1024; each job runs a tiny
 * spin (0 steps: pure overhead; 200 steps: a small task) and marks itself done. Timing
 * runs from the first submission until every worker has been joined after a graceful
 * shutdown, so it includes draining the queue; thread creation is outside the timing.
 * Two variants, in the same run, in an order that rotates every round:
 *
 *   band   band_exec_run(FOREVER) into band_exec (a band_chan of job pointers)
 *   pool   a plain pool written here: one mutex, two condition variables, a ring of
 *          {fn, arg}; a side signals the other only when someone sleeps there
 *
 * Every job must run exactly once (checked per job); the figure is jobs per second, the
 * median of the rounds, and the ratio is the median of band/pool per round.
 */
#ifndef BAND_BENCH_EXEC_H
#define BAND_BENCH_EXEC_H

#include "bench_util.h"

#include <band/exec.h>

#ifndef BENCH_EX_WORKERS
#define BENCH_EX_WORKERS 2 /* -DBENCH_EX_WORKERS=N to try other pool sizes */
#endif
#define BENCH_EX_CAP      1024
#define BENCH_EX_MAX_REPS 64

/* ---------------------------------------------------------------- the plain pool */

struct bench_pool_item {
    void (*fn)(void *);
    void *arg;
};

struct bench_pool {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    struct bench_pool_item *ring;
    size_t cap, head, len;
    int closed;
    int sleeping_workers, sleeping_submitters;
    pthread_t th[BENCH_EX_WORKERS];
};

static void *bench_pool_worker(void *p)
{
    struct bench_pool *q = p;
    for (;;) {
        pthread_mutex_lock(&q->mu);
        while (q->len == 0 && !q->closed) {
            q->sleeping_workers++;
            pthread_cond_wait(&q->not_empty, &q->mu);
            q->sleeping_workers--;
        }
        if (q->len == 0) {
            pthread_mutex_unlock(&q->mu);
            return NULL;
        }
        struct bench_pool_item it = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
        if (q->sleeping_submitters > 0)
            pthread_cond_signal(&q->not_full);
        pthread_mutex_unlock(&q->mu);
        it.fn(it.arg);
    }
}

static int bench_pool_start(struct bench_pool *q, size_t cap)
{
    memset(q, 0, sizeof(*q));
    q->ring = calloc(cap, sizeof(*q->ring));
    if (q->ring == NULL)
        return -1;
    q->cap = cap;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    for (int i = 0; i < BENCH_EX_WORKERS; i++)
        if (pthread_create(&q->th[i], NULL, bench_pool_worker, q) != 0)
            return -1;
    return 0;
}

static void bench_pool_submit(struct bench_pool *q, void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&q->mu);
    while (q->len == q->cap) {
        q->sleeping_submitters++;
        pthread_cond_wait(&q->not_full, &q->mu);
        q->sleeping_submitters--;
    }
    q->ring[(q->head + q->len) % q->cap] = (struct bench_pool_item){fn, arg};
    q->len++;
    if (q->sleeping_workers > 0)
        pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
}

/* Graceful: workers finish the queue, then exit; joined here. */
static void bench_pool_stop(struct bench_pool *q)
{
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < BENCH_EX_WORKERS; i++)
        pthread_join(q->th[i], NULL);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    pthread_mutex_destroy(&q->mu);
    free(q->ring);
}

/* ---------------------------------------------------------------- the jobs */

struct bench_ex_job {
    band_job job; /* band variant */
    int spin;
    _Atomic unsigned char done;
    uint64_t sink;
};

static void bench_ex_work(struct bench_ex_job *j)
{
    j->sink = bench_tiny_spin(j->spin, (uint64_t)j->spin + 1u);
    atomic_fetch_add_explicit(&j->done, 1, memory_order_relaxed);
}

static void bench_ex_band_fn(band_job *job)
{
    bench_ex_work((struct bench_ex_job *)job);
}

static void bench_ex_pool_fn(void *arg)
{
    bench_ex_work(arg);
}

static struct bench_ex_job *g_bench_ex_jobs;
static long g_bench_ex_fail;

/* Reset @n jobs; @spin steps each. */
static void bench_ex_reset(long n, int spin)
{
    for (long i = 0; i < n; i++) {
        band_job_init(&g_bench_ex_jobs[i].job, bench_ex_band_fn, NULL);
        g_bench_ex_jobs[i].spin = spin;
        atomic_store_explicit(&g_bench_ex_jobs[i].done, 0, memory_order_relaxed);
    }
}

/* Every job ran exactly once. */
static void bench_ex_check(long n, const char *who)
{
    long bad = 0;
    for (long i = 0; i < n; i++)
        if (atomic_load_explicit(&g_bench_ex_jobs[i].done, memory_order_relaxed) != 1)
            bad++;
    if (bad != 0) {
        fprintf(stderr, "band_bench: FAILED: %s: %ld jobs did not run exactly once\n", who, bad);
        g_bench_ex_fail += bad;
    }
}

/* One run of the band executor: ns per job. */
static double bench_ex_band(long n, int spin)
{
    bench_ex_reset(n, spin);
    band_exec *ex = NULL;
    if (band_exec_create(&ex, BENCH_EX_WORKERS, BENCH_EX_CAP, NULL) != 0) {
        g_bench_ex_fail++;
        return 1e9;
    }
    uint64_t t0 = bench_now();
    for (long i = 0; i < n; i++)
        if (band_exec_run(ex, &g_bench_ex_jobs[i].job, BAND_FOREVER, NULL) != 0)
            g_bench_ex_fail++;
    (void)band_exec_shutdown(ex, BAND_EXEC_DRAIN);
    (void)band_exec_join(ex);
    uint64_t t1 = bench_now();
    band_exec_stats st;
    if (band_exec_get_stats(ex, &st) != 0 || st.completed != (uint64_t)n) {
        fprintf(stderr, "band_bench: FAILED: band_exec completed %llu of %ld\n",
                (unsigned long long)st.completed, n);
        g_bench_ex_fail++;
    }
    (void)band_exec_destroy(ex);
    bench_ex_check(n, "band_exec");
    return (double)(t1 - t0) / (double)n;
}

/* One run of the plain pool: ns per job. */
static double bench_ex_pool(long n, int spin)
{
    bench_ex_reset(n, spin);
    struct bench_pool q;
    if (bench_pool_start(&q, BENCH_EX_CAP) != 0) {
        g_bench_ex_fail++;
        return 1e9;
    }
    uint64_t t0 = bench_now();
    for (long i = 0; i < n; i++)
        bench_pool_submit(&q, bench_ex_pool_fn, &g_bench_ex_jobs[i]);
    bench_pool_stop(&q);
    uint64_t t1 = bench_now();
    bench_ex_check(n, "plain pool");
    return (double)(t1 - t0) / (double)n;
}

/*
 * bench_exec_section() - run the executor workload (section h) and print its table.
 * @quick: small counts (smoke test); @reps: rounds (1..64). Returns the number of failed
 * calls or checks (0 when every job ran exactly once).
 */
static long bench_exec_section(int quick, int reps)
{
    long n = quick ? 20000 : 400000;
    const int spins[2] = {0, 200};
    if (reps < 1)
        reps = 1;
    if (reps > BENCH_EX_MAX_REPS)
        reps = BENCH_EX_MAX_REPS;
    g_bench_ex_fail = 0;
    g_bench_ex_jobs = calloc((size_t)n, sizeof(*g_bench_ex_jobs));
    if (g_bench_ex_jobs == NULL) {
        fprintf(stderr, "band_bench: FAILED: out of memory for %ld jobs\n", n);
        return 1;
    }
    printf("\n(h) executor throughput: 1 submitter, %d workers, queue %d, %ld jobs per run, "
           "%d rounds\n",
           BENCH_EX_WORKERS, BENCH_EX_CAP, n, reps);
    printf("  %-34s %12s %9s %9s   %s\n", "variant", "M jobs/s", "min", "max",
           "band / pool throughput [range]");
    for (int s = 0; s < 2; s++) {
        double band_ns[BENCH_EX_MAX_REPS], pool_ns[BENCH_EX_MAX_REPS];
        (void)bench_ex_band(n / 10, spins[s]); /* warm-up */
        (void)bench_ex_pool(n / 10, spins[s]);
        for (int r = 0; r < reps; r++) {
            if (r & 1) {
                pool_ns[r] = bench_ex_pool(n, spins[s]);
                band_ns[r] = bench_ex_band(n, spins[s]);
            } else {
                band_ns[r] = bench_ex_band(n, spins[s]);
                pool_ns[r] = bench_ex_pool(n, spins[s]);
            }
        }
        double ratio[BENCH_EX_MAX_REPS], bm[BENCH_EX_MAX_REPS], pm[BENCH_EX_MAX_REPS];
        for (int r = 0; r < reps; r++) {
            ratio[r] = pool_ns[r] / band_ns[r]; /* throughput ratio band / pool */
            bm[r] = 1e3 / band_ns[r];
            pm[r] = 1e3 / pool_ns[r];
        }
        double rmed = bench_median(ratio, reps), bmed = bench_median(bm, reps),
               pmed = bench_median(pm, reps);
        char name[64];
        snprintf(name, sizeof name, "band_exec, job spin %d", spins[s]);
        printf("  %-34s %12.3f %9.3f %9.3f   %5.2fx [%.2f-%.2f]\n", name, bmed, bm[0], bm[reps - 1],
               rmed, ratio[0], ratio[reps - 1]);
        snprintf(name, sizeof name, "mutex+condvar pool, job spin %d", spins[s]);
        printf("  %-34s %12.3f %9.3f %9.3f\n", name, pmed, pm[0], pm[reps - 1]);
    }
    free(g_bench_ex_jobs);
    g_bench_ex_jobs = NULL;
    return g_bench_ex_fail;
}

#endif /* BAND_BENCH_EXEC_H */

/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_admit.h - multi-budget admission (band_admit) beside the same number of plain
 * semaphore acquisitions, in the same run. A self-contained section for band_bench:
 *
 *     #include "bench_admit.h"
 *     ...
 *     if (want('k'))
 *         g_failures += bench_admit_section(cfg.quick, cfg.reps);
 *
 * Workloads, for k = 1, 2 and 4 budgets:
 *   uncontended  one thread: band_admit_try_acquire() over k semaphores (1 unit each) +
 *                band_admit_release(), ns per admission; beside k band_sem_try_acquire(1)
 *                + k band_sem_release(1) on the same k semaphores.
 *   2 threads    two threads contend for k semaphores of 1 permit each:
 *                band_admit_acquire(FOREVER) + release, admissions/s in total; beside
 *                band_sem_acquire(FOREVER) of the k semaphores in one fixed order + release
 *                in reverse (the "held" helper).
 *                Both are strict FIFO, so most admissions queue and hand off.
 * Every figure is the median of @reps rounds; within a round the variants run in an order
 * that rotates. After each run the semaphores must be whole again (checked; a failure is
 * counted in the return value).
 */
#ifndef BAND_BENCH_ADMIT_H
#define BAND_BENCH_ADMIT_H

#include "bench_util.h"

#include <band/admit.h>

#define BENCH_ADMIT_MAXK  4
#define BENCH_ADMIT_REPS  64
#define BENCH_ADMIT_NVARS 12 /* {admit, plain} x {1, 2, 4} x {uncontended, 2 threads} */

struct bench_admit_ctx {
    band_sem *s[BENCH_ADMIT_MAXK];
    int k;
    int plain;
    long iters;
    long failures;
    pthread_barrier_t start;
    uint64_t t_start[2], t_end[2]; /* per thread: timed from the barrier to its last op */
    int next_id;
};

/* One thread's loop; returns the number of failed calls. */
static long bench_admit_loop(struct bench_admit_ctx *c, int blocking)
{
    long bad = 0;
    band_admit_req r;
    band_admit_req_init(&r, NULL, NULL);
    for (int i = 0; i < c->k; i++)
        bad += band_admit_req_add(&r, c->s[i], 1) != 0;
    /* One grant for the whole loop, as a program keeps one in the object its admitted work
     * belongs to: a released grant is empty again. */
    band_admit_grant g = BAND_ADMIT_GRANT_INIT;
    for (long it = 0; it < c->iters; it++) {
        if (c->plain) {
            for (int i = 0; i < c->k; i++)
                bad += (blocking ? band_sem_acquire(c->s[i], 1, BAND_FOREVER, NULL)
                                 : band_sem_try_acquire(c->s[i], 1)) != 0;
            for (int i = c->k; i-- > 0;)
                bad += band_sem_release(c->s[i], 1) != 0;
        } else {
            bad += (blocking ? band_admit_acquire(&r, &g, BAND_FOREVER, NULL)
                             : band_admit_try_acquire(&r, &g)) != 0;
            bad += band_admit_release(&g) != 0;
        }
    }
    return bad;
}

static void *bench_admit_thread(void *p)
{
    struct bench_admit_ctx *c = p;
    int id = __atomic_fetch_add(&c->next_id, 1, __ATOMIC_RELAXED);
    pthread_barrier_wait(&c->start);
    c->t_start[id] = bench_now();
    long bad = bench_admit_loop(c, 1);
    c->t_end[id] = bench_now();
    __atomic_fetch_add(&c->failures, bad, __ATOMIC_RELAXED);
    return NULL;
}

/* One run: ns per admission (per k-acquisition for plain). */
static double bench_admit_run(int k, int plain, int threads, long iters, long *failures)
{
    struct bench_admit_ctx c;
    memset(&c, 0, sizeof(c));
    c.k = k;
    c.plain = plain;
    c.iters = iters;
    for (int i = 0; i < k; i++) {
        if (band_sem_create(&c.s[i], 1, NULL) != 0) {
            (*failures)++;
            return 0;
        }
    }
    /* the plain variant acquires in one fixed order: by address, like band_admit's locks */
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && (uintptr_t)c.s[j - 1] > (uintptr_t)c.s[j]; j--) {
            band_sem *t = c.s[j];
            c.s[j] = c.s[j - 1];
            c.s[j - 1] = t;
        }
    uint64_t t0, t1;
    if (threads <= 1) {
        t0 = bench_now();
        c.failures = bench_admit_loop(&c, 0);
        t1 = bench_now();
    } else {
        pthread_t tid[2];
        pthread_barrier_init(&c.start, NULL, 2);
        for (int i = 0; i < 2; i++)
            pthread_create(&tid[i], NULL, bench_admit_thread, &c);
        for (int i = 0; i < 2; i++)
            pthread_join(tid[i], NULL);
        pthread_barrier_destroy(&c.start);
        t0 = c.t_start[0] < c.t_start[1] ? c.t_start[0] : c.t_start[1];
        t1 = c.t_end[0] > c.t_end[1] ? c.t_end[0] : c.t_end[1];
    }
    for (int i = 0; i < k; i++) {
        if (band_sem_available(c.s[i]) != 1)
            c.failures++;
        if (band_sem_destroy(c.s[i]) != 0)
            c.failures++;
    }
    *failures += c.failures;
    double ops = (double)iters * (threads <= 1 ? 1.0 : 2.0);
    return (double)(t1 - t0) / ops;
}

/* Run the section and print its table. Returns the number of failed calls or checks. */
static long bench_admit_section(int quick, int reps)
{
    static const int ks[3] = {1, 2, 4};
    double ns[BENCH_ADMIT_NVARS][BENCH_ADMIT_REPS];
    long failures = 0;
    long un_iters = quick ? 20000 : 2000000;
    long co_iters = quick ? 2000 : 200000;
    if (reps > BENCH_ADMIT_REPS)
        reps = BENCH_ADMIT_REPS;
    if (reps < 1)
        reps = 1;
    /* variant v: kind = v / 6 (0 uncontended, 1 two threads), ki = (v % 6) / 2, plain = v % 2 */
    for (int v = 0; v < BENCH_ADMIT_NVARS; v++) /* warm-up */
        (void)bench_admit_run(ks[(v % 6) / 2], v % 2, v / 6 ? 2 : 1,
                              (v / 6 ? co_iters : un_iters) / 10, &failures);
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < BENCH_ADMIT_NVARS; i++) {
            int v = (i + r) % BENCH_ADMIT_NVARS;
            ns[v][r] = bench_admit_run(ks[(v % 6) / 2], v % 2, v / 6 ? 2 : 1,
                                       v / 6 ? co_iters : un_iters, &failures);
        }

    printf("\n(k) multi-budget admission vs the same plain acquisitions, %d rounds, medians\n",
           reps);
    printf("    %-12s %2s  %14s  %14s  %7s\n", "workload", "k", "band_admit", "k x band_sem",
           "ratio");
    for (int kind = 0; kind < 2; kind++)
        for (int ki = 0; ki < 3; ki++) {
            int va = kind * 6 + ki * 2, vp = va + 1;
            double q[BENCH_ADMIT_REPS], a[BENCH_ADMIT_REPS], p[BENCH_ADMIT_REPS];
            for (int r = 0; r < reps; r++) {
                q[r] = ns[va][r] / ns[vp][r];
                a[r] = ns[va][r];
                p[r] = ns[vp][r];
            }
            double ma = bench_median(a, reps), mp = bench_median(p, reps);
            double mq = bench_median(q, reps);
            if (kind == 0)
                printf("    %-12s %2d  %11.1f ns  %11.1f ns  %6.2fx\n", "uncontended", ks[ki], ma,
                       mp, mq);
            else {
                printf("    %-12s %2d  %9.2f M/s  %9.2f M/s  %6.2fx\n", "2 threads", ks[ki],
                       1e3 / ma, 1e3 / mp, mq);
                /* >= 0.8x the plain throughput: time per admission <= 1.25x */
                bench_target('k', mq <= 1.25, mq, "x", "<= 1.25",
                             "admission over %d budget%s, 2 threads: time / plain k acquisitions",
                             ks[ki], ks[ki] == 1 ? "" : "s");
            }
        }
    printf("    (ratio: band_admit time per admission / plain time per k acquisitions)\n");
    if (failures != 0)
        fprintf(stderr, "bench_admit: FAILED: %ld failed calls or checks\n", failures);
    return failures;
}

#endif /* BAND_BENCH_ADMIT_H */

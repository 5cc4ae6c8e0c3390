/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_scale.h - scaling from 1 to 32 threads (band_bench section (s)).
 *
 *     #include "bench_scale.h"
 *     ...
 *     if (want('s'))
 *         g_failures += bench_scale_section(cfg.quick, cfg.reps, &result);
 *
 * Every run lasts a fixed time (40 ms; quick: 2 ms) rather than a fixed count, because an
 * oversubscribed strict-FIFO primitive can fall to a few hundred thousand operations per
 * second while a barging one runs at tens of millions: T worker threads start together
 * from a barrier, loop until the main thread raises a stop flag, then finish what they
 * hold. Throughput = operations completed / (first start .. last worker's end). Thread
 * counts 1, 2, 4, 8, 16, 32; past the number of CPUs the threads are oversubscribed, which
 * is the point: a primitive that collapses when its waiters are descheduled shows here.
 *
 * Workloads, each with its baselines in the same rounds (in a round every variant runs once
 * at every thread count, in an order that rotates from round to round):
 *   sem1   one permit: band_sem_acquire(1, FOREVER) + release(1) (strict FIFO) beside
 *          sem_wait + sem_post and pthread_mutex_lock + unlock (both barge);
 *   sem4   four permits: band_sem beside sem_t, the same loops;
 *   chan   MPMC bounded channel of 1024 u64: T/2 producers, T/2 consumers (T >= 2);
 *          band_chan_send + band_chan_recv beside the Vyukov ring and the mutex + condvar
 *          queue of bench_chan.h. Producer p sends (p << 40) | seq, seq = 0, 1, ...; when
 *          stopped it sends one end marker per consumer, and a consumer stops after one
 *          marker from every producer (the queues are FIFO, so every element precedes its
 *          producer's markers). Every element is checked exactly once: per consumer each
 *          producer's sequence numbers must rise, and per producer the count, the sum and
 *          the sum of squares of what all consumers received must equal what was sent.
 *   admit  admission over two budgets (4 permits, 1 each; 256 bytes, 64 each: both allow 4
 *          holders): band_admit_acquire(FOREVER) + band_admit_release beside
 *          band_sem_acquire of the two budgets in a fixed order and release in reverse.
 * After every run the semaphores must be whole again (checked).
 *
 * Printed: M ops/s (chan: M elements/s) per thread count, medians of the rounds, and per
 * row the median over rounds of throughput at 32 threads / at 2 threads, with the target
 * ">= 0.5" for band's rows (recorded with bench_target()). Every figure also goes to the
 * TSV file (bench_tsv_row_as()).
 */
#ifndef BAND_BENCH_SCALE_H
#define BAND_BENCH_SCALE_H

#include "bench_chan.h"
#include "bench_util.h"

#include <band/admit.h>
#include <band/chan.h>
#include <band/sem.h>

#include <math.h>
#include <semaphore.h>
#include <unistd.h>

#define BENCH_SCALE_NT    6
#define BENCH_SCALE_MAXT  32
#define BENCH_SCALE_REPS  64
#define BENCH_SCALE_SHIFT 40 /* chan values: producer << 40 | sequence number */
#define BENCH_SCALE_END   UINT64_MAX

static const int bench_scale_threads[BENCH_SCALE_NT] = {1, 2, 4, 8, 16, 32};

enum bench_scale_kind {
    BSC_SEM1_BAND,
    BSC_SEM1_SEMT,
    BSC_SEM1_MUTEX,
    BSC_SEM4_BAND,
    BSC_SEM4_SEMT,
    BSC_CHAN_BAND,
    BSC_CHAN_RING,
    BSC_CHAN_LOCKED,
    BSC_ADMIT_BAND,
    BSC_ADMIT_PLAIN,
    BSC_NKIND
};

static const struct bench_scale_variant {
    int group; /* index into bench_scale_groups */
    const char *name;
} bench_scale_variants[BSC_NKIND] = {
    {0, "band_sem acquire(1, FOREVER) + release, FIFO"},
    {0, "POSIX sem_wait + sem_post (barging)"},
    {0, "pthread_mutex_lock + unlock (barging)"},
    {1, "band_sem acquire(1, FOREVER) + release, FIFO"},
    {1, "POSIX sem_wait + sem_post (barging)"},
    {2, "band_chan_send + band_chan_recv"},
    {2, "lock-free MPMC ring (Vyukov)"},
    {2, "mutex + 2 condvars bounded queue"},
    {3, "band_admit_acquire(FOREVER) + release"},
    {3, "band_sem acquire x 2 (fixed order) + release"},
};

static const struct bench_scale_group {
    const char *slug;  /* workload name in the TSV file */
    const char *title; /* printed */
    int first, count;  /* its variants; the first is band's */
    int min_threads;
} bench_scale_groups[4] = {
    {"sem 1 permit", "semaphore, 1 permit, acquire(1) + release(1)", BSC_SEM1_BAND, 3, 1},
    {"sem 4 permits", "semaphore, 4 permits, acquire(1) + release(1)", BSC_SEM4_BAND, 2, 1},
    {"chan MPMC", "channel MPMC, T/2 producers + T/2 consumers, capacity 1024 (elements)",
     BSC_CHAN_BAND, 3, 2},
    {"admit 2 budgets", "admission over 2 budgets (4 permits; 256 bytes, 64 a request)",
     BSC_ADMIT_BAND, 2, 1},
};

/* One worker's slot, a cache line or more of its own. */
struct bench_scale_slot {
    _Alignas(BENCH_CACHELINE) long ops; /* operations, or elements sent / received */
    long bad;                           /* failed calls and broken checks */
    uint64_t t_end;
    /* consumer: per producer, what it received */
    uint64_t cnt[BENCH_SCALE_MAXT / 2], sum[BENCH_SCALE_MAXT / 2], sq[BENCH_SCALE_MAXT / 2];
};

struct bench_scale_run {
    int kind, threads, producers, consumers;
    pthread_barrier_t start;
    band_sem *bs[2];
    sem_t ps;
    pthread_mutex_t mu;
    band_chan *ch;
    struct bench_ring ring;
    struct bench_lq lq;
    _Alignas(BENCH_CACHELINE) _Atomic int stop;
    _Alignas(BENCH_CACHELINE) _Atomic int next_id;
    struct bench_scale_slot slot[BENCH_SCALE_MAXT];
};

static int bench_scale_stopped(struct bench_scale_run *run)
{
    return atomic_load_explicit(&run->stop, memory_order_relaxed);
}

static void bench_scale_sem_loop(struct bench_scale_run *run, struct bench_scale_slot *me)
{
    long ops = 0, bad = 0;
    switch (run->kind) {
    case BSC_SEM1_BAND:
    case BSC_SEM4_BAND:
        while (!bench_scale_stopped(run)) {
            bad += band_sem_acquire(run->bs[0], 1, BAND_FOREVER, NULL) != 0;
            bad += band_sem_release(run->bs[0], 1) != 0;
            ops++;
        }
        break;
    case BSC_SEM1_SEMT:
    case BSC_SEM4_SEMT:
        while (!bench_scale_stopped(run)) {
            while (sem_wait(&run->ps) != 0) {
            }
            sem_post(&run->ps);
            ops++;
        }
        break;
    case BSC_SEM1_MUTEX:
        while (!bench_scale_stopped(run)) {
            pthread_mutex_lock(&run->mu);
            pthread_mutex_unlock(&run->mu);
            ops++;
        }
        break;
    case BSC_ADMIT_BAND: {
        band_admit_req r;
        band_admit_req_init(&r, NULL, NULL);
        bad += band_admit_req_add(&r, run->bs[0], 1) != 0;
        bad += band_admit_req_add(&r, run->bs[1], 64) != 0;
        band_admit_grant g = BAND_ADMIT_GRANT_INIT; /* empty again after each release */
        while (!bench_scale_stopped(run)) {
            bad += band_admit_acquire(&r, &g, BAND_FOREVER, NULL) != 0;
            bad += band_admit_release(&g) != 0;
            ops++;
        }
        break;
    }
    default: /* BSC_ADMIT_PLAIN */
        while (!bench_scale_stopped(run)) {
            bad += band_sem_acquire(run->bs[0], 1, BAND_FOREVER, NULL) != 0;
            bad += band_sem_acquire(run->bs[1], 64, BAND_FOREVER, NULL) != 0;
            bad += band_sem_release(run->bs[1], 64) != 0;
            bad += band_sem_release(run->bs[0], 1) != 0;
            ops++;
        }
        break;
    }
    me->ops = ops;
    me->bad = bad;
}

static void bench_scale_put(struct bench_scale_run *run, uint64_t v, long *bad)
{
    unsigned spins = 0;
    switch (run->kind) {
    case BSC_CHAN_BAND:
        *bad += band_chan_send(run->ch, &v, sizeof v, BAND_FOREVER, NULL) != 0;
        break;
    case BSC_CHAN_RING:
        while (!bench_ring_try_put(&run->ring, v))
            bench_backoff(&spins);
        break;
    default:
        bench_lq_put(&run->lq, v);
        break;
    }
}

static uint64_t bench_scale_get(struct bench_scale_run *run, long *bad)
{
    uint64_t v = BENCH_SCALE_END;
    unsigned spins = 0;
    switch (run->kind) {
    case BSC_CHAN_BAND:
        if (band_chan_recv(run->ch, &v, NULL, BAND_FOREVER, NULL) != 0) {
            (*bad)++;
            v = BENCH_SCALE_END; /* count it as a marker so the consumer still ends */
        }
        break;
    case BSC_CHAN_RING:
        while (!bench_ring_try_get(&run->ring, &v))
            bench_backoff(&spins);
        break;
    default:
        v = bench_lq_get(&run->lq);
        break;
    }
    return v;
}

static void bench_scale_producer(struct bench_scale_run *run, int p, struct bench_scale_slot *me)
{
    uint64_t base = (uint64_t)p << BENCH_SCALE_SHIFT, seq = 0;
    long bad = 0;
    while (!bench_scale_stopped(run)) {
        bench_scale_put(run, base | seq, &bad);
        seq++;
    }
    for (int c = 0; c < run->consumers; c++)
        bench_scale_put(run, BENCH_SCALE_END, &bad);
    me->ops = (long)seq;
    me->bad = bad;
}

static void bench_scale_consumer(struct bench_scale_run *run, struct bench_scale_slot *me)
{
    uint64_t next[BENCH_SCALE_MAXT / 2] = {0}; /* lowest sequence number still acceptable */
    uint64_t mask = (UINT64_C(1) << BENCH_SCALE_SHIFT) - 1;
    long ops = 0, bad = 0;
    int ends = 0;
    while (ends < run->producers) {
        uint64_t v = bench_scale_get(run, &bad);
        if (v == BENCH_SCALE_END) {
            ends++;
            continue;
        }
        uint64_t p = v >> BENCH_SCALE_SHIFT, seq = v & mask;
        if (p >= (uint64_t)run->producers || seq < next[p]) {
            bad++; /* unknown producer, or a sequence number that did not rise */
            continue;
        }
        next[p] = seq + 1;
        me->cnt[p]++;
        me->sum[p] += seq;
        me->sq[p] += seq * seq;
        ops++;
    }
    me->ops = ops;
    me->bad = bad;
}

static void *bench_scale_thread(void *arg)
{
    struct bench_scale_run *run = arg;
    int id = atomic_fetch_add(&run->next_id, 1);
    struct bench_scale_slot *me = &run->slot[id];
    pthread_barrier_wait(&run->start);
    if (run->kind >= BSC_CHAN_BAND && run->kind <= BSC_CHAN_LOCKED) {
        if (id < run->producers)
            bench_scale_producer(run, id, me);
        else
            bench_scale_consumer(run, me);
    } else {
        bench_scale_sem_loop(run, me);
    }
    me->t_end = bench_now();
    return NULL;
}

/* n(n-1)/2 and (n-1)n(2n-1)/6 modulo 2^64, dividing before multiplying. */
static void bench_scale_sums(uint64_t n, uint64_t *sum, uint64_t *sq)
{
    uint64_t a = n, b = n > 0 ? n - 1 : 0, c = n > 0 ? 2 * n - 1 : 0;
    if (n == 0) {
        *sum = *sq = 0;
        return;
    }
    *sum = (a % 2 == 0) ? (a / 2) * b : a * (b / 2);
    if (a % 2 == 0)
        a /= 2;
    else
        b /= 2;
    if (a % 3 == 0)
        a /= 3;
    else if (b % 3 == 0)
        b /= 3;
    else
        c /= 3;
    *sq = a * b * c;
}

/*
 * One run of @kind with @threads workers for @ms milliseconds. Returns M ops/s and adds
 * failed calls and broken checks to *@failures (with a message on stderr).
 */
static double bench_scale_once(int kind, int threads, long ms, long *failures)
{
    static struct bench_scale_run run; /* large and aligned; one run at a time */
    pthread_t th[BENCH_SCALE_MAXT];
    long bad = 0, ops = 0;
    int setup = 0;
    memset(&run, 0, sizeof run);
    run.kind = kind;
    run.threads = threads;
    run.producers = run.consumers = threads / 2;
    switch (kind) {
    case BSC_SEM1_BAND:
    case BSC_SEM4_BAND:
        setup = band_sem_create(&run.bs[0], kind == BSC_SEM1_BAND ? 1 : 4, NULL);
        break;
    case BSC_SEM1_SEMT:
    case BSC_SEM4_SEMT:
        setup = sem_init(&run.ps, 0, kind == BSC_SEM1_SEMT ? 1u : 4u);
        break;
    case BSC_SEM1_MUTEX:
        setup = pthread_mutex_init(&run.mu, NULL);
        break;
    case BSC_CHAN_BAND:
        setup = band_chan_create(&run.ch, sizeof(uint64_t), 1024, NULL);
        break;
    case BSC_CHAN_RING:
        setup = bench_ring_init(&run.ring, 1024);
        break;
    case BSC_CHAN_LOCKED:
        setup = bench_lq_init(&run.lq, 1024);
        break;
    default:
        setup = band_sem_create(&run.bs[0], 4, NULL);
        if (setup == 0 && (setup = band_sem_create(&run.bs[1], 256, NULL)) != 0)
            band_sem_destroy(run.bs[0]);
        break;
    }
    if (setup != 0) {
        fprintf(stderr, "band_bench: FAILED: (s) %s: set-up\n", bench_scale_variants[kind].name);
        (*failures)++;
        return 0;
    }
    atomic_init(&run.stop, 0);
    atomic_init(&run.next_id, 0);
    pthread_barrier_init(&run.start, NULL, (unsigned)threads + 1u);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&th[i], NULL, bench_scale_thread, &run) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(1);
        }
    pthread_barrier_wait(&run.start);
    uint64_t t0 = bench_now();
    bench_sleep_ms(ms);
    atomic_store(&run.stop, 1);
    uint64_t t1 = t0;
    for (int i = 0; i < threads; i++) /* slots are taken in start order: read after all */
        pthread_join(th[i], NULL);
    for (int i = 0; i < threads; i++) {
        bad += run.slot[i].bad;
        if (run.slot[i].t_end > t1)
            t1 = run.slot[i].t_end;
    }
    pthread_barrier_destroy(&run.start);

    if (kind >= BSC_CHAN_BAND && kind <= BSC_CHAN_LOCKED) {
        for (int p = 0; p < run.producers; p++) {
            uint64_t cnt = 0, sum = 0, sq = 0, want_sum, want_sq;
            for (int c = run.producers; c < threads; c++) {
                cnt += run.slot[c].cnt[p];
                sum += run.slot[c].sum[p];
                sq += run.slot[c].sq[p];
            }
            bench_scale_sums((uint64_t)run.slot[p].ops, &want_sum, &want_sq);
            if (cnt != (uint64_t)run.slot[p].ops || sum != want_sum || sq != want_sq)
                bad++; /* an element lost or duplicated */
        }
        for (int c = run.producers; c < threads; c++)
            ops += run.slot[c].ops;
    } else {
        for (int i = 0; i < threads; i++)
            ops += run.slot[i].ops;
    }

    switch (kind) {
    case BSC_SEM1_BAND:
    case BSC_SEM4_BAND:
        bad += band_sem_available(run.bs[0]) != (kind == BSC_SEM1_BAND ? 1u : 4u);
        bad += band_sem_destroy(run.bs[0]) != 0;
        break;
    case BSC_SEM1_SEMT:
    case BSC_SEM4_SEMT: {
        int v = -1;
        sem_getvalue(&run.ps, &v);
        bad += v != (kind == BSC_SEM1_SEMT ? 1 : 4);
        sem_destroy(&run.ps);
        break;
    }
    case BSC_SEM1_MUTEX:
        pthread_mutex_destroy(&run.mu);
        break;
    case BSC_CHAN_BAND: {
        band_chan_stats st;
        memset(&st, 0, sizeof st);
        bad += band_chan_get_stats(run.ch, &st) != 0 || st.len != 0 || st.sent != st.received;
        bad += band_chan_destroy(run.ch) != 0;
        break;
    }
    case BSC_CHAN_RING: {
        uint64_t v;
        bad += bench_ring_try_get(&run.ring, &v);
        bench_ring_destroy(&run.ring);
        break;
    }
    case BSC_CHAN_LOCKED:
        bad += run.lq.len != 0;
        bench_lq_destroy(&run.lq);
        break;
    default:
        bad += band_sem_available(run.bs[0]) != 4 || band_sem_available(run.bs[1]) != 256;
        bad += band_sem_destroy(run.bs[0]) != 0;
        bad += band_sem_destroy(run.bs[1]) != 0;
        break;
    }
    if (bad != 0) {
        fprintf(stderr,
                "band_bench: FAILED: (s) %s, %d threads: %ld failed calls or broken checks\n",
                bench_scale_variants[kind].name, threads, bad);
        *failures += bad;
    }
    if (t1 <= t0 || ops <= 0)
        return 0;
    return (double)ops / ((double)(t1 - t0) / 1e3);
}

struct bench_scale_result {
    int ran;
    double band_32_2[4]; /* per group: band's throughput at 32 / at 2 threads (median) */
};

/* Median of @a[r] / @b[r] over @reps rounds with its range; NaN when no round has both. */
static double bench_scale_ratio(const double *a, const double *b, int reps, double *lo, double *hi)
{
    double q[BENCH_SCALE_REPS];
    int n = 0;
    *lo = 1e300;
    *hi = 0;
    for (int r = 0; r < reps; r++)
        if (a[r] > 0 && b[r] > 0) {
            q[n] = a[r] / b[r];
            *lo = q[n] < *lo ? q[n] : *lo;
            *hi = q[n] > *hi ? q[n] : *hi;
            n++;
        }
    return n > 0 ? bench_median(q, n) : NAN;
}

/* Run the section and print its table. Returns the number of failed calls or checks. */
static long bench_scale_section(int quick, int reps, struct bench_scale_result *out)
{
    static double mops[BSC_NKIND][BENCH_SCALE_NT][BENCH_SCALE_REPS];
    long ms = quick ? 2 : 40;
    long failures = 0;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (reps > BENCH_SCALE_REPS)
        reps = BENCH_SCALE_REPS;
    if (reps < 1)
        reps = 1;
    memset(out, 0, sizeof *out);
    printf("\n(s) scaling: 1..32 threads on %ld CPUs (oversubscribed past %ld), %ld ms a run, "
           "%d rounds:\n    M ops/s (channel: M elements/s), medians; 32/2 = throughput at 32 "
           "threads / at 2, same rounds\n",
           ncpu, ncpu, ms, reps);
    fflush(stdout);
    for (int kind = 0; kind < BSC_NKIND; kind++) /* warm-up */
        (void)bench_scale_once(kind, 2, ms / 4 > 0 ? ms / 4 : 1, &failures);
    for (int r = 0; r < reps; r++)
        for (int t = 0; t < BENCH_SCALE_NT; t++)
            for (int i = 0; i < BSC_NKIND; i++) {
                int kind = (i + r) % BSC_NKIND;
                const struct bench_scale_group *g =
                    &bench_scale_groups[bench_scale_variants[kind].group];
                mops[kind][t][r] =
                    bench_scale_threads[t] < g->min_threads
                        ? 0
                        : bench_scale_once(kind, bench_scale_threads[t], ms, &failures);
            }

    printf("  %-46s", "threads");
    for (int t = 0; t < BENCH_SCALE_NT; t++)
        printf(" %7d", bench_scale_threads[t]);
    printf("   %-18s %s\n", "32/2 [range]", "target");
    for (int gi = 0; gi < 4; gi++) {
        const struct bench_scale_group *g = &bench_scale_groups[gi];
        printf("  %s:\n", g->title);
        for (int kind = g->first; kind < g->first + g->count; kind++) {
            const char *name = bench_scale_variants[kind].name;
            double lo, hi, r32;
            printf("    %-44s", name);
            for (int t = 0; t < BENCH_SCALE_NT; t++) {
                double q[BENCH_SCALE_REPS], med, mlo = 1e300, mhi = 0, bx, blo, bhi;
                double bt[BENCH_SCALE_REPS], rt[BENCH_SCALE_REPS];
                if (bench_scale_threads[t] < g->min_threads) {
                    printf(" %7s", "-");
                    continue;
                }
                for (int r = 0; r < reps; r++) {
                    q[r] = mops[kind][t][r];
                    mlo = q[r] < mlo ? q[r] : mlo;
                    mhi = q[r] > mhi ? q[r] : mhi;
                    /* band's time per op / this row's = this row's ops / band's ops */
                    bt[r] = mops[kind][t][r];
                    rt[r] = mops[g->first][t][r];
                }
                med = bench_median(q, reps);
                bx = bench_scale_ratio(bt, rt, reps, &blo, &bhi);
                printf(" %7.2f", med);
                bench_tsv_row_as(kind == g->first ? "band" : "baseline", 's', g->slug, name,
                                 bench_scale_threads[t], "M ops/s", med, mlo, mhi, bx);
            }
            r32 = bench_scale_ratio(mops[kind][BENCH_SCALE_NT - 1], mops[kind][1], reps, &lo, &hi);
            printf("   %5.2f [%.2f-%.2f]", r32, lo, hi);
            if (kind == g->first) {
                out->band_32_2[gi] = r32;
                printf(" >= 0.5 %s", r32 >= 0.5 ? "PASS" : "MISS");
            }
            printf("\n");
        }
    }
    for (int gi = 0; gi < 4; gi++)
        bench_target('s', out->band_32_2[gi] >= 0.5, out->band_32_2[gi], "x", ">= 0.50",
                     "%s, band: throughput at 32 threads / at 2", bench_scale_groups[gi].slug);
    out->ran = 1;
    return failures;
}

#endif /* BAND_BENCH_SCALE_H */

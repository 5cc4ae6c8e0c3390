/* SPDX-License-Identifier: MIT */
/*
 * bench/band_bench.c - band's semaphore beside the baselines it is measured against.
 *
 * usage: band_bench [--quick] [--reps N] [--only abcdefghijklms] [--tsv FILE]
 *
 * The workloads (bench/README.md has the long form and the latest table):
 *   (a) uncontended try_acquire(1) + release(1) on one thread, ns per pair, beside a bare
 *       atomic fetch_sub + fetch_add pair, a CAS try-acquire, sem_trywait/sem_post and
 *       pthread_mutex_trylock/unlock;
 *   (b) two threads contending on one permit with blocking acquire/release, total ops/s,
 *       beside sem_wait/sem_post and pthread_mutex_lock/unlock (both barge: a ceiling, not
 *       a peer of a strict-FIFO semaphore);
 *   (c) hand-off to N queued async waiters (N = 10, 10^4, 10^6): ns per release that
 *       completes a waiter, beside a minimal mutex + intrusive-list semaphore, with the
 *       caller's bytes per waiter and the heap and RSS growth while N waiters are queued;
 *   (d) random weights 1..64 on capacity 1024, two threads (acquire, tiny spin, release),
 *       beside a mutex+condvar weighted semaphore and an atomic CAS weighted semaphore;
 *   (e) forced FIFO hand-off: two threads pass one permit back and forth through two
 *       semaphores, so every acquire queues and parks; beside two sem_t and a bare atomic
 *       turn flag (the cost of moving a cache line between cores);
 *   (f) bounded channel, one producer and one consumer, capacity 1024, u64 elements:
 *       elements/s of band_chan_send + band_chan_recv and of band_chan_send +
 *       band_chan_recv_many(64), beside a bare lock-free Vyukov MPMC ring and a mutex +
 *       condvar bounded queue (bench_chan.h); every value is checked (exactly once, in
 *       each producer's order, and the sum);
 *   (g) the same with two producers and one consumer;
 *   (h) the bounded executor (band_exec, bench_exec.h) beside a mutex + condvar thread pool;
 *   (i) per-key fair share (band_fair, bench_fair.h): try/release and hand-off costs;
 *   (j) the rate budget (band_rate, bench_rate.h): try, refusal and booking costs beside a
 *       naive mutex token bucket and a clock read;
 *   (k) atomic admission over 1, 2 and 4 budgets (band_admit, bench_admit.h) beside the
 *       same number of plain semaphore acquires, uncontended and with two threads;
 *   (l) oneshot, watch and broadcast try operations (bench_sync.h) beside a mutex-guarded
 *       slot;
 *   (m) budgets shared by processes (band_shm, bench_shm.h): uncontended pairs, two
 *       processes on one permit and a ping-pong between two processes, beside SysV semop
 *       with SEM_UNDO, a POSIX named sem_t and the in-process band_sem;
 *   (s) scaling from 1 to 32 threads (bench_scale.h): the semaphore (1 and 4 permits), the
 *       channel MPMC and admission over two budgets, each beside its baselines.
 *
 * Every figure is the median of the rounds (5 by default). Within a round every variant of
 * a workload runs once, in an order that rotates from round to round, so that noise on a
 * shared machine hits band and its baselines alike. Ratios are medians of the per-round
 * ratios. --quick runs small counts for CI (ctest bench_smoke); its figures are only a
 * smoke test. The exit status is non-zero only when a call failed or a check (counts,
 * FIFO order, permits left) did not hold, or the TSV file could not be written; missing a
 * performance target is reported, not fatal.
 *
 * --tsv FILE also writes every figure and every target line to FILE, tab-separated (the
 * format is described in bench_util.h); scripts/bench_plot.sh draws it.
 */
#include "bench_admit.h"
#include "bench_chan.h"
#include "bench_exec.h"
#include "bench_fair.h"
#include "bench_rate.h"
#include "bench_scale.h"
#include "bench_shm.h"
#include "bench_sync.h"
#include "bench_util.h"

#include <band/sem.h>

#include <math.h>
#include <semaphore.h>

#ifndef BAND_BENCH_BUILD_TYPE
#define BAND_BENCH_BUILD_TYPE "unknown"
#endif

#define MAX_REPS 64

/* Reference figures from the peer suite's RESULTS.md (run B, 2-core VM): per-op
 * time of each peer divided by the C atomic pair of the same round. Used only to place
 * band's same-run ratios next to peers that this program cannot run. */
#define REF_TOKIO_W1_X    2.30
#define REF_GO_W1_X       2.22
#define REF_TOKIO_W2_X    16.80
#define REF_GO_W2_X       24.67
#define REF_TOKIO_W2_MOPS 4.87
#define REF_GO_W2_MOPS    3.30

static struct {
    int quick;
    int reps;
    long a_iters;  /* (a) pairs per run */
    long b_iters;  /* (b) acquire+release per worker per run */
    long c_total;  /* (c) hand-offs per run (small N repeats the batch) */
    size_t c_n[3]; /* (c) queue lengths */
    long d_iters;  /* (d) operations per worker per run */
    long e_iters;  /* (e) hand-offs per worker per run */
    long ch_elems; /* (f), (g) elements per run */
    uint64_t ch_cap;
    uint64_t d_cap;
    uint32_t d_maxw;
    int spin;
    uint64_t seed;
    const char *only;
    const char *tsv;
} cfg;

static long g_failures;              /* failed calls and broken checks; non-zero fails the run */
static double g_clock;               /* cost of one timed empty region, ns */
static double g_atomic_ns[MAX_REPS]; /* (a) atomic pair, per round, for (b)'s cross ratio */
static int g_have_atomic;
static int g_round = -1; /* the round being measured; -1 during warm-up */

/* What print_rows_unit() writes to the TSV file: the section, its workload, its threads. */
static char g_sec = '?';
static const char *g_wl = "";
static int g_thr = 1;

static void tsv_context(char section, const char *workload, int threads)
{
    g_sec = section;
    g_wl = workload;
    g_thr = threads;
}

/* Record a failed check with a message; the run continues and exits non-zero. */
static void fail(const char *what, long count)
{
    fprintf(stderr, "band_bench: FAILED: %s (%ld)\n", what, count);
    g_failures += count > 0 ? count : 1;
}

/* One variant of a workload: run it once with @iters and return ns per operation. */
typedef double variant_fn(long iters);

struct variant {
    const char *name;
    variant_fn *fn;
    double ns[MAX_REPS]; /* ns per operation, per round */
    long div;            /* run with iters / div (0 or 1: all of them); for slow baselines */
};

/* Run @k variants for cfg.reps rounds, rotating their order every round, after one short
 * warm-up run of each. */
static void run_rounds(struct variant *v, int k, long iters)
{
    g_round = -1;
    for (int i = 0; i < k; i++) {
        long n = iters / (v[i].div > 1 ? v[i].div : 1) / 10;
        (void)v[i].fn(n > 0 ? n : 1);
    }
    for (int r = 0; r < cfg.reps; r++)
        for (int i = 0; i < k; i++) {
            struct variant *x = &v[(i + r) % k];
            long n = iters / (x->div > 1 ? x->div : 1);
            g_round = r;
            x->ns[r] = x->fn(n > 0 ? n : 1);
        }
    g_round = -1;
}

/* Median of @a[r] / @b[r] over the rounds, with its range. */
static double ratio_median(const double *a, const double *b, double *lo, double *hi)
{
    double q[MAX_REPS];
    *lo = 1e300;
    *hi = 0;
    for (int r = 0; r < cfg.reps; r++) {
        q[r] = a[r] / b[r];
        if (q[r] < *lo)
            *lo = q[r];
        if (q[r] > *hi)
            *hi = q[r];
    }
    return bench_median(q, cfg.reps);
}

/* Median, min and max of @v over the rounds (after a unit conversion when @per_s: ns per
 * op becomes M ops/s). */
static void stats3(const double *v, int per_s, double *med, double *lo, double *hi)
{
    double q[MAX_REPS] = {0};
    for (int r = 0; r < cfg.reps; r++)
        q[r] = per_s ? 1e3 / v[r] : v[r];
    *med = bench_median(q, cfg.reps); /* sorts q */
    *lo = q[0];
    *hi = q[cfg.reps - 1];
}

/* Print a section's rows: median, range, and band's per-op time divided by the row's
 * (band is variant @band). @per_s prints M ops/s instead of ns/op. Returns the median
 * ratio of band to variant @key (for the target lines). */
static double print_rows_unit(const struct variant *v, int k, int band, int per_s, int key,
                              const char *unit)
{
    double key_ratio = 0;
    printf("  %-48s %9s %9s %9s   %s\n", "variant", per_s ? unit : "ns/op", "min", "max",
           "band time / row time [range]");
    for (int i = 0; i < k; i++) {
        double med, lo, hi, rlo, rhi, rat;
        stats3(v[i].ns, per_s, &med, &lo, &hi);
        rat = ratio_median(v[band].ns, v[i].ns, &rlo, &rhi);
        if (i == key)
            key_ratio = rat;
        bench_tsv_row(g_sec, g_wl, v[i].name, g_thr, per_s ? unit : "ns/op", med, lo, hi, rat);
        printf("  %-48s %9.2f %9.2f %9.2f   %5.2fx [%.2f-%.2f]\n", v[i].name, med, lo, hi, rat, rlo,
               rhi);
    }
    return key_ratio;
}

static double print_rows(const struct variant *v, int k, int band, int per_s, int key)
{
    return print_rows_unit(v, k, band, per_s, key, "M ops/s");
}

/* Print band's figure and queued fraction for every round, so a bimodal workload shows. */
static void print_per_round(const double *ns, const double *queued)
{
    printf("  band per round, M ops/s (queued%%):");
    for (int r = 0; r < cfg.reps; r++)
        printf(" %.2f (%.0f%%)", 1e3 / ns[r], 100.0 * queued[r]);
    printf("\n");
}

static int want(char section)
{
    return cfg.only == NULL || strchr(cfg.only, section) != NULL;
}

/* ===================================================================== (a) uncontended */

static struct {
    _Alignas(BENCH_CACHELINE) _Atomic uint64_t word;
} g_a;

static double a_atomic(long iters)
{
    atomic_store(&g_a.word, 1);
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        atomic_fetch_sub_explicit(&g_a.word, 1, memory_order_acquire);
        atomic_fetch_add_explicit(&g_a.word, 1, memory_order_release);
    }
    return (double)(bench_now() - t0) / (double)iters;
}

static double a_cas(long iters)
{
    long refused = 0;
    atomic_store(&g_a.word, 1);
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        uint64_t c = atomic_load_explicit(&g_a.word, memory_order_relaxed);
        for (;;) {
            if (c < 1) {
                refused++;
                break;
            }
            if (atomic_compare_exchange_weak_explicit(&g_a.word, &c, c - 1, memory_order_acquire,
                                                      memory_order_relaxed))
                break;
        }
        atomic_fetch_add_explicit(&g_a.word, 1, memory_order_release);
    }
    double r = (double)(bench_now() - t0) / (double)iters;
    if (refused != 0)
        fail("(a) CAS try-acquire refused", refused);
    return r;
}

static double a_semt(long iters)
{
    sem_t s;
    long bad = 0;
    sem_init(&s, 0, 1);
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        if (sem_trywait(&s) != 0)
            bad++;
        sem_post(&s);
    }
    double r = (double)(bench_now() - t0) / (double)iters;
    sem_destroy(&s);
    if (bad != 0)
        fail("(a) sem_trywait refused", bad);
    return r;
}

static double a_mutex(long iters)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    long bad = 0;
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        if (pthread_mutex_trylock(&m) != 0)
            bad++;
        pthread_mutex_unlock(&m);
    }
    double r = (double)(bench_now() - t0) / (double)iters;
    pthread_mutex_destroy(&m);
    if (bad != 0)
        fail("(a) pthread_mutex_trylock refused", bad);
    return r;
}

static double a_band(long iters)
{
    band_sem *s = NULL;
    long bad = 0;
    if (band_sem_create(&s, 1, NULL) != 0) {
        fail("(a) band_sem_create", 1);
        return 1;
    }
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        if (band_sem_try_acquire(s, 1) != 0)
            bad++;
        if (band_sem_release(s, 1) != 0)
            bad++;
    }
    double r = (double)(bench_now() - t0) / (double)iters;
    if (band_sem_available(s) != 1)
        fail("(a) band permits after the loop != 1", 1);
    band_sem_destroy(s);
    if (bad != 0)
        fail("(a) band try_acquire/release failed", bad);
    return r;
}

struct a_result {
    double band_x_atomic;
    double band_ns;
};

static void section_a(struct a_result *out)
{
    struct variant v[] = {
        {"atomic fetch_sub + fetch_add (bare pair)", a_atomic, {0}, 1},
        {"atomic CAS try-acquire + fetch_add", a_cas, {0}, 1},
        {"POSIX sem_trywait + sem_post", a_semt, {0}, 1},
        {"pthread_mutex_trylock + unlock", a_mutex, {0}, 1},
        {"band_sem_try_acquire(1) + band_sem_release(1)", a_band, {0}, 1},
    };
    const int k = (int)(sizeof v / sizeof v[0]);
    double med, lo, hi;
    printf("\n(a) uncontended try_acquire(1) + release(1), one thread: ns per pair "
           "(%ld pairs/run)\n",
           cfg.a_iters);
    run_rounds(v, k, cfg.a_iters);
    tsv_context('a', "uncontended pair", 1);
    out->band_x_atomic = print_rows(v, k, k - 1, 0, 0);
    stats3(v[k - 1].ns, 0, &med, &lo, &hi);
    out->band_ns = med;
    memcpy(g_atomic_ns, v[0].ns, sizeof g_atomic_ns);
    g_have_atomic = 1;
}

/* ===================================================================== (b) contended */

static uint64_t b_band_fn(void *obj, int id, long iters, const uint32_t *weights, int spin,
                          long *failures)
{
    band_sem *s = obj;
    long bad = 0;
    (void)id;
    (void)weights;
    (void)spin;
    for (long i = 0; i < iters; i++) {
        if (band_sem_acquire(s, 1, BAND_FOREVER, NULL) != 0)
            bad++;
        if (band_sem_release(s, 1) != 0)
            bad++;
    }
    *failures += bad;
    return 0;
}

static uint64_t b_semt_fn(void *obj, int id, long iters, const uint32_t *weights, int spin,
                          long *failures)
{
    sem_t *s = obj;
    (void)id;
    (void)weights;
    (void)spin;
    (void)failures;
    for (long i = 0; i < iters; i++) {
        while (sem_wait(s) != 0) {
        }
        sem_post(s);
    }
    return 0;
}

static uint64_t b_mutex_fn(void *obj, int id, long iters, const uint32_t *weights, int spin,
                           long *failures)
{
    pthread_mutex_t *m = obj;
    (void)id;
    (void)weights;
    (void)spin;
    (void)failures;
    for (long i = 0; i < iters; i++) {
        pthread_mutex_lock(m);
        pthread_mutex_unlock(m);
    }
    return 0;
}

static double g_b_queued[MAX_REPS]; /* fraction of band acquisitions that queued, per run */

static double b_band(long iters)
{
    band_sem *s = NULL;
    band_sem_stats st;
    long bad = 0;
    if (band_sem_create(&s, 1, NULL) != 0) {
        fail("(b) band_sem_create", 1);
        return 1;
    }
    double ops = bench_duo_run(b_band_fn, s, iters, NULL, NULL, 0, &bad);
    if (band_sem_available(s) != 1)
        fail("(b) band permits after the run != 1", 1);
    if (band_sem_get_stats(s, &st) == 0 && g_round >= 0)
        g_b_queued[g_round] = (double)st.queued / (2.0 * (double)iters);
    band_sem_destroy(s);
    if (bad != 0)
        fail("(b) band acquire/release failed", bad);
    return 1e9 / ops;
}

static double b_semt(long iters)
{
    sem_t s;
    long bad = 0;
    int v = 0;
    sem_init(&s, 0, 1);
    double ops = bench_duo_run(b_semt_fn, &s, iters, NULL, NULL, 0, &bad);
    sem_getvalue(&s, &v);
    if (v != 1)
        fail("(b) sem_t value after the run != 1", 1);
    sem_destroy(&s);
    return 1e9 / ops;
}

static double b_mutex(long iters)
{
    pthread_mutex_t m;
    long bad = 0;
    pthread_mutex_init(&m, NULL);
    double ops = bench_duo_run(b_mutex_fn, &m, iters, NULL, NULL, 0, &bad);
    pthread_mutex_destroy(&m);
    return 1e9 / ops;
}

struct b_result {
    double band_ops;      /* M ops/s, median */
    double band_x_atomic; /* band (b) ns/op / atomic pair (a) ns/op, median over rounds */
    double band_x_worst;  /* the same ratio in band's worst round */
    double queued;        /* median fraction of acquisitions that queued */
};

static void section_b(struct b_result *out)
{
    struct variant v[] = {
        {"POSIX sem_wait + sem_post (barging)", b_semt, {0}, 1},
        {"pthread_mutex_lock + unlock (barging)", b_mutex, {0}, 1},
        {"band_sem_acquire(1, FOREVER) + release(1), FIFO", b_band, {0}, 1},
    };
    const int k = (int)(sizeof v / sizeof v[0]);
    double med, lo, hi, q[MAX_REPS];
    printf("\n(b) two threads contending on one permit, blocking acquire + release: total "
           "M ops/s (%ld per worker/run)\n",
           cfg.b_iters);
    run_rounds(v, k, cfg.b_iters);
    tsv_context('b', "2 threads, 1 permit", 2);
    (void)print_rows(v, k, k - 1, 1, k - 1);
    stats3(v[k - 1].ns, 1, &med, &lo, &hi);
    out->band_ops = med;
    print_per_round(v[k - 1].ns, g_b_queued);
    memcpy(q, g_b_queued, sizeof q);
    out->queued = bench_median(q, cfg.reps);
    printf("  band: %.0f%% of acquisitions queued (median); a queued acquisition is a FIFO "
           "hand-off\n",
           100.0 * out->queued);
    out->band_x_atomic = 0;
    if (g_have_atomic) {
        double rlo, rhi;
        out->band_x_atomic = ratio_median(v[k - 1].ns, g_atomic_ns, &rlo, &rhi);
        out->band_x_worst = rhi;
        printf("  band per-op time / (a)'s atomic pair, same rounds: %.2fx [%.2f-%.2f]\n",
               out->band_x_atomic, rlo, rhi);
    }
}

/* ===================================================================== (c) hand-off */

static struct {
    band_waiter *arr; /* the caller-owned waiters of the current batch */
    size_t next;      /* index the next wake must carry (FIFO check) */
    long misorder;
} g_c;

/* The async "task": count the completion and check it arrives in FIFO order. */
static void c_wake(band_waiter *w)
{
    if (w != g_c.arr + g_c.next)
        g_c.misorder++;
    g_c.next++;
}

/* Baseline: a minimal locked semaphore with an intrusive FIFO of 64-byte nodes (one mutex
 * around a counter and a doubly linked list; pop the head and call its wake after
 * unlocking). It is the least a queue with callbacks can do per hand-off. */
struct lnode {
    struct lnode *next, *prev;
    void (*wake)(struct lnode *);
    void *data;
    uint64_t want;
    uint64_t spare[3];
};
_Static_assert(sizeof(struct lnode) == 64, "baseline node matches band_waiter's size");

struct lsem {
    pthread_mutex_t mu; /* protects head and avail */
    struct lnode head;
    uint64_t avail;
};

static struct {
    struct lnode *arr;
    size_t next;
    long misorder;
} g_l;

static void l_wake(struct lnode *n)
{
    if (n != g_l.arr + g_l.next)
        g_l.misorder++;
    g_l.next++;
}

/* Take one permit now (0) or queue @n (1). */
static BENCH_NOINLINE int lsem_acquire_async(struct lsem *s, struct lnode *n)
{
    pthread_mutex_lock(&s->mu);
    if (s->avail > 0 && s->head.next == &s->head) {
        s->avail--;
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    n->prev = s->head.prev;
    n->next = &s->head;
    s->head.prev->next = n;
    s->head.prev = n;
    pthread_mutex_unlock(&s->mu);
    return 1;
}

/* Return one permit: to the head waiter (woken after unlocking) or to the counter. */
static BENCH_NOINLINE void lsem_release(struct lsem *s)
{
    struct lnode *n;
    pthread_mutex_lock(&s->mu);
    n = s->head.next;
    if (n == &s->head) {
        s->avail++;
        n = NULL;
    } else {
        s->head.next = n->next;
        n->next->prev = &s->head;
        n->next = n->prev = n;
    }
    pthread_mutex_unlock(&s->mu);
    if (n != NULL)
        n->wake(n);
}

struct c_run {
    double rel_ns;    /* ns per hand-off (release loop) */
    double enq_ns;    /* ns per acquire_async that queued */
    long long heap_d; /* heap growth while the first batch was queued, bytes */
    long rss_d;       /* RSS growth while the first batch was queued, bytes */
};

static void c_band_run(size_t n, struct c_run *out)
{
    band_sem *s = NULL;
    long batches = cfg.c_total / (long)n > 0 ? cfg.c_total / (long)n : 1;
    uint64_t rel = 0, enq = 0;
    long bad = 0;
    memset(out, 0, sizeof *out);
    if (band_sem_create(&s, 0, NULL) != 0) {
        fail("(c) band_sem_create", 1);
        return;
    }
    for (long b = 0; b < batches; b++) {
        long rss0 = 0;
        long long heap0 = 0;
        for (size_t i = 0; i < n; i++)
            band_waiter_init(&g_c.arr[i], c_wake, NULL);
        if (b == 0) {
            rss0 = bench_rss();
            heap0 = bench_heap_bytes();
        }
        uint64_t t0 = bench_now();
        for (size_t i = 0; i < n; i++)
            if (band_sem_acquire_async(s, 1, &g_c.arr[i]) != BAND_PENDING)
                bad++;
        uint64_t t1 = bench_now();
        if (b == 0) {
            out->heap_d = bench_heap_bytes() - heap0;
            out->rss_d = bench_rss() - rss0;
        }
        g_c.next = 0;
        uint64_t t2 = bench_now();
        for (size_t i = 0; i < n; i++)
            if (band_sem_release(s, 1) != 0)
                bad++;
        uint64_t t3 = bench_now();
        enq += t1 - t0;
        rel += t3 - t2;
        if (g_c.next != n)
            fail("(c) band wakes != releases", (long)(n - g_c.next));
        if (b == 0)
            for (size_t i = 0; i < n; i++)
                if (band_waiter_status(&g_c.arr[i]) != 0 || band_waiter_is_pending(&g_c.arr[i]))
                    bad++;
    }
    if (band_sem_available(s) != 0)
        fail("(c) band permits left after the hand-offs", 1);
    band_sem_destroy(s);
    if (bad != 0)
        fail("(c) band acquire_async/release/status failed", bad);
    if (g_c.misorder != 0) {
        fail("(c) band wakes out of FIFO order", g_c.misorder);
        g_c.misorder = 0;
    }
    double total = (double)batches * (double)n;
    out->rel_ns = ((double)rel - (double)batches * g_clock) / total;
    out->enq_ns = ((double)enq - (double)batches * g_clock) / total;
}

static void c_list_run(size_t n, struct c_run *out)
{
    struct lsem s;
    long batches = cfg.c_total / (long)n > 0 ? cfg.c_total / (long)n : 1;
    uint64_t rel = 0, enq = 0;
    long bad = 0;
    memset(out, 0, sizeof *out);
    pthread_mutex_init(&s.mu, NULL);
    s.head.next = s.head.prev = &s.head;
    s.avail = 0;
    for (long b = 0; b < batches; b++) {
        for (size_t i = 0; i < n; i++) {
            g_l.arr[i].wake = l_wake;
            g_l.arr[i].want = 1;
        }
        uint64_t t0 = bench_now();
        for (size_t i = 0; i < n; i++)
            if (lsem_acquire_async(&s, &g_l.arr[i]) != 1)
                bad++;
        uint64_t t1 = bench_now();
        g_l.next = 0;
        uint64_t t2 = bench_now();
        for (size_t i = 0; i < n; i++)
            lsem_release(&s);
        uint64_t t3 = bench_now();
        enq += t1 - t0;
        rel += t3 - t2;
        if (g_l.next != n)
            bad++;
    }
    pthread_mutex_destroy(&s.mu);
    if (bad != 0 || g_l.misorder != 0)
        fail("(c) baseline list semaphore", bad + g_l.misorder);
    g_l.misorder = 0;
    double total = (double)batches * (double)n;
    out->rel_ns = ((double)rel - (double)batches * g_clock) / total;
    out->enq_ns = ((double)enq - (double)batches * g_clock) / total;
    out->heap_d = 0;
    out->rss_d = 0;
}

struct c_result {
    double band_ns[3];
    double constancy; /* median over rounds of band(N max) / band(N = 10) */
    long long heap_d_max;
    double rss_per_waiter; /* at the largest N */
};

static void section_c(struct c_result *out)
{
    struct c_run band[3][MAX_REPS], list[3][MAX_REPS];
    size_t nmax = cfg.c_n[2];
    printf("\n(c) hand-off to N queued async waiters (sem starts at 0; N x acquire_async(1); "
           "time N x release(1)):\n"
           "    ns per hand-off; caller memory per waiter = sizeof(band_waiter) = %zu bytes; "
           "%ld hand-offs/run\n",
           sizeof(band_waiter), cfg.c_total);
    g_c.arr = aligned_alloc(BENCH_CACHELINE, nmax * sizeof(band_waiter));
    g_l.arr = aligned_alloc(BENCH_CACHELINE, nmax * sizeof(struct lnode));
    if (g_c.arr == NULL || g_l.arr == NULL) {
        fail("(c) out of memory", 1);
        free(g_c.arr);
        free(g_l.arr);
        return;
    }
    memset(g_c.arr, 0, nmax * sizeof(band_waiter)); /* touch every page before measuring */
    memset(g_l.arr, 0, nmax * sizeof(struct lnode));
    (void)bench_rss();
    for (int j = 0; j < 3; j++) { /* warm-up */
        struct c_run tmp;
        c_list_run(cfg.c_n[j], &tmp);
        c_band_run(cfg.c_n[j], &tmp);
    }
    for (int r = 0; r < cfg.reps; r++)
        for (int j = 0; j < 3; j++) {
            if ((r & 1) == 0) {
                c_list_run(cfg.c_n[j], &list[j][r]);
                c_band_run(cfg.c_n[j], &band[j][r]);
            } else {
                c_band_run(cfg.c_n[j], &band[j][r]);
                c_list_run(cfg.c_n[j], &list[j][r]);
            }
        }
    printf("  %-9s %9s %-13s %9s %-20s %11s %9s %10s\n", "N", "band ns", " [min-max]", "list ns",
           " band/list [range]", "band enq ns", "heap d B", "RSS d B/w");
    out->heap_d_max = 0;
    for (int j = 0; j < 3; j++) {
        double b[MAX_REPS], l[MAX_REPS], e[MAX_REPS], bm, blo, bhi, lm, llo, lhi, em, elo, ehi;
        double rat, rlo, rhi, rss_med;
        double rssw[MAX_REPS];
        char r1[32], r2[48];
        long long heap_max = 0;
        for (int r = 0; r < cfg.reps; r++) {
            b[r] = band[j][r].rel_ns;
            l[r] = list[j][r].rel_ns;
            e[r] = band[j][r].enq_ns;
            rssw[r] = (double)band[j][r].rss_d / (double)cfg.c_n[j];
            if (band[j][r].heap_d > heap_max)
                heap_max = band[j][r].heap_d;
        }
        rat = ratio_median(b, l, &rlo, &rhi);
        stats3(b, 0, &bm, &blo, &bhi);
        stats3(l, 0, &lm, &llo, &lhi);
        stats3(e, 0, &em, &elo, &ehi);
        rss_med = bench_median(rssw, cfg.reps);
        snprintf(r1, sizeof r1, "[%.1f-%.1f]", blo, bhi);
        snprintf(r2, sizeof r2, "%.2fx [%.2f-%.2f]", rat, rlo, rhi);
        printf("  %-9zu %9.1f %-13s %9.1f %-20s %11.1f %9lld %10.1f\n", cfg.c_n[j], bm, r1, lm, r2,
               em, heap_max, rss_med);
        {
            char wl[48];
            snprintf(wl, sizeof wl, "hand-off, N=%zu", cfg.c_n[j]);
            bench_tsv_row('c', wl, "band_sem release to a queued async waiter", 1, "ns/op", bm, blo,
                          bhi, 1.0);
            bench_tsv_row('c', wl, "mutex + intrusive list (wake after unlock)", 1, "ns/op", lm,
                          llo, lhi, rat);
        }
        out->band_ns[j] = bm;
        if (heap_max > out->heap_d_max)
            out->heap_d_max = heap_max;
        if (j == 2)
            out->rss_per_waiter = rss_med;
    }
    {
        double q[MAX_REPS], lo = 1e300, hi = 0;
        for (int r = 0; r < cfg.reps; r++) {
            q[r] = band[2][r].rel_ns / band[0][r].rel_ns;
            lo = q[r] < lo ? q[r] : lo;
            hi = q[r] > hi ? q[r] : hi;
        }
        out->constancy = bench_median(q, cfg.reps);
        printf("  band ns/hand-off at N=%zu / at N=%zu, same rounds: %.2fx [%.2f-%.2f]\n",
               cfg.c_n[2], cfg.c_n[0], out->constancy, lo, hi);
    }
    printf("  list = mutex + intrusive FIFO of 64-byte nodes, wake after unlock (floor for a "
           "locked hand-off);\n  heap d = malloc'd bytes gained while the first batch was "
           "queued (max over rounds);\n  RSS d B/w = RSS gained while queued / N (median; page "
           "granular, so noisy at small N)\n");
    free(g_c.arr);
    free(g_l.arr);
    g_c.arr = NULL;
    g_l.arr = NULL;
}

/* ===================================================================== (d) weighted */

/* The baselines are noinline so that, like band, each operation is a function call. */

/* A weighted counting semaphore from one mutex and one condvar (not FIFO: a release
 * broadcasts and whoever fits first takes the permits). */
struct bench_cvsem {
    pthread_mutex_t mu; /* protects avail and waiters */
    pthread_cond_t cv;
    uint64_t avail;
    unsigned waiters;
};

static inline void bench_cvsem_init(struct bench_cvsem *s, uint64_t permits)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->avail = permits;
    s->waiters = 0;
}

static inline void bench_cvsem_destroy(struct bench_cvsem *s)
{
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
}

/* Take @n permits, sleeping on the condvar while fewer are available. */
static BENCH_NOINLINE void bench_cvsem_acquire(struct bench_cvsem *s, uint64_t n)
{
    pthread_mutex_lock(&s->mu);
    while (s->avail < n) {
        s->waiters++;
        pthread_cond_wait(&s->cv, &s->mu);
        s->waiters--;
    }
    s->avail -= n;
    pthread_mutex_unlock(&s->mu);
}

/* Return @n permits; wake every sleeper when anyone sleeps (any of them may now fit). */
static BENCH_NOINLINE void bench_cvsem_release(struct bench_cvsem *s, uint64_t n)
{
    unsigned w;
    pthread_mutex_lock(&s->mu);
    s->avail += n;
    w = s->waiters;
    pthread_mutex_unlock(&s->mu);
    if (w != 0)
        pthread_cond_broadcast(&s->cv);
}

/* A weighted counting semaphore on one atomic word: CAS to take, fetch_add to return, spin
 * (pause, then sched_yield) while short. Barging and unfair: the throughput ceiling of a
 * lock-free counter, not a peer of a FIFO semaphore. */
struct bench_cassem {
    _Alignas(BENCH_CACHELINE) _Atomic uint64_t avail;
    char pad[BENCH_CACHELINE - sizeof(uint64_t)];
};

static BENCH_NOINLINE void bench_cassem_acquire(struct bench_cassem *s, uint64_t n)
{
    unsigned spins = 0;
    uint64_t c = atomic_load_explicit(&s->avail, memory_order_relaxed);
    for (;;) {
        if (c >= n) {
            if (atomic_compare_exchange_weak_explicit(&s->avail, &c, c - n, memory_order_acquire,
                                                      memory_order_relaxed))
                return;
        } else {
            bench_backoff(&spins);
            c = atomic_load_explicit(&s->avail, memory_order_relaxed);
        }
    }
}

static BENCH_NOINLINE void bench_cassem_release(struct bench_cassem *s, uint64_t n)
{
    atomic_fetch_add_explicit(&s->avail, n, memory_order_release);
}

static uint32_t g_weights[2][BENCH_WEIGHTS];

static uint64_t d_band_fn(void *obj, int id, long iters, const uint32_t *weights, int spin,
                          long *failures)
{
    band_sem *s = obj;
    uint64_t acc = 0;
    long bad = 0;
    (void)id;
    for (long i = 0; i < iters; i++) {
        uint64_t w = weights[i & (BENCH_WEIGHTS - 1)];
        if (band_sem_acquire(s, w, BAND_FOREVER, NULL) != 0)
            bad++;
        acc += bench_tiny_spin(spin, w);
        if (band_sem_release(s, w) != 0)
            bad++;
    }
    *failures += bad;
    return acc;
}

static uint64_t d_cv_fn(void *obj, int id, long iters, const uint32_t *weights, int spin,
                        long *failures)
{
    struct bench_cvsem *s = obj;
    uint64_t acc = 0;
    (void)id;
    (void)failures;
    for (long i = 0; i < iters; i++) {
        uint64_t w = weights[i & (BENCH_WEIGHTS - 1)];
        bench_cvsem_acquire(s, w);
        acc += bench_tiny_spin(spin, w);
        bench_cvsem_release(s, w);
    }
    return acc;
}

static uint64_t d_cas_fn(void *obj, int id, long iters, const uint32_t *weights, int spin,
                         long *failures)
{
    struct bench_cassem *s = obj;
    uint64_t acc = 0;
    (void)id;
    (void)failures;
    for (long i = 0; i < iters; i++) {
        uint64_t w = weights[i & (BENCH_WEIGHTS - 1)];
        bench_cassem_acquire(s, w);
        acc += bench_tiny_spin(spin, w);
        bench_cassem_release(s, w);
    }
    return acc;
}

static double d_band(long iters)
{
    band_sem *s = NULL;
    long bad = 0;
    if (band_sem_create(&s, cfg.d_cap, NULL) != 0) {
        fail("(d) band_sem_create", 1);
        return 1;
    }
    double ops = bench_duo_run(d_band_fn, s, iters, g_weights[0], g_weights[1], cfg.spin, &bad);
    if (band_sem_available(s) != cfg.d_cap)
        fail("(d) band permits after the run != capacity", 1);
    band_sem_destroy(s);
    if (bad != 0)
        fail("(d) band acquire/release failed", bad);
    return 1e9 / ops;
}

static double d_cv(long iters)
{
    struct bench_cvsem s;
    long bad = 0;
    bench_cvsem_init(&s, cfg.d_cap);
    double ops = bench_duo_run(d_cv_fn, &s, iters, g_weights[0], g_weights[1], cfg.spin, &bad);
    if (s.avail != cfg.d_cap)
        fail("(d) condvar semaphore permits after the run", 1);
    bench_cvsem_destroy(&s);
    return 1e9 / ops;
}

static double d_cas(long iters)
{
    static struct bench_cassem s;
    long bad = 0;
    atomic_store(&s.avail, cfg.d_cap);
    double ops = bench_duo_run(d_cas_fn, &s, iters, g_weights[0], g_weights[1], cfg.spin, &bad);
    if (atomic_load(&s.avail) != cfg.d_cap)
        fail("(d) CAS semaphore permits after the run", 1);
    return 1e9 / ops;
}

static double d_calib(long iters)
{
    return bench_spin_calibration(iters, cfg.spin);
}

static void section_d(double *band_x_cas, double *band_x_cv)
{
    struct variant v[] = {
        {"mutex+condvar weighted sem (not FIFO)", d_cv, {0}, 1},
        {"atomic CAS weighted sem (spin, barging)", d_cas, {0}, 1},
        {"band_sem_acquire(w, FOREVER) + release(w)", d_band, {0}, 1},
    };
    struct variant cal = {"(calibration) spin alone, 1 thread, ns", d_calib, {0}, 1};
    const int k = (int)(sizeof v / sizeof v[0]);
    double med, lo, hi, rlo, rhi;
    for (int i = 0; i < 2; i++)
        bench_make_weights(g_weights[i], cfg.seed + (uint64_t)i, cfg.d_maxw);
    printf("\n(d) weights 1..%u on capacity %llu, two threads (acquire w, spin %d, release w): "
           "total M ops/s (%ld per worker/run)\n",
           cfg.d_maxw, (unsigned long long)cfg.d_cap, cfg.spin, cfg.d_iters);
    run_rounds(v, k, cfg.d_iters);
    run_rounds(&cal, 1, cfg.d_iters);
    tsv_context('d', "weighted, 2 threads", 2);
    (void)print_rows(v, k, k - 1, 1, k - 1);
    *band_x_cv = ratio_median(v[k - 1].ns, v[0].ns, &rlo, &rhi);
    *band_x_cas = ratio_median(v[k - 1].ns, v[1].ns, &rlo, &rhi);
    stats3(cal.ns, 0, &med, &lo, &hi);
    printf("  %-48s %9.2f %9.2f %9.2f\n", cal.name, med, lo, hi);
    bench_tsv_row('d', "weighted, 2 threads", cal.name, 1, "ns/op", med, lo, hi, NAN);
}

/* ===================================================================== (e) ping-pong */

/*
 * Forced FIFO hand-off between two threads: worker 0 loops acquire(A) + release(B), worker 1
 * loops acquire(B) + release(A), with A starting at 1 permit and B at 0. Every acquire has
 * to wait for the other thread's release, so every operation is a hand-off to a queued,
 * parked waiter: the cost that (b) only pays when its threads collide. Baselines: the same
 * with two POSIX sem_t, and a bare atomic turn flag that both threads spin on (the cost of
 * moving a cache line back and forth, the floor for any hand-off between cores).
 */
struct e_pair {
    band_sem *band[2];
    sem_t sem[2];
    _Alignas(BENCH_CACHELINE) _Atomic int turn;
};

static uint64_t e_band_fn(void *obj, int id, long iters, const uint32_t *weights, int spin,
                          long *failures)
{
    struct e_pair *p = obj;
    band_sem *mine = p->band[id], *theirs = p->band[1 - id];
    long bad = 0;
    (void)weights;
    (void)spin;
    for (long i = 0; i < iters; i++) {
        if (band_sem_acquire(mine, 1, BAND_FOREVER, NULL) != 0)
            bad++;
        if (band_sem_release(theirs, 1) != 0)
            bad++;
    }
    *failures += bad;
    return 0;
}

static uint64_t e_semt_fn(void *obj, int id, long iters, const uint32_t *weights, int spin,
                          long *failures)
{
    struct e_pair *p = obj;
    sem_t *mine = &p->sem[id], *theirs = &p->sem[1 - id];
    (void)weights;
    (void)spin;
    (void)failures;
    for (long i = 0; i < iters; i++) {
        while (sem_wait(mine) != 0) {
        }
        sem_post(theirs);
    }
    return 0;
}

static uint64_t e_flag_fn(void *obj, int id, long iters, const uint32_t *weights, int spin,
                          long *failures)
{
    struct e_pair *p = obj;
    (void)weights;
    (void)spin;
    (void)failures;
    for (long i = 0; i < iters; i++) {
        unsigned spins = 0;
        while (atomic_load_explicit(&p->turn, memory_order_acquire) != id)
            bench_backoff(&spins);
        atomic_store_explicit(&p->turn, 1 - id, memory_order_release);
    }
    return 0;
}

static double g_e_queued[MAX_REPS];

static double e_band(long iters)
{
    static struct e_pair p;
    band_sem_stats st;
    long bad = 0;
    if (band_sem_create(&p.band[0], 1, NULL) != 0 || band_sem_create(&p.band[1], 0, NULL) != 0) {
        fail("(e) band_sem_create", 1);
        return 1;
    }
    double ops = bench_duo_run(e_band_fn, &p, iters, NULL, NULL, 0, &bad);
    if (band_sem_available(p.band[0]) != 1 || band_sem_available(p.band[1]) != 0)
        fail("(e) band permits after the run", 1);
    if (band_sem_get_stats(p.band[1], &st) == 0 && g_round >= 0)
        g_e_queued[g_round] = (double)st.queued / (double)iters;
    band_sem_destroy(p.band[0]);
    band_sem_destroy(p.band[1]);
    if (bad != 0)
        fail("(e) band acquire/release failed", bad);
    return 1e9 / ops;
}

static double e_semt(long iters)
{
    static struct e_pair p;
    long bad = 0;
    sem_init(&p.sem[0], 0, 1);
    sem_init(&p.sem[1], 0, 0);
    double ops = bench_duo_run(e_semt_fn, &p, iters, NULL, NULL, 0, &bad);
    sem_destroy(&p.sem[0]);
    sem_destroy(&p.sem[1]);
    return 1e9 / ops;
}

static double e_flag(long iters)
{
    static struct e_pair p;
    long bad = 0;
    atomic_store(&p.turn, 0);
    double ops = bench_duo_run(e_flag_fn, &p, iters, NULL, NULL, 0, &bad);
    return 1e9 / ops;
}

struct e_result {
    double band_ops; /* M hand-offs/s, median */
    double band_ns;  /* ns per hand-off, median */
    double x_flag;   /* band time / flag time */
    double queued;
};

static void section_e(struct e_result *out)
{
    struct variant v[] = {
        {"atomic turn flag, both spin (cache-line floor)", e_flag, {0}, 1},
        {"POSIX sem_t pair, wait + post (1/10 count)", e_semt, {0}, 10},
        {"band_sem pair, acquire(FOREVER) + release", e_band, {0}, 1},
    };
    const int k = (int)(sizeof v / sizeof v[0]);
    double med, lo, hi, rlo, rhi, q[MAX_REPS];
    printf("\n(e) forced FIFO hand-off: two threads pass one permit through two semaphores "
           "(every acquire waits):\n    M hand-offs/s (%ld per worker/run)\n",
           cfg.e_iters);
    run_rounds(v, k, cfg.e_iters);
    tsv_context('e', "forced hand-off", 2);
    out->x_flag = print_rows(v, k, k - 1, 1, 0);
    stats3(v[k - 1].ns, 1, &med, &lo, &hi);
    out->band_ops = med;
    stats3(v[k - 1].ns, 0, &med, &lo, &hi);
    out->band_ns = med;
    print_per_round(v[k - 1].ns, g_e_queued);
    memcpy(q, g_e_queued, sizeof q);
    out->queued = bench_median(q, cfg.reps);
    (void)rlo;
    (void)rhi;
    printf("  band: %.1f ns per hand-off; %.0f%% of acquisitions queued (median)\n", out->band_ns,
           100.0 * out->queued);
}

/* ===================================================================== (f), (g) channels */

/* Reference medians from the peer suite's RESULTS.md (run B, 2-core VM), M msgs/s: Go's
 * buffered chan uint64 and the C Vyukov ring of the same rounds. This program cannot run
 * Go, so the Go target is placed through the ring: Go's time per element / the ring's. */
#define REF_GO_W5_SPSC_MMSGS     16.8
#define REF_VYUKOV_W5_SPSC_MMSGS 62.7
#define REF_GO_W5_MPSC_MMSGS     15.6
#define REF_VYUKOV_W5_MPSC_MMSGS 56.4

static int g_ch_producers = 1;
/* Per round, for band's two variants: the share of the run the producers spent queued in
 * band_chan_send (stats.send_wait_ns / (producers x run time)). */
static double g_ch_wait[2][MAX_REPS];

static double ch_variant(int kind, long iters)
{
    static const char *const names[] = {"ring", "locked queue", "band send/recv",
                                        "band send/recv_many"};
    long per = iters / g_ch_producers;
    struct bench_ch_result r = bench_ch_once(kind, g_ch_producers, per > 0 ? per : 1, cfg.ch_cap);
    if (r.errors != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "(%c) %s: %s", g_ch_producers == 1 ? 'f' : 'g', names[kind],
                 r.what != NULL ? r.what : "failed");
        fail(msg, r.errors);
    }
    if (kind >= BENCH_CH_BAND && g_round >= 0 && r.run_ns > 0)
        g_ch_wait[kind - BENCH_CH_BAND][g_round] =
            (double)r.send_wait_ns / ((double)g_ch_producers * (double)r.run_ns);
    return r.ns_per_elem;
}

static double ch_ring(long iters)
{
    return ch_variant(BENCH_CH_RING, iters);
}

static double ch_locked(long iters)
{
    return ch_variant(BENCH_CH_LOCKED, iters);
}

static double ch_band(long iters)
{
    return ch_variant(BENCH_CH_BAND, iters);
}

static double ch_many(long iters)
{
    return ch_variant(BENCH_CH_BAND_MANY, iters);
}

struct ch_result {
    int ran;
    double x_ring[2];   /* band time / ring time per element: send/recv, recv_many */
    double x_locked[2]; /* band time / locked queue time */
    double mops[2];     /* band M elements/s, medians */
    double ring_mops;
};

static void section_ch(char letter, int producers, struct ch_result *out)
{
    struct variant v[] = {
        {"lock-free MPMC ring (Vyukov; pause, then yield)", ch_ring, {0}, 1},
        {"mutex + 2 condvars bounded queue", ch_locked, {0}, 1},
        {"band_chan_send + band_chan_recv", ch_band, {0}, 1},
        {"band_chan_send + band_chan_recv_many(64)", ch_many, {0}, 1},
    };
    const int k = (int)(sizeof v / sizeof v[0]);
    double med, lo, hi, rlo, rhi;
    printf("\n(%c) bounded channel, %d producer%s -> 1 consumer, capacity %llu, u64 elements: "
           "M elements/s\n    (%ld elements/run; every value checked: per-producer order and "
           "the sum)\n",
           letter, producers, producers == 1 ? "" : "s", (unsigned long long)cfg.ch_cap,
           cfg.ch_elems);
    g_ch_producers = producers;
    run_rounds(v, k, cfg.ch_elems);
    tsv_context(letter, producers == 1 ? "chan 1P1C" : "chan 2P1C", producers + 1);
    out->x_ring[0] = print_rows_unit(v, k, 2, 1, 0, "M elem/s");
    out->x_locked[0] = ratio_median(v[2].ns, v[1].ns, &rlo, &rhi);
    out->x_ring[1] = ratio_median(v[3].ns, v[0].ns, &rlo, &rhi);
    printf("  band recv_many time / ring time: %.2fx [%.2f-%.2f]", out->x_ring[1], rlo, rhi);
    out->x_locked[1] = ratio_median(v[3].ns, v[1].ns, &rlo, &rhi);
    printf("; / locked queue time: %.2fx [%.2f-%.2f]\n", out->x_locked[1], rlo, rhi);
    for (int b = 0; b < 2; b++) {
        stats3(v[2 + b].ns, 1, &med, &lo, &hi);
        out->mops[b] = med;
        printf("  %s per round, M elem/s (producers queued in send, %% of run):",
               b == 0 ? "band send/recv" : "band recv_many");
        for (int r = 0; r < cfg.reps; r++)
            printf(" %.2f (%.0f%%)", 1e3 / v[2 + b].ns[r], 100.0 * g_ch_wait[b][r]);
        printf("\n");
    }
    stats3(v[0].ns, 1, &med, &lo, &hi);
    out->ring_mops = med;
    out->ran = 1;
}

/* ===================================================================== main */

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--quick] [--reps N] [--only abcdefghijklms] [--tsv FILE]\n"
            "  --quick    small counts (CI smoke test, a few seconds)\n"
            "  --reps N   rounds per workload (default 5, quick 3; max %d)\n"
            "  --only S   run only the sections with letters in S (a b c d e f g h i j k l m s)\n"
            "  --tsv FILE also write every figure and target, tab-separated, to FILE\n",
            argv0, MAX_REPS);
}

int main(int argc, char **argv)
{
    struct a_result ra = {0, 0};
    struct b_result rb = {0, 0, 0, 0};
    struct c_result rc;
    struct e_result re = {0, 0, 0, 0};
    struct ch_result rf, rg;
    double d_x_cas = 0, d_x_cv = 0;
    int reps = 0;
    memset(&rc, 0, sizeof rc);
    memset(&rf, 0, sizeof rf);
    memset(&rg, 0, sizeof rg);
    struct bench_scale_result rs;
    memset(&rs, 0, sizeof rs);
    cfg.quick = 0;
    cfg.only = NULL;
    cfg.tsv = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            cfg.quick = 1;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = (int)strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            cfg.only = argv[++i];
        } else if (strcmp(argv[i], "--tsv") == 0 && i + 1 < argc) {
            cfg.tsv = argv[++i];
        } else {
            usage(argv[0]);
            return 2;
        }
    }
    if (cfg.quick) {
        cfg.reps = 3;
        cfg.a_iters = 500000;
        cfg.b_iters = 20000;
        cfg.c_total = 100000;
        cfg.c_n[0] = 10;
        cfg.c_n[1] = 10000;
        cfg.c_n[2] = 100000;
        cfg.d_iters = 50000;
        cfg.e_iters = 5000;
        cfg.ch_elems = 100000;
    } else {
        cfg.reps = 5;
        cfg.a_iters = 10000000;
        cfg.b_iters = 500000;
        cfg.c_total = 1000000;
        cfg.c_n[0] = 10;
        cfg.c_n[1] = 10000;
        cfg.c_n[2] = 1000000;
        cfg.d_iters = 500000;
        cfg.e_iters = 100000;
        cfg.ch_elems = 10000000;
    }
    if (reps > 0)
        cfg.reps = reps;
    if (cfg.reps < 1 || cfg.reps > MAX_REPS) {
        usage(argv[0]);
        return 2;
    }
    cfg.ch_cap = 1024;
    cfg.d_cap = 1024;
    cfg.d_maxw = 64;
    cfg.spin = 32;
    cfg.seed = 12345;

    if (cfg.tsv != NULL && bench_tsv_open(cfg.tsv) != 0)
        return 1;
    bench_go_multithreaded();
    g_clock = bench_clock_overhead();
    printf("band_bench: band %s (library build type: %s), %s mode, %d rounds, medians; "
           "clock read pair %.0f ns\n",
           band_version(), BAND_BENCH_BUILD_TYPE, cfg.quick ? "quick" : "full", cfg.reps, g_clock);
    fflush(stdout);

    if (want('a'))
        section_a(&ra);
    fflush(stdout);
    if (want('b'))
        section_b(&rb);
    fflush(stdout);
    if (want('c'))
        section_c(&rc);
    fflush(stdout);
    if (want('d'))
        section_d(&d_x_cas, &d_x_cv);
    fflush(stdout);
    if (want('e'))
        section_e(&re);
    fflush(stdout);
    if (want('f'))
        section_ch('f', 1, &rf);
    fflush(stdout);
    if (want('g'))
        section_ch('g', 2, &rg);
    fflush(stdout);
    if (want('h'))
        g_failures += bench_exec_section(cfg.quick, cfg.reps);
    fflush(stdout);
    if (want('i'))
        g_failures += bench_fair_section(cfg.quick);
    fflush(stdout);
    if (want('j'))
        g_failures += bench_rate_section(cfg.quick);
    fflush(stdout);
    if (want('k'))
        g_failures += bench_admit_section(cfg.quick, cfg.reps);
    fflush(stdout);
    if (want('l'))
        g_failures += bench_sync_section(cfg.quick);
    fflush(stdout);
    if (want('m'))
        g_failures += bench_shm_section(cfg.quick, cfg.reps);
    fflush(stdout);
    if (want('s'))
        g_failures += bench_scale_section(cfg.quick, cfg.reps, &rs);
    fflush(stdout);

    /* The target lines: band_bench's own are recorded here, after the sections' own
     * (bench_target() calls made while they ran); all are printed together. */
    if (want('a')) {
        bench_target('a', ra.band_x_atomic <= 1.2, ra.band_x_atomic, "x", "<= 1.20",
                     "uncontended pair / bare atomic pair (%.1f ns)", ra.band_ns);
        bench_target('a', ra.band_x_atomic < REF_GO_W1_X && ra.band_x_atomic < REF_TOKIO_W1_X,
                     ra.band_x_atomic, "x", "< 2.22",
                     "uncontended pair / atomic pair, faster than Tokio/Go (reference %.2fx/%.2fx)",
                     REF_TOKIO_W1_X, REF_GO_W1_X);
    }
    if (want('b') && rb.band_x_atomic > 0) {
        char need[32];
        snprintf(need, sizeof need, "<= %.2f", REF_TOKIO_W2_X / 2.0);
        bench_target('b', rb.band_x_worst <= REF_TOKIO_W2_X / 2.0, rb.band_x_worst, "x", need,
                     "W2 worst round >= 2x Tokio: per-op time / atomic pair (median %.2fx, %.2f "
                     "M ops/s)",
                     rb.band_x_atomic, rb.band_ops);
    }
    if (want('c')) {
        double worst = rc.band_ns[0];
        for (int j = 1; j < 3; j++)
            worst = rc.band_ns[j] > worst ? rc.band_ns[j] : worst;
        bench_target('c', worst < 100.0, worst, "ns", "< 100", "hand-off at every N, worst median");
        bench_target('c', rc.constancy <= 1.5, rc.constancy, "x", "<= 1.50",
                     "hand-off at N=%zu / at N=%zu (constant)", cfg.c_n[2], cfg.c_n[0]);
        bench_target('c', sizeof(band_waiter) <= 64, (double)sizeof(band_waiter), "bytes", "<= 64",
                     "caller memory per waiter");
        bench_target('c', rc.heap_d_max <= 0 && rc.rss_per_waiter < 8.0, rc.rss_per_waiter,
                     "B RSS/waiter", "heap +0, < 8",
                     "no allocation per waiter (heap grew %lld B with %zu queued)", rc.heap_d_max,
                     cfg.c_n[2]);
    }
    if (rf.ran) {
        double need_go = REF_VYUKOV_W5_SPSC_MMSGS / REF_GO_W5_SPSC_MMSGS / 3.0;
        char need[32];
        bench_target('f', rf.x_ring[0] <= 2.0, rf.x_ring[0], "x", "<= 2.00",
                     "channel 1P1C >= 0.5x Vyukov: band send/recv time / ring time (%.2f vs %.2f "
                     "M elem/s)",
                     rf.mops[0], rf.ring_mops);
        bench_target('f', rf.x_ring[1] <= 2.0, rf.x_ring[1], "x", "<= 2.00",
                     "channel 1P1C >= 0.5x Vyukov: band recv_many time / ring time (%.2f M elem/s)",
                     rf.mops[1]);
        snprintf(need, sizeof need, "<= %.2f", need_go);
        bench_target('f', rf.x_ring[0] <= need_go, rf.x_ring[0], "x", need,
                     "channel 1P1C >= 3x Go (reference Go %.2fx the ring): send/recv / ring",
                     REF_VYUKOV_W5_SPSC_MMSGS / REF_GO_W5_SPSC_MMSGS);
    }

    printf("\ntargets%s:\n", cfg.quick ? " - quick mode, indicative only" : "");
    {
        /* in the order of the sections' letters, each section's in the order recorded */
        const struct bench_targets *t = bench_targets();
        for (char sec = 'a'; sec <= 'z'; sec++)
            for (int i = 0; i < t->n; i++)
                if (t->line[i][1] == sec)
                    printf("  %s\n", t->line[i]);
        if (t->n == 0)
            printf("  (none in the sections run)\n");
    }
    printf("notes:\n");
    if (want('b') && rb.band_x_atomic > 0)
        printf("  (b) W2 reference (RESULTS.md run B): Tokio %.2fx, Go %.2fx the atomic pair; "
               "band's worst round must be <= half Tokio's\n",
               REF_TOKIO_W2_X, REF_GO_W2_X);
    if (want('e') && re.band_ops > 0)
        printf("  (e) forced hand-off (no target of its own): %.2f M hand-offs/s, %.0f ns each, "
               "%.1fx the cache-line floor;\n      reference Tokio W2 %.1f M ops/s, Go %.1f M "
               "(their figures with 2 tasks, RESULTS.md)\n",
               re.band_ops, re.band_ns, re.x_flag, REF_TOKIO_W2_MOPS, REF_GO_W2_MOPS);
    if (want('d'))
        printf("  (d) weighted (no target): band time %.2fx the CAS spin sem, %.2fx the "
               "mutex+condvar sem\n",
               d_x_cas, d_x_cv);
    if (rg.ran)
        printf("  (g) channel 2P1C (no target of its own): band time / ring time %.2fx send/recv, "
               "%.2fx recv_many;\n      reference Go %.2fx the Vyukov ring's time (RESULTS.md "
               "run B: %.1f vs %.1f M msgs/s)\n",
               rg.x_ring[0], rg.x_ring[1], REF_VYUKOV_W5_MPSC_MMSGS / REF_GO_W5_MPSC_MMSGS,
               REF_GO_W5_MPSC_MMSGS, REF_VYUKOV_W5_MPSC_MMSGS);
    if (cfg.tsv != NULL) {
        if (bench_tsv_close(cfg.tsv) != 0)
            g_failures++;
        else
            printf("figures written to %s\n", cfg.tsv);
    }
    if (g_failures != 0) {
        fprintf(stderr, "band_bench: %ld failed calls or checks\n", g_failures);
        return 1;
    }
    return 0;
}

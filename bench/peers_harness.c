/* SPDX-License-Identifier: MIT */
/*
 * bench/peers_harness.c - band in the peer benchmarks' protocol (band_peer_harness).
 *
 * usage: band_peer_harness w1|w2|w4|w5     (1 warm-up + REPS measured repetitions)
 *        band_peer_harness w3 N            (one repetition)
 *
 * Speaks the protocol of the peer benchmark suite ("Adding a harness" in its RESULTS.md):
 * parameters come from the environment (REPS W1_ITERS W2_ITERS W4_ITERS W4_CAP W4_MAXW
 * SPIN SEED W5_MSGS W5_CAP) and every repetition prints one tab-separated line
 *
 *     RESULT <workload> <peer name> <metric> <value>
 *
 * so that run_all.sh (EXTRA_HARNESS=.../band_peer_harness) puts band into the same rounds
 * as the C, Go, Rust, Java and Python peers.
 *
 *   w1  try_acquire(1) + release(1) on one thread, ns per pair.
 *   w2  two threads, one permit, blocking band_sem_acquire(1, BAND_FOREVER) + release(1).
 *       W2_THREADS (default 2) runs that many threads instead, W2_ITERS each; a count other
 *       than 2 prints the row "band sem (N threads, blocking, FIFO)". Every repetition also
 *       prints the share of acquisitions that queued to stderr.
 *   w3  N async waiters (a caller-owned band_waiter array, the C form of N tokio tasks)
 *       queue on a semaphore at 0, then N x release(1). Two rows:
 *         "band sem async waiters": the wake is the task (it counts the completion);
 *         "band sem async waiters -> executor thread": the wake pushes the waiter onto a
 *         lock-free ready stack that an executor thread on the other core drains, the way
 *         a runtime would resume the task; timing stops when the executor has run all N.
 *       "spawn ms" is allocating, initialising and queueing the N waiters, and
 *       "RSS bytes/waiter" includes the waiter array itself (64 bytes a waiter).
 *   w4  weights 1..W4_MAXW on capacity W4_CAP, two threads (acquire, SPIN, release).
 *   w5  bounded channel of W5_CAP u64 elements, W5_MSGS elements per repetition: "W5 SPSC"
 *       (one producer thread) and "W5 MPSC" (two producers of W5_MSGS / 2 each), received
 *       on the main thread, two rows each: "band_chan send/recv" and "band_chan
 *       send/recv_many" (batches of 64). Every element is checked (per-producer order and
 *       the sum), as bench_chan.h describes.
 */
#include "bench_chan.h"
#include "bench_util.h"

#include <band/sem.h>

#include <sys/wait.h>
#include <unistd.h>

static long REPS, W1_ITERS, W2_ITERS, W4_ITERS, W4_CAP, W4_MAXW, SPIN, W5_MSGS, W5_CAP;
static uint64_t SEED;

/* One result line; run_all.sh keeps the lines that start with RESULT. */
static void emit(const char *workload, const char *peer, const char *metric, double value)
{
    printf("RESULT\t%s\t%s\t%s\t%.6g\n", workload, peer, metric, value);
    fflush(stdout);
}

static void die(const char *what, long count)
{
    fprintf(stderr, "band_peer_harness: %s (%ld)\n", what, count);
    exit(1);
}

/* ---------------------------------------------------------------- W1 */

/* The calls go through band/sem.h as any program's do: with GCC or Clang that is the
 * inline fast path over the semaphore's public prefix. */
static double w1_once(long iters)
{
    band_sem *created = NULL;
    long bad = 0;
    if (band_sem_create(&created, 1, NULL) != 0)
        die("band_sem_create", 1);
    band_sem *const s = created; /* a local whose address never escapes, as in C's loop */
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        if (band_sem_try_acquire(s, 1) != 0)
            bad++;
        if (band_sem_release(s, 1) != 0)
            bad++;
    }
    double r = (double)(bench_now() - t0) / (double)iters;
    band_sem_destroy(s);
    if (bad != 0)
        die("w1: try_acquire/release failed", bad);
    return r;
}

static void run_w1(void)
{
    (void)w1_once(W1_ITERS / 4 > 0 ? W1_ITERS / 4 : 1);
    for (long r = 0; r < REPS; r++)
        emit("W1", "band sem try_acquire/release", "ns/op", w1_once(W1_ITERS));
}

/* ---------------------------------------------------------------- W2 / W4 */

static uint64_t duo_fn(void *obj, int id, long iters, const uint32_t *weights, int spin,
                       long *failures)
{
    band_sem *s = obj;
    uint64_t acc = 0;
    long bad = 0;
    (void)id;
    if (weights == NULL) {
        for (long i = 0; i < iters; i++) {
            if (band_sem_acquire(s, 1, BAND_FOREVER, NULL) != 0)
                bad++;
            if (band_sem_release(s, 1) != 0)
                bad++;
        }
    } else {
        for (long i = 0; i < iters; i++) {
            uint64_t w = weights[i & (BENCH_WEIGHTS - 1)];
            if (band_sem_acquire(s, w, BAND_FOREVER, NULL) != 0)
                bad++;
            acc += bench_tiny_spin(spin, w);
            if (band_sem_release(s, w) != 0)
                bad++;
        }
    }
    *failures += bad;
    return acc;
}

/* ops/s of both workers together on a semaphore with @permits. */
static double duo_once(long iters, uint64_t permits, const uint32_t *w0, const uint32_t *w1)
{
    band_sem *s = NULL;
    long bad = 0;
    if (band_sem_create(&s, permits, NULL) != 0)
        die("band_sem_create", 1);
    double ops = bench_duo_run(duo_fn, s, iters, w0, w1, (int)SPIN, &bad);
    if (band_sem_available(s) != permits)
        die("permits leaked", (long)band_sem_available(s));
    band_sem_destroy(s);
    if (bad != 0)
        die("acquire/release failed", bad);
    return ops;
}

struct w2_crowd {
    band_sem *s;
    long iters;
    pthread_barrier_t bar;
    _Atomic long bad;
    _Atomic uint64_t t_start, t_end; /* first start, last end */
};

static void *w2_crowd_thread(void *p)
{
    struct w2_crowd *c = p;
    long bad = 0;
    pthread_barrier_wait(&c->bar);
    uint64_t t0 = bench_now();
    uint64_t seen = atomic_load(&c->t_start);
    while ((seen == 0 || t0 < seen) && !atomic_compare_exchange_weak(&c->t_start, &seen, t0))
        ;
    for (long i = 0; i < c->iters; i++) {
        if (band_sem_acquire(c->s, 1, BAND_FOREVER, NULL) != 0)
            bad++;
        if (band_sem_release(c->s, 1) != 0)
            bad++;
    }
    uint64_t t1 = bench_now();
    seen = atomic_load(&c->t_end);
    while (t1 > seen && !atomic_compare_exchange_weak(&c->t_end, &seen, t1))
        ;
    atomic_fetch_add(&c->bad, bad);
    return NULL;
}

/* ops/s of @nthreads threads looping acquire(1) + release(1) on one permit, @iters each;
 * *@queued gets the share of acquisitions that had to queue. */
static double w2_once(int nthreads, long iters, double *queued)
{
    struct w2_crowd c;
    pthread_t th[256];
    band_sem_stats st;
    memset(&c, 0, sizeof c);
    if (band_sem_create(&c.s, 1, NULL) != 0)
        die("band_sem_create", 1);
    c.iters = iters;
    pthread_barrier_init(&c.bar, NULL, (unsigned)nthreads);
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&th[i], NULL, w2_crowd_thread, &c) != 0)
            die("pthread_create", i);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&c.bar);
    if (band_sem_available(c.s) != 1)
        die("permits leaked", (long)band_sem_available(c.s));
    if (band_sem_get_stats(c.s, &st) != 0)
        die("band_sem_get_stats", 1);
    *queued = (double)st.queued / ((double)nthreads * (double)iters);
    band_sem_destroy(c.s);
    if (c.bad != 0)
        die("acquire/release failed", c.bad);
    return (double)nthreads * (double)iters / ((double)(c.t_end - c.t_start) / 1e9);
}

static void run_w2(void)
{
    long nthreads = bench_env_long("W2_THREADS", 2);
    char peer[64];
    double queued;
    if (nthreads < 1 || nthreads > 256)
        die("W2_THREADS must be in 1..256", nthreads);
    snprintf(peer, sizeof peer, "band sem (%ld threads, blocking, FIFO)", nthreads);
    (void)w2_once((int)nthreads, W2_ITERS / 4 > 0 ? W2_ITERS / 4 : 1, &queued);
    for (long r = 0; r < REPS; r++) {
        double ops = w2_once((int)nthreads, W2_ITERS, &queued);
        emit("W2", peer, "ops/s", ops);
        fprintf(stderr, "W2 %ld threads: %.2f M ops/s, %.1f%% queued\n", nthreads, ops / 1e6,
                100.0 * queued);
    }
}

static void run_w4(void)
{
    static uint32_t weights[2][BENCH_WEIGHTS];
    for (int i = 0; i < 2; i++)
        bench_make_weights(weights[i], SEED + (uint64_t)i, (uint32_t)W4_MAXW);
    (void)duo_once(W4_ITERS / 4 > 0 ? W4_ITERS / 4 : 1, (uint64_t)W4_CAP, weights[0], weights[1]);
    for (long r = 0; r < REPS; r++)
        emit("W4", "band sem weighted (2 threads)", "ops/s",
             duo_once(W4_ITERS, (uint64_t)W4_CAP, weights[0], weights[1]));
}

/* ---------------------------------------------------------------- W3 */

static struct {
    band_waiter *arr;
    size_t n;
    size_t next; /* FIFO check: index the next completion must carry */
    long misorder, failed;
    /* executor variant */
    _Alignas(BENCH_CACHELINE) _Atomic(band_waiter *) ready; /* LIFO of woken waiters */
    _Alignas(BENCH_CACHELINE) _Atomic size_t done;          /* completions the executor ran */
} g3;

/* The task itself: a completion that checks its order and status. */
static void w3_wake_inline(band_waiter *w)
{
    if (w != g3.arr + g3.next)
        g3.misorder++;
    if (band_waiter_status(w) != 0)
        g3.failed++;
    g3.next++;
}

/* Schedule the task: push it onto the ready stack (the owner's data pointer is free for the
 * link; band never touches it). */
static void w3_wake_push(band_waiter *w)
{
    band_waiter *head = atomic_load_explicit(&g3.ready, memory_order_relaxed);
    do {
        w->data = head;
    } while (!atomic_compare_exchange_weak_explicit(&g3.ready, &head, w, memory_order_release,
                                                    memory_order_relaxed));
}

/* The executor: take the whole ready stack, reverse it into wake order, run each task. */
static void *w3_executor(void *p)
{
    size_t n = g3.n, done = 0;
    unsigned spins = 0;
    (void)p;
    while (done < n) {
        band_waiter *list = atomic_exchange_explicit(&g3.ready, NULL, memory_order_acquire);
        band_waiter *fifo = NULL;
        if (list == NULL) {
            if (++spins > 4096) {
                spins = 0;
                sched_yield();
            } else {
                bench_pause();
            }
            continue;
        }
        while (list != NULL) {
            band_waiter *nx = list->data;
            list->data = fifo;
            fifo = list;
            list = nx;
        }
        for (; fifo != NULL; fifo = fifo->data) {
            w3_wake_inline(fifo);
            done++;
        }
        atomic_store_explicit(&g3.done, done, memory_order_release);
    }
    return NULL;
}

static void run_w3(long nl, int executor)
{
    size_t n = (size_t)nl;
    band_sem *s = NULL;
    pthread_t ex;
    char wl[48];
    const char *peer =
        executor ? "band sem async waiters -> executor thread" : "band sem async waiters";
    long bad = 0;

    if (band_sem_create(&s, 0, NULL) != 0)
        die("band_sem_create", 1);
    memset(&g3, 0, sizeof g3);
    g3.n = n;
    (void)bench_rss();
    long rss0 = bench_rss();
    uint64_t c0 = bench_now();
    g3.arr = malloc(n * sizeof(band_waiter));
    if (g3.arr == NULL)
        die("out of memory", nl);
    for (size_t i = 0; i < n; i++) {
        band_waiter_init(&g3.arr[i], executor ? w3_wake_push : w3_wake_inline, NULL);
        if (band_sem_acquire_async(s, 1, &g3.arr[i]) != BAND_PENDING)
            bad++;
    }
    uint64_t c1 = bench_now();
    long rss1 = bench_rss();
    if (bad != 0)
        die("w3: acquire_async did not queue", bad);
    if (executor && pthread_create(&ex, NULL, w3_executor, NULL) != 0)
        die("pthread_create", 1);
    if (executor)
        bench_sleep_ms(20); /* let the executor reach its loop */

    uint64_t t0 = bench_now();
    for (size_t i = 0; i < n; i++)
        if (band_sem_release(s, 1) != 0)
            bad++;
    uint64_t t_rel = bench_now();
    if (executor)
        while (atomic_load_explicit(&g3.done, memory_order_acquire) < n)
            bench_pause();
    uint64_t t1 = bench_now();
    if (executor)
        pthread_join(ex, NULL);

    if (bad != 0 || g3.next != n || g3.misorder != 0 || g3.failed != 0) {
        fprintf(stderr, "w3: bad=%ld completed=%zu/%zu misorder=%ld failed=%ld\n", bad, g3.next, n,
                g3.misorder, g3.failed);
        exit(1);
    }
    snprintf(wl, sizeof wl, "W3 N=%ld", nl);
    emit(wl, peer, "ns/handoff", (double)(t1 - t0) / (double)n);
    emit(wl, peer, "total ms", (double)(t1 - t0) / 1e6);
    emit(wl, peer, "release-loop ns/op", (double)(t_rel - t0) / (double)n);
    emit(wl, peer, "spawn ms", (double)(c1 - c0) / 1e6);
    emit(wl, peer, "RSS bytes/waiter", (double)(rss1 - rss0) / (double)n);
    emit(wl, peer, "peak RSS/N bytes", (double)bench_peak_rss() / (double)n);
    band_sem_destroy(s);
    free(g3.arr);
    g3.arr = NULL;
}

/* ---------------------------------------------------------------- W5 */

/* msgs/s of one run; exits on a failed call or check. */
static double w5_once(int kind, int producers, long total)
{
    long per = total / producers > 0 ? total / producers : 1;
    struct bench_ch_result r = bench_ch_once(kind, producers, per, (uint64_t)W5_CAP);
    if (r.errors != 0)
        die(r.what != NULL ? r.what : "w5 failed", r.errors);
    return 1e9 / r.ns_per_elem;
}

static void run_w5(void)
{
    static const struct {
        const char *workload, *peer;
        int kind, producers;
    } v[] = {
        {"W5 SPSC", "band_chan send/recv", BENCH_CH_BAND, 1},
        {"W5 SPSC", "band_chan send/recv_many", BENCH_CH_BAND_MANY, 1},
        {"W5 MPSC", "band_chan send/recv", BENCH_CH_BAND, 2},
        {"W5 MPSC", "band_chan send/recv_many", BENCH_CH_BAND_MANY, 2},
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        (void)w5_once(v[k].kind, v[k].producers, W5_MSGS / 10 > 0 ? W5_MSGS / 10 : 1);
        for (long r = 0; r < REPS; r++)
            emit(v[k].workload, v[k].peer, "msgs/s", w5_once(v[k].kind, v[k].producers, W5_MSGS));
    }
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    bench_go_multithreaded();
    REPS = bench_env_long("REPS", 5);
    W1_ITERS = bench_env_long("W1_ITERS", 20000000);
    W2_ITERS = bench_env_long("W2_ITERS", 1000000);
    W4_ITERS = bench_env_long("W4_ITERS", 1000000);
    W4_CAP = bench_env_long("W4_CAP", 1024);
    W4_MAXW = bench_env_long("W4_MAXW", 64);
    SPIN = bench_env_long("SPIN", 32);
    SEED = (uint64_t)bench_env_long("SEED", 12345);
    W5_MSGS = bench_env_long("W5_MSGS", 10000000);
    W5_CAP = bench_env_long("W5_CAP", 1024);
    if (W4_MAXW < 1 || W4_CAP < W4_MAXW) {
        fprintf(stderr, "W4_MAXW must be in 1..W4_CAP\n");
        return 2;
    }
    if (W5_MSGS < 2 || W5_CAP < 1 || (W5_CAP & (W5_CAP - 1)) != 0) {
        fprintf(stderr, "W5_MSGS must be >= 2 and W5_CAP a power of two\n");
        return 2;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s w1|w2|w3 N|w4|w5\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "w1") == 0) {
        run_w1();
    } else if (strcmp(argv[1], "w2") == 0) {
        run_w2();
    } else if (strcmp(argv[1], "w3") == 0 && argc > 2) {
        long n = strtol(argv[2], NULL, 10);
        if (n < 1)
            return 2;
        /* Each variant in its own process, so that RSS figures start from scratch. */
        pid_t pid;
        int st = 0;
        fflush(stdout);
        pid = fork();
        if (pid < 0)
            die("fork", 1);
        if (pid == 0) {
            run_w3(n, 0);
            fflush(stdout);
            _exit(0);
        }
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            die("w3 (inline wake) failed", 1);
        run_w3(n, 1);
    } else if (strcmp(argv[1], "w4") == 0) {
        run_w4();
    } else if (strcmp(argv[1], "w5") == 0) {
        run_w5();
    } else {
        fprintf(stderr, "unknown workload %s\n", argv[1]);
        return 2;
    }
    return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_util.h - small helpers shared by band_bench and band_peer_harness.
 *
 * Timing, environment parameters, RSS and heap probes, medians, the weight table and the
 * "tiny spin" of the weighted workload, a two-thread runner, and the machine-readable
 * output (a TSV file of every figure, and the list of target lines printed at the end).
 * Everything is static inline so each benchmark includes what it uses without
 * unused-function warnings.
 *
 * The weight generator and the spin follow the parameters of the peer benchmarks
 * (xorshift64* seeded with SEED + worker id, 4096 weights, SPIN dependent multiply-adds)
 * so that band's figures line up with the peers' rows of the same workload.
 */
#ifndef BAND_BENCH_UTIL_H
#define BAND_BENCH_UTIL_H

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#define BENCH_CACHELINE 64

#if defined(__GNUC__) || defined(__clang__)
#define BENCH_NOINLINE __attribute__((noinline))
#else
#define BENCH_NOINLINE
#endif

/* Monotonic nanoseconds. */
static inline uint64_t bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* The median cost of one timed empty region (two clock reads), in ns. Subtracted from
 * regions that are short enough for it to matter. */
static inline double bench_clock_overhead(void)
{
    uint64_t best[64];
    for (int r = 0; r < 64; r++) {
        uint64_t t0 = bench_now();
        uint64_t t1 = bench_now();
        best[r] = t1 - t0;
    }
    /* insertion sort; 64 entries */
    for (int i = 1; i < 64; i++) {
        uint64_t v = best[i];
        int j = i - 1;
        while (j >= 0 && best[j] > v) {
            best[j + 1] = best[j];
            j--;
        }
        best[j + 1] = v;
    }
    return (double)best[32];
}

/* Sleep @ms milliseconds. */
static inline void bench_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* An integer parameter from the environment, or @dflt when unset or empty. */
static inline long bench_env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return dflt;
    return strtol(v, NULL, 10);
}

/* A "Vm...:" field of /proc/self/status in bytes, or -1 when unavailable. */
static inline long bench_status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t kl = strlen(key);
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, key, kl) == 0) {
            kb = strtol(line + kl, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* Resident set size now, in bytes. */
static inline long bench_rss(void)
{
    return bench_status_bytes("VmRSS:");
}

/* Peak resident set size, in bytes. */
static inline long bench_peak_rss(void)
{
    return bench_status_bytes("VmHWM:");
}

/* Bytes currently handed out by malloc (arena + mmapped chunks), or -1 when the C library
 * cannot say. Used to check that queueing waiters allocates nothing. */
static inline long long bench_heap_bytes(void)
{
#if defined(__GLIBC__) && defined(__GLIBC_MINOR__)
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)
    struct mallinfo2 mi = mallinfo2();
    return (long long)(mi.uordblks + mi.hblkhd);
#else
    return -1;
#endif
#else
    return -1;
#endif
}

/* CPU relax hint for spin loops. */
static inline void bench_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Spin 256 times, then yield, as the peers' lock-free baselines do. */
static inline void bench_backoff(unsigned *spins)
{
    if (++*spins < 256) {
        bench_pause();
    } else {
        *spins = 0;
        sched_yield();
    }
}

/* The median of @n values (the array is sorted in place). */
static inline double bench_median(double *v, int n)
{
    for (int i = 1; i < n; i++) {
        double x = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > x) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
    if (n <= 0)
        return 0.0;
    return (n & 1) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* xorshift64* step (Vigna's 12/25/27 variant). */
static inline uint64_t bench_xorshift64s(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * UINT64_C(0x2545F4914F6CDD1D);
}

#define BENCH_WEIGHTS 4096 /* a power of two */

/* Fill @out with BENCH_WEIGHTS weights in 1..@maxw from @seed. */
static inline void bench_make_weights(uint32_t *out, uint64_t seed, uint32_t maxw)
{
    uint64_t s = seed;
    for (int i = 0; i < BENCH_WEIGHTS; i++)
        out[i] = (uint32_t)((bench_xorshift64s(&s) >> 33) % maxw) + 1u;
}

/* The critical-section stand-in: @n dependent multiply-adds the compiler cannot fold. */
static inline uint64_t bench_tiny_spin(int n, uint64_t seed)
{
    uint64_t x = seed;
    for (int j = 0; j < n; j++) {
        x = x * 31u + (uint64_t)j;
#if defined(__GNUC__) || defined(__clang__)
        __asm__ volatile("" : "+r"(x));
#endif
    }
    return x;
}

/* ---------------------------------------------------------------- two threads */

/*
 * One worker's loop: worker @id (0 or 1) runs @iters operations on @obj. @weights is NULL
 * for weight-1 workloads,
 * otherwise BENCH_WEIGHTS weights to cycle through with @spin steps of work while holding.
 * Returns the spin accumulator (published so the compiler keeps the work) and adds the
 * number of failed library calls to *@failures.
 */
typedef uint64_t bench_duo_fn(void *obj, int id, long iters, const uint32_t *weights, int spin,
                              long *failures);

struct bench_duo {
    pthread_barrier_t bar;
    bench_duo_fn *fn;
    void *obj;
    long iters;
    int spin;
    const uint32_t *weights[2];
    uint64_t t_start[2], t_end[2];
    long failures[2];
    uint64_t sink[2];
};

struct bench_duo_arg {
    struct bench_duo *d;
    int id;
};

static inline void *bench_duo_thread(void *p)
{
    struct bench_duo_arg *a = p;
    struct bench_duo *d = a->d;
    int id = a->id;
    pthread_barrier_wait(&d->bar);
    d->t_start[id] = bench_now();
    d->sink[id] = d->fn(d->obj, id, d->iters, d->weights[id], d->spin, &d->failures[id]);
    d->t_end[id] = bench_now();
    return NULL;
}

/*
 * Run @fn on two new threads, each for @iters operations, and return the total operations
 * per second, from the first worker's start to the last one's end. @w0/@w1 are the
 * workers' weight tables (NULL for weight 1). Failed calls are added to *@failures.
 */
static inline double bench_duo_run(bench_duo_fn *fn, void *obj, long iters, const uint32_t *w0,
                                   const uint32_t *w1, int spin, long *failures)
{
    struct bench_duo d;
    struct bench_duo_arg args[2];
    pthread_t th[2];
    memset(&d, 0, sizeof d);
    d.fn = fn;
    d.obj = obj;
    d.iters = iters;
    d.spin = spin;
    d.weights[0] = w0;
    d.weights[1] = w1;
    pthread_barrier_init(&d.bar, NULL, 2);
    for (int i = 0; i < 2; i++) {
        args[i].d = &d;
        args[i].id = i;
        if (pthread_create(&th[i], NULL, bench_duo_thread, &args[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(1);
        }
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&d.bar);
    *failures += d.failures[0] + d.failures[1];
    {
        static volatile uint64_t sink;
        sink = d.sink[0] + d.sink[1];
        (void)sink;
    }
    uint64_t s = d.t_start[0] < d.t_start[1] ? d.t_start[0] : d.t_start[1];
    uint64_t e = d.t_end[0] > d.t_end[1] ? d.t_end[0] : d.t_end[1];
    return 2.0 * (double)iters / ((double)(e - s) / 1e9);
}

static inline void *bench_noop_thread(void *p)
{
    return p;
}

/* Start and join one thread: glibc takes its single-threaded shortcuts (no lock prefix in
 * its mutex paths) until a process has had a second thread, which would flatter the
 * pthread baselines. */
static inline void bench_go_multithreaded(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, bench_noop_thread, NULL) == 0)
        pthread_join(t, NULL);
}

/* The spin's cost alone on one thread, ns per call; the weights cycle 1..64 as in W4. */
static inline double bench_spin_calibration(long iters, int spin)
{
    uint64_t acc = 0;
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++)
        acc += bench_tiny_spin(spin, (uint64_t)(i & 63) + 1u);
    double r = (double)(bench_now() - t0) / (double)iters;
    {
        static volatile uint64_t sink;
        sink = acc;
        (void)sink;
    }
    return r;
}

/* ---------------------------------------------------------------- TSV and targets */

/*
 * band_bench --tsv FILE writes every figure it prints as one tab-separated line, for
 * scripts/bench_plot.sh and any other tool. The first line is the header:
 *
 *   kind section workload variant role threads unit median min max band_x
 *
 *   kind      "row" (a measured variant) or "target" (a target line)
 *   section   the section's letter (a..z)
 *   workload  the workload inside the section (a section may have several)
 *   variant   the row's name as printed
 *   role      row: "band" (a band call), "baseline" or "info" (a calibration row);
 *             target: PASS or MISS
 *   threads   threads that ran the variant (0 when not meaningful)
 *   unit      unit of median/min/max ("ns/op", "M ops/s", "M elem/s", "x"...)
 *   median, min, max   over the rounds ("-" when absent)
 *   band_x    row: band's time per op / this row's time per op, median of the per-round
 *             ratios (> 1: band is slower; 1 on band's reference row; "-" when absent);
 *             target: the requirement as text ("<= 1.20")
 *
 * Fields never contain a tab or a newline (they are replaced by spaces). Sections that
 * live in their own header call bench_tsv_row() and bench_target() the same way; both do
 * nothing harmful when no file is open.
 */
static inline FILE **bench_tsv_slot(void)
{
    static FILE *f;
    return &f;
}

/* Open @path for the figures and write the header. Returns 0, or -1 (message printed). */
static inline int bench_tsv_open(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    fprintf(f, "kind\tsection\tworkload\tvariant\trole\tthreads\tunit\tmedian\tmin\tmax\tband_x\n");
    *bench_tsv_slot() = f;
    return 0;
}

/* Write @s with tabs and newlines turned into spaces. */
static inline void bench_tsv_field(FILE *f, const char *s)
{
    for (; s != NULL && *s != '\0'; s++)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

static inline void bench_tsv_num(FILE *f, double v)
{
    if (v != v || v < -1e300 || v > 1e300) /* NaN or infinite: absent */
        fputs("-", f);
    else
        fprintf(f, "%.6g", v);
}

/* Role of a row from its name: band's own calls start with "band", calibration rows with
 * "(calibration)"; everything else is a baseline. */
static inline const char *bench_tsv_role(const char *variant)
{
    if (strncmp(variant, "band", 4) == 0)
        return "band";
    if (strncmp(variant, "(calibration)", 13) == 0)
        return "info";
    return "baseline";
}

/* One measured row (see the format above) with an explicit @role ("band", "baseline" or
 * "info"); a NaN is written as "-". */
static inline void bench_tsv_row_as(const char *role, char section, const char *workload,
                                    const char *variant, int threads, const char *unit,
                                    double median, double lo, double hi, double band_x)
{
    FILE *f = *bench_tsv_slot();
    if (f == NULL)
        return;
    fprintf(f, "row\t%c\t", section);
    bench_tsv_field(f, workload);
    fputc('\t', f);
    bench_tsv_field(f, variant);
    fprintf(f, "\t%s\t%d\t", role, threads);
    bench_tsv_field(f, unit);
    fputc('\t', f);
    bench_tsv_num(f, median);
    fputc('\t', f);
    bench_tsv_num(f, lo);
    fputc('\t', f);
    bench_tsv_num(f, hi);
    fputc('\t', f);
    bench_tsv_num(f, band_x);
    fputc('\n', f);
}

/* The same, with the role taken from the name (bench_tsv_role()). */
static inline void bench_tsv_row(char section, const char *workload, const char *variant,
                                 int threads, const char *unit, double median, double lo, double hi,
                                 double band_x)
{
    bench_tsv_row_as(bench_tsv_role(variant), section, workload, variant, threads, unit, median, lo,
                     hi, band_x);
}

/* Close the file. Returns 0, or -1 when a write failed (message printed). */
static inline int bench_tsv_close(const char *path)
{
    FILE *f = *bench_tsv_slot();
    int bad;
    if (f == NULL)
        return 0;
    *bench_tsv_slot() = NULL;
    bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "band_bench: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

#define BENCH_TARGETS_MAX 64
#define BENCH_TARGET_LEN  240

struct bench_targets {
    int n;
    char line[BENCH_TARGETS_MAX][BENCH_TARGET_LEN];
};

static inline struct bench_targets *bench_targets(void)
{
    static struct bench_targets t;
    return &t;
}

/*
 * Record one target: @ok decides PASS or MISS, @value is the figure reached in @unit,
 * @need the requirement as text ("<= 1.20", ">= 0.50"), @fmt... the target's name. The
 * line is printed with the others in band_bench's "targets:" block at the end of the run
 * (in the order recorded) and written to the TSV file at once. Sections in their own
 * headers call this for their own targets. Returns @ok.
 */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 6, 7)))
#endif
static inline int
bench_target(char section, int ok, double value, const char *unit, const char *need,
             const char *fmt, ...)
{
    struct bench_targets *t = bench_targets();
    FILE *f = *bench_tsv_slot();
    char name[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    if (t->n < BENCH_TARGETS_MAX) {
        snprintf(t->line[t->n], BENCH_TARGET_LEN, "(%c) %s: %.2f %s (need %s) %s", section, name,
                 value, unit, need, ok ? "PASS" : "MISS");
        t->n++;
    }
    if (f != NULL) {
        fprintf(f, "target\t%c\t", section);
        bench_tsv_field(f, name);
        fprintf(f, "\t-\t%s\t0\t", ok ? "PASS" : "MISS");
        bench_tsv_field(f, unit);
        fputc('\t', f);
        bench_tsv_num(f, value);
        fputs("\t-\t-\t", f);
        bench_tsv_field(f, need);
        fputc('\n', f);
    }
    return ok;
}

#endif /* BAND_BENCH_UTIL_H */

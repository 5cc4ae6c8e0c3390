/* SPDX-License-Identifier: MIT */
/*
 * tenants.c - several tenants share eight worker slots through one band_fair.
 *
 * Four tenants run client threads that loop: take a slot (band_fair_acquire), "serve a
 * request" (sleep about 50 us, as I/O would), give the slot back. Every tenant has more
 * threads than its share of slots, so all stay backlogged: gold (weight 4, 6 threads),
 * silver (weight 2, 6 threads), bronze (weight 1, 6 threads) and noisy (weight 1, 24
 * threads, flooding the fair). A FIFO semaphore would serve them in arrival order, so
 * noisy, with the most threads, would take the most slots; the fair serves them 4:2:1:1.
 * An "ops" tenant sends occasional urgent requests in class 0, the most urgent; batch
 * work (class 1) leaves 2 of the 8 slots free for it, so ops finds room at once.
 *
 * Prints, per tenant: weight, threads, grants, share of grants next to the share its
 * weight entitles it to, and the wait for a slot (p50, p99, max). Exits 1 if more slots
 * than exist were ever in use or a band call failed, 0 otherwise. Shares measured with
 * real threads vary from run to run; the exact shares are asserted on a deterministic
 * schedule in tests/unit/test_fair_share.c.
 *
 * Usage: tenants [--quick]
 *
 * Built with -DBAND_TENANTS_NO_MAIN it has no main(), and another program (examples/demo.c)
 * calls band_tenants_demo(quick) instead.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <band/band.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TENANT_SLOTS    8u
#define TENANT_HEADROOM 2u /* batch work (class 1) leaves 2 slots free for urgent work */
#define TENANT_BATCH    (TENANT_SLOTS - TENANT_HEADROOM) /* slots batch work may fill */
#define CLASS_URGENT    0u
#define CLASS_BATCH     1u
#define TENANT_SAMPLES  (1u << 16)
#define TENANT_MAX_THR  24u
#define TENANT_NOISY    3 /* index of the flooding tenant */
#define TENANT_OPS      4 /* index of the urgent tenant */
#define TENANT_COUNT    5
#define TENANT_WORK_NS  50000L
#define TENANT_OPS_IDLE 1000000L

int band_tenants_demo(int quick, const char *data_dir);

struct tenant {
    const char *name;
    uint64_t key;
    uint32_t weight;
    uint32_t cls;
    unsigned threads;
    atomic_uint_fast64_t grants;
    atomic_uint_fast64_t nsamples;
    uint64_t *wait_ns; /* TENANT_SAMPLES entries */
};

struct demo {
    band_fair *fair;
    struct tenant t[TENANT_COUNT];
    atomic_int stop;
    atomic_int errors;
    atomic_uint in_flight;
    atomic_uint max_in_flight;
};

struct client {
    struct demo *d;
    struct tenant *t;
};

static void nap(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    struct demo *d = c->d;
    struct tenant *t = c->t;
    while (!atomic_load(&d->stop)) {
        band_time t0 = band_now();
        int rc = band_fair_acquire(d->fair, t->key, t->cls, 1, t0 + 2 * BAND_SEC, NULL);
        if (rc != 0) {
            atomic_fetch_add(&d->errors, 1);
            break;
        }
        uint64_t waited = (uint64_t)(band_now() - t0);
        uint64_t i = atomic_fetch_add(&t->nsamples, 1);
        if (i < TENANT_SAMPLES)
            t->wait_ns[i] = waited;
        atomic_fetch_add(&t->grants, 1);
        unsigned now = atomic_fetch_add(&d->in_flight, 1) + 1;
        unsigned max = atomic_load(&d->max_in_flight);
        while (now > max && !atomic_compare_exchange_weak(&d->max_in_flight, &max, now)) {
        }
        nap(TENANT_WORK_NS); /* serve the request */
        atomic_fetch_sub(&d->in_flight, 1);
        if (band_fair_release(d->fair, t->key, 1) != 0)
            atomic_fetch_add(&d->errors, 1);
        if (t->cls == CLASS_URGENT)
            nap(TENANT_OPS_IDLE); /* urgent requests are occasional */
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The @q-th quantile (0..1) of the sorted @v[0..@n-1], in microseconds. */
static double quantile_us(const uint64_t *v, uint64_t n, double q)
{
    if (n == 0)
        return 0.0;
    uint64_t i = (uint64_t)(q * (double)(n - 1));
    return (double)v[i] / 1e3;
}

int band_tenants_demo(int quick, const char *data_dir)
{
    static const struct {
        const char *name;
        uint32_t weight;
        uint32_t cls;
        unsigned threads;
    } spec[TENANT_COUNT] = {
        {"gold", 4, CLASS_BATCH, 6},   {"silver", 2, CLASS_BATCH, 6}, {"bronze", 1, CLASS_BATCH, 6},
        {"noisy", 1, CLASS_BATCH, 24}, {"ops", 1, CLASS_URGENT, 2},
    };
    struct demo *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return 1;
    band_fair_opts opts = {0};
    opts.classes = 2;
    opts.headroom[CLASS_BATCH] = TENANT_HEADROOM;
    int rc = band_fair_create(&d->fair, TENANT_SLOTS, &opts);
    if (rc == 0)
        rc = band_fair_set_name(d->fair, "tenants");
    unsigned nthreads = 0;
    for (int i = 0; i < TENANT_COUNT && rc == 0; i++) {
        struct tenant *t = &d->t[i];
        t->name = spec[i].name;
        t->key = 100 + (uint64_t)i;
        t->weight = spec[i].weight;
        t->cls = spec[i].cls;
        t->threads = spec[i].threads;
        t->wait_ns = calloc(TENANT_SAMPLES, sizeof(uint64_t));
        if (t->wait_ns == NULL)
            rc = BAND_ENOMEM;
        band_fair_key_opts o = {t->weight, 0, 0};
        if (rc == 0)
            rc = band_fair_key_set(d->fair, t->key, &o);
        nthreads += t->threads;
    }
    if (rc != 0) {
        (void)fprintf(stderr, "tenants: setup failed: %s\n", band_strerror(rc));
        (void)band_fair_destroy(d->fair);
        for (int i = 0; i < TENANT_COUNT; i++)
            free(d->t[i].wait_ns);
        free(d);
        return 1;
    }

    pthread_t tid[TENANT_COUNT * TENANT_MAX_THR];
    struct client cl[TENANT_COUNT * TENANT_MAX_THR];
    unsigned started = 0;
    for (int i = 0; i < TENANT_COUNT; i++) {
        for (unsigned j = 0; j < d->t[i].threads; j++) {
            cl[started] = (struct client){d, &d->t[i]};
            if (pthread_create(&tid[started], NULL, client_main, &cl[started]) != 0) {
                atomic_fetch_add(&d->errors, 1);
                break;
            }
            started++;
        }
    }
    nap(quick ? 300000000L : 999999999L);
    atomic_store(&d->stop, 1);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);

    uint64_t batch_total = 0, weight_total = 0;
    for (int i = 0; i < TENANT_COUNT; i++) {
        if (d->t[i].cls == CLASS_BATCH) {
            batch_total += atomic_load(&d->t[i].grants);
            weight_total += d->t[i].weight;
        }
    }
    printf("tenants: %u slots (batch may use %u), %u client threads, %s run\n", TENANT_SLOTS,
           TENANT_BATCH, nthreads, quick ? "quick" : "1 s");
    printf("%-7s %6s %5s %7s %8s %8s %9s %9s %9s\n", "tenant", "weight", "class", "threads",
           "grants", "share", "entitled", "wait p50", "wait p99");
    FILE *tsv = NULL;
    if (data_dir != NULL) {
        char path[4096];
        (void)snprintf(path, sizeof(path), "%s/tenants.tsv", data_dir);
        tsv = fopen(path, "w");
        if (tsv == NULL) {
            perror(path);
            atomic_fetch_add(&d->errors, 1);
        } else {
            (void)fprintf(tsv,
                          "# band_demo part 4: batch tenants sharing %u slots through one "
                          "band_fair; share and entitled in %% of batch grants\n"
                          "tenant\tweight\tthreads\tgrants\tshare\tentitled\t"
                          "wait_p50_us\twait_p99_us\n",
                          TENANT_BATCH);
        }
    }
    double worst_gap = 0.0;
    const char *worst = "-";
    for (int i = 0; i < TENANT_COUNT; i++) {
        struct tenant *t = &d->t[i];
        uint64_t g = atomic_load(&t->grants);
        uint64_t n = atomic_load(&t->nsamples);
        if (n > TENANT_SAMPLES)
            n = TENANT_SAMPLES;
        qsort(t->wait_ns, (size_t)n, sizeof(uint64_t), cmp_u64);
        char share[16] = "-", entitled[16] = "-";
        if (t->cls == CLASS_BATCH && batch_total > 0) {
            double sh = 100.0 * (double)g / (double)batch_total;
            double en = 100.0 * (double)t->weight / (double)weight_total;
            (void)snprintf(share, sizeof(share), "%.1f%%", sh);
            (void)snprintf(entitled, sizeof(entitled), "%.1f%%", en);
            double gap = sh > en ? sh - en : en - sh;
            if (gap >= worst_gap) {
                worst_gap = gap;
                worst = t->name;
            }
            if (tsv != NULL)
                (void)fprintf(tsv, "%s\t%" PRIu32 "\t%u\t%" PRIu64 "\t%.2f\t%.2f\t%.1f\t%.1f\n",
                              t->name, t->weight, t->threads, g, sh, en,
                              quantile_us(t->wait_ns, n, 0.50), quantile_us(t->wait_ns, n, 0.99));
        }
        printf("%-7s %6" PRIu32 " %5" PRIu32 " %7u %8" PRIu64 " %8s %9s %7.0fus %7.0fus\n", t->name,
               t->weight, t->cls, t->threads, g, share, entitled, quantile_us(t->wait_ns, n, 0.50),
               quantile_us(t->wait_ns, n, 0.99));
    }
    band_fair_stats st;
    (void)band_fair_get_stats(d->fair, &st);
    const band_fair_class_stats *batch = &st.cls[CLASS_BATCH], *urgent = &st.cls[CLASS_URGENT];
    printf("most slots in use at once: %u of %u; batch (class 1) waited %.0f us on average, "
           "urgent (class 0) %.0f us\n",
           atomic_load(&d->max_in_flight), TENANT_SLOTS,
           batch->granted ? (double)batch->wait_ns_total / 1e3 / (double)batch->granted : 0.0,
           urgent->granted ? (double)urgent->wait_ns_total / 1e3 / (double)urgent->granted : 0.0);

    if (tsv != NULL && fclose(tsv) != 0)
        atomic_fetch_add(&d->errors, 1);
    const struct tenant *ops = &d->t[TENANT_OPS], *noisy = &d->t[TENANT_NOISY];
    printf("verdict: shares within %.1f points of the weights (%s furthest), though noisy runs %u "
           "of %u threads; ops waited %.0f us\n",
           worst_gap, worst, noisy->threads, nthreads - ops->threads,
           urgent->granted ? (double)urgent->wait_ns_total / 1e3 / (double)urgent->granted : 0.0);

    int failed = atomic_load(&d->errors) != 0 || atomic_load(&d->max_in_flight) > TENANT_SLOTS ||
                 st.in_use != 0;
    (void)band_fair_close(d->fair);
    (void)band_fair_destroy(d->fair);
    for (int i = 0; i < TENANT_COUNT; i++)
        free(d->t[i].wait_ns);
    free(d);
    return failed;
}

#ifndef BAND_TENANTS_NO_MAIN
int main(int argc, char **argv)
{
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else {
            (void)fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
            return 2;
        }
    }
    return band_tenants_demo(quick, NULL);
}
#endif

/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_sync.h - the non-waiting operations of oneshot, watch and broadcast beside a
 * mutex-protected baseline of the same shape, for band_bench (section l; every function
 * static).
 *
 *   S1  band_oneshot_send + band_oneshot_try_recv on a fresh oneshot     ns per pair
 *   S2  band_watch_send + band_watch_try_recv (8-byte value, one cursor) ns per pair
 *   S3  band_broadcast_try_send + band_broadcast_try_recv (lossy ring of 1024 8-byte
 *       messages, one receiver)                                           ns per pair
 *   S4  the same pair on a lossless broadcast (each read frees its slot)   ns per pair
 *   beside, in the same rounds, M1..M3 (S4 beside M3): the same pair on a hand-written
 *   object whose state sits behind one pthread mutex (lock, check, copy, unlock per call)
 *   - what these primitives cost when every operation takes their lock.
 * Each figure is the median of several rounds; the ratios are band / mutex baseline.
 * Single-threaded, so the mutexes are uncontended: the figures are the floor of each
 * path, not its behaviour under contention (which the stress tests exercise).
 * Oneshots are single-use: they are created and destroyed in batches outside the timed
 * regions, so S1 and M1 time only the send and the receive.
 */
#ifndef BAND_BENCH_SYNC_H
#define BAND_BENCH_SYNC_H

#include "bench_util.h"

#include <band/broadcast.h>
#include <band/oneshot.h>
#include <band/watch.h>

#include <pthread.h>

#define BENCH_SYNC_RUNS  7
#define BENCH_SYNC_BATCH 1024

/* ---------------------------------------------------------------- mutex baselines */

struct bench_mx_oneshot {
    pthread_mutex_t mu;
    int sent, taken;
    uint64_t value;
};

static BENCH_NOINLINE int bench_mx_oneshot_send(struct bench_mx_oneshot *o, const uint64_t *v)
{
    pthread_mutex_lock(&o->mu);
    int rc = o->sent ? -1 : 0;
    if (rc == 0) {
        o->value = *v;
        o->sent = 1;
    }
    pthread_mutex_unlock(&o->mu);
    return rc;
}

static BENCH_NOINLINE int bench_mx_oneshot_try_recv(struct bench_mx_oneshot *o, uint64_t *out)
{
    pthread_mutex_lock(&o->mu);
    int rc = (!o->sent || o->taken) ? -1 : 0;
    if (rc == 0) {
        *out = o->value;
        o->taken = 1;
    }
    pthread_mutex_unlock(&o->mu);
    return rc;
}

struct bench_mx_watch {
    pthread_mutex_t mu;
    uint64_t version, value;
};

static BENCH_NOINLINE int bench_mx_watch_send(struct bench_mx_watch *w, const uint64_t *v)
{
    pthread_mutex_lock(&w->mu);
    w->value = *v;
    w->version++;
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static BENCH_NOINLINE int bench_mx_watch_try_recv(struct bench_mx_watch *w, uint64_t *seen,
                                                  uint64_t *out)
{
    pthread_mutex_lock(&w->mu);
    int rc = w->version == *seen ? -1 : 0;
    if (rc == 0) {
        *out = w->value;
        *seen = w->version;
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

#define BENCH_MX_RING 1024
struct bench_mx_ring {
    pthread_mutex_t mu;
    uint64_t head, tail;
    uint64_t slot[BENCH_MX_RING];
};

static BENCH_NOINLINE int bench_mx_ring_send(struct bench_mx_ring *b, const uint64_t *v)
{
    pthread_mutex_lock(&b->mu);
    if (b->head - b->tail == BENCH_MX_RING)
        b->tail++;
    b->slot[b->head % BENCH_MX_RING] = *v;
    b->head++;
    pthread_mutex_unlock(&b->mu);
    return 0;
}

static BENCH_NOINLINE int bench_mx_ring_recv(struct bench_mx_ring *b, uint64_t *next, uint64_t *out)
{
    pthread_mutex_lock(&b->mu);
    int rc = -1;
    if (*next < b->tail)
        *next = b->tail;
    if (*next < b->head) {
        *out = b->slot[*next % BENCH_MX_RING];
        ++*next;
        rc = 0;
    }
    pthread_mutex_unlock(&b->mu);
    return rc;
}

/* ---------------------------------------------------------------- rounds */

/* S1: ns per send + try_recv pair over @batches batches of fresh oneshots. */
static double bench_sync_oneshot(long batches, int *bad)
{
    static band_oneshot *os[BENCH_SYNC_BATCH];
    uint64_t ns = 0, sum = 0;
    for (long b = 0; b < batches; b++) {
        for (int i = 0; i < BENCH_SYNC_BATCH; i++) {
            if (band_oneshot_create(&os[i], sizeof(uint64_t)) != 0) {
                *bad = 1;
                return 0;
            }
        }
        uint64_t t0 = bench_now();
        for (int i = 0; i < BENCH_SYNC_BATCH; i++) {
            uint64_t v = (uint64_t)i, out = 0;
            if (band_oneshot_send(os[i], &v) != 0 || band_oneshot_try_recv(os[i], &out) != 0)
                *bad = 1;
            sum += out;
        }
        ns += bench_now() - t0;
        for (int i = 0; i < BENCH_SYNC_BATCH; i++)
            band_oneshot_destroy(os[i]);
    }
    if (sum != (uint64_t)batches * (BENCH_SYNC_BATCH * (BENCH_SYNC_BATCH - 1) / 2))
        *bad = 1;
    return (double)ns / ((double)batches * BENCH_SYNC_BATCH);
}

static double bench_sync_mx_oneshot(long batches, int *bad)
{
    static struct bench_mx_oneshot os[BENCH_SYNC_BATCH];
    uint64_t ns = 0, sum = 0;
    for (long b = 0; b < batches; b++) {
        for (int i = 0; i < BENCH_SYNC_BATCH; i++) {
            pthread_mutex_init(&os[i].mu, NULL);
            os[i].sent = os[i].taken = 0;
        }
        uint64_t t0 = bench_now();
        for (int i = 0; i < BENCH_SYNC_BATCH; i++) {
            uint64_t v = (uint64_t)i, out = 0;
            if (bench_mx_oneshot_send(&os[i], &v) != 0 ||
                bench_mx_oneshot_try_recv(&os[i], &out) != 0)
                *bad = 1;
            sum += out;
        }
        ns += bench_now() - t0;
        for (int i = 0; i < BENCH_SYNC_BATCH; i++)
            pthread_mutex_destroy(&os[i].mu);
    }
    if (sum != (uint64_t)batches * (BENCH_SYNC_BATCH * (BENCH_SYNC_BATCH - 1) / 2))
        *bad = 1;
    return (double)ns / ((double)batches * BENCH_SYNC_BATCH);
}

/* S2: ns per send + try_recv pair on one watch and one cursor. */
static double bench_sync_watch(long iters, int *bad)
{
    band_watch *w = NULL;
    uint64_t zero = 0;
    if (band_watch_create(&w, sizeof(uint64_t), &zero) != 0) {
        *bad = 1;
        return 0;
    }
    band_watch_rx rx;
    band_watch_rx_init(&rx, w);
    uint64_t sum = 0;
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        uint64_t v = (uint64_t)i, out = 0;
        if (band_watch_send(w, &v) != 0 || band_watch_try_recv(&rx, &out) != 0)
            *bad = 1;
        sum += out;
    }
    uint64_t ns = bench_now() - t0;
    if (sum != (uint64_t)iters * (uint64_t)(iters - 1) / 2)
        *bad = 1;
    band_watch_destroy(w);
    return (double)ns / (double)iters;
}

static double bench_sync_mx_watch(long iters, int *bad)
{
    struct bench_mx_watch w = {.version = 0, .value = 0};
    pthread_mutex_init(&w.mu, NULL);
    uint64_t seen = 0, sum = 0;
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        uint64_t v = (uint64_t)i, out = 0;
        if (bench_mx_watch_send(&w, &v) != 0 || bench_mx_watch_try_recv(&w, &seen, &out) != 0)
            *bad = 1;
        sum += out;
    }
    uint64_t ns = bench_now() - t0;
    if (sum != (uint64_t)iters * (uint64_t)(iters - 1) / 2)
        *bad = 1;
    pthread_mutex_destroy(&w.mu);
    return (double)ns / (double)iters;
}

/* S3, S4: ns per try_send + try_recv pair on a broadcast (@mode) with one receiver. */
static double bench_sync_broadcast(long iters, int mode, int *bad)
{
    band_broadcast *b = NULL;
    if (band_broadcast_create(&b, sizeof(uint64_t), BENCH_MX_RING, mode) != 0) {
        *bad = 1;
        return 0;
    }
    band_broadcast_rx rx;
    band_broadcast_rx_init(&rx);
    if (band_broadcast_subscribe(b, &rx) != 0)
        *bad = 1;
    uint64_t sum = 0;
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        uint64_t v = (uint64_t)i, out = 0;
        if (band_broadcast_try_send(b, &v) != 0 || band_broadcast_try_recv(&rx, &out) != 0)
            *bad = 1;
        sum += out;
    }
    uint64_t ns = bench_now() - t0;
    if (sum != (uint64_t)iters * (uint64_t)(iters - 1) / 2)
        *bad = 1;
    band_broadcast_unsubscribe(&rx);
    band_broadcast_destroy(b);
    return (double)ns / (double)iters;
}

static double bench_sync_mx_broadcast(long iters, int *bad)
{
    static struct bench_mx_ring b;
    pthread_mutex_init(&b.mu, NULL);
    b.head = b.tail = 0;
    uint64_t next = 0, sum = 0;
    uint64_t t0 = bench_now();
    for (long i = 0; i < iters; i++) {
        uint64_t v = (uint64_t)i, out = 0;
        if (bench_mx_ring_send(&b, &v) != 0 || bench_mx_ring_recv(&b, &next, &out) != 0)
            *bad = 1;
        sum += out;
    }
    uint64_t ns = bench_now() - t0;
    if (sum != (uint64_t)iters * (uint64_t)(iters - 1) / 2)
        *bad = 1;
    pthread_mutex_destroy(&b.mu);
    return (double)ns / (double)iters;
}

/* Section (l). Returns 1 when a call gave an unexpected result, else 0. */
static int bench_sync_section(int quick)
{
    int bad = 0;
    long iters = quick ? 20000 : 2000000;
    long batches = quick ? 20 : 1000;
    double s1[BENCH_SYNC_RUNS], s2[BENCH_SYNC_RUNS], s3[BENCH_SYNC_RUNS], s4[BENCH_SYNC_RUNS];
    double m1[BENCH_SYNC_RUNS], m2[BENCH_SYNC_RUNS], m3[BENCH_SYNC_RUNS];
    double x1[BENCH_SYNC_RUNS], x2[BENCH_SYNC_RUNS], x3[BENCH_SYNC_RUNS], x4[BENCH_SYNC_RUNS];
    for (int r = 0; r < BENCH_SYNC_RUNS; r++) {
        /* One round runs every variant, so noise hits them alike. */
        m1[r] = bench_sync_mx_oneshot(batches, &bad);
        s1[r] = bench_sync_oneshot(batches, &bad);
        m2[r] = bench_sync_mx_watch(iters, &bad);
        s2[r] = bench_sync_watch(iters, &bad);
        m3[r] = bench_sync_mx_broadcast(iters, &bad);
        s3[r] = bench_sync_broadcast(iters, BAND_BROADCAST_LOSSY, &bad);
        s4[r] = bench_sync_broadcast(iters, BAND_BROADCAST_LOSSLESS, &bad);
        x1[r] = m1[r] > 0 ? s1[r] / m1[r] : 0;
        x2[r] = m2[r] > 0 ? s2[r] / m2[r] : 0;
        x3[r] = m3[r] > 0 ? s3[r] / m3[r] : 0;
        x4[r] = m3[r] > 0 ? s4[r] / m3[r] : 0;
    }
    printf("\n(l) oneshot, watch, broadcast: non-waiting pairs, one thread, medians of %d rounds\n",
           BENCH_SYNC_RUNS);
    printf("  S1 oneshot send + try_recv:            %7.1f ns   M1 mutex oneshot: %7.1f ns   "
           "S1/M1 %.2fx\n",
           bench_median(s1, BENCH_SYNC_RUNS), bench_median(m1, BENCH_SYNC_RUNS),
           bench_median(x1, BENCH_SYNC_RUNS));
    printf("  S2 watch send + try_recv:              %7.1f ns   M2 mutex watch:   %7.1f ns   "
           "S2/M2 %.2fx\n",
           bench_median(s2, BENCH_SYNC_RUNS), bench_median(m2, BENCH_SYNC_RUNS),
           bench_median(x2, BENCH_SYNC_RUNS));
    printf("  S3 broadcast try_send + try_recv:      %7.1f ns   M3 mutex ring:    %7.1f ns   "
           "S3/M3 %.2fx\n",
           bench_median(s3, BENCH_SYNC_RUNS), bench_median(m3, BENCH_SYNC_RUNS),
           bench_median(x3, BENCH_SYNC_RUNS));
    printf("  S4 lossless broadcast pair:            %7.1f ns   M3 mutex ring:    %7.1f ns   "
           "S4/M3 %.2fx\n",
           bench_median(s4, BENCH_SYNC_RUNS), bench_median(m3, BENCH_SYNC_RUNS),
           bench_median(x4, BENCH_SYNC_RUNS));
    if (bad)
        printf("  (l): a oneshot, watch or broadcast call gave an unexpected result\n");
    return bad;
}

#endif /* BAND_BENCH_SYNC_H */

/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_chan.h - the bounded-channel workload shared by band_bench (sections f, g) and
 * band_peer_harness (W5).
 *
 * P producer threads (1 or 2) each send @per_producer u64 values, producer p sending
 * p * per_producer + i for i = 0.., and the calling thread receives all P * per_producer of
 * them. Four variants:
 *
 *   BENCH_CH_RING       a bare bounded lock-free MPMC ring with per-slot sequence numbers
 *                       (Vyukov's design); full and empty are waited out by spinning with
 *                       `pause`, then sched_yield (bench_backoff()). The ceiling.
 *   BENCH_CH_LOCKED     one mutex and two condition variables around a ring; a side
 *                       signals the other only when someone sleeps there.
 *   BENCH_CH_BAND       band_chan_send(FOREVER) / band_chan_recv(FOREVER).
 *   BENCH_CH_BAND_MANY  band_chan_send(FOREVER) / band_chan_recv_many(64, FOREVER).
 *
 * The consumer checks every value: producer p's values must arrive exactly in the order
 * they were sent (one consumer, per-producer FIFO), so a lost, duplicated or reordered
 * element is caught at once; the sum of everything received must be n(n-1)/2. For band the
 * channel's own counters (sent, received, len) are checked after the run too.
 *
 * Timing runs from the start barrier (producers and consumer released together) to the
 * consumer's last element, so thread creation is not counted.
 */
#ifndef BAND_BENCH_CHAN_H
#define BAND_BENCH_CHAN_H

#include "bench_util.h"

#include <band/chan.h>

enum bench_ch_kind {
    BENCH_CH_RING = 0,
    BENCH_CH_LOCKED = 1,
    BENCH_CH_BAND = 2,
    BENCH_CH_BAND_MANY = 3,
};

#define BENCH_CH_BATCH     64 /* recv_many batch */
#define BENCH_CH_MAX_PROD  2
#define BENCH_CH_ELEM_SIZE ((uint64_t)sizeof(uint64_t))

/* ---------------------------------------------------------------- Vyukov ring */

struct bench_ring_cell {
    _Atomic uint64_t turn; /* == position: free for the writer of position; == position + 1:
                              holds that position's value */
    uint64_t value;
};

struct bench_ring {
    _Alignas(BENCH_CACHELINE) struct bench_ring_cell *cells;
    uint64_t mask;
    _Alignas(BENCH_CACHELINE) _Atomic uint64_t write_pos;
    _Alignas(BENCH_CACHELINE) _Atomic uint64_t read_pos;
    char pad[BENCH_CACHELINE - sizeof(uint64_t)];
};

/* @cap must be a power of two. Returns 0, or -1 when out of memory. */
static inline int bench_ring_init(struct bench_ring *r, uint64_t cap)
{
    r->cells = aligned_alloc(BENCH_CACHELINE, (size_t)cap * sizeof(struct bench_ring_cell));
    if (r->cells == NULL)
        return -1;
    r->mask = cap - 1;
    for (uint64_t i = 0; i < cap; i++)
        atomic_init(&r->cells[i].turn, i);
    atomic_init(&r->write_pos, 0);
    atomic_init(&r->read_pos, 0);
    return 0;
}

static inline void bench_ring_destroy(struct bench_ring *r)
{
    free(r->cells);
    r->cells = NULL;
}

/* Claim the next write position and fill it; 0 when the ring is full. */
static inline int bench_ring_try_put(struct bench_ring *r, uint64_t v)
{
    uint64_t pos = atomic_load_explicit(&r->write_pos, memory_order_relaxed);
    for (;;) {
        struct bench_ring_cell *c = &r->cells[pos & r->mask];
        uint64_t turn = atomic_load_explicit(&c->turn, memory_order_acquire);
        int64_t d = (int64_t)(turn - pos);
        if (d == 0) {
            if (atomic_compare_exchange_weak_explicit(&r->write_pos, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                c->value = v;
                atomic_store_explicit(&c->turn, pos + 1, memory_order_release);
                return 1;
            }
            /* pos was reloaded by the failed CAS */
        } else if (d < 0) {
            return 0; /* the cell still holds the value from one lap ago: full */
        } else {
            pos = atomic_load_explicit(&r->write_pos, memory_order_relaxed);
        }
    }
}

/* Claim the next read position and empty it; 0 when the ring is empty. */
static inline int bench_ring_try_get(struct bench_ring *r, uint64_t *v)
{
    uint64_t pos = atomic_load_explicit(&r->read_pos, memory_order_relaxed);
    for (;;) {
        struct bench_ring_cell *c = &r->cells[pos & r->mask];
        uint64_t turn = atomic_load_explicit(&c->turn, memory_order_acquire);
        int64_t d = (int64_t)(turn - (pos + 1));
        if (d == 0) {
            if (atomic_compare_exchange_weak_explicit(&r->read_pos, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                *v = c->value;
                atomic_store_explicit(&c->turn, pos + r->mask + 1, memory_order_release);
                return 1;
            }
        } else if (d < 0) {
            return 0; /* not written yet: empty */
        } else {
            pos = atomic_load_explicit(&r->read_pos, memory_order_relaxed);
        }
    }
}

/* ---------------------------------------------------------------- mutex + condvar queue */

struct bench_lq {
    pthread_mutex_t mu; /* protects every field below */
    pthread_cond_t not_full, not_empty;
    uint64_t *buf;
    uint64_t cap, head, len;
    unsigned put_sleepers, get_sleepers;
};

static inline int bench_lq_init(struct bench_lq *q, uint64_t cap)
{
    q->buf = malloc((size_t)cap * sizeof(uint64_t));
    if (q->buf == NULL)
        return -1;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_full, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    q->cap = cap;
    q->head = q->len = 0;
    q->put_sleepers = q->get_sleepers = 0;
    return 0;
}

static inline void bench_lq_destroy(struct bench_lq *q)
{
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->not_full);
    pthread_cond_destroy(&q->not_empty);
    free(q->buf);
    q->buf = NULL;
}

static BENCH_NOINLINE void bench_lq_put(struct bench_lq *q, uint64_t v)
{
    int wake;
    pthread_mutex_lock(&q->mu);
    while (q->len == q->cap) {
        q->put_sleepers++;
        pthread_cond_wait(&q->not_full, &q->mu);
        q->put_sleepers--;
    }
    q->buf[(q->head + q->len) % q->cap] = v;
    q->len++;
    wake = q->get_sleepers != 0;
    pthread_mutex_unlock(&q->mu);
    if (wake)
        pthread_cond_signal(&q->not_empty);
}

static BENCH_NOINLINE uint64_t bench_lq_get(struct bench_lq *q)
{
    uint64_t v;
    int wake;
    pthread_mutex_lock(&q->mu);
    while (q->len == 0) {
        q->get_sleepers++;
        pthread_cond_wait(&q->not_empty, &q->mu);
        q->get_sleepers--;
    }
    v = q->buf[q->head];
    q->head = (q->head + 1) % q->cap;
    q->len--;
    wake = q->put_sleepers != 0;
    pthread_mutex_unlock(&q->mu);
    if (wake)
        pthread_cond_signal(&q->not_full);
    return v;
}

/* ---------------------------------------------------------------- the run */

struct bench_ch_result {
    double ns_per_elem;    /* consumer's time / elements received */
    long errors;           /* failed calls and broken checks */
    const char *what;      /* the first failure, for the message */
    uint64_t send_wait_ns; /* band: stats.send_wait_ns (time producers spent queued) */
    uint64_t run_ns;       /* the timed interval */
};

struct bench_ch_run {
    int kind;
    int producers;
    long per_producer;
    uint64_t cap;
    struct bench_ring ring;
    struct bench_lq lq;
    band_chan *chan;
    pthread_barrier_t start;
    _Atomic long producer_errors;
};

struct bench_ch_arg {
    struct bench_ch_run *run;
    int id;
};

static inline void *bench_ch_producer(void *p)
{
    struct bench_ch_arg *a = p;
    struct bench_ch_run *run = a->run;
    uint64_t base = (uint64_t)a->id * (uint64_t)run->per_producer;
    uint64_t end = base + (uint64_t)run->per_producer;
    long bad = 0;
    unsigned spins = 0;
    pthread_barrier_wait(&run->start);
    switch (run->kind) {
    case BENCH_CH_RING:
        for (uint64_t v = base; v < end; v++)
            while (!bench_ring_try_put(&run->ring, v))
                bench_backoff(&spins);
        break;
    case BENCH_CH_LOCKED:
        for (uint64_t v = base; v < end; v++)
            bench_lq_put(&run->lq, v);
        break;
    default:
        for (uint64_t v = base; v < end; v++)
            if (band_chan_send(run->chan, &v, BENCH_CH_ELEM_SIZE, BAND_FOREVER, NULL) != 0)
                bad++;
        break;
    }
    if (bad != 0)
        atomic_fetch_add(&run->producer_errors, bad);
    return NULL;
}

/* Check one received value against the next one expected from its producer. The producer
 * is found by comparison, not division: a 64-bit divide per element would cost more than
 * the channel operation being measured, and the peer suite's loops do not pay it. */
static inline int bench_ch_check(uint64_t v, uint64_t *next, int producers, long per)
{
    uint64_t p = 0;
    while (p + 1 < (uint64_t)producers && v >= (p + 1) * (uint64_t)per)
        p++;
    if (v != next[p])
        return 0;
    next[p] = v + 1;
    return 1;
}

static inline void bench_ch_failed(struct bench_ch_result *res, const char *what, long n)
{
    if (res->what == NULL)
        res->what = what;
    res->errors += n > 0 ? n : 1;
}

/*
 * Run one variant: @producers (1 or 2) threads of @per_producer elements each into a
 * channel of @cap elements (a power of two), received on the calling thread.
 */
static inline struct bench_ch_result bench_ch_once(int kind, int producers, long per_producer,
                                                   uint64_t cap)
{
    static struct bench_ch_run run; /* large alignments; one run at a time */
    struct bench_ch_result res;
    struct bench_ch_arg args[BENCH_CH_MAX_PROD];
    pthread_t th[BENCH_CH_MAX_PROD];
    uint64_t next[BENCH_CH_MAX_PROD];
    uint64_t batch[BENCH_CH_BATCH];
    uint64_t total = (uint64_t)producers * (uint64_t)per_producer;
    uint64_t got = 0, sum = 0, t0, t1;
    long misorder = 0, bad = 0;
    unsigned spins = 0;
    int setup = 0;

    memset(&res, 0, sizeof res);
    if (producers < 1 || producers > BENCH_CH_MAX_PROD || per_producer < 1) {
        bench_ch_failed(&res, "bad parameters", 1);
        return res;
    }
    run.kind = kind;
    run.producers = producers;
    run.per_producer = per_producer;
    run.cap = cap;
    run.chan = NULL;
    atomic_store(&run.producer_errors, 0);
    switch (kind) {
    case BENCH_CH_RING:
        setup = bench_ring_init(&run.ring, cap);
        break;
    case BENCH_CH_LOCKED:
        setup = bench_lq_init(&run.lq, cap);
        break;
    default:
        setup = band_chan_create(&run.chan, sizeof(uint64_t), cap, NULL) != 0 ? -1 : 0;
        break;
    }
    if (setup != 0) {
        bench_ch_failed(&res, "create", 1);
        return res;
    }
    pthread_barrier_init(&run.start, NULL, (unsigned)producers + 1u);
    for (int p = 0; p < producers; p++) {
        next[p] = (uint64_t)p * (uint64_t)per_producer;
        args[p].run = &run;
        args[p].id = p;
        if (pthread_create(&th[p], NULL, bench_ch_producer, &args[p]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(1);
        }
    }
    pthread_barrier_wait(&run.start);
    t0 = bench_now();
    switch (kind) {
    case BENCH_CH_RING:
        for (; got < total; got++) {
            uint64_t v;
            while (!bench_ring_try_get(&run.ring, &v))
                bench_backoff(&spins);
            misorder += !bench_ch_check(v, next, producers, per_producer);
            sum += v;
        }
        break;
    case BENCH_CH_LOCKED:
        for (; got < total; got++) {
            uint64_t v = bench_lq_get(&run.lq);
            misorder += !bench_ch_check(v, next, producers, per_producer);
            sum += v;
        }
        break;
    case BENCH_CH_BAND:
        for (; got < total; got++) {
            uint64_t v = 0;
            if (band_chan_recv(run.chan, &v, NULL, BAND_FOREVER, NULL) != 0) {
                bad++;
                break;
            }
            misorder += !bench_ch_check(v, next, producers, per_producer);
            sum += v;
        }
        break;
    default:
        while (got < total) {
            size_t n = 0;
            if (band_chan_recv_many(run.chan, BENCH_CH_BATCH, batch, NULL, &n, BAND_FOREVER,
                                    NULL) != 0 ||
                n == 0 || n > BENCH_CH_BATCH) {
                bad++;
                break;
            }
            for (size_t i = 0; i < n; i++) {
                misorder += !bench_ch_check(batch[i], next, producers, per_producer);
                sum += batch[i];
            }
            got += n;
        }
        break;
    }
    t1 = bench_now();
    for (int p = 0; p < producers; p++)
        pthread_join(th[p], NULL);
    pthread_barrier_destroy(&run.start);

    res.run_ns = t1 - t0;
    res.ns_per_elem = (double)(t1 - t0) / (double)total;
    if (bad != 0)
        bench_ch_failed(&res, "recv/recv_many failed", bad);
    if (atomic_load(&run.producer_errors) != 0)
        bench_ch_failed(&res, "send failed", atomic_load(&run.producer_errors));
    if (got != total)
        bench_ch_failed(&res, "received count != sent count", 1);
    if (misorder != 0)
        bench_ch_failed(&res, "element lost, duplicated or out of producer order", misorder);
    if (sum != total * (total - 1) / 2)
        bench_ch_failed(&res, "sum of received values != sum of sent values", 1);

    switch (kind) {
    case BENCH_CH_RING: {
        uint64_t v;
        if (bench_ring_try_get(&run.ring, &v))
            bench_ch_failed(&res, "ring not empty after the run", 1);
        bench_ring_destroy(&run.ring);
        break;
    }
    case BENCH_CH_LOCKED:
        if (run.lq.len != 0)
            bench_ch_failed(&res, "locked queue not empty after the run", 1);
        bench_lq_destroy(&run.lq);
        break;
    default: {
        band_chan_stats st;
        memset(&st, 0, sizeof st);
        if (band_chan_get_stats(run.chan, &st) != 0)
            bench_ch_failed(&res, "band_chan_get_stats", 1);
        else if (st.sent != total || st.received != total || st.len != 0)
            bench_ch_failed(&res, "band_chan stats: sent/received/len do not match", 1);
        res.send_wait_ns = st.send_wait_ns;
        if (band_chan_destroy(run.chan) != 0)
            bench_ch_failed(&res, "band_chan_destroy", 1);
        run.chan = NULL;
        break;
    }
    }
    return res;
}

#endif /* BAND_BENCH_CHAN_H */

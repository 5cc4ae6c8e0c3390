/* SPDX-License-Identifier: MIT */
/*
 * demo.c - band bounding in-flight work, shown with real threads.
 *
 * Part 1, permits travel with the work. Forty producer threads share one eight-slot
 * band_sem. A producer takes a permit, "sends a request", moves the permit into a transfer
 * object and hands that object to one of four consumer threads, which reads the "body" and
 * only then releases the permit. The producer has long moved on, yet no more than eight
 * transfers are ever in flight. The contrast run releases the permit at hand-off, when the
 * producer's function returns: the bodies still streaming are then outside the limit.
 *
 * Part 2, charge for the size of the work. Jobs carry payloads from 1 KiB to 8 MiB, mostly
 * small. A count semaphore with eight slots, sized as if every job took 1 MiB, lets the
 * payload memory run far past 8 MiB when large jobs meet. A band_budget of 8 MiB, charged
 * per byte with band_budget_alloc()/band_budget_free(), keeps it at or under 8 MiB.
 *
 * Part 3, a bounded channel between two stages. A fast producer thread makes messages of
 * 256 bytes to 64 KiB (mostly small) and sends them into a band_chan bounded at 32 messages
 * and at 256 KiB of payload; a slow consumer thread takes them one at a time and spends
 * time on each. The producer is held back in band_chan_send() (the channel's send_wait_ns
 * counter says for how long), the channel never holds more than either bound (sampled with
 * band_chan_get_stats() after every send and before every receive), and every message
 * arrives exactly once, in order. The producer's departure (sender counting) closes the
 * channel, which is how the consumer learns that the stream has ended.
 *
 * Part 4 (tenants.c), tenants: four tenants with weights 4:2:1:1 (one of them flooding)
 * share eight slots through a band_fair, and an urgent class always finds room.
 *
 * Part 5 (demo_overload.c), overload: one server is offered from half to three times its
 * capacity, and five queue disciplines in front of it are compared: FIFO with a short and a
 * deep queue, deadline-aware, deadline-aware with adaptive LIFO, and adaptive LIFO on the
 * deep queue.
 *
 * Usage: band_demo [--quick] [--data DIR]
 * Prints a table for parts 1-3, then one each for parts 4 and 5, each with a line that
 * starts "verdict: " and says in plain words what the table shows. With --data DIR it also
 * writes what it measured into DIR as TSV files (every change of the in-flight figures of
 * parts 1 and 2, the tenants' shares, the overload sweep), which scripts/demo_plot.sh
 * draws. Exits 1 if a bound that band governs was exceeded, a band call failed
 * unexpectedly or a data file could not be written, 2 on a usage error.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <band/band.h>

#include "demo_parts.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SLOTS       8u  /* the in-flight limit of both parts */
#define PRODUCERS   40u /* threads that start transfers */
#define CONSUMERS   4u  /* threads that finish them */
#define JOB_THREADS 16u /* threads that run jobs in part 2 */
#define KIB         ((uint64_t)1024)
#define MIB         (1024 * KIB)
#define BUDGET      (SLOTS * MIB)        /* 8 slots x 1 MiB assumed per job = 8 MiB */
#define SEED        UINT64_C(0x62616e64) /* "band" */

#define CHAN_MESSAGES 32u         /* part 3: the channel's element bound */
#define CHAN_BYTES    (256 * KIB) /* part 3: the channel's byte bound */

struct config {
    unsigned transfers_per_producer;
    size_t jobs;
    uint64_t messages;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static void sleep_us(uint64_t us)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(us / 1000000u);
    ts.tv_nsec = (long)(us % 1000000u) * 1000L;
    while (nanosleep(&ts, &ts) != 0) {
        /* interrupted: sleep the rest */
    }
}

/* Raises *peak to v if v is larger. Relaxed: only the final maximum matters. */
static void atomic_max(_Atomic uint64_t *peak, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(peak, memory_order_relaxed);
    while (cur < v && !atomic_compare_exchange_weak_explicit(peak, &cur, v, memory_order_relaxed,
                                                             memory_order_relaxed)) {
        /* cur was reloaded; try again while v is still larger */
    }
}

/* xorshift64*: a fixed seed gives the same job mix on every run. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * UINT64_C(2685821657736338717);
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (double)MIB;
}

/* ---- timelines: every change of a measured figure, for the plots ------------------------ */

struct tl_point {
    band_time t;
    uint64_t v;
};

/* The value after every change, stamped right after the atomic operation that made it. */
struct timeline {
    band_time t0;     /* the run's start */
    _Atomic size_t n; /* points noted, possibly more than cap */
    size_t cap;
    struct tl_point *p;
};

static int timeline_init(struct timeline *tl, size_t cap)
{
    tl->t0 = band_now();
    atomic_init(&tl->n, 0);
    tl->cap = cap;
    tl->p = malloc(cap * sizeof(*tl->p));
    return tl->p == NULL ? -1 : 0;
}

static void timeline_note(struct timeline *tl, uint64_t v)
{
    size_t i = atomic_fetch_add_explicit(&tl->n, 1, memory_order_relaxed);
    if (i < tl->cap) {
        tl->p[i].t = band_now();
        tl->p[i].v = v;
    }
}

static int cmp_point(const void *a, const void *b)
{
    const struct tl_point *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

/* Writes DIR/NAME: a comment, a header, then "ms since the start<TAB>value" in time order,
 * the value divided by @unit. Returns 0, or 1 when the file could not be written. */
static int timeline_write(struct timeline *tl, const char *dir, const char *name,
                          const char *comment, const char *column, double unit)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    size_t n = atomic_load(&tl->n);
    if (n > tl->cap)
        n = tl->cap;
    qsort(tl->p, n, sizeof(*tl->p), cmp_point);
    fprintf(f, "# %s\nms\t%s\n0\t0\n", comment, column);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.3f\t%.6g\n", (double)(tl->p[i].t - tl->t0) / (double)BAND_MSEC,
                (double)tl->p[i].v / unit);
    return fclose(f) != 0;
}

/* ---- part 1: a transfer queue of our own (mutex + condvar), producers -> consumers ------ */

struct transfer {
    struct transfer *next;
    band_permit permit; /* the slot this transfer occupies; empty in the contrast run */
    pthread_t producer; /* the thread that acquired the permit */
    uint64_t body_us;   /* how long the consumer spends on the body */
};

struct transfer_queue {
    pthread_mutex_t mu; /* protects head, tail, closed */
    pthread_cond_t cv;  /* signalled when a transfer is queued or the queue closes */
    struct transfer *head;
    struct transfer *tail;
    int closed;
};

struct transfer_run {
    band_sem *slots;
    int move_permit; /* 1: the permit moves into the transfer; 0: released at hand-off */
    unsigned per_producer;
    struct transfer_queue q;
    _Atomic uint64_t in_flight;    /* transfers started and not yet finished */
    _Atomic uint64_t peak;         /* the most in_flight ever seen */
    _Atomic uint64_t finished;     /* transfers the consumers completed */
    _Atomic uint64_t cross_thread; /* permits released on a thread other than the acquirer */
    _Atomic uint64_t errors;       /* band calls that failed unexpectedly */
    struct timeline tl;            /* in_flight after every change */
};

static void queue_push(struct transfer_queue *q, struct transfer *t)
{
    t->next = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->tail != NULL)
        q->tail->next = t;
    else
        q->head = t;
    q->tail = t;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Returns the oldest transfer, or NULL once the queue is closed and empty. */
static struct transfer *queue_pop(struct transfer_queue *q)
{
    pthread_mutex_lock(&q->mu);
    while (q->head == NULL && !q->closed)
        pthread_cond_wait(&q->cv, &q->mu);
    struct transfer *t = q->head;
    if (t != NULL) {
        q->head = t->next;
        if (q->head == NULL)
            q->tail = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    return t;
}

static void queue_close(struct transfer_queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void *producer_main(void *arg)
{
    struct transfer_run *run = arg;
    uint64_t rnd = SEED ^ (uint64_t)(uintptr_t)&rnd;

    for (unsigned i = 0; i < run->per_producer; i++) {
        band_permit p = BAND_PERMIT_INIT;
        int rc = band_permit_acquire(&p, run->slots, 1, BAND_FOREVER, NULL);
        if (rc != 0) {
            fprintf(stderr, "band_permit_acquire: %s\n", band_strerror(rc));
            atomic_fetch_add(&run->errors, 1);
            return NULL;
        }
        uint64_t now = atomic_fetch_add(&run->in_flight, 1) + 1;
        atomic_max(&run->peak, now);
        timeline_note(&run->tl, now);

        sleep_us(50 + next_random(&rnd) % 100); /* send the request */

        struct transfer *t = malloc(sizeof(*t));
        if (t == NULL) {
            timeline_note(&run->tl, atomic_fetch_sub(&run->in_flight, 1) - 1);
            band_permit_release(&p); /* the request failed: the local permit goes back */
            atomic_fetch_add(&run->errors, 1);
            return NULL;
        }
        t->producer = pthread_self();
        t->body_us = 200 + next_random(&rnd) % 200;
        if (run->move_permit) {
            t->permit = p;                     /* the permit now belongs to the transfer ... */
            p = (band_permit)BAND_PERMIT_INIT; /* ... and no longer to this frame */
        } else {
            t->permit = (band_permit)BAND_PERMIT_INIT;
        }
        queue_push(&run->q, t);
        band_permit_release(&p); /* contrast run: the slot returns while the body streams */
        /* Releasing an empty permit is a no-op, so this line is harmless when it moved. */

        sleep_us(next_random(&rnd) % 200); /* the producer goes on with other work */
    }
    return NULL;
}

static void *consumer_main(void *arg)
{
    struct transfer_run *run = arg;
    struct transfer *t;

    while ((t = queue_pop(&run->q)) != NULL) {
        sleep_us(t->body_us); /* read the body */
        timeline_note(&run->tl, atomic_fetch_sub(&run->in_flight, 1) - 1);
        if (t->permit.sem != NULL) {
            if (!pthread_equal(t->producer, pthread_self()))
                atomic_fetch_add(&run->cross_thread, 1);
            int rc = band_permit_release(&t->permit);
            if (rc != 0) {
                fprintf(stderr, "band_permit_release: %s\n", band_strerror(rc));
                atomic_fetch_add(&run->errors, 1);
            }
        }
        atomic_fetch_add(&run->finished, 1);
        free(t);
    }
    return NULL;
}

/* Runs part 1 once. Returns 0, or -1 when threads or the semaphore could not be made. */
static int run_transfers(struct transfer_run *run, int move_permit, unsigned per_producer)
{
    pthread_t producers[PRODUCERS], consumers[CONSUMERS];
    int rc = band_sem_create(&run->slots, SLOTS, NULL);
    if (rc != 0) {
        fprintf(stderr, "band_sem_create: %s\n", band_strerror(rc));
        return -1;
    }
    run->move_permit = move_permit;
    run->per_producer = per_producer;
    pthread_mutex_init(&run->q.mu, NULL);
    pthread_cond_init(&run->q.cv, NULL);
    run->q.head = run->q.tail = NULL;
    run->q.closed = 0;
    atomic_init(&run->in_flight, 0);
    atomic_init(&run->peak, 0);
    atomic_init(&run->finished, 0);
    atomic_init(&run->cross_thread, 0);
    atomic_init(&run->errors, 0);
    if (timeline_init(&run->tl, 2 * (size_t)PRODUCERS * per_producer + 16) != 0) {
        band_sem_destroy(run->slots);
        return -1;
    }

    for (unsigned i = 0; i < CONSUMERS; i++)
        if (pthread_create(&consumers[i], NULL, consumer_main, run) != 0)
            abort();
    for (unsigned i = 0; i < PRODUCERS; i++)
        if (pthread_create(&producers[i], NULL, producer_main, run) != 0)
            abort();
    for (unsigned i = 0; i < PRODUCERS; i++)
        pthread_join(producers[i], NULL);
    queue_close(&run->q);
    for (unsigned i = 0; i < CONSUMERS; i++)
        pthread_join(consumers[i], NULL);

    /* Every permit must be back: the semaphore ends where it started. */
    if (band_sem_available(run->slots) != SLOTS) {
        fprintf(stderr, "slots available after the run: %" PRIu64 ", want %u\n",
                band_sem_available(run->slots), SLOTS);
        atomic_fetch_add(&run->errors, 1);
    }
    rc = band_sem_destroy(run->slots);
    if (rc != 0) {
        fprintf(stderr, "band_sem_destroy: %s\n", band_strerror(rc));
        atomic_fetch_add(&run->errors, 1);
    }
    pthread_cond_destroy(&run->q.cv);
    pthread_mutex_destroy(&run->q.mu);
    return 0;
}

/* ---- part 2: payload memory under a count limit and under a byte budget ----------------- */

struct job_run {
    const uint64_t *sizes;
    size_t njobs;
    band_sem *slots;       /* count mode: one permit per job */
    band_budget *budget;   /* byte mode: one unit per payload byte */
    _Atomic size_t next;   /* the next job to take */
    _Atomic uint64_t live; /* payload bytes allocated right now */
    _Atomic uint64_t peak; /* the most live ever seen */
    _Atomic uint64_t errors;
    struct timeline tl; /* live after every change */
};

/* Touches and holds one payload; the hold grows with its size. */
static void work_on(struct job_run *run, void *buf, uint64_t size)
{
    uint64_t now = atomic_fetch_add(&run->live, size) + size;
    atomic_max(&run->peak, now);
    timeline_note(&run->tl, now);
    for (uint64_t off = 0; off < size; off += 4096) /* make every page resident */
        ((unsigned char *)buf)[off] = 0x5a;
    sleep_us(20 + size / KIB); /* about 1 ms per MiB */
    timeline_note(&run->tl, atomic_fetch_sub(&run->live, size) - size);
}

static void *job_main(void *arg)
{
    struct job_run *run = arg;
    size_t i;

    while ((i = atomic_fetch_add(&run->next, 1)) < run->njobs) {
        uint64_t size = run->sizes[i];
        void *buf = NULL;
        int rc;
        if (run->budget == NULL) {
            /* One slot per job, whatever its size: the allocation is outside any bound. */
            rc = band_sem_acquire(run->slots, 1, BAND_FOREVER, NULL);
            if (rc == 0) {
                buf = malloc((size_t)size);
                if (buf != NULL)
                    work_on(run, buf, size);
                else
                    rc = BAND_ENOMEM;
                free(buf);
                int rrc = band_sem_release(run->slots, 1);
                if (rc == 0)
                    rc = rrc;
            }
        } else {
            /* Reserve the bytes first, in one acquisition, then allocate. */
            rc = band_budget_alloc(run->budget, (size_t)size, &buf, BAND_FOREVER, NULL);
            if (rc == 0) {
                work_on(run, buf, size);
                band_budget_free(buf); /* frees the payload and returns its bytes */
            }
        }
        if (rc != 0) {
            fprintf(stderr, "job %zu (%" PRIu64 " bytes): %s\n", i, size, band_strerror(rc));
            atomic_fetch_add(&run->errors, 1);
        }
    }
    return NULL;
}

/* Runs part 2 once. Returns 0, or -1 when the timeline could not be allocated. */
static int run_jobs(struct job_run *run)
{
    pthread_t threads[JOB_THREADS];
    atomic_init(&run->next, 0);
    atomic_init(&run->live, 0);
    atomic_init(&run->peak, 0);
    atomic_init(&run->errors, 0);
    if (timeline_init(&run->tl, 2 * run->njobs + 16) != 0)
        return -1;
    for (unsigned i = 0; i < JOB_THREADS; i++)
        if (pthread_create(&threads[i], NULL, job_main, run) != 0)
            abort();
    for (unsigned i = 0; i < JOB_THREADS; i++)
        pthread_join(threads[i], NULL);
    return 0;
}

/* Most jobs are small, some medium, a few large: 80% 1-64 KiB, 15% 64 KiB-1 MiB, 5% 1-8 MiB,
 * in whole KiB. */
static void make_jobs(uint64_t *sizes, size_t n)
{
    uint64_t rnd = SEED;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next_random(&rnd) % 100;
        uint64_t lo = r < 80 ? 1 : r < 95 ? 64 : 1024;
        uint64_t hi = r < 80 ? 64 : r < 95 ? 1024 : 8192;
        sizes[i] = (lo + next_random(&rnd) % (hi - lo + 1)) * KIB;
    }
    sizes[n / 2] = 8 * MIB; /* the range ends at 8 MiB in every run */
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ---- part 3: a bounded channel between a fast stage and a slow stage -------------------- */

struct message {
    uint64_t seq;           /* 0, 1, 2, ... in the order the producer made them */
    uint64_t size;          /* payload bytes, declared to the channel's byte bound */
    unsigned char *payload; /* malloc'd by the producer, freed by the consumer */
};

struct pipeline {
    band_chan *chan;
    uint64_t messages;
    _Atomic uint64_t peak_len;   /* the most messages the channel held, sampled */
    _Atomic uint64_t peak_bytes; /* the most declared bytes it held, sampled */
    _Atomic uint64_t errors;
    uint64_t producer_ns; /* the producer's elapsed time, first send to last */
    uint64_t sent_bytes;
    /* consumer's side */
    uint64_t received, out_of_order, corrupt, seq_sum;
};

/* Raise the peaks from a consistent snapshot of the channel (taken under its lock). */
static void sample_channel(struct pipeline *pl)
{
    band_chan_stats st;
    if (band_chan_get_stats(pl->chan, &st) != 0) {
        atomic_fetch_add(&pl->errors, 1);
        return;
    }
    atomic_max(&pl->peak_len, st.len);
    atomic_max(&pl->peak_bytes, st.bytes);
}

/* Mostly small messages, some large: 80% 256 B-4 KiB, 20% 16-64 KiB. */
static uint64_t message_size(uint64_t *rnd)
{
    uint64_t r = next_random(rnd) % 100;
    if (r < 80)
        return 256 + next_random(rnd) % (4 * KIB - 256 + 1);
    return 16 * KIB + next_random(rnd) % (48 * KIB + 1);
}

static void *chan_producer_main(void *arg)
{
    struct pipeline *pl = arg;
    uint64_t rnd = SEED;
    band_time t0 = band_now();

    for (uint64_t i = 0; i < pl->messages; i++) {
        struct message m;
        m.seq = i;
        m.size = message_size(&rnd);
        m.payload = malloc((size_t)m.size);
        if (m.payload == NULL) {
            atomic_fetch_add(&pl->errors, 1);
            break;
        }
        memset(m.payload, (int)(i & 0xff), (size_t)m.size);
        /* Waits while the channel holds 32 messages or too many bytes for this one. */
        int rc = band_chan_send(pl->chan, &m, m.size, BAND_FOREVER, NULL);
        if (rc != 0) {
            fprintf(stderr, "band_chan_send: %s\n", band_strerror(rc));
            free(m.payload); /* a refused message stays with its sender */
            atomic_fetch_add(&pl->errors, 1);
            break;
        }
        pl->sent_bytes += m.size;
        sample_channel(pl); /* right after a send is when the channel is fullest */
    }
    pl->producer_ns = (uint64_t)(band_now() - t0);
    /* The only sender leaves: the channel closes once the consumer has drained it. */
    int rc = band_chan_sender_leave(pl->chan);
    if (rc != 0) {
        fprintf(stderr, "band_chan_sender_leave: %s\n", band_strerror(rc));
        atomic_fetch_add(&pl->errors, 1);
    }
    return NULL;
}

static void *chan_consumer_main(void *arg)
{
    struct pipeline *pl = arg;
    uint64_t expect = 0;

    for (;;) {
        struct message m;
        uint64_t bytes = 0;
        sample_channel(pl);
        int rc = band_chan_recv(pl->chan, &m, &bytes, BAND_FOREVER, NULL);
        if (rc == BAND_ECLOSED)
            break; /* closed by the producer and empty: the stream is over */
        if (rc != 0) {
            fprintf(stderr, "band_chan_recv: %s\n", band_strerror(rc));
            atomic_fetch_add(&pl->errors, 1);
            break;
        }
        if (m.seq != expect)
            pl->out_of_order++;
        expect = m.seq + 1;
        if (bytes != m.size || m.payload[0] != (unsigned char)(m.seq & 0xff) ||
            m.payload[m.size - 1] != (unsigned char)(m.seq & 0xff))
            pl->corrupt++;
        pl->seq_sum += m.seq;
        pl->received++;
        sleep_us(30 + m.size / KIB); /* the slow stage: about 1 us per KiB, plus 30 us */
        free(m.payload);
    }
    return NULL;
}

/* Runs part 3. Returns 0, or -1 when the channel or the threads could not be made. */
static int run_pipeline(struct pipeline *pl, uint64_t messages)
{
    pthread_t prod, cons;
    band_chan_opts o;
    memset(&o, 0, sizeof(o));
    o.byte_capacity = CHAN_BYTES;
    o.senders = 1; /* the producer; its band_chan_sender_leave() closes the channel */
    int rc = band_chan_create(&pl->chan, sizeof(struct message), CHAN_MESSAGES, &o);
    if (rc != 0) {
        fprintf(stderr, "band_chan_create: %s\n", band_strerror(rc));
        return -1;
    }
    band_chan_set_name(pl->chan, "stage-1-to-2");
    pl->messages = messages;
    atomic_init(&pl->peak_len, 0);
    atomic_init(&pl->peak_bytes, 0);
    atomic_init(&pl->errors, 0);
    if (pthread_create(&cons, NULL, chan_consumer_main, pl) != 0 ||
        pthread_create(&prod, NULL, chan_producer_main, pl) != 0)
        abort();
    pthread_join(prod, NULL);
    pthread_join(cons, NULL);
    return 0;
}

/* ---- the table -------------------------------------------------------------------------- */

/* Prints one row; returns 1 when peak exceeds limit. */
static int row(const char *scenario, const char *limit, const char *peak, double lim, double pk)
{
    char verdict[32];
    int over = pk > lim;
    if (over)
        snprintf(verdict, sizeof(verdict), "OVERSHOOT %.1f", pk / lim);
    else
        snprintf(verdict, sizeof(verdict), "OK");
    printf("%-44s %-12s %-12s %s\n", scenario, limit, peak, verdict);
    return over;
}

/* Writes the timelines of parts 1 and 2 into @dir. Returns 0, or 1 on a write error. */
static int write_timelines(const char *dir, struct transfer_run *moved, struct transfer_run *early,
                           struct job_run *counted, struct job_run *budgeted)
{
    int bad = 0;
    bad |= timeline_write(&moved->tl, dir, "transfers-band.tsv",
                          "band_demo part 1: transfers in flight, the permit moves with the "
                          "transfer (limit 8)",
                          "in_flight", 1.0);
    bad |= timeline_write(&early->tl, dir, "transfers-handoff.tsv",
                          "band_demo part 1: transfers in flight, the permit released at "
                          "hand-off (limit 8, not enforced)",
                          "in_flight", 1.0);
    bad |= timeline_write(&budgeted->tl, dir, "jobs-budget.tsv",
                          "band_demo part 2: payload bytes allocated (MiB) under a band_budget "
                          "of 8 MiB",
                          "MiB", (double)MIB);
    bad |= timeline_write(&counted->tl, dir, "jobs-count.tsv",
                          "band_demo part 2: payload bytes allocated (MiB) under a count "
                          "semaphore of 8 slots x 1 MiB",
                          "MiB", (double)MIB);
    return bad;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: band_demo [--quick] [--data DIR]\n"
               "  --quick     fewer transfers, jobs and messages, shorter runs (a smoke test "
               "of a few seconds)\n"
               "  --data DIR  also write what was measured into DIR (created if missing) as "
               "TSV files:\n"
               "              transfers-band.tsv, transfers-handoff.tsv, jobs-budget.tsv, "
               "jobs-count.tsv,\n"
               "              tenants.tsv, overload.tsv (scripts/demo_plot.sh draws them)\n");
}

int main(int argc, char **argv)
{
    struct config cfg = {25, 600, 4000};
    int failed = 0, quick = 0;
    const char *data_dir = NULL;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            cfg.transfers_per_producer = 8;
            cfg.jobs = 240;
            cfg.messages = 400;
            quick = 1;
        } else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
            data_dir = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (data_dir != NULL && mkdir(data_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "band_demo: cannot create %s: %s\n", data_dir, strerror(errno));
        return 1;
    }
    band_time t0 = band_now();

    /* Part 1. */
    static struct transfer_run moved, early;
    if (run_transfers(&moved, 1, cfg.transfers_per_producer) != 0 ||
        run_transfers(&early, 0, cfg.transfers_per_producer) != 0)
        return 1;
    uint64_t total = (uint64_t)PRODUCERS * cfg.transfers_per_producer;

    /* Part 2. */
    uint64_t *sizes = malloc(cfg.jobs * sizeof(*sizes));
    uint64_t *sorted = malloc(cfg.jobs * sizeof(*sorted));
    if (sizes == NULL || sorted == NULL)
        return 1;
    make_jobs(sizes, cfg.jobs);
    memcpy(sorted, sizes, cfg.jobs * sizeof(*sorted));
    qsort(sorted, cfg.jobs, sizeof(*sorted), cmp_u64);

    static struct job_run counted, budgeted;
    counted.sizes = budgeted.sizes = sizes;
    counted.njobs = budgeted.njobs = cfg.jobs;
    int rc = band_sem_create(&counted.slots, SLOTS, NULL);
    if (rc == 0)
        rc = band_budget_create(&budgeted.budget, BUDGET, NULL);
    if (rc != 0) {
        fprintf(stderr, "create: %s\n", band_strerror(rc));
        return 1;
    }
    band_sem_set_name(counted.slots, "job-slots");
    band_budget_set_name(budgeted.budget, "payload-bytes");
    if (run_jobs(&counted) != 0 || run_jobs(&budgeted) != 0)
        return 1;

    /* A request that could never fit is refused at once instead of waiting forever. */
    void *huge = NULL;
    band_time t_big = band_now();
    int rc_big =
        band_budget_alloc(budgeted.budget, (size_t)(BUDGET + 1), &huge, BAND_FOREVER, NULL);
    double big_ms = (double)(band_now() - t_big) / (double)BAND_MSEC;
    if (rc_big != BAND_E2BIG || huge != NULL || big_ms > 1000.0) {
        fprintf(stderr, "oversized request: %s after %.1f ms, want BAND_E2BIG at once\n",
                band_err_name(rc_big), big_ms);
        failed = 1;
    }

    band_budget_stats st;
    memset(&st, 0, sizeof(st));
    if (band_budget_get_stats(budgeted.budget, &st) != 0 || st.in_use != 0 ||
        band_budget_available(budgeted.budget) != BUDGET) {
        fprintf(stderr, "the budget did not get every byte back\n");
        failed = 1;
    }
    if (band_sem_available(counted.slots) != SLOTS) {
        fprintf(stderr, "the job slots did not all come back\n");
        failed = 1;
    }
    band_sem_destroy(counted.slots);
    band_budget_destroy(budgeted.budget);

    /* Part 3. */
    static struct pipeline pl;
    if (run_pipeline(&pl, cfg.messages) != 0)
        return 1;
    band_chan_stats cst;
    memset(&cst, 0, sizeof(cst));
    if (band_chan_get_stats(pl.chan, &cst) != 0 || !cst.closed || cst.sent != cfg.messages ||
        cst.received != cfg.messages || cst.len != 0 || cst.bytes != 0) {
        fprintf(stderr,
                "channel: sent %" PRIu64 ", received %" PRIu64 ", %" PRIu64
                " left, closed %d; want %" PRIu64 ", %" PRIu64 ", 0, 1\n",
                cst.sent, cst.received, cst.len, cst.closed, cfg.messages, cfg.messages);
        failed = 1;
    }
    if (pl.received != cfg.messages || pl.out_of_order != 0 || pl.corrupt != 0 ||
        pl.seq_sum != cfg.messages * (cfg.messages - 1) / 2) {
        fprintf(stderr,
                "channel: %" PRIu64 " of %" PRIu64 " messages received, %" PRIu64
                " out of order, %" PRIu64 " corrupt\n",
                pl.received, cfg.messages, pl.out_of_order, pl.corrupt);
        failed = 1;
    }
    if (band_chan_destroy(pl.chan) != 0) {
        fprintf(stderr, "band_chan_destroy refused: the channel is not idle\n");
        failed = 1;
    }

    /* The table. */
    char lim[32], pk[32];
    printf("band %s: in-flight work under a count limit, a byte budget and a bounded channel\n\n",
           band_version());
    printf("%-44s %-12s %-12s %s\n", "scenario", "limit", "peak", "verdict");
    snprintf(lim, sizeof(lim), "%u", SLOTS);
    snprintf(pk, sizeof(pk), "%" PRIu64, atomic_load(&moved.peak));
    failed |= row("transfers, permit moves with the transfer", lim, pk, SLOTS,
                  (double)atomic_load(&moved.peak));
    snprintf(pk, sizeof(pk), "%" PRIu64, atomic_load(&early.peak));
    row("transfers, permit released at hand-off", lim, pk, SLOTS, (double)atomic_load(&early.peak));
    snprintf(lim, sizeof(lim), "%.1f MiB", mib(BUDGET));
    snprintf(pk, sizeof(pk), "%.1f MiB", mib(atomic_load(&counted.peak)));
    row("jobs, count semaphore, 8 slots x 1 MiB", lim, pk, mib(BUDGET),
        mib(atomic_load(&counted.peak)));
    snprintf(pk, sizeof(pk), "%.1f MiB", mib(atomic_load(&budgeted.peak)));
    failed |=
        row("jobs, band_budget of 8 MiB", lim, pk, mib(BUDGET), mib(atomic_load(&budgeted.peak)));
    snprintf(lim, sizeof(lim), "%u", CHAN_MESSAGES);
    snprintf(pk, sizeof(pk), "%" PRIu64, atomic_load(&pl.peak_len));
    failed |= row("stages, band_chan messages queued", lim, pk, CHAN_MESSAGES,
                  (double)atomic_load(&pl.peak_len));
    snprintf(lim, sizeof(lim), "%.0f KiB", (double)CHAN_BYTES / (double)KIB);
    snprintf(pk, sizeof(pk), "%.1f KiB", (double)atomic_load(&pl.peak_bytes) / (double)KIB);
    failed |= row("stages, band_chan payload bytes queued", lim, pk, (double)CHAN_BYTES,
                  (double)atomic_load(&pl.peak_bytes));

    /* One line in plain words: did every bound band governs hold, and what happened without. */
    int held = atomic_load(&moved.peak) <= SLOTS && atomic_load(&budgeted.peak) <= BUDGET &&
               atomic_load(&pl.peak_len) <= CHAN_MESSAGES &&
               atomic_load(&pl.peak_bytes) <= CHAN_BYTES;
    printf("verdict: with band %s (%" PRIu64 " in flight, %.1f MiB at most); without: %" PRIu64
           " in flight, %.1f MiB\n",
           held ? "every bound held" : "a bound was EXCEEDED", atomic_load(&moved.peak),
           mib(atomic_load(&budgeted.peak)), atomic_load(&early.peak),
           mib(atomic_load(&counted.peak)));
    if (data_dir != NULL)
        failed |= write_timelines(data_dir, &moved, &early, &counted, &budgeted);
    free(moved.tl.p);
    free(early.tl.p);
    free(counted.tl.p);
    free(budgeted.tl.p);

    uint64_t cross = atomic_load(&moved.cross_thread);
    printf("\ntransfers: %" PRIu64 " (%u producers -> %u consumers); "
           "%" PRIu64 " permits released on another thread\n",
           total, PRODUCERS, CONSUMERS, cross);
    printf("jobs: %zu on %u threads, %.0f KiB..%.1f MiB, median %.0f KiB; "
           "%" PRIu64 " queued for budget bytes\n",
           cfg.jobs, JOB_THREADS, (double)sorted[0] / (double)KIB, mib(sorted[cfg.jobs - 1]),
           (double)sorted[cfg.jobs / 2] / (double)KIB, st.queued);
    printf("oversized request (8 MiB + 1 byte): %s after %.3f ms\n", band_err_name(rc_big), big_ms);
    printf("stages: %" PRIu64 " messages (%.1f MiB), 1 fast producer -> 1 slow consumer, each "
           "received once, in order;\n"
           "  producer blocked in band_chan_send %.2f s of its %.2f s (%.0f%%), longest wait "
           "%.2f ms\n",
           pl.received, mib(pl.sent_bytes), (double)cst.send_wait_ns / 1e9,
           (double)pl.producer_ns / 1e9,
           pl.producer_ns > 0 ? 100.0 * (double)cst.send_wait_ns / (double)pl.producer_ns : 0.0,
           (double)cst.send_wait_ns_max / 1e6);
    fflush(stdout);

    /* Parts 4 and 5 print their own tables. */
    printf("\n");
    fflush(stdout);
    failed |= band_tenants_demo(quick, data_dir);
    fflush(stdout);
    failed |= demo_overload(quick, data_dir);

    printf("\nelapsed %.2f s\n", (double)(band_now() - t0) / (double)BAND_SEC);

    if (cross != total || atomic_load(&moved.finished) != total ||
        atomic_load(&early.finished) != total) {
        fprintf(stderr, "transfers lost or permits released on the wrong thread\n");
        failed = 1;
    }
    if (atomic_load(&moved.errors) + atomic_load(&early.errors) + atomic_load(&counted.errors) +
            atomic_load(&budgeted.errors) + atomic_load(&pl.errors) !=
        0)
        failed = 1;
    free(sizes);
    free(sorted);
    fflush(stdout); /* the table first, then any failure message */
    if (failed)
        fprintf(stderr, "band_demo: FAILED: a band-governed bound was exceeded or a call failed\n");
    return failed ? 1 : 0;
}

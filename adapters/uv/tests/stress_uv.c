/* SPDX-License-Identifier: MIT */
/*
 * stress_uv.c - libband-uv under load: worker threads release permits and send elements
 * while one uv loop acquires, receives and sends with random deadlines and random
 * cancels, and (for the semaphore) closes the adapter while operations are in flight. A
 * third scenario binds acquisitions and band_uv_at() operations under cancellation
 * tokens that another thread requests at random, replacing each token once nothing uses
 * it.
 *
 * Each scenario is bounded by an iteration count AND about 1.5 s of wall time. Callbacks
 * run on the test's main thread (the loop) and only count; workers never assert. After
 * the loop and the workers have stopped the main thread checks:
 *   - exactly once: every accepted submission got one callback, none got two;
 *   - never early: no BAND_ETIMEDOUT before its deadline;
 *   - conservation: at quiescence every permit is back in the semaphore, and every element
 *     a send callback reported as sent was received exactly once (and no other);
 *   - order: each producer's elements reach the loop in the order it sent them, and each
 *     consumer thread sees the loop's elements in the order the loop sent them;
 *   - the semaphore's own counters agree with the callbacks (timeouts, cancels);
 *   - no due time is reported before it came, and every token's hooks are gone at the end.
 */
#include "test.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "band/uv.h"

#define WALL_NS   (1500 * BAND_MSEC)
#define GUARD_MS  60000
#define MAX_ITERS 400000

static void nap_us(long us)
{
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

static void guard_cb(uv_timer_t *t)
{
    *(int *)t->data = 1;
    uv_stop(t->loop);
}

/* A random deadline: forever, already past, or up to @max_us from now. */
static band_time random_deadline(uint64_t *rng, uint64_t max_us)
{
    switch (test_rng_range(rng, 0, 3)) {
    case 0:
        return BAND_FOREVER;
    case 1:
        return band_now() - 1;
    default:
        return band_now() + (band_time)test_rng_range(rng, 0, max_us) * BAND_USEC;
    }
}

struct tally {
    uint64_t submits, callbacks, ok, timedout, cancelled, closed;
    uint64_t cancel_ok, cancel_already;
    uint64_t early;  /* ETIMEDOUT before the deadline */
    uint64_t errors; /* anything impossible: a second callback, an unexpected code */
};

/* ==================================================================================== */
/* Semaphore: acquires on the loop, releases from worker threads, close while in flight */

#define SEM_SLOTS   256
#define SEM_PERMITS 64
#define SEM_MAXN    8
#define SEM_WORKERS 4

struct sem_sc;

struct sem_slot {
    band_uv_op op;
    band_waiter w;
    uint64_t n;
    struct sem_sc *sc;
    int inflight;
    band_time deadline;
};

struct sem_sc {
    uv_loop_t loop;
    uv_timer_t guard;
    int hung;
    band_uv *u;
    band_sem *sem;
    struct sem_slot slot[SEM_SLOTS];
    atomic_uint_fast64_t held; /* permits granted to the loop, handed to the workers */
    atomic_int stop;
    uint64_t rng;
    band_time end;
    uint64_t iters;
    int closing, closed_calls, inflight;
    struct tally t;
};

static void sem_cb(band_uv_op *op, int status);

static void sem_submit(struct sem_sc *sc, struct sem_slot *s)
{
    s->n = test_rng_range(&sc->rng, 1, SEM_MAXN);
    s->deadline = random_deadline(&sc->rng, 2000);
    int rc = band_uv_bind(sc->u, &s->op, &s->w, sem_cb, s->deadline, NULL);
    if (rc == 0)
        rc = band_uv_start(&s->op, band_sem_acquire_async(sc->sem, s->n, &s->w));
    if (rc == 0) {
        s->inflight = 1;
        sc->inflight++;
        sc->t.submits++;
    } else if (!(rc == BAND_ECLOSED && sc->closing)) {
        sc->t.errors++;
    }
}

static void sem_on_closed(void *data)
{
    struct sem_sc *sc = data;
    sc->closed_calls++;
    if (sc->inflight != 0)
        sc->t.errors++; /* on_closed before a callback */
    if (band_uv_destroy(sc->u) != 0)
        sc->t.errors++;
    sc->u = NULL;
}

static void sem_cb(band_uv_op *op, int status)
{
    struct sem_slot *s = op->data;
    struct sem_sc *sc = s->sc;
    if (!s->inflight)
        sc->t.errors++;
    s->inflight = 0;
    sc->inflight--;
    sc->t.callbacks++;
    band_permit p = BAND_PERMIT_INIT;
    switch (status) {
    case 0:
        sc->t.ok++;
        if (band_permit_adopt(&p, sc->sem, s->n) != 0) {
            sc->t.errors++;
            break;
        }
        if (test_rng_range(&sc->rng, 0, 3) == 0) {
            if (band_permit_release(&p) != 0) /* some straight back from the loop */
                sc->t.errors++;
        } else {
            atomic_fetch_add(&sc->held, p.count); /* the rest through the workers */
        }
        break;
    case BAND_ETIMEDOUT:
        sc->t.timedout++;
        if (band_now() < s->deadline)
            sc->t.early++;
        break;
    case BAND_ECANCELED:
        sc->t.cancelled++;
        break;
    default:
        sc->t.errors++;
    }
    /* Cancel some other operation now and then. */
    if (test_rng_range(&sc->rng, 0, 3) == 0) {
        struct sem_slot *o = &sc->slot[test_rng_range(&sc->rng, 0, SEM_SLOTS - 1)];
        int rc = band_uv_cancel(&o->op);
        if (rc == 0)
            sc->t.cancel_ok++;
        else if (rc == BAND_EALREADY)
            sc->t.cancel_already++;
        else if (rc != BAND_EINVAL || o->inflight)
            sc->t.errors++;
    }
    if (sc->closing)
        return;
    if (++sc->iters >= MAX_ITERS || band_now() >= sc->end) {
        /* Close with most operations still queued and workers still releasing. */
        sc->closing = 1;
        if (band_uv_close(sc->u, sem_on_closed, sc) != 0)
            sc->t.errors++;
        return;
    }
    sem_submit(sc, s);
}

/* A worker that gives back, in random pieces, the permits the loop handed it in *held. */
struct sem_worker {
    band_sem *sem;
    atomic_uint_fast64_t *held;
    atomic_int *stop;
    uint64_t rng;
    uint64_t released;
    int errors;
};

static int sem_worker_main(void *arg)
{
    struct sem_worker *w = arg;
    while (!atomic_load(w->stop)) {
        uint64_t h = atomic_load(w->held);
        if (h == 0) {
            /* Nothing to give back: poke the fast path, then rest a moment. */
            if (band_sem_try_acquire(w->sem, 1) == 0 && band_sem_release(w->sem, 1) != 0)
                w->errors++;
            nap_us(20);
            continue;
        }
        uint64_t k = test_rng_range(&w->rng, 1, h);
        if (!atomic_compare_exchange_weak(w->held, &h, h - k))
            continue;
        while (k > 0) {
            uint64_t part = test_rng_range(&w->rng, 1, k);
            if (band_sem_release(w->sem, part) != 0)
                w->errors++;
            w->released += part;
            k -= part;
            if (test_rng_range(&w->rng, 0, 7) == 0)
                sched_yield();
        }
    }
    return 0;
}

static void test_stress_sem(void **state)
{
    (void)state;
    struct sem_sc *sc = calloc(1, sizeof(*sc));
    assert_non_null(sc);
    sc->rng = 0x5eed0001;
    atomic_init(&sc->held, 0);
    atomic_init(&sc->stop, 0);
    assert_int_equal(uv_loop_init(&sc->loop), 0);
    uv_timer_init(&sc->loop, &sc->guard);
    sc->guard.data = &sc->hung;
    uv_timer_start(&sc->guard, guard_cb, GUARD_MS, 0);
    uv_unref((uv_handle_t *)&sc->guard);
    assert_int_equal(band_uv_create(&sc->u, &sc->loop), 0);
    assert_int_equal(band_sem_create(&sc->sem, SEM_PERMITS, NULL), 0);

    struct sem_worker w[SEM_WORKERS];
    struct test_thread th[SEM_WORKERS];
    for (int i = 0; i < SEM_WORKERS; i++) {
        w[i] = (struct sem_worker){sc->sem, &sc->held, &sc->stop, 0xabc0 + (uint64_t)i, 0, 0};
        assert_int_equal(test_thread_start(&th[i], sem_worker_main, &w[i]), 0);
    }
    sc->end = band_now() + WALL_NS;
    for (int i = 0; i < SEM_SLOTS; i++) {
        sc->slot[i].op.data = &sc->slot[i];
        sc->slot[i].sc = sc;
        sem_submit(sc, &sc->slot[i]);
    }
    uv_run(&sc->loop, UV_RUN_DEFAULT); /* until the adapter closed */
    assert_false(sc->hung);
    atomic_store(&sc->stop, 1);
    uint64_t released = 0;
    for (int i = 0; i < SEM_WORKERS; i++) {
        assert_int_equal(test_thread_join(&th[i]), 0);
        assert_int_equal(w[i].errors, 0);
        released += w[i].released;
    }
    uint64_t left = atomic_load(&sc->held);
    assert_int_equal(band_sem_release(sc->sem, left), 0);

    struct tally *t = &sc->t;
    print_message("sem: %llu submits, %llu ok, %llu timed out, %llu cancelled "
                  "(cancel: %llu removed, %llu already), %llu released by workers\n",
                  (unsigned long long)t->submits, (unsigned long long)t->ok,
                  (unsigned long long)t->timedout, (unsigned long long)t->cancelled,
                  (unsigned long long)t->cancel_ok, (unsigned long long)t->cancel_already,
                  (unsigned long long)released);
    assert_u64_equal(t->errors, 0);
    assert_u64_equal(t->early, 0);
    assert_int_equal(sc->closed_calls, 1);
    assert_int_equal(sc->inflight, 0);
    assert_u64_equal(t->callbacks, t->submits);
    for (int i = 0; i < SEM_SLOTS; i++)
        assert_int_equal(sc->slot[i].inflight, 0);
    assert_true(t->ok > 0 && t->timedout > 0 && t->cancelled > 0);

    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(sc->sem, &st), 0);
    assert_u64_equal(st.available, SEM_PERMITS); /* conservation */
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.debt, 0);
    assert_u64_equal(st.timeouts, t->timedout);
    assert_u64_equal(st.cancels, t->cancelled);

    assert_int_equal(uv_loop_close(&sc->loop), UV_EBUSY); /* the guard timer */
    uv_close((uv_handle_t *)&sc->guard, NULL);
    uv_run(&sc->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&sc->loop), 0);
    assert_int_equal(band_sem_destroy(sc->sem), 0);
    free(sc);
}

/* ==================================================================================== */
/* Channels: producers send to the loop, the loop sends to consumers                   */

#define PRODUCERS 4
#define CONSUMERS 2
#define RECV_OPS  16
#define SEND_OPS  8
#define IN_CAP    8
#define OUT_CAP   4
#define MAX_SEQ   200000
#define MAX_VALS  200000

struct chan_sc;

struct chan_slot {
    band_uv_op op;
    struct band_chan_send_op sop;
    struct band_chan_recv_op rop;
    struct chan_sc *sc;
    int inflight, send;
    band_time deadline;
    uint64_t elem; /* recv: destination; send: the element, valid until the callback */
};

struct chan_sc {
    uv_loop_t loop;
    uv_timer_t guard;
    int hung;
    band_uv *u;
    band_chan *in, *out;
    struct chan_slot recv[RECV_OPS], send[SEND_OPS];
    uint64_t rng;
    band_time end;
    uint64_t next_seq[PRODUCERS]; /* loop: the next sequence number expected */
    uint64_t received_in;
    uint64_t next_val;       /* loop: the next value to send */
    int sends_left;          /* send slots still in use */
    unsigned char *accepted; /* [MAX_VALS], loop side */
    atomic_uchar *got;       /* [MAX_VALS], consumer side */
    uint64_t order_errors;
    struct tally t;
};

struct producer {
    struct chan_sc *sc;
    uint32_t id;
    uint64_t rng;
    uint64_t produced;
    uint64_t timeouts;
    int errors;
};

struct consumer {
    struct chan_sc *sc;
    uint64_t received;
    int errors;
};

static uint64_t item(uint64_t producer, uint64_t seq)
{
    return producer << 32 | seq;
}

static int producer_main(void *arg)
{
    struct producer *p = arg;
    struct chan_sc *sc = p->sc;
    uint64_t seq = 0;
    while (seq < MAX_SEQ && band_now() < sc->end) {
        uint64_t v = item(p->id, seq);
        band_time dl =
            test_rng_range(&p->rng, 0, 1) ? BAND_FOREVER : band_deadline_after(200 * BAND_USEC);
        int rc = band_chan_send(sc->in, &v, seq % 8 + 1, dl, NULL);
        if (rc == 0)
            seq++;
        else if (rc == BAND_ETIMEDOUT)
            p->timeouts++; /* the same element again */
        else
            p->errors++;
    }
    p->produced = seq;
    if (band_chan_sender_leave(sc->in) != 0) /* the last one closes the channel */
        p->errors++;
    return 0;
}

static int consumer_main(void *arg)
{
    struct consumer *c = arg;
    struct chan_sc *sc = c->sc;
    uint64_t last = 0;
    int first = 1;
    for (;;) {
        uint64_t v;
        int rc = band_chan_recv(sc->out, &v, NULL, BAND_FOREVER, NULL);
        if (rc == BAND_ECLOSED)
            return 0;
        if (rc != 0 || v >= MAX_VALS) {
            c->errors++;
            return -1;
        }
        if (!first && v <= last)
            c->errors++; /* the loop's elements out of order */
        first = 0;
        last = v;
        atomic_fetch_add(&sc->got[v], 1);
        c->received++;
    }
}

static void chan_cb(band_uv_op *op, int status);

static void chan_submit(struct chan_sc *sc, struct chan_slot *s)
{
    int rc;
    s->deadline = random_deadline(&sc->rng, 1000);
    if (s->send) {
        if (sc->next_val >= MAX_VALS || band_now() >= sc->end) {
            if (--sc->sends_left == 0 && band_chan_close(sc->out) != 0)
                sc->t.errors++;
            return;
        }
        s->elem = sc->next_val++;
        rc = band_uv_bind(sc->u, &s->op, &s->sop.w, chan_cb, s->deadline, NULL);
        if (rc == 0)
            rc = band_uv_start(&s->op, band_chan_send_async(sc->out, &s->elem, 1, &s->sop));
    } else {
        s->elem = UINT64_MAX;
        rc = band_uv_bind(sc->u, &s->op, &s->rop.w, chan_cb, s->deadline, NULL);
        if (rc == 0)
            rc = band_uv_start(&s->op, band_chan_recv_async(sc->in, &s->elem, &s->rop));
    }
    if (rc != 0) {
        sc->t.errors++;
        return;
    }
    s->inflight = 1;
    sc->t.submits++;
}

static void chan_cb(band_uv_op *op, int status)
{
    struct chan_slot *s = op->data;
    struct chan_sc *sc = s->sc;
    if (!s->inflight)
        sc->t.errors++;
    s->inflight = 0;
    sc->t.callbacks++;
    int again = 1;
    switch (status) {
    case 0:
        sc->t.ok++;
        if (s->send) {
            sc->accepted[s->elem] = 1;
        } else {
            uint64_t p = s->elem >> 32, seq = s->elem & 0xffffffffu;
            if (p >= PRODUCERS || seq != sc->next_seq[p] || s->rop.bytes != seq % 8 + 1)
                sc->order_errors++;
            else
                sc->next_seq[p]++;
            sc->received_in++;
        }
        break;
    case BAND_ETIMEDOUT:
        sc->t.timedout++;
        if (band_now() < s->deadline)
            sc->t.early++;
        break;
    case BAND_ECANCELED:
        sc->t.cancelled++;
        break;
    case BAND_ECLOSED:
        sc->t.closed++;
        again = 0; /* producers left and the channel is drained */
        if (s->send)
            sc->t.errors++;
        break;
    default:
        sc->t.errors++;
    }
    if (test_rng_range(&sc->rng, 0, 7) == 0) {
        uint64_t i = test_rng_range(&sc->rng, 0, RECV_OPS + SEND_OPS - 1);
        struct chan_slot *o = i < RECV_OPS ? &sc->recv[i] : &sc->send[i - RECV_OPS];
        int rc = band_uv_cancel(&o->op);
        if (rc == 0)
            sc->t.cancel_ok++;
        else if (rc == BAND_EALREADY)
            sc->t.cancel_already++;
        else if (rc != BAND_EINVAL || o->inflight)
            sc->t.errors++;
    }
    if (again)
        chan_submit(sc, s);
}

static void test_stress_chan(void **state)
{
    (void)state;
    struct chan_sc *sc = calloc(1, sizeof(*sc));
    assert_non_null(sc);
    sc->accepted = calloc(MAX_VALS, 1);
    sc->got = calloc(MAX_VALS, sizeof(*sc->got));
    assert_non_null(sc->accepted);
    assert_non_null(sc->got);
    sc->rng = 0x5eed0002;
    assert_int_equal(uv_loop_init(&sc->loop), 0);
    uv_timer_init(&sc->loop, &sc->guard);
    sc->guard.data = &sc->hung;
    uv_timer_start(&sc->guard, guard_cb, GUARD_MS, 0);
    uv_unref((uv_handle_t *)&sc->guard);
    assert_int_equal(band_uv_create(&sc->u, &sc->loop), 0);
    band_chan_opts o = {.byte_capacity = 24, .senders = PRODUCERS};
    assert_int_equal(band_chan_create(&sc->in, sizeof(uint64_t), IN_CAP, &o), 0);
    assert_int_equal(band_chan_create(&sc->out, sizeof(uint64_t), OUT_CAP, NULL), 0);

    sc->end = band_now() + WALL_NS;
    struct producer p[PRODUCERS];
    struct consumer c[CONSUMERS];
    struct test_thread pt[PRODUCERS], ct[CONSUMERS];
    for (uint32_t i = 0; i < PRODUCERS; i++) {
        p[i] = (struct producer){sc, i, 0x900d + i, 0, 0, 0};
        assert_int_equal(test_thread_start(&pt[i], producer_main, &p[i]), 0);
    }
    for (int i = 0; i < CONSUMERS; i++) {
        c[i] = (struct consumer){sc, 0, 0};
        assert_int_equal(test_thread_start(&ct[i], consumer_main, &c[i]), 0);
    }
    for (int i = 0; i < RECV_OPS; i++) {
        sc->recv[i] = (struct chan_slot){.sc = sc};
        sc->recv[i].op.data = &sc->recv[i];
        chan_submit(sc, &sc->recv[i]);
    }
    sc->sends_left = SEND_OPS;
    for (int i = 0; i < SEND_OPS; i++) {
        sc->send[i] = (struct chan_slot){.sc = sc, .send = 1};
        sc->send[i].op.data = &sc->send[i];
        chan_submit(sc, &sc->send[i]);
    }
    /* Returns once every receive saw the closed, drained channel and every send ended. */
    uv_run(&sc->loop, UV_RUN_DEFAULT);
    assert_false(sc->hung);
    uint64_t produced = 0, consumed = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        assert_int_equal(test_thread_join(&pt[i]), 0);
        assert_int_equal(p[i].errors, 0);
        produced += p[i].produced;
        assert_u64_equal(sc->next_seq[i], p[i].produced); /* all of it, in order */
    }
    for (int i = 0; i < CONSUMERS; i++) {
        assert_int_equal(test_thread_join(&ct[i]), 0);
        assert_int_equal(c[i].errors, 0);
        consumed += c[i].received;
    }

    struct tally *t = &sc->t;
    print_message("chan: %llu elements in from %d producers, %llu out of %llu sent to %d "
                  "consumers; %llu timed out, %llu cancelled\n",
                  (unsigned long long)sc->received_in, PRODUCERS, (unsigned long long)consumed,
                  (unsigned long long)sc->next_val, CONSUMERS, (unsigned long long)t->timedout,
                  (unsigned long long)t->cancelled);
    assert_u64_equal(t->errors, 0);
    assert_u64_equal(t->early, 0);
    assert_u64_equal(sc->order_errors, 0);
    assert_u64_equal(t->callbacks, t->submits);
    assert_u64_equal(t->closed, RECV_OPS);
    assert_u64_equal(sc->received_in, produced);
    uint64_t accepted = 0;
    for (uint64_t v = 0; v < MAX_VALS; v++) {
        unsigned g = atomic_load(&sc->got[v]);
        if (g != sc->accepted[v])
            fail_msg("value %llu: sent %d, received %u times", (unsigned long long)v,
                     sc->accepted[v], g);
        accepted += sc->accepted[v];
    }
    assert_u64_equal(accepted, consumed);
    assert_true(t->timedout > 0 && t->cancelled > 0 && produced > 0 && accepted > 0);

    assert_int_equal(band_uv_close(sc->u, NULL, NULL), 0);
    uv_close((uv_handle_t *)&sc->guard, NULL);
    uv_run(&sc->loop, UV_RUN_DEFAULT);
    assert_int_equal(band_uv_destroy(sc->u), 0);
    assert_int_equal(uv_loop_close(&sc->loop), 0);
    assert_int_equal(band_chan_destroy(sc->in), 0);
    assert_int_equal(band_chan_destroy(sc->out), 0);
    free(sc->accepted);
    free((void *)sc->got);
    free(sc);
}

/* ==================================================================================== */
/* Tokens and due times: acquisitions and band_uv_at() operations under cancellation     */
/* tokens that another thread requests while the loop binds, completes and cancels      */

#define TOK_SLOTS   128
#define TOKENS      4
#define TOK_WORKERS 2

struct tok_sc;

struct tok_slot {
    band_uv_op op;
    band_waiter w;
    uint64_t n;
    int timed; /* a band_uv_at() operation */
    int tok;   /* index into sc->tok, or -1 */
    band_time deadline;
    int inflight;
    struct tok_sc *sc;
};

struct tok_sc {
    uv_loop_t loop;
    uv_timer_t guard;
    int hung;
    band_uv *u;
    band_sem *sem;
    pthread_mutex_t mu;       /* tok[] against the requesting thread */
    band_cancel *tok[TOKENS]; /* replaced by the loop once requested and unused */
    unsigned refs[TOKENS];    /* loop only: operations bound under tok[i] */
    struct tok_slot slot[TOK_SLOTS];
    atomic_uint_fast64_t held; /* permits handed to the workers */
    atomic_int stop;
    atomic_uint_fast64_t requests;
    uint64_t rng;
    band_time end;
    uint64_t iters, tokens_made;
    int closing, closed_calls, inflight;
    uint64_t acq_cancelled, acq_timedout, at_ok, at_cancelled;
    struct tally t;
};

static void tok_cb(band_uv_op *op, int status);

static void tok_submit(struct tok_sc *sc, struct tok_slot *s)
{
    s->timed = test_rng_range(&sc->rng, 0, 3) == 0;
    s->tok = (int)test_rng_range(&sc->rng, 0, TOKENS) - 1; /* -1: no token */
    /* A requested token still gets a bind now and then (it must not wait), but rarely:
     * otherwise the ops that cycle through it keep it in use and it is never replaced. */
    if (s->tok >= 0 && band_cancel_is_requested(sc->tok[s->tok]) &&
        test_rng_range(&sc->rng, 0, 7) != 0)
        s->tok = -1;
    band_cancel *tok = s->tok >= 0 ? sc->tok[s->tok] : NULL;
    int rc;
    if (s->timed) {
        s->deadline = band_now() + (band_time)test_rng_range(&sc->rng, 0, 1500) * BAND_USEC;
        rc = band_uv_at(sc->u, &s->op, tok_cb, s->deadline, tok);
    } else {
        s->n = test_rng_range(&sc->rng, 1, SEM_MAXN);
        s->deadline = random_deadline(&sc->rng, 3000);
        rc = band_uv_bind(sc->u, &s->op, &s->w, tok_cb, s->deadline, tok);
        if (rc == 0)
            rc = band_uv_start(&s->op, band_sem_acquire_async(sc->sem, s->n, &s->w));
    }
    if (rc != 0) {
        sc->t.errors++;
        return;
    }
    if (s->tok >= 0)
        sc->refs[s->tok]++;
    s->inflight = 1;
    sc->inflight++;
    sc->t.submits++;
}

/* A requested token nobody uses any more is destroyed and replaced by a fresh one. */
static void tok_renew(struct tok_sc *sc, int k)
{
    if (sc->refs[k] != 0 || !band_cancel_is_requested(sc->tok[k]) || sc->closing)
        return;
    pthread_mutex_lock(&sc->mu);
    if (band_cancel_destroy(sc->tok[k]) != 0 || band_cancel_create(&sc->tok[k], NULL) != 0)
        sc->t.errors++;
    pthread_mutex_unlock(&sc->mu);
    sc->tokens_made++;
}

static void tok_on_closed(void *data)
{
    struct tok_sc *sc = data;
    sc->closed_calls++;
    if (sc->inflight != 0)
        sc->t.errors++;
    if (band_uv_destroy(sc->u) != 0)
        sc->t.errors++;
    sc->u = NULL;
}

static void tok_cb(band_uv_op *op, int status)
{
    struct tok_slot *s = op->data;
    struct tok_sc *sc = s->sc;
    if (!s->inflight)
        sc->t.errors++;
    s->inflight = 0;
    sc->inflight--;
    sc->t.callbacks++;
    if (s->tok >= 0)
        sc->refs[s->tok]--;
    if (status == 0 && band_now() < s->deadline && s->timed)
        sc->t.early++; /* a due time reported before it came */
    switch (status) {
    case 0:
        sc->t.ok++;
        if (s->timed)
            sc->at_ok++;
        else
            atomic_fetch_add(&sc->held, s->n); /* given back by the workers */
        break;
    case BAND_ETIMEDOUT:
        if (s->timed)
            sc->t.errors++;
        sc->acq_timedout++;
        if (band_now() < s->deadline)
            sc->t.early++;
        break;
    case BAND_ECANCELED:
        sc->t.cancelled++;
        if (s->timed)
            sc->at_cancelled++;
        else
            sc->acq_cancelled++;
        break;
    default:
        sc->t.errors++;
    }
    if (s->tok >= 0)
        tok_renew(sc, s->tok);
    if (test_rng_range(&sc->rng, 0, 5) == 0) {
        struct tok_slot *o = &sc->slot[test_rng_range(&sc->rng, 0, TOK_SLOTS - 1)];
        int rc = band_uv_cancel(&o->op);
        if (rc == 0)
            sc->t.cancel_ok++;
        else if (rc == BAND_EALREADY)
            sc->t.cancel_already++;
        else if (rc != BAND_EINVAL || o->inflight)
            sc->t.errors++;
    }
    if (sc->closing)
        return;
    if (++sc->iters >= MAX_ITERS || band_now() >= sc->end) {
        sc->closing = 1;
        if (band_uv_close(sc->u, tok_on_closed, sc) != 0)
            sc->t.errors++;
        return;
    }
    tok_submit(sc, s);
}

static int requester_main(void *arg)
{
    struct tok_sc *sc = arg;
    uint64_t rng = 0x7e57;
    while (!atomic_load(&sc->stop)) {
        nap_us((long)test_rng_range(&rng, 50, 400));
        pthread_mutex_lock(&sc->mu);
        int k = (int)test_rng_range(&rng, 0, TOKENS - 1);
        if (band_cancel_request(sc->tok[k]) == 0)
            atomic_fetch_add(&sc->requests, 1);
        pthread_mutex_unlock(&sc->mu);
    }
    return 0;
}

static void test_stress_tokens(void **state)
{
    (void)state;
    struct tok_sc *sc = calloc(1, sizeof(*sc));
    assert_non_null(sc);
    sc->rng = 0x5eed0003;
    atomic_init(&sc->held, 0);
    atomic_init(&sc->stop, 0);
    atomic_init(&sc->requests, 0);
    assert_int_equal(pthread_mutex_init(&sc->mu, NULL), 0);
    for (int k = 0; k < TOKENS; k++)
        assert_int_equal(band_cancel_create(&sc->tok[k], NULL), 0);
    assert_int_equal(uv_loop_init(&sc->loop), 0);
    uv_timer_init(&sc->loop, &sc->guard);
    sc->guard.data = &sc->hung;
    uv_timer_start(&sc->guard, guard_cb, GUARD_MS, 0);
    uv_unref((uv_handle_t *)&sc->guard);
    assert_int_equal(band_uv_create(&sc->u, &sc->loop), 0);
    assert_int_equal(band_sem_create(&sc->sem, SEM_PERMITS, NULL), 0);

    struct sem_worker w[TOK_WORKERS];
    struct test_thread th[TOK_WORKERS], req;
    for (int i = 0; i < TOK_WORKERS; i++) {
        w[i] = (struct sem_worker){sc->sem, &sc->held, &sc->stop, 0xdef0 + (uint64_t)i, 0, 0};
        assert_int_equal(test_thread_start(&th[i], sem_worker_main, &w[i]), 0);
    }
    assert_int_equal(test_thread_start(&req, requester_main, sc), 0);
    sc->end = band_now() + WALL_NS;
    for (int i = 0; i < TOK_SLOTS; i++) {
        sc->slot[i].op.data = &sc->slot[i];
        sc->slot[i].sc = sc;
        tok_submit(sc, &sc->slot[i]);
    }
    uv_run(&sc->loop, UV_RUN_DEFAULT); /* until the adapter closed */
    assert_false(sc->hung);
    atomic_store(&sc->stop, 1);
    for (int i = 0; i < TOK_WORKERS; i++) {
        assert_int_equal(test_thread_join(&th[i]), 0);
        assert_int_equal(w[i].errors, 0);
    }
    assert_int_equal(test_thread_join(&req), 0);
    assert_int_equal(band_sem_release(sc->sem, atomic_load(&sc->held)), 0);

    struct tally *t = &sc->t;
    print_message("tokens: %llu submits, %llu ok (%llu due times), %llu timed out, %llu "
                  "cancelled (%llu due times), %llu requests, %llu tokens replaced\n",
                  (unsigned long long)t->submits, (unsigned long long)t->ok,
                  (unsigned long long)sc->at_ok, (unsigned long long)sc->acq_timedout,
                  (unsigned long long)t->cancelled, (unsigned long long)sc->at_cancelled,
                  (unsigned long long)atomic_load(&sc->requests),
                  (unsigned long long)sc->tokens_made);
    assert_u64_equal(t->errors, 0);
    assert_u64_equal(t->early, 0);
    assert_int_equal(sc->closed_calls, 1);
    assert_int_equal(sc->inflight, 0);
    assert_u64_equal(t->callbacks, t->submits);
    for (int i = 0; i < TOK_SLOTS; i++)
        assert_int_equal(sc->slot[i].inflight, 0);
    for (int k = 0; k < TOKENS; k++) {
        assert_int_equal(sc->refs[k], 0);
        assert_int_equal(band_cancel_destroy(sc->tok[k]), 0); /* every hook was removed */
    }
    assert_true(t->ok > 0 && sc->at_ok > 0 && sc->acq_cancelled > 0 && sc->at_cancelled > 0);
    assert_true(atomic_load(&sc->requests) > 0 && sc->tokens_made > 0);

    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(sc->sem, &st), 0);
    assert_u64_equal(st.available, SEM_PERMITS); /* conservation */
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.timeouts, sc->acq_timedout);
    assert_u64_equal(st.cancels, sc->acq_cancelled);

    uv_close((uv_handle_t *)&sc->guard, NULL);
    uv_run(&sc->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&sc->loop), 0);
    assert_int_equal(band_sem_destroy(sc->sem), 0);
    pthread_mutex_destroy(&sc->mu);
    free(sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stress_sem),
        cmocka_unit_test(test_stress_chan),
        cmocka_unit_test(test_stress_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

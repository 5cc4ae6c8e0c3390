/* SPDX-License-Identifier: MIT */
/*
 * stress_chan.c - producers and consumers on one bounded channel.
 *
 * Producers send elements {producer id, sequence number, checksum} over every send path:
 * try_send (falling back to a send with a short deadline), blocking send with a random
 * deadline, send_async (waited for with a random give-up time, then cancelled), try_reserve
 * and reserve followed by a fill or a release, reserve_async then a fill, and, in the
 * drop-oldest scenario, offer. Consumers receive over every path: blocking recv with a
 * random deadline, try_recv, recv_async (cancelled when it takes too long), recv_many.
 * Every thread now and then cancels another thread's pending operation. Producers leave
 * the channel (sender counting) when they are done, so the last one closes it; in the
 * close-in-the-middle scenario the main thread closes it while everybody is still busy.
 *
 * Each scenario is bounded by an iteration count AND a wall time (about a second; CI has
 * 2 cores and runs this under TSan and ASan too). Workers never assert: they record what
 * they saw (the first inconsistency as text), and the main thread checks after join:
 *   - every element a producer made ended exactly once: received by one consumer, handed
 *     back to its producer (refused, timed out, cancelled, closed, released reservation),
 *     or dropped by the overflow policy; one atomic counter per element, so a duplicate or
 *     an element both received and returned is seen the moment it happens;
 *   - checksums match, and per (producer, consumer) pair sequence numbers only increase
 *     (with several consumers no global order is checkable; the counters cover loss and
 *     duplication);
 *   - every async op ended exactly once (a wake or a successful cancel, never both);
 *   - at quiescence the channel is closed and empty, holds no reservation and no waiter,
 *     and its counters agree: sent == received (+ dropped for drop-oldest), received ==
 *     what the consumers counted.
 */
#include "test.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "band/chan.h"

#define MAX_PROD  4
#define MAX_CONS  4
#define MAX_SEQ   60000 /* per producer: the iteration bound */
#define MAX_BYTES 16

struct elem {
    uint32_t producer;
    uint32_t pad;
    uint64_t seq;
    uint64_t check;
};

static uint64_t elem_check(uint32_t p, uint64_t seq)
{
    uint64_t s = ((uint64_t)p << 48) ^ seq ^ UINT64_C(0x6a09e667f3bcc908);
    return test_rng_next(&s);
}

/* Completion control shared by an async op's owner, its wake, and cancelling threads. */
struct opctl {
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* CLOCK_MONOTONIC */
    int woken, cancelled; /* under mu */
    int wakes, status;    /* under mu */
    atomic_int claim;     /* 1 while one thread may cancel the op */
    atomic_int armed;     /* 1 from PENDING until the owner has seen the end */
};

struct prod_op {
    union {
        band_chan_send_op op;     /* first: sends */
        band_chan_reserve_op rsv; /* reservations: the same waiter */
    };
    struct opctl ctl;
    struct elem e;
};

struct cons_op {
    band_chan_recv_op op; /* first */
    struct opctl ctl;
    struct elem out;
};

struct counters {
    uint64_t made, received, returned, dropped;
    uint64_t try_ok, try_eagain, send_ok, send_timeout, closed;
    uint64_t async_now, async_pending, async_wake_ok, async_cancelled;
    uint64_t reserve_ok, reserve_fill, reserve_release, reserve_async_ok;
    uint64_t offers, offer_dropped, offer_eagain;
    uint64_t recv_ok, recv_timeout, recv_try_eagain, recv_async_pending, recv_cancelled;
    uint64_t recv_many_calls, recv_many_elems;
    uint64_t cancel_ok, cancel_ealready, cancel_other;
};

struct scenario {
    const char *name;
    int nprod, ncons;
    uint64_t capacity, byte_capacity;
    int overflow;
    int close_mid;
    int hot; /* mostly blocking send/recv: the lock-free paths and their gates */
    uint64_t seed;
    band_chan *c;
    band_time stop_at, close_at, hard_stop;
    struct prod_op pops[MAX_PROD];
    struct cons_op cops[MAX_CONS];
    struct counters pc[MAX_PROD], cc[MAX_CONS];
    uint64_t made[MAX_PROD];
    atomic_uchar *outcome; /* [producer * MAX_SEQ + seq]: ends seen */
    atomic_int producers_left;
    atomic_int errors;
    pthread_mutex_t err_mu;
    char err[512];
};

struct worker {
    struct scenario *sc;
    int idx; /* producer or consumer index */
    int is_prod;
    uint64_t rng;
    uint64_t last[MAX_PROD]; /* consumers: last sequence seen from each producer, + 1 */
};

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
record_error(struct scenario *sc, const char *fmt, ...)
{
    if (atomic_fetch_add(&sc->errors, 1) == 0) {
        pthread_mutex_lock(&sc->err_mu);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(sc->err, sizeof(sc->err), fmt, ap);
        va_end(ap);
        pthread_mutex_unlock(&sc->err_mu);
    }
}

static uint64_t rnd(struct worker *wk, uint64_t lo, uint64_t hi)
{
    return test_rng_range(&wk->rng, lo, hi);
}

static struct counters *cnt(struct worker *wk)
{
    return wk->is_prod ? &wk->sc->pc[wk->idx] : &wk->sc->cc[wk->idx];
}

/* ---------------------------------------------------------------------------------- */
/* outcomes                                                                            */

/* One end of element (p, seq); @what names it for the error text. */
static void element_end(struct scenario *sc, const struct elem *e, const char *what)
{
    if (e->producer >= (uint32_t)sc->nprod || e->seq >= MAX_SEQ ||
        e->check != elem_check(e->producer, e->seq)) {
        record_error(sc, "%s: corrupt element {%u, %llu, %llx}", what, e->producer,
                     (unsigned long long)e->seq, (unsigned long long)e->check);
        return;
    }
    unsigned old = atomic_fetch_add(&sc->outcome[(size_t)e->producer * MAX_SEQ + e->seq], 1);
    if (old != 0)
        record_error(sc, "%s: element {%u, %llu} ended twice", what, e->producer,
                     (unsigned long long)e->seq);
}

static void returned(struct worker *wk, const struct elem *e)
{
    cnt(wk)->returned++;
    element_end(wk->sc, e, "returned");
}

/* A consumer received @e. */
static void received(struct worker *wk, const struct elem *e)
{
    struct scenario *sc = wk->sc;
    cnt(wk)->received++;
    element_end(sc, e, "received");
    if (e->producer < (uint32_t)sc->nprod) {
        if (e->seq + 1 <= wk->last[e->producer])
            record_error(sc, "consumer %d: producer %u's seq %llu after %llu", wk->idx, e->producer,
                         (unsigned long long)e->seq,
                         (unsigned long long)(wk->last[e->producer] - 1));
        wk->last[e->producer] = e->seq + 1;
    }
}

/* ---------------------------------------------------------------------------------- */
/* async ops: wake, cancel, wait                                                       */

static void ctl_init(struct opctl *ctl)
{
    pthread_mutex_init(&ctl->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ctl->cv, &ca);
    pthread_condattr_destroy(&ca);
    ctl->woken = ctl->cancelled = ctl->wakes = 0;
    ctl->status = 12345;
    atomic_init(&ctl->claim, 0);
    atomic_init(&ctl->armed, 0);
}

static void ctl_destroy(struct opctl *ctl)
{
    pthread_mutex_destroy(&ctl->mu);
    pthread_cond_destroy(&ctl->cv);
}

static void ctl_woken(struct opctl *ctl, int status)
{
    pthread_mutex_lock(&ctl->mu);
    ctl->status = status;
    ctl->wakes++;
    ctl->woken = 1;
    pthread_cond_signal(&ctl->cv);
    pthread_mutex_unlock(&ctl->mu);
}

static void prod_wake(band_waiter *w)
{
    struct prod_op *op = (struct prod_op *)(void *)w;
    ctl_woken(&op->ctl, band_waiter_status(w));
}

static void cons_wake(band_waiter *w)
{
    struct cons_op *op = (struct cons_op *)(void *)w;
    ctl_woken(&op->ctl, band_waiter_status(w));
}

static void ctl_reset(struct opctl *ctl)
{
    pthread_mutex_lock(&ctl->mu);
    ctl->woken = ctl->cancelled = ctl->wakes = 0;
    ctl->status = 12345;
    pthread_mutex_unlock(&ctl->mu);
}

static void claim_spin(struct opctl *ctl)
{
    int expected = 0;
    while (!atomic_compare_exchange_weak(&ctl->claim, &expected, 1)) {
        expected = 0;
        sched_yield();
    }
}

/* Cancel @w if armed; the caller holds the claim. */
static void cancel_claimed(struct worker *wk, struct opctl *ctl, band_waiter *w, int reason)
{
    if (!atomic_load(&ctl->armed))
        return;
    int rc = band_waiter_cancel(w, reason);
    if (rc == 0) {
        cnt(wk)->cancel_ok++;
        pthread_mutex_lock(&ctl->mu);
        if (ctl->cancelled || ctl->woken)
            record_error(wk->sc, "cancel returned 0 after the op ended (woken %d)", ctl->woken);
        ctl->cancelled = 1;
        pthread_cond_signal(&ctl->cv);
        pthread_mutex_unlock(&ctl->mu);
    } else if (rc == BAND_EALREADY) {
        cnt(wk)->cancel_ealready++;
    } else if (rc == BAND_EINVAL) {
        pthread_mutex_lock(&ctl->mu);
        int ok = ctl->cancelled;
        pthread_mutex_unlock(&ctl->mu);
        if (!ok)
            record_error(wk->sc, "cancel of an armed op returned EINVAL");
    } else {
        record_error(wk->sc, "cancel returned %d", rc);
    }
}

/*
 * Wait for the end of a pending op (its wake, or somebody's successful cancel) until
 * @give_up, then cancel it ourselves; if that finds it completed, wait for the wake.
 * Disarms it. Returns 1 if it was woken (status in *status), 0 if it was cancelled.
 */
static int op_wait(struct worker *wk, struct opctl *ctl, band_waiter *w, band_time give_up,
                   int *status)
{
    struct timespec ts = {(time_t)(give_up / BAND_SEC), (long)(give_up % BAND_SEC)};
    pthread_mutex_lock(&ctl->mu);
    while (!ctl->woken && !ctl->cancelled)
        if (pthread_cond_timedwait(&ctl->cv, &ctl->mu, &ts) != 0)
            break;
    int ended = ctl->woken || ctl->cancelled;
    pthread_mutex_unlock(&ctl->mu);
    if (!ended) {
        claim_spin(ctl);
        cancel_claimed(wk, ctl, w, (wk->rng & 1) ? BAND_ETIMEDOUT : BAND_ECANCELED);
        atomic_store(&ctl->claim, 0);
        pthread_mutex_lock(&ctl->mu);
        while (!ctl->woken && !ctl->cancelled) /* EALREADY: the wake is imminent */
            pthread_cond_wait(&ctl->cv, &ctl->mu);
        pthread_mutex_unlock(&ctl->mu);
    }
    claim_spin(ctl); /* disarm: no canceller is between its check and its cancel */
    atomic_store(&ctl->armed, 0);
    atomic_store(&ctl->claim, 0);
    pthread_mutex_lock(&ctl->mu);
    int woken = ctl->woken, cancelled = ctl->cancelled, wakes = ctl->wakes;
    *status = ctl->status;
    pthread_mutex_unlock(&ctl->mu);
    if (woken + cancelled != 1 || wakes != woken)
        record_error(wk->sc, "op ended woken=%d cancelled=%d wakes=%d", woken, cancelled, wakes);
    if (band_waiter_is_pending(w))
        record_error(wk->sc, "waiter still pending after its end");
    return woken;
}

/* Cancel another thread's pending op, if it has one. */
static void cancel_other(struct worker *wk)
{
    struct scenario *sc = wk->sc;
    int total = sc->nprod + sc->ncons;
    int j = (int)rnd(wk, 0, (uint64_t)total - 1);
    struct opctl *ctl;
    band_waiter *w;
    if (j < sc->nprod) {
        if (wk->is_prod && j == wk->idx)
            return;
        ctl = &sc->pops[j].ctl;
        w = &sc->pops[j].op.w;
    } else {
        j -= sc->nprod;
        if (!wk->is_prod && j == wk->idx)
            return;
        ctl = &sc->cops[j].ctl;
        w = &sc->cops[j].op.w;
    }
    int expected = 0;
    if (!atomic_compare_exchange_strong(&ctl->claim, &expected, 1))
        return;
    cnt(wk)->cancel_other++;
    cancel_claimed(wk, ctl, w, (wk->rng & 1) ? BAND_ECANCELED : BAND_ETIMEDOUT);
    atomic_store(&ctl->claim, 0);
}

static band_time short_deadline(struct worker *wk)
{
    /* mostly a few hundred microseconds; sometimes already past; sometimes "long" */
    uint64_t r = rnd(wk, 0, 15);
    if (r == 0)
        return band_now() - 1;
    if (r == 1)
        return wk->sc->hard_stop;
    return band_deadline_after((band_time)rnd(wk, 0, 800) * BAND_USEC);
}

/* ---------------------------------------------------------------------------------- */
/* producers                                                                           */

/* A refusal or error from a send path: the element is handed back. */
static void send_refused(struct worker *wk, const struct elem *e, int rc, const char *what)
{
    struct counters *c = cnt(wk);
    if (rc == BAND_ECLOSED)
        c->closed++;
    else if (rc == BAND_ETIMEDOUT)
        c->send_timeout++;
    else if (rc != BAND_EAGAIN)
        record_error(wk->sc, "%s returned %d", what, rc);
    returned(wk, e);
}

static void p_try(struct worker *wk, const struct elem *e, uint64_t bytes)
{
    int rc = band_chan_try_send(wk->sc->c, e, bytes);
    if (rc == 0) {
        cnt(wk)->try_ok++;
        return;
    }
    if (rc == BAND_EAGAIN) {
        cnt(wk)->try_eagain++;
        rc = band_chan_send(wk->sc->c, e, bytes, short_deadline(wk), NULL);
        if (rc == 0) {
            cnt(wk)->send_ok++;
            return;
        }
    }
    send_refused(wk, e, rc, "try_send/send");
}

static void p_send(struct worker *wk, const struct elem *e, uint64_t bytes)
{
    int rc = band_chan_send(wk->sc->c, e, bytes, short_deadline(wk), NULL);
    if (rc == 0)
        cnt(wk)->send_ok++;
    else
        send_refused(wk, e, rc, "send");
}

/* Fill (mostly) or release a reservation held in @slot. */
static void p_fill(struct worker *wk, band_chan_slot *slot, const struct elem *e)
{
    if (rnd(wk, 0, 9) == 0) {
        int rc = band_chan_slot_release(slot);
        if (rc != 0)
            record_error(wk->sc, "slot_release returned %d", rc);
        cnt(wk)->reserve_release++;
        returned(wk, e);
        return;
    }
    if ((wk->rng & 3) == 0)
        sched_yield(); /* hold it a moment */
    int rc = band_chan_slot_send(slot, e);
    if (rc != 0) {
        record_error(wk->sc, "slot_send returned %d", rc);
        returned(wk, e);
        return;
    }
    cnt(wk)->reserve_fill++;
}

static void p_reserve(struct worker *wk, const struct elem *e, uint64_t bytes)
{
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    int rc = (wk->rng & 1) ? band_chan_try_reserve(wk->sc->c, bytes, &slot)
                           : band_chan_reserve(wk->sc->c, bytes, &slot, short_deadline(wk), NULL);
    if (rc != 0) {
        if (slot.chan != NULL)
            record_error(wk->sc, "refused reserve filled the slot");
        send_refused(wk, e, rc, "reserve");
        return;
    }
    cnt(wk)->reserve_ok++;
    p_fill(wk, &slot, e);
}

static void p_async(struct worker *wk, const struct elem *e, uint64_t bytes, int reserve)
{
    struct scenario *sc = wk->sc;
    struct prod_op *op = &sc->pops[wk->idx];
    struct counters *c = cnt(wk);
    ctl_reset(&op->ctl);
    op->e = *e;
    int rc = reserve ? band_chan_reserve_async(sc->c, bytes, &op->rsv)
                     : band_chan_send_async(sc->c, &op->e, bytes, &op->op);
    int granted = 0;
    if (rc == 0) {
        c->async_now++;
        granted = 1;
    } else if (rc == BAND_PENDING) {
        c->async_pending++;
        atomic_store(&op->ctl.armed, 1);
        band_time give_up = band_deadline_after((band_time)rnd(wk, 0, 1500) * BAND_USEC);
        int st = 0;
        if (op_wait(wk, &op->ctl, &op->op.w, give_up, &st)) {
            if (st == 0) {
                c->async_wake_ok++;
                granted = 1;
            } else if (st == BAND_ECLOSED) {
                c->closed++;
            } else {
                record_error(sc, "send/reserve wake status %d", st);
            }
        } else {
            c->async_cancelled++;
        }
    } else if (rc != BAND_ECLOSED) {
        record_error(sc, "send/reserve_async returned %d", rc);
    } else {
        c->closed++;
    }
    if (!granted) {
        returned(wk, e);
        return;
    }
    if (reserve) {
        band_chan_slot slot = op->rsv.slot; /* the op's output: move it out */
        op->rsv.slot = (band_chan_slot)BAND_CHAN_SLOT_INIT;
        if (slot.chan != sc->c || slot.bytes != bytes) {
            record_error(sc, "reserve_async granted a slot of %p/%llu", (void *)slot.chan,
                         (unsigned long long)slot.bytes);
            return;
        }
        c->reserve_async_ok++;
        p_fill(wk, &slot, e);
    }
}

static void p_offer(struct worker *wk, const struct elem *e, uint64_t bytes)
{
    struct elem dropped;
    uint64_t dbytes = 0;
    int out = -1;
    int rc = band_chan_offer(wk->sc->c, e, bytes, &dropped, &dbytes, &out);
    cnt(wk)->offers++;
    if (rc == 0) {
        if (out == 1) {
            cnt(wk)->offer_dropped++;
            cnt(wk)->dropped++;
            element_end(wk->sc, &dropped, "dropped");
        } else if (out != 0) {
            record_error(wk->sc, "offer: dropped_out %d", out);
        }
        return;
    }
    if (rc == BAND_EAGAIN)
        cnt(wk)->offer_eagain++;
    send_refused(wk, e, rc, "offer");
}

static int producer_main(void *arg)
{
    struct worker *wk = arg;
    struct scenario *sc = wk->sc;
    uint32_t p = (uint32_t)wk->idx;
    uint64_t seq;
    for (seq = 0; seq < MAX_SEQ; seq++) {
        if ((seq & 7) == 0 && band_now() >= sc->stop_at)
            break;
        if (atomic_load(&sc->errors) != 0)
            break;
        struct elem e = {p, 0, seq, elem_check(p, seq)};
        uint64_t bytes = sc->byte_capacity > 0 ? rnd(wk, 0, MAX_BYTES) : rnd(wk, 0, 1000);
        cnt(wk)->made++;
        sc->made[p] = seq + 1;
        if (sc->overflow != BAND_CHAN_WAIT) {
            p_offer(wk, &e, bytes);
            if (rnd(wk, 0, 3) != 0)
                sched_yield(); /* offers never wait: give the consumers a share */
        } else if (sc->hot) {
            /* Mostly the fast path; a rare reservation shuts the senders' gate, a rare
             * try meets a full ring. */
            uint64_t r = rnd(wk, 0, 99);
            if (r < 90)
                p_send(wk, &e, bytes);
            else if (r < 97)
                p_try(wk, &e, bytes);
            else
                p_reserve(wk, &e, bytes);
        } else {
            uint64_t r = rnd(wk, 0, 99);
            if (r < 20)
                p_try(wk, &e, bytes);
            else if (r < 45)
                p_send(wk, &e, bytes);
            else if (r < 70)
                p_async(wk, &e, bytes, 0);
            else if (r < 85)
                p_reserve(wk, &e, bytes);
            else
                p_async(wk, &e, bytes, 1);
        }
        if (rnd(wk, 0, 31) == 0)
            cancel_other(wk);
    }
    sc->made[p] = seq;
    int rc = band_chan_sender_leave(sc->c);
    if (rc != 0)
        record_error(sc, "sender_leave returned %d", rc);
    atomic_fetch_sub(&sc->producers_left, 1);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* consumers                                                                           */

/* Handle a receive result; returns 1 when the channel reported BAND_ECLOSED. */
static int recv_result(struct worker *wk, int rc, const struct elem *e, const char *what)
{
    struct counters *c = cnt(wk);
    if (rc == 0) {
        c->recv_ok++;
        received(wk, e);
        return 0;
    }
    if (rc == BAND_ECLOSED)
        return 1;
    if (rc == BAND_ETIMEDOUT) {
        c->recv_timeout++;
        if (band_now() >= wk->sc->hard_stop)
            record_error(wk->sc, "%s: channel never closed (hang)", what);
        return band_now() >= wk->sc->hard_stop;
    }
    if (rc == BAND_EAGAIN) {
        c->recv_try_eagain++;
        sched_yield();
        return 0;
    }
    record_error(wk->sc, "%s returned %d", what, rc);
    return 1;
}

static int c_async(struct worker *wk)
{
    struct scenario *sc = wk->sc;
    struct cons_op *op = &sc->cops[wk->idx];
    ctl_reset(&op->ctl);
    memset(&op->out, 0, sizeof(op->out));
    int rc = band_chan_recv_async(sc->c, &op->out, &op->op);
    if (rc != BAND_PENDING)
        return recv_result(wk, rc, &op->out, "recv_async");
    cnt(wk)->recv_async_pending++;
    atomic_store(&op->ctl.armed, 1);
    band_time give_up = band_deadline_after((band_time)rnd(wk, 0, 2000) * BAND_USEC);
    int st = 0;
    if (!op_wait(wk, &op->ctl, &op->op.w, give_up, &st)) {
        cnt(wk)->recv_cancelled++;
        return 0;
    }
    if (st != 0 && st != BAND_ECLOSED)
        record_error(sc, "recv wake status %d", st);
    return recv_result(wk, st, &op->out, "recv wake");
}

static int c_many(struct worker *wk)
{
    struct elem out[4];
    uint64_t bytes[4];
    size_t n = 99;
    int rc = band_chan_recv_many(wk->sc->c, 4, out, (wk->rng & 1) ? bytes : NULL, &n,
                                 short_deadline(wk), NULL);
    cnt(wk)->recv_many_calls++;
    if (rc != 0) {
        if (n != 0)
            record_error(wk->sc, "recv_many failed with n %zu", n);
        return recv_result(wk, rc, NULL, "recv_many");
    }
    if (n < 1 || n > 4) {
        record_error(wk->sc, "recv_many n %zu", n);
        return 1;
    }
    cnt(wk)->recv_many_elems += n;
    for (size_t i = 0; i < n; i++)
        recv_result(wk, 0, &out[i], "recv_many");
    return 0;
}

static int consumer_main(void *arg)
{
    struct worker *wk = arg;
    struct scenario *sc = wk->sc;
    for (uint64_t i = 0;; i++) {
        if (atomic_load(&sc->errors) != 0)
            break;
        struct elem e;
        uint64_t b = 0;
        int done;
        uint64_t r = rnd(wk, 0, 99);
        if (sc->hot)
            r = r < 60 ? 0 : r < 95 ? 99 : 30; /* recv, recv_many, sometimes try_recv */
        if (r < 30) {
            done = recv_result(wk, band_chan_recv(sc->c, &e, &b, short_deadline(wk), NULL), &e,
                               "recv");
        } else if (r < 55) {
            done = recv_result(wk, band_chan_try_recv(sc->c, &e, NULL), &e, "try_recv");
            if (!done && band_now() >= sc->hard_stop) {
                record_error(sc, "try_recv: channel never closed (hang)");
                done = 1;
            }
        } else if (r < 80) {
            done = c_async(wk);
        } else {
            done = c_many(wk);
        }
        if (done)
            break;
        if (rnd(wk, 0, 31) == 0)
            cancel_other(wk);
        if (sc->overflow != BAND_CHAN_WAIT && (i & 3) == 0)
            sched_yield(); /* let the queue fill so that offers drop */
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* scenarios                                                                           */

static void sum(const struct counters *src, int n, struct counters *t)
{
    for (int i = 0; i < n; i++) {
        const uint64_t *s = (const uint64_t *)(const void *)&src[i];
        uint64_t *d = (uint64_t *)(void *)t;
        for (size_t k = 0; k < sizeof(*t) / sizeof(uint64_t); k++)
            d[k] += s[k];
    }
}

static bool now_past(void *arg)
{
    return band_now() >= *(band_time *)arg;
}

struct params {
    const char *name;
    int nprod, ncons;
    uint64_t capacity, byte_capacity;
    int overflow;
    int close_mid;
    uint64_t seed;
    int hot;
};

static void run_scenario(const struct params *prm)
{
    struct scenario *sc = calloc(1, sizeof(*sc));
    assert_non_null(sc);
    sc->name = prm->name;
    sc->nprod = prm->nprod;
    sc->ncons = prm->ncons;
    sc->capacity = prm->capacity;
    sc->byte_capacity = prm->byte_capacity;
    sc->overflow = prm->overflow;
    sc->close_mid = prm->close_mid;
    sc->hot = prm->hot;
    sc->seed = prm->seed;
    sc->outcome = calloc((size_t)MAX_PROD * MAX_SEQ, sizeof(*sc->outcome));
    assert_non_null(sc->outcome);
    atomic_init(&sc->errors, 0);
    atomic_init(&sc->producers_left, sc->nprod);
    pthread_mutex_init(&sc->err_mu, NULL);

    band_chan_opts o;
    memset(&o, 0, sizeof(o));
    o.byte_capacity = sc->byte_capacity;
    o.overflow = sc->overflow;
    o.senders = (uint64_t)sc->nprod;
    assert_int_equal(band_chan_create(&sc->c, sizeof(struct elem), sc->capacity, &o), 0);
    assert_int_equal(band_chan_set_name(sc->c, prm->name), 0);
    for (int i = 0; i < MAX_PROD; i++) {
        band_waiter_init(&sc->pops[i].op.w, prod_wake, NULL);
        ctl_init(&sc->pops[i].ctl);
    }
    for (int i = 0; i < MAX_CONS; i++) {
        band_waiter_init(&sc->cops[i].op.w, cons_wake, NULL);
        ctl_init(&sc->cops[i].ctl);
    }

    band_time seconds = BAND_SEC;
    band_time t0 = band_now();
    sc->stop_at = t0 + seconds;
    sc->close_at = t0 + seconds / 2;
    sc->hard_stop = t0 + seconds + 30 * BAND_SEC; /* only a broken close gets here */

    struct worker wk[MAX_PROD + MAX_CONS];
    struct test_thread th[MAX_PROD + MAX_CONS];
    int n = 0;
    for (int i = 0; i < sc->ncons; i++, n++) {
        memset(&wk[n], 0, sizeof(wk[n]));
        wk[n] = (struct worker){sc, i, 0, prm->seed * 1000 + 500 + (uint64_t)i, {0}};
        assert_int_equal(test_thread_start(&th[n], consumer_main, &wk[n]), 0);
    }
    for (int i = 0; i < sc->nprod; i++, n++) {
        memset(&wk[n], 0, sizeof(wk[n]));
        wk[n] = (struct worker){sc, i, 1, prm->seed * 1000 + (uint64_t)i, {0}};
        assert_int_equal(test_thread_start(&th[n], producer_main, &wk[n]), 0);
    }
    if (sc->close_mid) {
        assert_true(test_wait_until(now_past, &sc->close_at, 10 * BAND_SEC));
        assert_int_equal(band_chan_close(sc->c), 0);
    }
    for (int i = 0; i < n; i++)
        test_thread_join(&th[i]);
    band_time elapsed = band_now() - t0;

    struct counters P, C;
    memset(&P, 0, sizeof(P));
    memset(&C, 0, sizeof(C));
    sum(sc->pc, sc->nprod, &P);
    sum(sc->cc, sc->ncons, &C);
    band_chan_stats st;
    assert_int_equal(band_chan_get_stats(sc->c, &st), 0);

    print_message("%s: %.2f s, made %llu, received %llu, returned %llu, dropped %llu | "
                  "try %llu/%llu, send %llu (timeouts %llu), async now %llu pending %llu "
                  "(woken ok %llu, cancelled %llu), reserve %llu (+async %llu; filled %llu, "
                  "released %llu), offers %llu, closed %llu | recv ok %llu, timeouts %llu, "
                  "eagain %llu, async pending %llu (cancelled %llu), many %llu/%llu | cancels "
                  "ok %llu, ealready %llu | stats sent %llu received %llu refused full %llu "
                  "closed %llu dropped %llu wait max %.3f ms\n",
                  prm->name, (double)elapsed / 1e9, (unsigned long long)P.made,
                  (unsigned long long)C.received, (unsigned long long)(P.returned + C.returned),
                  (unsigned long long)(P.dropped + C.dropped), (unsigned long long)P.try_ok,
                  (unsigned long long)P.try_eagain, (unsigned long long)P.send_ok,
                  (unsigned long long)P.send_timeout, (unsigned long long)P.async_now,
                  (unsigned long long)P.async_pending, (unsigned long long)P.async_wake_ok,
                  (unsigned long long)P.async_cancelled, (unsigned long long)P.reserve_ok,
                  (unsigned long long)P.reserve_async_ok, (unsigned long long)P.reserve_fill,
                  (unsigned long long)P.reserve_release, (unsigned long long)P.offers,
                  (unsigned long long)P.closed, (unsigned long long)C.recv_ok,
                  (unsigned long long)C.recv_timeout, (unsigned long long)C.recv_try_eagain,
                  (unsigned long long)C.recv_async_pending, (unsigned long long)C.recv_cancelled,
                  (unsigned long long)C.recv_many_calls, (unsigned long long)C.recv_many_elems,
                  (unsigned long long)(P.cancel_ok + C.cancel_ok),
                  (unsigned long long)(P.cancel_ealready + C.cancel_ealready),
                  (unsigned long long)st.sent, (unsigned long long)st.received,
                  (unsigned long long)st.refused_full, (unsigned long long)st.refused_closed,
                  (unsigned long long)st.dropped, (double)st.send_wait_ns_max / 1e6);
    if (atomic_load(&sc->errors) != 0)
        print_error("%s: %s\n", prm->name, sc->err);
    assert_int_equal(atomic_load(&sc->errors), 0);

    /* Every element made ended exactly once; none beyond what was made. */
    uint64_t ends = 0;
    for (int p = 0; p < sc->nprod; p++) {
        for (uint64_t s = 0; s < MAX_SEQ; s++) {
            unsigned k = atomic_load(&sc->outcome[(size_t)p * MAX_SEQ + s]);
            unsigned want = s < sc->made[p] ? 1u : 0u;
            if (k != want) {
                print_error("%s: element {%d, %llu} ended %u times (made %llu)\n", prm->name, p,
                            (unsigned long long)s, k, (unsigned long long)sc->made[p]);
                fail();
            }
            ends += k;
        }
    }
    assert_u64_equal(ends, P.made);
    assert_u64_equal(C.received + P.returned + C.returned + P.dropped + C.dropped, P.made);

    /* Quiescence: closed, empty, nothing reserved, nobody waiting, counters agree. */
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.bytes, 0);
    assert_u64_equal(st.reserved, 0);
    assert_u64_equal(st.reserved_bytes, 0);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.waiting_receivers, 0);
    assert_u64_equal(st.senders, 0);
    assert_u64_equal(st.received, C.received);
    if (sc->overflow == BAND_CHAN_DROP_OLDEST) {
        /* Evicted elements were accepted (sent) before they were dropped. The dropped
         * counter also covers none refused: drop-oldest hands back old ones only. */
        assert_u64_equal(st.sent, st.received + st.dropped);
    } else {
        assert_u64_equal(st.sent, st.received);
    }
    assert_u64_equal(st.dropped, P.dropped);
    assert_true(st.send_wait_ns_max <= st.send_wait_ns);
    /* The scenario did something worth checking. */
    assert_true(C.received > 100);
    if (sc->overflow == BAND_CHAN_WAIT && !sc->hot)
        assert_true(P.async_pending > 0);
    if (sc->hot)
        assert_true(P.send_ok > 1000 && C.recv_many_elems > 0);

    assert_int_equal(band_chan_destroy(sc->c), 0);
    for (int i = 0; i < MAX_PROD; i++)
        ctl_destroy(&sc->pops[i].ctl);
    for (int i = 0; i < MAX_CONS; i++)
        ctl_destroy(&sc->cops[i].ctl);
    pthread_mutex_destroy(&sc->err_mu);
    free(sc->outcome);
    free(sc);
}

static void test_3x3_mixed(void **state)
{
    (void)state;
    const struct params p = {"3x3 mixed", 3, 3, 8, 0, BAND_CHAN_WAIT, 0, 1, 0};
    run_scenario(&p);
}

static void test_4x1_bytes(void **state)
{
    (void)state;
    const struct params p = {"4x1 byte-bounded", 4, 1, 6, 40, BAND_CHAN_WAIT, 0, 2, 0};
    run_scenario(&p);
}

static void test_2x2_capacity_one(void **state)
{
    (void)state;
    const struct params p = {"2x2 capacity one", 2, 2, 1, 0, BAND_CHAN_WAIT, 0, 3, 0};
    run_scenario(&p);
}

static void test_3x3_close_mid(void **state)
{
    (void)state;
    const struct params p = {"3x3 close in the middle", 3, 3, 4, 24, BAND_CHAN_WAIT, 1, 4, 0};
    run_scenario(&p);
}

static void test_1x4_close_mid(void **state)
{
    (void)state;
    const struct params p = {"1x4 close in the middle", 1, 4, 2, 0, BAND_CHAN_WAIT, 1, 5, 0};
    run_scenario(&p);
}

static void test_3x2_drop_oldest(void **state)
{
    (void)state;
    const struct params p = {"3x2 drop-oldest", 3, 2, 4, 32, BAND_CHAN_DROP_OLDEST, 0, 6, 0};
    run_scenario(&p);
}

static void test_2x2_hot(void **state)
{
    (void)state;
    const struct params p = {"2x2 hot path", 2, 2, 3, 0, BAND_CHAN_WAIT, 0, 8, 1};
    run_scenario(&p);
}

static void test_1x1_hot(void **state)
{
    (void)state;
    const struct params p = {"1x1 hot path", 1, 1, 2, 0, BAND_CHAN_WAIT, 0, 9, 1};
    run_scenario(&p);
}

static void test_2x2_drop_newest(void **state)
{
    (void)state;
    const struct params p = {"2x2 drop-newest", 2, 2, 3, 0, BAND_CHAN_DROP_NEWEST, 1, 7, 0};
    run_scenario(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_3x3_mixed),        cmocka_unit_test(test_4x1_bytes),
        cmocka_unit_test(test_2x2_capacity_one), cmocka_unit_test(test_3x3_close_mid),
        cmocka_unit_test(test_1x4_close_mid),    cmocka_unit_test(test_3x2_drop_oldest),
        cmocka_unit_test(test_2x2_drop_newest),  cmocka_unit_test(test_2x2_hot),
        cmocka_unit_test(test_1x1_hot),
    };
    return cmocka_run_group_tests_name("stress_chan", tests, NULL, NULL);
}

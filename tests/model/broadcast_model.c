/* SPDX-License-Identifier: MIT */
/*
 * broadcast_model.c - the reference model of band_broadcast and the op interpreter that
 * compares it with the real thing (see broadcast_model.h).
 *
 * The model is written out from broadcast.h alone, without the per-slot reader counts of
 * the implementation:
 *
 *  - the ring is the window [tail, head) of message ids by sequence; each receiver is
 *    subscribed or not, with its next sequence, its lag counts and its receive count;
 *    queued sends and queued receives are two arrays in arrival order;
 *  - lossless: message s is retained while some subscribed receiver still has next <= s;
 *    tail moves over every message nobody is due to read (so a message sent with nobody
 *    subscribed leaves at once: sent_unheard); lossy: a send into a full ring drops the
 *    oldest (overwritten), and a receiver with next < tail has lagged by tail - next;
 *  - a send: ECLOSED after close; lossless with senders queued or the ring full: EAGAIN
 *    (try_send counts it in try_send_refusals; send turns it into ETIMEDOUT; send_async
 *    queues, send_queued); else the message is appended and handed to every queued
 *    receive whose receiver is at its sequence, in arrival order (one per receiver);
 *  - a receive: EINVAL when not subscribed; ELAGGED (the cursor moves to tail; lag_events,
 *    lagged, the receiver's last and total lag); 0 with the message at next (received),
 *    after which, lossless, freed slots go to queued sends in order, each of which is
 *    appended as above; then ECLOSED after close; else EAGAIN (recv: ETIMEDOUT;
 *    recv_async: queued, recv_queued);
 *  - subscribe: ECLOSED after close, EINVAL when subscribed, else next = head;
 *    unsubscribe: EINVAL when not subscribed, else its queued receives end with ECLOSED
 *    (recv_closed_fails), it stops holding messages, and freed slots go to queued sends;
 *  - close: queued sends and receives end with ECLOSED (send/recv_closed_fails);
 *  - cancel: a queued op leaves its queue (0, status = reason, no wake; *_timeouts for
 *    ETIMEDOUT, *_cancels otherwise) and frees nothing; EALREADY once completed; EINVAL
 *    when idle or for a reason other than BAND_ECANCELED or BAND_ETIMEDOUT;
 *  - destroy: EBUSY while a receiver is subscribed or an op is queued.
 *
 * Message bytes are a function of a 64-bit id; output buffers are filled with a sentinel,
 * which must survive every answer that copies nothing. Wakes are matched as they run
 * against the model's expected completions, per kind (send, receive) in order; the
 * interleaving of the two kinds within one call is not part of the contract. A nested call
 * made from a wake gets its own list. A blocking call with a short future deadline either
 * queues and times out or finds the deadline passed; the counters tell which.
 */
#include "broadcast_model.h"

#include "model_input.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/band.h"
#include "band/broadcast.h"
#include "prim/broadcast_internal.h"

#define NRX        4  /* receivers */
#define NSEND      6  /* async send ops */
#define NRECV      8  /* async receive ops */
#define MAXCAP     6  /* capacities 1..MAXCAP */
#define MAXE       24 /* the largest element size */
#define MAXEV      40 /* expected wakes per call */
#define MAXDEPTH   3  /* nested calls from wakes */
#define SENTINEL   0xEE
#define NOLAG      UINT64_C(0x5151515151515151)
#define SHORT_WAIT (100 * BAND_USEC)

enum op_state { ST_IDLE, ST_QUEUED, ST_DONE };
enum { K_SEND = 0, K_RECV = 1 };
/* What each wake of an operation does after its checks; WA_MIXED: each wake reads its own
 * action from the input. */
enum wake_action { WA_NONE, WA_STATS, WA_REPLY, WA_RESUBMIT, WA_TRY, WA_UNSUB, WA_CLOSE, WA_MIXED };

struct broadcast_model;

struct sslot {
    band_broadcast_send_op op; /* first */
    struct broadcast_model *m;
    int idx;
    enum op_state state;
    int status;
    uint64_t id;
    uint8_t elem[MAXE];
};

struct rslot {
    band_broadcast_recv_op op; /* first */
    struct broadcast_model *m;
    int idx;
    enum op_state state;
    int status;
    int rx;
    uint8_t out[MAXE];
};

struct rxref {
    int sub;
    uint64_t next, lagged_last, lagged_total, received;
};

struct ref {
    int mode, lossless;
    size_t esize;
    uint64_t cap;
    int closed;
    uint64_t head, tail;
    uint64_t ring[MAXCAP]; /* message ids, by sequence % cap */
    struct rxref rx[NRX];
    uint64_t nrx;
    int sq[NSEND], sqlen;
    int rq[NRECV], rqlen;
    uint64_t sent_unheard, overwritten, received, lag_events, lagged, try_send_refusals;
    uint64_t send_queued, send_timeouts, send_cancels, send_closed_fails;
    uint64_t recv_queued, recv_timeouts, recv_cancels, recv_closed_fails;
    uint64_t pumped;
};

struct wake_ev {
    int kind, idx, status;
    uint64_t id;
    int matched;
};

struct frame {
    struct wake_ev ev[MAXEV];
    int n;
};

struct broadcast_model {
    band_broadcast *b;
    struct ref r;
    band_broadcast_rx rx[NRX];
    struct sslot s[NSEND];
    struct rslot rv[NRECV];
    uint64_t next_id;
    struct model_input in;

    struct frame fr[MAXDEPTH];
    int depth;
    int action;

    band_time until;
    uint64_t opno;
    int trace;
    int failed;
    char err[1024];
    struct broadcast_model_counts counts;
};

/* ---------------------------------------------------------------------------------- */
/* failure reporting                                                                   */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(struct broadcast_model *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    m->failed = 1;
    int k = snprintf(m->err, sizeof(m->err),
                     "op #%llu (%s, capacity %llu, element %zu, window [%llu, %llu)): ",
                     (unsigned long long)m->opno, m->r.lossless ? "lossless" : "lossy",
                     (unsigned long long)m->r.cap, m->r.esize, (unsigned long long)m->r.tail,
                     (unsigned long long)m->r.head);
    if (k < 0 || (size_t)k >= sizeof(m->err))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + k, sizeof(m->err) - (size_t)k, fmt, ap);
    va_end(ap);
}

static void expect_int(struct broadcast_model *m, const char *what, int expected, int actual)
{
    if (expected != actual)
        fail(m, "%s: expected %d (%s), got %d (%s)", what, expected, band_err_name(expected),
             actual, band_err_name(actual));
}

static void expect_u64(struct broadcast_model *m, const char *what, uint64_t expected,
                       uint64_t actual)
{
    if (expected != actual)
        fail(m, "%s: expected %llu, got %llu", what, (unsigned long long)expected,
             (unsigned long long)actual);
}

static void count_rc(struct broadcast_model *m, int rc)
{
    switch (rc) {
    case BAND_EAGAIN:
        m->counts.eagain++;
        break;
    case BAND_ECLOSED:
        m->counts.eclosed++;
        break;
    case BAND_EINVAL:
        m->counts.einval++;
        break;
    case BAND_ELAGGED:
        m->counts.lags++;
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------------------------- */
/* messages                                                                            */

static uint8_t next_byte(struct broadcast_model *m)
{
    return model_input_byte(&m->in);
}

static uint8_t val_byte(uint64_t id, size_t k)
{
    uint64_t z = (id + 1) * UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)(k >> 3);
    z ^= z >> 29;
    z *= UINT64_C(0xBF58476D1CE4E5B9);
    z ^= z >> 32;
    return (uint8_t)(z >> ((k & 7) * 8));
}

static void fill(uint8_t *p, size_t n, uint64_t id)
{
    for (size_t k = 0; k < n; k++)
        p[k] = val_byte(id, k);
}

/* @buf holds message @id in its first elem_size bytes and the sentinel after them. */
static void expect_msg(struct broadcast_model *m, const char *what, const uint8_t *buf, uint64_t id)
{
    for (size_t k = 0; k < MAXE; k++) {
        uint8_t want = k < m->r.esize ? val_byte(id, k) : SENTINEL;
        if (buf[k] != want) {
            fail(m, "%s: byte %zu of message %llu is %u, expected %u", what, k,
                 (unsigned long long)id, buf[k], want);
            return;
        }
    }
}

static void expect_untouched(struct broadcast_model *m, const char *what, const uint8_t *buf)
{
    for (size_t k = 0; k < MAXE; k++) {
        if (buf[k] != SENTINEL) {
            fail(m, "%s: byte %zu of the buffer was written (%u)", what, k, buf[k]);
            return;
        }
    }
}

static uint64_t new_id(struct broadcast_model *m)
{
    return m->next_id++;
}

/* ---------------------------------------------------------------------------------- */
/* the reference model                                                                 */

static void exp_wake(struct broadcast_model *m, int kind, int idx, int status, uint64_t id)
{
    struct frame *f = &m->fr[m->depth];
    if (f->n >= MAXEV) {
        fail(m, "model: too many wakes expected");
        return;
    }
    f->ev[f->n++] = (struct wake_ev){kind, idx, status, id, 0};
}

static void sq_remove(struct ref *r, int pos)
{
    memmove(&r->sq[pos], &r->sq[pos + 1], (size_t)(r->sqlen - pos - 1) * sizeof(int));
    r->sqlen--;
}

static void rq_remove(struct ref *r, int pos)
{
    memmove(&r->rq[pos], &r->rq[pos + 1], (size_t)(r->rqlen - pos - 1) * sizeof(int));
    r->rqlen--;
}

static void complete_send(struct broadcast_model *m, int i, int status)
{
    m->s[i].state = ST_DONE;
    m->s[i].status = status;
    exp_wake(m, K_SEND, i, status, 0);
}

static void complete_recv(struct broadcast_model *m, int j, int status, uint64_t id)
{
    m->rv[j].state = ST_DONE;
    m->rv[j].status = status;
    exp_wake(m, K_RECV, j, status, id);
}

/* Subscribed receivers still due to read message @seq. */
static uint64_t due(const struct ref *r, uint64_t seq)
{
    uint64_t n = 0;
    for (int c = 0; c < NRX; c++)
        n += r->rx[c].sub && r->rx[c].next <= seq;
    return n;
}

/* Lossless: forget the oldest messages nobody is due to read. */
static void release(struct ref *r)
{
    if (!r->lossless)
        return;
    while (r->tail < r->head && due(r, r->tail) == 0)
        r->tail++;
}

/* Receiver @c reads message @seq. */
static uint64_t take(struct ref *r, int c, uint64_t seq)
{
    r->rx[c].next = seq + 1;
    r->rx[c].received++;
    r->received++;
    return r->ring[seq % r->cap];
}

/* Append message @id and hand it to the queued receives waiting for it. */
static void publish(struct broadcast_model *m, uint64_t id)
{
    struct ref *r = &m->r;
    uint64_t seq = r->head;
    if (r->head - r->tail == r->cap) {
        if (r->lossless) {
            fail(m, "model: append to a full lossless ring");
            return;
        }
        r->tail++;
        r->overwritten++;
        m->counts.overwritten++;
    }
    r->ring[seq % r->cap] = id;
    r->head++;
    if (r->nrx == 0) {
        r->sent_unheard++;
        m->counts.unheard++;
    }
    for (int k = 0; k < r->rqlen;) {
        int j = r->rq[k];
        int c = m->rv[j].rx;
        if (r->rx[c].next == seq) {
            rq_remove(r, k);
            complete_recv(m, j, 0, take(r, c, seq));
        } else {
            k++;
        }
    }
    release(r);
}

/* Lossless: free slots go to the queued sends, oldest first. */
static void pump(struct broadcast_model *m)
{
    struct ref *r = &m->r;
    if (!r->lossless)
        return;
    while (r->head - r->tail < r->cap && r->sqlen > 0 && !m->failed) {
        int i = r->sq[0];
        sq_remove(r, 0);
        r->pumped++;
        m->counts.pumped++;
        publish(m, m->s[i].id);
        complete_send(m, i, 0);
    }
}

/* A send of message @id that does not queue: 0, EAGAIN or ECLOSED. */
static int ref_send(struct broadcast_model *m, uint64_t id)
{
    struct ref *r = &m->r;
    if (r->closed)
        return BAND_ECLOSED;
    if (r->lossless && (r->sqlen > 0 || r->head - r->tail == r->cap))
        return BAND_EAGAIN;
    publish(m, id);
    return 0;
}

/* A receive on subscribed receiver @c that does not queue: 0 (*@id), ELAGGED (*@missed),
 * EAGAIN or ECLOSED. */
static int ref_read(struct broadcast_model *m, int c, uint64_t *id, uint64_t *missed)
{
    struct ref *r = &m->r;
    struct rxref *x = &r->rx[c];
    *missed = 0;
    if (x->next < r->tail) {
        uint64_t n = r->tail - x->next;
        x->next = r->tail;
        x->lagged_last = n;
        x->lagged_total += n;
        r->lag_events++;
        r->lagged += n;
        *missed = n;
        return BAND_ELAGGED;
    }
    if (x->next < r->head) {
        *id = take(r, c, x->next);
        m->counts.received++;
        release(r);
        pump(m);
        return 0;
    }
    return r->closed ? BAND_ECLOSED : BAND_EAGAIN;
}

static int ref_subscribe(struct broadcast_model *m, int c)
{
    struct ref *r = &m->r;
    if (r->closed)
        return BAND_ECLOSED;
    if (r->rx[c].sub)
        return BAND_EINVAL;
    r->rx[c] = (struct rxref){1, r->head, 0, 0, 0};
    r->nrx++;
    return 0;
}

static int ref_unsubscribe(struct broadcast_model *m, int c)
{
    struct ref *r = &m->r;
    if (!r->rx[c].sub)
        return BAND_EINVAL;
    for (int k = 0; k < r->rqlen;) {
        int j = r->rq[k];
        if (m->rv[j].rx == c) {
            rq_remove(r, k);
            r->recv_closed_fails++;
            complete_recv(m, j, BAND_ECLOSED, 0);
        } else {
            k++;
        }
    }
    r->rx[c].sub = 0;
    r->nrx--;
    release(r);
    pump(m);
    return 0;
}

static void ref_close(struct broadcast_model *m)
{
    struct ref *r = &m->r;
    if (r->closed)
        return;
    r->closed = 1;
    while (r->sqlen > 0) {
        int i = r->sq[0];
        sq_remove(r, 0);
        r->send_closed_fails++;
        complete_send(m, i, BAND_ECLOSED);
    }
    while (r->rqlen > 0) {
        int j = r->rq[0];
        rq_remove(r, 0);
        r->recv_closed_fails++;
        complete_recv(m, j, BAND_ECLOSED, 0);
    }
}

/* ---------------------------------------------------------------------------------- */
/* checks                                                                              */

static void compare_stats(struct broadcast_model *m, const char *where)
{
    band_broadcast_stats st;
    memset(&st, 0xa5, sizeof(st));
    int rc = band_broadcast_get_stats(m->b, &st);
    if (rc != 0) {
        fail(m, "%s: get_stats returned %d", where, rc);
        return;
    }
    const struct ref *r = &m->r;
    char what[96];
#define CMP(field, val)                                                                            \
    do {                                                                                           \
        snprintf(what, sizeof(what), "%s: stats." #field, where);                                  \
        expect_u64(m, what, (uint64_t)(val), (uint64_t)st.field);                                  \
    } while (0)
    CMP(mode, r->mode);
    CMP(closed, r->closed);
    CMP(elem_size, r->esize);
    CMP(capacity, r->cap);
    CMP(oldest_seq, r->tail);
    CMP(next_seq, r->head);
    CMP(retained, r->head - r->tail);
    CMP(receivers, r->nrx);
    CMP(waiting_senders, r->sqlen);
    CMP(waiting_receivers, r->rqlen);
    CMP(sent_unheard, r->sent_unheard);
    CMP(overwritten, r->overwritten);
    CMP(received, r->received);
    CMP(lag_events, r->lag_events);
    CMP(lagged, r->lagged);
    CMP(try_send_refusals, r->try_send_refusals);
    CMP(send_queued, r->send_queued);
    CMP(send_timeouts, r->send_timeouts);
    CMP(send_cancels, r->send_cancels);
    CMP(send_closed_fails, r->send_closed_fails);
    CMP(recv_queued, r->recv_queued);
    CMP(recv_timeouts, r->recv_timeouts);
    CMP(recv_cancels, r->recv_cancels);
    CMP(recv_closed_fails, r->recv_closed_fails);
#undef CMP
    if (st.send_wait_ns_max > st.send_wait_ns_total)
        fail(m, "%s: send_wait_ns_max above send_wait_ns_total", where);
    if (r->pumped == 0 && (st.send_wait_ns_total != 0 || st.send_wait_ns_max != 0))
        fail(m, "%s: send wait time without a queued send completing", where);
}

static void frame_reset(struct broadcast_model *m)
{
    m->fr[m->depth].n = 0;
}

static void frame_done(struct broadcast_model *m, const char *what)
{
    const struct frame *f = &m->fr[m->depth];
    for (int k = 0; k < f->n; k++) {
        if (!f->ev[k].matched) {
            fail(m, "%s: the wake of %s op %d (status %s) did not run", what,
                 f->ev[k].kind == K_SEND ? "send" : "recv", f->ev[k].idx,
                 band_err_name(f->ev[k].status));
            return;
        }
    }
}

static void check_after_op(struct broadcast_model *m, const char *what)
{
    if (m->failed)
        return;
    frame_done(m, what);
    const struct ref *r = &m->r;
    for (int i = 0; i < NSEND && !m->failed; i++) {
        const struct sslot *s = &m->s[i];
        int pending = band_waiter_is_pending(&s->op.w);
        if (pending != (s->state == ST_QUEUED))
            fail(m, "%s: send op %d pending=%d, model state %d", what, i, pending, s->state);
        else if (s->state != ST_QUEUED && band_waiter_status(&s->op.w) != s->status)
            fail(m, "%s: send op %d status %s, expected %s", what, i,
                 band_err_name(band_waiter_status(&s->op.w)), band_err_name(s->status));
    }
    int per_rx[NRX] = {0};
    for (int j = 0; j < NRECV && !m->failed; j++) {
        const struct rslot *s = &m->rv[j];
        int pending = band_waiter_is_pending(&s->op.w);
        if (pending != (s->state == ST_QUEUED))
            fail(m, "%s: recv op %d pending=%d, model state %d", what, j, pending, s->state);
        else if (s->state != ST_QUEUED && band_waiter_status(&s->op.w) != s->status)
            fail(m, "%s: recv op %d status %s, expected %s", what, j,
                 band_err_name(band_waiter_status(&s->op.w)), band_err_name(s->status));
        if (s->state == ST_QUEUED) {
            per_rx[s->rx]++;
            if (!r->rx[s->rx].sub || r->rx[s->rx].next != r->head)
                fail(m, "%s: model: recv op %d waits on a receiver that is behind", what, j);
        }
    }
    for (int c = 0; c < NRX && !m->failed; c++) {
        char w2[64];
        const struct rxref *x = &r->rx[c];
        snprintf(w2, sizeof(w2), "%s: rx_lagged(%d)", what, c);
        expect_u64(m, w2, x->sub ? x->lagged_last : 0, band_broadcast_rx_lagged(&m->rx[c]));
        snprintf(w2, sizeof(w2), "%s: rx_backlog(%d)", what, c);
        expect_u64(m, w2, x->sub ? r->head - x->next : 0, band_broadcast_rx_backlog(&m->rx[c]));
        if (per_rx[c] > 1)
            m->counts.shared++;
        if (x->sub && r->lossless && x->next < r->tail)
            fail(m, "%s: model: lossless receiver %d behind the tail", what, c);
    }
    if (r->sqlen > 0 && (!r->lossless || r->closed || r->head - r->tail != r->cap))
        fail(m, "%s: model: a send waits with room or after close", what);
    if (r->rqlen > 0 && r->closed)
        fail(m, "%s: model: a receive waits after close", what);
    expect_int(m, "is_closed()", r->closed, band_broadcast_is_closed(m->b));
    if (!m->failed)
        compare_stats(m, what);
    if (!m->failed) {
        int bad = band__broadcast_check(m->b);
        if (bad != 0)
            fail(m, "%s: band__broadcast_check failed at line %d", what, -bad);
    }
    if (r->sqlen > 0 && r->rqlen > 0)
        m->counts.both_waiting++;
}

/* ---------------------------------------------------------------------------------- */
/* operations (also called from wakes)                                                 */

static void do_try_send(struct broadcast_model *m, const char *what)
{
    uint64_t id = new_id(m);
    uint8_t e[MAXE];
    fill(e, sizeof(e), id);
    int rc = ref_send(m, id);
    if (rc == BAND_EAGAIN)
        m->r.try_send_refusals++;
    count_rc(m, rc);
    expect_int(m, what, rc, band_broadcast_try_send(m->b, e));
}

static void do_send_async(struct broadcast_model *m, struct sslot *s, const char *what)
{
    struct ref *r = &m->r;
    if (s->state == ST_QUEUED) {
        expect_int(m, what, BAND_EINVAL, band_broadcast_send_async(m->b, s->elem, &s->op));
        return;
    }
    s->id = new_id(m);
    fill(s->elem, sizeof(s->elem), s->id);
    int rc = ref_send(m, s->id);
    if (rc == BAND_EAGAIN) {
        rc = BAND_PENDING;
        s->state = ST_QUEUED;
        r->sq[r->sqlen++] = s->idx;
        r->send_queued++;
        m->counts.pending++;
    } else {
        s->state = ST_IDLE;
        s->status = rc;
    }
    count_rc(m, rc);
    expect_int(m, what, rc, band_broadcast_send_async(m->b, s->elem, &s->op));
}

static void do_try_recv(struct broadcast_model *m, int c, const char *what)
{
    uint8_t buf[MAXE];
    memset(buf, SENTINEL, sizeof(buf));
    uint64_t id = 0, missed = 0;
    int rc = m->r.rx[c].sub ? ref_read(m, c, &id, &missed) : BAND_EINVAL;
    count_rc(m, rc);
    expect_int(m, what, rc, band_broadcast_try_recv(&m->rx[c], buf));
    if (rc == 0)
        expect_msg(m, what, buf, id);
    else
        expect_untouched(m, what, buf);
}

static void do_recv_async(struct broadcast_model *m, struct rslot *s, const char *what)
{
    struct ref *r = &m->r;
    band_broadcast_rx *rx = &m->rx[s->rx];
    if (s->state == ST_QUEUED) {
        expect_int(m, what, BAND_EINVAL, band_broadcast_recv_async(rx, s->out, &s->op));
        return;
    }
    if (!r->rx[s->rx].sub) {
        int before = band_waiter_status(&s->op.w);
        uint64_t lag = s->op.lagged;
        expect_int(m, what, BAND_EINVAL, band_broadcast_recv_async(rx, s->out, &s->op));
        expect_int(m, "status after EINVAL (untouched)", before, band_waiter_status(&s->op.w));
        expect_u64(m, "lagged after EINVAL (untouched)", lag, s->op.lagged);
        return;
    }
    memset(s->out, SENTINEL, sizeof(s->out));
    s->op.lagged = NOLAG;
    uint64_t id = 0, missed = 0;
    int rc = ref_read(m, s->rx, &id, &missed);
    if (rc == BAND_EAGAIN) {
        rc = BAND_PENDING;
        s->state = ST_QUEUED;
        r->rq[r->rqlen++] = s->idx;
        r->recv_queued++;
        m->counts.pending++;
    } else {
        s->state = ST_IDLE;
        s->status = rc;
        if (rc == BAND_ELAGGED)
            m->counts.async_lags++;
    }
    count_rc(m, rc);
    expect_int(m, what, rc, band_broadcast_recv_async(rx, s->out, &s->op));
    if (rc == BAND_PENDING)
        return;
    expect_u64(m, "recv_async lagged", missed, s->op.lagged);
    if (rc == 0)
        expect_msg(m, what, s->out, id);
    else
        expect_untouched(m, what, s->out);
}

static void do_unsubscribe(struct broadcast_model *m, int c, const char *what)
{
    int rc = ref_unsubscribe(m, c);
    count_rc(m, rc);
    expect_int(m, what, rc, band_broadcast_unsubscribe(&m->rx[c]));
}

static void do_close(struct broadcast_model *m, const char *what)
{
    ref_close(m);
    expect_int(m, what, 0, band_broadcast_close(m->b));
}

/* ---------------------------------------------------------------------------------- */
/* wakes                                                                               */

static int decode_action(struct broadcast_model *m, int mixed);

static void nested_begin(struct broadcast_model *m)
{
    m->counts.reentrant++;
    m->depth++;
    frame_reset(m);
}

static void nested_end(struct broadcast_model *m, const char *what)
{
    frame_done(m, what);
    m->depth--;
}

/* @kind and @idx name the op whose wake this is; its receiver (a send's: idx % NRX). */
static void wake_action(struct broadcast_model *m, int kind, int idx)
{
    int action = m->action == WA_MIXED ? decode_action(m, 0) : m->action;
    int c = kind == K_RECV ? m->rv[idx].rx : idx % NRX;
    switch (action) {
    case WA_STATS:
        m->counts.reentrant++;
        compare_stats(m, "inside a wake");
        break;
    case WA_REPLY:
        m->counts.replies++;
        nested_begin(m);
        do_try_send(m, "try_send inside a wake");
        nested_end(m, "try_send inside a wake");
        break;
    case WA_RESUBMIT:
        m->counts.resubmits++;
        nested_begin(m);
        if (kind == K_RECV)
            do_recv_async(m, &m->rv[idx], "recv_async inside its wake");
        else
            do_send_async(m, &m->s[idx], "send_async inside its wake");
        nested_end(m, "resubmit inside its wake");
        break;
    case WA_TRY:
        nested_begin(m);
        do_try_recv(m, c, "try_recv inside a wake");
        nested_end(m, "try_recv inside a wake");
        break;
    case WA_UNSUB:
        nested_begin(m);
        do_unsubscribe(m, c, "unsubscribe inside a wake");
        nested_end(m, "unsubscribe inside a wake");
        break;
    case WA_CLOSE:
        nested_begin(m);
        do_close(m, "close inside a wake");
        nested_end(m, "close inside a wake");
        break;
    default:
        break;
    }
}

/* Match a wake against the first unmatched expected one of its kind. */
static const struct wake_ev *match_wake(struct broadcast_model *m, int kind, int idx,
                                        band_waiter *w)
{
    int st = band_waiter_status(w);
    m->counts.wakes++;
    if (m->failed)
        return NULL;
    if (band_waiter_is_pending(w))
        fail(m, "%s op %d pending inside its wake", kind == K_SEND ? "send" : "recv", idx);
    struct frame *f = &m->fr[m->depth];
    int k = 0;
    while (k < f->n && (f->ev[k].matched || f->ev[k].kind != kind))
        k++;
    if (k == f->n) {
        fail(m, "unexpected wake of %s op %d (status %s)", kind == K_SEND ? "send" : "recv", idx,
             band_err_name(st));
        return NULL;
    }
    struct wake_ev *e = &f->ev[k];
    e->matched = 1;
    if (e->idx != idx || e->status != st) {
        fail(m, "%s wake: expected op %d status %s, got op %d status %s",
             kind == K_SEND ? "send" : "recv", e->idx, band_err_name(e->status), idx,
             band_err_name(st));
        return NULL;
    }
    if (st == BAND_ECLOSED)
        m->counts.closed_wakes++;
    else if (st == 0 && kind == K_SEND)
        m->counts.send_wakes_ok++;
    else if (st == 0)
        m->counts.recv_wakes_ok++;
    return e;
}

static void send_wake(band_waiter *w)
{
    struct sslot *s = (struct sslot *)(void *)w;
    struct broadcast_model *m = s->m;
    const struct wake_ev *e = match_wake(m, K_SEND, s->idx, w);
    if (e == NULL || m->failed)
        return;
    if (m->depth == 0)
        wake_action(m, K_SEND, s->idx);
}

static void recv_wake(band_waiter *w)
{
    struct rslot *s = (struct rslot *)(void *)w;
    struct broadcast_model *m = s->m;
    const struct wake_ev *e = match_wake(m, K_RECV, s->idx, w);
    if (e == NULL || m->failed)
        return;
    expect_u64(m, "lagged in a wake", 0, s->op.lagged);
    if (e->status == 0)
        expect_msg(m, "message in a wake", s->out, e->id);
    else
        expect_untouched(m, "buffer of a failed receive", s->out);
    if (m->depth == 0 && !m->failed)
        wake_action(m, K_RECV, s->idx);
}

/* ---------------------------------------------------------------------------------- */
/* operations                                                                          */

static void op_send(struct broadcast_model *m)
{
    uint8_t b = next_byte(m);
    int mode = b & 3;
    struct ref *r = &m->r;
    uint64_t id = new_id(m);
    uint8_t e[MAXE];
    fill(e, sizeof(e), id);
    int rc = ref_send(m, id);
    band_time deadline;
    int future = 0;
    if (mode == 0) {
        deadline = 0;
    } else if (mode == 1) {
        deadline = band_now() - 1;
    } else if (mode == 2 || rc == BAND_EAGAIN) {
        deadline = band_now() + SHORT_WAIT;
        future = 1;
    } else {
        deadline = BAND_FOREVER; /* answered at once: never waits */
    }
    if (rc == BAND_EAGAIN)
        rc = BAND_ETIMEDOUT;
    uint64_t q0 = r->send_queued, t0 = r->send_timeouts;
    count_rc(m, rc);
    int got = band_broadcast_send(m->b, e, deadline, NULL);
    if (rc == BAND_ETIMEDOUT && future) {
        /* Queued and timed out, or found the deadline passed: the counters tell. */
        band_broadcast_stats st;
        if (band_broadcast_get_stats(m->b, &st) == 0 && st.send_queued == q0 + 1 &&
            st.send_timeouts == t0 + 1) {
            r->send_queued++;
            r->send_timeouts++;
            m->counts.timed_queued++;
        }
    }
    expect_int(m, "send", rc, got);
}

static void op_send_async(struct broadcast_model *m)
{
    do_send_async(m, &m->s[next_byte(m) % NSEND], "send_async");
}

static void op_try_recv(struct broadcast_model *m)
{
    do_try_recv(m, next_byte(m) % NRX, "try_recv");
}

static void op_recv(struct broadcast_model *m)
{
    uint8_t b = next_byte(m);
    int c = b % NRX;
    int mode = (b >> 2) & 3;
    struct ref *r = &m->r;
    uint8_t buf[MAXE];
    memset(buf, SENTINEL, sizeof(buf));
    uint64_t id = 0, missed = 0;
    int rc = r->rx[c].sub ? ref_read(m, c, &id, &missed) : BAND_EINVAL;
    band_time deadline;
    int future = 0;
    if (mode == 0) {
        deadline = 0;
    } else if (mode == 1) {
        deadline = band_now() - 1;
    } else if (mode == 2 || rc == BAND_EAGAIN) {
        deadline = band_now() + SHORT_WAIT;
        future = 1;
    } else {
        deadline = BAND_FOREVER; /* answered at once: never waits */
    }
    if (rc == BAND_EAGAIN)
        rc = BAND_ETIMEDOUT;
    uint64_t q0 = r->recv_queued, t0 = r->recv_timeouts;
    count_rc(m, rc);
    int got = band_broadcast_recv(&m->rx[c], buf, deadline, NULL);
    if (rc == BAND_ETIMEDOUT && future) {
        band_broadcast_stats st;
        if (band_broadcast_get_stats(m->b, &st) == 0 && st.recv_queued == q0 + 1 &&
            st.recv_timeouts == t0 + 1) {
            r->recv_queued++;
            r->recv_timeouts++;
            m->counts.timed_queued++;
        }
    }
    expect_int(m, "recv", rc, got);
    if (rc == 0)
        expect_msg(m, "recv", buf, id);
    else
        expect_untouched(m, "recv", buf);
}

static void op_recv_async(struct broadcast_model *m)
{
    uint8_t b = next_byte(m);
    struct rslot *s = &m->rv[b % NRECV];
    if (s->state != ST_QUEUED)
        s->rx = (b >> 3) % NRX;
    do_recv_async(m, s, "recv_async");
}

static int read_reason(struct broadcast_model *m)
{
    uint8_t b = next_byte(m);
    switch (b % 8) {
    case 0:
    case 1:
    case 2:
        return BAND_ECANCELED;
    case 3:
    case 4:
        return BAND_ETIMEDOUT;
    case 5:
        return BAND_ECLOSED; /* any other negative code: counted as a cancel */
    case 6:
        return 0; /* not a failure code: EINVAL */
    default:
        return 9;
    }
}

/* The answer a cancel of an op in @state gets; a queued op is withdrawn by the caller. */
static int cancel_rc(struct broadcast_model *m, enum op_state state, int reason)
{
    if (reason != BAND_ECANCELED && reason != BAND_ETIMEDOUT)
        return BAND_EINVAL;
    if (state == ST_QUEUED) {
        m->counts.cancels_ok++;
        return 0;
    }
    if (state == ST_DONE) {
        m->counts.ealready++;
        return BAND_EALREADY;
    }
    return BAND_EINVAL;
}

static void op_cancel_send(struct broadcast_model *m)
{
    struct sslot *s = &m->s[next_byte(m) % NSEND];
    int reason = read_reason(m);
    struct ref *r = &m->r;
    int rc = cancel_rc(m, s->state, reason);
    if (rc == 0) {
        int pos = 0;
        while (r->sq[pos] != s->idx)
            pos++;
        sq_remove(r, pos);
        s->state = ST_IDLE;
        s->status = reason;
        if (reason == BAND_ETIMEDOUT)
            r->send_timeouts++;
        else
            r->send_cancels++;
    }
    count_rc(m, rc);
    expect_int(m, "cancel(send)", rc, band_waiter_cancel(&s->op.w, reason));
}

static void op_cancel_recv(struct broadcast_model *m)
{
    struct rslot *s = &m->rv[next_byte(m) % NRECV];
    int reason = read_reason(m);
    struct ref *r = &m->r;
    int rc = cancel_rc(m, s->state, reason);
    if (rc == 0) {
        int pos = 0;
        while (r->rq[pos] != s->idx)
            pos++;
        rq_remove(r, pos);
        s->state = ST_IDLE;
        s->status = reason;
        if (reason == BAND_ETIMEDOUT)
            r->recv_timeouts++;
        else
            r->recv_cancels++;
    }
    count_rc(m, rc);
    expect_int(m, "cancel(recv)", rc, band_waiter_cancel(&s->op.w, reason));
    if (rc == 0) {
        expect_untouched(m, "buffer of a cancelled receive", s->out);
        expect_u64(m, "lagged of a cancelled receive", 0, s->op.lagged);
    }
}

static void op_subscribe(struct broadcast_model *m)
{
    int c = next_byte(m) % NRX;
    int rc = ref_subscribe(m, c);
    count_rc(m, rc);
    expect_int(m, "subscribe", rc, band_broadcast_subscribe(m->b, &m->rx[c]));
}

static void op_unsubscribe(struct broadcast_model *m)
{
    do_unsubscribe(m, next_byte(m) % NRX, "unsubscribe");
}

static void op_destroy_busy(struct broadcast_model *m)
{
    const struct ref *r = &m->r;
    if (r->nrx == 0 && r->sqlen == 0 && r->rqlen == 0)
        return; /* not busy: destroy would succeed; recreate covers that */
    expect_int(m, "destroy(busy)", BAND_EBUSY, band_broadcast_destroy(m->b));
}

static void wake_null(band_waiter *w)
{
    (void)w;
}

/* A subscribed receiver, or -1. */
static int some_subscribed(const struct broadcast_model *m)
{
    for (int c = 0; c < NRX; c++)
        if (m->r.rx[c].sub)
            return c;
    return -1;
}

static void op_misuse(struct broadcast_model *m)
{
    uint8_t e[MAXE], buf[MAXE];
    fill(e, sizeof(e), 0);
    memset(buf, SENTINEL, sizeof(buf));
    band_broadcast_send_op sop;
    band_broadcast_recv_op rop;
    band_waiter_init(&sop.w, wake_null, NULL);
    band_waiter_init(&rop.w, wake_null, NULL);
    band_broadcast_rx tmp;
    band_broadcast_rx_init(&tmp);
    band_broadcast_stats st;
    band_broadcast *p = (band_broadcast *)(void *)&sop; /* a marker: must stay unchanged */
    int c = some_subscribed(m);
    band_broadcast_rx *sub = c >= 0 ? &m->rx[c] : &tmp;
    int mode = m->r.mode;
    uint8_t which = next_byte(m) % 24;
    switch (which) {
    case 0:
        expect_int(m, "create(NULL)", BAND_EINVAL, band_broadcast_create(NULL, 8, 4, mode));
        break;
    case 1:
        expect_int(m, "create(elem 0)", BAND_EINVAL, band_broadcast_create(&p, 0, 4, mode));
        break;
    case 2:
        expect_int(m, "create(capacity 0)", BAND_EINVAL, band_broadcast_create(&p, 8, 0, mode));
        break;
    case 3:
        expect_int(m, "create(capacity above max)", BAND_EINVAL,
                   band_broadcast_create(&p, 1, BAND_BROADCAST_MAX_CAPACITY + 1, mode));
        break;
    case 4:
        expect_int(m, "create(size overflow)", BAND_EINVAL,
                   band_broadcast_create(&p, SIZE_MAX / 2, 3, mode));
        break;
    case 5:
        expect_int(m, "create(mode 0)", BAND_EINVAL, band_broadcast_create(&p, 8, 4, 0));
        expect_int(m, "create(mode 3)", BAND_EINVAL, band_broadcast_create(&p, 8, 4, 3));
        break;
    case 6:
        expect_int(m, "destroy(NULL)", 0, band_broadcast_destroy(NULL));
        break;
    case 7:
        expect_int(m, "subscribe(NULL)", BAND_EINVAL, band_broadcast_subscribe(NULL, &tmp));
        expect_int(m, "subscribe(rx NULL)", BAND_EINVAL, band_broadcast_subscribe(m->b, NULL));
        break;
    case 8:
        expect_int(m, "unsubscribe(NULL)", BAND_EINVAL, band_broadcast_unsubscribe(NULL));
        expect_int(m, "unsubscribe(not subscribed)", BAND_EINVAL, band_broadcast_unsubscribe(&tmp));
        break;
    case 9:
        expect_int(m, "try_send(NULL)", BAND_EINVAL, band_broadcast_try_send(NULL, e));
        expect_int(m, "try_send(elem NULL)", BAND_EINVAL, band_broadcast_try_send(m->b, NULL));
        break;
    case 10:
        expect_int(m, "send(NULL)", BAND_EINVAL, band_broadcast_send(NULL, e, 0, NULL));
        expect_int(m, "send(elem NULL)", BAND_EINVAL, band_broadcast_send(m->b, NULL, 0, NULL));
        break;
    case 11:
        expect_int(m, "send_async(NULL)", BAND_EINVAL, band_broadcast_send_async(NULL, e, &sop));
        expect_int(m, "send_async(op NULL)", BAND_EINVAL, band_broadcast_send_async(m->b, e, NULL));
        expect_int(m, "send_async(elem NULL)", BAND_EINVAL,
                   band_broadcast_send_async(m->b, NULL, &sop));
        break;
    case 12:
        expect_int(m, "try_recv(NULL)", BAND_EINVAL, band_broadcast_try_recv(NULL, buf));
        expect_int(m, "try_recv(out NULL)", BAND_EINVAL, band_broadcast_try_recv(sub, NULL));
        expect_int(m, "try_recv(not subscribed)", BAND_EINVAL, band_broadcast_try_recv(&tmp, buf));
        break;
    case 13:
        expect_int(m, "recv(NULL)", BAND_EINVAL, band_broadcast_recv(NULL, buf, 0, NULL));
        expect_int(m, "recv(out NULL)", BAND_EINVAL, band_broadcast_recv(sub, NULL, 0, NULL));
        expect_int(m, "recv(not subscribed)", BAND_EINVAL,
                   band_broadcast_recv(&tmp, buf, BAND_FOREVER, NULL));
        break;
    case 14:
        expect_int(m, "recv_async(NULL)", BAND_EINVAL, band_broadcast_recv_async(NULL, buf, &rop));
        expect_int(m, "recv_async(op NULL)", BAND_EINVAL,
                   band_broadcast_recv_async(sub, buf, NULL));
        expect_int(m, "recv_async(out NULL)", BAND_EINVAL,
                   band_broadcast_recv_async(sub, NULL, &rop));
        break;
    case 15:
        /* No wake function: EINVAL, the op untouched, nothing read. */
        band_waiter_init(&rop.w, NULL, NULL);
        rop.lagged = NOLAG;
        expect_int(m, "recv_async(no wake)", BAND_EINVAL,
                   band_broadcast_recv_async(sub, buf, &rop));
        expect_u64(m, "recv_async(no wake) lagged", NOLAG, rop.lagged);
        expect_int(m, "recv_async(no wake) status", 0, band_waiter_status(&rop.w));
        break;
    case 16:
        band_waiter_init(&sop.w, NULL, NULL);
        expect_int(m, "send_async(no wake)", BAND_EINVAL, band_broadcast_send_async(m->b, e, &sop));
        expect_int(m, "send_async(no wake) status", 0, band_waiter_status(&sop.w));
        break;
    case 17:
        expect_u64(m, "rx_lagged(NULL)", 0, band_broadcast_rx_lagged(NULL));
        expect_u64(m, "rx_backlog(NULL)", 0, band_broadcast_rx_backlog(NULL));
        expect_u64(m, "rx_lagged(not subscribed)", 0, band_broadcast_rx_lagged(&tmp));
        expect_u64(m, "rx_backlog(not subscribed)", 0, band_broadcast_rx_backlog(&tmp));
        expect_int(m, "is_closed(NULL)", 0, band_broadcast_is_closed(NULL));
        break;
    case 18:
        expect_int(m, "get_stats(NULL)", BAND_EINVAL, band_broadcast_get_stats(NULL, &st));
        expect_int(m, "get_stats(out NULL)", BAND_EINVAL, band_broadcast_get_stats(m->b, NULL));
        expect_int(m, "close(NULL)", BAND_EINVAL, band_broadcast_close(NULL));
        break;
    default: {
        /* A second broadcast: a receiver subscribed here cannot join it; a fresh one can,
         * and the second one is busy until it leaves. */
        band_broadcast *b2 = NULL;
        int rc = band_broadcast_create(&b2, 8, 2, BAND_BROADCAST_LOSSLESS);
        expect_int(m, "create(second)", 0, rc);
        if (rc != 0)
            break;
        if (c >= 0)
            expect_int(m, "subscribe(subscribed elsewhere)", BAND_EINVAL,
                       band_broadcast_subscribe(b2, &m->rx[c]));
        expect_int(m, "subscribe(second)", 0, band_broadcast_subscribe(b2, &tmp));
        expect_int(m, "subscribe(twice)", BAND_EINVAL, band_broadcast_subscribe(b2, &tmp));
        expect_int(m, "try_send(second)", 0, band_broadcast_try_send(b2, e));
        expect_u64(m, "rx_backlog(second)", 1, band_broadcast_rx_backlog(&tmp));
        expect_int(m, "destroy(second, subscribed)", BAND_EBUSY, band_broadcast_destroy(b2));
        expect_int(m, "unsubscribe(second)", 0, band_broadcast_unsubscribe(&tmp));
        expect_int(m, "destroy(second)", 0, band_broadcast_destroy(b2));
        break;
    }
    }
    if (p != (band_broadcast *)(void *)&sop)
        fail(m, "misuse: a failed create changed *out");
    expect_untouched(m, "misuse", buf);
}

/* ---------------------------------------------------------------------------------- */
/* broadcast lifetime                                                                  */

static int create_broadcast(struct broadcast_model *m)
{
    static const size_t sizes[4] = {1, 8, MAXE, 3};
    struct ref *r = &m->r;
    memset(r, 0, sizeof(*r));
    uint8_t a = next_byte(m);
    r->lossless = a & 1;
    r->mode = r->lossless ? BAND_BROADCAST_LOSSLESS : BAND_BROADCAST_LOSSY;
    r->cap = 1 + (uint64_t)((a >> 1) % MAXCAP);
    r->esize = sizes[(a >> 5) & 3];
    int rc = band_broadcast_create(&m->b, r->esize, r->cap, r->mode);
    if (rc != 0) {
        m->b = NULL;
        fail(m, "create: %s", band_err_name(rc));
        return -1;
    }
    if (r->lossless)
        m->counts.lossless++;
    else
        m->counts.lossy++;
    /* Three receivers start subscribed. */
    for (int c = 0; c < NRX; c++) {
        band_broadcast_rx_init(&m->rx[c]);
        if (c < 3) {
            ref_subscribe(m, c);
            expect_int(m, "subscribe (create)", 0, band_broadcast_subscribe(m->b, &m->rx[c]));
        }
    }
    return m->failed ? -1 : 0;
}

/* Close (every op ends), unsubscribe everyone, destroy. */
static void finish_broadcast(struct broadcast_model *m, const char *why)
{
    if (m->b == NULL || m->failed)
        return;
    m->action = WA_NONE;
    m->depth = 0;
    frame_reset(m);
    do_close(m, "close (finish)");
    check_after_op(m, why);
    for (int c = 0; c < NRX && !m->failed; c++) {
        if (!m->r.rx[c].sub)
            continue;
        frame_reset(m);
        do_unsubscribe(m, c, "unsubscribe (finish)");
        check_after_op(m, why);
    }
    for (int i = 0; i < NSEND; i++)
        if (band_waiter_is_pending(&m->s[i].op.w))
            fail(m, "%s: send op %d still pending", why, i);
    for (int j = 0; j < NRECV; j++)
        if (band_waiter_is_pending(&m->rv[j].op.w))
            fail(m, "%s: recv op %d still pending", why, j);
    if (m->failed)
        return;
    expect_int(m, "destroy", 0, band_broadcast_destroy(m->b));
    m->b = NULL;
}

static void op_recreate(struct broadcast_model *m)
{
    finish_broadcast(m, "recreate");
    if (!m->failed)
        create_broadcast(m);
}

/* ---------------------------------------------------------------------------------- */
/* the interpreter                                                                     */

static const char *const op_names[BM_OP_COUNT] = {
    "try_send",   "send",          "send_async",   "try_recv",  "recv",
    "recv_async", "cancel(send)",  "cancel(recv)", "subscribe", "unsubscribe",
    "close",      "destroy(busy)", "misuse",       "recreate",
};

static enum broadcast_model_op decode_op(struct broadcast_model *m)
{
    uint8_t b = next_byte(m);
    if (b < 30)
        return BM_OP_TRY_SEND;
    if (b < 42)
        return BM_OP_SEND;
    if (b < 72)
        return BM_OP_SEND_ASYNC;
    if (b < 102)
        return BM_OP_TRY_RECV;
    if (b < 114)
        return BM_OP_RECV;
    if (b < 150)
        return BM_OP_RECV_ASYNC;
    if (b < 165)
        return BM_OP_CANCEL_SEND;
    if (b < 180)
        return BM_OP_CANCEL_RECV;
    if (b < 202)
        return BM_OP_SUBSCRIBE;
    if (b < 216)
        return BM_OP_UNSUBSCRIBE;
    if (b < 218)
        return BM_OP_CLOSE;
    if (b < 224)
        return BM_OP_DESTROY_BUSY;
    if (b < 234)
        return BM_OP_MISUSE;
    if (b < 243)
        return BM_OP_RECREATE;
    return BM_OP_TRY_RECV;
}

static int decode_action(struct broadcast_model *m, int mixed)
{
    uint8_t b = next_byte(m);
    if (b < 40 && mixed)
        return WA_MIXED;
    if (b < 120)
        return WA_NONE;
    if (b < 145)
        return WA_STATS;
    if (b < 175)
        return WA_REPLY;
    if (b < 210)
        return WA_RESUBMIT;
    if (b < 235)
        return WA_TRY;
    if (b < 250)
        return WA_UNSUB;
    return WA_CLOSE;
}

static void step(struct broadcast_model *m)
{
    enum broadcast_model_op op = decode_op(m);
    m->opno++;
    m->counts.ops[op]++;
    m->depth = 0;
    frame_reset(m);
    m->action = decode_action(m, 1);
    switch (op) {
    case BM_OP_TRY_SEND:
        do_try_send(m, "try_send");
        break;
    case BM_OP_SEND:
        op_send(m);
        break;
    case BM_OP_SEND_ASYNC:
        op_send_async(m);
        break;
    case BM_OP_TRY_RECV:
        op_try_recv(m);
        break;
    case BM_OP_RECV:
        op_recv(m);
        break;
    case BM_OP_RECV_ASYNC:
        op_recv_async(m);
        break;
    case BM_OP_CANCEL_SEND:
        op_cancel_send(m);
        break;
    case BM_OP_CANCEL_RECV:
        op_cancel_recv(m);
        break;
    case BM_OP_SUBSCRIBE:
        op_subscribe(m);
        break;
    case BM_OP_UNSUBSCRIBE:
        op_unsubscribe(m);
        break;
    case BM_OP_CLOSE:
        do_close(m, "close");
        break;
    case BM_OP_DESTROY_BUSY:
        op_destroy_busy(m);
        break;
    case BM_OP_MISUSE:
        op_misuse(m);
        break;
    case BM_OP_RECREATE:
        op_recreate(m);
        break;
    case BM_OP_COUNT:
        break;
    }
    if (op != BM_OP_RECREATE)
        check_after_op(m, op_names[op]);
    if (m->trace) {
        const struct ref *r = &m->r;
        fprintf(stderr,
                "#%llu %-13s action=%d | %s cap=%llu [%llu,%llu) sq=%d rq=%d closed=%d next=",
                (unsigned long long)m->opno, op_names[op], m->action,
                r->lossless ? "lossless" : "lossy", (unsigned long long)r->cap,
                (unsigned long long)r->tail, (unsigned long long)r->head, r->sqlen, r->rqlen,
                r->closed);
        for (int c = 0; c < NRX; c++) {
            if (r->rx[c].sub)
                fprintf(stderr, "%llu ", (unsigned long long)r->rx[c].next);
            else
                fprintf(stderr, "- ");
        }
        fprintf(stderr, "%s\n", m->failed ? "MISMATCH" : "");
    }
}

static void reset_ops(struct broadcast_model *m)
{
    for (int i = 0; i < NSEND; i++) {
        struct sslot *s = &m->s[i];
        band_waiter_init(&s->op.w, send_wake, s);
        s->m = m;
        s->idx = i;
        s->state = ST_IDLE;
        s->status = 0;
        s->id = 0;
    }
    for (int j = 0; j < NRECV; j++) {
        struct rslot *s = &m->rv[j];
        band_waiter_init(&s->op.w, recv_wake, s);
        s->op.lagged = NOLAG;
        s->m = m;
        s->idx = j;
        s->state = ST_IDLE;
        s->status = 0;
        s->rx = 0;
        memset(s->out, SENTINEL, sizeof(s->out));
    }
}

struct broadcast_model *broadcast_model_new(void)
{
    struct broadcast_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    reset_ops(m);
    const char *t = getenv("BROADCAST_MODEL_TRACE");
    m->trace = t != NULL && *t != '\0' && *t != '0';
    return m;
}

/* After a mismatch: get rid of the broadcast whatever state it is in. */
static void teardown(struct broadcast_model *m)
{
    if (m->b == NULL)
        return;
    m->action = WA_NONE;
    m->failed = 1; /* wakes from here on only count */
    (void)band_broadcast_close(m->b);
    for (int j = 0; j < NRECV; j++)
        (void)band_waiter_cancel(&m->rv[j].op.w, BAND_ECANCELED);
    for (int i = 0; i < NSEND; i++)
        (void)band_waiter_cancel(&m->s[i].op.w, BAND_ECANCELED);
    for (int c = 0; c < NRX; c++)
        (void)band_broadcast_unsubscribe(&m->rx[c]);
    (void)band_broadcast_destroy(m->b);
    m->b = NULL;
}

void broadcast_model_free(struct broadcast_model *m)
{
    if (m == NULL)
        return;
    teardown(m);
    free(m);
}

static int run(struct broadcast_model *m, uint64_t max_ops)
{
    teardown(m);
    m->failed = 0;
    m->err[0] = '\0';
    m->opno = 0;
    m->depth = 0;
    reset_ops(m);
    if (create_broadcast(m) != 0) {
        teardown(m);
        return -1;
    }
    for (uint64_t i = 0; i < max_ops && !m->failed; i++) {
        if (model_input_done(&m->in))
            break;
        if (m->until != 0 && (i & 255) == 255 && band_now() > m->until)
            break;
        step(m);
        if (m->b == NULL && !m->failed)
            fail(m, "no broadcast after an op");
    }
    if (!m->failed)
        finish_broadcast(m, "final");
    if (m->failed) {
        teardown(m);
        return -1;
    }
    return 0;
}

int broadcast_model_run_bytes(struct broadcast_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    m->until = 0;
    return run(m, UINT64_MAX);
}

int broadcast_model_run_seed(struct broadcast_model *m, uint64_t seed, uint64_t ops,
                             band_time until)
{
    model_input_seed(&m->in, seed);
    m->until = until;
    return run(m, ops);
}

const char *broadcast_model_error(const struct broadcast_model *m)
{
    return m->err;
}

const struct broadcast_model_counts *broadcast_model_counts(const struct broadcast_model *m)
{
    return &m->counts;
}

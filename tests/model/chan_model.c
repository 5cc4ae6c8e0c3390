/* SPDX-License-Identifier: MIT */
/*
 * chan_model.c - the reference model of band_chan and the op interpreter that compares it
 * with the real thing (see chan_model.h).
 *
 * The model is deliberately naive, written out the long way from chan.h and core.h:
 *
 *  - checks in the order EINVAL (drop policy vs. send/reserve, waiting channel vs. offer,
 *    pending op resubmitted), E2BIG (bytes above a byte capacity; refused_too_big),
 *    ECLOSED (refused_closed), then 0 / EAGAIN (refused_full) / PENDING;
 *  - room(b) = len + reserved < capacity && (no byte bound || bytes + reserved bytes + b
 *    <= byte capacity): a slot is used from reservation until its element is received;
 *  - while any send or reserve op waits, try_send / try_reserve are refused and new ops
 *    queue behind it; freed room goes to the waiting ops in order (a head that does not
 *    fit holds back the rest);
 *  - a send that finds a receiver waiting hands its element to the head receiver (no slot
 *    used; counts as sent and received); so does a waiting send op at the head of the
 *    sender queue as soon as a receiver waits;
 *  - a receive (any kind) that finds nothing queued and no receiver ahead while a send op
 *    waits at the head of the sender queue (reservations hold the room) takes that op's
 *    element; recv_async then completes at once (0, no wake: submitting never calls the
 *    submitter's wake, core.h rule 1); a reserve op at the head holds the rest back;
 *  - filling a reservation while a receiver waits hands the element over and frees the
 *    slot, so waiting ops are served;
 *  - close fails every waiting send/reserve op (ECLOSED, counted in refused_closed);
 *    receivers then see ECLOSED once nothing is queued and no reservation is held;
 *  - offer: room -> queued; full -> drop-newest hands the new element back, drop-oldest
 *    evicts the oldest (if that makes room for the bytes; else EAGAIN, refused_full);
 *  - cancel of a queued send op removes it (0, status = reason, no wake) and, if it was the
 *    head, serves the ops behind it; a completed op answers EALREADY, an idle one EINVAL;
 *  - destroy: EBUSY while ops wait or reservations are held; else the drop function runs
 *    once per queued element.
 *
 * Wakes are compared per kind (send/reserve ops, receive ops) in order, with status and,
 * for receives, the element and its bytes; the interleaving of the two kinds within one
 * operation is not part of the contract.
 */
#include "chan_model.h"

#include "model_input.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/band.h"
#include "band/chan.h"

#define NSEND   8  /* async send/reserve ops */
#define NRECV   6  /* async receive ops */
#define NHELD   4  /* reservations the driver holds */
#define MAXCAP  6  /* channel capacities 1..MAXCAP */
#define MAXEV   32 /* wakes per operation */
#define NOVALUE UINT64_MAX

enum op_state { ST_IDLE, ST_QUEUED, ST_DONE };
enum { K_SEND = 0, K_RESERVE = 1 };

struct chan_model;

struct sslot { /* an async send or reserve op */
    union {
        band_chan_send_op op;     /* first: sends */
        band_chan_reserve_op rsv; /* reservations: the same waiter */
    };
    struct chan_model *m;
    int idx;
    enum op_state state;
    int status;
    int kind;
    uint64_t val, bytes;
    int to_adopt; /* a reserve op granted by a wake: the driver adopts its reservation */
};

struct rslot {            /* an async receive op */
    band_chan_recv_op op; /* first */
    struct chan_model *m;
    int idx;
    enum op_state state;
    int status;
    uint64_t out;
};

struct qelem {
    uint64_t val, bytes;
};

struct ref {
    uint64_t cap, bytecap;
    int overflow;
    int counting;
    uint64_t nsenders;
    int closed;
    struct qelem q[MAXCAP];
    int qlen;
    uint64_t qbytes;
    uint64_t reserved, rbytes;
    int sq[NSEND]; /* waiting send/reserve ops, arrival order */
    int sqlen;
    int rq[NRECV]; /* waiting receive ops */
    int rqlen;
    uint64_t sent, received, refused_full, refused_closed, refused_too_big, dropped;
};

struct wake_ev {
    int kind; /* 0: send op, 1: receive op */
    int idx;
    int status;
    uint64_t val, bytes; /* receives with status 0 */
};

struct chan_model {
    band_chan *c;
    struct ref r;
    struct sslot s[NSEND];
    struct rslot rv[NRECV];
    band_chan_slot held[NHELD];
    uint64_t next_val;

    /* the drop function's log, for destroy */
    uint64_t drop_vals[MAXCAP];
    int ndrops;

    /* input */
    struct model_input in; /* where the operations come from */

    /* wakes of the current op */
    struct wake_ev exp[MAXEV];
    int nexp;
    struct wake_ev got[MAXEV];
    int ngot;
    int reenter;

    uint64_t opno;
    int trace;
    int failed;
    char err[1024];
    struct chan_model_counts counts;
};

/* ---------------------------------------------------------------------------------- */
/* failure reporting                                                                   */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(struct chan_model *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    m->failed = 1;
    int k = snprintf(m->err, sizeof(m->err),
                     "op #%llu (cap %llu, bytes %llu, policy %d): ", (unsigned long long)m->opno,
                     (unsigned long long)m->r.cap, (unsigned long long)m->r.bytecap, m->r.overflow);
    if (k < 0 || (size_t)k >= sizeof(m->err))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + k, sizeof(m->err) - (size_t)k, fmt, ap);
    va_end(ap);
}

static void expect_int(struct chan_model *m, const char *what, int expected, int actual)
{
    if (expected != actual)
        fail(m, "%s: expected %d (%s), got %d (%s)", what, expected, band_err_name(expected),
             actual, band_err_name(actual));
}

static void expect_u64(struct chan_model *m, const char *what, uint64_t expected, uint64_t actual)
{
    if (expected != actual)
        fail(m, "%s: expected %llu, got %llu", what, (unsigned long long)expected,
             (unsigned long long)actual);
}

/* ---------------------------------------------------------------------------------- */
/* input                                                                               */

static uint8_t next_byte(struct chan_model *m)
{
    return model_input_byte(&m->in);
}

/* Declared bytes: within or up to two above the byte bound (E2BIG). Values beyond
 * BAND_MAX_UNITS are left to test_chan.c (test_huge_bytes_is_e2big). */
static uint64_t read_bytes(struct chan_model *m)
{
    uint8_t b = next_byte(m);
    uint64_t span = m->r.bytecap > 0 ? m->r.bytecap + 2 : 12;
    return (uint64_t)(b % (span + 1));
}

/* ---------------------------------------------------------------------------------- */
/* the reference model                                                                 */

static void exp_wake(struct chan_model *m, int kind, int idx, int status, uint64_t val,
                     uint64_t bytes)
{
    if (m->nexp < MAXEV)
        m->exp[m->nexp] = (struct wake_ev){kind, idx, status, val, bytes};
    m->nexp++;
}

static int room(const struct ref *r, uint64_t bytes)
{
    if ((uint64_t)r->qlen + r->reserved >= r->cap)
        return 0;
    if (r->bytecap == 0)
        return 1;
    return r->qbytes + r->rbytes + bytes <= r->bytecap;
}

static void push(struct ref *r, uint64_t val, uint64_t bytes)
{
    r->q[r->qlen++] = (struct qelem){val, bytes};
    r->qbytes += bytes;
}

static struct qelem pop(struct ref *r)
{
    struct qelem e = r->q[0];
    memmove(&r->q[0], &r->q[1], (size_t)(r->qlen - 1) * sizeof(r->q[0]));
    r->qlen--;
    r->qbytes -= e.bytes;
    return e;
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

/* The head receiver gets (val, bytes): it completes with a wake. */
static void deliver(struct chan_model *m, uint64_t val, uint64_t bytes)
{
    int i = m->r.rq[0];
    rq_remove(&m->r, 0);
    m->rv[i].state = ST_DONE;
    m->rv[i].status = 0;
    m->r.received++;
    m->counts.handoffs++;
    exp_wake(m, 1, i, 0, val, bytes);
}

/* An element accepted: to a waiting receiver, or queued. */
static void accept_elem(struct chan_model *m, uint64_t val, uint64_t bytes)
{
    m->r.sent++;
    if (m->r.rqlen > 0)
        deliver(m, val, bytes);
    else
        push(&m->r, val, bytes);
}

static void complete_send(struct chan_model *m, int i, int status)
{
    m->s[i].state = ST_DONE;
    m->s[i].status = status;
    exp_wake(m, 0, i, status, 0, 0);
}

static void serve_senders(struct chan_model *m)
{
    struct ref *r = &m->r;
    while (r->sqlen > 0) {
        int i = r->sq[0];
        struct sslot *s = &m->s[i];
        if (s->kind == K_SEND && r->rqlen > 0) {
            sq_remove(r, 0);
            r->sent++;
            deliver(m, s->val, s->bytes);
        } else if (room(r, s->bytes)) {
            sq_remove(r, 0);
            if (s->kind == K_SEND) {
                accept_elem(m, s->val, s->bytes);
            } else {
                r->reserved++;
                r->rbytes += s->bytes;
                s->to_adopt = 1;
            }
        } else {
            return;
        }
        complete_send(m, i, 0);
    }
}

static void end_receivers_if_done(struct chan_model *m)
{
    struct ref *r = &m->r;
    if (!r->closed || r->qlen > 0 || r->reserved > 0)
        return;
    while (r->rqlen > 0) {
        int i = r->rq[0];
        rq_remove(r, 0);
        m->rv[i].state = ST_DONE;
        m->rv[i].status = BAND_ECLOSED;
        exp_wake(m, 1, i, BAND_ECLOSED, 0, 0);
    }
}

static void ref_close(struct chan_model *m)
{
    struct ref *r = &m->r;
    if (r->closed)
        return;
    r->closed = 1;
    while (r->sqlen > 0) {
        int i = r->sq[0];
        sq_remove(r, 0);
        r->refused_closed++;
        complete_send(m, i, BAND_ECLOSED);
    }
    end_receivers_if_done(m);
}

/* EINVAL / E2BIG checks of every send and reservation; 0 when it may go on. */
static int ref_check_send(struct chan_model *m, uint64_t bytes, int drop_api)
{
    struct ref *r = &m->r;
    if ((r->overflow != BAND_CHAN_WAIT) != drop_api)
        return BAND_EINVAL;
    if (r->bytecap > 0 && bytes > r->bytecap) {
        r->refused_too_big++;
        return BAND_E2BIG;
    }
    return 0;
}

/*
 * A send or reservation after its checks: 0 (done now), BAND_EAGAIN (would wait; counted
 * in refused_full when @can_wait is 0 and @count_full), BAND_PENDING (queued as op @i) or
 * BAND_ECLOSED.
 */
static int ref_send(struct chan_model *m, int kind, uint64_t val, uint64_t bytes, int i)
{
    struct ref *r = &m->r;
    if (r->closed) {
        r->refused_closed++;
        return BAND_ECLOSED;
    }
    if (r->sqlen == 0) {
        if (kind == K_SEND && r->rqlen > 0) {
            r->sent++;
            deliver(m, val, bytes);
            return 0;
        }
        if (room(r, bytes)) {
            if (kind == K_SEND) {
                accept_elem(m, val, bytes);
            } else {
                r->reserved++;
                r->rbytes += bytes;
            }
            return 0;
        }
    }
    if (i < 0) {
        r->refused_full++;
        return BAND_EAGAIN;
    }
    r->sq[r->sqlen++] = i;
    m->s[i].state = ST_QUEUED;
    m->s[i].kind = kind;
    return BAND_PENDING;
}

/*
 * A receive, up to the point where it would wait: 0 with *e, BAND_ECLOSED, or BAND_EAGAIN
 * (the caller queues it or refuses). With nothing queued and no receiver ahead, a send op
 * waiting at the head of the sender queue (reservations hold the room) hands its element
 * over directly.
 */
static int ref_recv_now(struct chan_model *m, struct qelem *e)
{
    struct ref *r = &m->r;
    if (r->rqlen == 0 && r->qlen > 0) {
        *e = pop(r);
        r->received++;
        serve_senders(m);
        return 0;
    }
    if (r->rqlen == 0 && r->sqlen > 0 && m->s[r->sq[0]].kind == K_SEND) {
        int j = r->sq[0];
        sq_remove(r, 0);
        r->sent++;
        r->received++;
        *e = (struct qelem){m->s[j].val, m->s[j].bytes};
        complete_send(m, j, 0);
        m->counts.taken_waiting++;
        serve_senders(m); /* with the head gone, the next sender may fit */
        return 0;
    }
    if (r->closed && r->qlen == 0 && r->reserved == 0)
        return BAND_ECLOSED;
    return BAND_EAGAIN;
}

/* ---------------------------------------------------------------------------------- */
/* wakes and checks                                                                    */

static void compare_stats(struct chan_model *m, const char *where)
{
    band_chan_stats st;
    memset(&st, 0xa5, sizeof(st));
    int rc = band_chan_get_stats(m->c, &st);
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
    CMP(closed, r->closed);
    CMP(capacity, r->cap);
    CMP(byte_capacity, r->bytecap);
    CMP(len, r->qlen);
    CMP(bytes, r->qbytes);
    CMP(reserved, r->reserved);
    CMP(reserved_bytes, r->rbytes);
    CMP(senders, r->nsenders);
    CMP(waiting_senders, r->sqlen);
    CMP(waiting_receivers, r->rqlen);
    CMP(sent, r->sent);
    CMP(received, r->received);
    CMP(refused_full, r->refused_full);
    CMP(refused_closed, r->refused_closed);
    CMP(refused_too_big, r->refused_too_big);
    CMP(dropped, r->dropped);
#undef CMP
    if (st.send_wait_ns_max > st.send_wait_ns)
        fail(m, "%s: send_wait_ns_max above send_wait_ns", where);
    if (strcmp(st.name, "model") != 0)
        fail(m, "%s: name '%s'", where, st.name);
}

static void record_wake(struct chan_model *m, int kind, int idx, band_waiter *w, uint64_t val,
                        uint64_t bytes)
{
    int st = band_waiter_status(w);
    if (m->ngot < MAXEV)
        m->got[m->ngot] = (struct wake_ev){kind, idx, st, val, bytes};
    m->ngot++;
    if (band_waiter_is_pending(w))
        fail(m, "%s op %d pending inside its wake", kind ? "recv" : "send", idx);
    if (m->reenter && !m->failed) {
        /* Call back in: no lock may be held, and every completion of this operation was
         * decided before the first wake ran. */
        m->counts.reentrant++;
        compare_stats(m, "inside a wake");
    }
}

static void send_wake(band_waiter *w)
{
    struct sslot *s = (struct sslot *)(void *)w;
    record_wake(s->m, 0, s->idx, w, 0, 0);
}

static void recv_wake(band_waiter *w)
{
    struct rslot *s = (struct rslot *)(void *)w;
    record_wake(s->m, 1, s->idx, w, s->out, s->op.bytes);
}

static void compare_wakes(struct chan_model *m, const char *opname)
{
    if (m->nexp != m->ngot) {
        fail(m, "%s: expected %d wakes, got %d", opname, m->nexp, m->ngot);
        return;
    }
    for (int kind = 0; kind < 2; kind++) {
        int a = 0, b = 0;
        for (;;) {
            while (a < m->nexp && a < MAXEV && m->exp[a].kind != kind)
                a++;
            while (b < m->ngot && b < MAXEV && m->got[b].kind != kind)
                b++;
            int ea = a < m->nexp && a < MAXEV, gb = b < m->ngot && b < MAXEV;
            if (!ea && !gb)
                break;
            if (ea != gb) {
                fail(m, "%s: %s wakes differ in number", opname, kind ? "recv" : "send");
                return;
            }
            const struct wake_ev *e = &m->exp[a], *g = &m->got[b];
            if (e->idx != g->idx || e->status != g->status ||
                (kind == 1 && e->status == 0 && (e->val != g->val || e->bytes != g->bytes))) {
                fail(m,
                     "%s: %s wake: expected op %d status %s val %llu bytes %llu, got op %d "
                     "status %s val %llu bytes %llu",
                     opname, kind ? "recv" : "send", e->idx, band_err_name(e->status),
                     (unsigned long long)e->val, (unsigned long long)e->bytes, g->idx,
                     band_err_name(g->status), (unsigned long long)g->val,
                     (unsigned long long)g->bytes);
                return;
            }
            a++;
            b++;
        }
    }
    m->counts.wakes += (uint64_t)m->ngot;
    for (int i = 0; i < m->ngot && i < MAXEV; i++) {
        if (m->got[i].status == BAND_ECLOSED)
            m->counts.closed_wakes++;
        else if (m->got[i].status == 0 && m->got[i].kind == 0)
            m->counts.send_wakes_ok++;
        else if (m->got[i].status == 0)
            m->counts.recv_wakes_ok++;
    }
}

static void check_after_op(struct chan_model *m, const char *opname)
{
    if (m->failed)
        return;
    compare_wakes(m, opname);
    if (m->failed)
        return;
    for (int i = 0; i < NSEND; i++) {
        const struct sslot *s = &m->s[i];
        int pending = band_waiter_is_pending(&s->op.w);
        if (pending != (s->state == ST_QUEUED)) {
            fail(m, "%s: send op %d pending=%d, model state %d", opname, i, pending, s->state);
            return;
        }
        if (s->state != ST_QUEUED && band_waiter_status(&s->op.w) != s->status) {
            fail(m, "%s: send op %d status %s, expected %s", opname, i,
                 band_err_name(band_waiter_status(&s->op.w)), band_err_name(s->status));
            return;
        }
    }
    for (int i = 0; i < NRECV; i++) {
        const struct rslot *s = &m->rv[i];
        int pending = band_waiter_is_pending(&s->op.w);
        if (pending != (s->state == ST_QUEUED)) {
            fail(m, "%s: recv op %d pending=%d, model state %d", opname, i, pending, s->state);
            return;
        }
        if (s->state != ST_QUEUED && band_waiter_status(&s->op.w) != s->status) {
            fail(m, "%s: recv op %d status %s, expected %s", opname, i,
                 band_err_name(band_waiter_status(&s->op.w)), band_err_name(s->status));
            return;
        }
    }
    /* the model's own invariants */
    const struct ref *r = &m->r;
    if (r->rqlen > 0 && r->qlen > 0)
        fail(m, "%s: model: receivers wait beside queued elements", opname);
    if (r->closed && r->sqlen > 0)
        fail(m, "%s: model: senders wait on a closed channel", opname);
    if ((uint64_t)r->qlen + r->reserved > r->cap)
        fail(m, "%s: model: above capacity", opname);
    compare_stats(m, opname);
    if (r->sqlen > 0 && r->rqlen > 0)
        m->counts.both_waiting++;
}

/* Reservations granted to reserve op @s (at once or by a wake) are in its output slot,
 * which must hold exactly the reservation asked for; the driver moves it into a held slot,
 * or with no free slot releases it at once (an extra op, checked like any other). */
static void adopt_reservation(struct chan_model *m, struct sslot *s)
{
    uint64_t bytes = s->bytes;
    band_chan_slot tmp = s->rsv.slot;
    s->rsv.slot = (band_chan_slot)BAND_CHAN_SLOT_INIT;
    if (tmp.chan != m->c || tmp.bytes != bytes) {
        fail(m, "reserve op %d: granted slot %p/%llu, expected %p/%llu", s->idx, (void *)tmp.chan,
             (unsigned long long)tmp.bytes, (void *)m->c, (unsigned long long)bytes);
        return;
    }
    for (int h = 0; h < NHELD; h++) {
        if (m->held[h].chan == NULL) {
            m->held[h] = tmp;
            return;
        }
    }
    m->r.reserved--;
    m->r.rbytes -= bytes;
    serve_senders(m);
    end_receivers_if_done(m);
    expect_int(m, "slot_release(tmp)", 0, band_chan_slot_release(&tmp));
}

/* After the wakes were compared: reserve ops that were granted hand their reservation to
 * the driver. Loops because an adoption with no free slot releases, which can grant more. */
static void adopt_granted(struct chan_model *m)
{
    for (int round = 0; round < 4 && !m->failed; round++) {
        int any = 0;
        for (int i = 0; i < NSEND; i++) {
            struct sslot *s = &m->s[i];
            if (s->to_adopt) {
                s->to_adopt = 0;
                m->nexp = m->ngot = 0;
                adopt_reservation(m, s);
                check_after_op(m, "adopt granted reservation");
                any = 1;
            }
        }
        if (!any)
            break;
    }
}

/* ---------------------------------------------------------------------------------- */
/* channel lifetime                                                                    */

static void drop_fn(void *elem, void *ctx)
{
    struct chan_model *m = ctx;
    uint64_t v;
    memcpy(&v, elem, sizeof(v));
    if (m->ndrops < MAXCAP)
        m->drop_vals[m->ndrops] = v;
    m->ndrops++;
}

static int create_channel(struct chan_model *m)
{
    struct ref *r = &m->r;
    memset(r, 0, sizeof(*r));
    uint8_t a = next_byte(m), b = next_byte(m), c = next_byte(m);
    r->cap = 1 + a % MAXCAP;
    r->bytecap = (b & 1) ? 0 : (uint64_t)(b >> 1) % 24 + 1;
    r->overflow = c % 10 == 0   ? BAND_CHAN_DROP_OLDEST
                  : c % 10 == 1 ? BAND_CHAN_DROP_NEWEST
                                : BAND_CHAN_WAIT;
    r->counting = (c >> 4) % 3 == 0;
    r->nsenders = r->counting ? 1 + (uint64_t)(c >> 6) : 0;
    band_chan_opts o;
    memset(&o, 0, sizeof(o));
    o.byte_capacity = r->bytecap;
    o.overflow = r->overflow;
    o.drop = drop_fn;
    o.drop_ctx = m;
    o.senders = r->nsenders;
    int rc = band_chan_create(&m->c, sizeof(uint64_t), r->cap, &o);
    if (rc != 0) {
        fail(m, "create: %s", band_err_name(rc));
        return -1;
    }
    expect_int(m, "set_name", 0, band_chan_set_name(m->c, "model"));
    m->counts.channels++;
    for (int h = 0; h < NHELD; h++)
        m->held[h] = (band_chan_slot)BAND_CHAN_SLOT_INIT;
    return m->failed ? -1 : 0;
}

/* Release held reservations, close, check every op ended, destroy (drop per element). */
static void finish_channel(struct chan_model *m, const char *why)
{
    if (m->c == NULL)
        return;
    m->reenter = 0;
    for (int h = 0; h < NHELD && !m->failed; h++) {
        if (m->held[h].chan == NULL)
            continue;
        m->nexp = m->ngot = 0;
        m->r.reserved--;
        m->r.rbytes -= m->held[h].bytes;
        serve_senders(m);
        end_receivers_if_done(m);
        expect_int(m, "slot_release (finish)", 0, band_chan_slot_release(&m->held[h]));
        check_after_op(m, why);
        adopt_granted(m);
        h = -1; /* adoptions may have filled slots again: rescan */
    }
    if (m->failed)
        return;
    m->nexp = m->ngot = 0;
    ref_close(m);
    expect_int(m, "close (finish)", 0, band_chan_close(m->c));
    check_after_op(m, why);
    for (int i = 0; i < NSEND; i++)
        if (band_waiter_is_pending(&m->s[i].op.w))
            fail(m, "%s: send op %d still pending", why, i);
    for (int i = 0; i < NRECV; i++)
        if (band_waiter_is_pending(&m->rv[i].op.w))
            fail(m, "%s: recv op %d still pending", why, i);
    if (m->failed)
        return;
    m->ndrops = 0;
    expect_int(m, "destroy", 0, band_chan_destroy(m->c));
    m->c = NULL;
    expect_int(m, "drop calls", m->r.qlen, m->ndrops);
    for (int k = 0; k < m->r.qlen && k < m->ndrops && k < MAXCAP; k++) {
        int found = 0;
        for (int j = 0; j < m->ndrops && j < MAXCAP; j++)
            found |= m->drop_vals[j] == m->r.q[k].val;
        if (!found)
            fail(m, "destroy: element %llu was not dropped", (unsigned long long)m->r.q[k].val);
    }
}

/* ---------------------------------------------------------------------------------- */
/* operations                                                                          */

static uint64_t new_val(struct chan_model *m)
{
    return m->next_val++;
}

static void count_rc(struct chan_model *m, int rc)
{
    if (rc == BAND_E2BIG)
        m->counts.e2big++;
    else if (rc == BAND_EAGAIN)
        m->counts.eagain++;
    else if (rc == BAND_ECLOSED)
        m->counts.eclosed++;
}

static void op_try_send(struct chan_model *m)
{
    uint64_t bytes = read_bytes(m), val = new_val(m);
    int rc = ref_check_send(m, bytes, 0);
    if (rc == 0)
        rc = ref_send(m, K_SEND, val, bytes, -1);
    count_rc(m, rc);
    expect_int(m, "try_send", rc, band_chan_try_send(m->c, &val, bytes));
}

static void op_send_past(struct chan_model *m)
{
    uint64_t bytes = read_bytes(m), val = new_val(m);
    int rc = ref_check_send(m, bytes, 0);
    if (rc == 0) {
        rc = ref_send(m, K_SEND, val, bytes, -1);
        if (rc == BAND_EAGAIN)
            rc = BAND_ETIMEDOUT; /* counted in refused_full like try_send */
    }
    count_rc(m, rc);
    expect_int(m, "send(past)", rc, band_chan_send(m->c, &val, bytes, 0, NULL));
}

static void op_send_async(struct chan_model *m, int kind)
{
    int i = next_byte(m) % NSEND;
    struct sslot *s = &m->s[i];
    uint64_t bytes = read_bytes(m);
    const char *what = kind == K_SEND ? "send_async" : "reserve_async";
    int rc, got;
    if (s->state == ST_QUEUED) {
        /* Resubmitted while pending: EINVAL, and the pending op is left alone. */
        rc = BAND_EINVAL;
        got = kind == K_SEND ? band_chan_send_async(m->c, &s->val, bytes, &s->op)
                             : band_chan_reserve_async(m->c, bytes, &s->rsv);
        expect_int(m, what, rc, got);
        return;
    }
    s->val = new_val(m);
    s->bytes = bytes;
    s->kind = kind;
    rc = ref_check_send(m, bytes, 0);
    if (rc == 0)
        rc = ref_send(m, kind, s->val, bytes, i);
    if (rc != BAND_PENDING && rc != BAND_EINVAL) {
        s->state = ST_IDLE;
        s->status = rc;
    }
    count_rc(m, rc);
    if (rc == BAND_PENDING)
        m->counts.pending++;
    got = kind == K_SEND ? band_chan_send_async(m->c, &s->val, bytes, &s->op)
                         : band_chan_reserve_async(m->c, bytes, &s->rsv);
    expect_int(m, what, rc, got);
    if (kind == K_RESERVE && rc != 0 && rc != BAND_PENDING && rc != BAND_EINVAL &&
        s->rsv.slot.chan != NULL)
        fail(m, "reserve_async refused with %s but filled its slot", band_err_name(rc));
    if (rc == 0 && kind == K_RESERVE) {
        check_after_op(m, "reserve_async (at once)");
        m->nexp = m->ngot = 0;
        adopt_reservation(m, s);
    }
}

static int free_held(struct chan_model *m)
{
    for (int h = 0; h < NHELD; h++)
        if (m->held[h].chan == NULL)
            return h;
    return -1;
}

static void op_try_reserve(struct chan_model *m, int past)
{
    uint64_t bytes = read_bytes(m);
    int h = free_held(m);
    if (h < 0) {
        /* Every slot is in use: reserving into a full slot is EINVAL. */
        int k = next_byte(m) % NHELD;
        band_chan_slot copy = m->held[k];
        expect_int(m, "try_reserve(full slot)", BAND_EINVAL,
                   past ? band_chan_reserve(m->c, bytes, &copy, 0, NULL)
                        : band_chan_try_reserve(m->c, bytes, &copy));
        if (copy.chan != m->held[k].chan || copy.bytes != m->held[k].bytes)
            fail(m, "reserve into a full slot changed it");
        return;
    }
    int rc = ref_check_send(m, bytes, 0);
    if (rc == 0) {
        rc = ref_send(m, K_RESERVE, 0, bytes, -1);
        if (rc == BAND_EAGAIN && past)
            rc = BAND_ETIMEDOUT;
    }
    count_rc(m, rc);
    int got = past ? band_chan_reserve(m->c, bytes, &m->held[h], 0, NULL)
                   : band_chan_try_reserve(m->c, bytes, &m->held[h]);
    expect_int(m, past ? "reserve(past)" : "try_reserve", rc, got);
    if (rc == 0) {
        if (m->held[h].chan != m->c || m->held[h].bytes != bytes)
            fail(m, "reserve: slot not filled in");
    } else if (m->held[h].chan != NULL) {
        fail(m, "refused reserve filled the slot");
    }
}

static void op_slot_send(struct chan_model *m)
{
    int h = next_byte(m) % NHELD;
    uint64_t val = new_val(m);
    if (m->held[h].chan == NULL) {
        expect_int(m, "slot_send(empty)", BAND_EINVAL, band_chan_slot_send(&m->held[h], &val));
        return;
    }
    uint64_t bytes = m->held[h].bytes;
    m->r.reserved--;
    m->r.rbytes -= bytes;
    accept_elem(m, val, bytes); /* the reserved slot is the room */
    serve_senders(m);           /* a hand-off frees the slot */
    end_receivers_if_done(m);
    expect_int(m, "slot_send", 0, band_chan_slot_send(&m->held[h], &val));
    if (m->held[h].chan != NULL)
        fail(m, "slot_send: slot not emptied");
}

static void op_slot_release(struct chan_model *m)
{
    int h = next_byte(m) % NHELD;
    if (m->held[h].chan == NULL) {
        expect_int(m, "slot_release(empty)", 0, band_chan_slot_release(&m->held[h]));
        return;
    }
    m->r.reserved--;
    m->r.rbytes -= m->held[h].bytes;
    serve_senders(m);
    end_receivers_if_done(m);
    expect_int(m, "slot_release", 0, band_chan_slot_release(&m->held[h]));
    if (m->held[h].chan != NULL)
        fail(m, "slot_release: slot not emptied");
}

static void expect_elem(struct chan_model *m, const char *what, const struct qelem *e, uint64_t v,
                        uint64_t b)
{
    if (e->val != v || e->bytes != b)
        fail(m, "%s: expected element %llu (%llu bytes), got %llu (%llu bytes)", what,
             (unsigned long long)e->val, (unsigned long long)e->bytes, (unsigned long long)v,
             (unsigned long long)b);
}

static void op_try_recv(struct chan_model *m, int past)
{
    struct qelem e = {NOVALUE, 0};
    int rc = ref_recv_now(m, &e);
    if (rc == BAND_EAGAIN && past)
        rc = BAND_ETIMEDOUT;
    count_rc(m, rc);
    uint64_t v = NOVALUE, b = NOVALUE;
    int got = past ? band_chan_recv(m->c, &v, &b, 0, NULL) : band_chan_try_recv(m->c, &v, &b);
    expect_int(m, past ? "recv(past)" : "try_recv", rc, got);
    if (rc == 0 && got == 0)
        expect_elem(m, "try_recv", &e, v, b);
}

static void op_recv_async(struct chan_model *m)
{
    int i = next_byte(m) % NRECV;
    struct rslot *s = &m->rv[i];
    struct ref *r = &m->r;
    if (s->state == ST_QUEUED) {
        expect_int(m, "recv_async(pending)", BAND_EINVAL,
                   band_chan_recv_async(m->c, &s->out, &s->op));
        return;
    }
    struct qelem e = {NOVALUE, 0};
    int rc = ref_recv_now(m, &e);
    if (rc == BAND_EAGAIN) {
        r->rq[r->rqlen++] = i;
        s->state = ST_QUEUED;
        rc = BAND_PENDING;
        m->counts.pending++;
    }
    if (rc != BAND_PENDING) {
        s->state = ST_IDLE;
        s->status = rc;
    }
    count_rc(m, rc);
    s->out = NOVALUE;
    s->op.bytes = NOVALUE; /* an output: the call overwrites it */
    expect_int(m, "recv_async", rc, band_chan_recv_async(m->c, &s->out, &s->op));
    if (rc == 0)
        expect_elem(m, "recv_async", &e, s->out, s->op.bytes);
}

static void op_recv_many(struct chan_model *m)
{
    size_t max = 1 + next_byte(m) % 4;
    int with_bytes = next_byte(m) & 1;
    struct qelem e[4];
    size_t n = 0;
    int rc = ref_recv_now(m, &e[0]);
    if (rc == BAND_EAGAIN)
        rc = BAND_ETIMEDOUT;
    if (rc == 0) {
        n = 1;
        /* Room each element frees goes to waiting senders at once, so their elements can
         * join the same batch. */
        while (n < max && m->r.qlen > 0 && m->r.rqlen == 0) {
            e[n++] = pop(&m->r);
            m->r.received++;
            serve_senders(m);
        }
    }
    count_rc(m, rc);
    uint64_t v[4] = {NOVALUE, NOVALUE, NOVALUE, NOVALUE}, b[4] = {0, 0, 0, 0};
    size_t got_n = 99;
    int got = band_chan_recv_many(m->c, max, v, with_bytes ? b : NULL, &got_n, 0, NULL);
    expect_int(m, "recv_many", rc, got);
    expect_u64(m, "recv_many n", n, got_n);
    for (size_t k = 0; k < n && k < got_n && rc == 0 && got == 0; k++)
        expect_elem(m, "recv_many", &e[k], v[k], with_bytes ? b[k] : e[k].bytes);
}

static void op_cancel_send(struct chan_model *m)
{
    int i = next_byte(m) % NSEND;
    int reason = (next_byte(m) & 1) ? BAND_ETIMEDOUT : BAND_ECANCELED;
    struct sslot *s = &m->s[i];
    struct ref *r = &m->r;
    int rc;
    if (s->state == ST_QUEUED) {
        int pos = 0;
        while (r->sq[pos] != i)
            pos++;
        sq_remove(r, pos);
        s->state = ST_IDLE;
        s->status = reason;
        if (pos == 0)
            serve_senders(m);
        rc = 0;
        m->counts.cancels_ok++;
    } else if (s->state == ST_DONE) {
        rc = BAND_EALREADY;
        m->counts.ealready++;
    } else {
        rc = BAND_EINVAL;
    }
    expect_int(m, "cancel(send op)", rc, band_waiter_cancel(&s->op.w, reason));
}

static void op_cancel_recv(struct chan_model *m)
{
    int i = next_byte(m) % NRECV;
    int reason = (next_byte(m) & 1) ? BAND_ETIMEDOUT : BAND_ECANCELED;
    struct rslot *s = &m->rv[i];
    struct ref *r = &m->r;
    int rc;
    if (s->state == ST_QUEUED) {
        int pos = 0;
        while (r->rq[pos] != i)
            pos++;
        rq_remove(r, pos);
        s->state = ST_IDLE;
        s->status = reason;
        rc = 0;
        m->counts.cancels_ok++;
    } else if (s->state == ST_DONE) {
        rc = BAND_EALREADY;
        m->counts.ealready++;
    } else {
        rc = BAND_EINVAL;
    }
    expect_int(m, "cancel(recv op)", rc, band_waiter_cancel(&s->op.w, reason));
}

static void op_offer(struct chan_model *m)
{
    uint64_t bytes = read_bytes(m), val = new_val(m);
    struct ref *r = &m->r;
    struct qelem dropped = {NOVALUE, NOVALUE};
    int out = 0;
    int rc = ref_check_send(m, bytes, 1);
    if (rc == 0) {
        rc = ref_send(m, K_SEND, val, bytes, -1);
        if (rc == BAND_EAGAIN) {
            r->refused_full--; /* the policy answers instead */
            if (r->overflow == BAND_CHAN_DROP_NEWEST) {
                dropped = (struct qelem){val, bytes};
                r->dropped++;
                out = 1;
                rc = 0;
            } else if (r->qlen > 0 &&
                       (r->bytecap == 0 ||
                        r->qbytes - r->q[0].bytes + r->rbytes + bytes <= r->bytecap)) {
                dropped = pop(r);
                r->dropped++;
                accept_elem(m, val, bytes);
                out = 1;
                rc = 0;
            } else {
                r->refused_full++;
            }
        }
    }
    if (out)
        m->counts.drops++;
    count_rc(m, rc);
    uint64_t dv = NOVALUE, db = NOVALUE;
    int dout = -1;
    int got = band_chan_offer(m->c, &val, bytes, &dv, &db, &dout);
    expect_int(m, "offer", rc, got);
    if (rc == 0 && got == 0) {
        expect_int(m, "offer dropped_out", out, dout);
        if (out)
            expect_elem(m, "offer dropped", &dropped, dv, db);
    }
}

static void op_join(struct chan_model *m)
{
    struct ref *r = &m->r;
    int rc = !r->counting ? BAND_EINVAL : r->closed ? BAND_ECLOSED : 0;
    if (rc == 0)
        r->nsenders++;
    expect_int(m, "sender_join", rc, band_chan_sender_join(m->c));
}

static void op_leave(struct chan_model *m)
{
    struct ref *r = &m->r;
    int rc = !r->counting || r->nsenders == 0 ? BAND_EINVAL : 0;
    if (rc == 0 && --r->nsenders == 0)
        ref_close(m);
    expect_int(m, "sender_leave", rc, band_chan_sender_leave(m->c));
}

static void op_close(struct chan_model *m)
{
    ref_close(m);
    expect_int(m, "close", 0, band_chan_close(m->c));
}

static void op_destroy_busy(struct chan_model *m)
{
    const struct ref *r = &m->r;
    if (r->sqlen == 0 && r->rqlen == 0 && r->reserved == 0)
        return; /* not busy: destroy would succeed; recreate covers that */
    expect_int(m, "destroy(busy)", BAND_EBUSY, band_chan_destroy(m->c));
}

static void op_recreate(struct chan_model *m)
{
    finish_channel(m, "recreate");
    if (!m->failed)
        create_channel(m);
}

static const char *const op_names[CM_OP_COUNT] = {
    "try_send",      "send(past)", "send_async",   "reserve_async", "try_reserve",
    "reserve(past)", "slot_send",  "slot_release", "try_recv",      "recv(past)",
    "recv_async",    "recv_many",  "cancel(send)", "cancel(recv)",  "offer",
    "join",          "leave",      "close",        "destroy(busy)", "recreate",
};

static enum chan_model_op decode_op(struct chan_model *m)
{
    uint8_t b = next_byte(m);
    int drop = m->r.overflow != BAND_CHAN_WAIT;
    if (m->r.closed && (b & 15) == 0)
        return CM_OP_RECREATE;
    if (drop && b < 100)
        return (b & 3) == 0 ? CM_OP_TRY_SEND : CM_OP_OFFER; /* try_send: EINVAL */
    if (b < 20)
        return CM_OP_TRY_SEND;
    if (b < 30)
        return CM_OP_SEND_PAST;
    if (b < 60)
        return CM_OP_SEND_ASYNC;
    if (b < 72)
        return CM_OP_RESERVE_ASYNC;
    if (b < 82)
        return CM_OP_TRY_RESERVE;
    if (b < 86)
        return CM_OP_RESERVE_PAST;
    if (b < 100)
        return CM_OP_SLOT_SEND;
    if (b < 108)
        return CM_OP_SLOT_RELEASE;
    if (b < 130)
        return CM_OP_TRY_RECV;
    if (b < 138)
        return CM_OP_RECV_PAST;
    if (b < 170)
        return CM_OP_RECV_ASYNC;
    if (b < 182)
        return CM_OP_RECV_MANY;
    if (b < 205)
        return CM_OP_CANCEL_SEND;
    if (b < 222)
        return CM_OP_CANCEL_RECV;
    if (b < 230)
        return drop ? CM_OP_SEND_ASYNC : CM_OP_OFFER; /* EINVAL either way */
    if (b < 238)
        return CM_OP_JOIN;
    if (b < 246)
        return CM_OP_LEAVE;
    if (b < 251)
        return CM_OP_DESTROY_BUSY;
    if (b < 253)
        return CM_OP_CLOSE;
    if (b == 253)
        return CM_OP_RECREATE;
    return CM_OP_TRY_RECV;
}

static void step(struct chan_model *m)
{
    enum chan_model_op op = decode_op(m);
    m->opno++;
    m->counts.ops[op]++;
    m->nexp = m->ngot = 0;
    m->reenter = (next_byte(m) & 7) == 0;
    /* recv_many takes its first element as band_chan_recv() does (whose wakes run at
     * once), then the rest under the lock again: its wakes may see the state in between. */
    if (op == CM_OP_RECV_MANY)
        m->reenter = 0;
    switch (op) {
    case CM_OP_TRY_SEND:
        op_try_send(m);
        break;
    case CM_OP_SEND_PAST:
        op_send_past(m);
        break;
    case CM_OP_SEND_ASYNC:
        op_send_async(m, K_SEND);
        break;
    case CM_OP_RESERVE_ASYNC:
        op_send_async(m, K_RESERVE);
        break;
    case CM_OP_TRY_RESERVE:
        op_try_reserve(m, 0);
        break;
    case CM_OP_RESERVE_PAST:
        op_try_reserve(m, 1);
        break;
    case CM_OP_SLOT_SEND:
        op_slot_send(m);
        break;
    case CM_OP_SLOT_RELEASE:
        op_slot_release(m);
        break;
    case CM_OP_TRY_RECV:
        op_try_recv(m, 0);
        break;
    case CM_OP_RECV_PAST:
        op_try_recv(m, 1);
        break;
    case CM_OP_RECV_ASYNC:
        op_recv_async(m);
        break;
    case CM_OP_RECV_MANY:
        op_recv_many(m);
        break;
    case CM_OP_CANCEL_SEND:
        op_cancel_send(m);
        break;
    case CM_OP_CANCEL_RECV:
        op_cancel_recv(m);
        break;
    case CM_OP_OFFER:
        op_offer(m);
        break;
    case CM_OP_JOIN:
        op_join(m);
        break;
    case CM_OP_LEAVE:
        op_leave(m);
        break;
    case CM_OP_CLOSE:
        op_close(m);
        break;
    case CM_OP_DESTROY_BUSY:
        op_destroy_busy(m);
        break;
    case CM_OP_RECREATE:
        op_recreate(m);
        break;
    case CM_OP_COUNT:
        break;
    }
    if (op != CM_OP_RECREATE) {
        check_after_op(m, op_names[op]);
        adopt_granted(m);
    }
    if (m->trace)
        fprintf(stderr,
                "#%llu %-14s reenter=%d wakes=%d | cap=%llu bytecap=%llu pol=%d len=%d "
                "bytes=%llu reserved=%llu/%llu sq=%d rq=%d closed=%d senders=%llu%s\n",
                (unsigned long long)m->opno, op_names[op], m->reenter, m->ngot,
                (unsigned long long)m->r.cap, (unsigned long long)m->r.bytecap, m->r.overflow,
                m->r.qlen, (unsigned long long)m->r.qbytes, (unsigned long long)m->r.reserved,
                (unsigned long long)m->r.rbytes, m->r.sqlen, m->r.rqlen, m->r.closed,
                (unsigned long long)m->r.nsenders, m->failed ? " MISMATCH" : "");
}

/* ---------------------------------------------------------------------------------- */
/* runs                                                                                */

static void reset_ops(struct chan_model *m)
{
    for (int i = 0; i < NSEND; i++) {
        band_waiter_init(&m->s[i].op.w, send_wake, &m->s[i]);
        m->s[i].m = m;
        m->s[i].idx = i;
        m->s[i].state = ST_IDLE;
        m->s[i].status = 0;
        m->s[i].kind = K_SEND;
        m->s[i].bytes = 0;
        m->s[i].to_adopt = 0;
    }
    for (int i = 0; i < NRECV; i++) {
        band_waiter_init(&m->rv[i].op.w, recv_wake, &m->rv[i]);
        m->rv[i].m = m;
        m->rv[i].idx = i;
        m->rv[i].state = ST_IDLE;
        m->rv[i].status = 0;
        m->rv[i].out = NOVALUE;
    }
}

struct chan_model *chan_model_new(void)
{
    struct chan_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    reset_ops(m);
    const char *t = getenv("CHAN_MODEL_TRACE");
    m->trace = t != NULL && *t != '\0' && *t != '0';
    return m;
}

/* After a mismatch: get rid of the channel whatever state it is in. */
static void teardown_channel(struct chan_model *m)
{
    if (m->c == NULL)
        return;
    m->reenter = 0;
    for (int h = 0; h < NHELD; h++)
        (void)band_chan_slot_release(&m->held[h]);
    (void)band_chan_close(m->c);
    for (int i = 0; i < NRECV; i++)
        (void)band_waiter_cancel(&m->rv[i].op.w, BAND_ECANCELED);
    for (int i = 0; i < NSEND; i++)
        (void)band_waiter_cancel(&m->s[i].op.w, BAND_ECANCELED);
    /* Reservations still in reserve ops' output slots (granted to ops the model did not
     * expect to grant, or not yet moved because the run failed): return them. */
    for (int i = 0; i < NSEND; i++)
        if (m->s[i].kind == K_RESERVE && m->s[i].rsv.slot.chan == m->c)
            (void)band_chan_slot_release(&m->s[i].rsv.slot);
    /* Reservations the model lost track of otherwise: return them all, so that destroy
     * can succeed and nothing leaks (a slot is a plain value naming its channel). */
    for (int k = 0; k < 64; k++) {
        band_chan_stats st;
        if (band_chan_get_stats(m->c, &st) != 0 || st.reserved == 0)
            break;
        band_chan_slot tmp = {m->c, st.reserved_bytes};
        (void)band_chan_slot_release(&tmp);
    }
    (void)band_chan_destroy(m->c); /* EBUSY would leak it; the run already failed */
    m->c = NULL;
}

void chan_model_free(struct chan_model *m)
{
    if (m == NULL)
        return;
    teardown_channel(m);
    free(m);
}

static int run(struct chan_model *m, uint64_t max_ops)
{
    m->failed = 0;
    m->err[0] = '\0';
    m->opno = 0;
    teardown_channel(m);
    reset_ops(m);
    if (create_channel(m) != 0) {
        teardown_channel(m);
        return -1;
    }
    for (uint64_t i = 0; i < max_ops && !m->failed; i++) {
        if (model_input_done(&m->in))
            break;
        step(m);
        if (m->c == NULL && !m->failed)
            fail(m, "no channel after an op");
    }
    if (!m->failed)
        finish_channel(m, "final");
    if (m->failed) {
        teardown_channel(m);
        return -1;
    }
    return 0;
}

int chan_model_run_bytes(struct chan_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    return run(m, UINT64_MAX);
}

int chan_model_run_seed(struct chan_model *m, uint64_t seed, uint64_t ops)
{
    model_input_seed(&m->in, seed);
    return run(m, ops);
}

const char *chan_model_error(const struct chan_model *m)
{
    return m->err;
}

const struct chan_model_counts *chan_model_counts(const struct chan_model *m)
{
    return &m->counts;
}

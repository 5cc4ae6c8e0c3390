/* SPDX-License-Identifier: MIT */
/*
 * watch_model.c - the reference model of band_watch and the op interpreter that compares
 * it with the real thing (see watch_model.h).
 *
 * The model is written out from watch.h alone:
 *
 *  - the watch: the value (bytes), the version, closed, and the queue of waiting ops in
 *    arrival order; each cursor: initialised or not (a zeroed cursor answers EINVAL), the
 *    version it saw, and its pending op (at most one);
 *  - send: EINVAL (NULL value with a non-zero size), ECLOSED after close (counted in
 *    refused), EOVERFLOW at version UINT64_MAX (counted nowhere), else the value is
 *    replaced, the version grows by one, and every queued op completes with status 0 in
 *    arrival order: the new value in its buffer, its version in op->version, its cursor
 *    at that version (each counted in delivered);
 *  - close: the first one completes every queued op with ECLOSED (closed_fails); later
 *    ones change nothing;
 *  - read: the value and version, marking nothing; rx_read / mark_seen: EBUSY while the
 *    cursor waits, else the value and version, and the cursor has seen it (not counted in
 *    delivered: nothing changed for it);
 *  - a wait (try_recv, recv, recv_async): EBUSY while the cursor waits; 0 when
 *    the version is newer than the cursor's (value copied, cursor moved, delivered); then
 *    ECLOSED after close; else EAGAIN, which recv turns into ETIMEDOUT and
 *    recv_async into PENDING (queued);
 *  - cancel of a queued op: 0, status = reason, no wake, cursor unchanged, timeouts for
 *    ETIMEDOUT and cancels otherwise; a completed op answers EALREADY, an idle one (or a
 *    reason other than BAND_ECANCELED or BAND_ETIMEDOUT) EINVAL;
 *  - destroy: EBUSY while an op waits.
 *
 * Value bytes are a function of a 64-bit id; output buffers are filled with a sentinel
 * first, which must survive every answer that copies nothing (and the bytes past
 * value_size, every copy). Wakes are matched as they run against the model's expected
 * completions, in order; a nested call made from a wake gets its own list. A blocking wait
 * with a short future deadline either queues and times out or finds the deadline passed;
 * the counters tell which (queued and timeouts grow together by 0 or 1).
 */
#include "watch_model.h"

#include "model_input.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/band.h"
#include "band/watch.h"
#include "prim/sync_internal.h"

/* Tests only (src/watch.c, BAND_TESTING): set the version, to reach UINT64_MAX. */
void band__watch_set_version(band_watch *w, uint64_t v);

#define NRX        4  /* cursors */
#define NOPS       6  /* async waits */
#define MAXV       20 /* the largest value size */
#define MAXEV      12 /* expected wakes per operation */
#define MAXDEPTH   3  /* nested calls from wakes */
#define SENTINEL   0xEE
#define NOVERSION  UINT64_C(0x5151515151515151)
#define SHORT_WAIT (100 * BAND_USEC)

enum op_state { ST_IDLE, ST_QUEUED, ST_DONE };
/* What each wake of an operation does after its checks; WA_MIXED: each wake reads its own
 * action from the input. */
enum wake_action { WA_NONE, WA_STATS, WA_READ, WA_TRY, WA_RESUBMIT, WA_SEND, WA_CLOSE, WA_MIXED };

struct watch_model;

struct wslot {
    band_watch_recv_op op; /* first */
    struct watch_model *m;
    int idx;
    enum op_state state;
    int status;
    int rx; /* the cursor it waits on */
    int null_out;
    uint8_t out[MAXV];
};

struct rxref {
    int init;
    uint64_t seen;
    int op; /* its pending op, or -1 */
};

struct ref {
    size_t vsize;
    uint64_t version;
    uint8_t value[MAXV]; /* value_size bytes, the rest zero */
    int closed;
    int q[NOPS]; /* waiting ops, arrival order */
    int qlen;
    struct rxref rx[NRX];
    uint64_t sends, refused, delivered, queued, timeouts, cancels, closed_fails;
};

struct wake_ev {
    int idx, status;
    uint64_t version;
    uint8_t value[MAXV];
    int matched;
};

struct frame {
    struct wake_ev ev[MAXEV];
    int n;
};

struct watch_model {
    band_watch *w;
    struct ref r;
    band_watch_rx rx[NRX];
    struct wslot s[NOPS];
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
    struct watch_model_counts counts;
};

/* ---------------------------------------------------------------------------------- */
/* failure reporting                                                                   */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(struct watch_model *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    m->failed = 1;
    int k = snprintf(m->err, sizeof(m->err),
                     "op #%llu (value size %zu, version %llu): ", (unsigned long long)m->opno,
                     m->r.vsize, (unsigned long long)m->r.version);
    if (k < 0 || (size_t)k >= sizeof(m->err))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + k, sizeof(m->err) - (size_t)k, fmt, ap);
    va_end(ap);
}

static void expect_int(struct watch_model *m, const char *what, int expected, int actual)
{
    if (expected != actual)
        fail(m, "%s: expected %d (%s), got %d (%s)", what, expected, band_err_name(expected),
             actual, band_err_name(actual));
}

static void expect_u64(struct watch_model *m, const char *what, uint64_t expected, uint64_t actual)
{
    if (expected != actual)
        fail(m, "%s: expected %llu, got %llu", what, (unsigned long long)expected,
             (unsigned long long)actual);
}

static void count_rc(struct watch_model *m, int rc)
{
    switch (rc) {
    case BAND_EBUSY:
        m->counts.ebusy++;
        break;
    case BAND_EAGAIN:
        m->counts.eagain++;
        break;
    case BAND_ECLOSED:
        m->counts.eclosed++;
        break;
    case BAND_EINVAL:
        m->counts.einval++;
        break;
    case BAND_EOVERFLOW:
        m->counts.eoverflow++;
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------------------------- */
/* values                                                                              */

static uint8_t next_byte(struct watch_model *m)
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

/* @buf holds @value in its first value_size bytes and the sentinel after them. */
static void expect_value(struct watch_model *m, const char *what, const uint8_t *buf,
                         const uint8_t *value)
{
    for (size_t k = 0; k < MAXV; k++) {
        uint8_t want = k < m->r.vsize ? value[k] : SENTINEL;
        if (buf[k] != want) {
            fail(m, "%s: byte %zu is %u, expected %u", what, k, buf[k], want);
            return;
        }
    }
}

static void expect_untouched(struct watch_model *m, const char *what, const uint8_t *buf)
{
    for (size_t k = 0; k < MAXV; k++) {
        if (buf[k] != SENTINEL) {
            fail(m, "%s: byte %zu of the buffer was written (%u)", what, k, buf[k]);
            return;
        }
    }
}

/* ---------------------------------------------------------------------------------- */
/* the reference model                                                                 */

static void exp_wake(struct watch_model *m, int idx, int status)
{
    struct frame *f = &m->fr[m->depth];
    if (f->n >= MAXEV) {
        fail(m, "model: too many wakes expected");
        return;
    }
    struct wake_ev *e = &f->ev[f->n++];
    e->idx = idx;
    e->status = status;
    e->version = m->r.version;
    memcpy(e->value, m->r.value, sizeof(e->value));
    e->matched = 0;
}

static void q_remove(struct ref *r, int pos)
{
    memmove(&r->q[pos], &r->q[pos + 1], (size_t)(r->qlen - pos - 1) * sizeof(int));
    r->qlen--;
}

/* Cursor @c takes the current version (a change it had not seen). */
static void ref_deliver(struct watch_model *m, int c)
{
    struct ref *r = &m->r;
    if (r->version > r->rx[c].seen + 1)
        m->counts.skipped += r->version - r->rx[c].seen - 1;
    r->rx[c].seen = r->version;
    r->delivered++;
}

/* The answer a wait on cursor @c gets now (its cursor is initialised). */
static int ref_take(struct watch_model *m, int c)
{
    struct ref *r = &m->r;
    if (r->rx[c].op >= 0)
        return BAND_EBUSY;
    if (r->version != r->rx[c].seen) {
        ref_deliver(m, c);
        return 0;
    }
    return r->closed ? BAND_ECLOSED : BAND_EAGAIN;
}

/* End every queued op with @status (0: after a send, ECLOSED: close). */
static void ref_complete_all(struct watch_model *m, int status)
{
    struct ref *r = &m->r;
    if (r->qlen > 1)
        m->counts.multi_wakes++;
    while (r->qlen > 0) {
        int i = r->q[0];
        q_remove(r, 0);
        struct wslot *s = &m->s[i];
        s->state = ST_DONE;
        s->status = status;
        r->rx[s->rx].op = -1;
        if (status == 0)
            ref_deliver(m, s->rx);
        else
            r->closed_fails++;
        exp_wake(m, i, status);
    }
}

static int ref_send(struct watch_model *m, uint64_t id, int null_value)
{
    struct ref *r = &m->r;
    if (null_value && r->vsize > 0)
        return BAND_EINVAL;
    if (r->closed) {
        r->refused++;
        return BAND_ECLOSED;
    }
    if (r->version == UINT64_MAX)
        return BAND_EOVERFLOW;
    r->version++;
    r->sends++;
    memset(r->value, 0, sizeof(r->value));
    fill(r->value, r->vsize, id);
    ref_complete_all(m, 0);
    return 0;
}

static void ref_close(struct watch_model *m)
{
    if (m->r.closed)
        return;
    m->r.closed = 1;
    ref_complete_all(m, BAND_ECLOSED);
}

/* ---------------------------------------------------------------------------------- */
/* checks                                                                              */

static void compare_stats(struct watch_model *m, const char *where)
{
    band_watch_stats st;
    memset(&st, 0xa5, sizeof(st));
    int rc = band_watch_get_stats(m->w, &st);
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
    CMP(value_size, r->vsize);
    CMP(closed, r->closed);
    CMP(version, r->version);
    CMP(waiters, r->qlen);
    CMP(sends, r->sends);
    CMP(refused, r->refused);
    CMP(delivered, r->delivered);
    CMP(queued, r->queued);
    CMP(timeouts, r->timeouts);
    CMP(cancels, r->cancels);
    CMP(closed_fails, r->closed_fails);
#undef CMP
}

static void frame_reset(struct watch_model *m)
{
    m->fr[m->depth].n = 0;
}

static void frame_done(struct watch_model *m, const char *what)
{
    const struct frame *f = &m->fr[m->depth];
    for (int k = 0; k < f->n; k++) {
        if (!f->ev[k].matched) {
            fail(m, "%s: the wake of op %d (status %s) did not run", what, f->ev[k].idx,
                 band_err_name(f->ev[k].status));
            return;
        }
    }
}

static void check_after_op(struct watch_model *m, const char *what)
{
    if (m->failed)
        return;
    frame_done(m, what);
    const struct ref *r = &m->r;
    for (int i = 0; i < NOPS && !m->failed; i++) {
        const struct wslot *s = &m->s[i];
        int pending = band_waiter_is_pending(&s->op.w);
        if (pending != (s->state == ST_QUEUED)) {
            fail(m, "%s: op %d pending=%d, model state %d", what, i, pending, s->state);
            return;
        }
        if (s->state != ST_QUEUED && band_waiter_status(&s->op.w) != s->status)
            fail(m, "%s: op %d status %s, expected %s", what, i,
                 band_err_name(band_waiter_status(&s->op.w)), band_err_name(s->status));
        if (s->state == ST_QUEUED && r->rx[s->rx].seen != r->version)
            fail(m, "%s: model: op %d waits on a cursor that is behind", what, i);
    }
    for (int c = 0; c < NRX && !m->failed; c++) {
        char w2[64];
        snprintf(w2, sizeof(w2), "%s: rx_seen(%d)", what, c);
        expect_u64(m, w2, r->rx[c].init ? r->rx[c].seen : 0, band_watch_rx_seen(&m->rx[c]));
    }
    expect_u64(m, "version()", r->version, band_watch_version(m->w));
    expect_int(m, "is_closed()", r->closed, band_watch_is_closed(m->w));
    if (r->closed && r->qlen > 0)
        fail(m, "%s: model: ops wait on a closed watch", what);
    if (!m->failed)
        compare_stats(m, what);
    if (!m->failed) { /* the state word (WAITERS, WRITING) agrees with the queue */
        int bad = band__watch_check(m->w);
        if (bad != 0)
            fail(m, "%s: band__watch_check failed at line %d", what, -bad);
    }
}

/* ---------------------------------------------------------------------------------- */
/* operations (also called from wakes)                                                 */

static uint64_t new_id(struct watch_model *m)
{
    return m->next_id++;
}

static void do_send(struct watch_model *m, int null_value, const char *what)
{
    uint64_t id = new_id(m);
    uint8_t v[MAXV];
    fill(v, sizeof(v), id);
    int rc = ref_send(m, id, null_value);
    count_rc(m, rc);
    expect_int(m, what, rc, band_watch_send(m->w, null_value ? NULL : v));
}

static void do_close(struct watch_model *m, const char *what)
{
    ref_close(m);
    expect_int(m, what, 0, band_watch_close(m->w));
}

static void do_read(struct watch_model *m, int null_out, int null_version, const char *what)
{
    uint8_t buf[MAXV];
    memset(buf, SENTINEL, sizeof(buf));
    uint64_t v = NOVERSION;
    expect_int(m, what, 0, band_watch_read(m->w, null_out ? NULL : buf, null_version ? NULL : &v));
    if (null_out)
        expect_untouched(m, what, buf);
    else
        expect_value(m, what, buf, m->r.value);
    expect_u64(m, what, null_version ? NOVERSION : m->r.version, v);
}

/* try_recv on cursor @c into a fresh buffer (or NULL). */
static void do_try_recv(struct watch_model *m, int c, int null_out, const char *what)
{
    uint8_t buf[MAXV];
    memset(buf, SENTINEL, sizeof(buf));
    int rc = m->r.rx[c].init ? ref_take(m, c) : BAND_EINVAL;
    count_rc(m, rc);
    expect_int(m, what, rc, band_watch_try_recv(&m->rx[c], null_out ? NULL : buf));
    if (rc == 0 && !null_out)
        expect_value(m, what, buf, m->r.value);
    else
        expect_untouched(m, what, buf);
}

/* recv_async of @s on its cursor with its null_out choice. */
static void do_recv_async(struct watch_model *m, struct wslot *s, const char *what)
{
    struct ref *r = &m->r;
    band_watch_rx *rx = &m->rx[s->rx];
    void *out = s->null_out ? NULL : s->out;
    if (s->state == ST_QUEUED) {
        expect_int(m, what, BAND_EINVAL, band_watch_recv_async(rx, out, &s->op));
        return;
    }
    if (!r->rx[s->rx].init) {
        int before = band_waiter_status(&s->op.w);
        expect_int(m, what, BAND_EINVAL, band_watch_recv_async(rx, out, &s->op));
        expect_int(m, "status after EINVAL (untouched)", before, band_waiter_status(&s->op.w));
        return;
    }
    memset(s->out, SENTINEL, sizeof(s->out));
    s->op.version = NOVERSION;
    int rc = ref_take(m, s->rx);
    if (rc == BAND_EAGAIN) {
        rc = BAND_PENDING;
        s->state = ST_QUEUED;
        r->q[r->qlen++] = s->idx;
        r->rx[s->rx].op = s->idx;
        r->queued++;
        m->counts.pending++;
    } else {
        s->state = ST_IDLE;
        s->status = rc;
    }
    count_rc(m, rc);
    expect_int(m, what, rc, band_watch_recv_async(rx, out, &s->op));
    if (rc == BAND_PENDING)
        return;
    if (rc == 0) {
        expect_u64(m, "recv_async version", r->version, s->op.version);
        if (!s->null_out)
            expect_value(m, what, s->out, r->value);
    } else {
        expect_untouched(m, what, s->out);
    }
    if (s->op.rx != rx)
        fail(m, "%s: op->rx not set", what);
}

/* ---------------------------------------------------------------------------------- */
/* wakes                                                                               */

static void nested_begin(struct watch_model *m)
{
    m->counts.reentrant++;
    m->depth++;
    frame_reset(m);
}

static void nested_end(struct watch_model *m, const char *what)
{
    frame_done(m, what);
    m->depth--;
}

static int decode_action(struct watch_model *m, int mixed);

static void wake_action(struct watch_model *m, struct wslot *s)
{
    int action = m->action == WA_MIXED ? decode_action(m, 0) : m->action;
    switch (action) {
    case WA_STATS:
        m->counts.reentrant++;
        compare_stats(m, "inside a wake");
        break;
    case WA_READ:
        m->counts.reentrant++;
        do_read(m, 0, 0, "read inside a wake");
        break;
    case WA_TRY:
        nested_begin(m);
        do_try_recv(m, s->rx, 0, "try_recv inside a wake");
        nested_end(m, "try_recv inside a wake");
        break;
    case WA_RESUBMIT:
        m->counts.resubmits++;
        nested_begin(m);
        do_recv_async(m, s, "recv_async inside its wake");
        nested_end(m, "recv_async inside its wake");
        break;
    case WA_SEND:
        m->counts.wake_sends++;
        nested_begin(m);
        do_send(m, 0, "send inside a wake");
        nested_end(m, "send inside a wake");
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

static void watch_wake(band_waiter *w)
{
    struct wslot *s = (struct wslot *)(void *)w;
    struct watch_model *m = s->m;
    int st = band_waiter_status(w);
    m->counts.wakes++;
    if (m->failed)
        return;
    if (band_waiter_is_pending(w))
        fail(m, "op %d pending inside its wake", s->idx);
    struct frame *f = &m->fr[m->depth];
    int k = 0;
    while (k < f->n && f->ev[k].matched)
        k++;
    if (k == f->n) {
        fail(m, "unexpected wake of op %d (status %s)", s->idx, band_err_name(st));
        return;
    }
    struct wake_ev *e = &f->ev[k];
    e->matched = 1;
    if (e->idx != s->idx || e->status != st) {
        fail(m, "wake: expected op %d status %s, got op %d status %s", e->idx,
             band_err_name(e->status), s->idx, band_err_name(st));
        return;
    }
    if (st == 0) {
        m->counts.wakes_ok++;
        expect_u64(m, "op->version in a wake", e->version, s->op.version);
        expect_u64(m, "cursor in a wake", e->version, band_watch_rx_seen(&m->rx[s->rx]));
        if (s->null_out)
            expect_untouched(m, "NULL buffer in a wake", s->out);
        else
            expect_value(m, "value in a wake", s->out, e->value);
    } else {
        if (st == BAND_ECLOSED)
            m->counts.wakes_closed++;
        expect_untouched(m, "buffer of a failed wait", s->out);
        expect_u64(m, "op->version of a failed wait", NOVERSION, s->op.version);
    }
    if (m->depth == 0 && !m->failed)
        wake_action(m, s);
}

/* ---------------------------------------------------------------------------------- */
/* operations                                                                          */

static void op_send(struct watch_model *m)
{
    do_send(m, (next_byte(m) & 15) == 0, "send");
}

static void op_read(struct watch_model *m)
{
    uint8_t b = next_byte(m);
    do_read(m, (b & 3) == 0, (b & 12) == 0, "read");
}

static void op_rx_init(struct watch_model *m)
{
    int c = next_byte(m) % NRX;
    if (m->r.rx[c].op >= 0)
        return; /* not allowed on a cursor that waits */
    expect_int(m, "rx_init", 0, band_watch_rx_init(&m->rx[c], m->w));
    m->r.rx[c].init = 1;
    m->r.rx[c].seen = m->r.version;
    m->r.rx[c].op = -1;
}

/* rx_read (into a buffer or NULL, with or without the version) or mark_seen. */
static void op_rx_read(struct watch_model *m)
{
    uint8_t b = next_byte(m);
    int c = b % NRX;
    int kind = (b >> 2) % 4; /* 0: mark_seen, 1: NULL out, 2: NULL version, 3: both */
    struct ref *r = &m->r;
    uint8_t buf[MAXV];
    memset(buf, SENTINEL, sizeof(buf));
    uint64_t v = NOVERSION;
    int rc = !r->rx[c].init ? BAND_EINVAL : r->rx[c].op >= 0 ? BAND_EBUSY : 0;
    if (rc == 0)
        r->rx[c].seen = r->version;
    count_rc(m, rc);
    int got;
    if (kind == 0)
        got = band_watch_mark_seen(&m->rx[c]);
    else
        got = band_watch_rx_read(&m->rx[c], kind == 1 ? NULL : buf, kind == 2 ? NULL : &v);
    expect_int(m, kind == 0 ? "mark_seen" : "rx_read", rc, got);
    if (rc == 0 && (kind == 2 || kind == 3))
        expect_value(m, "rx_read", buf, r->value);
    else
        expect_untouched(m, "rx_read", buf);
    expect_u64(m, "rx_read version", rc == 0 && (kind == 1 || kind == 3) ? r->version : NOVERSION,
               v);
}

static void op_try_recv(struct watch_model *m)
{
    uint8_t b = next_byte(m);
    do_try_recv(m, b % NRX, (b >> 4) == 0, "try_recv");
}

static void op_recv(struct watch_model *m)
{
    uint8_t b = next_byte(m);
    int c = b % NRX;
    int null_out = ((b >> 2) & 7) == 0;
    int mode = (b >> 5) & 3;
    struct ref *r = &m->r;
    uint8_t buf[MAXV];
    memset(buf, SENTINEL, sizeof(buf));
    int rc = r->rx[c].init ? ref_take(m, c) : BAND_EINVAL;
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
    uint64_t q0 = r->queued, t0 = r->timeouts;
    int got = band_watch_recv(&m->rx[c], null_out ? NULL : buf, deadline, NULL);
    if (rc == BAND_ETIMEDOUT && future) {
        /* Queued and timed out, or found the deadline passed: the counters tell. */
        band_watch_stats st;
        if (band_watch_get_stats(m->w, &st) == 0 && st.queued == q0 + 1 && st.timeouts == t0 + 1) {
            r->queued++;
            r->timeouts++;
            m->counts.timed_queued++;
        }
    }
    count_rc(m, rc);
    expect_int(m, "recv", rc, got);
    if (rc == 0 && !null_out)
        expect_value(m, "recv", buf, r->value);
    else
        expect_untouched(m, "recv", buf);
}

static void op_recv_async(struct watch_model *m)
{
    uint8_t b = next_byte(m);
    struct wslot *s = &m->s[b % NOPS];
    if (s->state != ST_QUEUED) {
        s->rx = (b >> 3) % NRX;
        s->null_out = (b >> 5) == 0;
    }
    do_recv_async(m, s, "recv_async");
}

static int read_reason(struct watch_model *m)
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
        return 3;
    }
}

static void op_cancel(struct watch_model *m)
{
    struct wslot *s = &m->s[next_byte(m) % NOPS];
    int reason = read_reason(m);
    struct ref *r = &m->r;
    int rc;
    if (reason != BAND_ECANCELED && reason != BAND_ETIMEDOUT) {
        rc = BAND_EINVAL;
    } else if (s->state == ST_QUEUED) {
        int pos = 0;
        while (r->q[pos] != s->idx)
            pos++;
        q_remove(r, pos);
        r->rx[s->rx].op = -1;
        s->state = ST_IDLE;
        s->status = reason;
        if (reason == BAND_ETIMEDOUT)
            r->timeouts++;
        else
            r->cancels++;
        rc = 0;
        m->counts.cancels_ok++;
    } else if (s->state == ST_DONE) {
        rc = BAND_EALREADY;
        m->counts.ealready++;
    } else {
        rc = BAND_EINVAL;
    }
    count_rc(m, rc);
    expect_int(m, "cancel", rc, band_waiter_cancel(&s->op.w, reason));
    if (rc == 0) {
        expect_untouched(m, "buffer of a cancelled wait", s->out);
        expect_u64(m, "op->version of a cancelled wait", NOVERSION, s->op.version);
    }
}

static void op_destroy_busy(struct watch_model *m)
{
    if (m->r.qlen == 0)
        return; /* not busy: destroy would succeed; recreate covers that */
    expect_int(m, "destroy(busy)", BAND_EBUSY, band_watch_destroy(m->w));
}

static void wake_null(band_waiter *w)
{
    (void)w;
}

static void op_misuse(struct watch_model *m)
{
    uint8_t v[MAXV], buf[MAXV];
    fill(v, sizeof(v), 0);
    memset(buf, SENTINEL, sizeof(buf));
    band_watch_recv_op op;
    band_waiter_init(&op.w, wake_null, NULL);
    band_watch_rx zero;
    memset(&zero, 0, sizeof(zero));
    band_watch_stats st;
    band_watch *p = (band_watch *)(void *)&op; /* a marker: must stay unchanged */
    uint64_t ver = NOVERSION;
    switch (next_byte(m) % 20) {
    case 0:
        expect_int(m, "create(NULL)", BAND_EINVAL, band_watch_create(NULL, 8, NULL));
        break;
    case 1:
        expect_int(m, "create(SIZE_MAX)", BAND_ENOMEM, band_watch_create(&p, SIZE_MAX, NULL));
        if (p != (band_watch *)(void *)&op)
            fail(m, "create(SIZE_MAX) changed *out");
        break;
    case 2:
        expect_int(m, "send(NULL)", BAND_EINVAL, band_watch_send(NULL, v));
        break;
    case 3:
        expect_int(m, "read(NULL)", BAND_EINVAL, band_watch_read(NULL, buf, &ver));
        break;
    case 4:
        expect_u64(m, "version(NULL)", 0, band_watch_version(NULL));
        break;
    case 5:
        expect_int(m, "close(NULL)", BAND_EINVAL, band_watch_close(NULL));
        break;
    case 6:
        expect_int(m, "is_closed(NULL)", 0, band_watch_is_closed(NULL));
        break;
    case 7:
        expect_int(m, "rx_init(NULL)", BAND_EINVAL, band_watch_rx_init(NULL, m->w));
        break;
    case 8:
        expect_int(m, "rx_init(w NULL)", BAND_EINVAL, band_watch_rx_init(&zero, NULL));
        break;
    case 9:
        expect_u64(m, "rx_seen(NULL)", 0, band_watch_rx_seen(NULL));
        break;
    case 10:
        expect_int(m, "rx_read(NULL)", BAND_EINVAL, band_watch_rx_read(NULL, buf, &ver));
        break;
    case 11:
        expect_int(m, "mark_seen(NULL)", BAND_EINVAL, band_watch_mark_seen(NULL));
        break;
    case 12:
        expect_int(m, "try_recv(NULL)", BAND_EINVAL, band_watch_try_recv(NULL, buf));
        break;
    case 13:
        expect_int(m, "recv(NULL)", BAND_EINVAL, band_watch_recv(NULL, buf, 0, NULL));
        break;
    case 14:
        expect_int(m, "recv_async(NULL)", BAND_EINVAL, band_watch_recv_async(NULL, buf, &op));
        break;
    case 15:
        expect_int(m, "recv_async(op NULL)", BAND_EINVAL,
                   band_watch_recv_async(&m->rx[0], buf, NULL));
        break;
    case 16: {
        /* No wake function: EINVAL, op untouched, on a cursor that would otherwise queue. */
        int c = -1;
        for (int k = 0; k < NRX; k++)
            if (m->r.rx[k].init && m->r.rx[k].op < 0)
                c = k;
        band_waiter_init(&op.w, NULL, NULL);
        op.version = NOVERSION;
        expect_int(m, "recv_async(no wake)", BAND_EINVAL,
                   band_watch_recv_async(c >= 0 ? &m->rx[c] : &zero, buf, &op));
        expect_int(m, "recv_async(no wake) status", 0, band_waiter_status(&op.w));
        expect_u64(m, "recv_async(no wake) version", NOVERSION, op.version);
        if (band_waiter_is_pending(&op.w))
            fail(m, "recv_async(no wake) queued the op");
        break;
    }
    case 17:
        expect_int(m, "get_stats(NULL)", BAND_EINVAL, band_watch_get_stats(NULL, &st));
        break;
    case 18:
        expect_int(m, "get_stats(out NULL)", BAND_EINVAL, band_watch_get_stats(m->w, NULL));
        break;
    default:
        expect_int(m, "destroy(NULL)", 0, band_watch_destroy(NULL));
        break;
    }
    expect_untouched(m, "misuse", buf);
    expect_u64(m, "misuse version", NOVERSION, ver);
}

/* ---------------------------------------------------------------------------------- */
/* watch lifetime                                                                      */

static int create_watch(struct watch_model *m)
{
    static const size_t sizes[4] = {0, 1, 8, MAXV};
    struct ref *r = &m->r;
    memset(r, 0, sizeof(*r));
    uint8_t a = next_byte(m);
    r->vsize = sizes[a & 3];
    int null_initial = (a & 4) != 0;
    uint8_t init[MAXV];
    uint64_t id = new_id(m);
    fill(init, sizeof(init), id);
    if (!null_initial)
        fill(r->value, r->vsize, id);
    int rc = band_watch_create(&m->w, r->vsize, null_initial ? NULL : init);
    if (rc != 0) {
        m->w = NULL;
        fail(m, "create: %s", band_err_name(rc));
        return -1;
    }
    if (((a >> 3) & 7) == 0) { /* start next to the last version */
        r->version = UINT64_MAX - (uint64_t)((a >> 6) % 3);
        band__watch_set_version(m->w, r->version);
    }
    m->counts.watches++;
    /* Cursors of the previous watch are dangling: start from zeroed ones, three of them
     * pointed at the new watch. */
    memset(m->rx, 0, sizeof(m->rx));
    for (int c = 0; c < NRX; c++) {
        r->rx[c].op = -1;
        r->rx[c].init = c < 3;
        r->rx[c].seen = r->version;
        if (c < 3 && band_watch_rx_init(&m->rx[c], m->w) != 0)
            fail(m, "rx_init at create");
    }
    return m->failed ? -1 : 0;
}

/* Close (every waiter ends), check nothing waits, destroy. */
static void finish_watch(struct watch_model *m, const char *why)
{
    if (m->w == NULL || m->failed)
        return;
    m->action = WA_NONE;
    m->depth = 0;
    frame_reset(m);
    do_close(m, "close (finish)");
    check_after_op(m, why);
    for (int i = 0; i < NOPS; i++)
        if (band_waiter_is_pending(&m->s[i].op.w))
            fail(m, "%s: op %d still pending", why, i);
    if (m->failed)
        return;
    expect_int(m, "destroy", 0, band_watch_destroy(m->w));
    m->w = NULL;
}

static void op_recreate(struct watch_model *m)
{
    finish_watch(m, "recreate");
    if (!m->failed)
        create_watch(m);
}

/* ---------------------------------------------------------------------------------- */
/* the interpreter                                                                     */

static const char *const op_names[WM_OP_COUNT] = {
    "send", "close",      "read",   "rx_init",       "rx_read", "try_recv",
    "recv", "recv_async", "cancel", "destroy(busy)", "misuse",  "recreate",
};

static enum watch_model_op decode_op(struct watch_model *m)
{
    uint8_t b = next_byte(m);
    if (b < 42)
        return WM_OP_SEND;
    if (b < 44)
        return WM_OP_CLOSE;
    if (b < 54)
        return WM_OP_READ;
    if (b < 66)
        return WM_OP_RX_INIT;
    if (b < 84)
        return WM_OP_RX_READ;
    if (b < 110)
        return WM_OP_TRY_RECV;
    if (b < 126)
        return WM_OP_RECV;
    if (b < 186)
        return WM_OP_RECV_ASYNC;
    if (b < 216)
        return WM_OP_CANCEL;
    if (b < 224)
        return WM_OP_DESTROY_BUSY;
    if (b < 236)
        return WM_OP_MISUSE;
    if (b < 246)
        return WM_OP_RECREATE;
    return WM_OP_SEND;
}

static int decode_action(struct watch_model *m, int mixed)
{
    uint8_t b = next_byte(m);
    if (b < 40 && mixed)
        return WA_MIXED;
    if (b < 120)
        return WA_NONE;
    if (b < 150)
        return WA_STATS;
    if (b < 165)
        return WA_READ;
    if (b < 185)
        return WA_TRY;
    if (b < 225)
        return WA_RESUBMIT;
    if (b < 250)
        return WA_SEND;
    return WA_CLOSE;
}

static void step(struct watch_model *m)
{
    enum watch_model_op op = decode_op(m);
    m->opno++;
    m->counts.ops[op]++;
    m->depth = 0;
    frame_reset(m);
    m->action = decode_action(m, 1);
    switch (op) {
    case WM_OP_SEND:
        op_send(m);
        break;
    case WM_OP_CLOSE:
        do_close(m, "close");
        break;
    case WM_OP_READ:
        op_read(m);
        break;
    case WM_OP_RX_INIT:
        op_rx_init(m);
        break;
    case WM_OP_RX_READ:
        op_rx_read(m);
        break;
    case WM_OP_TRY_RECV:
        op_try_recv(m);
        break;
    case WM_OP_RECV:
        op_recv(m);
        break;
    case WM_OP_RECV_ASYNC:
        op_recv_async(m);
        break;
    case WM_OP_CANCEL:
        op_cancel(m);
        break;
    case WM_OP_DESTROY_BUSY:
        op_destroy_busy(m);
        break;
    case WM_OP_MISUSE:
        op_misuse(m);
        break;
    case WM_OP_RECREATE:
        op_recreate(m);
        break;
    case WM_OP_COUNT:
        break;
    }
    if (op != WM_OP_RECREATE)
        check_after_op(m, op_names[op]);
    if (m->trace)
        fprintf(stderr,
                "#%llu %-13s action=%d | size=%zu version=%llu closed=%d queued=%d seen=%llu,"
                "%llu,%llu,%llu%s\n",
                (unsigned long long)m->opno, op_names[op], m->action, m->r.vsize,
                (unsigned long long)m->r.version, m->r.closed, m->r.qlen,
                (unsigned long long)m->r.rx[0].seen, (unsigned long long)m->r.rx[1].seen,
                (unsigned long long)m->r.rx[2].seen, (unsigned long long)m->r.rx[3].seen,
                m->failed ? " MISMATCH" : "");
}

static void reset_ops(struct watch_model *m)
{
    for (int i = 0; i < NOPS; i++) {
        struct wslot *s = &m->s[i];
        band_waiter_init(&s->op.w, watch_wake, s);
        s->m = m;
        s->idx = i;
        s->state = ST_IDLE;
        s->status = 0;
        s->rx = 0;
        s->null_out = 0;
        memset(s->out, SENTINEL, sizeof(s->out));
    }
}

struct watch_model *watch_model_new(void)
{
    struct watch_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    reset_ops(m);
    const char *t = getenv("WATCH_MODEL_TRACE");
    m->trace = t != NULL && *t != '\0' && *t != '0';
    return m;
}

/* After a mismatch: get rid of the watch whatever state it is in. */
static void teardown(struct watch_model *m)
{
    if (m->w == NULL)
        return;
    m->action = WA_NONE;
    m->failed = 1; /* wakes from here on only count */
    for (int i = 0; i < NOPS; i++)
        (void)band_waiter_cancel(&m->s[i].op.w, BAND_ECANCELED);
    (void)band_watch_close(m->w);
    (void)band_watch_destroy(m->w);
    m->w = NULL;
}

void watch_model_free(struct watch_model *m)
{
    if (m == NULL)
        return;
    teardown(m);
    free(m);
}

static int run(struct watch_model *m, uint64_t max_ops)
{
    teardown(m);
    m->failed = 0;
    m->err[0] = '\0';
    m->opno = 0;
    m->depth = 0;
    reset_ops(m);
    if (create_watch(m) != 0) {
        teardown(m);
        return -1;
    }
    for (uint64_t i = 0; i < max_ops && !m->failed; i++) {
        if (model_input_done(&m->in))
            break;
        if (m->until != 0 && (i & 255) == 255 && band_now() > m->until)
            break;
        step(m);
        if (m->w == NULL && !m->failed)
            fail(m, "no watch after an op");
    }
    if (!m->failed)
        finish_watch(m, "final");
    if (m->failed) {
        teardown(m);
        return -1;
    }
    return 0;
}

int watch_model_run_bytes(struct watch_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    m->until = 0;
    return run(m, UINT64_MAX);
}

int watch_model_run_seed(struct watch_model *m, uint64_t seed, uint64_t ops, band_time until)
{
    model_input_seed(&m->in, seed);
    m->until = until;
    return run(m, ops);
}

const char *watch_model_error(const struct watch_model *m)
{
    return m->err;
}

const struct watch_model_counts *watch_model_counts(const struct watch_model *m)
{
    return &m->counts;
}

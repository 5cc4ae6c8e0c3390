/* SPDX-License-Identifier: MIT */
/*
 * oneshot_model.c - the reference model of band_oneshot and the op interpreter that
 * compares it with the real thing (see oneshot_model.h).
 *
 * The model is written out from oneshot.h alone, as a few flags:
 *
 *  - sent / closed: a send returned 0 / close was called (before or after a send);
 *    rdrop: the receiver dropped; taken: the value reached the receiver; waiting: which
 *    of the driver's ops is the pending receive (at most one), or none;
 *  - send: EINVAL (NULL value with a non-zero size), EALREADY (sender side ended; counted
 *    in refused), ECLOSED (receiver dropped; refused), else the value goes to the pending
 *    receive (its wake, status 0, value in its buffer) or is stored;
 *  - close: before a send, ends a pending receive with ECLOSED; idempotent; after a send
 *    it only marks the oneshot closed (is_closed, stats.closed) and the value stays;
 *  - a receive (try, blocking, async): EINVAL (NULL buffer with a non-zero size), EBUSY
 *    (a receive is pending), EALREADY (taken), 0 (a sent value: copied, taken), ECLOSED
 *    (sender closed, or receiver dropped, with no value), else EAGAIN, which a blocking
 *    receive turns into ETIMEDOUT and recv_async into PENDING (counted in queued);
 *  - receiver_drop: ends a pending receive with ECANCELED (counted in cancels); a stored
 *    value stays receivable;
 *  - cancel of the pending receive: 0, status = reason, no wake, counted in timeouts for
 *    ETIMEDOUT and in cancels otherwise; a completed op answers EALREADY, an idle one (or
 *    a reason other than BAND_ECANCELED or BAND_ETIMEDOUT) EINVAL;
 *  - destroy: EBUSY while a receive is pending, else 0.
 *
 * Value bytes are a function of a 64-bit id (val_byte()), so every copy is checked byte by
 * byte; output buffers are filled with a sentinel first, which must survive every answer
 * that copies nothing, and the bytes past value_size must survive every copy.
 *
 * Wakes are matched as they run against the model's list of expected completions (with
 * their status and value), and a nested call made from a wake gets its own list; after the
 * operation every expected wake must have run. A blocking receive with a short future
 * deadline either queues and times out or finds the deadline already passed, depending on
 * the clock; the model reads which one happened from the counters (queued and timeouts
 * grow together, by 0 or 1) and checks the rest exactly.
 */
#include "oneshot_model.h"

#include "model_input.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/band.h"
#include "band/oneshot.h"
#include "prim/sync_internal.h"

#define NOPS       3  /* async receive ops */
#define MAXV       24 /* the largest value size */
#define MAXEV      8  /* expected wakes per operation */
#define MAXDEPTH   3  /* nested calls from wakes */
#define SENTINEL   0xEE
#define SHORT_WAIT (100 * BAND_USEC)

enum op_state { ST_IDLE, ST_QUEUED, ST_DONE };
enum wake_action { WA_NONE, WA_STATS, WA_TRY, WA_RESUBMIT, WA_DESTROY };

struct oneshot_model;

struct oslot {
    band_oneshot_recv_op op; /* first */
    struct oneshot_model *m;
    int idx;
    enum op_state state;
    int status;
    int null_out;
    uint8_t out[MAXV];
};

struct ref {
    size_t vsize;
    int sent, taken, closed, rdrop;
    int waiting;    /* the pending op, or -1 */
    uint64_t value; /* id of the value sent */
    uint64_t refused, queued, timeouts, cancels;
};

struct wake_ev {
    int idx, status;
    uint64_t val;
    int matched;
};

struct frame {
    struct wake_ev ev[MAXEV];
    int n;
};

struct oneshot_model {
    band_oneshot *o;
    struct ref r;
    struct oslot s[NOPS];
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
    struct oneshot_model_counts counts;
};

/* ---------------------------------------------------------------------------------- */
/* failure reporting                                                                   */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(struct oneshot_model *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    m->failed = 1;
    int k = snprintf(m->err, sizeof(m->err),
                     "op #%llu (value size %zu): ", (unsigned long long)m->opno, m->r.vsize);
    if (k < 0 || (size_t)k >= sizeof(m->err))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + k, sizeof(m->err) - (size_t)k, fmt, ap);
    va_end(ap);
}

static void expect_int(struct oneshot_model *m, const char *what, int expected, int actual)
{
    if (expected != actual)
        fail(m, "%s: expected %d (%s), got %d (%s)", what, expected, band_err_name(expected),
             actual, band_err_name(actual));
}

static void expect_u64(struct oneshot_model *m, const char *what, uint64_t expected,
                       uint64_t actual)
{
    if (expected != actual)
        fail(m, "%s: expected %llu, got %llu", what, (unsigned long long)expected,
             (unsigned long long)actual);
}

static void count_rc(struct oneshot_model *m, int rc)
{
    switch (rc) {
    case BAND_EALREADY:
        m->counts.ealready++;
        break;
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
    default:
        break;
    }
}

/* ---------------------------------------------------------------------------------- */
/* values                                                                              */

static uint8_t next_byte(struct oneshot_model *m)
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

/* @buf holds value @id in its first value_size bytes and the sentinel after them. */
static void expect_value(struct oneshot_model *m, const char *what, const uint8_t *buf, uint64_t id)
{
    for (size_t k = 0; k < MAXV; k++) {
        uint8_t want = k < m->r.vsize ? val_byte(id, k) : SENTINEL;
        if (buf[k] != want) {
            fail(m, "%s: byte %zu of value %llu is %u, expected %u", what, k,
                 (unsigned long long)id, buf[k], want);
            return;
        }
    }
}

/* Nothing was copied into @buf. */
static void expect_untouched(struct oneshot_model *m, const char *what, const uint8_t *buf)
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

static void exp_wake(struct oneshot_model *m, int idx, int status, uint64_t val)
{
    struct frame *f = &m->fr[m->depth];
    if (f->n >= MAXEV) {
        fail(m, "model: too many wakes expected");
        return;
    }
    f->ev[f->n++] = (struct wake_ev){idx, status, val, 0};
}

/* The pending receive ends with @status (@val is the value for status 0). */
static void complete(struct oneshot_model *m, int status, uint64_t val)
{
    int i = m->r.waiting;
    m->r.waiting = -1;
    m->s[i].state = ST_DONE;
    m->s[i].status = status;
    exp_wake(m, i, status, val);
}

/* The answer a receive gets now; @take moves the value to the receiver. */
static int ref_take(struct oneshot_model *m, int take)
{
    struct ref *r = &m->r;
    if (r->waiting >= 0)
        return BAND_EBUSY;
    if (r->taken)
        return BAND_EALREADY;
    if (r->sent) {
        if (take) {
            r->taken = 1;
            m->counts.values++;
        }
        return 0;
    }
    if (r->closed || r->rdrop)
        return BAND_ECLOSED;
    return BAND_EAGAIN;
}

static int ref_send(struct oneshot_model *m, uint64_t id, int null_value)
{
    struct ref *r = &m->r;
    if (null_value && r->vsize > 0)
        return BAND_EINVAL;
    if (r->sent || r->closed) {
        r->refused++;
        return BAND_EALREADY;
    }
    if (r->rdrop) {
        r->refused++;
        return BAND_ECLOSED;
    }
    r->sent = 1;
    r->value = id;
    if (r->waiting >= 0) {
        r->taken = 1;
        m->counts.values++;
        complete(m, 0, id);
    }
    return 0;
}

static void ref_close(struct oneshot_model *m)
{
    struct ref *r = &m->r;
    /* A pending receive means nothing was sent and the oneshot is not closed yet. */
    if (r->waiting >= 0)
        complete(m, BAND_ECLOSED, 0);
    r->closed = 1;
}

static void ref_receiver_drop(struct oneshot_model *m)
{
    struct ref *r = &m->r;
    if (r->waiting >= 0) {
        r->cancels++;
        complete(m, BAND_ECANCELED, 0);
    }
    r->rdrop = 1;
}

/* ---------------------------------------------------------------------------------- */
/* checks                                                                              */

static void compare_stats(struct oneshot_model *m, const char *where)
{
    band_oneshot_stats st;
    memset(&st, 0xa5, sizeof(st));
    int rc = band_oneshot_get_stats(m->o, &st);
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
    CMP(sent, r->sent);
    CMP(received, r->taken);
    CMP(closed, r->closed);
    CMP(receiver_dropped, r->rdrop);
    CMP(waiting, r->waiting >= 0);
    CMP(holds_value, r->sent && !r->taken);
    CMP(refused, r->refused);
    CMP(queued, r->queued);
    CMP(timeouts, r->timeouts);
    CMP(cancels, r->cancels);
#undef CMP
    snprintf(what, sizeof(what), "%s: is_closed", where);
    expect_int(m, what, r->closed, band_oneshot_is_closed(m->o));
}

static void frame_reset(struct oneshot_model *m)
{
    m->fr[m->depth].n = 0;
}

/* Every wake the current frame expects has run. */
static void frame_done(struct oneshot_model *m, const char *what)
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

static void check_slots(struct oneshot_model *m, const char *what)
{
    for (int i = 0; i < NOPS && !m->failed; i++) {
        const struct oslot *s = &m->s[i];
        int pending = band_waiter_is_pending(&s->op.w);
        if (pending != (s->state == ST_QUEUED)) {
            fail(m, "%s: op %d pending=%d, model state %d", what, i, pending, s->state);
            return;
        }
        if (s->state != ST_QUEUED && band_waiter_status(&s->op.w) != s->status)
            fail(m, "%s: op %d status %s, expected %s", what, i,
                 band_err_name(band_waiter_status(&s->op.w)), band_err_name(s->status));
    }
}

static void check_after_op(struct oneshot_model *m, const char *what)
{
    if (m->failed)
        return;
    frame_done(m, what);
    check_slots(m, what);
    const struct ref *r = &m->r;
    if (r->waiting >= 0 && (r->sent || r->closed || r->rdrop))
        fail(m, "%s: model: a receive waits on an ended oneshot", what);
    if (r->taken && !r->sent)
        fail(m, "%s: model: taken without a send", what);
    if (m->o != NULL && !m->failed)
        compare_stats(m, what);
    if (m->o != NULL && !m->failed) {
        int bad = band__oneshot_check(m->o);
        if (bad != 0)
            fail(m, "%s: band__oneshot_check failed at line %d", what, -bad);
    }
}

/* ---------------------------------------------------------------------------------- */
/* wakes                                                                               */

static int recv_async_now(struct oneshot_model *m, struct oslot *s, const char *what);

static void wake_action(struct oneshot_model *m, struct oslot *s)
{
    switch (m->action) {
    case WA_STATS:
        m->counts.reentrant++;
        compare_stats(m, "inside a wake");
        break;
    case WA_TRY: {
        int rc = ref_take(m, 0);
        if (rc == 0)
            break; /* would take the value; not from here */
        m->counts.reentrant++;
        uint8_t buf[MAXV];
        memset(buf, SENTINEL, sizeof(buf));
        expect_int(m, "try_recv inside a wake", rc, band_oneshot_try_recv(m->o, buf));
        expect_untouched(m, "try_recv inside a wake", buf);
        break;
    }
    case WA_RESUBMIT:
        m->counts.reentrant++;
        m->counts.resubmits++;
        m->depth++;
        frame_reset(m);
        recv_async_now(m, s, "recv_async inside its wake");
        frame_done(m, "recv_async inside its wake");
        m->depth--;
        break;
    case WA_DESTROY: {
        int rc = m->r.waiting >= 0 ? BAND_EBUSY : 0;
        m->counts.reentrant++;
        int got = band_oneshot_destroy(m->o);
        expect_int(m, "destroy inside a wake", rc, got);
        if (got == 0) {
            m->o = NULL;
            m->counts.wake_destroys++;
            if (m->r.sent && !m->r.taken)
                m->counts.dropped_values++;
        }
        break;
    }
    default:
        break;
    }
}

static void os_wake(band_waiter *w)
{
    struct oslot *s = (struct oslot *)(void *)w;
    struct oneshot_model *m = s->m;
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
        if (!s->null_out)
            expect_value(m, "value in a wake", s->out, e->val);
    } else {
        if (st == BAND_ECLOSED)
            m->counts.wakes_closed++;
        else if (st == BAND_ECANCELED)
            m->counts.wakes_canceled++;
        expect_untouched(m, "buffer of a failed receive", s->out);
    }
    if (m->depth == 0 && !m->failed && m->o != NULL)
        wake_action(m, s);
}

/* ---------------------------------------------------------------------------------- */
/* operations                                                                          */

static uint64_t new_id(struct oneshot_model *m)
{
    return m->next_id++;
}

static void op_send(struct oneshot_model *m)
{
    int null_value = (next_byte(m) & 15) == 0;
    uint64_t id = new_id(m);
    uint8_t v[MAXV];
    fill(v, sizeof(v), id);
    int rc = ref_send(m, id, null_value);
    count_rc(m, rc);
    expect_int(m, "send", rc, band_oneshot_send(m->o, null_value ? NULL : v));
}

static void op_close(struct oneshot_model *m)
{
    ref_close(m);
    expect_int(m, "close", 0, band_oneshot_close(m->o));
}

/* try_recv, or recv with a past, short or unbounded deadline (@blocking). */
static void op_recv(struct oneshot_model *m, int blocking)
{
    uint8_t b = next_byte(m);
    int null_out = (b & 15) == 0;
    int mode = (b >> 4) & 3;
    uint8_t buf[MAXV];
    memset(buf, SENTINEL, sizeof(buf));
    void *out = null_out ? NULL : buf;
    const char *what = blocking ? "recv" : "try_recv";
    int rc;
    if (null_out && m->r.vsize > 0)
        rc = BAND_EINVAL;
    else
        rc = ref_take(m, 1);
    uint64_t q0 = m->r.queued, t0 = m->r.timeouts;
    int got, future = 0;
    if (!blocking) {
        got = band_oneshot_try_recv(m->o, out);
    } else {
        band_time deadline;
        if (mode == 0)
            deadline = 0;
        else if (mode == 1)
            deadline = band_now() - 1;
        else if (mode == 2 || rc == BAND_EAGAIN) {
            deadline = band_now() + SHORT_WAIT;
            future = 1;
        } else
            deadline = BAND_FOREVER; /* answered at once: never waits */
        if (rc == BAND_EAGAIN)
            rc = BAND_ETIMEDOUT;
        got = band_oneshot_recv(m->o, out, deadline, NULL);
        if (rc == BAND_ETIMEDOUT && future) {
            /* Queued and timed out, or found the deadline passed: the counters tell. */
            band_oneshot_stats st;
            if (band_oneshot_get_stats(m->o, &st) == 0 && st.queued == q0 + 1 &&
                st.timeouts == t0 + 1) {
                m->r.queued++;
                m->r.timeouts++;
                m->counts.timed_queued++;
            }
        }
    }
    count_rc(m, rc);
    expect_int(m, what, rc, got);
    if (rc == 0 && got == 0)
        expect_value(m, what, buf, m->r.value);
    else
        expect_untouched(m, what, buf);
}

/* recv_async on @s with its current null_out choice; returns the expected answer. */
static int recv_async_now(struct oneshot_model *m, struct oslot *s, const char *what)
{
    struct ref *r = &m->r;
    int rc;
    if (s->state == ST_QUEUED) {
        expect_int(m, what, BAND_EINVAL,
                   band_oneshot_recv_async(m->o, s->null_out ? NULL : s->out, &s->op));
        return BAND_EINVAL;
    }
    if (s->null_out && r->vsize > 0) {
        int before = band_waiter_status(&s->op.w);
        expect_int(m, what, BAND_EINVAL, band_oneshot_recv_async(m->o, NULL, &s->op));
        expect_int(m, "status after EINVAL (untouched)", before, band_waiter_status(&s->op.w));
        return BAND_EINVAL;
    }
    memset(s->out, SENTINEL, sizeof(s->out));
    rc = ref_take(m, 1);
    if (rc == BAND_EAGAIN) {
        rc = BAND_PENDING;
        s->state = ST_QUEUED;
        r->waiting = s->idx;
        r->queued++;
        m->counts.pending++;
    } else {
        s->state = ST_IDLE;
        s->status = rc;
    }
    count_rc(m, rc);
    int got = band_oneshot_recv_async(m->o, s->null_out ? NULL : s->out, &s->op);
    expect_int(m, what, rc, got);
    if (rc == 0 && got == 0 && !s->null_out)
        expect_value(m, what, s->out, r->value);
    else if (rc != BAND_PENDING)
        expect_untouched(m, what, s->out);
    return rc;
}

static void op_recv_async(struct oneshot_model *m)
{
    uint8_t b = next_byte(m);
    struct oslot *s = &m->s[b % NOPS];
    if (s->state != ST_QUEUED)
        s->null_out = (b >> 4) == 0;
    recv_async_now(m, s, "recv_async");
}

static int read_reason(struct oneshot_model *m)
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
        return 7;
    }
}

static void op_cancel(struct oneshot_model *m)
{
    struct oslot *s = &m->s[next_byte(m) % NOPS];
    int reason = read_reason(m);
    int rc;
    if (reason != BAND_ECANCELED && reason != BAND_ETIMEDOUT) {
        rc = BAND_EINVAL;
    } else if (s->state == ST_QUEUED) {
        rc = 0;
        s->state = ST_IDLE;
        s->status = reason;
        m->r.waiting = -1;
        if (reason == BAND_ETIMEDOUT)
            m->r.timeouts++;
        else
            m->r.cancels++;
        m->counts.cancels_ok++;
    } else if (s->state == ST_DONE) {
        rc = BAND_EALREADY;
    } else {
        rc = BAND_EINVAL;
    }
    count_rc(m, rc);
    expect_int(m, "cancel", rc, band_waiter_cancel(&s->op.w, reason));
    if (rc == 0)
        expect_untouched(m, "buffer of a cancelled receive", s->out);
}

static void op_receiver_drop(struct oneshot_model *m)
{
    ref_receiver_drop(m);
    expect_int(m, "receiver_drop", 0, band_oneshot_receiver_drop(m->o));
}

static void op_destroy_busy(struct oneshot_model *m)
{
    if (m->r.waiting < 0)
        return; /* not busy: destroy would succeed; recreate covers that */
    expect_int(m, "destroy(busy)", BAND_EBUSY, band_oneshot_destroy(m->o));
}

static void wake_null(band_waiter *w)
{
    (void)w;
}

static void op_misuse(struct oneshot_model *m)
{
    uint8_t v[MAXV], buf[MAXV];
    fill(v, sizeof(v), 0);
    memset(buf, SENTINEL, sizeof(buf));
    band_oneshot_recv_op op;
    band_oneshot_stats st;
    band_oneshot *p = (band_oneshot *)(void *)&op; /* a marker: must stay unchanged */
    switch (next_byte(m) % 13) {
    case 0:
        expect_int(m, "send(NULL)", BAND_EINVAL, band_oneshot_send(NULL, v));
        break;
    case 1:
        expect_int(m, "close(NULL)", BAND_EINVAL, band_oneshot_close(NULL));
        expect_int(m, "is_closed(NULL)", 0, band_oneshot_is_closed(NULL));
        break;
    case 2:
        expect_int(m, "try_recv(NULL)", BAND_EINVAL, band_oneshot_try_recv(NULL, buf));
        break;
    case 3:
        expect_int(m, "recv(NULL)", BAND_EINVAL, band_oneshot_recv(NULL, buf, 0, NULL));
        break;
    case 4:
        band_waiter_init(&op.w, wake_null, NULL);
        expect_int(m, "recv_async(NULL)", BAND_EINVAL, band_oneshot_recv_async(NULL, buf, &op));
        break;
    case 5:
        expect_int(m, "recv_async(op NULL)", BAND_EINVAL, band_oneshot_recv_async(m->o, buf, NULL));
        break;
    case 6:
        expect_int(m, "receiver_drop(NULL)", BAND_EINVAL, band_oneshot_receiver_drop(NULL));
        break;
    case 7:
        expect_int(m, "get_stats(NULL)", BAND_EINVAL, band_oneshot_get_stats(NULL, &st));
        break;
    case 8:
        expect_int(m, "get_stats(out NULL)", BAND_EINVAL, band_oneshot_get_stats(m->o, NULL));
        break;
    case 9:
        expect_int(m, "destroy(NULL)", 0, band_oneshot_destroy(NULL));
        break;
    case 10:
        expect_int(m, "create(NULL)", BAND_EINVAL, band_oneshot_create(NULL, 8));
        break;
    case 11:
        /* No wake function: EINVAL before anything is looked at, the op untouched. */
        band_waiter_init(&op.w, NULL, NULL);
        expect_int(m, "recv_async(no wake)", BAND_EINVAL, band_oneshot_recv_async(m->o, buf, &op));
        expect_int(m, "recv_async(no wake) status", 0, band_waiter_status(&op.w));
        if (band_waiter_is_pending(&op.w))
            fail(m, "recv_async(no wake) queued the op");
        break;
    default:
        expect_int(m, "create(SIZE_MAX)", BAND_ENOMEM, band_oneshot_create(&p, SIZE_MAX));
        if (p != (band_oneshot *)(void *)&op)
            fail(m, "create(SIZE_MAX) changed *out");
        break;
    }
    expect_untouched(m, "misuse", buf);
}

/* ---------------------------------------------------------------------------------- */
/* oneshot lifetime                                                                    */

static int create_oneshot(struct oneshot_model *m)
{
    static const size_t sizes[4] = {0, 1, 8, MAXV};
    struct ref *r = &m->r;
    memset(r, 0, sizeof(*r));
    r->waiting = -1;
    r->vsize = sizes[next_byte(m) & 3];
    int rc = band_oneshot_create(&m->o, r->vsize);
    if (rc != 0) {
        m->o = NULL;
        fail(m, "create: %s", band_err_name(rc));
        return -1;
    }
    m->counts.oneshots++;
    return 0;
}

/* End a pending receive (the sender closes), then destroy. */
static void finish_oneshot(struct oneshot_model *m, const char *why)
{
    if (m->o == NULL || m->failed)
        return;
    m->action = WA_NONE;
    frame_reset(m);
    if (m->r.waiting >= 0) {
        ref_close(m);
        expect_int(m, "close (finish)", 0, band_oneshot_close(m->o));
        check_after_op(m, why);
    }
    if (m->failed)
        return;
    for (int i = 0; i < NOPS; i++)
        if (band_waiter_is_pending(&m->s[i].op.w))
            fail(m, "%s: op %d still pending", why, i);
    if (m->failed)
        return;
    if (m->r.sent && !m->r.taken)
        m->counts.dropped_values++;
    expect_int(m, "destroy", 0, band_oneshot_destroy(m->o));
    m->o = NULL;
}

static void op_recreate(struct oneshot_model *m)
{
    finish_oneshot(m, "recreate");
    if (!m->failed)
        create_oneshot(m);
}

/* ---------------------------------------------------------------------------------- */
/* the interpreter                                                                     */

static const char *const op_names[OM_OP_COUNT] = {
    "send",   "close",         "try_recv",      "recv",   "recv_async",
    "cancel", "receiver_drop", "destroy(busy)", "misuse", "recreate",
};

static enum oneshot_model_op decode_op(struct oneshot_model *m)
{
    uint8_t b = next_byte(m);
    if (b < 30)
        return OM_OP_SEND;
    if (b < 42)
        return OM_OP_CLOSE;
    if (b < 72)
        return OM_OP_TRY_RECV;
    if (b < 92)
        return OM_OP_RECV;
    if (b < 140)
        return OM_OP_RECV_ASYNC;
    if (b < 170)
        return OM_OP_CANCEL;
    if (b < 184)
        return OM_OP_RECEIVER_DROP;
    if (b < 194)
        return OM_OP_DESTROY_BUSY;
    if (b < 208)
        return OM_OP_MISUSE;
    if (b < 250)
        return OM_OP_RECREATE;
    return OM_OP_TRY_RECV;
}

static int decode_action(struct oneshot_model *m)
{
    uint8_t b = next_byte(m);
    if (b < 128)
        return WA_NONE;
    if (b < 170)
        return WA_STATS;
    if (b < 200)
        return WA_TRY;
    if (b < 235)
        return WA_RESUBMIT;
    return WA_DESTROY;
}

static void step(struct oneshot_model *m)
{
    enum oneshot_model_op op = decode_op(m);
    m->opno++;
    m->counts.ops[op]++;
    m->depth = 0;
    frame_reset(m);
    m->action = decode_action(m);
    switch (op) {
    case OM_OP_SEND:
        op_send(m);
        break;
    case OM_OP_CLOSE:
        op_close(m);
        break;
    case OM_OP_TRY_RECV:
        op_recv(m, 0);
        break;
    case OM_OP_RECV:
        op_recv(m, 1);
        break;
    case OM_OP_RECV_ASYNC:
        op_recv_async(m);
        break;
    case OM_OP_CANCEL:
        op_cancel(m);
        break;
    case OM_OP_RECEIVER_DROP:
        op_receiver_drop(m);
        break;
    case OM_OP_DESTROY_BUSY:
        op_destroy_busy(m);
        break;
    case OM_OP_MISUSE:
        op_misuse(m);
        break;
    case OM_OP_RECREATE:
        op_recreate(m);
        break;
    case OM_OP_COUNT:
        break;
    }
    if (op != OM_OP_RECREATE)
        check_after_op(m, op_names[op]);
    if (m->o == NULL && !m->failed) /* a wake destroyed it */
        create_oneshot(m);
    if (m->trace)
        fprintf(stderr,
                "#%llu %-13s action=%d | size=%zu sent=%d taken=%d closed=%d rdrop=%d "
                "waiting=%d%s\n",
                (unsigned long long)m->opno, op_names[op], m->action, m->r.vsize, m->r.sent,
                m->r.taken, m->r.closed, m->r.rdrop, m->r.waiting, m->failed ? " MISMATCH" : "");
}

static void reset_ops(struct oneshot_model *m)
{
    for (int i = 0; i < NOPS; i++) {
        struct oslot *s = &m->s[i];
        band_waiter_init(&s->op.w, os_wake, s);
        s->m = m;
        s->idx = i;
        s->state = ST_IDLE;
        s->status = 0;
        s->null_out = 0;
        memset(s->out, SENTINEL, sizeof(s->out));
    }
}

struct oneshot_model *oneshot_model_new(void)
{
    struct oneshot_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    reset_ops(m);
    const char *t = getenv("ONESHOT_MODEL_TRACE");
    m->trace = t != NULL && *t != '\0' && *t != '0';
    return m;
}

/* After a mismatch: get rid of the oneshot whatever state it is in. */
static void teardown(struct oneshot_model *m)
{
    if (m->o == NULL)
        return;
    m->action = WA_NONE;
    m->failed = 1; /* wakes from here on only count */
    for (int i = 0; i < NOPS; i++)
        (void)band_waiter_cancel(&m->s[i].op.w, BAND_ECANCELED);
    (void)band_oneshot_destroy(m->o);
    m->o = NULL;
}

void oneshot_model_free(struct oneshot_model *m)
{
    if (m == NULL)
        return;
    teardown(m);
    free(m);
}

static int run(struct oneshot_model *m, uint64_t max_ops)
{
    teardown(m);
    m->failed = 0;
    m->err[0] = '\0';
    m->opno = 0;
    m->depth = 0;
    reset_ops(m);
    if (create_oneshot(m) != 0)
        return -1;
    for (uint64_t i = 0; i < max_ops && !m->failed; i++) {
        if (model_input_done(&m->in))
            break;
        if (m->until != 0 && (i & 255) == 255 && band_now() > m->until)
            break;
        step(m);
        if (m->o == NULL && !m->failed)
            fail(m, "no oneshot after an op");
    }
    if (!m->failed)
        finish_oneshot(m, "final");
    if (m->failed) {
        teardown(m);
        return -1;
    }
    return 0;
}

int oneshot_model_run_bytes(struct oneshot_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    m->until = 0;
    return run(m, UINT64_MAX);
}

int oneshot_model_run_seed(struct oneshot_model *m, uint64_t seed, uint64_t ops, band_time until)
{
    model_input_seed(&m->in, seed);
    m->until = until;
    return run(m, ops);
}

const char *oneshot_model_error(const struct oneshot_model *m)
{
    return m->err;
}

const struct oneshot_model_counts *oneshot_model_counts(const struct oneshot_model *m)
{
    return &m->counts;
}

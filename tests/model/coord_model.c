/* SPDX-License-Identifier: MIT */
/*
 * coord_model.c - the reference model of band_group, band_latch and band_shutdown, and the
 * op interpreter that compares it with the real thing (see coord_model.h).
 *
 * The model is written out from the headers alone, as counts and FIFO lists of the
 * driver's waiters:
 *
 *  - group: a count that never wraps (add past BAND_GROUP_MAX is EOVERFLOW and changes
 *    nothing, not counted; done_n of more than the count is EINVAL, counted in misuse;
 *    add and done of 0 change nothing). A wait on a count of 0 completes at once (0, no
 *    wake), else it queues; the done that reaches 0 releases every queued wait in arrival
 *    order with status 0 (released, zeroes). A latch is the same with a fixed start count,
 *    no add, and opened in place of zeroes;
 *  - shutdown: the first request with a negative reason sets requested and the reason,
 *    requests the scope's token (and so every child of it), releases the queued
 *    wait_requested waits, then, when nobody is joined, the wait_drained waits, then fires
 *    the watched links one at a time in watch order. A later request is EALREADY, a reason
 *    >= 0 is EINVAL. join after the request answers the reason (join_refusals); leave with
 *    nobody joined is EINVAL; the last leave after the request releases the drain waits;
 *  - a fired link cancels its waiter with the scope's reason: if the waiter was still
 *    queued, it leaves its primitive as a cancel does (counted as a timeout for
 *    BAND_ETIMEDOUT, else as a cancel), and the scope calls its wake once with that reason
 *    (fired_cancelled); otherwise nothing happens but fired. watch answers EINVAL for a
 *    watched link or a waiter that is not pending and did not complete through a wake
 *    (never submitted, completed at once, cancelled), EALREADY for one that completed
 *    through its wake, the reason once the scope was requested (those checks in that
 *    order, as the implementation makes them; the header leaves the order open), else 0.
 *    unwatch answers 0 before the link fired, EALREADY after, EINVAL for an idle link;
 *  - blocking waits never block here: a satisfied wait answers 0, then a requested token
 *    BAND_ECANCELED (cancel.h: a requested token wins over a past deadline), then a past
 *    deadline BAND_ETIMEDOUT; a short future deadline either queues and times out or finds
 *    it passed, depending on the clock, and the model reads which one happened from the
 *    counters (queued and timeouts grow together by 0 or 1);
 *  - the semaphore only serves as another primitive whose waiters a scope watches: a FIFO
 *    queue of 1..3-unit acquisitions where the head holds released permits as a partial
 *    grant, which a cancel of the head hands on to the waiters behind it (their wakes run
 *    inside the scope's cancel, before the scope's own wake);
 *  - destroy answers EBUSY (nothing freed) while waits are queued, and for a scope also
 *    while participants are joined, links are watched (fired or not) or a child token
 *    exists.
 *
 * Wakes are matched, as they run, against the current frame's list of expected wakes in
 * order; an operation run from inside a wake gets its own frame. A request's links are
 * fired lazily, as the real request does: when a wake arrives that the frame did not
 * expect yet, the model fires the next link, and at the end of the operation it fires the
 * rest. So an operation run from a wake sees the scope exactly as the real one is at that
 * point. Links are only unwatched from a wake that does not run inside the scope's cancel
 * of that same link (shutdown.h forbids it); children are only created under a token that
 * was not requested yet (a child created under a requested parent is requested at once,
 * but band_cancel_destroy() of the parent does not count it).
 */
#include "coord_model.h"

#include "model_input.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/band.h"

#define NG         2
#define NL         2
#define NS         2
#define NSLOT      10
#define MAXEV      128
#define MAXDEPTH   3
#define SHORT_WAIT (100 * BAND_USEC)

enum kind { K_NONE, K_GROUP, K_LATCH, K_SREQ, K_SDRAIN, K_SEM };
enum sstate { ST_IDLE, ST_QUEUED, ST_DONE };
enum wake_action { WA_NONE, WA_CHECK, WA_UNWATCH, WA_RESUBMIT, WA_POKE };
enum token { TK_NONE, TK_S0, TK_S1, TK_C0, TK_C1, TK_U, TK_COUNT };
/* Objects for destroy and recreate. */
enum object { OB_G0, OB_G1, OB_L0, OB_L1, OB_S0, OB_S1, OB_SEM, OB_COUNT };

static const char *const kind_names[] = {"none", "group", "latch", "requested", "drained", "sem"};

struct coord_model;

struct slot {
    band_waiter w; /* first: the wake converts back with a cast */
    band_shutdown_link link;
    struct coord_model *m;
    int idx;
    enum sstate state; /* the model's view */
    int status;        /* expected band_waiter_status() when not queued */
    enum kind kind;    /* the target of the last submission (K_NONE: none) */
    int obj;
    uint64_t want; /* semaphore units */
    int watcher;   /* the scope whose link watches it, or -1 */
    int fired;     /* that scope fired the link */
    uint64_t wakes, exp_wakes;
};

struct fifo {
    int s[NSLOT];
    int n;
};

struct rgroup { /* a group, or a latch (zeroes is then "opened") */
    uint64_t count;
    struct fifo q;
    uint64_t queued, released, timeouts, cancels, zeroes, misuse;
};

struct rscope {
    int requested, reason;
    uint64_t parts;
    struct fifo rq, dq;
    struct fifo watch; /* links not fired yet, in watch order; the firing list once requested */
    uint64_t links;    /* watched and not unwatched, fired or not */
    uint64_t queued, released, timeouts, cancels, join_refusals, fired, fired_cancelled;
    int token_req; /* its token was requested (by the request, or directly) */
    int child;     /* its child token exists */
    int child_req; /* the child was requested directly */
};

struct rsem {
    uint64_t avail, head_got;
    struct fifo q;
    int closed;
    uint64_t queued, grants, timeouts, cancels, closed_fails;
};

struct wake_ev {
    int slot, status;
    int in_fire;  /* the slot whose link the scope is cancelling while this wake runs, or -1 */
    int by_scope; /* the scope calls it: its cancel of the waiter won */
    int matched;
};

struct frame {
    struct wake_ev ev[MAXEV];
    int n, next;
    int fire; /* the scope whose links are still to fire in this frame, or -1 */
};

struct coord_model {
    band_group *g[NG];
    band_latch *l[NL];
    band_shutdown *t[NS];
    band_cancel *child[NS];
    band_cancel *u;
    band_sem *sem;
    struct rgroup rg[NG], rl[NL];
    struct rscope rs[NS];
    struct rsem rsem;
    int u_req;
    struct slot s[NSLOT];
    struct model_input in;

    struct frame fr[MAXDEPTH];
    int depth;
    int act[MAXDEPTH];    /* what the wakes of the operation at each depth do */
    int forbid[MAXDEPTH]; /* a link no operation at this depth may unwatch, or -1 */

    band_time until;
    uint64_t opno;
    const char *opname;
    int trace;
    int failed;
    int tearing; /* wakes only count */
    char err[1024];
    struct coord_model_counts counts;
};

/* ---------------------------------------------------------------------------------- */
/* failure reporting                                                                   */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(struct coord_model *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    m->failed = 1;
    int k =
        snprintf(m->err, sizeof(m->err), "op #%llu (%s, depth %d): ", (unsigned long long)m->opno,
                 m->opname ? m->opname : "setup", m->depth);
    if (k < 0 || (size_t)k >= sizeof(m->err))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + k, sizeof(m->err) - (size_t)k, fmt, ap);
    va_end(ap);
}

static void count_rc(struct coord_model *m, int rc)
{
    switch (rc) {
    case BAND_EBUSY:
        m->counts.ebusy++;
        break;
    case BAND_EINVAL:
        m->counts.einval++;
        break;
    case BAND_EALREADY:
        m->counts.ealready++;
        break;
    case BAND_EAGAIN:
        m->counts.eagain++;
        break;
    case BAND_EOVERFLOW:
        m->counts.eoverflow++;
        break;
    case BAND_ECANCELED:
        m->counts.ecanceled++;
        break;
    case BAND_ETIMEDOUT:
        m->counts.etimedout++;
        break;
    default:
        break;
    }
}

static void expect_int(struct coord_model *m, const char *what, int expected, int actual)
{
    count_rc(m, expected);
    if (expected != actual)
        fail(m, "%s: expected %d (%s), got %d (%s)", what, expected, band_err_name(expected),
             actual, band_err_name(actual));
}

static void expect_u64(struct coord_model *m, const char *what, uint64_t expected, uint64_t actual)
{
    if (expected != actual)
        fail(m, "%s: expected %llu, got %llu", what, (unsigned long long)expected,
             (unsigned long long)actual);
}

/* ---------------------------------------------------------------------------------- */
/* input                                                                               */

static uint8_t next_byte(struct coord_model *m)
{
    return model_input_byte(&m->in);
}

static struct slot *pick_slot(struct coord_model *m)
{
    return &m->s[next_byte(m) % NSLOT];
}

/* A group or latch amount: mostly small, sometimes exactly @count, one past it, or the
 * extremes. */
static uint64_t read_down_amount(struct coord_model *m, uint64_t count)
{
    switch (next_byte(m) % 10) {
    case 0:
        return 0;
    case 1:
    case 2:
        return 1;
    case 3:
        return 2;
    case 4:
    case 5:
    case 6:
        return count;
    case 7:
        return count + 1; /* wraps to 0 at UINT64_MAX: a no-op then */
    case 8:
        return UINT64_MAX;
    default:
        return 3;
    }
}

static uint64_t read_add_amount(struct coord_model *m, uint64_t count)
{
    switch (next_byte(m) % 16) {
    case 0:
        return 0;
    case 1:
    case 2:
    case 3:
        return 1;
    case 4:
        return 2;
    case 5:
        return 3;
    case 6:
        return BAND_GROUP_MAX - count; /* exactly to the maximum */
    case 7:
        return count == 0 ? UINT64_MAX : BAND_GROUP_MAX - count + 1; /* one past it */
    case 8:
        return UINT64_MAX;
    default:
        return 1;
    }
}

/* A reason for band_waiter_cancel(): mostly the two valid ones. */
static int read_cancel_reason(struct coord_model *m)
{
    switch (next_byte(m) % 8) {
    case 0:
    case 1:
    case 2:
        return BAND_ECANCELED;
    case 3:
    case 4:
        return BAND_ETIMEDOUT;
    case 5:
        return BAND_ECLOSED; /* negative, but not a cancel reason */
    case 6:
        return 0;
    default:
        return 7;
    }
}

/* A reason for band_shutdown_request(): any negative code, or an invalid one. */
static int read_request_reason(struct coord_model *m)
{
    switch (next_byte(m) % 9) {
    case 0:
    case 1:
        return BAND_ECANCELED;
    case 2:
        return BAND_ETIMEDOUT;
    case 3:
        return BAND_ECLOSED;
    case 4:
        return BAND_EAGAIN;
    case 5:
        return INT_MIN;
    case 6:
        return -1;
    case 7:
        return 0;
    default:
        return 5;
    }
}

/* ---------------------------------------------------------------------------------- */
/* small lists                                                                         */

static void fifo_push(struct coord_model *m, struct fifo *f, int k)
{
    if (f->n >= NSLOT) {
        fail(m, "model: queue overflow");
        return;
    }
    f->s[f->n++] = k;
}

static int fifo_remove(struct fifo *f, int k)
{
    for (int i = 0; i < f->n; i++) {
        if (f->s[i] == k) {
            memmove(&f->s[i], &f->s[i + 1], (size_t)(f->n - i - 1) * sizeof(f->s[0]));
            f->n--;
            return 1;
        }
    }
    return 0;
}

static int fifo_pop(struct fifo *f)
{
    int k = f->s[0];
    memmove(&f->s[0], &f->s[1], (size_t)(f->n - 1) * sizeof(f->s[0]));
    f->n--;
    return k;
}

/* ---------------------------------------------------------------------------------- */
/* tokens                                                                              */

static band_cancel *token_ptr(struct coord_model *m, int tk)
{
    switch (tk) {
    case TK_S0:
    case TK_S1:
        return band_shutdown_cancel(m->t[tk - TK_S0]);
    case TK_C0:
    case TK_C1:
        return m->child[tk - TK_C0]; /* NULL when it does not exist */
    case TK_U:
        return m->u;
    default:
        return NULL;
    }
}

static int child_requested(const struct coord_model *m, int sc)
{
    return m->rs[sc].child && (m->rs[sc].child_req || m->rs[sc].token_req);
}

static int token_requested(const struct coord_model *m, int tk)
{
    switch (tk) {
    case TK_S0:
    case TK_S1:
        return m->rs[tk - TK_S0].token_req;
    case TK_C0:
    case TK_C1:
        return child_requested(m, tk - TK_C0);
    case TK_U:
        return m->u_req;
    default:
        return 0;
    }
}

/* ---------------------------------------------------------------------------------- */
/* the reference model                                                                 */

static void exp_wake(struct coord_model *m, int k, int status, int in_fire, int by_scope)
{
    struct frame *f = &m->fr[m->depth];
    if (f->n >= MAXEV) {
        fail(m, "model: too many wakes expected");
        return;
    }
    f->ev[f->n++] = (struct wake_ev){k, status, in_fire, by_scope, 0};
    m->s[k].exp_wakes++;
}

/* Slot @k's queued wait ended through its wake with @status. */
static void ref_finish(struct coord_model *m, int k, int status, int in_fire)
{
    m->s[k].state = ST_DONE;
    m->s[k].status = status;
    exp_wake(m, k, status, in_fire, 0);
}

static void ref_release_all(struct coord_model *m, struct fifo *q, uint64_t *released)
{
    while (q->n > 0 && !m->failed) {
        int k = fifo_pop(q);
        (*released)++;
        ref_finish(m, k, 0, -1);
    }
}

/* group done_n / latch count_down */
static int ref_down(struct coord_model *m, struct rgroup *r, uint64_t n, int is_latch)
{
    if (n == 0)
        return 0;
    if (n > r->count) {
        r->misuse++;
        return BAND_EINVAL;
    }
    r->count -= n;
    if (r->count == 0) {
        r->zeroes++;
        if (r->q.n > 0) {
            if (is_latch)
                m->counts.opens++;
            else
                m->counts.zeroes++;
        }
        ref_release_all(m, &r->q, &r->released);
    }
    return 0;
}

/* Hand @pool to the semaphore's waiters in order; the rest becomes available. */
static void ref_sem_grant(struct coord_model *m, uint64_t pool, int in_fire)
{
    struct rsem *r = &m->rsem;
    while (pool > 0 && r->q.n > 0 && !m->failed) {
        int k = r->q.s[0];
        uint64_t need = m->s[k].want - r->head_got;
        if (pool < need) {
            r->head_got += pool;
            return;
        }
        pool -= need;
        r->head_got = 0;
        fifo_pop(&r->q);
        r->grants++;
        if (in_fire >= 0)
            m->counts.handoffs++;
        ref_finish(m, k, 0, in_fire);
    }
    r->avail += pool;
}

/* Slot @s's queued wait is withdrawn with @reason (a cancel, or a fired link). */
static void ref_withdraw(struct coord_model *m, struct slot *s, int reason, int in_fire)
{
    struct fifo *q = NULL;
    uint64_t *timeouts = NULL, *cancels = NULL;
    s->state = ST_IDLE;
    s->status = reason;
    switch (s->kind) {
    case K_GROUP:
    case K_LATCH: {
        struct rgroup *r = s->kind == K_GROUP ? &m->rg[s->obj] : &m->rl[s->obj];
        q = &r->q;
        timeouts = &r->timeouts;
        cancels = &r->cancels;
        break;
    }
    case K_SREQ:
    case K_SDRAIN: {
        struct rscope *r = &m->rs[s->obj];
        q = s->kind == K_SREQ ? &r->rq : &r->dq;
        timeouts = &r->timeouts;
        cancels = &r->cancels;
        break;
    }
    case K_SEM: {
        struct rsem *r = &m->rsem;
        uint64_t pool = 0;
        if (r->q.n > 0 && r->q.s[0] == s->idx) {
            pool = r->head_got;
            r->head_got = 0;
        }
        if (!fifo_remove(&r->q, s->idx))
            fail(m, "model: slot %d not on the semaphore's queue", s->idx);
        if (reason == BAND_ETIMEDOUT)
            r->timeouts++;
        else
            r->cancels++;
        ref_sem_grant(m, pool, in_fire);
        return;
    }
    case K_NONE:
        fail(m, "model: slot %d queued on nothing", s->idx);
        return;
    }
    if (!fifo_remove(q, s->idx))
        fail(m, "model: slot %d not on its %s queue", s->idx, kind_names[s->kind]);
    if (reason == BAND_ETIMEDOUT)
        (*timeouts)++;
    else
        (*cancels)++;
}

/* Fire the next link of the scope whose request this frame is running. */
static void fire_next(struct coord_model *m, struct frame *f)
{
    struct rscope *r = &m->rs[f->fire];
    if (r->watch.n > 0) {
        int k = fifo_pop(&r->watch);
        struct slot *s = &m->s[k];
        r->fired++;
        s->fired = 1;
        if (s->state == ST_QUEUED) {
            ref_withdraw(m, s, r->reason, k);
            r->fired_cancelled++;
            m->counts.fired_won++;
            exp_wake(m, k, r->reason, -1, 1); /* the link is fired before the scope's wake */
        } else {
            m->counts.fired_lost++;
        }
    }
    if (r->watch.n == 0)
        f->fire = -1;
}

static int ref_request(struct coord_model *m, int sc, int reason)
{
    struct rscope *r = &m->rs[sc];
    if (reason >= 0)
        return BAND_EINVAL;
    if (r->requested)
        return BAND_EALREADY;
    r->requested = 1;
    r->reason = reason;
    r->token_req = 1;
    m->counts.requests++;
    ref_release_all(m, &r->rq, &r->released);
    if (r->parts == 0) {
        if (r->dq.n > 0)
            m->counts.drains++;
        ref_release_all(m, &r->dq, &r->released);
    }
    if (r->watch.n > 0) {
        struct frame *f = &m->fr[m->depth];
        if (f->fire >= 0)
            fail(m, "model: two requests in one frame");
        f->fire = sc;
    }
    return 0;
}

static int ref_join(struct coord_model *m, int sc)
{
    struct rscope *r = &m->rs[sc];
    if (r->requested) {
        r->join_refusals++;
        m->counts.reasons++;
        return r->reason;
    }
    r->parts++;
    return 0;
}

static int ref_leave(struct coord_model *m, int sc)
{
    struct rscope *r = &m->rs[sc];
    if (r->parts == 0)
        return BAND_EINVAL;
    r->parts--;
    if (r->requested && r->parts == 0) {
        if (r->dq.n > 0)
            m->counts.drains++;
        ref_release_all(m, &r->dq, &r->released);
    }
    return 0;
}

/* Is what a wait of @kind on @obj waits for true now? */
static int ref_satisfied(const struct coord_model *m, enum kind kind, int obj)
{
    switch (kind) {
    case K_GROUP:
        return m->rg[obj].count == 0;
    case K_LATCH:
        return m->rl[obj].count == 0;
    case K_SREQ:
        return m->rs[obj].requested;
    case K_SDRAIN:
        return m->rs[obj].requested && m->rs[obj].parts == 0;
    default:
        return 0;
    }
}

static int scope_busy(const struct coord_model *m, int sc)
{
    const struct rscope *r = &m->rs[sc];
    return r->rq.n > 0 || r->dq.n > 0 || r->parts > 0 || r->links > 0 || r->child;
}

static int object_busy(const struct coord_model *m, int ob)
{
    switch (ob) {
    case OB_G0:
    case OB_G1:
        return m->rg[ob - OB_G0].q.n > 0;
    case OB_L0:
    case OB_L1:
        return m->rl[ob - OB_L0].q.n > 0;
    case OB_S0:
    case OB_S1:
        return scope_busy(m, ob - OB_S0);
    default:
        return m->rsem.q.n > 0;
    }
}

/* Does slot @s's last submission target object @ob? */
static int slot_targets(const struct slot *s, int ob)
{
    switch (ob) {
    case OB_G0:
    case OB_G1:
        return s->kind == K_GROUP && s->obj == ob - OB_G0;
    case OB_L0:
    case OB_L1:
        return s->kind == K_LATCH && s->obj == ob - OB_L0;
    case OB_S0:
    case OB_S1:
        return (s->kind == K_SREQ || s->kind == K_SDRAIN) && s->obj == ob - OB_S0;
    default:
        return s->kind == K_SEM;
    }
}

/* ---------------------------------------------------------------------------------- */
/* checks                                                                              */

#define CMP(st, field, val)                                                                        \
    do {                                                                                           \
        snprintf(what, sizeof(what), "%s: %s." #field, where, name);                               \
        expect_u64(m, what, (uint64_t)(val), (uint64_t)(st).field);                                \
    } while (0)

static void check_group(struct coord_model *m, int i, const char *where)
{
    const struct rgroup *r = &m->rg[i];
    char what[128], name[8];
    snprintf(name, sizeof(name), "g%d", i);
    band_group_stats st;
    memset(&st, 0xa5, sizeof(st));
    int rc = band_group_get_stats(m->g[i], &st);
    if (rc != 0) {
        fail(m, "%s: group_get_stats(g%d) returned %d", where, i, rc);
        return;
    }
    CMP(st, count, r->count);
    CMP(st, waiters, r->q.n);
    CMP(st, queued, r->queued);
    CMP(st, released, r->released);
    CMP(st, timeouts, r->timeouts);
    CMP(st, cancels, r->cancels);
    CMP(st, zeroes, r->zeroes);
    CMP(st, misuse, r->misuse);
    snprintf(what, sizeof(what), "%s: group_count(g%d)", where, i);
    expect_u64(m, what, r->count, band_group_count(m->g[i]));
    if (band_group_try_wait(m->g[i]) != (r->count == 0 ? 0 : BAND_EAGAIN))
        fail(m, "%s: group_try_wait(g%d) disagrees with the count", where, i);
}

static void check_latch(struct coord_model *m, int i, const char *where)
{
    const struct rgroup *r = &m->rl[i];
    char what[128], name[8];
    snprintf(name, sizeof(name), "l%d", i);
    band_latch_stats st;
    memset(&st, 0xa5, sizeof(st));
    int rc = band_latch_get_stats(m->l[i], &st);
    if (rc != 0) {
        fail(m, "%s: latch_get_stats(l%d) returned %d", where, i, rc);
        return;
    }
    CMP(st, count, r->count);
    CMP(st, waiters, r->q.n);
    CMP(st, queued, r->queued);
    CMP(st, released, r->released);
    CMP(st, timeouts, r->timeouts);
    CMP(st, cancels, r->cancels);
    CMP(st, opened, r->zeroes);
    CMP(st, misuse, r->misuse);
    snprintf(what, sizeof(what), "%s: latch_count(l%d)", where, i);
    expect_u64(m, what, r->count, band_latch_count(m->l[i]));
    if (band_latch_try_wait(m->l[i]) != (r->count == 0 ? 0 : BAND_EAGAIN))
        fail(m, "%s: latch_try_wait(l%d) disagrees with the count", where, i);
}

static void check_scope(struct coord_model *m, int i, const char *where, int skip_fired)
{
    const struct rscope *r = &m->rs[i];
    char what[128], name[8];
    snprintf(name, sizeof(name), "t%d", i);
    band_shutdown_stats st;
    memset(&st, 0xa5, sizeof(st));
    int rc = band_shutdown_get_stats(m->t[i], &st);
    if (rc != 0) {
        fail(m, "%s: shutdown_get_stats(t%d) returned %d", where, i, rc);
        return;
    }
    CMP(st, requested, r->requested);
    if (st.reason != (r->requested ? r->reason : 0))
        fail(m, "%s: t%d.reason: expected %d, got %d", where, i, r->requested ? r->reason : 0,
             st.reason);
    CMP(st, participants, r->parts);
    CMP(st, waiting_requested, r->rq.n);
    CMP(st, waiting_drained, r->dq.n);
    CMP(st, watched, r->links);
    CMP(st, queued, r->queued);
    CMP(st, released, r->released);
    CMP(st, timeouts, r->timeouts);
    CMP(st, cancels, r->cancels);
    CMP(st, join_refusals, r->join_refusals);
    if (!skip_fired) {
        CMP(st, fired, r->fired);
        CMP(st, fired_cancelled, r->fired_cancelled);
    }
    snprintf(what, sizeof(what), "%s: is_requested(t%d)", where, i);
    expect_u64(m, what, (uint64_t)r->requested, (uint64_t)band_shutdown_is_requested(m->t[i]));
    if (band_shutdown_reason(m->t[i]) != (r->requested ? r->reason : 0))
        fail(m, "%s: shutdown_reason(t%d) is %d", where, i, band_shutdown_reason(m->t[i]));
    snprintf(what, sizeof(what), "%s: participants(t%d)", where, i);
    expect_u64(m, what, r->parts, band_shutdown_participants(m->t[i]));
    snprintf(what, sizeof(what), "%s: token of t%d requested", where, i);
    expect_u64(m, what, (uint64_t)r->token_req,
               (uint64_t)band_cancel_is_requested(band_shutdown_cancel(m->t[i])));
    if ((m->child[i] != NULL) != r->child)
        fail(m, "%s: child token of t%d: model and driver disagree", where, i);
    snprintf(what, sizeof(what), "%s: child of t%d requested", where, i);
    expect_u64(m, what, (uint64_t)child_requested(m, i),
               (uint64_t)band_cancel_is_requested(m->child[i]));
}

static void check_sem(struct coord_model *m, const char *where)
{
    const struct rsem *r = &m->rsem;
    char what[128];
    const char *name = "sem";
    band_sem_stats st;
    memset(&st, 0xa5, sizeof(st));
    int rc = band_sem_get_stats(m->sem, &st);
    if (rc != 0) {
        fail(m, "%s: sem_get_stats returned %d", where, rc);
        return;
    }
    uint64_t units = 0;
    for (int i = 0; i < r->q.n; i++)
        units += m->s[r->q.s[i]].want;
    CMP(st, closed, r->closed);
    CMP(st, available, r->avail);
    CMP(st, waiters, r->q.n);
    CMP(st, waiting_units, units);
    CMP(st, head_granted, r->head_got);
    CMP(st, queued, r->queued);
    CMP(st, grants, r->grants);
    CMP(st, timeouts, r->timeouts);
    CMP(st, cancels, r->cancels);
    CMP(st, closed_fails, r->closed_fails);
}
#undef CMP

static void check_slots(struct coord_model *m, const char *where, int in_wake)
{
    for (int i = 0; i < NSLOT && !m->failed; i++) {
        const struct slot *s = &m->s[i];
        int pending = band_waiter_is_pending(&s->w);
        if (pending != (s->state == ST_QUEUED)) {
            fail(m, "%s: slot %d pending=%d, model state %d (%s %d)", where, i, pending, s->state,
                 kind_names[s->kind], s->obj);
            return;
        }
        int st = band_waiter_status(&s->w);
        if (s->state != ST_QUEUED && st != s->status)
            fail(m, "%s: slot %d status %d (%s), expected %d (%s)", where, i, st, band_err_name(st),
                 s->status, band_err_name(s->status));
        if (s->state == ST_QUEUED && st != BAND_PENDING)
            fail(m, "%s: slot %d queued with status %s", where, i, band_err_name(st));
        if (!in_wake && s->wakes != s->exp_wakes)
            fail(m, "%s: slot %d had %llu wakes, expected %llu", where, i,
                 (unsigned long long)s->wakes, (unsigned long long)s->exp_wakes);
    }
}

/* Compare the whole state. Inside a wake, a scope's firing may be halfway through a link
 * (fired and fired_cancelled move after the wakes the cancel itself runs), and wakes may
 * still be due. */
static void check_all(struct coord_model *m, const char *where, int in_wake)
{
    for (int i = 0; i < NG && !m->failed; i++)
        check_group(m, i, where);
    for (int i = 0; i < NL && !m->failed; i++)
        check_latch(m, i, where);
    for (int i = 0; i < NS && !m->failed; i++)
        check_scope(m, i, where, in_wake);
    if (!m->failed)
        check_sem(m, where);
    if (!m->failed)
        check_slots(m, where, in_wake);
    if (!m->failed && band_cancel_is_requested(m->u) != m->u_req)
        fail(m, "%s: independent token requested=%d, expected %d", where,
             band_cancel_is_requested(m->u), m->u_req);
}

/* ---------------------------------------------------------------------------------- */
/* frames and wakes                                                                    */

static void frame_open(struct coord_model *m)
{
    struct frame *f = &m->fr[m->depth];
    f->n = 0;
    f->next = 0;
    f->fire = -1;
}

/* The operation of this frame returned: fire what the request has left (the real one
 * did that before returning), and every expected wake must have run. */
static void frame_close(struct coord_model *m, const char *what)
{
    struct frame *f = &m->fr[m->depth];
    while (f->fire >= 0 && !m->failed)
        fire_next(m, f);
    if (m->failed)
        return;
    if (f->next < f->n) {
        const struct wake_ev *e = &f->ev[f->next];
        fail(m, "%s: the wake of slot %d (status %s) did not run (%d of %d ran)", what, e->slot,
             band_err_name(e->status), f->next, f->n);
    }
}

static const struct wake_ev *next_expected(struct coord_model *m)
{
    struct frame *f = &m->fr[m->depth];
    while (f->next >= f->n && f->fire >= 0 && !m->failed)
        fire_next(m, f);
    if (f->next >= f->n)
        return NULL;
    f->ev[f->next].matched = 1;
    return &f->ev[f->next++];
}

static int forbidden_unwatch(const struct coord_model *m, int k)
{
    for (int d = 1; d <= m->depth; d++)
        if (m->forbid[d] == k)
            return 1;
    return 0;
}

static void wake_action(struct coord_model *m, struct slot *s, int action, int in_fire);

static void slot_wake(band_waiter *w)
{
    struct slot *s = (struct slot *)(void *)w;
    struct coord_model *m = s->m;
    m->counts.wakes++;
    s->wakes++;
    if (m->failed || m->tearing)
        return;
    if (band_waiter_is_pending(w)) {
        fail(m, "slot %d pending inside its wake", s->idx);
        return;
    }
    int st = band_waiter_status(w);
    const struct wake_ev *e = next_expected(m);
    if (e == NULL) {
        fail(m, "unexpected wake of slot %d (status %s, %s %d)", s->idx, band_err_name(st),
             kind_names[s->kind], s->obj);
        return;
    }
    if (e->slot != s->idx || e->status != st) {
        fail(m, "wake: expected slot %d status %s, got slot %d status %s", e->slot,
             band_err_name(e->status), s->idx, band_err_name(st));
        return;
    }
    if (e->by_scope)
        m->counts.wakes_fired++;
    else if (st == BAND_ECLOSED)
        m->counts.wakes_closed++;
    else if (s->kind == K_SEM)
        m->counts.wakes_granted++;
    else
        m->counts.wakes_released++;
    int action = m->act[m->depth];
    if (action != WA_NONE && m->depth + 1 < MAXDEPTH)
        wake_action(m, s, action, e->in_fire);
}

/* ---------------------------------------------------------------------------------- */
/* submissions, watch links, cancels                                                   */

static int real_submit(struct coord_model *m, struct slot *s, enum kind kind, int obj,
                       uint64_t want)
{
    switch (kind) {
    case K_GROUP:
        return band_group_wait_async(m->g[obj], &s->w);
    case K_LATCH:
        return band_latch_wait_async(m->l[obj], &s->w);
    case K_SREQ:
        return band_shutdown_wait_requested_async(m->t[obj], &s->w);
    case K_SDRAIN:
        return band_shutdown_wait_drained_async(m->t[obj], &s->w);
    case K_SEM:
        return band_sem_acquire_async(m->sem, want, &s->w);
    default:
        return BAND_EINVAL;
    }
}

static void do_unwatch(struct coord_model *m, struct slot *s, const char *what)
{
    int exp;
    if (s->watcher < 0) {
        exp = BAND_EINVAL;
    } else {
        struct rscope *r = &m->rs[s->watcher];
        if (s->fired) {
            exp = BAND_EALREADY;
            m->counts.unwatched_fired++;
        } else {
            exp = 0;
            m->counts.unwatched_ok++;
            if (!fifo_remove(&r->watch, s->idx))
                fail(m, "model: link %d not on t%d's list", s->idx, s->watcher);
        }
        r->links--;
        s->watcher = -1;
        s->fired = 0;
    }
    expect_int(m, what, exp, band_shutdown_unwatch(&s->link));
}

/* Submit slot @s to @kind/@obj (unwatching its link first: a waiter is reused only after
 * unwatch), comparing the answer. */
static void submit(struct coord_model *m, struct slot *s, enum kind kind, int obj, uint64_t want,
                   const char *what)
{
    if (s->wakes < s->exp_wakes)
        return; /* its wake has not run yet: the waiter is not the owner's to reuse */
    if (s->watcher >= 0 && s->state != ST_QUEUED)
        do_unwatch(m, s, "unwatch before reuse");
    int exp;
    if (s->state == ST_QUEUED) {
        exp = BAND_EINVAL; /* already pending: untouched */
    } else if (kind == K_SEM) {
        struct rsem *r = &m->rsem;
        s->kind = kind;
        s->obj = 0;
        s->want = want;
        if (r->closed) {
            exp = BAND_ECLOSED;
        } else if (r->q.n == 0 && r->avail >= want) {
            r->avail -= want;
            exp = 0;
        } else {
            if (r->q.n == 0) {
                r->head_got = r->avail; /* the new head holds what is available */
                r->avail = 0;
            }
            fifo_push(m, &r->q, s->idx);
            r->queued++;
            exp = BAND_PENDING;
        }
    } else {
        s->kind = kind;
        s->obj = obj;
        if (ref_satisfied(m, kind, obj)) {
            exp = 0;
        } else {
            switch (kind) {
            case K_GROUP:
                fifo_push(m, &m->rg[obj].q, s->idx);
                m->rg[obj].queued++;
                break;
            case K_LATCH:
                fifo_push(m, &m->rl[obj].q, s->idx);
                m->rl[obj].queued++;
                break;
            case K_SREQ:
                fifo_push(m, &m->rs[obj].rq, s->idx);
                m->rs[obj].queued++;
                break;
            default:
                fifo_push(m, &m->rs[obj].dq, s->idx);
                m->rs[obj].queued++;
                break;
            }
            exp = BAND_PENDING;
        }
    }
    if (exp == BAND_PENDING) {
        s->state = ST_QUEUED;
        m->counts.pending++;
    } else if (exp != BAND_EINVAL) {
        s->state = ST_IDLE; /* ended at once: the status says how */
        s->status = exp;
        m->counts.at_once++;
    }
    expect_int(m, what, exp, real_submit(m, s, kind, obj, want));
}

static void do_watch(struct coord_model *m, struct slot *s, int sc)
{
    struct rscope *r = &m->rs[sc];
    int exp;
    if (s->watcher >= 0 || s->state == ST_IDLE) {
        exp = BAND_EINVAL;
    } else if (s->state == ST_DONE) {
        exp = BAND_EALREADY;
    } else if (r->requested) {
        exp = r->reason;
        m->counts.reasons++;
    } else {
        exp = 0;
        fifo_push(m, &r->watch, s->idx);
        r->links++;
        s->watcher = sc;
        s->fired = 0;
    }
    expect_int(m, "watch", exp, band_shutdown_watch(m->t[sc], &s->link, &s->w));
}

static void do_cancel(struct coord_model *m, struct slot *s, int reason, const char *what)
{
    int exp;
    if (reason != BAND_ECANCELED && reason != BAND_ETIMEDOUT) {
        exp = BAND_EINVAL;
    } else if (s->state == ST_QUEUED) {
        exp = 0;
        ref_withdraw(m, s, reason, -1);
        m->counts.cancels_ok++;
    } else if (s->state == ST_DONE) {
        exp = BAND_EALREADY;
    } else {
        exp = BAND_EINVAL;
    }
    expect_int(m, what, exp, band_waiter_cancel(&s->w, reason));
}

/* ---------------------------------------------------------------------------------- */
/* blocking waits                                                                      */

struct wait_args {
    band_time deadline;
    band_cancel *tok;
    int tok_req;
    int future; /* a short deadline in the future on a wait that would have to wait */
};

static void read_wait(struct coord_model *m, int satisfied, struct wait_args *a)
{
    uint8_t b = next_byte(m);
    int tk = (b >> 2) % TK_COUNT;
    a->tok = token_ptr(m, tk);
    a->tok_req = token_requested(m, tk);
    a->future = 0;
    switch (b & 3) {
    case 0:
        a->deadline = 0;
        break;
    case 1:
        a->deadline = band_now() - 1;
        break;
    case 2:
        if (m->depth == 0) {
            a->deadline = band_now() + SHORT_WAIT;
            a->future = !satisfied && !a->tok_req;
        } else {
            a->deadline = band_now() - 1; /* no sleeping inside wakes */
        }
        break;
    default: /* unbounded: only where the answer comes at once */
        a->deadline = satisfied || a->tok_req ? BAND_FOREVER : 0;
        break;
    }
}

static int wait_expect(struct coord_model *m, int satisfied, const struct wait_args *a)
{
    if (satisfied)
        return 0;
    if (a->tok_req) {
        m->counts.canceled_waits++;
        return BAND_ECANCELED;
    }
    if (!a->future)
        m->counts.expired_waits++;
    return BAND_ETIMEDOUT;
}

/* After a short future wait that timed out: queued and timed out, or found the deadline
 * passed. The counters tell; the model follows. */
static void timed_wait_counted(struct coord_model *m, uint64_t *queued, uint64_t *timeouts,
                               uint64_t real_queued, uint64_t real_timeouts)
{
    if (real_queued == *queued + 1 && real_timeouts == *timeouts + 1) {
        (*queued)++;
        (*timeouts)++;
        m->counts.timed_queued++;
    }
}

/* ---------------------------------------------------------------------------------- */
/* operations                                                                          */

static void op_g_add(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    struct rgroup *r = &m->rg[i];
    uint64_t n = read_add_amount(m, r->count);
    int exp = 0;
    if (n > BAND_GROUP_MAX - r->count)
        exp = BAND_EOVERFLOW;
    else
        r->count += n;
    expect_int(m, "group_add", exp, band_group_add(m->g[i], n));
}

static void op_g_done(struct coord_model *m)
{
    uint8_t b = next_byte(m);
    int i = b & 1;
    struct rgroup *r = &m->rg[i];
    if (b & 2) {
        int exp = ref_down(m, r, 1, 0);
        expect_int(m, "group_done", exp, band_group_done(m->g[i]));
    } else {
        uint64_t n = read_down_amount(m, r->count);
        int exp = ref_down(m, r, n, 0);
        expect_int(m, "group_done_n", exp, band_group_done_n(m->g[i], n));
    }
}

static void op_g_try(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    expect_int(m, "group_try_wait", m->rg[i].count == 0 ? 0 : BAND_EAGAIN,
               band_group_try_wait(m->g[i]));
}

static void op_g_wait(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    struct rgroup *r = &m->rg[i];
    struct wait_args a;
    int sat = r->count == 0;
    read_wait(m, sat, &a);
    int exp = wait_expect(m, sat, &a);
    int rc = band_group_wait(m->g[i], a.deadline, a.tok);
    if (a.future && rc == BAND_ETIMEDOUT) {
        band_group_stats st;
        if (band_group_get_stats(m->g[i], &st) == 0)
            timed_wait_counted(m, &r->queued, &r->timeouts, st.queued, st.timeouts);
    }
    expect_int(m, "group_wait", exp, rc);
}

static void op_g_async(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    submit(m, pick_slot(m), K_GROUP, i, 0, "group_wait_async");
}

static void op_l_down(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    struct rgroup *r = &m->rl[i];
    uint64_t n = read_down_amount(m, r->count);
    int exp = ref_down(m, r, n, 1);
    expect_int(m, "latch_count_down", exp, band_latch_count_down(m->l[i], n));
}

static void op_l_try(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    expect_int(m, "latch_try_wait", m->rl[i].count == 0 ? 0 : BAND_EAGAIN,
               band_latch_try_wait(m->l[i]));
}

static void op_l_wait(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    struct rgroup *r = &m->rl[i];
    struct wait_args a;
    int sat = r->count == 0;
    read_wait(m, sat, &a);
    int exp = wait_expect(m, sat, &a);
    int rc = band_latch_wait(m->l[i], a.deadline, a.tok);
    if (a.future && rc == BAND_ETIMEDOUT) {
        band_latch_stats st;
        if (band_latch_get_stats(m->l[i], &st) == 0)
            timed_wait_counted(m, &r->queued, &r->timeouts, st.queued, st.timeouts);
    }
    expect_int(m, "latch_wait", exp, rc);
}

static void op_l_async(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    submit(m, pick_slot(m), K_LATCH, i, 0, "latch_wait_async");
}

static void op_l_arrive(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    struct rgroup *r = &m->rl[i];
    uint64_t n = read_down_amount(m, r->count);
    int exp = ref_down(m, r, n, 1); /* the count-down first; its wakes run in the call */
    struct wait_args a;
    int sat = r->count == 0;
    read_wait(m, sat, &a);
    if (exp == 0)
        exp = wait_expect(m, sat, &a);
    else
        a.future = 0; /* refused: it does not wait */
    int rc = band_latch_arrive_and_wait(m->l[i], n, a.deadline, a.tok);
    if (a.future && rc == BAND_ETIMEDOUT) {
        band_latch_stats st;
        if (band_latch_get_stats(m->l[i], &st) == 0)
            timed_wait_counted(m, &r->queued, &r->timeouts, st.queued, st.timeouts);
    }
    expect_int(m, "latch_arrive_and_wait", exp, rc);
}

static void op_s_request(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    int reason = read_request_reason(m);
    int exp = ref_request(m, i, reason);
    expect_int(m, "shutdown_request", exp, band_shutdown_request(m->t[i], reason));
}

static void op_s_join(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    int exp = ref_join(m, i);
    expect_int(m, "shutdown_join", exp, band_shutdown_join(m->t[i]));
}

static void op_s_leave(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    int exp = ref_leave(m, i);
    expect_int(m, "shutdown_leave", exp, band_shutdown_leave(m->t[i]));
}

static void op_s_wait(struct coord_model *m)
{
    uint8_t b = next_byte(m);
    int i = b & 1;
    int drained = (b >> 1) & 1;
    struct rscope *r = &m->rs[i];
    struct wait_args a;
    int sat = ref_satisfied(m, drained ? K_SDRAIN : K_SREQ, i);
    read_wait(m, sat, &a);
    int exp = wait_expect(m, sat, &a);
    int rc = drained ? band_shutdown_wait_drained(m->t[i], a.deadline, a.tok)
                     : band_shutdown_wait_requested(m->t[i], a.deadline, a.tok);
    if (a.future && rc == BAND_ETIMEDOUT) {
        band_shutdown_stats st;
        if (band_shutdown_get_stats(m->t[i], &st) == 0)
            timed_wait_counted(m, &r->queued, &r->timeouts, st.queued, st.timeouts);
    }
    expect_int(m, drained ? "shutdown_wait_drained" : "shutdown_wait_requested", exp, rc);
}

static void op_s_async(struct coord_model *m)
{
    uint8_t b = next_byte(m);
    int i = b & 1;
    int drained = (b >> 1) & 1;
    submit(m, pick_slot(m), drained ? K_SDRAIN : K_SREQ, i, 0,
           drained ? "shutdown_wait_drained_async" : "shutdown_wait_requested_async");
}

static void op_s_watch(struct coord_model *m)
{
    int i = next_byte(m) & 1;
    do_watch(m, pick_slot(m), i);
}

static void op_s_unwatch(struct coord_model *m)
{
    struct slot *s = pick_slot(m);
    if (forbidden_unwatch(m, s->idx))
        return; /* the scope is cancelling this very link's waiter right now */
    do_unwatch(m, s, "unwatch");
}

static void op_sem_async(struct coord_model *m)
{
    uint8_t b = next_byte(m);
    submit(m, pick_slot(m), K_SEM, 0, 1 + (uint64_t)(b % 3), "sem_acquire_async");
}

static void op_sem_release(struct coord_model *m)
{
    uint8_t b = next_byte(m);
    if (b & 1) {
        uint64_t n = 1 + (uint64_t)((b >> 1) % 3);
        if (m->rsem.q.n == 0)
            m->rsem.avail += n;
        else
            ref_sem_grant(m, n, -1);
        expect_int(m, "sem_release", 0, band_sem_release(m->sem, n));
    } else {
        uint64_t up_to = (b >> 1) % 5 == 4 ? UINT64_MAX : 1 + (uint64_t)((b >> 1) % 5);
        uint64_t take = m->rsem.avail < up_to ? m->rsem.avail : up_to;
        m->rsem.avail -= take;
        expect_u64(m, "sem_drain", take, band_sem_drain(m->sem, up_to));
    }
}

static void op_sem_close(struct coord_model *m)
{
    struct rsem *r = &m->rsem;
    if (!r->closed) {
        r->closed = 1;
        uint64_t pool = r->head_got;
        r->head_got = 0;
        while (r->q.n > 0 && !m->failed) {
            int k = fifo_pop(&r->q);
            r->closed_fails++;
            ref_finish(m, k, BAND_ECLOSED, -1);
        }
        r->avail += pool;
    }
    expect_int(m, "sem_close", 0, band_sem_close(m->sem));
}

static void op_cancel(struct coord_model *m)
{
    struct slot *s = pick_slot(m);
    do_cancel(m, s, read_cancel_reason(m), "cancel");
}

/* Request a token, or (not inside a wake) destroy and recreate a child or the independent
 * token. */
static void op_token(struct coord_model *m)
{
    uint8_t b = next_byte(m);
    int target = (b >> 1) % 5; /* S0, S1, C0, C1, U */
    int toggle = (b & 1) && m->depth == 0;
    if (target < 2) {
        struct rscope *r = &m->rs[target];
        int exp = r->token_req ? BAND_EALREADY : 0;
        r->token_req = 1;
        expect_int(m, "cancel_request(scope token)", exp,
                   band_cancel_request(band_shutdown_cancel(m->t[target])));
    } else if (target < 4) {
        int sc = target - 2;
        struct rscope *r = &m->rs[sc];
        if (!toggle) {
            int exp = !r->child ? BAND_EINVAL : child_requested(m, sc) ? BAND_EALREADY : 0;
            if (r->child)
                r->child_req = 1;
            expect_int(m, "cancel_request(child)", exp, band_cancel_request(m->child[sc]));
        } else if (r->child) {
            r->child = 0;
            r->child_req = 0;
            expect_int(m, "cancel_destroy(child)", 0, band_cancel_destroy(m->child[sc]));
            m->child[sc] = NULL;
        } else if (!r->token_req) {
            band_cancel_opts o = {.parent = band_shutdown_cancel(m->t[sc])};
            int rc = band_cancel_create(&m->child[sc], &o);
            expect_int(m, "cancel_create(child)", 0, rc);
            if (rc != 0)
                m->child[sc] = NULL;
            else
                r->child = 1;
        }
    } else if (!toggle) {
        int exp = m->u_req ? BAND_EALREADY : 0;
        m->u_req = 1;
        expect_int(m, "cancel_request(independent)", exp, band_cancel_request(m->u));
    } else {
        expect_int(m, "cancel_destroy(independent)", 0, band_cancel_destroy(m->u));
        m->u = NULL;
        m->u_req = 0;
        int rc = band_cancel_create(&m->u, NULL);
        expect_int(m, "cancel_create(independent)", 0, rc);
        if (rc != 0)
            m->u = NULL;
    }
}

/* ---------------------------------------------------------------------------------- */
/* object lifetime                                                                     */

static const uint64_t latch_counts[8] = {0, 1, 1, 2, 2, 3, 5, UINT64_MAX};

static int create_object(struct coord_model *m, int ob)
{
    int rc;
    switch (ob) {
    case OB_G0:
    case OB_G1: {
        int i = ob - OB_G0;
        memset(&m->rg[i], 0, sizeof(m->rg[i]));
        rc = band_group_create(&m->g[i]);
        break;
    }
    case OB_L0:
    case OB_L1: {
        int i = ob - OB_L0;
        memset(&m->rl[i], 0, sizeof(m->rl[i]));
        m->rl[i].count = latch_counts[next_byte(m) & 7];
        rc = band_latch_create(&m->l[i], m->rl[i].count);
        break;
    }
    case OB_S0:
    case OB_S1: {
        int i = ob - OB_S0;
        memset(&m->rs[i], 0, sizeof(m->rs[i]));
        rc = band_shutdown_create(&m->t[i]);
        break;
    }
    default: {
        memset(&m->rsem, 0, sizeof(m->rsem));
        static const uint64_t permits[4] = {0, 0, 1, 2};
        m->rsem.avail = permits[next_byte(m) & 3];
        rc = band_sem_create(&m->sem, m->rsem.avail, NULL);
        break;
    }
    }
    if (rc != 0) {
        fail(m, "create object %d: %s", ob, band_err_name(rc));
        return -1;
    }
    m->counts.objects++;
    return 0;
}

static int real_destroy(struct coord_model *m, int ob)
{
    switch (ob) {
    case OB_G0:
    case OB_G1:
        return band_group_destroy(m->g[ob - OB_G0]);
    case OB_L0:
    case OB_L1:
        return band_latch_destroy(m->l[ob - OB_L0]);
    case OB_S0:
    case OB_S1:
        return band_shutdown_destroy(m->t[ob - OB_S0]);
    default:
        return band_sem_destroy(m->sem);
    }
}

static void forget_object(struct coord_model *m, int ob)
{
    switch (ob) {
    case OB_G0:
    case OB_G1:
        m->g[ob - OB_G0] = NULL;
        break;
    case OB_L0:
    case OB_L1:
        m->l[ob - OB_L0] = NULL;
        break;
    case OB_S0:
    case OB_S1:
        m->t[ob - OB_S0] = NULL;
        break;
    default:
        m->sem = NULL;
        break;
    }
}

/* @ob is not busy: unwatch the links of the waiters it served (before their primitive
 * goes), destroy it, forget those waiters, and (@recreate) make a new one. */
static void destroy_object(struct coord_model *m, int ob, int recreate)
{
    for (int k = 0; k < NSLOT && !m->failed; k++) {
        struct slot *s = &m->s[k];
        if (slot_targets(s, ob) && s->watcher >= 0)
            do_unwatch(m, s, "unwatch before destroy");
    }
    if (m->failed)
        return;
    int rc = real_destroy(m, ob);
    expect_int(m, "destroy", 0, rc);
    if (rc != 0)
        return;
    forget_object(m, ob);
    for (int k = 0; k < NSLOT; k++) {
        struct slot *s = &m->s[k];
        if (slot_targets(s, ob)) {
            band_waiter_init(&s->w, slot_wake, s);
            s->state = ST_IDLE;
            s->status = 0;
            s->kind = K_NONE;
            s->obj = 0;
        }
    }
    if (recreate)
        create_object(m, ob);
}

/* Make @ob idle: cancel its queued waits, and for a scope unwatch its links, let its
 * participants leave and destroy its child token. */
static void clean_object(struct coord_model *m, int ob)
{
    for (int k = 0; k < NSLOT && !m->failed; k++) {
        struct slot *s = &m->s[k];
        if (slot_targets(s, ob) && s->state == ST_QUEUED)
            do_cancel(m, s, BAND_ECANCELED, "cancel (clean)");
    }
    if (ob != OB_S0 && ob != OB_S1)
        return;
    int sc = ob - OB_S0;
    struct rscope *r = &m->rs[sc];
    for (int k = 0; k < NSLOT && !m->failed; k++)
        if (m->s[k].watcher == sc)
            do_unwatch(m, &m->s[k], "unwatch (clean)");
    while (r->parts > 0 && !m->failed) {
        int exp = ref_leave(m, sc);
        expect_int(m, "leave (clean)", exp, band_shutdown_leave(m->t[sc]));
    }
    if (r->child && !m->failed) {
        r->child = 0;
        r->child_req = 0;
        expect_int(m, "cancel_destroy(child, clean)", 0, band_cancel_destroy(m->child[sc]));
        m->child[sc] = NULL;
    }
}

/* Destroy, after removing some of what keeps the object busy (each reason a scope has is
 * dropped or kept by one bit), so that every reason alone is seen to refuse. */
static void op_destroy_busy(struct coord_model *m)
{
    uint8_t b = next_byte(m);
    int ob = b % OB_COUNT;
    unsigned drop = (unsigned)(b >> 3);
    m->act[m->depth] = WA_NONE; /* the cancels' and leaves' wakes do nothing */
    for (int k = 0; k < NSLOT && (drop & 1) && !m->failed; k++) {
        struct slot *s = &m->s[k];
        if (slot_targets(s, ob) && s->state == ST_QUEUED)
            do_cancel(m, s, BAND_ECANCELED, "cancel (before destroy)");
    }
    if ((ob == OB_S0 || ob == OB_S1) && !m->failed) {
        int sc = ob - OB_S0;
        struct rscope *r = &m->rs[sc];
        while ((drop & 2) && r->parts > 0 && !m->failed) {
            int exp = ref_leave(m, sc);
            expect_int(m, "leave (before destroy)", exp, band_shutdown_leave(m->t[sc]));
        }
        for (int k = 0; k < NSLOT && (drop & 4) && !m->failed; k++)
            if (m->s[k].watcher == sc)
                do_unwatch(m, &m->s[k], "unwatch (before destroy)");
        if ((drop & 8) && r->child && !m->failed) {
            r->child = 0;
            r->child_req = 0;
            expect_int(m, "cancel_destroy(child)", 0, band_cancel_destroy(m->child[sc]));
            m->child[sc] = NULL;
        }
        if (!m->failed && scope_busy(m, sc)) {
            /* Count the refusals whose only reason is one of them. */
            int waits = r->rq.n > 0 || r->dq.n > 0, parts = r->parts > 0;
            int links = r->links > 0, child = r->child;
            if (waits + parts + links + child == 1) {
                if (waits)
                    m->counts.busy_waits++;
                else if (parts)
                    m->counts.busy_parts++;
                else if (links)
                    m->counts.busy_links++;
                else
                    m->counts.busy_child++;
            }
        }
    } else if (!m->failed && object_busy(m, ob)) {
        m->counts.busy_waits++;
    }
    if (m->failed)
        return;
    if (object_busy(m, ob))
        expect_int(m, "destroy(busy)", BAND_EBUSY, real_destroy(m, ob));
    else
        destroy_object(m, ob, 1); /* not busy: it goes, and a new one takes its place */
}

static void op_recreate(struct coord_model *m)
{
    int ob = next_byte(m) % OB_COUNT;
    m->act[m->depth] = WA_NONE; /* the cancels' wakes do nothing: cleaning ends */
    clean_object(m, ob);
    if (m->failed)
        return;
    /* Cancelling the semaphore's head can grant the next waiter, which a wake may requeue;
     * a scope's drain waits may be released by the leaves. Clean until idle. */
    for (int tries = 0; object_busy(m, ob) && tries < 4 && !m->failed; tries++)
        clean_object(m, ob);
    if (m->failed)
        return;
    if (object_busy(m, ob)) {
        fail(m, "model: object %d still busy after cleaning", ob);
        return;
    }
    destroy_object(m, ob, 1);
}

static void wake_null(band_waiter *w)
{
    (void)w;
}

/* A waiter that no function may touch: EINVAL, never queued, status untouched. */
static void expect_untouched(struct coord_model *m, const char *what, const band_waiter *w)
{
    if (band_waiter_is_pending(w) || band_waiter_status(w) != 0)
        fail(m, "%s: the refused waiter was changed", what);
}

static void op_misuse(struct coord_model *m)
{
    band_waiter w, nowake;
    band_waiter_init(&w, wake_null, NULL);
    band_waiter_init(&nowake, NULL, NULL);
    band_shutdown_link link;
    band_shutdown_link_init(&link);
    band_group_stats gs;
    band_latch_stats ls;
    band_shutdown_stats ts;
    band_group *gp = NULL;
    band_latch *lp = NULL;
    band_shutdown *tp = NULL;
    switch (next_byte(m) % 16) {
    case 0:
        expect_int(m, "group_create(NULL)", BAND_EINVAL, band_group_create(NULL));
        expect_int(m, "group_add(NULL)", BAND_EINVAL, band_group_add(NULL, 1));
        expect_int(m, "group_done(NULL)", BAND_EINVAL, band_group_done(NULL));
        expect_int(m, "group_done_n(NULL, 0)", BAND_EINVAL, band_group_done_n(NULL, 0));
        break;
    case 1:
        expect_u64(m, "group_count(NULL)", 0, band_group_count(NULL));
        expect_int(m, "group_try_wait(NULL)", BAND_EINVAL, band_group_try_wait(NULL));
        expect_int(m, "group_wait(NULL)", BAND_EINVAL, band_group_wait(NULL, 0, NULL));
        expect_int(m, "group_destroy(NULL)", 0, band_group_destroy(NULL));
        break;
    case 2:
        expect_int(m, "group_wait_async(NULL, w)", BAND_EINVAL, band_group_wait_async(NULL, &w));
        expect_int(m, "group_wait_async(g, NULL)", BAND_EINVAL,
                   band_group_wait_async(m->g[0], NULL));
        expect_int(m, "group_wait_async(no wake)", BAND_EINVAL,
                   band_group_wait_async(m->g[1], &nowake));
        expect_untouched(m, "group_wait_async(no wake)", &nowake);
        break;
    case 3:
        expect_int(m, "group_get_stats(NULL)", BAND_EINVAL, band_group_get_stats(NULL, &gs));
        expect_int(m, "group_get_stats(out NULL)", BAND_EINVAL,
                   band_group_get_stats(m->g[0], NULL));
        expect_int(m, "latch_get_stats(NULL)", BAND_EINVAL, band_latch_get_stats(NULL, &ls));
        expect_int(m, "latch_get_stats(out NULL)", BAND_EINVAL,
                   band_latch_get_stats(m->l[0], NULL));
        expect_int(m, "shutdown_get_stats(NULL)", BAND_EINVAL, band_shutdown_get_stats(NULL, &ts));
        expect_int(m, "shutdown_get_stats(out NULL)", BAND_EINVAL,
                   band_shutdown_get_stats(m->t[0], NULL));
        break;
    case 4:
        expect_int(m, "latch_create(NULL)", BAND_EINVAL, band_latch_create(NULL, 1));
        expect_int(m, "latch_count_down(NULL)", BAND_EINVAL, band_latch_count_down(NULL, 0));
        expect_u64(m, "latch_count(NULL)", 0, band_latch_count(NULL));
        expect_int(m, "latch_try_wait(NULL)", BAND_EINVAL, band_latch_try_wait(NULL));
        expect_int(m, "latch_destroy(NULL)", 0, band_latch_destroy(NULL));
        break;
    case 5:
        expect_int(m, "latch_wait(NULL)", BAND_EINVAL, band_latch_wait(NULL, 0, NULL));
        expect_int(m, "latch_arrive_and_wait(NULL)", BAND_EINVAL,
                   band_latch_arrive_and_wait(NULL, 0, 0, NULL));
        expect_int(m, "latch_wait_async(NULL, w)", BAND_EINVAL, band_latch_wait_async(NULL, &w));
        expect_int(m, "latch_wait_async(l, NULL)", BAND_EINVAL,
                   band_latch_wait_async(m->l[0], NULL));
        expect_int(m, "latch_wait_async(no wake)", BAND_EINVAL,
                   band_latch_wait_async(m->l[1], &nowake));
        expect_untouched(m, "latch_wait_async(no wake)", &nowake);
        break;
    case 6:
        expect_int(m, "shutdown_create(NULL)", BAND_EINVAL, band_shutdown_create(NULL));
        expect_int(m, "shutdown_request(NULL)", BAND_EINVAL,
                   band_shutdown_request(NULL, BAND_ECANCELED));
        expect_int(m, "shutdown_is_requested(NULL)", 0, band_shutdown_is_requested(NULL));
        expect_int(m, "shutdown_reason(NULL)", 0, band_shutdown_reason(NULL));
        if (band_shutdown_cancel(NULL) != NULL)
            fail(m, "shutdown_cancel(NULL) is not NULL");
        expect_u64(m, "shutdown_participants(NULL)", 0, band_shutdown_participants(NULL));
        expect_int(m, "shutdown_destroy(NULL)", 0, band_shutdown_destroy(NULL));
        break;
    case 7:
        expect_int(m, "shutdown_join(NULL)", BAND_EINVAL, band_shutdown_join(NULL));
        expect_int(m, "shutdown_leave(NULL)", BAND_EINVAL, band_shutdown_leave(NULL));
        expect_int(m, "shutdown_wait_requested(NULL)", BAND_EINVAL,
                   band_shutdown_wait_requested(NULL, 0, NULL));
        expect_int(m, "shutdown_wait_drained(NULL)", BAND_EINVAL,
                   band_shutdown_wait_drained(NULL, 0, NULL));
        break;
    case 8:
        expect_int(m, "wait_requested_async(NULL, w)", BAND_EINVAL,
                   band_shutdown_wait_requested_async(NULL, &w));
        expect_int(m, "wait_requested_async(t, NULL)", BAND_EINVAL,
                   band_shutdown_wait_requested_async(m->t[0], NULL));
        expect_int(m, "wait_requested_async(no wake)", BAND_EINVAL,
                   band_shutdown_wait_requested_async(m->t[1], &nowake));
        expect_untouched(m, "wait_requested_async(no wake)", &nowake);
        expect_int(m, "wait_drained_async(NULL, w)", BAND_EINVAL,
                   band_shutdown_wait_drained_async(NULL, &w));
        expect_int(m, "wait_drained_async(t, NULL)", BAND_EINVAL,
                   band_shutdown_wait_drained_async(m->t[1], NULL));
        expect_int(m, "wait_drained_async(no wake)", BAND_EINVAL,
                   band_shutdown_wait_drained_async(m->t[0], &nowake));
        expect_untouched(m, "wait_drained_async(no wake)", &nowake);
        break;
    case 9:
        expect_int(m, "watch(NULL, link, w)", BAND_EINVAL, band_shutdown_watch(NULL, &link, &w));
        expect_int(m, "watch(t, NULL, w)", BAND_EINVAL, band_shutdown_watch(m->t[0], NULL, &w));
        expect_int(m, "watch(t, link, NULL)", BAND_EINVAL,
                   band_shutdown_watch(m->t[1], &link, NULL));
        expect_int(m, "watch(never submitted)", BAND_EINVAL,
                   band_shutdown_watch(m->t[0], &link, &w));
        expect_int(m, "unwatch(NULL)", BAND_EINVAL, band_shutdown_unwatch(NULL));
        expect_int(m, "unwatch(idle link)", BAND_EINVAL, band_shutdown_unwatch(&link));
        band_shutdown_link_init(NULL); /* must not crash */
        break;
    case 10:
        /* A wait that completed at once is not pending: watch and cancel refuse it. */
        if (m->rg[0].count == 0) {
            expect_int(m, "group_wait_async(count 0)", 0, band_group_wait_async(m->g[0], &w));
            expect_int(m, "watch(completed at once)", BAND_EINVAL,
                       band_shutdown_watch(m->t[1], &link, &w));
            expect_int(m, "cancel(completed at once)", BAND_EINVAL,
                       band_waiter_cancel(&w, BAND_ECANCELED));
        }
        if (m->rs[0].requested) {
            expect_int(m, "wait_requested_async(requested)", 0,
                       band_shutdown_wait_requested_async(m->t[0], &w));
            expect_int(m, "watch(completed at once)", BAND_EINVAL,
                       band_shutdown_watch(m->t[0], &link, &w));
        }
        break;
    case 11:
        expect_int(m, "waiter_cancel(NULL)", BAND_EINVAL, band_waiter_cancel(NULL, BAND_ECANCELED));
        expect_int(m, "waiter_cancel(never submitted)", BAND_EINVAL,
                   band_waiter_cancel(&w, BAND_ETIMEDOUT));
        expect_int(m, "waiter_status(NULL)", BAND_EINVAL, band_waiter_status(NULL));
        break;
    case 12:
        expect_int(m, "cancel_request(NULL)", BAND_EINVAL, band_cancel_request(NULL));
        expect_int(m, "cancel_is_requested(NULL)", 0, band_cancel_is_requested(NULL));
        break;
    case 13:
        /* A past deadline with a requested token: the token wins. */
        if (m->rg[1].count > 0 && m->u_req) {
            m->counts.canceled_waits++;
            expect_int(m, "group_wait(past, requested token)", BAND_ECANCELED,
                       band_group_wait(m->g[1], 0, m->u));
        }
        if (m->rl[1].count > 0 && m->u_req) {
            m->counts.canceled_waits++;
            expect_int(m, "latch_wait(past, requested token)", BAND_ECANCELED,
                       band_latch_wait(m->l[1], 0, m->u));
        }
        break;
    case 14:
        /* Spare objects: a group may be destroyed with a count above 0. */
        expect_int(m, "group_create(spare)", 0, band_group_create(&gp));
        expect_int(m, "group_destroy(spare, count 1)", 0,
                   band_group_add(gp, 1) == 0 ? band_group_destroy(gp) : -1);
        expect_int(m, "latch_create(spare)", 0, band_latch_create(&lp, UINT64_MAX));
        expect_int(m, "latch_destroy(spare)", 0, band_latch_destroy(lp));
        break;
    default:
        expect_int(m, "shutdown_create(spare)", 0, band_shutdown_create(&tp));
        expect_int(m, "shutdown_request(spare, 0)", BAND_EINVAL, band_shutdown_request(tp, 0));
        expect_int(m, "shutdown_request(spare, 1)", BAND_EINVAL, band_shutdown_request(tp, 1));
        expect_int(m, "shutdown_join(spare)", 0, band_shutdown_join(tp));
        expect_int(m, "shutdown_destroy(spare, joined)", BAND_EBUSY, band_shutdown_destroy(tp));
        expect_int(m, "shutdown_leave(spare)", 0, band_shutdown_leave(tp));
        expect_int(m, "shutdown_destroy(spare)", 0, band_shutdown_destroy(tp));
        break;
    }
}

/* ---------------------------------------------------------------------------------- */
/* the interpreter                                                                     */

static const char *const op_names[CM_OP_COUNT] = {
    "group_add",  "group_done", "group_try_wait", "group_wait",    "group_wait_async",
    "latch_down", "latch_try",  "latch_wait",     "latch_async",   "latch_arrive",
    "request",    "join",       "leave",          "shutdown_wait", "shutdown_async",
    "watch",      "unwatch",    "sem_async",      "sem_release",   "sem_close",
    "cancel",     "token",      "destroy(busy)",  "recreate",      "misuse",
};

/* Weights out of 256. */
static const uint8_t op_weights[CM_OP_COUNT] = {
    12, 14, 4,  8,  18,        /* group */
    10, 4,  6,  14, 6,         /* latch */
    6,  12, 12, 8,  16, 22, 8, /* shutdown */
    21, 12, 1,                 /* sem */
    16, 6,  4,  12, 4,         /* cancel, token, destroy(busy), recreate, misuse */
};

static enum coord_model_op decode_op(struct coord_model *m)
{
    unsigned b = next_byte(m), acc = 0;
    for (int i = 0; i < CM_OP_COUNT; i++) {
        acc += op_weights[i];
        if (b < acc)
            return (enum coord_model_op)i;
    }
    return CM_OP_G_TRY;
}

static int decode_action(struct coord_model *m)
{
    uint8_t b = next_byte(m);
    if (b < 100)
        return WA_NONE;
    if (b < 130)
        return WA_CHECK;
    if (b < 165)
        return WA_UNWATCH;
    if (b < 210)
        return WA_RESUBMIT;
    return WA_POKE;
}

static void run_op(struct coord_model *m, enum coord_model_op op)
{
    switch (op) {
    case CM_OP_G_ADD:
        op_g_add(m);
        break;
    case CM_OP_G_DONE:
        op_g_done(m);
        break;
    case CM_OP_G_TRY:
        op_g_try(m);
        break;
    case CM_OP_G_WAIT:
        op_g_wait(m);
        break;
    case CM_OP_G_ASYNC:
        op_g_async(m);
        break;
    case CM_OP_L_DOWN:
        op_l_down(m);
        break;
    case CM_OP_L_TRY:
        op_l_try(m);
        break;
    case CM_OP_L_WAIT:
        op_l_wait(m);
        break;
    case CM_OP_L_ASYNC:
        op_l_async(m);
        break;
    case CM_OP_L_ARRIVE:
        op_l_arrive(m);
        break;
    case CM_OP_S_REQUEST:
        op_s_request(m);
        break;
    case CM_OP_S_JOIN:
        op_s_join(m);
        break;
    case CM_OP_S_LEAVE:
        op_s_leave(m);
        break;
    case CM_OP_S_WAIT:
        op_s_wait(m);
        break;
    case CM_OP_S_ASYNC:
        op_s_async(m);
        break;
    case CM_OP_S_WATCH:
        op_s_watch(m);
        break;
    case CM_OP_S_UNWATCH:
        op_s_unwatch(m);
        break;
    case CM_OP_SEM_ASYNC:
        op_sem_async(m);
        break;
    case CM_OP_SEM_RELEASE:
        op_sem_release(m);
        break;
    case CM_OP_SEM_CLOSE:
        op_sem_close(m);
        break;
    case CM_OP_CANCEL:
        op_cancel(m);
        break;
    case CM_OP_TOKEN:
        op_token(m);
        break;
    case CM_OP_DESTROY_BUSY:
        op_destroy_busy(m);
        break;
    case CM_OP_RECREATE:
        op_recreate(m);
        break;
    case CM_OP_MISUSE:
        op_misuse(m);
        break;
    case CM_OP_COUNT:
        break;
    }
}

/* What a wake does, in a frame of its own one level down. @in_fire: the link the scope is
 * cancelling while this wake runs (it must not be unwatched from here). */
static void wake_action(struct coord_model *m, struct slot *s, int action, int in_fire)
{
    const char *saved = m->opname;
    m->depth++;
    frame_open(m);
    m->forbid[m->depth] = in_fire;
    m->act[m->depth] = WA_NONE;
    switch (action) {
    case WA_CHECK:
        m->counts.wake_checks++;
        check_all(m, "check in a wake", 1);
        break;
    case WA_UNWATCH:
        if (s->watcher >= 0 && !forbidden_unwatch(m, s->idx)) {
            m->counts.wake_unwatches++;
            do_unwatch(m, s, "unwatch in a wake");
        }
        break;
    case WA_RESUBMIT:
        if (s->kind != K_NONE && !forbidden_unwatch(m, s->idx)) {
            m->counts.wake_resubmits++;
            if (s->watcher >= 0)
                do_unwatch(m, s, "unwatch in a wake");
            submit(m, s, s->kind, s->obj, s->want, "resubmit in a wake");
        }
        break;
    default: {
        /* Another operation from inside the wake; not the ones that destroy objects. */
        enum coord_model_op op = decode_op(m);
        if (op == CM_OP_DESTROY_BUSY || op == CM_OP_RECREATE || op == CM_OP_MISUSE)
            op = CM_OP_S_REQUEST;
        m->counts.wake_pokes++;
        m->counts.nested_ops++;
        m->opname = op_names[op];
        if (m->depth + 1 < MAXDEPTH)
            m->act[m->depth] = decode_action(m);
        run_op(m, op);
        break;
    }
    }
    frame_close(m, "operation in a wake");
    m->opname = saved;
    m->depth--;
}

static void trace_state(struct coord_model *m, enum coord_model_op op)
{
    fprintf(stderr, "#%llu %-16s act=%d |", (unsigned long long)m->opno, op_names[op], m->act[0]);
    for (int i = 0; i < NG; i++)
        fprintf(stderr, " g%d=%llu/%d", i, (unsigned long long)m->rg[i].count, m->rg[i].q.n);
    for (int i = 0; i < NL; i++)
        fprintf(stderr, " l%d=%llu/%d", i, (unsigned long long)m->rl[i].count, m->rl[i].q.n);
    for (int i = 0; i < NS; i++)
        fprintf(stderr, " t%d=%s%d,p%llu,r%d,d%d,w%d,l%llu", i, m->rs[i].requested ? "R" : "",
                m->rs[i].reason, (unsigned long long)m->rs[i].parts, m->rs[i].rq.n, m->rs[i].dq.n,
                m->rs[i].watch.n, (unsigned long long)m->rs[i].links);
    fprintf(stderr, " sem=%llu+%llu/%d%s |", (unsigned long long)m->rsem.avail,
            (unsigned long long)m->rsem.head_got, m->rsem.q.n, m->rsem.closed ? "C" : "");
    for (int k = 0; k < NSLOT; k++) {
        const struct slot *s = &m->s[k];
        fprintf(stderr, " %d:%c%c%d%s", k, "IQD"[s->state], "-glrds"[s->kind], s -> obj,
                s -> watcher < 0 ? ""
                     : s->fired  ? "F"
                                 : "W");
    }
    fprintf(stderr, "%s\n", m->failed ? " MISMATCH" : "");
}

static void step(struct coord_model *m)
{
    enum coord_model_op op = decode_op(m);
    m->opno++;
    m->opname = op_names[op];
    m->counts.ops[op]++;
    m->depth = 0;
    frame_open(m);
    m->act[0] = decode_action(m);
    run_op(m, op);
    frame_close(m, op_names[op]);
    if (!m->failed)
        check_all(m, op_names[op], 0);
    if (m->trace)
        trace_state(m, op);
}

static void reset_slots(struct coord_model *m)
{
    for (int k = 0; k < NSLOT; k++) {
        struct slot *s = &m->s[k];
        band_waiter_init(&s->w, slot_wake, s);
        band_shutdown_link_init(&s->link);
        s->m = m;
        s->idx = k;
        s->state = ST_IDLE;
        s->status = 0;
        s->kind = K_NONE;
        s->obj = 0;
        s->want = 0;
        s->watcher = -1;
        s->fired = 0;
        s->wakes = s->exp_wakes = 0;
    }
}

struct coord_model *coord_model_new(void)
{
    struct coord_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    reset_slots(m);
    const char *t = getenv("COORD_MODEL_TRACE");
    m->trace = t != NULL && *t != '\0' && *t != '0';
    return m;
}

/* After a mismatch (or at the end of a failed run): free everything whatever its state,
 * checking nothing. */
static void teardown(struct coord_model *m)
{
    m->tearing = 1;
    for (int k = 0; k < NSLOT; k++)
        if (band_waiter_is_pending(&m->s[k].w))
            (void)band_waiter_cancel(&m->s[k].w, BAND_ECANCELED);
    for (int k = 0; k < NSLOT; k++)
        (void)band_shutdown_unwatch(&m->s[k].link);
    for (int i = 0; i < NS; i++) {
        if (m->child[i] != NULL && band_cancel_destroy(m->child[i]) == 0)
            m->child[i] = NULL;
        if (m->t[i] != NULL) {
            while (band_shutdown_participants(m->t[i]) > 0)
                (void)band_shutdown_leave(m->t[i]);
            if (band_shutdown_destroy(m->t[i]) == 0)
                m->t[i] = NULL;
        }
    }
    for (int i = 0; i < NG; i++)
        if (m->g[i] != NULL && band_group_destroy(m->g[i]) == 0)
            m->g[i] = NULL;
    for (int i = 0; i < NL; i++)
        if (m->l[i] != NULL && band_latch_destroy(m->l[i]) == 0)
            m->l[i] = NULL;
    if (m->sem != NULL && band_sem_destroy(m->sem) == 0)
        m->sem = NULL;
    if (m->u != NULL && band_cancel_destroy(m->u) == 0)
        m->u = NULL;
    m->tearing = 0;
    reset_slots(m);
}

/* The end of a run: clean and destroy every object, checking every answer. */
static void finish(struct coord_model *m)
{
    m->opname = "final";
    m->depth = 0;
    frame_open(m);
    m->act[0] = WA_NONE;
    for (int ob = 0; ob < OB_COUNT && !m->failed; ob++)
        clean_object(m, ob);
    frame_close(m, "final");
    if (!m->failed)
        check_all(m, "final", 0);
    for (int ob = 0; ob < OB_COUNT && !m->failed; ob++) {
        if (object_busy(m, ob))
            fail(m, "final: object %d still busy", ob);
        else
            destroy_object(m, ob, 0);
    }
    if (!m->failed) {
        expect_int(m, "cancel_destroy(independent)", 0, band_cancel_destroy(m->u));
        m->u = NULL;
    }
}

static int run(struct coord_model *m, uint64_t max_ops)
{
    teardown(m);
    m->failed = 0;
    m->err[0] = '\0';
    m->opno = 0;
    m->opname = NULL;
    m->depth = 0;
    m->u_req = 0;
    for (int ob = 0; ob < OB_COUNT && !m->failed; ob++)
        create_object(m, ob);
    if (!m->failed) {
        int rc = band_cancel_create(&m->u, NULL);
        if (rc != 0) {
            m->u = NULL;
            fail(m, "cancel_create: %s", band_err_name(rc));
        }
    }
    for (uint64_t i = 0; i < max_ops && !m->failed; i++) {
        if (model_input_done(&m->in))
            break;
        if (m->until != 0 && (i & 255) == 255 && band_now() > m->until)
            break;
        step(m);
    }
    if (!m->failed)
        finish(m);
    if (m->failed) {
        teardown(m);
        return -1;
    }
    return 0;
}

void coord_model_free(struct coord_model *m)
{
    if (m == NULL)
        return;
    teardown(m);
    free(m);
}

int coord_model_run_bytes(struct coord_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    m->until = 0;
    return run(m, UINT64_MAX);
}

int coord_model_run_seed(struct coord_model *m, uint64_t seed, uint64_t ops, band_time until)
{
    model_input_seed(&m->in, seed);
    m->until = until;
    return run(m, ops);
}

const char *coord_model_error(const struct coord_model *m)
{
    return m->err;
}

const struct coord_model_counts *coord_model_counts(const struct coord_model *m)
{
    return &m->counts;
}

/* SPDX-License-Identifier: MIT */
/*
 * admit_model.c - the reference model of multi-budget admission (band/admit.h) and the op
 * interpreter that compares it with the real thing (see admit_model.h). Public API only,
 * except the lock-free admission's test hook (race_admit()).
 *
 * The model
 * ---------
 * Every semaphore is a plain record: available units, debt, the units set aside for the
 * head of its queue (head_got), and the queue itself, an array of slot ids in order. A
 * slot is a request (its node in that queue is a "proxy") or a plain waiter. The rules,
 * written out the long way from admit.h, sem.h, budget.h, core.h and docs/admit.md:
 *
 *  - Plain semaphore rules as in sem_model.c: a release repays the debt, then goes to the
 *    queue in order; a plain head accumulates a partial grant; try never passes a waiter;
 *    0 units succeed at once on an open semaphore; shrink fails queued requests that no
 *    longer fit with BAND_E2BIG; close fails every waiter with BAND_ECLOSED.
 *  - A request is checked in the order: BAND_E2BIG (any amount above its budget's
 *    capacity), then the budgets one by one (closed, or not enough free, or a waiter
 *    queued). Which of two refusing budgets answers first is left open, so when one is
 *    closed and another short, either BAND_ECLOSED or BAND_EAGAIN is accepted (async:
 *    BAND_ECLOSED, the header's rule). A refused request holds nothing.
 *  - A request that must wait joins, in one step, the queue of every budget of its first
 *    stage with a nonzero amount (zero amounts are checked for close at submission and
 *    otherwise ignored). It never takes units while it waits: units released while it is
 *    the head stay free, set aside for it (head_got, which may pass its amount). It is
 *    granted when it is the head of every queue it joined with enough set aside in each
 *    and no stage is left; it then takes every amount and leaves every queue, and the
 *    surplus goes on to the next waiters.
 *  - Capacity trees: a request at a node names the node and every ancestor; stage k is
 *    the k-th level from the node. It joins stage k+1 only when it is ready at stages
 *    0..k. Each request has a ticket (its arrival); in every queue requests are ordered by
 *    (class, ticket), guaranteed first. A non-guaranteed request that joins late goes
 *    ahead of the requests with later tickets, and not ahead of plain waiters otherwise;
 *    a guaranteed one goes ahead of every non-guaranteed waiter. The class is decided
 *    when it first queues: guaranteed when, at its reserving node (the nearest with a
 *    reservation), in-use + queued guaranteed units + its amount fit in the reservation.
 *  - A queued request fails with BAND_ECLOSED when a budget it queues on, or one it has
 *    not reached yet, is closed; with BAND_E2BIG when a shrink makes an amount too big.
 *  - Counters: each node of a request counts in its queue like a plain waiter: queued
 *    when it joins, then granted, timed out (a cancel with BAND_ETIMEDOUT), cancelled (a
 *    cancel with BAND_ECANCELED; any other reason is refused with BAND_EINVAL), failed by close, or
 * too big (shrink). A refused submission adds to too_big (E2BIG: on at least one and at most every
 * budget it was too big for) and, for a try only, try_refusals (EAGAIN: on at most one of
 * the budgets that refused); which one is left open.
 *  - Adjust with a past deadline: a surplus is released; a shortfall is taken from what
 *    is free when nobody waits, or from the units set aside for the head, or refused with
 *    BAND_ETIMEDOUT; BAND_E2BIG above the capacity; BAND_ECLOSED on a closed budget.
 *  - Release of a grant returns its entries in grant order, each a band_sem_release().
 *    Returning held units never fails on a budget: BAND_EOVERFLOW is for units never
 *    acquired (budget.h), also after a shrink left a debt.
 *  - Trees: a node's children may reserve at most its capacity in total, so creating a
 *    child with a reservation under a parent shrunk below its children's reservations
 *    is BAND_EINVAL (the random runs create such children without a reservation; the
 *    directed test_tree_reserve_past_shrunk_cap of model_admit.c covers the refusal).
 *
 * Orders the headers leave open. Wakes, cascades of grants, the failures that a close or
 * a shrink causes, the wakes' own calls back into band and tree requests joining their
 * next level may happen in any order the rules allow. Without tree requests waiting at a
 * lower level these steps commute (units only move forward in FIFO order, and a request
 * ready stays ready until it is granted), so the model applies them in one fixed order.
 * A tree request joining its next level does not commute with a grant in the queue it
 * joins, so then the model explores every order (with memoisation) and keeps every
 * resulting state as a candidate; the real outcome must match one of them, and the
 * candidates that match are carried to the next operation.
 *
 * Wakes that call back: a wake may take and release its grant, then destroy one
 * primitive if nothing that was active when the operation began (a pending, granted or
 * holding request or waiter, held units, live children) refers to it. That destroy must
 * return 0 and be safe whatever the operation that ran the wake does next.
 */
#include "admit_model.h"

#include "model_input.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/admit.h"
#include "band/budget.h"
#include "band/core.h"
#include "band/error.h"
#include "band/sem.h"

#include "admit/admit_internal.h"

/* ---------------------------------------------------------------------------------- */
/* sizes                                                                               */

#define NFLAT  4 /* flat budgets 0..3 (2 to 4 exist) */
#define NSEM   9 /* flat 0..3, then the tree */
#define XROOT  4
#define XT0    5
#define XT1    6
#define XL0    7
#define XL1    8
#define NREQ   8
#define NPLAIN 6
#define NSLOT  (NREQ + NPLAIN) /* queue ids: 0..NREQ-1 requests, then plain waiters */
#define QCAP   16
#define EMAX   BAND_ADMIT_MAX
#define MAXP   BAND_MAX_UNITS
#define NONE8  0xffu

#define MAXCAND   8    /* model states carried between operations */
#define MAXLEAVES 64   /* distinct outcomes of one operation */
#define MAXDEPTH  160  /* exploration depth */
#define MAXNODES  4000 /* branch points explored per operation */
#define MEMO_BITS 13

enum { K_NONE, K_SEM, K_BUDGET, K_TREE };
enum { ST_EMPTY, ST_IDLE, ST_PENDING, ST_DONE };
enum { HK_NONE, HK_RELEASE, HK_DESTROY };
enum { CT_GRANT, CT_TIMEOUT, CT_CANCEL, CT_CLOSED, CT_TOOBIG };

/* Events of one operation, for the coverage counters (not part of the compared state). */
enum {
    EV_GUAR,
    EV_JOIN,
    EV_SUBMIT_GRANT,
    EV_HOOK_REL,
    EV_WAKE_DESTROY,
    EV_DESTROY_STAGED,
    EV_ADJ_FRONT,
    EV_MODEL_BUG,
    NEV
};

/* ---------------------------------------------------------------------------------- */
/* the model's state: plain data without padding, compared with memcmp                 */

struct msem {
    uint64_t limit; /* capacity (budgets, tree nodes); BAND_MAX_UNITS for a sem */
    uint64_t avail, debt, head_got, q_units;
    uint64_t queued, grants, timeouts, cancels, closed_fails, try_refusals, too_big;
    uint64_t total;   /* sems: avail + head_got + held - debt, changed by reduce and grow */
    uint64_t base;    /* sems: the capacity the stats report: created with, less reduce,
                         raised when a snapshot sees more free than base + debt */
    uint64_t reserve; /* tree: the node's reservation */
    uint64_t child_reserve, g_pending;
    uint64_t held;  /* units the driver holds from plain try, past acquire and drain */
    uint64_t held0; /* held when the operation began */
    uint8_t kind, alive, closed, qlen, parent, children, children0, destroyed_now;
    uint8_t q[QCAP];
};

struct mreq {
    uint64_t amount[EMAX];
    uint64_t gcount[EMAX]; /* the grant the driver holds (entries in request order) */
    uint64_t tenant_amt[EMAX];
    uint64_t ticket;
    uint8_t sem[EMAX], stage[EMAX], inq[EMAX], tenant[EMAX];
    uint8_t n, ntenant, st, guaranteed, joined, nstages, granted_untaken, gheld;
    uint8_t hook, hook_target, hook_phase, hook_k, woke, active0, pad[2];
    int32_t status, wake_status;
};

struct mplain {
    uint64_t want, ticket;
    uint8_t sem, st, hook, hook_target, hook_phase, woke, holding, active0;
    int32_t status, wake_status;
};

struct mstate {
    struct msem s[NSEM];
    struct mreq r[NREQ];
    struct mplain p[NPLAIN];
    uint64_t seq;  /* arrival order of queued acquisitions */
    uint64_t ret;  /* drain: the expected return */
    int32_t rc[4]; /* the return codes the operation may give */
    uint32_t nrc;
    uint32_t tol_mask;     /* budgets one of which may count the submission's refusal */
    uint32_t tr_lo, tr_hi; /* allowed total of try_refusals added over tol_mask */
    uint32_t tb_lo, tb_hi; /* ... and of too_big */
    uint8_t prog_slot, prog_k, pad[6];
    uint64_t ev[NEV]; /* events: not compared */
};

#define STATE_CMP_BYTES offsetof(struct mstate, ev)

_Static_assert(sizeof(struct msem) % 8 == 0, "msem padding");
_Static_assert(sizeof(struct mreq) % 8 == 0, "mreq padding");
_Static_assert(sizeof(struct mplain) % 8 == 0, "mplain padding");

/* ---------------------------------------------------------------------------------- */
/* operations                                                                          */

enum opkind {
    O_BUILD,
    O_TRY,
    O_ASYNC,
    O_PAST,
    O_TAKE,
    O_RELEASE,
    O_PART,
    O_ADJUST,
    O_CANCEL,
    O_PTRY,
    O_PPAST,
    O_PASYNC,
    O_PREL,  /* release @n held units of @x */
    O_PSREL, /* release what plain slot @slot holds */
    O_DRAIN,
    O_GROW,
    O_SHRINK,
    O_CLOSE,
    O_DESTROY,
    O_CREATE,
    O_BUSY,
    O_RESET,
    O_COUNT
};

static const enum admit_model_op op_class[O_COUNT] = {
    AM_OP_BUILD,      AM_OP_TRY,         AM_OP_ASYNC,     AM_OP_PAST,      AM_OP_TAKE,
    AM_OP_RELEASE,    AM_OP_PART,        AM_OP_ADJUST,    AM_OP_CANCEL,    AM_OP_PLAIN_TRY,
    AM_OP_PLAIN_PAST, AM_OP_PLAIN_ASYNC, AM_OP_PLAIN_REL, AM_OP_PLAIN_REL, AM_OP_DRAIN,
    AM_OP_GROW,       AM_OP_SHRINK,      AM_OP_CLOSE,     AM_OP_DESTROY,   AM_OP_CREATE,
    AM_OP_BUSY,       AM_OP_RESET,
};

static const char *const op_names[O_COUNT] = {
    "build",         "try",          "async",        "past",      "take",       "release",
    "release_part",  "adjust",       "cancel",       "plain_try", "plain_past", "plain_async",
    "plain_release", "slot_release", "drain",        "grow",      "shrink",     "close",
    "destroy",       "create",       "destroy_busy", "reset",
};

#define MAXADD 8

struct op {
    enum opkind kind;
    int slot; /* request 0..NREQ-1, or queue id for cancel/reset (plain: NREQ + p) */
    int x;    /* semaphore index */
    int reason;
    int hook, hook_target;
    uint64_t n;
    band_time deadline;
    int nadd;
    struct {
        int tree, x;
        uint64_t amount;
    } add[MAXADD];
    int add_rc[MAXADD];
    int ckind; /* create: K_SEM / K_BUDGET / K_TREE */
    uint64_t cap, reserve;
};

/* ---------------------------------------------------------------------------------- */
/* the driver: real objects                                                            */

struct admit_model;

struct dreq {
    band_admit_req r; /* first: its waiter is the first member */
    struct admit_model *m;
    int idx;
    int hook, hook_target;
    band_admit_grant g;
};

struct dplain {
    band_waiter w; /* first */
    struct admit_model *m;
    int idx;
    int hook, hook_target;
};

struct dobj {
    band_sem *sem; /* NULL when it does not exist */
    band_budget *budget;
    band_cap_tree *tree;
};

struct obs {
    int rc;
    uint64_t ret;
    uint8_t alive[NSEM], destroyed[NSEM];
    band_sem_stats st[NSEM];
    int pending[NSLOT], status[NSLOT], woke[NSLOT], wake_status[NSLOT];
};

struct admit_model {
    struct dobj obj[NSEM];
    struct dreq rq[NREQ];
    struct dplain pl[NPLAIN];
    int nflat;
    int leaf1_parent;

    struct mstate cand[MAXCAND];
    int ncand;
    struct mstate leaves[MAXLEAVES];
    int nleaves;
    struct mstate *stack; /* MAXDEPTH states for the exploration */
    struct {
        uint64_t hash;
        uint64_t gen;
    } memo[1u << MEMO_BITS];
    uint64_t memo_gen;
    unsigned memo_n;
    unsigned nodes;
    int truncated;

    /* the real operation's wakes */
    int woke[NSLOT], wake_status[NSLOT];
    uint8_t destroyed[NSEM];
    int in_op;

    struct model_input in;
    FILE *record; /* ADMIT_MODEL_RECORD: the bytes a seeded run used, as a corpus file */
    band_time deadline;
    uint64_t steps;
    uint64_t opno;
    int trace;
    int failed;
    char err[2048];
    struct admit_model_counts counts;
};

/* ---------------------------------------------------------------------------------- */
/* failure reporting                                                                   */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(struct admit_model *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    m->failed = 1;
    int k = snprintf(m->err, sizeof(m->err), "op #%llu: ", (unsigned long long)m->opno);
    if (k < 0 || (size_t)k >= sizeof(m->err))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + k, sizeof(m->err) - (size_t)k, fmt, ap);
    va_end(ap);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static int popcount32(uint32_t v)
{
    int n = 0;
    for (; v != 0; v &= v - 1)
        n++;
    return n;
}

/* ---------------------------------------------------------------------------------- */
/* the model: helpers                                                                  */

static int is_req(unsigned id)
{
    return id < NREQ;
}

static int ent_of(const struct mreq *r, unsigned x)
{
    for (unsigned i = 0; i < r->n; i++)
        if (r->sem[i] == x)
            return (int)i;
    return -1;
}

static uint64_t want_of(const struct mstate *S, unsigned x, unsigned id)
{
    if (is_req(id)) {
        const struct mreq *r = &S->r[id];
        int i = ent_of(r, x);
        return i < 0 ? 0 : r->amount[i];
    }
    return S->p[id - NREQ].want;
}

static int qpos(const struct msem *s, unsigned id)
{
    for (unsigned i = 0; i < s->qlen; i++)
        if (s->q[i] == id)
            return (int)i;
    return -1;
}

static void q_remove(struct mstate *S, unsigned x, unsigned pos)
{
    struct msem *s = &S->s[x];
    s->q_units -= want_of(S, x, s->q[pos]);
    memmove(&s->q[pos], &s->q[pos + 1], (size_t)(s->qlen - pos - 1));
    s->qlen--;
    s->q[s->qlen] = 0;
}

static void q_insert(struct mstate *S, unsigned x, unsigned pos, unsigned id)
{
    struct msem *s = &S->s[x];
    memmove(&s->q[pos + 1], &s->q[pos], (size_t)(s->qlen - pos));
    s->q[pos] = (uint8_t)id;
    s->qlen++;
    s->q_units += want_of(S, x, id);
}

static int has_proxy(const struct msem *s)
{
    for (unsigned i = 0; i < s->qlen; i++)
        if (is_req(s->q[i]))
            return 1;
    return 0;
}

static uint64_t in_use(const struct msem *s)
{
    uint64_t total = s->limit + s->debt, free_units = s->avail + s->head_got;
    return total > free_units ? total - free_units : 0;
}

static int any_staged(const struct mstate *S)
{
    for (unsigned r = 0; r < NREQ; r++)
        if (S->r[r].st == ST_PENDING && S->r[r].joined < S->r[r].nstages)
            return 1;
    return 0;
}

static void count_node_end(struct msem *s, int ct)
{
    switch (ct) {
    case CT_GRANT:
        s->grants++;
        break;
    case CT_TIMEOUT:
        s->timeouts++;
        break;
    case CT_CLOSED:
        s->closed_fails++;
        break;
    case CT_TOOBIG:
        s->too_big++;
        break;
    default:
        s->cancels++;
        break;
    }
}

static int ct_of_failure(int status)
{
    if (status == BAND_ECLOSED)
        return CT_CLOSED;
    if (status == BAND_E2BIG)
        return CT_TOOBIG;
    if (status == BAND_ETIMEDOUT)
        return CT_TIMEOUT;
    return CT_CANCEL;
}

static void complete_plain(struct mstate *S, unsigned p, int status)
{
    struct mplain *P = &S->p[p];
    P->st = ST_DONE;
    P->status = status;
    P->woke = 1;
    P->wake_status = status;
    if (status == 0)
        P->holding = 1;
    if (P->hook != HK_NONE)
        P->hook_phase = 1;
}

static void complete_req(struct mstate *S, unsigned r, int status)
{
    struct mreq *R = &S->r[r];
    R->st = ST_DONE;
    R->status = status;
    R->woke = 1;
    R->wake_status = status;
    if (status == 0)
        R->granted_untaken = 1;
    if (R->hook != HK_NONE) {
        R->hook_phase = 1;
        R->hook_k = 0;
    }
}

/* Hand @pool released units of @x to the debt, then the queue in order; returns the rest. */
static uint64_t m_grant(struct mstate *S, unsigned x, uint64_t pool)
{
    struct msem *s = &S->s[x];
    uint64_t pay = min_u64(pool, s->debt);
    s->debt -= pay;
    pool -= pay;
    while (pool > 0 && s->qlen > 0) {
        unsigned id = s->q[0];
        if (is_req(id)) {
            s->head_got += pool; /* set aside for the head, never granted by the sem */
            return 0;
        }
        unsigned p = id - NREQ;
        uint64_t need = S->p[p].want - s->head_got;
        if (pool < need) {
            s->head_got += pool;
            return 0;
        }
        pool -= need;
        s->head_got = 0;
        q_remove(S, x, 0);
        s->grants++;
        complete_plain(S, p, 0);
    }
    return pool;
}

/*
 * A release. On a budget it fails (BAND_EOVERFLOW, nothing changes) only for units that
 * were never acquired: more than the units in use (budget.h). On a semaphore, when the
 * units left available would pass BAND_MAX_UNITS (sem.h).
 */
static int m_release(struct mstate *S, unsigned x, uint64_t n)
{
    struct msem *s = &S->s[x];
    if (n == 0)
        return 0;
    if (s->kind != K_SEM && n > in_use(s))
        return BAND_EOVERFLOW;
    if (s->kind != K_SEM) {
        s->avail += m_grant(S, x, n);
        return 0;
    }
    if (s->qlen == 0 && s->debt == 0) {
        if (s->avail > s->limit || n > s->limit - s->avail)
            return BAND_EOVERFLOW;
        s->avail += n;
        return 0;
    }
    uint64_t rest = n - min_u64(n, s->debt);
    if (has_proxy(s)) {
        if (s->head_got > s->limit || rest > s->limit - s->head_got)
            return BAND_EOVERFLOW;
    } else {
        uint64_t need = s->q_units - s->head_got;
        uint64_t left = rest - min_u64(rest, need);
        if (left > s->limit)
            return BAND_EOVERFLOW;
    }
    s->avail += m_grant(S, x, n);
    return 0;
}

/* Take request @r's node of entry @i out of its queue; the free units go on. */
static void m_remove_node(struct mstate *S, unsigned r, unsigned i, int ct)
{
    struct mreq *R = &S->r[r];
    unsigned x = R->sem[i];
    struct msem *s = &S->s[x];
    int pos = qpos(s, r);
    if (pos < 0) {
        S->ev[EV_MODEL_BUG]++;
        return;
    }
    uint64_t pool = 0;
    if (pos == 0) {
        pool = s->head_got;
        s->head_got = 0;
        if (ct == CT_GRANT)
            pool -= R->amount[i];
    }
    q_remove(S, x, (unsigned)pos);
    count_node_end(s, ct);
    R->inq[i] = 0;
    s->avail += m_grant(S, x, pool);
}

static void m_tree_leave(struct mstate *S, unsigned r)
{
    struct mreq *R = &S->r[r];
    if (!R->guaranteed)
        return;
    for (unsigned k = 0; k < R->ntenant; k++)
        S->s[R->tenant[k]].g_pending -= R->tenant_amt[k];
    R->guaranteed = 0;
}

static void m_fail(struct mstate *S, unsigned r, int status, int ct)
{
    struct mreq *R = &S->r[r];
    for (unsigned i = 0; i < R->n; i++)
        if (R->inq[i])
            m_remove_node(S, r, i, ct);
    m_tree_leave(S, r);
    complete_req(S, r, status);
}

/* Is @r the head with enough set aside in every queue of the stages it joined? */
static int m_ready(const struct mstate *S, unsigned r)
{
    const struct mreq *R = &S->r[r];
    for (unsigned i = 0; i < R->n; i++) {
        if (R->amount[i] == 0 || R->stage[i] >= R->joined)
            continue;
        const struct msem *s = &S->s[R->sem[i]];
        if (!R->inq[i] || s->qlen == 0 || s->q[0] != r || s->head_got < R->amount[i] || s->closed ||
            R->amount[i] > s->limit)
            return 0;
    }
    return 1;
}

static int m_stage_check(const struct mstate *S, unsigned r, unsigned k)
{
    const struct mreq *R = &S->r[r];
    for (unsigned i = 0; i < R->n; i++) {
        if (R->stage[i] != k || R->amount[i] == 0)
            continue;
        const struct msem *s = &S->s[R->sem[i]];
        if (s->closed)
            return BAND_ECLOSED;
        if (R->amount[i] > s->limit)
            return BAND_E2BIG;
        if (R->amount[i] > UINT64_MAX - s->q_units)
            return BAND_EOVERFLOW;
    }
    return 0;
}

static int key_less(const struct mstate *S, unsigned a, unsigned b)
{
    int ga = S->r[a].guaranteed != 0, gb = S->r[b].guaranteed != 0;
    if (ga != gb)
        return ga;
    return S->r[a].ticket < S->r[b].ticket;
}

static void m_push(struct mstate *S, unsigned r, unsigned i)
{
    struct mreq *R = &S->r[r];
    unsigned x = R->sem[i];
    struct msem *s = &S->s[x];
    unsigned pos;
    if (s->qlen == 0) {
        s->head_got = s->avail; /* the first waiter: what is free is set aside for it */
        s->avail = 0;
        pos = 0;
    } else if (R->guaranteed) {
        pos = 0;
        while (pos < s->qlen && is_req(s->q[pos]) && key_less(S, s->q[pos], r))
            pos++;
    } else {
        pos = s->qlen;
        for (unsigned j = s->qlen; j-- > 0;) {
            if (!is_req(s->q[j]))
                continue;
            if (key_less(S, s->q[j], r))
                break;
            pos = j;
        }
    }
    R->inq[i] = 1; /* before q_insert: want_of() needs the entry */
    q_insert(S, x, pos, r);
    s->queued++;
}

/* Move @r on while it is ready: join the next stage, or take everything. Returns 1 when
 * granted (nodes removed), 0 while it waits, or the code of a stage it cannot join. */
static int m_advance(struct mstate *S, unsigned r)
{
    struct mreq *R = &S->r[r];
    for (;;) {
        if (!m_ready(S, r))
            return 0;
        if (R->joined >= R->nstages) {
            for (unsigned i = 0; i < R->n; i++)
                if (R->inq[i])
                    m_remove_node(S, r, i, CT_GRANT);
            m_tree_leave(S, r);
            return 1;
        }
        int rc = m_stage_check(S, r, R->joined);
        if (rc != 0)
            return rc;
        for (unsigned i = 0; i < R->n; i++)
            if (R->stage[i] == R->joined && R->amount[i] > 0)
                m_push(S, r, i);
        if (R->joined > 0)
            S->ev[EV_JOIN]++;
        R->joined++;
    }
}

/* Why pending @r must fail: 1 (a budget it names is closed), 2 (an amount became too
 * big), or both bits. */
static unsigned m_fail_reasons(const struct mstate *S, unsigned r)
{
    const struct mreq *R = &S->r[r];
    unsigned mask = 0;
    for (unsigned i = 0; i < R->n; i++) {
        if (R->amount[i] == 0)
            continue;
        if (!R->inq[i] && R->stage[i] < R->joined)
            continue;
        const struct msem *s = &S->s[R->sem[i]];
        if (s->closed)
            mask |= 1;
        else if (R->amount[i] > s->limit)
            mask |= 2;
    }
    return mask;
}

static int names(const struct mreq *R, unsigned x)
{
    return ent_of(R, x) >= 0;
}

/* Does anything that was active when the operation began, other than queue id @self,
 * refer to @x? */
static int m_referenced(const struct mstate *S, unsigned x, unsigned self)
{
    const struct msem *s = &S->s[x];
    if (s->held0 > 0 || s->children0 > 0)
        return 1;
    for (unsigned r = 0; r < NREQ; r++)
        if (r != self && S->r[r].active0 && names(&S->r[r], x))
            return 1;
    for (unsigned p = 0; p < NPLAIN; p++)
        if (NREQ + p != self && S->p[p].active0 && S->p[p].sem == x)
            return 1;
    return 0;
}

static void m_destroy(struct mstate *S, unsigned x)
{
    struct msem *s = &S->s[x];
    s->alive = 0;
    if (s->kind == K_TREE && s->parent != NONE8) {
        struct msem *ps = &S->s[s->parent];
        ps->children--;
        ps->child_reserve -= s->reserve;
    }
}

static void m_hook_destroy(struct mstate *S, unsigned target, unsigned self)
{
    if (target >= NSEM || !S->s[target].alive || m_referenced(S, target, self))
        return;
    m_destroy(S, target);
    S->s[target].destroyed_now = 1;
    S->ev[EV_WAKE_DESTROY]++;
    if (any_staged(S))
        S->ev[EV_DESTROY_STAGED]++;
}

/* Release the next nonzero entry of request @r's grant from entry *@k on; returns 1 when
 * one was tried, 0 when none was left. When the last one was tried the grant is empty,
 * unless a release failed (*@err, the first failure: those units stay in the grant). */
static int m_release_next(struct mstate *S, unsigned r, uint8_t *k, int32_t *err)
{
    struct mreq *R = &S->r[r];
    while (*k < R->n && R->gcount[*k] == 0)
        (*k)++;
    int tried = 0;
    if (*k < R->n) {
        int rc = m_release(S, R->sem[*k], R->gcount[*k]);
        if (rc == 0)
            R->gcount[*k] = 0;
        else if (*err == 0)
            *err = rc;
        (*k)++;
        tried = 1;
    }
    uint8_t j = *k;
    while (j < R->n && R->gcount[j] == 0)
        j++;
    if (j >= R->n) {
        int left = 0;
        for (unsigned i = 0; i < R->n; i++)
            left |= R->gcount[i] != 0;
        if (!left) {
            memset(R->gcount, 0, sizeof(R->gcount));
            R->gheld = 0;
        }
        *k = EMAX; /* done */
    }
    return tried;
}

static void m_take(struct mreq *R)
{
    R->granted_untaken = 0;
    R->gheld = 1;
    memcpy(R->gcount, R->amount, sizeof(R->gcount));
}

static void m_hook_step_req(struct mstate *S, unsigned r)
{
    struct mreq *R = &S->r[r];
    unsigned next = R->hook == HK_DESTROY ? 2 : 3;
    if (R->hook_phase == 1) {
        if (R->status != 0) {
            R->hook_phase = (uint8_t)next;
            return;
        }
        if (R->granted_untaken) {
            m_take(R);
            S->ev[EV_HOOK_REL]++;
        }
        int32_t err = 0;
        (void)m_release_next(S, r, &R->hook_k, &err);
        if (err != 0)
            S->ev[EV_MODEL_BUG]++; /* the wake checks that its release returns 0 */
        if (R->hook_k >= EMAX)
            R->hook_phase = (uint8_t)next;
        return;
    }
    if (R->hook_phase == 2) {
        m_hook_destroy(S, R->hook_target, r);
        R->hook_phase = 3;
    }
}

static void m_hook_step_plain(struct mstate *S, unsigned p)
{
    struct mplain *P = &S->p[p];
    if (P->hook_phase == 1) {
        if (P->status == 0 && P->holding) {
            if (m_release(S, P->sem, P->want) != 0)
                S->ev[EV_MODEL_BUG]++;
            P->holding = 0;
            S->ev[EV_HOOK_REL]++;
        }
        P->hook_phase = P->hook == HK_DESTROY ? 2 : 3;
        return;
    }
    if (P->hook_phase == 2) {
        m_hook_destroy(S, P->hook_target, NREQ + p);
        P->hook_phase = 3;
    }
}

/* ---------------------------------------------------------------------------------- */
/* exploring the orders of the steps an operation sets off                            */

enum { A_ADV, A_FAIL, A_HOOKR, A_HOOKP };

struct act {
    int kind;
    unsigned idx;
    int status;
};

static int enumerate(const struct mstate *S, struct act *a)
{
    int n = 0;
    for (unsigned r = 0; r < NREQ; r++) {
        if (S->r[r].st != ST_PENDING)
            continue;
        unsigned f = m_fail_reasons(S, r);
        if (f & 1)
            a[n++] = (struct act){A_FAIL, r, BAND_ECLOSED};
        if (f & 2)
            a[n++] = (struct act){A_FAIL, r, BAND_E2BIG};
        if (m_ready(S, r))
            a[n++] = (struct act){A_ADV, r, 0};
    }
    for (unsigned r = 0; r < NREQ; r++)
        if (S->r[r].hook_phase == 1 || S->r[r].hook_phase == 2)
            a[n++] = (struct act){A_HOOKR, r, 0};
    for (unsigned p = 0; p < NPLAIN; p++)
        if (S->p[p].hook_phase == 1 || S->p[p].hook_phase == 2)
            a[n++] = (struct act){A_HOOKP, p, 0};
    return n;
}

static void apply(struct mstate *S, const struct act *a)
{
    switch (a->kind) {
    case A_ADV: {
        int rc = m_advance(S, a->idx);
        if (rc == 1) {
            complete_req(S, a->idx, 0);
        } else if (rc < 0) {
            m_fail(S, a->idx, rc, ct_of_failure(rc));
        }
        break;
    }
    case A_FAIL:
        m_fail(S, a->idx, a->status, ct_of_failure(a->status));
        break;
    case A_HOOKR:
        m_hook_step_req(S, a->idx);
        break;
    default:
        m_hook_step_plain(S, a->idx);
        break;
    }
}

static void set_rc(struct mstate *S, int rc)
{
    S->rc[0] = rc;
    S->nrc = 1;
}

static void add_rc(struct mstate *S, int rc)
{
    for (unsigned i = 0; i < S->nrc; i++)
        if (S->rc[i] == rc)
            return;
    if (S->nrc < 4)
        S->rc[S->nrc++] = rc;
}

/* The top-level band_admit_release(): its next entry, once everything else is done. */
static void prog_step(struct mstate *S)
{
    int32_t err = S->rc[0];
    (void)m_release_next(S, S->prog_slot, &S->prog_k, &err);
    if (err != 0)
        set_rc(S, err); /* band_admit_release() returns the first failure */
    if (S->prog_k >= EMAX) {
        S->prog_slot = NONE8;
        S->prog_k = 0;
    }
}

static uint64_t hash_state(const struct mstate *S)
{
    const unsigned char *b = (const unsigned char *)S;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < STATE_CMP_BYTES; i++) {
        h ^= b[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* 1 when @S was explored already in this operation. */
static int memo_seen(struct admit_model *m, const struct mstate *S)
{
    uint64_t h = hash_state(S);
    unsigned mask = (1u << MEMO_BITS) - 1;
    unsigned i = (unsigned)h & mask;
    for (unsigned probe = 0; probe <= mask; probe++, i = (i + 1) & mask) {
        if (m->memo[i].gen != m->memo_gen) {
            if (m->memo_n >= (mask + 1) / 2)
                return 0; /* full enough: stop remembering */
            m->memo[i].gen = m->memo_gen;
            m->memo[i].hash = h;
            m->memo_n++;
            return 0;
        }
        if (m->memo[i].hash == h)
            return 1;
    }
    return 0;
}

static void add_leaf(struct admit_model *m, const struct mstate *S)
{
    for (int i = 0; i < m->nleaves; i++)
        if (memcmp(&m->leaves[i], S, STATE_CMP_BYTES) == 0)
            return;
    if (m->nleaves >= MAXLEAVES) {
        m->truncated = 1;
        return;
    }
    memcpy(&m->leaves[m->nleaves++], S, sizeof(*S));
}

static void settle(struct admit_model *m, int d)
{
    struct mstate *S = &m->stack[d];
    struct act a[3 * NREQ + NSLOT];
    for (;;) {
        int n = enumerate(S, a);
        if (n == 0) {
            if (S->prog_slot != NONE8) {
                prog_step(S);
                continue;
            }
            add_leaf(m, S);
            return;
        }
        int open = 0; /* do these steps not commute? */
        if (n > 1) {
            open = any_staged(S);
            for (unsigned r = 0; r < NREQ && !open; r++)
                if (S->r[r].st == ST_PENDING && m_fail_reasons(S, r) == 3)
                    open = 1;
        }
        if (!open) {
            apply(S, &a[0]);
            continue;
        }
        if (d + 1 >= MAXDEPTH || m->nodes >= MAXNODES) {
            m->truncated = 1;
            apply(S, &a[0]);
            continue;
        }
        if (memo_seen(m, S))
            return;
        m->nodes++;
        for (int i = 0; i < n; i++) {
            memcpy(&m->stack[d + 1], S, sizeof(*S));
            apply(&m->stack[d + 1], &a[i]);
            settle(m, d + 1);
        }
        return;
    }
}

/* ---------------------------------------------------------------------------------- */
/* the model: operations                                                               */

static void m_classify(struct mstate *S, unsigned r)
{
    struct mreq *R = &S->r[r];
    R->guaranteed = 0;
    if (R->ntenant == 0)
        return;
    for (unsigned k = 0; k < R->ntenant; k++) {
        const struct msem *t = &S->s[R->tenant[k]];
        uint64_t used = in_use(t), amt = R->tenant_amt[k];
        if (used > t->reserve || t->g_pending > t->reserve - used ||
            amt > t->reserve - used - t->g_pending)
            return;
    }
    R->guaranteed = 1;
    for (unsigned k = 0; k < R->ntenant; k++)
        S->s[R->tenant[k]].g_pending += R->tenant_amt[k];
    S->ev[EV_GUAR]++;
}

enum { MODE_TRY, MODE_ASYNC, MODE_PAST };

static void m_submit(struct mstate *S, unsigned r, int mode)
{
    struct mreq *R = &S->r[r];
    if (R->n == 0 || R->st == ST_PENDING || (mode != MODE_ASYNC && R->gheld)) {
        set_rc(S, BAND_EINVAL);
        return;
    }
    /* E2BIG before anything else */
    uint32_t big = 0;
    for (unsigned i = 0; i < R->n; i++)
        if (R->amount[i] > S->s[R->sem[i]].limit)
            big |= 1u << R->sem[i];
    if (big != 0) {
        set_rc(S, BAND_E2BIG);
        S->tol_mask = big;
        S->tb_lo = 1;
        S->tb_hi = (uint32_t)popcount32(big);
        if (mode == MODE_ASYNC) {
            R->st = ST_IDLE;
            R->status = BAND_E2BIG;
        }
        return;
    }
    uint32_t closed = 0, again = 0;
    for (unsigned i = 0; i < R->n; i++) {
        const struct msem *s = &S->s[R->sem[i]];
        if (s->closed)
            closed |= 1u << R->sem[i];
        else if (R->amount[i] > 0 && (s->qlen > 0 || s->debt > 0 || s->avail < R->amount[i]))
            again |= 1u << R->sem[i];
    }
    if (again != 0) {
        /* A try's refusal counts once, at the first refusing budget in entry order (none
         * when that one is closed); async and blocking admissions count nothing, as a
         * plain semaphore counts only its try_acquire calls. */
        S->tol_mask = again;
        S->tr_lo = 0;
        S->tr_hi = mode == MODE_TRY ? 1 : 0;
    }
    if (closed == 0 && again == 0) {
        for (unsigned i = 0; i < R->n; i++)
            S->s[R->sem[i]].avail -= R->amount[i];
        set_rc(S, 0);
        if (mode == MODE_ASYNC) {
            R->st = ST_IDLE;
            R->status = 0;
            R->granted_untaken = 1;
        } else {
            R->gheld = 1;
            memcpy(R->gcount, R->amount, sizeof(R->gcount));
        }
        return;
    }
    if (mode != MODE_ASYNC) {
        S->nrc = 0;
        if (closed != 0)
            add_rc(S, BAND_ECLOSED);
        if (again != 0)
            add_rc(S, mode == MODE_TRY ? BAND_EAGAIN : BAND_ETIMEDOUT);
        return;
    }
    if (closed != 0) {
        set_rc(S, BAND_ECLOSED);
        R->st = ST_IDLE;
        R->status = BAND_ECLOSED;
        return;
    }
    for (unsigned i = 0; i < R->n; i++) {
        if (R->amount[i] > UINT64_MAX - S->s[R->sem[i]].q_units) {
            set_rc(S, BAND_EOVERFLOW);
            R->st = ST_IDLE;
            R->status = BAND_EOVERFLOW;
            return;
        }
    }
    /* queue: class, ticket, then join the first stage(s) */
    m_classify(S, r);
    R->ticket = ++S->seq;
    R->joined = 0;
    uint8_t top = 0;
    for (unsigned i = 0; i < R->n; i++)
        if (R->stage[i] > top)
            top = R->stage[i];
    R->nstages = (uint8_t)(top + 1);
    memset(R->inq, 0, sizeof(R->inq));
    int rc = m_advance(S, r);
    if (rc == 1) {
        set_rc(S, 0);
        R->st = ST_IDLE;
        R->status = 0;
        R->granted_untaken = 1;
        S->ev[EV_SUBMIT_GRANT]++;
        return;
    }
    if (rc < 0)
        S->ev[EV_MODEL_BUG]++; /* every stage was checked above */
    set_rc(S, BAND_PENDING);
    R->st = ST_PENDING;
    R->status = BAND_PENDING;
}

/* band_admit_req_add() on the model: 0, EINVAL or EOVERFLOW. */
static int m_add(struct mreq *R, unsigned x, uint64_t amount, unsigned stage)
{
    int i = ent_of(R, x);
    if (i >= 0) {
        if (amount > MAXP - R->amount[i])
            return BAND_EOVERFLOW;
        R->amount[i] += amount;
        if (stage < R->stage[i])
            R->stage[i] = (uint8_t)stage;
        return 0;
    }
    if (R->n == EMAX)
        return BAND_EINVAL;
    R->sem[R->n] = (uint8_t)x;
    R->amount[R->n] = amount;
    R->stage[R->n] = (uint8_t)stage;
    R->n++;
    return 0;
}

static int m_add_flat(struct mreq *R, unsigned x, uint64_t amount)
{
    if (amount > MAXP)
        return BAND_EINVAL;
    return m_add(R, x, amount, 0);
}

static int m_add_tree(const struct mstate *S, struct mreq *R, unsigned node, uint64_t amount)
{
    if (amount > MAXP)
        return BAND_EINVAL;
    unsigned fresh = 0, tenant = NONE8;
    for (unsigned t = node; t != NONE8; t = S->s[t].parent) {
        if (tenant == NONE8 && S->s[t].reserve > 0)
            tenant = t;
        int i = ent_of(R, t);
        if (i < 0)
            fresh++;
        else if (amount > MAXP - R->amount[i])
            return BAND_EOVERFLOW;
    }
    if (R->n + fresh > EMAX)
        return BAND_EINVAL;
    unsigned k = 0;
    if (tenant != NONE8) {
        while (k < R->ntenant && R->tenant[k] != tenant)
            k++;
        if (k < R->ntenant && amount > MAXP - R->tenant_amt[k])
            return BAND_EOVERFLOW;
    }
    unsigned stage = 0;
    for (unsigned t = node; t != NONE8; t = S->s[t].parent)
        (void)m_add(R, t, amount, stage++);
    if (tenant != NONE8) {
        if (k == R->ntenant) {
            R->tenant[k] = (uint8_t)tenant;
            R->tenant_amt[k] = 0;
            R->ntenant++;
        }
        R->tenant_amt[k] += amount;
    }
    return 0;
}

static void m_reset_req(struct mstate *S, unsigned r)
{
    memset(&S->r[r], 0, sizeof(S->r[r]));
}

static void m_reset_plain(struct mstate *S, unsigned p)
{
    memset(&S->p[p], 0, sizeof(S->p[p]));
}

/* Shrink a budget or tree node (band_budget_shrink, band_sem_reduce on its semaphore). */
static int m_shrink(struct mstate *S, unsigned x, uint64_t n)
{
    struct msem *s = &S->s[x];
    if (n == 0)
        return 0;
    if (n >= s->limit)
        return BAND_EINVAL;
    uint64_t take = min_u64(s->avail, n), rest = n - take;
    if (rest > MAXP - s->debt)
        return BAND_EOVERFLOW;
    s->avail -= take;
    s->debt += rest;
    s->limit -= n;
    uint64_t pool = 0;
    unsigned i = 0;
    while (i < s->qlen) {
        unsigned id = s->q[i];
        if (!is_req(id) && S->p[id - NREQ].want > s->limit) {
            if (i == 0) {
                pool += s->head_got;
                s->head_got = 0;
            }
            q_remove(S, x, i);
            s->too_big++;
            complete_plain(S, id - NREQ, BAND_E2BIG);
        } else {
            i++;
        }
    }
    s->avail += m_grant(S, x, pool);
    return 0;
}

static int m_reduce_sem(struct mstate *S, unsigned x, uint64_t n)
{
    struct msem *s = &S->s[x];
    if (n == 0)
        return 0;
    if (n > MAXP)
        return BAND_EOVERFLOW;
    uint64_t take = min_u64(s->avail, n), rest = n - take;
    if (rest > MAXP - s->debt)
        return BAND_EOVERFLOW;
    s->avail -= take;
    s->debt += rest;
    s->total -= n;
    s->base -= min_u64(s->base, n);
    return 0;
}

static void m_close(struct mstate *S, unsigned x)
{
    struct msem *s = &S->s[x];
    if (s->closed)
        return;
    s->closed = 1;
    uint64_t pool = s->head_got;
    s->head_got = 0;
    unsigned i = 0;
    while (i < s->qlen) {
        unsigned id = s->q[i];
        if (is_req(id)) {
            i++;
            continue;
        }
        q_remove(S, x, i);
        s->closed_fails++;
        complete_plain(S, id - NREQ, BAND_ECLOSED);
    }
    if (has_proxy(s)) {
        s->head_got = pool; /* stays with the proxy now at the head until it fails */
        pool = 0;
    }
    s->avail += m_grant(S, x, pool);
}

static void m_create(struct mstate *S, unsigned x, const struct op *o)
{
    struct msem *s = &S->s[x];
    uint8_t parent = s->parent;
    memset(s, 0, sizeof(*s));
    s->parent = parent;
    s->kind = (uint8_t)o->ckind;
    s->alive = 1;
    if (o->ckind == K_SEM) {
        s->limit = MAXP;
        s->avail = o->cap;
        s->total = o->cap;
        s->base = o->cap;
    } else {
        s->limit = o->cap;
        s->avail = o->cap;
        s->reserve = o->ckind == K_TREE ? o->reserve : 0;
    }
}

/* The parent's reservations may total at most its capacity (admit.h). */
static int m_create_tree_rc(const struct mstate *S, unsigned x, uint64_t cap, uint64_t reserve)
{
    if (cap == 0 || cap > MAXP || reserve > cap)
        return BAND_EINVAL;
    unsigned pi = S->s[x].parent;
    if (pi != NONE8 && reserve > 0) {
        const struct msem *ps = &S->s[pi];
        if (ps->child_reserve > ps->limit || reserve > ps->limit - ps->child_reserve)
            return BAND_EINVAL; /* the children's reservations would pass its capacity */
    }
    return 0;
}

/* The immediate part of @o on @S (before the steps it sets off). */
static void m_apply_op(struct mstate *S, struct op *o)
{
    set_rc(S, 0);
    switch (o->kind) {
    case O_BUILD: {
        unsigned r = (unsigned)o->slot;
        m_reset_req(S, r);
        struct mreq *R = &S->r[r];
        R->st = ST_IDLE;
        for (int k = 0; k < o->nadd; k++)
            o->add_rc[k] = o->add[k].tree
                               ? m_add_tree(S, R, (unsigned)o->add[k].x, o->add[k].amount)
                               : m_add_flat(R, (unsigned)o->add[k].x, o->add[k].amount);
        break;
    }
    case O_TRY:
    case O_ASYNC:
    case O_PAST: {
        struct mreq *R = &S->r[o->slot];
        if (o->kind == O_ASYNC && R->st != ST_PENDING) {
            R->hook = (uint8_t)o->hook;
            R->hook_target = (uint8_t)o->hook_target;
            R->hook_phase = 0;
        }
        m_submit(S, (unsigned)o->slot,
                 o->kind == O_TRY     ? MODE_TRY
                 : o->kind == O_ASYNC ? MODE_ASYNC
                                      : MODE_PAST);
        break;
    }
    case O_TAKE: {
        struct mreq *R = &S->r[o->slot];
        if (R->st != ST_PENDING && R->granted_untaken && !R->gheld && R->status == 0)
            m_take(R);
        else
            set_rc(S, BAND_EINVAL);
        break;
    }
    case O_RELEASE:
        if (S->r[o->slot].gheld) {
            S->prog_slot = (uint8_t)o->slot;
            S->prog_k = 0;
        }
        break;
    case O_PART:
    case O_ADJUST: {
        struct mreq *R = &S->r[o->slot];
        int k = R->gheld ? ent_of(R, (unsigned)o->x) : -1;
        if (k < 0 || (o->kind == O_ADJUST && o->n > MAXP)) {
            set_rc(S, BAND_EINVAL);
            break;
        }
        uint64_t count = R->gcount[k];
        uint64_t back;
        if (o->kind == O_PART) {
            if (o->n > count) {
                set_rc(S, BAND_EINVAL);
                break;
            }
            back = o->n;
        } else if (o->n <= count) {
            back = count - o->n;
        } else {
            struct msem *s = &S->s[o->x];
            uint64_t need = o->n - count;
            if (o->n > s->limit) {
                set_rc(S, BAND_E2BIG);
                S->tol_mask = 1u << o->x;
                S->tb_lo = 0;
                S->tb_hi = 1;
            } else if (s->closed) {
                set_rc(S, BAND_ECLOSED);
            } else if (s->qlen == 0 && s->debt == 0 && s->avail >= need) {
                s->avail -= need;
                R->gcount[k] = o->n;
            } else if (s->qlen > 0 && s->head_got >= need) {
                s->head_got -= need; /* ranks before the head: set-aside units are free */
                R->gcount[k] = o->n;
                S->ev[EV_ADJ_FRONT]++;
            } else {
                set_rc(S, BAND_ETIMEDOUT);
            }
            break;
        }
        if (back == 0)
            break;
        int rc = m_release(S, (unsigned)o->x, back);
        set_rc(S, rc);
        if (rc == 0)
            R->gcount[k] -= back;
        break;
    }
    case O_CANCEL: {
        if (o->slot < 0) {
            set_rc(S, BAND_EINVAL); /* NULL */
            break;
        }
        unsigned id = (unsigned)o->slot;
        int st = is_req(id) ? S->r[id].st : S->p[id - NREQ].st;
        if ((o->reason != BAND_ECANCELED && o->reason != BAND_ETIMEDOUT) || st == ST_EMPTY ||
            st == ST_IDLE) {
            set_rc(S, BAND_EINVAL);
        } else if (st == ST_DONE) {
            set_rc(S, BAND_EALREADY);
        } else if (is_req(id)) {
            struct mreq *R = &S->r[id];
            int ct = o->reason == BAND_ETIMEDOUT ? CT_TIMEOUT : CT_CANCEL;
            for (unsigned i = 0; i < R->n; i++)
                if (R->inq[i])
                    m_remove_node(S, id, i, ct);
            m_tree_leave(S, id);
            R->st = ST_IDLE;
            R->status = o->reason;
        } else {
            struct mplain *P = &S->p[id - NREQ];
            struct msem *s = &S->s[P->sem];
            int pos = qpos(s, id);
            uint64_t pool = 0;
            if (pos == 0) {
                pool = s->head_got;
                s->head_got = 0;
            }
            if (pos >= 0)
                q_remove(S, P->sem, (unsigned)pos);
            else
                S->ev[EV_MODEL_BUG]++;
            if (o->reason == BAND_ETIMEDOUT)
                s->timeouts++;
            else
                s->cancels++;
            s->avail += m_grant(S, P->sem, pool);
            P->st = ST_IDLE;
            P->status = o->reason;
        }
        break;
    }
    case O_PTRY:
    case O_PPAST: {
        struct msem *s = &S->s[o->x];
        if (o->n > MAXP) {
            set_rc(S, BAND_EINVAL);
        } else if (o->n > s->limit) {
            s->too_big++;
            set_rc(S, BAND_E2BIG);
        } else if (s->closed) {
            set_rc(S, BAND_ECLOSED);
        } else if (o->n > 0 && (s->qlen > 0 || s->debt > 0 || s->avail < o->n)) {
            if (o->kind == O_PTRY) {
                s->try_refusals++;
                set_rc(S, BAND_EAGAIN);
            } else {
                set_rc(S, BAND_ETIMEDOUT);
            }
        } else {
            s->avail -= o->n;
            s->held += o->n;
        }
        break;
    }
    case O_PASYNC: {
        unsigned p = (unsigned)o->slot - NREQ;
        struct mplain *P = &S->p[p];
        struct msem *s = &S->s[o->x];
        if (P->st == ST_PENDING) {
            set_rc(S, BAND_EINVAL);
            break;
        }
        m_reset_plain(S, p);
        P->sem = (uint8_t)o->x;
        P->st = ST_IDLE;
        P->want = o->n;
        P->hook = (uint8_t)o->hook;
        P->hook_target = (uint8_t)o->hook_target;
        P->active0 = 1;
        int rc = 0;
        if (o->n > MAXP) {
            rc = BAND_EINVAL; /* the waiter is left untouched */
        } else if (o->n > s->limit) {
            s->too_big++;
            rc = BAND_E2BIG;
        } else if (s->closed) {
            rc = BAND_ECLOSED;
        } else if (o->n == 0 || (s->qlen == 0 && s->debt == 0 && s->avail >= o->n)) {
            s->avail -= o->n;
            P->holding = 1;
        } else if (o->n > UINT64_MAX - s->q_units) {
            rc = BAND_EOVERFLOW;
        } else {
            if (s->qlen == 0 && s->debt == 0) {
                s->head_got = s->avail;
                s->avail = 0;
            }
            P->ticket = ++S->seq;
            P->st = ST_PENDING;
            q_insert(S, (unsigned)o->x, s->qlen, NREQ + p);
            s->queued++;
            rc = BAND_PENDING;
        }
        if (rc != BAND_EINVAL && rc != BAND_PENDING)
            P->status = rc;
        if (rc == BAND_PENDING)
            P->status = BAND_PENDING;
        set_rc(S, rc);
        break;
    }
    case O_PREL: {
        int rc = m_release(S, (unsigned)o->x, o->n);
        set_rc(S, rc);
        if (rc == 0)
            S->s[o->x].held -= o->n;
        break;
    }
    case O_PSREL: {
        struct mplain *P = &S->p[o->slot - NREQ];
        int rc = m_release(S, P->sem, P->want);
        set_rc(S, rc);
        if (rc == 0)
            P->holding = 0;
        break;
    }
    case O_DRAIN: {
        struct msem *s = &S->s[o->x];
        uint64_t take = (s->qlen == 0 && s->debt == 0) ? min_u64(s->avail, o->n) : 0;
        s->avail -= take;
        s->held += take;
        S->ret = take;
        break;
    }
    case O_GROW: {
        struct msem *s = &S->s[o->x];
        if (s->kind == K_SEM) {
            int rc = m_release(S, (unsigned)o->x, o->n);
            set_rc(S, rc);
            if (rc == 0)
                s->total += o->n;
        } else if (o->n == 0) {
            set_rc(S, 0);
        } else if (o->n > MAXP - s->limit) {
            set_rc(S, BAND_EOVERFLOW);
        } else {
            s->limit += o->n;
            int rc = m_release(S, (unsigned)o->x, o->n);
            if (rc != 0)
                s->limit -= o->n;
            set_rc(S, rc);
        }
        break;
    }
    case O_SHRINK:
        set_rc(S, S->s[o->x].kind == K_SEM ? m_reduce_sem(S, (unsigned)o->x, o->n)
                                           : m_shrink(S, (unsigned)o->x, o->n));
        break;
    case O_CLOSE:
        m_close(S, (unsigned)o->x);
        break;
    case O_DESTROY:
        m_destroy(S, (unsigned)o->x);
        break;
    case O_CREATE: {
        unsigned x = (unsigned)o->x;
        if (o->ckind == K_TREE) {
            int rc = m_create_tree_rc(S, x, o->cap, o->reserve);
            set_rc(S, rc);
            if (rc != 0)
                break;
            m_create(S, x, o);
            struct msem *ps = S->s[x].parent != NONE8 ? &S->s[S->s[x].parent] : NULL;
            if (ps != NULL) {
                ps->child_reserve += o->reserve;
                ps->children++;
            }
        } else {
            m_create(S, x, o);
        }
        break;
    }
    case O_BUSY:
        set_rc(S, BAND_EBUSY);
        break;
    case O_RESET:
        if (is_req((unsigned)o->slot))
            m_reset_req(S, (unsigned)o->slot);
        else
            m_reset_plain(S, (unsigned)o->slot - NREQ);
        break;
    case O_COUNT:
        break;
    }
}

/* Model self-checks on a final state: the queues keep their order and their rules. */
static const char *m_invariants(const struct mstate *S)
{
    if (S->ev[EV_MODEL_BUG] != 0)
        return "model: an impossible step";
    for (unsigned x = 0; x < NSEM; x++) {
        const struct msem *s = &S->s[x];
        if (!s->alive)
            continue;
        if ((s->qlen > 0 || s->debt > 0) && s->avail != 0)
            return "model: available units beside waiters or debt";
        if (s->qlen == 0 && s->head_got != 0)
            return "model: set-aside units without a head";
        if (s->qlen > 0 && !is_req(s->q[0]) && s->head_got >= S->p[s->q[0] - NREQ].want)
            return "model: a plain head holds all it asked for";
        uint64_t units = 0;
        for (unsigned i = 0; i < s->qlen; i++) {
            unsigned id = s->q[i];
            units += want_of(S, x, id);
            for (unsigned j = i + 1; j < s->qlen; j++) {
                unsigned b = s->q[j];
                if (is_req(id) && is_req(b) && key_less(S, b, id))
                    return "model: requests out of (class, ticket) order";
                if (!is_req(id) && !is_req(b) && S->p[b - NREQ].ticket < S->p[id - NREQ].ticket)
                    return "model: plain waiters out of arrival order";
            }
        }
        if (units != s->q_units)
            return "model: queued units";
    }
    return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* the driver                                                                          */

static band_sem *sem_of(struct admit_model *m, unsigned x)
{
    return x < NSEM ? m->obj[x].sem : NULL;
}

static void try_destroy_real(struct admit_model *m, unsigned target, unsigned self)
{
    const struct mstate *S = &m->cand[0]; /* the state before the operation */
    if (target >= NSEM || m->obj[target].sem == NULL || m_referenced(S, target, self))
        return;
    struct dobj *o = &m->obj[target];
    int rc;
    if (o->tree != NULL)
        rc = band_cap_tree_destroy(o->tree);
    else if (o->budget != NULL)
        rc = band_budget_destroy(o->budget);
    else
        rc = band_sem_destroy(o->sem);
    if (rc != 0) {
        fail(m, "destroy of idle %u inside a wake returned %s", target, band_err_name(rc));
        return;
    }
    o->sem = NULL;
    o->budget = NULL;
    o->tree = NULL;
    m->destroyed[target] = 1;
}

static void req_wake(band_waiter *w)
{
    struct dreq *d = (struct dreq *)(void *)w;
    struct admit_model *m = d->m;
    unsigned i = (unsigned)d->idx;
    int st = band_waiter_status(w);
    if (m->woke[i]++ == 0)
        m->wake_status[i] = st;
    if (!m->in_op)
        fail(m, "request %u woken outside any operation", i);
    if (band_waiter_is_pending(w))
        fail(m, "request %u pending inside its wake", i);
    if (d->hook == HK_NONE || m->failed)
        return;
    if (st == 0) {
        const struct mreq *R = &m->cand[0].r[i];
        int rc = band_admit_req_grant(&d->r, &d->g);
        if (rc != 0) {
            fail(m, "request %u: band_admit_req_grant() in its wake returned %s", i,
                 band_err_name(rc));
            return;
        }
        for (unsigned k = 0; k < R->n; k++) {
            uint64_t h = band_admit_held(&d->g, sem_of(m, R->sem[k]));
            if (h != R->amount[k])
                fail(m, "request %u granted %llu of budget %u, asked %llu (not all at once)", i,
                     (unsigned long long)h, R->sem[k], (unsigned long long)R->amount[k]);
        }
        rc = band_admit_release(&d->g);
        if (rc != 0 || d->g.n != 0)
            fail(m, "request %u: band_admit_release() in its wake returned %s", i,
                 band_err_name(rc));
    }
    if (d->hook == HK_DESTROY)
        try_destroy_real(m, (unsigned)d->hook_target, i);
}

static void plain_wake(band_waiter *w)
{
    struct dplain *d = (struct dplain *)(void *)w;
    struct admit_model *m = d->m;
    unsigned id = NREQ + (unsigned)d->idx;
    int st = band_waiter_status(w);
    if (m->woke[id]++ == 0)
        m->wake_status[id] = st;
    if (!m->in_op)
        fail(m, "waiter %u woken outside any operation", id);
    if (band_waiter_is_pending(w))
        fail(m, "waiter %u pending inside its wake", id);
    if (d->hook == HK_NONE || m->failed)
        return;
    const struct mplain *P = &m->cand[0].p[d->idx];
    if (st == 0) {
        int rc = band_sem_release(sem_of(m, P->sem), P->want);
        if (rc != 0)
            fail(m, "waiter %u: release in its wake returned %s", id, band_err_name(rc));
    }
    if (d->hook == HK_DESTROY)
        try_destroy_real(m, (unsigned)d->hook_target, id);
}

/* Run the real operation; returns its code (drain: its return in *@ret). */
/*
 * The lock-free admission with another thread's change of a budget's word between the
 * admission's check of it and its CAS (admit.c's test hook), without changing the
 * outcome the model predicts, so no input byte is read and every corpus file means what
 * it meant. The admission takes the entries from the last to the first; the hook acts at
 * the first entry with units, its last CAS, when the admission gets there (every word
 * passed its check, and the later entries, the blocking admission's gate among them, are
 * taken). With more available than the entry asks, it takes one
 * unit: the CAS is redone and succeeds, and the unit goes back afterwards. Otherwise it
 * drains the budget: the admission must refuse there and give back every later entry,
 * exactly (checked), and after the drained units return it is made again without the
 * hook. A try's refusal counts once in the budget's try_refusals (a blocking admission's
 * does not), which is taken off again so that the counters stay the model's.
 */
struct race {
    band_sem *target;
    uint64_t amount; /* what the admission takes of it */
    int fired;
    int took_one;  /* 1: took one unit, 0: drained */
    uint64_t took; /* units the hook holds */
};

static void race_hook(band_sem *s, void *arg)
{
    struct race *x = arg;
    if (s != x->target || x->fired)
        return;
    x->fired = 1;
    if (band_sem_available(s) > x->amount) {
        x->took_one = 1;
        x->took = band_sem_try_acquire(s, 1) == 0 ? 1 : 0;
    } else {
        x->took = band_sem_drain(s, UINT64_MAX);
    }
}

static int race_admit(struct admit_model *m, struct op *o)
{
    struct dreq *d = &m->rq[o->slot];
    band_admit_req *r = &d->r;
    int past = o->kind == O_PAST;
#define RACE_CALL()                                                                                \
    (past ? band_admit_acquire(r, &d->g, o->deadline, NULL) : (band_admit_try_acquire)(r, &d->g))
    int last = -1; /* the entry the admission takes last */
    for (uint32_t i = 0; i < r->n && i < BAND_ADMIT_MAX && last < 0; i++)
        if (r->e[i].amount > 0)
            last = (int)i;
    if (last < 0 || band_waiter_is_pending(&r->w) || d->g.n != 0)
        return RACE_CALL();
    struct race x = {r->e[last].sem, r->e[last].amount, 0, 0, 0};
    uint64_t avail[BAND_ADMIT_MAX], refusals = 0;
    for (uint32_t i = 0; i < r->n; i++)
        avail[i] = band_sem_available(r->e[i].sem);
    band_sem_stats st;
    if (band_sem_get_stats(x.target, &st) == 0)
        refusals = st.try_refusals;
    band__admit_fast_hook = race_hook;
    band__admit_fast_hook_arg = &x;
    int rc = RACE_CALL();
    band__admit_fast_hook = NULL;
    band__admit_fast_hook_arg = NULL;
    if (!x.fired)
        return rc;
    if (x.took_one) {
        m->counts.race_moved_ok++;
        if (x.took == 1 && band_sem_release(x.target, 1) != 0)
            fail(m, "race: the unit taken before the CAS did not go back");
        return rc;
    }
    m->counts.race_gave_back++;
    if (rc != (past ? BAND_ETIMEDOUT : BAND_EAGAIN) || d->g.n != 0)
        fail(m, "race r%d: drained before its CAS, the admission returned %s", o->slot,
             band_err_name(rc));
    if (x.took > 0 && band_sem_release(x.target, x.took) != 0)
        fail(m, "race: the drained units did not go back");
    for (uint32_t i = 0; i < r->n; i++)
        if (band_sem_available(r->e[i].sem) != avail[i])
            fail(m, "race r%d: entry %u has %llu available after the give-back, had %llu", o->slot,
                 i, (unsigned long long)band_sem_available(r->e[i].sem),
                 (unsigned long long)avail[i]);
    /* a try counts its refusal (at the moved word, once); a blocking admission does not */
    if (band_sem_get_stats(x.target, &st) != 0 || st.try_refusals != refusals + (past ? 0 : 1))
        fail(m, "race r%d: the refusal at the moved word was not counted %s", o->slot,
             past ? "nowhere" : "once");
    else if (!past)
        atomic_fetch_sub_explicit(&x.target->try_refusals, 1, memory_order_relaxed);
    return RACE_CALL();
#undef RACE_CALL
}

static int real_op(struct admit_model *m, struct op *o, uint64_t *ret)
{
    band_sem *s = o->kind == O_BUILD || o->kind == O_RESET ? NULL : sem_of(m, (unsigned)o->x);
    switch (o->kind) {
    case O_BUILD: {
        struct dreq *d = &m->rq[o->slot];
        band_admit_req_init(&d->r, req_wake, d);
        d->hook = HK_NONE;
        for (int k = 0; k < o->nadd; k++) {
            int rc =
                o->add[k].tree
                    ? band_admit_req_add_tree(&d->r, m->obj[o->add[k].x].tree, o->add[k].amount)
                    : band_admit_req_add(&d->r, sem_of(m, (unsigned)o->add[k].x), o->add[k].amount);
            if (rc != o->add_rc[k])
                fail(m, "build r%d: add #%d (%s %d, %llu) returned %s, expected %s", o->slot, k,
                     o->add[k].tree ? "tree" : "budget", o->add[k].x,
                     (unsigned long long)o->add[k].amount, band_err_name(rc),
                     band_err_name(o->add_rc[k]));
        }
        return 0;
    }
    case O_TRY:
        return race_admit(m, o);
    case O_ASYNC: {
        struct dreq *d = &m->rq[o->slot];
        if (!band_waiter_is_pending(&d->r.w)) {
            d->hook = o->hook;
            d->hook_target = o->hook_target;
        }
        return band_admit_acquire_async(&d->r);
    }
    case O_PAST:
        return race_admit(m, o);
    case O_TAKE:
        return band_admit_req_grant(&m->rq[o->slot].r, &m->rq[o->slot].g);
    case O_RELEASE:
        return band_admit_release(&m->rq[o->slot].g);
    case O_PART:
        return band_admit_release_part(&m->rq[o->slot].g, s, o->n);
    case O_ADJUST:
        return band_admit_adjust(&m->rq[o->slot].g, s, o->n, o->deadline, NULL);
    case O_CANCEL:
        if (o->slot < 0)
            return band_waiter_cancel(NULL, o->reason);
        return band_waiter_cancel(
            is_req((unsigned)o->slot) ? &m->rq[o->slot].r.w : &m->pl[o->slot - NREQ].w, o->reason);
    case O_PTRY:
        return band_sem_try_acquire(s, o->n);
    case O_PPAST:
        return band_sem_acquire(s, o->n, o->deadline, NULL);
    case O_PASYNC: {
        struct dplain *d = &m->pl[o->slot - NREQ];
        if (band_waiter_is_pending(&d->w))
            return band_sem_acquire_async(s, o->n, &d->w);
        band_waiter_init(&d->w, plain_wake, d);
        d->hook = o->hook;
        d->hook_target = o->hook_target;
        return band_sem_acquire_async(s, o->n, &d->w);
    }
    case O_PREL:
        return band_sem_release(s, o->n);
    case O_PSREL: {
        const struct mplain *P = &m->cand[0].p[o->slot - NREQ];
        return band_sem_release(sem_of(m, P->sem), P->want);
    }
    case O_DRAIN:
        *ret = band_sem_drain(s, o->n);
        return 0;
    case O_GROW:
        if (m->obj[o->x].budget != NULL)
            return band_budget_grow(m->obj[o->x].budget, o->n);
        return band_sem_release(s, o->n);
    case O_SHRINK:
        if (m->obj[o->x].budget != NULL && (o->n & 1))
            return band_budget_shrink(m->obj[o->x].budget, o->n);
        return band_sem_reduce(s, o->n);
    case O_CLOSE:
        if (m->obj[o->x].budget != NULL && (o->n & 1))
            return band_budget_close(m->obj[o->x].budget);
        return band_sem_close(s);
    case O_DESTROY:
    case O_BUSY: {
        struct dobj *ob = &m->obj[o->x];
        int rc;
        if (ob->tree != NULL)
            rc = band_cap_tree_destroy(ob->tree);
        else if (ob->budget != NULL)
            rc = band_budget_destroy(ob->budget);
        else
            rc = band_sem_destroy(ob->sem);
        if (rc == 0) {
            ob->sem = NULL;
            ob->budget = NULL;
            ob->tree = NULL;
        }
        return rc;
    }
    case O_CREATE: {
        struct dobj *ob = &m->obj[o->x];
        int rc;
        if (o->ckind == K_TREE) {
            unsigned pi = m->cand[0].s[o->x].parent;
            rc = band_cap_tree_create(&ob->tree, pi == NONE8 ? NULL : m->obj[pi].tree, o->cap,
                                      o->reserve);
            if (rc == 0)
                ob->sem = band_cap_tree_sem(ob->tree);
        } else if (o->ckind == K_BUDGET) {
            rc = band_budget_create(&ob->budget, o->cap, NULL);
            if (rc == 0)
                ob->sem = band_budget_sem(ob->budget);
        } else {
            rc = band_sem_create(&ob->sem, o->cap, NULL);
        }
        return rc;
    }
    case O_RESET:
        if (is_req((unsigned)o->slot)) {
            struct dreq *d = &m->rq[o->slot];
            band_admit_req_init(&d->r, req_wake, d);
            d->hook = HK_NONE;
            memset(&d->g, 0, sizeof(d->g));
        } else {
            struct dplain *d = &m->pl[o->slot - NREQ];
            band_waiter_init(&d->w, plain_wake, d);
            d->hook = HK_NONE;
        }
        return 0;
    case O_COUNT:
        break;
    }
    return 0;
}

static void observe(struct admit_model *m, struct obs *ob)
{
    memset(ob->st, 0, sizeof(ob->st));
    for (unsigned x = 0; x < NSEM; x++) {
        ob->alive[x] = m->obj[x].sem != NULL;
        ob->destroyed[x] = m->destroyed[x];
        if (ob->alive[x] && band_sem_get_stats(m->obj[x].sem, &ob->st[x]) != 0)
            fail(m, "band_sem_get_stats(%u) failed", x);
    }
    for (unsigned i = 0; i < NSLOT; i++) {
        const band_waiter *w = is_req(i) ? &m->rq[i].r.w : &m->pl[i - NREQ].w;
        ob->pending[i] = band_waiter_is_pending(w);
        ob->status[i] = band_waiter_status(w);
        ob->woke[i] = m->woke[i];
        ob->wake_status[i] = m->wake_status[i];
    }
}

static int rc_allowed(const struct mstate *L, int rc)
{
    for (unsigned i = 0; i < L->nrc; i++)
        if (L->rc[i] == rc)
            return 1;
    return 0;
}

/* Compare leaf @L with what happened; NULL when they agree, else a description in @buf. */
static const char *mismatch(const struct mstate *L, const struct obs *ob, const struct op *o,
                            char *buf, size_t len)
{
    if (!rc_allowed(L, ob->rc)) {
        int k = snprintf(buf, len, "returned %s, expected", band_err_name(ob->rc));
        for (unsigned i = 0; i < L->nrc && k > 0 && (size_t)k < len; i++)
            k += snprintf(buf + k, len - (size_t)k, " %s", band_err_name(L->rc[i]));
        return buf;
    }
    if (o->kind == O_DRAIN && ob->ret != L->ret) {
        snprintf(buf, len, "drain returned %llu, expected %llu", (unsigned long long)ob->ret,
                 (unsigned long long)L->ret);
        return buf;
    }
    uint64_t dtr = 0, dtb = 0;
    for (unsigned x = 0; x < NSEM; x++) {
        const struct msem *s = &L->s[x];
        if (ob->alive[x] != s->alive || ob->destroyed[x] != s->destroyed_now) {
            snprintf(buf, len, "budget %u: alive %d destroyed %d, expected alive %d destroyed %d",
                     x, ob->alive[x], ob->destroyed[x], s->alive, s->destroyed_now);
            return buf;
        }
        if (!s->alive)
            continue;
        const band_sem_stats *st = &ob->st[x];
        int budget = s->kind != K_SEM;
        uint64_t cap = budget ? s->limit : s->base, use = budget ? in_use(s) : 0;
        if (!budget) { /* a semaphore: as its snapshot computes it (sem.c) */
            uint64_t free_units = s->avail + s->head_got;
            if (free_units > cap + s->debt)
                cap = free_units - s->debt;
            use = cap + s->debt - free_units;
        }
#define CMP(field, value)                                                                          \
    do {                                                                                           \
        if ((uint64_t)st->field != (uint64_t)(value)) {                                            \
            snprintf(buf, len, "budget %u: stats." #field " %llu, expected %llu", x,               \
                     (unsigned long long)st->field, (unsigned long long)(value));                  \
            return buf;                                                                            \
        }                                                                                          \
    } while (0)
        CMP(closed, s->closed);
        CMP(is_budget, budget);
        CMP(capacity, cap);
        CMP(available, s->avail);
        CMP(debt, s->debt);
        CMP(waiters, s->qlen);
        CMP(waiting_units, s->q_units);
        CMP(head_granted, s->head_got);
        CMP(in_use, use);
        CMP(queued, s->queued);
        CMP(grants, s->grants);
        CMP(timeouts, s->timeouts);
        CMP(cancels, s->cancels);
        CMP(closed_fails, s->closed_fails);
        if (L->tol_mask & (1u << x)) {
            if (st->try_refusals < s->try_refusals || st->too_big < s->too_big) {
                snprintf(buf, len, "budget %u: refusal counters went down", x);
                return buf;
            }
            dtr += st->try_refusals - s->try_refusals;
            dtb += st->too_big - s->too_big;
        } else {
            CMP(try_refusals, s->try_refusals);
            CMP(too_big, s->too_big);
        }
#undef CMP
        if (st->wait_ns_max > st->wait_ns_total) {
            snprintf(buf, len, "budget %u: wait_ns_max above wait_ns_total", x);
            return buf;
        }
    }
    if (dtr < L->tr_lo || dtr > L->tr_hi || dtb < L->tb_lo || dtb > L->tb_hi) {
        snprintf(buf, len,
                 "refusal counters: try_refusals +%llu (allowed %u..%u), too_big +%llu "
                 "(allowed %u..%u)",
                 (unsigned long long)dtr, L->tr_lo, L->tr_hi, (unsigned long long)dtb, L->tb_lo,
                 L->tb_hi);
        return buf;
    }
    for (unsigned i = 0; i < NSLOT; i++) {
        int st = is_req(i) ? L->r[i].st : L->p[i - NREQ].st;
        int status = is_req(i) ? L->r[i].status : L->p[i - NREQ].status;
        int woke = is_req(i) ? L->r[i].woke : L->p[i - NREQ].woke;
        int wst = is_req(i) ? L->r[i].wake_status : L->p[i - NREQ].wake_status;
        const char *what = is_req(i) ? "request" : "waiter";
        if (ob->woke[i] != woke) {
            snprintf(buf, len, "%s %u woken %d times, expected %d (status %s)", what, i,
                     ob->woke[i], woke, band_err_name(woke ? wst : ob->wake_status[i]));
            return buf;
        }
        if (woke && ob->wake_status[i] != wst) {
            snprintf(buf, len, "%s %u woken with %s, expected %s", what, i,
                     band_err_name(ob->wake_status[i]), band_err_name(wst));
            return buf;
        }
        if (ob->pending[i] != (st == ST_PENDING)) {
            snprintf(buf, len, "%s %u pending %d, expected %d", what, i, ob->pending[i],
                     st == ST_PENDING);
            return buf;
        }
        if (st != ST_PENDING && ob->status[i] != status) {
            snprintf(buf, len, "%s %u status %s, expected %s", what, i,
                     band_err_name(ob->status[i]), band_err_name(status));
            return buf;
        }
    }
    return NULL;
}

/* The units of @x the driver holds, from the real grants and what the model knows the
 * driver was given. */
static uint64_t held_units(struct admit_model *m, const struct mstate *S, unsigned x)
{
    uint64_t h = S->s[x].held;
    for (unsigned p = 0; p < NPLAIN; p++)
        if (S->p[p].st != ST_EMPTY && S->p[p].sem == x && S->p[p].holding)
            h += S->p[p].want;
    for (unsigned r = 0; r < NREQ; r++) {
        const struct mreq *R = &S->r[r];
        int k = ent_of(R, x);
        if (k < 0)
            continue;
        if (m->rq[r].g.n > 0)
            h += band_admit_held(&m->rq[r].g, sem_of(m, x));
        if (R->granted_untaken)
            h += R->amount[k];
    }
    return h;
}

/* Checks on the real objects after an operation that the model matched. */
static void check_real(struct admit_model *m, const struct obs *ob)
{
    const struct mstate *S = &m->cand[0];
    for (unsigned r = 0; r < NREQ && !m->failed; r++) {
        const struct mreq *R = &S->r[r];
        const band_admit_grant *g = &m->rq[r].g;
        if ((g->n != 0) != (R->gheld != 0)) {
            fail(m, "request %u: grant has %u entries, model holds %d", r, g->n, R->gheld);
            break;
        }
        if (R->st == ST_PENDING && g->n != 0)
            fail(m, "request %u pending with a non-empty grant", r);
        for (unsigned k = 0; R->gheld && k < R->n; k++) {
            uint64_t h = band_admit_held(g, sem_of(m, R->sem[k]));
            if (h != R->gcount[k])
                fail(m, "request %u holds %llu of budget %u, expected %llu", r,
                     (unsigned long long)h, R->sem[k], (unsigned long long)R->gcount[k]);
        }
    }
    /* conservation: available + set aside + held == capacity + debt */
    for (unsigned x = 0; x < NSEM && !m->failed; x++) {
        if (!ob->alive[x])
            continue;
        const band_sem_stats *st = &ob->st[x];
        uint64_t held = held_units(m, S, x);
        uint64_t lhs = st->available + st->head_granted + held;
        uint64_t rhs = (S->s[x].kind == K_SEM ? S->s[x].total : st->capacity) + st->debt;
        if (lhs != rhs)
            fail(m, "budget %u: available %llu + set aside %llu + held %llu != %s %llu + debt %llu",
                 x, (unsigned long long)st->available, (unsigned long long)st->head_granted,
                 (unsigned long long)held, S->s[x].kind == K_SEM ? "total" : "capacity",
                 (unsigned long long)(S->s[x].kind == K_SEM ? S->s[x].total : st->capacity),
                 (unsigned long long)st->debt);
        if ((st->waiters > 0 || st->debt > 0) && st->available != 0)
            fail(m, "budget %u: %llu available beside waiters or debt", x,
                 (unsigned long long)st->available);
    }
}

static void dump_state(const struct mstate *S, FILE *f)
{
    for (unsigned x = 0; x < NSEM; x++) {
        const struct msem *s = &S->s[x];
        if (!s->alive)
            continue;
        fprintf(f,
                "  b%u %s lim=%llu avail=%llu debt=%llu head=%llu closed=%d held=%llu "
                "res=%llu gp=%llu q=[",
                x,
                s->kind == K_SEM      ? "sem"
                : s->kind == K_BUDGET ? "bud"
                                      : "tree",
                (unsigned long long)s->limit, (unsigned long long)s->avail,
                (unsigned long long)s->debt, (unsigned long long)s->head_got, s->closed,
                (unsigned long long)s->held, (unsigned long long)s->reserve,
                (unsigned long long)s->g_pending);
        for (unsigned i = 0; i < s->qlen; i++)
            fprintf(f, "%s%s%u:%llu", i ? " " : "", is_req(s->q[i]) ? "r" : "p",
                    is_req(s->q[i]) ? s->q[i] : s->q[i] - NREQ,
                    (unsigned long long)want_of(S, x, s->q[i]));
        fprintf(f, "]\n");
    }
    for (unsigned r = 0; r < NREQ; r++) {
        const struct mreq *R = &S->r[r];
        if (R->st == ST_EMPTY)
            continue;
        fprintf(f, "  r%u st=%d status=%s g=%d gu=%d t=%llu cls=%d joined=%u/%u {", r, R->st,
                band_err_name(R->status), R->gheld, R->granted_untaken,
                (unsigned long long)R->ticket, R->guaranteed, R->joined, R->nstages);
        for (unsigned i = 0; i < R->n; i++)
            fprintf(f, "%sb%u:%llu/s%u%s", i ? " " : "", R->sem[i],
                    (unsigned long long)R->amount[i], R->stage[i], R->inq[i] ? "q" : "");
        fprintf(f, "} hook=%d->%u\n", R->hook, R->hook_target);
    }
    for (unsigned p = 0; p < NPLAIN; p++) {
        const struct mplain *P = &S->p[p];
        if (P->st == ST_EMPTY)
            continue;
        fprintf(f, "  p%u st=%d status=%s b%u want=%llu hold=%d t=%llu hook=%d->%u\n", p, P->st,
                band_err_name(P->status), P->sem, (unsigned long long)P->want, P->holding,
                (unsigned long long)P->ticket, P->hook, P->hook_target);
    }
}

static void describe_op(const struct op *o, char *buf, size_t len)
{
    int k = snprintf(buf, len, "%s", op_names[o->kind]);
    if (k < 0 || (size_t)k >= len)
        return;
    switch (o->kind) {
    case O_BUILD:
        k += snprintf(buf + k, len - (size_t)k, " r%d", o->slot);
        for (int i = 0; i < o->nadd && k > 0 && (size_t)k < len; i++)
            k += snprintf(buf + k, len - (size_t)k, " %s%d:%llu", o->add[i].tree ? "tree" : "b",
                          o->add[i].x, (unsigned long long)o->add[i].amount);
        break;
    case O_TRY:
    case O_ASYNC:
    case O_PAST:
    case O_TAKE:
    case O_RELEASE:
        snprintf(buf + k, len - (size_t)k, " r%d hook=%d->%d", o->slot, o->hook, o->hook_target);
        break;
    case O_CANCEL:
    case O_RESET:
    case O_PSREL:
        snprintf(buf + k, len - (size_t)k, " slot %d reason %s", o->slot, band_err_name(o->reason));
        break;
    case O_PASYNC:
        snprintf(buf + k, len - (size_t)k, " p%d b%d n=%llu hook=%d->%d", o->slot - NREQ, o->x,
                 (unsigned long long)o->n, o->hook, o->hook_target);
        break;
    default:
        snprintf(buf + k, len - (size_t)k, " r%d b%d n=%llu cap=%llu res=%llu", o->slot, o->x,
                 (unsigned long long)o->n, (unsigned long long)o->cap,
                 (unsigned long long)o->reserve);
        break;
    }
}

static void post_op(struct admit_model *m);

/* Predict @o on every candidate, run it, keep the candidates that match. */
static void exec_op(struct admit_model *m, struct op *o)
{
    if (m->failed)
        return;
    m->opno++;
    m->counts.ops[op_class[o->kind]]++;
    /* the state when the operation begins */
    for (int c = 0; c < m->ncand; c++) {
        struct mstate *S = &m->cand[c];
        S->nrc = 0;
        memset(S->rc, 0, sizeof(S->rc));
        S->ret = 0;
        S->tol_mask = 0;
        S->tr_lo = S->tr_hi = S->tb_lo = S->tb_hi = 0;
        S->prog_slot = NONE8;
        S->prog_k = 0;
        memset(S->ev, 0, sizeof(S->ev));
        for (unsigned x = 0; x < NSEM; x++) {
            S->s[x].held0 = S->s[x].held;
            S->s[x].children0 = S->s[x].children;
            S->s[x].destroyed_now = 0;
        }
        for (unsigned r = 0; r < NREQ; r++) {
            struct mreq *R = &S->r[r];
            R->woke = 0;
            R->wake_status = 0;
            R->hook_phase = 0;
            R->hook_k = 0;
            R->active0 = R->st == ST_PENDING || R->granted_untaken || R->gheld ||
                         (o->kind != O_CANCEL && o->kind != O_RESET && o->slot == (int)r);
        }
        for (unsigned p = 0; p < NPLAIN; p++) {
            struct mplain *P = &S->p[p];
            P->woke = 0;
            P->wake_status = 0;
            P->hook_phase = 0;
            P->active0 = P->st == ST_PENDING || P->holding ||
                         (o->kind != O_CANCEL && o->kind != O_RESET && o->slot == (int)(NREQ + p));
        }
    }
    /* predict */
    m->nleaves = 0;
    m->memo_gen++;
    m->memo_n = 0;
    m->nodes = 0;
    m->truncated = 0;
    for (int c = 0; c < m->ncand; c++) {
        memcpy(&m->stack[0], &m->cand[c], sizeof(m->stack[0]));
        m_apply_op(&m->stack[0], o);
        settle(m, 0);
    }
    if (m->nodes > 0)
        m->counts.branch_points += m->nodes;
    if (m->truncated)
        m->counts.truncated++;
    /* run */
    memset(m->woke, 0, sizeof(m->woke));
    memset(m->wake_status, 0, sizeof(m->wake_status));
    memset(m->destroyed, 0, sizeof(m->destroyed));
    struct obs ob;
    ob.ret = 0;
    m->in_op = 1;
    ob.rc = real_op(m, o, &ob.ret);
    m->in_op = 0;
    if (m->failed)
        return;
    observe(m, &ob);
    if (m->failed)
        return;
    /* match */
    char first[512] = "", buf[512];
    int keep = 0;
    for (int i = 0; i < m->nleaves; i++) {
        const char *why = mismatch(&m->leaves[i], &ob, o, buf, sizeof(buf));
        if (why != NULL) {
            if (first[0] == '\0')
                snprintf(first, sizeof(first), "%s", why);
            continue;
        }
        struct mstate *L = &m->leaves[i];
        for (unsigned x = 0; x < NSEM; x++) {
            struct msem *s = &L->s[x];
            /* the snapshot kept a semaphore's growth it saw */
            if (s->alive && s->kind == K_SEM && s->avail + s->head_got > s->base + s->debt)
                s->base = s->avail + s->head_got - s->debt;
            if (L->tol_mask & (1u << x)) {
                L->s[x].try_refusals = ob.st[x].try_refusals;
                L->s[x].too_big = ob.st[x].too_big;
            }
        }
        const char *bad = m_invariants(L);
        if (bad != NULL) {
            fail(m, "%s", bad);
            return;
        }
        int dup = 0;
        for (int c = 0; c < keep; c++)
            if (memcmp(&m->cand[c], L, STATE_CMP_BYTES) == 0)
                dup = 1;
        if (dup)
            continue;
        if (keep < MAXCAND)
            memcpy(&m->cand[keep++], L, sizeof(*L));
        else
            m->counts.truncated++;
    }
    char desc[256];
    describe_op(o, desc, sizeof(desc));
    if (keep == 0) {
        fail(m, "%s: %s (%d outcome%s explored%s)", desc, first, m->nleaves,
             m->nleaves == 1 ? "" : "s", m->truncated ? ", exploration truncated" : "");
        fprintf(stderr, "admit_model: %s\nthe model before the operation:\n", m->err);
        dump_state(&m->cand[0], stderr);
        if (m->nleaves > 0) {
            fprintf(stderr, "the first outcome the model allowed:\n");
            dump_state(&m->leaves[0], stderr);
        }
        return;
    }
    if (keep > 1)
        m->counts.multi_candidate++;
    m->ncand = keep;
    const struct mstate *S = &m->cand[0];
    m->counts.guaranteed += S->ev[EV_GUAR];
    m->counts.staged_joins += S->ev[EV_JOIN];
    m->counts.submit_granted += S->ev[EV_SUBMIT_GRANT];
    m->counts.hook_releases += S->ev[EV_HOOK_REL];
    m->counts.wake_destroys += S->ev[EV_WAKE_DESTROY];
    m->counts.destroy_staged += S->ev[EV_DESTROY_STAGED];
    m->counts.adjust_front += S->ev[EV_ADJ_FRONT];
    if (ob.rc == BAND_PENDING)
        m->counts.pending++;
    if ((o->kind == O_TRY || o->kind == O_ASYNC || o->kind == O_PAST) && ob.rc == BAND_E2BIG)
        m->counts.e2big_submit++;
    if (o->kind == O_CANCEL && ob.rc == 0)
        m->counts.cancels_ok++;
    if (o->kind == O_CANCEL && ob.rc == BAND_EALREADY)
        m->counts.ealready++;
    for (unsigned i = 0; i < NSLOT; i++) {
        if (!ob.woke[i])
            continue;
        if (!is_req(i))
            m->counts.plain_wakes++;
        else if (ob.wake_status[i] == 0)
            m->counts.grant_wakes++;
        else if (ob.wake_status[i] == BAND_ECLOSED)
            m->counts.closed_wakes++;
        else if (ob.wake_status[i] == BAND_E2BIG)
            m->counts.e2big_wakes++;
    }
    check_real(m, &ob);
    if (m->trace) {
        fprintf(stderr, "#%llu %s -> %s, %d leaves, %d candidates%s\n", (unsigned long long)m->opno,
                desc, band_err_name(ob.rc), m->nleaves, m->ncand, m->failed ? " MISMATCH" : "");
        if (m->trace > 1)
            dump_state(&m->cand[0], stderr);
    }
    post_op(m);
}

/* ---------------------------------------------------------------------------------- */
/* input                                                                               */

static uint8_t next_byte(struct admit_model *m)
{
    uint8_t b = model_input_byte(&m->in);
    if (m->record != NULL)
        (void)fputc(b, m->record);
    return b;
}

static const struct mstate *S0(const struct admit_model *m)
{
    return &m->cand[0];
}

/* Any existing primitive (a flat budget or a tree node). */
static unsigned pick_sem(struct admit_model *m)
{
    unsigned k = next_byte(m) % (unsigned)(m->nflat + 5);
    return k < (unsigned)m->nflat ? k : XROOT + (k - (unsigned)m->nflat);
}

static unsigned pick_tree(struct admit_model *m)
{
    return XROOT + next_byte(m) % 5;
}

/*
 * An amount for @x: mostly small, sometimes one of the interesting values near its state
 * (the capacity, one past it, what is available, the head's need), rarely around
 * BAND_MAX_UNITS. For a tree node the capacity is the smallest on its path.
 */
static uint64_t read_amount(struct admit_model *m, unsigned x)
{
    const struct msem *s = &S0(m)->s[x];
    uint8_t c = next_byte(m);
    uint64_t lim = s->kind == K_SEM ? (s->total < 64 ? s->total : 4) : s->limit;
    if (s->kind == K_TREE)
        for (unsigned t = s->parent; t != NONE8; t = S0(m)->s[t].parent)
            lim = min_u64(lim, S0(m)->s[t].limit);
    switch (c & 15) {
    case 9:
        return lim;
    case 10:
        return (c & 0x40) ? lim + 1 : lim / 2;
    case 11:
        return s->avail;
    case 12:
        return s->avail + 1;
    case 13:
        if (s->qlen > 0) {
            uint64_t w = want_of(S0(m), x, s->q[0]);
            return w > s->head_got ? w - s->head_got : 1;
        }
        return 1;
    case 14:
        return 0;
    case 15:
        if ((c & 0x30) == 0x30)
            return (c & 0x40) ? MAXP : MAXP + 1;
        return next_byte(m) % 3;
    case 7:
    case 8:
        return next_byte(m) % 9;
    default:
        return next_byte(m) % 5;
    }
}

static void read_hook(struct admit_model *m, struct op *o, unsigned own)
{
    uint8_t h = next_byte(m);
    o->hook = h < 150 ? HK_NONE : h < 215 ? HK_RELEASE : HK_DESTROY;
    o->hook_target = (h & 1) ? (int)own : (int)pick_sem(m);
}

static int read_reason(struct admit_model *m)
{
    uint8_t c = next_byte(m);
    switch (c & 7) {
    case 0:
    case 1:
    case 2:
        return BAND_ECANCELED;
    case 3:
    case 4:
    case 5:
        return BAND_ETIMEDOUT;
    case 6:
        /* Not one of the two reasons a cancel takes: refused, nothing changes. */
        return (c & 8) ? BAND_ECLOSED : BAND_E2BIG;
    default:
        return (c & 8) ? 0 : BAND_PENDING; /* not a reason: refused */
    }
}

static band_time past_deadline(struct admit_model *m)
{
    return (next_byte(m) & 1) ? 0 : band_now() - 1;
}

/* ---------------------------------------------------------------------------------- */
/* compound operations                                                                 */

static void do_simple(struct admit_model *m, enum opkind kind, int slot, int x, uint64_t n)
{
    struct op o;
    memset(&o, 0, sizeof(o));
    o.kind = kind;
    o.slot = slot;
    o.x = x;
    o.n = n;
    o.reason = BAND_ECANCELED;
    exec_op(m, &o);
}

static void read_create(struct admit_model *m, unsigned x, struct op *o)
{
    memset(o, 0, sizeof(*o));
    o->kind = O_CREATE;
    o->x = (int)x;
    o->slot = -1;
    uint8_t a = next_byte(m), b = next_byte(m);
    if (x < NFLAT) {
        o->ckind = (a & 1) ? K_BUDGET : K_SEM;
        o->cap = o->ckind == K_BUDGET ? 1 + b % 10 : b % 11;
        return;
    }
    o->ckind = K_TREE;
    switch (x) {
    case XROOT:
        o->cap = 4 + b % 13;
        break;
    case XT0:
    case XT1:
        o->cap = 2 + b % 10;
        break;
    default:
        o->cap = 1 + b % 7;
        break;
    }
    o->reserve = (a >> 1) % 4 == 0 ? 0 : (a >> 3) % (o->cap + 1);
}

/* Create @x (again); a reservation that does not fit is refused, then it is created
 * without one. */
static void create_obj(struct admit_model *m, unsigned x)
{
    struct op o;
    read_create(m, x, &o);
    unsigned pi = S0(m)->s[x].parent;
    if (o.ckind == K_TREE && o.reserve > 0 && pi != NONE8 &&
        S0(m)->s[pi].child_reserve > S0(m)->s[pi].limit) {
        /* The parent was shrunk below its children's reservations. A reserved child must
         * then be refused; that case is model_admit.c's test_tree_reserve_past_shrunk_cap,
         * kept out of the random runs so that they go on testing everything else. */
        o.reserve = 0;
    }
    if (o.ckind == K_TREE && m_create_tree_rc(S0(m), x, o.cap, o.reserve) != 0) {
        exec_op(m, &o); /* must be refused */
        o.reserve = 0;
    }
    exec_op(m, &o);
}

/* After an operation: forget what refers to primitives that wakes destroyed and create
 * them again. */
static void post_op(struct admit_model *m)
{
    int any = 0;
    for (unsigned x = 0; x < NSEM; x++)
        any |= m->destroyed[x];
    if (!any)
        return;
    uint8_t gone[NSEM];
    memcpy(gone, m->destroyed, sizeof(gone));
    memset(m->destroyed, 0, sizeof(m->destroyed));
    for (unsigned x = 0; x < NSEM; x++) {
        if (!gone[x])
            continue;
        for (unsigned r = 0; r < NREQ; r++)
            if (S0(m)->r[r].st != ST_EMPTY && names(&S0(m)->r[r], x))
                do_simple(m, O_RESET, (int)r, 0, 0);
        for (unsigned p = 0; p < NPLAIN; p++)
            if (S0(m)->p[p].st != ST_EMPTY && S0(m)->p[p].sem == x)
                do_simple(m, O_RESET, (int)(NREQ + p), 0, 0);
    }
    for (unsigned x = 0; x < NSEM; x++)
        if (gone[x] && !S0(m)->s[x].alive)
            create_obj(m, x);
}

/* Does slot @id (request or plain) refer to any primitive in @mask? */
static int slot_names_any(const struct mstate *S, unsigned id, uint32_t mask)
{
    if (is_req(id)) {
        const struct mreq *R = &S->r[id];
        if (R->st == ST_EMPTY)
            return 0;
        for (unsigned i = 0; i < R->n; i++)
            if (mask & (1u << R->sem[i]))
                return 1;
        return 0;
    }
    const struct mplain *P = &S->p[id - NREQ];
    return P->st != ST_EMPTY && (mask & (1u << P->sem)) != 0;
}

/* Make every slot that refers to @mask idle and empty: cancel, take, release, forget. */
static void clear_slots(struct admit_model *m, uint32_t mask)
{
    for (int pass = 0; pass < 4 && !m->failed; pass++) {
        for (unsigned id = 0; id < NSLOT && !m->failed; id++) {
            if (!slot_names_any(S0(m), id, mask))
                continue;
            int st = is_req(id) ? S0(m)->r[id].st : S0(m)->p[id - NREQ].st;
            if (st == ST_PENDING)
                do_simple(m, O_CANCEL, (int)id, 0, 0);
        }
    }
    for (unsigned id = 0; id < NSLOT && !m->failed; id++) {
        if (!slot_names_any(S0(m), id, mask))
            continue;
        if (is_req(id)) {
            if (S0(m)->r[id].st == ST_PENDING)
                do_simple(m, O_CANCEL, (int)id, 0, 0);
            /* a try may have filled the grant while an async grant was not taken */
            if (S0(m)->r[id].gheld)
                do_simple(m, O_RELEASE, (int)id, 0, 0);
            if (S0(m)->r[id].granted_untaken)
                do_simple(m, O_TAKE, (int)id, 0, 0);
            if (S0(m)->r[id].gheld)
                do_simple(m, O_RELEASE, (int)id, 0, 0);
        } else {
            if (S0(m)->p[id - NREQ].st == ST_PENDING)
                do_simple(m, O_CANCEL, (int)id, 0, 0);
            if (S0(m)->p[id - NREQ].holding)
                do_simple(m, O_PSREL, (int)id, 0, 0);
        }
        if (!slot_names_any(S0(m), id, mask) || m->failed)
            continue;
        if (is_req(id) ? (S0(m)->r[id].st == ST_PENDING || S0(m)->r[id].gheld ||
                          S0(m)->r[id].granted_untaken)
                       : (S0(m)->p[id - NREQ].st == ST_PENDING || S0(m)->p[id - NREQ].holding)) {
            fail(m, "slot %u still active after cancel and release", id);
            return;
        }
        do_simple(m, O_RESET, (int)id, 0, 0);
    }
    for (unsigned x = 0; x < NSEM && !m->failed; x++)
        if ((mask & (1u << x)) && S0(m)->s[x].alive && S0(m)->s[x].held > 0)
            do_simple(m, O_PREL, -1, (int)x, S0(m)->s[x].held);
}

/* The subtree of tree node @x, or @x alone. */
static uint32_t subtree(const struct mstate *S, unsigned x)
{
    uint32_t mask = 1u << x;
    for (int again = 1; again;) {
        again = 0;
        for (unsigned y = XROOT; y < NSEM; y++) {
            if ((mask & (1u << y)) == 0 && S->s[y].parent != NONE8 &&
                (mask & (1u << S->s[y].parent))) {
                mask |= 1u << y;
                again = 1;
            }
        }
    }
    return mask;
}

/* Cancel and release everything on @x (and its subtree), destroy it, create it again. */
static void recycle(struct admit_model *m, unsigned x)
{
    uint32_t mask = x >= XROOT ? subtree(S0(m), x) : 1u << x;
    clear_slots(m, mask);
    for (unsigned y = NSEM; y-- > 0 && !m->failed;)
        if ((mask & (1u << y)) && S0(m)->s[y].alive)
            do_simple(m, O_DESTROY, -1, (int)y, 0);
    for (unsigned y = 0; y < NSEM && !m->failed; y++)
        if ((mask & (1u << y)) && !S0(m)->s[y].alive)
            create_obj(m, y);
}

/* ---------------------------------------------------------------------------------- */
/* decoding operations                                                                 */

static void op_build(struct admit_model *m, unsigned r)
{
    struct op o;
    memset(&o, 0, sizeof(o));
    o.kind = O_BUILD;
    o.slot = (int)r;
    unsigned nf = next_byte(m) % 4;
    for (unsigned k = 0; k < nf; k++) {
        unsigned x = next_byte(m) % (unsigned)m->nflat;
        o.add[o.nadd].tree = 0;
        o.add[o.nadd].x = (int)x;
        o.add[o.nadd].amount = read_amount(m, x);
        o.nadd++;
    }
    uint8_t t = next_byte(m);
    unsigned nt = t < 110 ? 0 : t < 235 ? 1 : 2;
    for (unsigned k = 0; k < nt; k++) {
        unsigned x = pick_tree(m);
        o.add[o.nadd].tree = 1;
        o.add[o.nadd].x = (int)x;
        o.add[o.nadd].amount = read_amount(m, x);
        o.nadd++;
    }
    exec_op(m, &o);
    if (m->failed)
        return;
    /* the request as built: entries in order, as the model has them */
    const struct mreq *R = &S0(m)->r[r];
    const band_admit_req *rr = &m->rq[r].r;
    if (rr->n != R->n) {
        fail(m, "build r%u: %u entries, expected %u", r, rr->n, R->n);
        return;
    }
    for (unsigned i = 0; i < R->n; i++)
        if (rr->e[i].sem != sem_of(m, R->sem[i]) || rr->e[i].amount != R->amount[i])
            fail(m, "build r%u: entry %u is not budget %u x %llu", r, i, R->sem[i],
                 (unsigned long long)R->amount[i]);
}

static void op_submit(struct admit_model *m, unsigned r, uint8_t mode)
{
    struct op o;
    memset(&o, 0, sizeof(o));
    o.slot = (int)r;
    const struct mreq *R = &S0(m)->r[r];
    if (mode < 110 && !R->granted_untaken && !R->gheld) {
        o.kind = O_ASYNC;
        unsigned own = R->n > 0 ? R->sem[next_byte(m) % R->n] : 0;
        read_hook(m, &o, own);
    } else if (mode < 200) {
        o.kind = O_TRY;
    } else {
        o.kind = O_PAST;
        o.deadline = past_deadline(m);
    }
    int had = R->gheld;
    exec_op(m, &o);
    if (m->failed || !(o.kind == O_TRY || o.kind == O_PAST))
        return;
    /* all or nothing: a new grant holds every amount */
    R = &S0(m)->r[r];
    if (R->gheld && !had) {
        for (unsigned i = 0; i < R->n; i++) {
            uint64_t h = band_admit_held(&m->rq[r].g, sem_of(m, R->sem[i]));
            if (h != R->amount[i])
                fail(m, "r%u granted %llu of budget %u, asked %llu", r, (unsigned long long)h,
                     R->sem[i], (unsigned long long)R->amount[i]);
        }
    }
}

static void op_grant_use(struct admit_model *m, unsigned r)
{
    const struct mreq *R = &S0(m)->r[r];
    uint8_t c = next_byte(m);
    struct op o;
    memset(&o, 0, sizeof(o));
    o.slot = (int)r;
    if (c < 90) {
        o.kind = O_RELEASE;
        exec_op(m, &o);
        return;
    }
    o.kind = c < 170 ? O_PART : O_ADJUST;
    o.deadline = past_deadline(m);
    unsigned k = next_byte(m) % (unsigned)(R->n + 1);
    if (k == R->n) {
        o.x = (int)pick_sem(m); /* maybe a budget the grant does not name: EINVAL */
    } else {
        o.x = R->sem[k];
    }
    int e = ent_of(R, (unsigned)o.x);
    uint64_t count = e >= 0 && R->gheld ? R->gcount[e] : 0;
    uint8_t a = next_byte(m);
    if (o.kind == O_PART) {
        o.n = (a & 3) == 0 ? count + 1 : (a & 3) == 1 ? count : count == 0 ? 0 : a % (count + 1);
    } else {
        switch (a & 7) {
        case 0:
            o.n = count > 0 ? count - 1 : 0;
            break;
        case 1:
        case 2:
            o.n = count + 1;
            break;
        case 3:
            o.n = count + 2;
            break;
        case 4:
            o.n = 0;
            break;
        case 5:
            o.n = (a & 8) ? MAXP + 1 : S0(m)->s[o.x].limit + 1;
            break;
        default:
            o.n = read_amount(m, (unsigned)o.x);
            break;
        }
    }
    exec_op(m, &o);
}

static void op_request(struct admit_model *m)
{
    unsigned r = next_byte(m) % NREQ;
    const struct mreq *R = &S0(m)->r[r];
    if (R->st == ST_PENDING) {
        if ((next_byte(m) & 3) == 0) {
            struct op o;
            memset(&o, 0, sizeof(o));
            o.kind = O_CANCEL;
            o.slot = (int)r;
            o.reason = read_reason(m);
            exec_op(m, &o);
        } else {
            op_submit(m, r, next_byte(m)); /* pending: refused */
        }
        return;
    }
    if (R->granted_untaken) {
        do_simple(m, O_TAKE, (int)r, 0, 0);
        return;
    }
    if (R->gheld) {
        op_grant_use(m, r);
        return;
    }
    if (R->st == ST_EMPTY || next_byte(m) < 200)
        op_build(m, r);
    if (!m->failed)
        op_submit(m, r, next_byte(m));
}

static void op_plain(struct admit_model *m)
{
    unsigned p = next_byte(m) % NPLAIN;
    const struct mplain *P = &S0(m)->p[p];
    struct op o;
    memset(&o, 0, sizeof(o));
    o.slot = (int)(NREQ + p);
    if (P->st == ST_PENDING) {
        o.kind = O_CANCEL;
        o.reason = read_reason(m);
        exec_op(m, &o);
        return;
    }
    if (P->holding) {
        o.kind = O_PSREL;
        exec_op(m, &o);
        return;
    }
    o.kind = O_PASYNC;
    o.x = (int)pick_sem(m);
    o.n = read_amount(m, (unsigned)o.x);
    read_hook(m, &o, (unsigned)o.x);
    exec_op(m, &o);
}

static void op_plain_direct(struct admit_model *m)
{
    struct op o;
    memset(&o, 0, sizeof(o));
    o.slot = -1;
    o.x = (int)pick_sem(m);
    uint8_t c = next_byte(m);
    const struct msem *s = &S0(m)->s[o.x];
    if (c < 90) {
        o.kind = O_PTRY;
        o.n = read_amount(m, (unsigned)o.x);
    } else if (c < 130) {
        o.kind = O_PPAST;
        o.n = read_amount(m, (unsigned)o.x);
        o.deadline = past_deadline(m);
    } else if (c < 220 && s->held > 0) {
        o.kind = O_PREL;
        o.n = (c & 1) ? s->held : 1 + next_byte(m) % s->held;
    } else {
        o.kind = O_DRAIN;
        o.n = read_amount(m, (unsigned)o.x);
    }
    exec_op(m, &o);
}

static void op_capacity(struct admit_model *m)
{
    struct op o;
    memset(&o, 0, sizeof(o));
    o.slot = -1;
    o.x = (int)pick_sem(m);
    const struct msem *s = &S0(m)->s[o.x];
    uint8_t c = next_byte(m);
    int grow = s->kind != K_TREE && (c & 1);
    o.kind = grow ? O_GROW : O_SHRINK;
    switch ((c >> 1) & 7) {
    case 0:
        o.n = 0;
        break;
    case 1:
        o.n = s->limit; /* a budget's shrink: EINVAL */
        break;
    case 2:
        o.n = s->limit > 1 ? s->limit - 1 : 1;
        break;
    default:
        o.n = 1 + next_byte(m) % 3;
        break;
    }
    if (s->kind == K_SEM && o.n > 64)
        o.n = 1 + next_byte(m) % 4;
    exec_op(m, &o);
}

static void op_slot_misc(struct admit_model *m, uint8_t b)
{
    unsigned id = next_byte(m) % NSLOT;
    struct op o;
    memset(&o, 0, sizeof(o));
    o.slot = (int)id;
    if (b & 1) {
        o.kind = O_CANCEL;
        o.reason = read_reason(m);
        if (next_byte(m) == 0)
            o.slot = -1; /* NULL */
        exec_op(m, &o);
        return;
    }
    if (is_req(id)) {
        const struct mreq *R = &S0(m)->r[id];
        if ((b & 2) && R->st != ST_EMPTY) {
            op_submit(m, id, next_byte(m)); /* resubmit as built */
            return;
        }
        if (R->st != ST_PENDING && !R->gheld && !R->granted_untaken) {
            o.kind = O_RESET;
            exec_op(m, &o);
            return;
        }
        o.kind = O_TAKE;
        exec_op(m, &o);
        return;
    }
    const struct mplain *P = &S0(m)->p[id - NREQ];
    if (P->st != ST_PENDING && !P->holding) {
        o.kind = O_RESET;
        exec_op(m, &o);
    }
}

static void op_close_or_busy(struct admit_model *m, uint8_t b)
{
    unsigned x = pick_sem(m);
    const struct msem *s = &S0(m)->s[x];
    if (b & 1) {
        if (s->qlen > 0 || (s->kind == K_TREE && s->children > 0))
            do_simple(m, O_BUSY, -1, (int)x, 0);
        return;
    }
    do_simple(m, O_CLOSE, -1, (int)x, next_byte(m));
}

static void op_recycle(struct admit_model *m)
{
    unsigned x = pick_sem(m);
    for (unsigned k = 0; k < NSEM; k++) {
        unsigned y = (x + k) % NSEM;
        if (S0(m)->s[y].alive && S0(m)->s[y].closed) {
            x = y; /* closed budgets first */
            break;
        }
    }
    recycle(m, x);
}

static void step(struct admit_model *m)
{
    uint8_t b = next_byte(m);
    if (b < 120)
        op_request(m);
    else if (b < 145)
        op_plain(m);
    else if (b < 170)
        op_plain_direct(m);
    else if (b < 190) {
        unsigned r = next_byte(m) % NREQ;
        if (S0(m)->r[r].gheld)
            op_grant_use(m, r);
        else
            op_request(m);
    } else if (b < 210)
        op_slot_misc(m, b);
    else if (b < 228)
        op_capacity(m);
    else if (b < 236)
        op_close_or_busy(m, b);
    else if (b < 240)
        op_recycle(m);
    else
        op_request(m);
}

/* ---------------------------------------------------------------------------------- */
/* runs                                                                                */

struct admit_model *admit_model_new(void)
{
    struct admit_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    m->stack = calloc(MAXDEPTH, sizeof(*m->stack));
    if (m->stack == NULL) {
        free(m);
        return NULL;
    }
    for (int i = 0; i < NREQ; i++) {
        m->rq[i].m = m;
        m->rq[i].idx = i;
    }
    for (int i = 0; i < NPLAIN; i++) {
        m->pl[i].m = m;
        m->pl[i].idx = i;
    }
    m->deadline = BAND_FOREVER;
    const char *t = getenv("ADMIT_MODEL_TRACE");
    m->trace = t != NULL && *t != '\0' && *t != '0' ? atoi(t) > 1 ? 2 : 1 : 0;
    return m;
}

/* Free every real object, ignoring the model (after a mismatch, or at the end). */
static void teardown(struct admit_model *m)
{
    m->in_op = 1; /* wakes of closes below are expected */
    for (int i = 0; i < NREQ; i++) {
        if (band_waiter_is_pending(&m->rq[i].r.w))
            (void)band_waiter_cancel(&m->rq[i].r.w, BAND_ECANCELED);
        m->rq[i].hook = HK_NONE;
    }
    for (int i = 0; i < NPLAIN; i++) {
        if (band_waiter_is_pending(&m->pl[i].w))
            (void)band_waiter_cancel(&m->pl[i].w, BAND_ECANCELED);
        m->pl[i].hook = HK_NONE;
    }
    for (int i = 0; i < NREQ; i++) {
        band_admit_grant *g = &m->rq[i].g;
        int live = 1; /* after a mismatch a grant may name a primitive that is gone */
        for (uint32_t k = 0; k < g->n && k < EMAX; k++) {
            int found = 0;
            for (unsigned x = 0; x < NSEM; x++)
                found |= g->p[k].sem != NULL && g->p[k].sem == m->obj[x].sem;
            live &= found | (g->p[k].count == 0);
        }
        if (g->n > 0 && (!live || band_admit_release(g) != 0))
            memset(g, 0, sizeof(*g));
    }
    for (int x = NSEM - 1; x >= 0; x--) {
        struct dobj *o = &m->obj[x];
        if (o->sem == NULL)
            continue;
        (void)band_sem_close(o->sem);
        if (o->tree != NULL)
            (void)band_cap_tree_destroy(o->tree);
        else if (o->budget != NULL)
            (void)band_budget_destroy(o->budget);
        else
            (void)band_sem_destroy(o->sem);
        memset(o, 0, sizeof(*o));
    }
    for (int i = 0; i < NREQ; i++) {
        band_admit_req_init(&m->rq[i].r, req_wake, &m->rq[i]);
        memset(&m->rq[i].g, 0, sizeof(m->rq[i].g));
    }
    for (int i = 0; i < NPLAIN; i++)
        band_waiter_init(&m->pl[i].w, plain_wake, &m->pl[i]);
    m->in_op = 0;
}

void admit_model_free(struct admit_model *m)
{
    if (m == NULL)
        return;
    teardown(m);
    free(m->stack);
    free(m);
}

static void setup_world(struct admit_model *m)
{
    memset(m->cand, 0, sizeof(m->cand[0]));
    m->ncand = 1;
    struct mstate *S = &m->cand[0];
    for (unsigned x = 0; x < NSEM; x++)
        S->s[x].parent = NONE8;
    S->s[XT0].parent = XROOT;
    S->s[XT1].parent = XROOT;
    S->s[XL0].parent = XT0;
    uint8_t h = next_byte(m);
    m->nflat = 2 + h % 3;
    m->leaf1_parent = (h & 8) ? XT1 : XT0;
    S->s[XL1].parent = (uint8_t)m->leaf1_parent;
    for (unsigned x = 0; x < NSEM; x++) {
        if (x >= (unsigned)m->nflat && x < NFLAT)
            continue;
        create_obj(m, x);
    }
}

/* Cancel and release everything, check that every budget is whole, destroy it all. */
static void finish(struct admit_model *m)
{
    if (m->failed)
        return;
    uint32_t all = (1u << NSEM) - 1;
    clear_slots(m, all);
    for (unsigned x = 0; x < NSEM && !m->failed; x++) {
        const struct msem *s = &S0(m)->s[x];
        if (!s->alive)
            continue;
        /* (a sem may still owe what reduce took beyond its permits) */
        if (s->qlen != 0 || s->head_got != 0 ||
            (s->kind != K_SEM && (s->debt != 0 || s->avail != s->limit)))
            fail(m, "final: budget %u is not whole", x);
    }
    for (unsigned y = NSEM; y-- > 0 && !m->failed;)
        if (S0(m)->s[y].alive)
            do_simple(m, O_DESTROY, -1, (int)y, 0);
}

static int run(struct admit_model *m, uint64_t max_ops)
{
    m->failed = 0;
    m->err[0] = '\0';
    m->opno = 0;
    teardown(m);
    setup_world(m);
    m->steps = 0;
    for (uint64_t i = 0; i < max_ops && !m->failed; i++) {
        if (model_input_done(&m->in))
            break;
        if ((i & 63) == 63 && m->deadline != BAND_FOREVER && band_now() > m->deadline)
            break;
        step(m);
        m->steps++;
    }
    finish(m);
    if (m->failed) {
        teardown(m);
        return -1;
    }
    return 0;
}

int admit_model_run_bytes(struct admit_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    return run(m, UINT64_MAX);
}

int admit_model_run_seed(struct admit_model *m, uint64_t seed, uint64_t ops)
{
    model_input_seed(&m->in, seed);
    const char *path = getenv("ADMIT_MODEL_RECORD");
    if (path != NULL && *path != '\0')
        m->record = fopen(path, "wb");
    int rc = run(m, ops);
    if (m->record != NULL) {
        fclose(m->record);
        m->record = NULL;
    }
    return rc;
}

void admit_model_set_deadline(struct admit_model *m, int64_t deadline)
{
    m->deadline = deadline;
}

uint64_t admit_model_ops_done(const struct admit_model *m)
{
    return m->steps;
}

const char *admit_model_error(const struct admit_model *m)
{
    return m->err;
}

const struct admit_model_counts *admit_model_counts(const struct admit_model *m)
{
    return &m->counts;
}

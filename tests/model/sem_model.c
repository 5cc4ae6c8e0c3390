/* SPDX-License-Identifier: MIT */
/*
 * sem_model.c - the reference model of band_sem/band_budget and the op interpreter that
 * compares it with the real thing (see sem_model.h).
 *
 * The model is deliberately naive: a plain array holds the queue in arrival order, and
 * every rule is written out the long way from the headers (sem.h, permit.h, budget.h, core.h):
 *
 *  - acquisitions are checked in the order EINVAL (n above BAND_MAX_UNITS, bad
 *    waiter), E2BIG (budget: n above the capacity, counted in too_big), ECLOSED; n == 0
 *    succeeds at once on an open semaphore even with waiters queued;
 *  - while any waiter is queued or a debt is owed, nothing is available: the head waiter
 *    holds released permits as its partial grant;
 *  - a release repays the debt, then completes waiters in FIFO order, then adds the rest
 *    to the available count; it fails with EOVERFLOW, changing nothing, when that rest
 *    would exceed BAND_MAX_UNITS, or on a budget when it returns more than callers
 *    hold (available + the head's partial grant + n above capacity + debt);
 *  - reduce takes available permits first and owes the rest; drain takes only what is
 *    available; cancel (reason BAND_ECANCELED or BAND_ETIMEDOUT, any other is EINVAL)
 *    hands a head's partial grant on like a release would; close fails
 *    every waiter with ECLOSED in FIFO order and hands the head's partial grant on;
 *  - shrink reduces, then fails every queued request above the new capacity with E2BIG
 *    (FIFO order, counted in too_big), then hands the failed head's partial grant on;
 *    band_sem_reduce() on a budget's semaphore is that shrink; grow is a release of the
 *    new units under the new capacity.
 *
 * An acquisition that would push the queued units past 2^64 - 1 is EOVERFLOW (sem.h).
 * Details the headers leave open follow the implementation: on a semaphore,
 * reduce(n > BAND_MAX_UNITS) is EOVERFLOW even when the debt would fit; a submission
 * refused with EINVAL leaves the waiter's state and status alone, one refused with E2BIG,
 * ECLOSED or EOVERFLOW (or completed at once) ends idle with that status.
 */
#include "sem_model.h"

#include "model_input.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/band.h"
#include "prim/sem_internal.h"

#define NSLOTS 16
#define MAXP   BAND_MAX_UNITS
#define MAXEV  (2 * NSLOTS)

enum slot_state { SL_IDLE, SL_QUEUED, SL_DONE };

struct sem_model;

struct slot {
    band_waiter w; /* first member */
    struct sem_model *m;
    int idx;
    enum slot_state state; /* the model's view */
    int status;            /* expected band_waiter_status() when not queued */
    uint64_t want;
};

struct ref {
    int is_budget;
    uint64_t limit; /* capacity of a budget, BAND_MAX_UNITS for a semaphore */
    uint64_t base;  /* a semaphore's reported capacity: created with, less what reduce
                       took, raised when a snapshot sees more free than it + debt */
    uint64_t avail, debt, head_got, q_units;
    uint64_t held; /* permits the driver holds */
    int closed;
    int q[NSLOTS];
    int qlen;
    uint64_t queued, grants, timeouts, cancels, closed_fails, try_refusals, too_big;
    uint64_t shrink_fails;
};

struct wake_ev {
    int slot;
    int status;
};

struct sem_model {
    band_sem *sem;
    band_budget *budget; /* non-NULL when the primitive is a budget (sem is its view) */
    struct ref r;
    struct slot slots[NSLOTS];

    /* input */
    struct model_input in; /* where the operations come from */

    /* wakes of the current op */
    struct wake_ev exp[MAXEV];
    int nexp;
    struct wake_ev got[MAXEV];
    int ngot;
    int reenter; /* the wakes of this op call back into the semaphore */

    uint64_t opno;
    int trace; /* SEM_MODEL_TRACE set: print every op and the model's state */
    int failed;
    char err[1024];
    struct sem_model_counts counts;
};

/* ---------------------------------------------------------------------------------- */
/* failure reporting                                                                   */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(struct sem_model *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    m->failed = 1;
    int k = snprintf(m->err, sizeof(m->err), "op #%llu (%s %llu): ", (unsigned long long)m->opno,
                     m->r.is_budget ? "budget limit" : "sem limit", (unsigned long long)m->r.limit);
    if (k < 0 || (size_t)k >= sizeof(m->err))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + k, sizeof(m->err) - (size_t)k, fmt, ap);
    va_end(ap);
}

static void expect_int(struct sem_model *m, const char *what, int expected, int actual)
{
    if (expected != actual)
        fail(m, "%s: expected %d (%s), got %d (%s)", what, expected, band_err_name(expected),
             actual, band_err_name(actual));
}

static void expect_u64(struct sem_model *m, const char *what, uint64_t expected, uint64_t actual)
{
    if (expected != actual)
        fail(m, "%s: expected %llu, got %llu", what, (unsigned long long)expected,
             (unsigned long long)actual);
}

/* ---------------------------------------------------------------------------------- */
/* input                                                                               */

static uint8_t next_byte(struct sem_model *m)
{
    return model_input_byte(&m->in);
}

static uint64_t next_u64(struct sem_model *m)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | next_byte(m);
    return v;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* What the driver holds; saturates (it only picks release amounts, nothing compares it). */
static uint64_t held_add(uint64_t held, uint64_t n)
{
    return n > UINT64_MAX - held ? UINT64_MAX : held + n;
}

/* The units the head still needs (0 when nobody waits). */
static uint64_t head_need(const struct sem_model *m)
{
    if (m->r.qlen == 0)
        return 0;
    return m->slots[m->r.q[0]].want - m->r.head_got;
}

/*
 * An amount: mostly small, sometimes one of the interesting values near the state (what
 * is available, the limit, the head's need, what is held) or near BAND_MAX_UNITS
 * and UINT64_MAX.
 */
static uint64_t read_amount(struct sem_model *m)
{
    uint8_t c = next_byte(m);
    uint64_t hint;
    switch ((c >> 4) & 3) {
    case 0:
        hint = m->r.avail;
        break;
    case 1:
        hint = m->r.limit;
        break;
    case 2:
        hint = head_need(m);
        break;
    default:
        hint = m->r.held;
        break;
    }
    switch (c & 15) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
        return next_byte(m) % 9;
    case 7:
    case 8:
    case 9:
        return next_byte(m) % 65;
    case 10:
        return hint;
    case 11:
        return hint + 1;
    case 12:
        return hint > 0 ? hint - 1 : 0;
    case 13:
        return MAXP - next_byte(m) % 4;
    case 14:
        return MAXP + 1 + next_byte(m) % 4;
    default:
        return (c & 0x40) ? UINT64_MAX - next_byte(m) % 4 : next_u64(m);
    }
}

/* ---------------------------------------------------------------------------------- */
/* the model                                                                           */

static void ref_complete(struct sem_model *m, int s, int status)
{
    if (m->nexp < MAXEV)
        m->exp[m->nexp] = (struct wake_ev){s, status};
    m->nexp++;
    m->slots[s].state = SL_DONE;
    m->slots[s].status = status;
}

static void ref_dequeue(struct sem_model *m, int pos)
{
    struct ref *r = &m->r;
    r->q_units -= m->slots[r->q[pos]].want;
    memmove(&r->q[pos], &r->q[pos + 1], (size_t)(r->qlen - pos - 1) * sizeof(r->q[0]));
    r->qlen--;
}

/* Hand out @pool: the debt first, then the waiters in order. Returns the rest. */
static uint64_t ref_grant(struct sem_model *m, uint64_t pool)
{
    struct ref *r = &m->r;
    uint64_t pay = min_u64(pool, r->debt);
    r->debt -= pay;
    pool -= pay;
    while (pool > 0 && r->qlen > 0) {
        int s = r->q[0];
        uint64_t need = m->slots[s].want - r->head_got;
        if (pool < need) {
            r->head_got += pool;
            return 0;
        }
        pool -= need;
        r->head_got = 0;
        ref_dequeue(m, 0);
        r->grants++;
        r->held = held_add(r->held, m->slots[s].want);
        ref_complete(m, s, 0);
    }
    return pool;
}

static int ref_release(struct sem_model *m, uint64_t n)
{
    struct ref *r = &m->r;
    if (n == 0)
        return 0;
    if (r->qlen == 0 && r->debt == 0) {
        if (r->avail > r->limit || n > r->limit - r->avail)
            return BAND_EOVERFLOW;
        r->avail += n;
        return 0;
    }
    uint64_t rest = n - min_u64(n, r->debt);
    if (r->is_budget) {
        /* Callers hold capacity + debt - head_got (nothing is available): no more may
         * come back. */
        if (r->head_got > r->limit || rest > r->limit - r->head_got)
            return BAND_EOVERFLOW;
    } else {
        uint64_t need = r->q_units - r->head_got;
        uint64_t left = rest - min_u64(rest, need);
        if (left > r->limit)
            return BAND_EOVERFLOW;
    }
    r->avail += ref_grant(m, n);
    return 0;
}

static int ref_check_request(struct sem_model *m, uint64_t n)
{
    if (n > MAXP)
        return BAND_EINVAL;
    if (n > m->r.limit) {
        m->r.too_big++;
        return BAND_E2BIG;
    }
    return 0;
}

static int ref_try_take(struct sem_model *m, uint64_t n)
{
    struct ref *r = &m->r;
    if (r->closed)
        return BAND_ECLOSED;
    if (r->avail < n)
        return BAND_EAGAIN;
    r->avail -= n;
    r->held = held_add(r->held, n);
    return 0;
}

static int ref_reduce(struct sem_model *m, uint64_t n, int check_max)
{
    struct ref *r = &m->r;
    if (n == 0)
        return 0;
    if (check_max && n > MAXP)
        return BAND_EOVERFLOW;
    uint64_t take = min_u64(r->avail, n);
    uint64_t rest = n - take;
    if (rest > MAXP - r->debt)
        return BAND_EOVERFLOW;
    r->avail -= take;
    r->debt += rest;
    if (!r->is_budget)
        r->base -= min_u64(r->base, n);
    return 0;
}

static void ref_close(struct sem_model *m)
{
    struct ref *r = &m->r;
    if (r->closed)
        return;
    r->closed = 1;
    uint64_t pool = r->head_got;
    r->head_got = 0;
    while (r->qlen > 0) {
        int s = r->q[0];
        ref_dequeue(m, 0);
        r->closed_fails++;
        ref_complete(m, s, BAND_ECLOSED);
    }
    r->avail += ref_grant(m, pool);
}

/* ---------------------------------------------------------------------------------- */
/* comparing                                                                           */

/* The checks of the fields band_sem_stats and band_budget_stats share, on a snapshot
 * named st (either type). */
#define CMP(field, value)                                                                          \
    do {                                                                                           \
        snprintf(what, sizeof(what), "%s: stats." #field, where);                                  \
        expect_u64(m, what, (uint64_t)(value), (uint64_t)st.field);                                \
    } while (0)
#define CMP_COMMON()                                                                               \
    do {                                                                                           \
        CMP(closed, r->closed);                                                                    \
        CMP(available, r->avail);                                                                  \
        CMP(debt, r->debt);                                                                        \
        CMP(waiters, (uint64_t)r->qlen);                                                           \
        CMP(waiting_units, r->q_units);                                                            \
        CMP(head_granted, r->head_got);                                                            \
        CMP(queued, r->queued);                                                                    \
        CMP(grants, r->grants);                                                                    \
        CMP(timeouts, r->timeouts);                                                                \
        CMP(cancels, r->cancels);                                                                  \
        CMP(closed_fails, r->closed_fails);                                                        \
        CMP(try_refusals, r->try_refusals);                                                        \
        CMP(too_big, r->too_big);                                                                  \
        if (r->is_budget) {                                                                        \
            uint64_t total = r->limit + r->debt, free_units = r->avail + r->head_got;              \
            CMP(capacity, r->limit);                                                               \
            CMP(in_use, total > free_units ? total - free_units : 0);                              \
        } else {                                                                                   \
            uint64_t free_units = r->avail + r->head_got;                                          \
            CMP(capacity, r->base);                                                                \
            CMP(in_use, r->base + r->debt - free_units);                                           \
        }                                                                                          \
        if (st.wait_ns_max > st.wait_ns_total)                                                     \
            fail(m, "%s: wait_ns_max %llu > wait_ns_total %llu", where,                            \
                 (unsigned long long)st.wait_ns_max, (unsigned long long)st.wait_ns_total);        \
        if (strcmp(st.name, "model") != 0)                                                         \
            fail(m, "%s: name '%s'", where, st.name);                                              \
    } while (0)

static void compare_stats(struct sem_model *m, const char *where)
{
    const struct ref *r = &m->r;
    /* A semaphore grows by the releases a snapshot sees beyond its capacity. */
    if (!m->r.is_budget && m->r.avail + m->r.head_got > m->r.base + m->r.debt)
        m->r.base = m->r.avail + m->r.head_got - m->r.debt;
    char what[96];
    if (m->budget != NULL && (m->opno & 1)) {
        band_budget_stats st;
        int rc = band_budget_get_stats(m->budget, &st);
        if (rc != 0) {
            fail(m, "%s: band_budget_get_stats returned %d", where, rc);
            return;
        }
        CMP_COMMON();
    } else {
        band_sem_stats st;
        int rc = band_sem_get_stats(m->sem, &st);
        if (rc != 0) {
            fail(m, "%s: band_sem_get_stats returned %d", where, rc);
            return;
        }
        CMP(is_budget, r->is_budget);
        CMP_COMMON();
    }
}
#undef CMP_COMMON
#undef CMP

static void model_wake(band_waiter *w)
{
    struct slot *sl = (struct slot *)(void *)w;
    struct sem_model *m = sl->m;
    int st = band_waiter_status(w);
    if (m->ngot < MAXEV)
        m->got[m->ngot] = (struct wake_ev){sl->idx, st};
    m->ngot++;
    if (band_waiter_is_pending(w))
        fail(m, "slot %d pending inside its wake", sl->idx);
    if (m->reenter && !m->failed) {
        /* Call back into the same semaphore: no lock may be held, and every completion
         * of this operation was decided before the first wake ran. */
        m->counts.reentrant++;
        int rc = band__sem_check(m->sem);
        if (rc != 0)
            fail(m, "band__sem_check() inside a wake: line %d", -rc);
        expect_int(m, "try_acquire(0) inside a wake", m->r.closed ? BAND_ECLOSED : 0,
                   band_sem_try_acquire(m->sem, 0));
        compare_stats(m, "inside a wake");
    }
}

static void check_after_op(struct sem_model *m, const char *opname)
{
    if (m->failed)
        return;
    const struct ref *r = &m->r;
    /* wakes */
    if (m->nexp != m->ngot) {
        fail(m, "%s: expected %d wakes, got %d", opname, m->nexp, m->ngot);
        return;
    }
    for (int i = 0; i < m->nexp && i < MAXEV; i++) {
        if (m->exp[i].slot != m->got[i].slot || m->exp[i].status != m->got[i].status) {
            fail(m, "%s: wake %d: expected slot %d status %s, got slot %d status %s", opname, i,
                 m->exp[i].slot, band_err_name(m->exp[i].status), m->got[i].slot,
                 band_err_name(m->got[i].status));
            return;
        }
    }
    m->counts.wakes += (uint64_t)m->ngot;
    for (int i = 0; i < m->ngot && i < MAXEV; i++) {
        if (m->got[i].status == 0)
            m->counts.grants++;
        else if (m->got[i].status == BAND_ECLOSED)
            m->counts.closed++;
        else if (m->got[i].status == BAND_E2BIG)
            m->counts.e2big_wakes++;
    }
    /* waiters */
    for (int i = 0; i < NSLOTS; i++) {
        const struct slot *sl = &m->slots[i];
        int pending = band_waiter_is_pending(&sl->w);
        if (pending != (sl->state == SL_QUEUED)) {
            fail(m, "%s: slot %d pending=%d, model state %d", opname, i, pending, sl->state);
            return;
        }
        if (sl->state != SL_QUEUED && band_waiter_status(&sl->w) != sl->status) {
            fail(m, "%s: slot %d status %s, expected %s", opname, i,
                 band_err_name(band_waiter_status(&sl->w)), band_err_name(sl->status));
            return;
        }
        if (sl->state == SL_QUEUED && band_waiter_status(&sl->w) != BAND_PENDING) {
            fail(m, "%s: queued slot %d status %d", opname, i, band_waiter_status(&sl->w));
            return;
        }
    }
    /* the model's own invariants */
    if ((r->qlen > 0 || r->debt > 0) && r->avail != 0)
        fail(m, "%s: model: available %llu with waiters or debt", opname,
             (unsigned long long)r->avail);
    if (r->qlen > 0 && r->head_got >= m->slots[r->q[0]].want)
        fail(m, "%s: model: head holds all it asked for", opname);
    if (r->qlen == 0 && r->head_got != 0)
        fail(m, "%s: model: partial grant with no head", opname);
    if (r->avail > r->limit)
        fail(m, "%s: model: available above the limit", opname);
    /* the real semaphore */
    int rc = band__sem_check(m->sem);
    if (rc != 0)
        fail(m, "%s: band__sem_check() failed at sem.c line %d", opname, -rc);
    expect_u64(m, "band_sem_available()", r->avail, band_sem_available(m->sem));
    expect_int(m, "band_sem_is_closed()", r->closed, band_sem_is_closed(m->sem));
    if (m->budget != NULL) {
        expect_u64(m, "band_budget_capacity()", r->limit, band_budget_capacity(m->budget));
        expect_u64(m, "band_budget_available()", r->avail, band_budget_available(m->budget));
        expect_int(m, "band_budget_is_closed()", r->closed, band_budget_is_closed(m->budget));
    }
    compare_stats(m, opname);
    if (r->qlen > 0 && r->head_got > 0)
        m->counts.partial_heads++;
    if (r->debt > 0)
        m->counts.debt_ops++;
}

/* ---------------------------------------------------------------------------------- */
/* creating and destroying the primitive                                               */

static int destroy_primitive(struct sem_model *m)
{
    int rc = 0;
    if (m->budget != NULL)
        rc = band_budget_destroy(m->budget);
    else if (m->sem != NULL)
        rc = band_sem_destroy(m->sem);
    if (rc == 0) {
        m->budget = NULL;
        m->sem = NULL;
    }
    return rc;
}

static int create_primitive(struct sem_model *m)
{
    uint8_t kind = next_byte(m);
    uint8_t c = next_byte(m);
    uint64_t n;
    if (c < 200)
        n = c % 33;
    else if (c < 235)
        n = 64 + (uint64_t)next_byte(m);
    else
        n = MAXP - next_byte(m) % 4;
    memset(&m->r, 0, sizeof(m->r));
    int rc;
    if (kind & 1) {
        if (n == 0)
            n = 1;
        rc = band_budget_create(&m->budget, n, NULL);
        if (rc == 0)
            m->sem = band_budget_sem(m->budget);
        m->r.is_budget = 1;
        m->r.limit = n;
        m->counts.budgets++;
    } else {
        rc = band_sem_create(&m->sem, n, NULL);
        m->r.limit = MAXP;
        m->r.base = n;
        m->counts.sems++;
    }
    if (rc != 0) {
        fail(m, "create(%llu) returned %d", (unsigned long long)n, rc);
        return -1;
    }
    m->r.avail = n;
    if (band_sem_set_name(m->sem, "model") != 0) {
        fail(m, "set_name failed");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* operations                                                                          */

/* try_acquire and release of a semaphore alternate by operation number between the
 * header's inline fast path (the macro, with GCC or Clang) and the exported function (the
 * parenthesised name is no macro call), so that both meet every state and must give the
 * model's answer. */
static int sem_try_acquire_either(struct sem_model *m, uint64_t n)
{
    return (m->opno & 1) ? (band_sem_try_acquire)(m->sem, n) : band_sem_try_acquire(m->sem, n);
}

static int sem_release_either(struct sem_model *m, uint64_t n)
{
    return (m->opno & 1) ? (band_sem_release)(m->sem, n) : band_sem_release(m->sem, n);
}

static int pick_slot(struct sem_model *m)
{
    return next_byte(m) % NSLOTS;
}

static void op_try(struct sem_model *m)
{
    uint64_t n = read_amount(m);
    int via_budget = m->budget != NULL && (next_byte(m) & 1);
    int exp = ref_check_request(m, n);
    if (exp == 0) {
        exp = ref_try_take(m, n);
        if (exp == BAND_EAGAIN)
            m->r.try_refusals++;
    }
    int rc = via_budget ? band_budget_try_acquire(m->budget, n) : sem_try_acquire_either(m, n);
    expect_int(m, "try_acquire", exp, rc);
}

static void op_acquire_past(struct sem_model *m)
{
    uint64_t n = read_amount(m);
    int via_budget = m->budget != NULL && (next_byte(m) & 1);
    band_time deadline = (next_byte(m) & 1) ? 0 : band_now() - 1;
    int exp = ref_check_request(m, n);
    if (exp == 0) {
        exp = ref_try_take(m, n);
        if (exp == BAND_EAGAIN)
            exp = BAND_ETIMEDOUT;
    }
    int rc = via_budget ? band_budget_acquire(m->budget, n, deadline, NULL)
                        : band_sem_acquire(m->sem, n, deadline, NULL);
    expect_int(m, "acquire(past deadline)", exp, rc);
}

static void op_async(struct sem_model *m)
{
    struct ref *r = &m->r;
    int s = pick_slot(m);
    uint64_t n = read_amount(m);
    int via_budget = m->budget != NULL && (next_byte(m) & 1);
    struct slot *sl = &m->slots[s];
    int exp;
    if (sl->state == SL_QUEUED) {
        exp = BAND_EINVAL; /* already pending: nothing changes */
    } else {
        exp = ref_check_request(m, n);
        if (exp == BAND_E2BIG) {
            sl->state = SL_IDLE; /* refused, so ended: the status says why */
            sl->status = exp;
        } else if (exp == 0) {
            exp = ref_try_take(m, n);
            if (exp != BAND_EAGAIN) {
                sl->state = SL_IDLE;
                sl->status = exp;
            } else if (n > UINT64_MAX - r->q_units) {
                exp = BAND_EOVERFLOW;
                sl->state = SL_IDLE;
                sl->status = exp;
            } else {
                if (r->qlen == 0 && r->debt == 0) {
                    r->head_got = r->avail; /* becomes the head with what is available */
                    r->avail = 0;
                }
                r->q[r->qlen++] = s;
                r->q_units += n;
                r->queued++;
                sl->state = SL_QUEUED;
                sl->want = n;
                exp = BAND_PENDING;
            }
        }
    }
    int rc = via_budget ? band_budget_acquire_async(m->budget, n, &sl->w)
                        : band_sem_acquire_async(m->sem, n, &sl->w);
    expect_int(m, "acquire_async", exp, rc);
    if (rc == BAND_PENDING)
        m->counts.pending++;
    if (rc == BAND_EOVERFLOW)
        m->counts.overflows++;
}

static void do_release(struct sem_model *m, uint64_t n, int from_held)
{
    int via_budget = m->budget != NULL && (next_byte(m) & 1);
    int exp = ref_release(m, n);
    if (exp == 0 && from_held)
        m->r.held -= n; /* what the release completed was added to held already */
    int rc = via_budget ? band_budget_release(m->budget, n) : sem_release_either(m, n);
    expect_int(m, from_held ? "release(held)" : "release(any)", exp, rc);
    if (rc == BAND_EOVERFLOW)
        m->counts.overflows++;
}

static void op_release_held(struct sem_model *m)
{
    uint64_t held = m->r.held, n;
    switch (next_byte(m) & 3) {
    case 0:
        n = held;
        break;
    case 1:
        n = held > 0 ? 1 : 0;
        break;
    case 2:
        n = held / 2;
        break;
    default:
        n = held == UINT64_MAX ? held : read_amount(m) % (held + 1);
        break;
    }
    do_release(m, n, 1);
}

static void op_release_any(struct sem_model *m)
{
    do_release(m, read_amount(m), 0);
}

static int ref_shrink(struct sem_model *m, uint64_t n);

static void op_reduce(struct sem_model *m)
{
    uint64_t n = read_amount(m);
    /* On a budget's semaphore, reduce is band_budget_shrink(): the capacity drops too. */
    int exp = m->budget != NULL ? ref_shrink(m, n) : ref_reduce(m, n, 1);
    int rc = band_sem_reduce(m->sem, n);
    expect_int(m, "reduce", exp, rc);
    if (rc == BAND_EOVERFLOW)
        m->counts.overflows++;
}

static void op_drain(struct sem_model *m)
{
    uint64_t up_to = read_amount(m);
    uint64_t take = min_u64(m->r.avail, up_to);
    m->r.avail -= take;
    m->r.held = held_add(m->r.held, take);
    expect_u64(m, "drain", take, band_sem_drain(m->sem, up_to));
}

static void op_cancel(struct sem_model *m)
{
    struct ref *r = &m->r;
    uint8_t c = next_byte(m);
    int s = pick_slot(m);
    struct slot *sl = &m->slots[s];
    int reason;
    switch (c & 7) {
    case 0:
    case 1:
    case 2:
        reason = BAND_ECANCELED;
        break;
    case 3:
    case 4:
    case 5:
        reason = BAND_ETIMEDOUT;
        break;
    case 6:
        /* Negative codes that are not reasons: refused like the non-negative ones. */
        reason = (c & 8) ? BAND_ECLOSED : BAND_E2BIG;
        break;
    default:
        reason = (c & 8) ? 0 : BAND_PENDING; /* not a reason: refused */
        break;
    }
    if (c == 0xff) {
        expect_int(m, "cancel(NULL)", BAND_EINVAL, band_waiter_cancel(NULL, BAND_ECANCELED));
        return;
    }
    int exp;
    if (reason != BAND_ECANCELED && reason != BAND_ETIMEDOUT) {
        exp = BAND_EINVAL;
    } else if (sl->state == SL_IDLE) {
        exp = BAND_EINVAL;
    } else if (sl->state == SL_DONE) {
        exp = BAND_EALREADY;
    } else {
        int pos = 0;
        while (r->q[pos] != s)
            pos++;
        uint64_t pool = 0;
        if (pos == 0) {
            pool = r->head_got;
            r->head_got = 0;
        }
        ref_dequeue(m, pos);
        if (reason == BAND_ETIMEDOUT)
            r->timeouts++;
        else
            r->cancels++;
        r->avail += ref_grant(m, pool);
        sl->state = SL_IDLE;
        sl->status = reason;
        exp = 0;
    }
    int rc = band_waiter_cancel(&sl->w, reason);
    expect_int(m, "cancel", exp, rc);
    if (rc == 0)
        m->counts.cancels_ok++;
    else if (rc == BAND_EALREADY)
        m->counts.ealready++;
}

static void op_close(struct sem_model *m)
{
    int via_budget = m->budget != NULL && (next_byte(m) & 1);
    ref_close(m);
    int rc = via_budget ? band_budget_close(m->budget) : band_sem_close(m->sem);
    expect_int(m, "close", 0, rc);
}

static void op_destroy_busy(struct sem_model *m)
{
    if (m->r.qlen == 0)
        return; /* destroying would succeed; recreate covers that */
    int rc = m->budget != NULL ? band_budget_destroy(m->budget) : band_sem_destroy(m->sem);
    expect_int(m, "destroy while waiters are queued", BAND_EBUSY, rc);
}

static void op_grow(struct sem_model *m)
{
    struct ref *r = &m->r;
    uint64_t n = read_amount(m);
    int exp;
    if (n == 0) {
        exp = 0;
    } else if (n > MAXP - r->limit) {
        exp = BAND_EOVERFLOW;
    } else {
        r->limit += n;
        exp = ref_release(m, n);
        if (exp != 0)
            r->limit -= n;
    }
    expect_int(m, "grow", exp, band_budget_grow(m->budget, n));
}

/* A budget's shrink (band_budget_shrink(), and band_sem_reduce() on its semaphore). */
static int ref_shrink(struct sem_model *m, uint64_t n)
{
    struct ref *r = &m->r;
    if (n >= r->limit)
        return BAND_EINVAL;
    int exp = ref_reduce(m, n, 0);
    if (exp != 0 || n == 0)
        return exp;
    r->limit -= n;
    uint64_t pool = 0;
    int i = 0;
    while (i < r->qlen) {
        int s = r->q[i];
        if (m->slots[s].want > r->limit) {
            if (i == 0) {
                pool += r->head_got;
                r->head_got = 0;
            }
            ref_dequeue(m, i);
            r->too_big++;
            r->shrink_fails++;
            ref_complete(m, s, BAND_E2BIG);
        } else {
            i++;
        }
    }
    r->avail += ref_grant(m, pool);
    return 0;
}

static void op_shrink(struct sem_model *m)
{
    uint64_t n = read_amount(m);
    int exp = ref_shrink(m, n);
    expect_int(m, "shrink", exp, band_budget_shrink(m->budget, n));
}

/* Close (if needed), destroy and create a fresh primitive. */
static void op_recreate(struct sem_model *m)
{
    if (m->r.qlen > 0) {
        ref_close(m);
        expect_int(m, "close before recreate", 0, band_sem_close(m->sem));
        check_after_op(m, "close before recreate");
        m->nexp = m->ngot = 0;
    }
    expect_int(m, "destroy", 0, destroy_primitive(m));
    if (!m->failed)
        create_primitive(m);
}

static const char *const op_names[SM_OP_COUNT] = {
    "try_acquire", "acquire(past)", "acquire_async", "release(held)", "release(any)",
    "reduce",      "drain",         "cancel",        "stats",         "close",
    "recreate",    "destroy(busy)", "grow",          "shrink",
};

static enum sem_model_op decode_op(struct sem_model *m)
{
    uint8_t b = next_byte(m);
    if (m->r.closed && (b & 15) == 0)
        return SM_OP_RECREATE;
    if (b < 30)
        return SM_OP_TRY;
    if (b < 70)
        return SM_OP_ASYNC;
    if (b < 110)
        return SM_OP_RELEASE_HELD;
    if (b < 125)
        return SM_OP_RELEASE_ANY;
    if (b < 140)
        return SM_OP_REDUCE;
    if (b < 150)
        return SM_OP_DRAIN;
    if (b < 190)
        return SM_OP_CANCEL;
    if (b < 200)
        return SM_OP_STATS;
    if (b < 215)
        return SM_OP_ACQUIRE_PAST;
    if (b < 225)
        return m->budget != NULL ? SM_OP_GROW : SM_OP_ASYNC;
    if (b < 235)
        return m->budget != NULL ? SM_OP_SHRINK : SM_OP_CANCEL;
    if (b < 251)
        return SM_OP_RELEASE_HELD;
    if (b < 253)
        return SM_OP_DESTROY_BUSY;
    if (b == 253)
        return SM_OP_CLOSE;
    if (b == 254)
        return SM_OP_RECREATE;
    return SM_OP_TRY;
}

static void step(struct sem_model *m)
{
    enum sem_model_op op = decode_op(m);
    m->opno++;
    m->counts.ops[op]++;
    m->nexp = m->ngot = 0;
    m->reenter = (next_byte(m) & 7) == 0;
    switch (op) {
    case SM_OP_TRY:
        op_try(m);
        break;
    case SM_OP_ACQUIRE_PAST:
        op_acquire_past(m);
        break;
    case SM_OP_ASYNC:
        op_async(m);
        break;
    case SM_OP_RELEASE_HELD:
        op_release_held(m);
        break;
    case SM_OP_RELEASE_ANY:
        op_release_any(m);
        break;
    case SM_OP_REDUCE:
        op_reduce(m);
        break;
    case SM_OP_DRAIN:
        op_drain(m);
        break;
    case SM_OP_CANCEL:
        op_cancel(m);
        break;
    case SM_OP_STATS:
        break; /* check_after_op compares them */
    case SM_OP_CLOSE:
        op_close(m);
        break;
    case SM_OP_RECREATE:
        op_recreate(m);
        break;
    case SM_OP_DESTROY_BUSY:
        op_destroy_busy(m);
        break;
    case SM_OP_GROW:
        op_grow(m);
        break;
    case SM_OP_SHRINK:
        op_shrink(m);
        break;
    case SM_OP_COUNT:
        break;
    }
    check_after_op(m, op_names[op]);
    if (m->trace)
        fprintf(stderr,
                "#%llu %-14s reenter=%d wakes=%d | %s limit=%llu avail=%llu debt=%llu "
                "waiters=%d head_got=%llu closed=%d held=%llu%s\n",
                (unsigned long long)m->opno, op_names[op], m->reenter, m->ngot,
                m->r.is_budget ? "budget" : "sem", (unsigned long long)m->r.limit,
                (unsigned long long)m->r.avail, (unsigned long long)m->r.debt, m->r.qlen,
                (unsigned long long)m->r.head_got, m->r.closed, (unsigned long long)m->r.held,
                m->failed ? " MISMATCH" : "");
}

/* ---------------------------------------------------------------------------------- */
/* runs                                                                                */

struct sem_model *sem_model_new(void)
{
    struct sem_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    for (int i = 0; i < NSLOTS; i++) {
        band_waiter_init(&m->slots[i].w, model_wake, &m->slots[i]);
        m->slots[i].m = m;
        m->slots[i].idx = i;
        m->slots[i].state = SL_IDLE;
        m->slots[i].status = 0;
    }
    const char *t = getenv("SEM_MODEL_TRACE");
    m->trace = t != NULL && *t != '\0' && *t != '0';
    return m;
}

/* Close whatever is left (its wakes still go to the slots) and destroy it. */
static void teardown_primitive(struct sem_model *m)
{
    if (m->sem == NULL)
        return;
    m->reenter = 0;
    (void)band_sem_close(m->sem);
    (void)destroy_primitive(m);
    m->sem = NULL;
    m->budget = NULL;
}

void sem_model_free(struct sem_model *m)
{
    if (m == NULL)
        return;
    teardown_primitive(m);
    free(m);
}

static void reset_slots(struct sem_model *m)
{
    for (int i = 0; i < NSLOTS; i++) {
        band_waiter_init(&m->slots[i].w, model_wake, &m->slots[i]);
        m->slots[i].state = SL_IDLE;
        m->slots[i].status = 0;
        m->slots[i].want = 0;
    }
}

/* The end of a run: close, check that every queued acquisition ended, destroy. */
static void finish(struct sem_model *m)
{
    if (m->failed)
        return;
    m->opno++;
    m->nexp = m->ngot = 0;
    m->reenter = 0;
    ref_close(m);
    expect_int(m, "final close", 0, band_sem_close(m->sem));
    check_after_op(m, "final close");
    const struct ref *r = &m->r;
    if (r->queued != r->grants + r->timeouts + r->cancels + r->closed_fails + r->shrink_fails)
        fail(m, "final: queued %llu != ended %llu", (unsigned long long)r->queued,
             (unsigned long long)(r->grants + r->timeouts + r->cancels + r->closed_fails +
                                  r->shrink_fails));
    for (int i = 0; i < NSLOTS; i++)
        if (band_waiter_is_pending(&m->slots[i].w))
            fail(m, "final: slot %d still pending", i);
    expect_int(m, "final destroy", 0, destroy_primitive(m));
}

static int run(struct sem_model *m, uint64_t max_ops)
{
    m->failed = 0;
    m->err[0] = '\0';
    m->opno = 0;
    teardown_primitive(m);
    reset_slots(m);
    if (create_primitive(m) != 0)
        return -1;
    for (uint64_t i = 0; i < max_ops && !m->failed; i++) {
        if (model_input_done(&m->in))
            break;
        step(m);
    }
    finish(m);
    if (m->failed) {
        teardown_primitive(m);
        return -1;
    }
    return 0;
}

int sem_model_run_bytes(struct sem_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    return run(m, UINT64_MAX);
}

int sem_model_run_seed(struct sem_model *m, uint64_t seed, uint64_t ops)
{
    model_input_seed(&m->in, seed);
    return run(m, ops);
}

const char *sem_model_error(const struct sem_model *m)
{
    return m->err;
}

const struct sem_model_counts *sem_model_counts(const struct sem_model *m)
{
    return &m->counts;
}

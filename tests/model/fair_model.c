/* SPDX-License-Identifier: MIT */
/*
 * fair_model.c - the reference model of band_fair and the op interpreter that compares it
 * with the real thing (see fair_model.h).
 *
 * The model keeps no lists: queued requests sit in a plain array with their arrival
 * numbers, a key's flow in a class is "the queued requests of that key and class", and
 * every decision is a linear scan written out from the rules of fair.h and docs/fair.md:
 *
 *  Class 0 is the most urgent; class c leaves headroom[c] units free for the classes
 *  before it, so it fits while in_use + n <= capacity - headroom[c] (its "room").
 *  - Checks, in order: class out of range EINVAL; n == 0 succeeds at once on an open
 *    fair (ECLOSED when closed) and creates no key; closed ECLOSED; n above the class's
 *    room E2BIG; a new key with max_keys live keys ENOMEM; n above the key's cap
 *    E2BIG; then the decision; a request that must queue is EOVERFLOW when the units
 *    queued in its class would pass 2^64 - 1.
 *  - Granted at once when it overtakes nothing: its key has nothing queued in the class,
 *    held + n <= cap, n <= free, in_use + n <= room, and either it is within the
 *    key's reservation, or no class from 0 to its own is stalled and it leaves the unused
 *    reservations of the other protected keys free (a key is protected while it holds
 *    less than its reservation and one of its first requests fits in the rest of it).
 *  - After every change that can let a request in, the dispatch: first, keys with a
 *    reservation in the order they got it, each class from 0 on, grant first requests
 *    that fit in the key's unused reservation, the capacity and the class's room; then
 *    each class from 0 on, deficit round robin in rounds, until a class stalls (and with
 *    it every less urgent class) or has nothing it may grant.
 *  - The rounds. A flow has a round it was last credited for and the credit left in it;
 *    its first request is due in the first round by which that credit plus one quantum
 *    (weight * base quantum) per round covers it. The flow due first has the turn, ties
 *    going to the lower stamp (the flow that reached that round first). A turn at its
 *    key's cap is set aside, keeping everything, and stalls nobody. Otherwise the current
 *    round becomes the due one; the turn is granted if it fits (the capacity, the
 *    class's room, and the other protected keys' unused reservations unless within its own),
 *    paying from its credit, or the class stalls. A flow that becomes active starts in
 *    the current round (or its own later one) with no credit and a new stamp; one that
 *    empties keeps its round and loses its credit. When a flow's situation changes (its
 *    first request was granted or withdrawn, its key released units or was configured),
 *    a flow set aside and no longer at its cap comes back with its stamp, and a flow in
 *    the round robin gets a new stamp if its first request is now due later; either way
 *    it is never due more than two rounds before the current one: one whose first request
 *    would be paid for by then is due then, with just the credit for that request.
 *  - A key's state lives while it is configured, holds units or has requests queued;
 *    an operation that leaves it idle evicts it (counted) before it returns, before any
 *    wake runs.
 *  - Close fails every queued request with ECLOSED; a lowered cap fails the key's queued
 *    requests above it with E2BIG, class by class from the least urgent, in arrival order.
 *
 * Rounds are 128-bit where the compiler has them (the real fair rebases its 64-bit rounds
 * once they pass 2^62, which must not change anything; the giant configurations that get
 * there are generated only then).
 *
 * The handles' calls go to the exported functions (BAND_NO_INLINE), whose test-only
 * counters show which path each took; test_fair_inline proves the header's inline paths
 * give the same answers and counters.
 */
#define BAND_NO_INLINE 1
#include "fair_model.h"

#include "model_input.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/band.h"
#include "prim/fair/fair_internal.h"

#define NSLOTS 24
#define TMP    NSLOTS /* the entry of a blocking acquire's own request */
#define NPOOL  6
#define MAXK   48
#define MAXC   4
#define MAXEV  96
#define LAG    2 /* rounds a flow put back may be behind the current one */

#ifdef __SIZEOF_INT128__
__extension__ typedef unsigned __int128 mround;
#define WIDE_ROUNDS 1
#else
typedef uint64_t mround;
#define WIDE_ROUNDS 0
#endif

static const uint64_t g_pool[NPOOL] = {0, 1, 2, 3, UINT64_C(0xdeadbeef), UINT64_MAX};

enum slot_state { SL_IDLE, SL_QUEUED, SL_DONE };

struct fair_model;

struct slot {
    band_fair_acquire_op r; /* first member: the waiter is its first member */
    struct fair_model *m;
    int idx;
    enum slot_state state; /* the model's view */
    int status;            /* expected band_waiter_status() when not queued */
    int wakes;             /* wakes seen since it was last submitted */
};

/* A queued request in the model. */
struct ment {
    int queued;
    uint64_t key;
    uint32_t cls;
    uint64_t n;
    uint64_t arrival;
};

struct mflow {
    mround round;     /* the round it was last credited for */
    uint64_t deficit; /* credit left in that round */
    mround due;       /* the round its first request is due in (when active) */
    uint64_t stamp;
    int aside; /* set aside at its key's cap */
};

struct mkey {
    int live;
    uint64_t id;
    int pinned;
    uint32_t weight;
    uint64_t cap, reserve;
    uint64_t held;
    uint64_t rseq; /* when its reservation became non-zero */
    int refs;      /* handles on it: not evicted while there are any */
    uint64_t granted, granted_units, queued, timeouts, cancels;
    struct mflow fl[MAXC];
};

struct mclass {
    uint64_t headroom;
    mround vround;
    uint64_t stamps;
    int stalled;
    uint64_t granted, granted_units, queued, timeouts, cancels;
};

struct ref {
    uint64_t capacity, quantum, dcap, max_keys;
    uint32_t classes, dweight;
    int closed;
    uint64_t in_use, reserved_total;
    uint64_t nkeys, npinned, keys_created, keys_evicted, key_refusals;
    uint64_t try_refusals, too_big, closed_fails;
    uint64_t arrivals, rseqs;
    uint64_t ended; /* queued requests that ended (granted, cancelled, failed) */
    uint64_t queued_total;
    struct mclass cls[MAXC];
    struct mkey keys[MAXK];
    struct ment ent[NSLOTS + 1];
};

struct wake_ev {
    int slot;
    int status;
};

struct fair_model {
    band_fair *f;
    struct ref r;
    struct slot slots[NSLOTS];
    struct model_input in;
    struct wake_ev exp[MAXEV];
    int nexp;
    struct wake_ev got[MAXEV];
    int ngot;
    int reenter;
    int floods; /* fresh key ids allowed (small max_keys) */
    uint64_t next_flood;
    uint64_t last_vround[MAXC]; /* the real fair's, to see it rebase (coverage only) */
    uint64_t opno;
    uint64_t grants_this_op;
    int trace;
    int failed;
    char err[1024];
    band_fair_handle *h[NPOOL]; /* a handle on g_pool[i], or NULL */
    struct fair_model_counts counts;
};

/* ---------------------------------------------------------------------------------- */
/* failure reporting                                                                   */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(struct fair_model *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    m->failed = 1;
    int k = snprintf(m->err, sizeof(m->err), "op #%llu (capacity %llu, %u classes, quantum %llu): ",
                     (unsigned long long)m->opno, (unsigned long long)m->r.capacity, m->r.classes,
                     (unsigned long long)m->r.quantum);
    if (k < 0 || (size_t)k >= sizeof(m->err))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + k, sizeof(m->err) - (size_t)k, fmt, ap);
    va_end(ap);
}

static void expect_int(struct fair_model *m, const char *what, int expected, int actual)
{
    if (expected != actual)
        fail(m, "%s: expected %d (%s), got %d (%s)", what, expected, band_err_name(expected),
             actual, band_err_name(actual));
}

static void expect_u64(struct fair_model *m, const char *what, uint64_t expected, uint64_t actual)
{
    if (expected != actual)
        fail(m, "%s: expected %llu, got %llu", what, (unsigned long long)expected,
             (unsigned long long)actual);
}

/* ---------------------------------------------------------------------------------- */
/* input                                                                               */

static uint8_t next_byte(struct fair_model *m)
{
    return model_input_byte(&m->in);
}

/* ---------------------------------------------------------------------------------- */
/* the model: keys                                                                     */

static struct mkey *key_find(struct fair_model *m, uint64_t id)
{
    for (int i = 0; i < MAXK; i++)
        if (m->r.keys[i].live && m->r.keys[i].id == id)
            return &m->r.keys[i];
    return NULL;
}

/* The key's state, created with the defaults if it has none; NULL and *rc = ENOMEM. */
static struct mkey *key_get(struct fair_model *m, uint64_t id, int *rc)
{
    struct ref *r = &m->r;
    struct mkey *k = key_find(m, id);
    if (k != NULL)
        return k;
    if (r->nkeys >= r->max_keys) {
        r->key_refusals++;
        *rc = BAND_ENOMEM;
        return NULL;
    }
    for (int i = 0; i < MAXK; i++) {
        if (!r->keys[i].live) {
            k = &r->keys[i];
            memset(k, 0, sizeof(*k));
            k->live = 1;
            k->id = id;
            k->weight = r->dweight;
            k->cap = r->dcap;
            r->nkeys++;
            r->keys_created++;
            return k;
        }
    }
    fail(m, "the model's key table is full");
    *rc = BAND_ENOMEM;
    return NULL;
}

static uint64_t key_nreq(const struct fair_model *m, const struct mkey *k)
{
    uint64_t n = 0;
    for (int e = 0; e <= NSLOTS; e++)
        n += m->r.ent[e].queued && m->r.ent[e].key == k->id;
    return n;
}

static uint64_t key_units(const struct fair_model *m, const struct mkey *k)
{
    uint64_t n = 0;
    for (int e = 0; e <= NSLOTS; e++)
        if (m->r.ent[e].queued && m->r.ent[e].key == k->id)
            n += m->r.ent[e].n;
    return n;
}

/* Evict every idle key that is not configured (at the end of every operation). */
static void evict_idle(struct fair_model *m)
{
    for (int i = 0; i < MAXK; i++) {
        struct mkey *k = &m->r.keys[i];
        if (k->live && !k->pinned && k->refs == 0 && k->held == 0 && key_nreq(m, k) == 0) {
            k->live = 0;
            m->r.nkeys--;
            m->r.keys_evicted++;
        }
    }
}

/* The first queued request of @k in class @c (entry index), or -1. */
static int head(const struct fair_model *m, const struct mkey *k, uint32_t c)
{
    int best = -1;
    for (int e = 0; e <= NSLOTS; e++) {
        const struct ment *q = &m->r.ent[e];
        if (q->queued && q->key == k->id && q->cls == c &&
            (best < 0 || q->arrival < m->r.ent[best].arrival))
            best = e;
    }
    return best;
}

static uint64_t class_units(const struct fair_model *m, uint32_t c)
{
    uint64_t n = 0;
    for (int e = 0; e <= NSLOTS; e++)
        if (m->r.ent[e].queued && m->r.ent[e].cls == c)
            n += m->r.ent[e].n;
    return n;
}

static uint64_t class_nreq(const struct fair_model *m, uint32_t c)
{
    uint64_t n = 0;
    for (int e = 0; e <= NSLOTS; e++)
        n += m->r.ent[e].queued && m->r.ent[e].cls == c;
    return n;
}

static uint64_t total_queued(const struct fair_model *m)
{
    uint64_t n = 0;
    for (int e = 0; e <= NSLOTS; e++)
        n += m->r.ent[e].queued != 0;
    return n;
}

static int at_cap(const struct mkey *k, uint64_t n)
{
    return n > k->cap || k->held > k->cap - n;
}

/* Holds less than its reservation and waits for a first request that fits in the rest. */
static int is_protected(const struct fair_model *m, const struct mkey *j)
{
    if (j->held >= j->reserve)
        return 0;
    for (uint32_t c = 0; c < m->r.classes; c++) {
        int e = head(m, j, c);
        if (e >= 0 && m->r.ent[e].n <= j->reserve - j->held)
            return 1;
    }
    return 0;
}

static uint64_t protected_except(const struct fair_model *m, const struct mkey *k)
{
    uint64_t sum = 0;
    for (int i = 0; i < MAXK; i++) {
        const struct mkey *j = &m->r.keys[i];
        if (j->live && j != k && j->reserve > 0 && is_protected(m, j))
            sum += j->reserve - j->held;
    }
    return sum;
}

/* in_use + n within class @c's room: the capacity less the class's headroom. */
static int room_for(const struct ref *r, uint32_t c, uint64_t n)
{
    return r->in_use + n <= r->capacity - r->cls[c].headroom;
}

/* Capacity, headroom and reservations (the cap is checked apart). */
static int fits(const struct fair_model *m, const struct mkey *k, uint32_t c, uint64_t n)
{
    const struct ref *r = &m->r;
    uint64_t free_units = r->capacity - r->in_use;
    if (n > free_units || !room_for(r, c, n))
        return 0;
    if (k->held + n <= k->reserve)
        return 1;
    return free_units - n >= protected_except(m, k);
}

static int grant_now_ok(const struct fair_model *m, const struct mkey *k, uint32_t c, uint64_t n)
{
    const struct ref *r = &m->r;
    if (head(m, k, c) >= 0 || at_cap(k, n))
        return 0;
    uint64_t free_units = r->capacity - r->in_use;
    if (n > free_units || !room_for(r, c, n))
        return 0;
    if (k->held + n <= k->reserve)
        return 1;
    for (uint32_t c2 = 0; c2 <= c; c2++)
        if (r->cls[c2].stalled)
            return 0;
    return free_units - n >= protected_except(m, k);
}

/* ---------------------------------------------------------------------------------- */
/* the model: rounds                                                                   */

static uint64_t key_quantum(const struct fair_model *m, const struct mkey *k)
{
    return (uint64_t)k->weight * m->r.quantum;
}

static mround due_of(const struct fair_model *m, const struct mkey *k, uint32_t c)
{
    const struct mflow *fl = &k->fl[c];
    uint64_t n = m->r.ent[head(m, k, c)].n;
    if (n <= fl->deficit)
        return fl->round;
    uint64_t q = key_quantum(m, k), need = n - fl->deficit;
    return fl->round + need / q + (need % q != 0);
}

/* The flow's due round; one whose first request would be paid for LAG rounds before the
 * current one (or earlier) is due then, with just the credit for that request. */
static void set_due(struct fair_model *m, struct mkey *k, uint32_t c)
{
    struct mflow *fl = &k->fl[c];
    mround v = m->r.cls[c].vround;
    fl->due = due_of(m, k, c);
    if (fl->due + LAG <= v) {
        fl->round = fl->due = v - LAG;
        fl->deficit = m->r.ent[head(m, k, c)].n;
        m->counts.caught_up++;
    }
}

/* The flow's first request was granted or withdrawn, or its key changed. */
static void flow_changed(struct fair_model *m, struct mkey *k, uint32_t c)
{
    struct mflow *fl = &k->fl[c];
    int e = head(m, k, c);
    if (e < 0)
        return;
    if (fl->aside) {
        if (!at_cap(k, m->r.ent[e].n)) {
            fl->aside = 0;
            set_due(m, k, c);
            m->counts.unparked++;
        }
        return;
    }
    mround old = fl->due;
    set_due(m, k, c);
    if (fl->due > old)
        fl->stamp = ++m->r.cls[c].stamps;
}

static void key_changed(struct fair_model *m, struct mkey *k)
{
    for (uint32_t c = 0; c < m->r.classes; c++)
        flow_changed(m, k, c);
}

/* Queue entry @e; the flow becomes active if it was empty. */
static void enqueue(struct fair_model *m, int e, struct mkey *k, uint32_t c, uint64_t n)
{
    struct ref *r = &m->r;
    int was_empty = head(m, k, c) < 0;
    r->ent[e] = (struct ment){1, k->id, c, n, ++r->arrivals};
    if (was_empty) {
        struct mflow *fl = &k->fl[c];
        if (fl->round < r->cls[c].vround)
            fl->round = r->cls[c].vround;
        fl->deficit = 0;
        fl->aside = 0;
        fl->stamp = ++r->cls[c].stamps;
        fl->due = due_of(m, k, c);
    }
    k->queued++;
    r->cls[c].queued++;
    r->queued_total++;
}

/* Remove entry @e; an emptied flow loses its credit. */
static void dequeue(struct fair_model *m, int e)
{
    struct ref *r = &m->r;
    struct ment *q = &r->ent[e];
    q->queued = 0;
    r->ended++;
    struct mkey *k = key_find(m, q->key);
    if (head(m, k, q->cls) < 0) {
        k->fl[q->cls].deficit = 0;
        k->fl[q->cls].aside = 0;
    }
}

static void expect_wake(struct fair_model *m, int e, int status)
{
    if (e == TMP)
        return; /* the blocking call's own request: its wake is not ours to see */
    if (m->nexp < MAXEV)
        m->exp[m->nexp] = (struct wake_ev){e, status};
    m->nexp++;
    m->slots[e].state = SL_DONE;
    m->slots[e].status = status;
}

static void grant(struct fair_model *m, int e)
{
    struct ref *r = &m->r;
    struct ment q = r->ent[e];
    struct mkey *k = key_find(m, q.key);
    dequeue(m, e);
    k->held += q.n;
    r->in_use += q.n;
    k->granted++;
    k->granted_units += q.n;
    r->cls[q.cls].granted++;
    r->cls[q.cls].granted_units += q.n;
    m->grants_this_op++;
    expect_wake(m, e, 0);
}

/* The live keys with a reservation, in the order they got it. */
static int reserved_order(const struct fair_model *m, struct mkey **out)
{
    int n = 0;
    for (int i = 0; i < MAXK; i++)
        if (m->r.keys[i].live && m->r.keys[i].reserve > 0)
            out[n++] = (struct mkey *)&m->r.keys[i];
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && out[b - 1]->rseq > out[b]->rseq; b--) {
            struct mkey *t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return n;
}

static void dispatch(struct fair_model *m)
{
    struct ref *r = &m->r;
    for (uint32_t c = 0; c < r->classes; c++)
        r->cls[c].stalled = 0;
    if (r->closed || total_queued(m) == 0)
        return;
    /* requests within their key's reservation first */
    struct mkey *res[MAXK];
    int nres = reserved_order(m, res);
    for (int i = 0; i < nres; i++) {
        struct mkey *j = res[i];
        for (uint32_t c = 0; c < r->classes; c++) {
            int granted = 0, e;
            while ((e = head(m, j, c)) >= 0) {
                uint64_t n = r->ent[e].n;
                if (j->held >= j->reserve || n > j->reserve - j->held)
                    break;
                if (n > r->capacity - r->in_use || !room_for(r, c, n))
                    break;
                grant(m, e);
                granted = 1;
                m->counts.reserved_grants++;
            }
            if (granted)
                flow_changed(m, j, c);
        }
    }
    /* then the round robin, class by class from the most urgent */
    for (uint32_t c = 0; c < r->classes; c++) {
        struct mclass *cl = &r->cls[c];
        for (;;) {
            struct mkey *t = NULL;
            for (int i = 0; i < MAXK; i++) {
                struct mkey *k = &r->keys[i];
                if (!k->live || k->fl[c].aside || head(m, k, c) < 0)
                    continue;
                if (t == NULL || k->fl[c].due < t->fl[c].due ||
                    (k->fl[c].due == t->fl[c].due && k->fl[c].stamp < t->fl[c].stamp))
                    t = k;
            }
            if (t == NULL)
                break;
            struct mflow *fl = &t->fl[c];
            int e = head(m, t, c);
            uint64_t n = r->ent[e].n;
            if (at_cap(t, n)) {
                fl->aside = 1;
                continue;
            }
            if (fl->due > cl->vround)
                cl->vround = fl->due;
            if (!fits(m, t, c, n)) {
                cl->stalled = 1;
                return;
            }
            uint64_t rounds = (uint64_t)(fl->due - fl->round);
            if (rounds > 1)
                m->counts.later_rounds++;
            fl->deficit += rounds * key_quantum(m, t);
            fl->round = fl->due;
            fl->deficit -= n;
            grant(m, e);
            flow_changed(m, t, c);
        }
    }
}

/* Fail queued requests of @k above its cap with E2BIG: class by class from the least
 * urgent, in arrival order. */
static void fail_too_big(struct fair_model *m, struct mkey *k)
{
    for (uint32_t c = m->r.classes; c-- > 0;) {
        for (;;) {
            int best = -1;
            for (int e = 0; e <= NSLOTS; e++) {
                const struct ment *q = &m->r.ent[e];
                if (q->queued && q->key == k->id && q->cls == c && q->n > k->cap &&
                    (best < 0 || q->arrival < m->r.ent[best].arrival))
                    best = e;
            }
            if (best < 0)
                break;
            dequeue(m, best);
            m->r.too_big++;
            expect_wake(m, best, BAND_E2BIG);
        }
    }
}

/*
 * A submission of @n units of @key in class @cls (checked: class in range, n > 0), queued
 * as entry @e when it must wait (-1: a try). Returns the code the call returns.
 */
static int submit(struct fair_model *m, uint64_t key, uint32_t cls, uint64_t n, int e)
{
    struct ref *r = &m->r;
    if (r->closed)
        return BAND_ECLOSED;
    if (n > r->capacity - r->cls[cls].headroom) {
        r->too_big++;
        return BAND_E2BIG;
    }
    int rc = 0;
    struct mkey *k = key_get(m, key, &rc);
    if (k == NULL)
        return rc;
    if (n > k->cap) {
        r->too_big++;
        return BAND_E2BIG;
    }
    if (grant_now_ok(m, k, cls, n)) {
        k->held += n;
        r->in_use += n;
        k->granted++;
        k->granted_units += n;
        r->cls[cls].granted++;
        r->cls[cls].granted_units += n;
        if (total_queued(m) > 0)
            dispatch(m);
        return 0;
    }
    if (e < 0) {
        r->try_refusals++;
        return BAND_EAGAIN;
    }
    if (class_units(m, cls) > UINT64_MAX - n)
        return BAND_EOVERFLOW;
    enqueue(m, e, k, cls, n);
    dispatch(m);
    if (!r->ent[e].queued) {
        /* granted by its own dispatch: the call reports it, no wake follows */
        if (e != TMP) {
            for (int i = 0; i < m->nexp && i < MAXEV; i++) {
                if (m->exp[i].slot == e) {
                    memmove(&m->exp[i], &m->exp[i + 1],
                            (size_t)((m->nexp < MAXEV ? m->nexp : MAXEV) - i - 1) *
                                sizeof(m->exp[0]));
                    m->nexp--;
                    break;
                }
            }
            m->slots[e].state = SL_IDLE;
        }
        return 0;
    }
    return BAND_PENDING;
}

/* Withdraw queued entry @e for @reason. */
static void withdraw(struct fair_model *m, int e, int reason)
{
    struct ref *r = &m->r;
    struct ment q = r->ent[e];
    struct mkey *k = key_find(m, q.key);
    dequeue(m, e);
    if (reason == BAND_ETIMEDOUT) {
        k->timeouts++;
        r->cls[q.cls].timeouts++;
    } else {
        k->cancels++;
        r->cls[q.cls].cancels++;
    }
    key_changed(m, k);
    dispatch(m);
}

static void model_close(struct fair_model *m)
{
    struct ref *r = &m->r;
    r->closed = 1;
    for (int e = 0; e <= NSLOTS; e++) {
        if (r->ent[e].queued) {
            dequeue(m, e);
            r->closed_fails++;
            expect_wake(m, e, BAND_ECLOSED);
        }
    }
    for (uint32_t c = 0; c < r->classes; c++)
        r->cls[c].stalled = 0;
}

/* ---------------------------------------------------------------------------------- */
/* comparing                                                                           */

static void compare_stats(struct fair_model *m, const char *where)
{
    const struct ref *r = &m->r;
    band_fair_stats st;
    int rc = band_fair_get_stats(m->f, &st);
    if (rc != 0) {
        fail(m, "%s: get_stats returned %d", where, rc);
        return;
    }
    char what[128];
#define CMP(field, value)                                                                          \
    do {                                                                                           \
        snprintf(what, sizeof(what), "%s: stats." #field, where);                                  \
        expect_u64(m, what, (uint64_t)(value), (uint64_t)st.field);                                \
    } while (0)
    CMP(capacity, r->capacity);
    CMP(in_use, r->in_use);
    CMP(reserved, r->reserved_total);
    CMP(closed, r->closed);
    CMP(classes, r->classes);
    CMP(keys, r->nkeys);
    CMP(keys_pinned, r->npinned);
    CMP(max_keys, r->max_keys);
    CMP(keys_created, r->keys_created);
    CMP(keys_evicted, r->keys_evicted);
    CMP(key_refusals, r->key_refusals);
    CMP(waiters, total_queued(m));
    CMP(try_refusals, r->try_refusals);
    CMP(too_big, r->too_big);
    CMP(closed_fails, r->closed_fails);
    for (uint32_t c = 0; c < r->classes; c++) {
        const struct mclass *cl = &r->cls[c];
        const band_fair_class_stats *o = &st.cls[c];
        snprintf(what, sizeof(what), "%s: class %u", where, c);
        expect_u64(m, what, cl->headroom, o->headroom);
        expect_u64(m, what, (uint64_t)cl->stalled, (uint64_t)o->stalled);
        expect_u64(m, what, class_nreq(m, c), o->waiters);
        expect_u64(m, what, class_units(m, c), o->waiting_units);
        expect_u64(m, what, cl->granted, o->granted);
        expect_u64(m, what, cl->granted_units, o->granted_units);
        expect_u64(m, what, cl->queued, o->queued);
        expect_u64(m, what, cl->timeouts, o->timeouts);
        expect_u64(m, what, cl->cancels, o->cancels);
        if (o->wait_ns_max > o->wait_ns_total)
            fail(m, "%s: class %u wait_ns_max above wait_ns_total", where, c);
    }
#undef CMP
}

static void compare_key(struct fair_model *m, uint64_t id, const char *where)
{
    band_fair_key_stats ks;
    memset(&ks, 0xa5, sizeof(ks));
    if (band_fair_key_get_stats(m->f, id, &ks) != 0) {
        fail(m, "%s: key_get_stats failed", where);
        return;
    }
    const struct mkey *k = key_find(m, id);
    char what[128];
    snprintf(what, sizeof(what), "%s: key %llu", where, (unsigned long long)id);
    expect_u64(m, what, id, ks.key);
    expect_u64(m, what, k != NULL, (uint64_t)ks.live);
    if (k == NULL) {
        uint64_t nonzero = (uint64_t)ks.pinned | ks.weight | ks.cap | ks.reserve | ks.held |
                           ks.waiters | ks.waiting_units | ks.granted | ks.queued;
        expect_u64(m, what, 0, nonzero);
        return;
    }
    expect_u64(m, what, (uint64_t)k->pinned, (uint64_t)ks.pinned);
    expect_u64(m, what, k->weight, ks.weight);
    expect_u64(m, what, k->cap, ks.cap);
    expect_u64(m, what, k->reserve, ks.reserve);
    expect_u64(m, what, k->held, ks.held);
    expect_u64(m, what, key_nreq(m, k), ks.waiters);
    expect_u64(m, what, key_units(m, k), ks.waiting_units);
    expect_u64(m, what, k->granted, ks.granted);
    expect_u64(m, what, k->granted_units, ks.granted_units);
    expect_u64(m, what, k->queued, ks.queued);
    expect_u64(m, what, k->timeouts, ks.timeouts);
    expect_u64(m, what, k->cancels, ks.cancels);
}

static int cmp_ev(const void *a, const void *b)
{
    const struct wake_ev *x = a, *y = b;
    return x->slot != y->slot ? (x->slot > y->slot) - (x->slot < y->slot)
                              : (x->status > y->status) - (x->status < y->status);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void model_wake(band_waiter *w)
{
    struct slot *sl = (struct slot *)(void *)w;
    struct fair_model *m = sl->m;
    int st = band_waiter_status(w);
    if (m->ngot < MAXEV)
        m->got[m->ngot] = (struct wake_ev){sl->idx, st};
    m->ngot++;
    sl->wakes++;
    if (band_waiter_is_pending(w))
        fail(m, "slot %d pending inside its wake", sl->idx);
    if (m->reenter && !m->failed) {
        /* Call back into the fair: no lock may be held, and every completion of this
         * operation was decided before the first wake ran. */
        m->counts.reentrant++;
        int rc = band__fair_check(m->f);
        if (rc != 0)
            fail(m, "band__fair_check() inside a wake: line %d", -rc);
        expect_int(m, "try_acquire(0) inside a wake", m->r.closed ? BAND_ECLOSED : 0,
                   band_fair_try_acquire(m->f, g_pool[0], 0, 0));
        compare_stats(m, "inside a wake");
    }
}

/* The rules the dispatch must leave behind, checked on the model itself. */
static void check_model(struct fair_model *m, const char *opname)
{
    const struct ref *r = &m->r;
    uint64_t held = 0;
    for (int i = 0; i < MAXK; i++)
        held += r->keys[i].live ? r->keys[i].held : 0;
    if (held != r->in_use || r->in_use > r->capacity)
        fail(m, "%s: model: in_use %llu, held %llu", opname, (unsigned long long)r->in_use,
             (unsigned long long)held);
    if (r->queued_total != r->ended + total_queued(m))
        fail(m, "%s: model: %llu queued, %llu ended, %llu waiting", opname,
             (unsigned long long)r->queued_total, (unsigned long long)r->ended,
             (unsigned long long)total_queued(m));
    for (int i = 0; i < MAXK; i++) {
        const struct mkey *k = &r->keys[i];
        for (uint32_t c = 0; k->live && c < r->classes; c++)
            if (head(m, k, c) >= 0 && !k->fl[c].aside && k->fl[c].due != due_of(m, k, c))
                fail(m, "%s: model: key %llu class %u due round out of date", opname,
                     (unsigned long long)k->id, c);
    }
    if (r->closed)
        return;
    /* nothing within a reservation that fits is left waiting */
    for (int i = 0; i < MAXK; i++) {
        const struct mkey *j = &r->keys[i];
        if (!j->live || j->held >= j->reserve)
            continue;
        for (uint32_t c = 0; c < r->classes; c++) {
            int e = head(m, j, c);
            if (e >= 0 && r->ent[e].n <= j->reserve - j->held &&
                r->ent[e].n <= r->capacity - r->in_use && room_for(r, c, r->ent[e].n))
                fail(m, "%s: model: key %llu waits within its reservation", opname,
                     (unsigned long long)j->id);
        }
    }
    /* before the first stalled class, every waiting flow is at its key's cap */
    for (uint32_t c = 0; c < r->classes; c++) {
        if (r->cls[c].stalled)
            break;
        for (int i = 0; i < MAXK; i++) {
            const struct mkey *k = &r->keys[i];
            int e = k->live ? head(m, k, c) : -1;
            if (e >= 0 && !at_cap(k, r->ent[e].n))
                fail(m, "%s: model: class %u idle with key %llu below its cap", opname, c,
                     (unsigned long long)k->id);
        }
    }
}

static void check_after_op(struct fair_model *m, const char *opname, int sorted)
{
    if (m->failed)
        return;
    const struct ref *r = &m->r;
    if (m->nexp != m->ngot) {
        fail(m, "%s: expected %d wakes, got %d", opname, m->nexp, m->ngot);
        return;
    }
    int n = m->nexp < MAXEV ? m->nexp : MAXEV;
    if (sorted) {
        qsort(m->exp, (size_t)n, sizeof(m->exp[0]), cmp_ev);
        qsort(m->got, (size_t)n, sizeof(m->got[0]), cmp_ev);
    }
    for (int i = 0; i < n; i++) {
        if (m->exp[i].slot != m->got[i].slot || m->exp[i].status != m->got[i].status) {
            fail(m, "%s: wake %d: expected slot %d status %s, got slot %d status %s", opname, i,
                 m->exp[i].slot, band_err_name(m->exp[i].status), m->got[i].slot,
                 band_err_name(m->got[i].status));
            return;
        }
    }
    m->counts.wakes += (uint64_t)m->ngot;
    for (int i = 0; i < n; i++) {
        if (m->got[i].status == 0)
            m->counts.grants++;
        else if (m->got[i].status == BAND_ECLOSED)
            m->counts.closed++;
        else if (m->got[i].status == BAND_E2BIG)
            m->counts.e2big_wakes++;
    }
    if (m->grants_this_op > 1)
        m->counts.multi_grants++;
    for (int i = 0; i < NSLOTS; i++) {
        const struct slot *sl = &m->slots[i];
        int pending = band_waiter_is_pending(&sl->r.w);
        if (pending != (sl->state == SL_QUEUED)) {
            fail(m, "%s: slot %d pending=%d, model state %d", opname, i, pending, sl->state);
            return;
        }
        if (sl->wakes > 1) {
            fail(m, "%s: slot %d woken %d times", opname, i, sl->wakes);
            return;
        }
        int st = band_waiter_status(&sl->r.w);
        if (st != (sl->state == SL_QUEUED ? BAND_PENDING : sl->status)) {
            fail(m, "%s: slot %d status %s, expected %s", opname, i, band_err_name(st),
                 band_err_name(sl->state == SL_QUEUED ? BAND_PENDING : sl->status));
            return;
        }
    }
    check_model(m, opname);
    int rc = band__fair_check(m->f);
    if (rc != 0)
        fail(m, "%s: band__fair_check() failed at line %d", opname, -rc);
    compare_stats(m, opname);
    for (int i = 0; i < NPOOL; i++)
        compare_key(m, g_pool[i], opname);
    uint64_t ids[MAXK], got_ids[MAXK];
    size_t nids = 0;
    for (int i = 0; i < MAXK; i++) {
        if (r->keys[i].live) {
            ids[nids++] = r->keys[i].id;
            compare_key(m, r->keys[i].id, opname);
        }
    }
    band_fair_key_stats list[MAXK];
    size_t count = 0;
    if (band_fair_list_keys(m->f, list, MAXK, &count) != 0 || count != nids) {
        fail(m, "%s: list_keys gave %zu keys, expected %zu", opname, count, nids);
        return;
    }
    for (size_t i = 0; i < count; i++)
        got_ids[i] = list[i].key;
    qsort(ids, nids, sizeof(ids[0]), cmp_u64);
    qsort(got_ids, count, sizeof(got_ids[0]), cmp_u64);
    if (memcmp(ids, got_ids, nids * sizeof(ids[0])) != 0)
        fail(m, "%s: list_keys gave other keys", opname);
    /* coverage */
    for (uint32_t c = 0; c < r->classes; c++) {
        if (m->f->cls[c].vround < m->last_vround[c])
            m->counts.rebases++;
        m->last_vround[c] = m->f->cls[c].vround;
    }
    for (uint32_t c = 0; c < r->classes; c++) {
        if (r->cls[c].stalled) {
            m->counts.stalls++;
            break;
        }
    }
    for (int i = 0; i < MAXK; i++) {
        int aside = 0;
        for (uint32_t c = 0; c < r->classes; c++)
            aside |= r->keys[i].live && r->keys[i].fl[c].aside && head(m, &r->keys[i], c) >= 0;
        if (aside) {
            m->counts.parked++;
            break;
        }
    }
}

/* FAIR_MODEL_TRACE: the flows of both sides, rounds relative to the current one. */
static void dump_flows(const struct fair_model *m)
{
    const struct ref *r = &m->r;
    for (uint32_t c = 0; c < r->classes; c++) {
        fprintf(stderr, "   model class %u:", c);
        for (int i = 0; i < MAXK; i++) {
            const struct mkey *k = &r->keys[i];
            int e = k->live ? head(m, k, c) : -1;
            if (e < 0)
                continue;
            const struct mflow *fl = &k->fl[c];
            fprintf(stderr, " [key %llu n %llu held %llu due %+lld round %+lld def %llu st %llu%s]",
                    (unsigned long long)k->id, (unsigned long long)r->ent[e].n,
                    (unsigned long long)k->held,
                    (long long)(int64_t)(uint64_t)(fl->due - r->cls[c].vround),
                    (long long)(int64_t)(uint64_t)(fl->round - r->cls[c].vround),
                    (unsigned long long)fl->deficit, (unsigned long long)fl->stamp,
                    fl->aside ? " aside" : "");
        }
        fprintf(stderr, "\n   real  class %u:", c);
        const struct fair_class *cl = &m->f->cls[c];
        const struct band__node *lists[2] = {&cl->ring, &cl->parked};
        for (int l = 0; l < 2; l++) {
            for (const struct band__node *n = lists[l]->next; n != lists[l]; n = n->next) {
                const struct fair_flow *fl = band__container_of(n, struct fair_flow, ring);
                fprintf(stderr, " [key %llu due %+lld round %+lld def %llu st %llu%s]",
                        (unsigned long long)fl->key->id, (long long)(fl->due - cl->vround),
                        (long long)(fl->round - cl->vround), (unsigned long long)fl->deficit,
                        (unsigned long long)fl->stamp, l ? " aside" : "");
            }
        }
        fprintf(stderr, "\n");
    }
}

/* ---------------------------------------------------------------------------------- */
/* creating the fair                                                                   */

static int create_fair(struct fair_model *m)
{
    band_fair_opts opts = {0};
    uint8_t b = next_byte(m);
    uint64_t cap;
    int giant = 0;
    if (b < 170)
        cap = 1 + b % 12;
    else if (b < 225)
        cap = 13 + next_byte(m) % 28;
    else if (b < 250 || !WIDE_ROUNDS)
        cap = 1 + next_byte(m);
    else {
        cap = BAND_FAIR_MAX_CAPACITY - next_byte(m) % 3;
        giant = 1;
    }
    b = next_byte(m);
    opts.classes = b < 100 ? 1 : b < 180 ? 2 : b < 240 ? 3 : MAXC;
    /* headroom of classes 1..classes-1: never decreasing, below the capacity */
    uint64_t prev = 0;
    for (uint32_t c = 1; c < opts.classes; c++) {
        b = next_byte(m);
        uint64_t h = (b & 3) == 0 ? 0 : giant ? next_byte(m) % 4 : next_byte(m) % cap;
        if (h < prev)
            h = prev;
        opts.headroom[c] = h;
        prev = h;
    }
    b = next_byte(m);
    opts.quantum = b < 150   ? UINT64_C(1) + b % 3
                   : b < 230 ? UINT64_C(1) + b % 16
                             : BAND_FAIR_MAX_QUANTUM - b % 2;
    if (giant && b < 150)
        opts.quantum = 1; /* requests far above the quantum: rounds get large */
    b = next_byte(m);
    opts.default_weight = b % 4;
    opts.default_cap = (b & 0x30) == 0 ? 1 + next_byte(m) % cap : 0;
    b = next_byte(m);
    opts.max_keys = b < 200 ? 2 + b % 7 : b < 250 ? 9 + b % 8 : 0;
    if (giant)
        opts.default_cap = 0;

    /* sometimes an invalid configuration first: refused, nothing created */
    b = next_byte(m);
    if ((b & 15) == 0) {
        band_fair_opts bad = opts;
        uint64_t bad_cap = cap;
        switch ((b >> 4) & 7) {
        case 0:
            bad_cap = 0;
            break;
        case 1:
            bad.classes = BAND_FAIR_MAX_CLASSES + 1;
            break;
        case 2:
            bad.quantum = BAND_FAIR_MAX_QUANTUM + 1;
            break;
        case 3:
            bad.default_weight = BAND_FAIR_MAX_WEIGHT + 1;
            break;
        case 4:
            bad.default_cap = cap + 1;
            break;
        case 5:
            if (b & 0x80) {
                bad.headroom[0] = 1; /* nothing is more urgent than class 0 */
            } else {
                bad.classes = 2;
                bad.headroom[1] = cap; /* not below the capacity */
            }
            break;
        case 6:
            if ((b & 0x80) && bad.classes < BAND_FAIR_MAX_CLASSES) {
                bad.headroom[bad.classes] = 1; /* a class the fair does not have */
            } else {
                bad.classes = 3;
                bad.headroom[1] = 1;
                bad.headroom[2] = 0; /* decreasing (with capacity 1, also not below it) */
            }
            break;
        default:
            bad_cap = BAND_FAIR_MAX_CAPACITY + 1;
            break;
        }
        band_fair *f = (band_fair *)(uintptr_t)0x1;
        expect_int(m, "create(invalid configuration)", BAND_EINVAL,
                   band_fair_create(&f, bad_cap, &bad));
        if (f != (band_fair *)(uintptr_t)0x1)
            fail(m, "create(invalid configuration) changed *out");
    }

    struct ref *r = &m->r;
    memset(r, 0, sizeof(*r));
    int rc = band_fair_create(&m->f, cap, &opts);
    if (rc != 0) {
        fail(m, "create(capacity %llu) returned %d", (unsigned long long)cap, rc);
        m->f = NULL;
        return -1;
    }
    r->capacity = cap;
    r->classes = opts.classes == 0 ? 1 : opts.classes;
    r->quantum = opts.quantum == 0 ? 1 : opts.quantum;
    r->dweight = opts.default_weight == 0 ? 1 : opts.default_weight;
    r->dcap = opts.default_cap == 0 ? cap : opts.default_cap;
    r->max_keys = opts.max_keys == 0 ? BAND_FAIR_DEFAULT_MAX_KEYS : opts.max_keys;
    for (uint32_t c = 0; c < r->classes; c++) {
        r->cls[c].headroom = opts.headroom[c];
        r->cls[c].vround = LAG;
    }
    m->floods = r->max_keys <= 16;
    memset(m->last_vround, 0, sizeof(m->last_vround));
    m->counts.fairs++;
    m->counts.giants += (uint64_t)giant;
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* operation arguments                                                                 */

static uint64_t read_key(struct fair_model *m)
{
    uint8_t b = next_byte(m);
    if (m->floods && (b & 0xe0) == 0xe0)
        return UINT64_C(0x100000) + m->next_flood++; /* a key never seen before */
    return g_pool[b % NPOOL];
}

static uint32_t read_class(struct fair_model *m)
{
    uint8_t b = next_byte(m);
    if (b == 0xff)
        return m->r.classes; /* out of range */
    return (uint32_t)(b % m->r.classes);
}

/* Units to ask for: mostly a few, sometimes the interesting values near the state. */
static uint64_t read_units(struct fair_model *m, uint64_t key, uint32_t cls)
{
    const struct ref *r = &m->r;
    uint8_t c = next_byte(m);
    const struct mkey *k = key_find(m, key);
    uint64_t cap = k != NULL ? k->cap : r->dcap;
    uint64_t room = cls < r->classes ? r->capacity - r->cls[cls].headroom : r->capacity;
    switch (c & 15) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 8:
        return 1 + next_byte(m) % 4;
    case 9:
        return (c & 0x10) ? 0 : 1;
    case 10:
        return r->capacity <= 64 ? 1 + next_byte(m) % (r->capacity + 2)
                                 : UINT64_C(1) + next_byte(m);
    case 11:
        return (c & 0x10) ? room : room + 1;
    case 12:
        return (c & 0x10) ? cap : cap + 1;
    case 13:
        return r->capacity - r->in_use;
    case 14:
        return r->capacity > 64 ? r->capacity / 2 + 1 - next_byte(m) % 3
                                : UINT64_C(1) + next_byte(m) % 9;
    default:
        return next_byte(m) % 9;
    }
}

/* ---------------------------------------------------------------------------------- */
/* operations                                                                          */

/* The handle on @key when it has one and the next byte says to use it, else NULL (and no
 * byte read, so inputs without handles run as they always did). */
static band_fair_handle *handle_of(struct fair_model *m, uint64_t key)
{
    for (int i = 0; i < NPOOL; i++)
        if (g_pool[i] == key && m->h[i] != NULL)
            return (next_byte(m) & 3) != 0 ? m->h[i] : NULL;
    return NULL;
}

/* Get a handle on a pool key that has none, or put the one it has. */
static void op_handle(struct fair_model *m)
{
    int i = next_byte(m) % NPOOL;
    uint64_t id = g_pool[i];
    if (m->h[i] == NULL) {
        int exp = 0;
        struct mkey *k = key_get(m, id, &exp);
        if (k != NULL)
            k->refs++;
        else
            m->counts.enomem++;
        band_fair_handle *h = NULL;
        expect_int(m, "handle_get", exp, band_fair_handle_get(m->f, id, &h));
        if (exp == 0 && h == NULL)
            fail(m, "handle_get returned 0 and no handle");
        if (exp != 0 && h != NULL)
            fail(m, "handle_get failed and stored a handle");
        m->h[i] = exp == 0 ? h : NULL;
    } else {
        struct mkey *k = key_find(m, id);
        if (k == NULL || k->refs == 0)
            fail(m, "a handle's key is not live in the model");
        else
            k->refs--;
        evict_idle(m);
        expect_int(m, "handle_put", 0, band_fair_handle_put(m->h[i]));
        m->h[i] = NULL;
    }
}

/* Put every handle (before the fair is destroyed). */
static void put_handles(struct fair_model *m)
{
    for (int i = 0; i < NPOOL; i++) {
        if (m->h[i] == NULL)
            continue;
        struct mkey *k = key_find(m, g_pool[i]);
        if (k != NULL && k->refs > 0)
            k->refs--;
        (void)band_fair_handle_put(m->h[i]);
        m->h[i] = NULL;
    }
    evict_idle(m);
}

static void op_try(struct fair_model *m, int past)
{
    uint64_t key = read_key(m);
    uint32_t cls = read_class(m);
    uint64_t n = read_units(m, key, cls);
    int open_idle = total_queued(m) == 0 && !m->r.closed; /* before this request */
    int exp;
    if (cls >= m->r.classes)
        exp = BAND_EINVAL;
    else if (n == 0)
        exp = m->r.closed ? BAND_ECLOSED : 0;
    else
        exp = submit(m, key, cls, n, -1);
    if (exp == 0 && n > 0)
        m->counts.granted_now++;
    else if (exp == BAND_EAGAIN)
        m->counts.eagain++;
    evict_idle(m);
    band_fair_handle *h = past ? NULL : handle_of(m, key);
    if (past) {
        if (exp == BAND_EAGAIN)
            exp = BAND_ETIMEDOUT;
        band_time dl = (next_byte(m) & 1) ? 0 : band_now() - 1;
        expect_int(m, "acquire(past deadline)", exp,
                   band_fair_acquire(m->f, key, cls, n, dl, NULL));
    } else if (h != NULL) {
        m->counts.handle_tries++;
        uint64_t fast = atomic_load(&m->f->t_fast_grants), slow = atomic_load(&m->f->t_slow_tries);
        expect_int(m, "handle_try_acquire", exp, band_fair_handle_try_acquire(h, cls, n));
        m->counts.fast_grants += atomic_load(&m->f->t_fast_grants) - fast;
        m->counts.slow_handle_tries += atomic_load(&m->f->t_slow_tries) - slow;
        /* the lock-free path is taken exactly when nothing is queued, the fair is open,
         * the key has no reservation and the grant fits the cap and the headroom */
        if (cls < m->r.classes && n > 0) {
            struct mkey *k = key_find(m, key);
            int lockfree = exp == 0 && open_idle && k != NULL && k->reserve == 0;
            expect_int(m, "handle try took the lock-free path", lockfree,
                       (int)(atomic_load(&m->f->t_fast_grants) - fast));
        }
    } else {
        expect_int(m, "try_acquire", exp, band_fair_try_acquire(m->f, key, cls, n));
    }
    if (exp == BAND_E2BIG)
        m->counts.e2big++;
    else if (exp == BAND_ENOMEM)
        m->counts.enomem++;
}

/* A blocking acquire with a deadline 2 ms ahead: granted at once, or queued and timed out
 * (nothing else runs on this thread to release anything meanwhile). */
static void op_acquire_wait(struct fair_model *m)
{
    uint64_t key = read_key(m);
    uint32_t cls = read_class(m);
    uint64_t n = read_units(m, key, cls);
    int exp;
    if (cls >= m->r.classes) {
        exp = BAND_EINVAL;
    } else if (n == 0) {
        exp = m->r.closed ? BAND_ECLOSED : 0;
    } else {
        exp = submit(m, key, cls, n, TMP);
        if (exp == BAND_PENDING) {
            withdraw(m, TMP, BAND_ETIMEDOUT);
            exp = BAND_ETIMEDOUT;
            m->counts.timeouts++;
        }
    }
    evict_idle(m);
    int rc = band_fair_acquire(m->f, key, cls, n, band_deadline_after(2 * BAND_MSEC), NULL);
    expect_int(m, "acquire(2 ms)", exp, rc);
    if (rc == BAND_EOVERFLOW)
        m->counts.overflows++;
}

static void op_async(struct fair_model *m)
{
    int s = next_byte(m) % NSLOTS;
    struct slot *sl = &m->slots[s];
    uint64_t key = read_key(m);
    uint32_t cls = read_class(m);
    uint64_t n = read_units(m, key, cls);
    int exp;
    if (sl->state == SL_QUEUED) {
        /* resubmitting a pending request: refused, the queued one is untouched */
        expect_int(m, "acquire_async(pending)", BAND_EINVAL,
                   band_fair_acquire_async(m->f, key, cls, n, &sl->r));
        return;
    }
    band_waiter_init(&sl->r.w, model_wake, sl);
    sl->wakes = 0;
    sl->state = SL_IDLE;
    sl->status = 0;
    if (cls >= m->r.classes) {
        exp = BAND_EINVAL; /* the waiter is not touched */
    } else if (n == 0) {
        exp = m->r.closed ? BAND_ECLOSED : 0;
        sl->status = exp;
    } else {
        exp = submit(m, key, cls, n, s);
        if (exp == BAND_PENDING)
            sl->state = SL_QUEUED;
        else
            sl->status = exp;
    }
    evict_idle(m);
    int rc = band_fair_acquire_async(m->f, key, cls, n, &sl->r);
    expect_int(m, "acquire_async", exp, rc);
    if (rc == BAND_PENDING)
        m->counts.pending++;
    else if (rc == 0 && n > 0)
        m->counts.granted_now++;
    else if (rc == BAND_E2BIG)
        m->counts.e2big++;
    else if (rc == BAND_ENOMEM)
        m->counts.enomem++;
    else if (rc == BAND_EOVERFLOW)
        m->counts.overflows++;
}

static void op_cancel(struct fair_model *m)
{
    uint8_t c = next_byte(m);
    int s = next_byte(m) % NSLOTS;
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
        reason = BAND_ECLOSED; /* not one of the two reasons a cancel takes: refused */
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
    if ((reason != BAND_ECANCELED && reason != BAND_ETIMEDOUT) || sl->state == SL_IDLE) {
        exp = BAND_EINVAL;
    } else if (sl->state == SL_DONE) {
        exp = BAND_EALREADY;
    } else {
        withdraw(m, s, reason);
        sl->state = SL_IDLE;
        sl->status = reason;
        exp = 0;
    }
    evict_idle(m);
    int rc = band_waiter_cancel(&sl->r.w, reason);
    expect_int(m, "cancel", exp, rc);
    if (rc == 0)
        m->counts.cancels_ok++;
    else if (rc == BAND_EALREADY)
        m->counts.ealready++;
}

static void op_release(struct fair_model *m)
{
    struct ref *r = &m->r;
    uint8_t b = next_byte(m);
    struct mkey *holders[MAXK];
    int nh = 0;
    for (int i = 0; i < MAXK; i++)
        if (r->keys[i].live && r->keys[i].held > 0)
            holders[nh++] = &r->keys[i];
    uint64_t key;
    if (nh > 0 && (b & 7) != 0)
        key = holders[(b >> 3) % nh]->id;
    else
        key = g_pool[(b >> 3) % NPOOL];
    struct mkey *k = key_find(m, key);
    uint64_t held = k != NULL ? k->held : 0, n;
    b = next_byte(m);
    switch (b & 7) {
    case 0:
    case 1:
        n = held;
        break;
    case 2:
    case 3:
        n = held > 0 ? 1 : 0;
        break;
    case 4:
        n = (held + 1) / 2;
        break;
    case 5:
        n = held > 0 ? 1 + next_byte(m) % held : 0;
        break;
    case 6:
        n = held + 1; /* more than it holds: refused */
        break;
    default:
        n = (b & 8) ? 0 : UINT64_MAX;
        break;
    }
    int exp;
    if (n == 0) {
        exp = 0;
    } else if (k == NULL || k->held < n) {
        exp = BAND_EINVAL;
    } else {
        k->held -= n;
        r->in_use -= n;
        key_changed(m, k);
        dispatch(m);
        exp = 0;
    }
    evict_idle(m);
    band_fair_handle *h = handle_of(m, key);
    if (h != NULL) {
        m->counts.handle_releases++;
        uint64_t fast = atomic_load(&m->f->t_fast_releases);
        expect_int(m, "handle_release", exp, band_fair_handle_release(h, n));
        m->counts.fast_releases += atomic_load(&m->f->t_fast_releases) - fast;
    } else {
        expect_int(m, "release", exp, band_fair_release(m->f, key, n));
    }
}

static void key_apply(struct fair_model *m, struct mkey *k, uint32_t weight, uint64_t cap,
                      uint64_t reserve)
{
    struct ref *r = &m->r;
    r->reserved_total = r->reserved_total - k->reserve + reserve;
    if (k->reserve == 0 && reserve > 0)
        k->rseq = ++r->rseqs;
    k->weight = weight;
    k->cap = cap;
    k->reserve = reserve;
}

static void op_key_set(struct fair_model *m)
{
    struct ref *r = &m->r;
    uint64_t key = read_key(m);
    uint8_t b = next_byte(m);
    band_fair_key_opts o;
    o.weight = (b & 15) == 0   ? ((b & 16) ? 0 : BAND_FAIR_MAX_WEIGHT + 1)
               : (b & 15) == 1 ? (uint32_t)(1 + next_byte(m) % 200)
                               : (uint32_t)(1 + b % 4);
    b = next_byte(m);
    switch (b & 7) {
    case 0:
    case 1:
        o.cap = 0;
        break;
    case 2:
        o.cap = r->capacity + 1; /* refused */
        break;
    default:
        o.cap = r->capacity <= 64 ? 1 + next_byte(m) % r->capacity
                                  : r->capacity - next_byte(m) % (r->capacity / 2);
        break;
    }
    uint64_t cap = o.cap == 0 ? r->capacity : o.cap;
    b = next_byte(m);
    switch (b & 7) {
    case 0:
    case 1:
    case 2:
    case 3:
        o.reserve = 0;
        break;
    case 4:
        o.reserve = cap + 1; /* more than the cap: refused */
        break;
    default:
        o.reserve = cap <= 64 ? 1 + next_byte(m) % cap : UINT64_C(1) + next_byte(m);
        if (o.reserve > cap)
            o.reserve = cap;
        break;
    }
    int exp = 0;
    if (o.weight == 0 || o.weight > BAND_FAIR_MAX_WEIGHT || cap > r->capacity || o.reserve > cap) {
        exp = BAND_EINVAL;
    } else {
        struct mkey *k = key_get(m, key, &exp);
        if (k != NULL) {
            if (r->reserved_total - k->reserve + o.reserve > r->capacity) {
                exp = BAND_EINVAL;
            } else {
                if (!k->pinned) {
                    k->pinned = 1;
                    r->npinned++;
                }
                key_apply(m, k, o.weight, cap, o.reserve);
                fail_too_big(m, k);
                key_changed(m, k);
                dispatch(m);
            }
        }
    }
    evict_idle(m);
    expect_int(m, "key_set", exp, band_fair_key_set(m->f, key, &o));
    if (exp == BAND_ENOMEM)
        m->counts.enomem++;
}

static void op_key_unset(struct fair_model *m)
{
    struct ref *r = &m->r;
    uint64_t key = read_key(m);
    struct mkey *k = key_find(m, key);
    if (k != NULL && k->pinned) {
        k->pinned = 0;
        r->npinned--;
        key_apply(m, k, r->dweight, r->dcap, 0);
        fail_too_big(m, k);
        key_changed(m, k);
        dispatch(m);
    }
    evict_idle(m);
    expect_int(m, "key_unset", 0, band_fair_key_unset(m->f, key));
}

static void op_close(struct fair_model *m)
{
    model_close(m);
    evict_idle(m);
    expect_int(m, "close", 0, band_fair_close(m->f));
}

static void op_destroy_busy(struct fair_model *m)
{
    int handles = 0;
    for (int i = 0; i < NPOOL; i++)
        handles += m->h[i] != NULL;
    if (total_queued(m) == 0 && handles == 0)
        return; /* destroying would succeed; recreate covers that */
    expect_int(m, "destroy while requests are queued or handles live", BAND_EBUSY,
               band_fair_destroy(m->f));
}

static void reset_slots(struct fair_model *m)
{
    for (int i = 0; i < NSLOTS; i++) {
        band_waiter_init(&m->slots[i].r.w, model_wake, &m->slots[i]);
        m->slots[i].state = SL_IDLE;
        m->slots[i].status = 0;
        m->slots[i].wakes = 0;
    }
}

/* Close, check that every queued request ended, release everything held, destroy. */
static void finish_fair(struct fair_model *m, const char *what)
{
    m->nexp = m->ngot = 0;
    m->grants_this_op = 0;
    m->reenter = 0;
    model_close(m);
    evict_idle(m);
    expect_int(m, what, 0, band_fair_close(m->f));
    check_after_op(m, what, 1);
    for (int i = 0; i < NSLOTS; i++)
        if (band_waiter_is_pending(&m->slots[i].r.w))
            fail(m, "%s: slot %d still pending", what, i);
    struct ref *r = &m->r;
    for (int i = 0; i < MAXK && !m->failed; i++) {
        struct mkey *k = &r->keys[i];
        if (k->live && k->held > 0) {
            uint64_t id = k->id, n = k->held;
            k->held = 0;
            r->in_use -= n;
            expect_int(m, "release after close", 0, band_fair_release(m->f, id, n));
        }
    }
    evict_idle(m);
    if (!m->failed) {
        /* the lock-free path's grants reach the counters through the handles: still
         * counted after put */
        band_fair_stats before;
        band_fair_get_stats(m->f, &before);
        put_handles(m);
        compare_stats(m, "after putting the handles");
        band_fair_stats st;
        band_fair_get_stats(m->f, &st);
        for (uint32_t c = 0; c < r->classes; c++)
            expect_u64(m, "granted across put", before.cls[c].granted, st.cls[c].granted);
        expect_u64(m, "in_use at the end", 0, st.in_use);
        expect_u64(m, "keys at the end", r->npinned, st.keys);
        int rc = band__fair_check(m->f);
        if (rc != 0)
            fail(m, "%s: band__fair_check() failed at line %d", what, -rc);
    }
    expect_int(m, "destroy", 0, band_fair_destroy(m->f));
    m->f = NULL;
}

static void op_recreate(struct fair_model *m)
{
    finish_fair(m, "close before recreate");
    m->nexp = m->ngot = 0;
    reset_slots(m);
    if (!m->failed)
        create_fair(m);
}

static const char *const op_names[FM_OP_COUNT] = {
    "try_acquire", "acquire(past)", "acquire(2 ms)", "acquire_async", "cancel",   "release",
    "key_set",     "key_unset",     "close",         "destroy(busy)", "recreate", "handle",
};

static enum fair_model_op decode_op(struct fair_model *m)
{
    uint8_t b = next_byte(m);
    if (m->r.closed && (b & 7) == 0)
        return FM_OP_RECREATE;
    if (b < 36)
        return FM_OP_TRY;
    if (b < 40)
        return FM_OP_HANDLE;
    if (b < 52)
        return FM_OP_ACQUIRE_PAST;
    if (b < 130)
        return FM_OP_ASYNC;
    if (b < 165)
        return FM_OP_CANCEL;
    if (b < 215)
        return FM_OP_RELEASE;
    if (b < 230)
        return FM_OP_KEY_SET;
    if (b < 238)
        return FM_OP_KEY_UNSET;
    if (b < 240)
        return FM_OP_ACQUIRE_WAIT;
    if (b < 250)
        return FM_OP_RELEASE;
    if (b < 252)
        return FM_OP_DESTROY_BUSY;
    if (b == 252)
        return FM_OP_CLOSE;
    if (b == 253)
        return FM_OP_RECREATE;
    return FM_OP_TRY;
}

static void step(struct fair_model *m)
{
    enum fair_model_op op = decode_op(m);
    m->opno++;
    m->counts.ops[op]++;
    m->nexp = m->ngot = 0;
    m->grants_this_op = 0;
    m->reenter = (next_byte(m) & 7) == 0;
    int sorted = 0;
    switch (op) {
    case FM_OP_TRY:
        op_try(m, 0);
        break;
    case FM_OP_ACQUIRE_PAST:
        op_try(m, 1);
        break;
    case FM_OP_ACQUIRE_WAIT:
        op_acquire_wait(m);
        break;
    case FM_OP_ASYNC:
        op_async(m);
        break;
    case FM_OP_CANCEL:
        op_cancel(m);
        break;
    case FM_OP_RELEASE:
        op_release(m);
        break;
    case FM_OP_KEY_SET:
        op_key_set(m);
        break;
    case FM_OP_KEY_UNSET:
        op_key_unset(m);
        break;
    case FM_OP_CLOSE:
        op_close(m);
        sorted = 1; /* close fails every request; the order among them is not a rule */
        break;
    case FM_OP_DESTROY_BUSY:
        op_destroy_busy(m);
        break;
    case FM_OP_RECREATE:
        op_recreate(m);
        break;
    case FM_OP_HANDLE:
        op_handle(m);
        break;
    case FM_OP_COUNT:
        break;
    }
    if (m->f == NULL)
        return;
    evict_idle(m);
    check_after_op(m, op_names[op], sorted);
    if (m->trace) {
        uint64_t aside = 0;
        for (int i = 0; i < MAXK; i++)
            for (uint32_t c = 0; c < m->r.classes; c++)
                aside +=
                    m->r.keys[i].live && m->r.keys[i].fl[c].aside && head(m, &m->r.keys[i], c) >= 0;
        fprintf(stderr,
                "#%llu %-14s reenter=%d wakes=%d | in_use=%llu/%llu waiting=%llu keys=%llu "
                "aside=%llu stalled=%d%d%d%d closed=%d%s\n",
                (unsigned long long)m->opno, op_names[op], m->reenter, m->ngot,
                (unsigned long long)m->r.in_use, (unsigned long long)m->r.capacity,
                (unsigned long long)total_queued(m), (unsigned long long)m->r.nkeys,
                (unsigned long long)aside, m->r.cls[0].stalled, m->r.cls[1].stalled,
                m->r.cls[2].stalled, m->r.cls[3].stalled, m->r.closed,
                m->failed ? " MISMATCH" : "");
        dump_flows(m);
    }
}

/* ---------------------------------------------------------------------------------- */
/* runs                                                                                */

struct fair_model *fair_model_new(void)
{
    struct fair_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    for (int i = 0; i < NSLOTS; i++) {
        m->slots[i].m = m;
        m->slots[i].idx = i;
    }
    reset_slots(m);
    const char *t = getenv("FAIR_MODEL_TRACE");
    m->trace = t != NULL && *t != '\0' && *t != '0';
    return m;
}

/* Close whatever is left (its wakes still go to the slots) and destroy it. */
static void teardown(struct fair_model *m)
{
    if (m->f == NULL)
        return;
    m->reenter = 0;
    for (int i = 0; i < NPOOL; i++) {
        (void)band_fair_handle_put(m->h[i]);
        m->h[i] = NULL;
    }
    (void)band_fair_close(m->f);
    (void)band_fair_destroy(m->f);
    m->f = NULL;
}

void fair_model_free(struct fair_model *m)
{
    if (m == NULL)
        return;
    teardown(m);
    free(m);
}

static int run(struct fair_model *m, uint64_t max_ops)
{
    m->failed = 0;
    m->err[0] = '\0';
    m->opno = 0;
    m->next_flood = 0;
    teardown(m);
    reset_slots(m);
    if (create_fair(m) != 0)
        return -1;
    for (uint64_t i = 0; i < max_ops && !m->failed && m->f != NULL; i++) {
        if (model_input_done(&m->in))
            break;
        step(m);
    }
    if (!m->failed && m->f != NULL) {
        m->opno++;
        finish_fair(m, "final close");
    }
    if (m->failed) {
        teardown(m);
        return -1;
    }
    return 0;
}

int fair_model_run_bytes(struct fair_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    return run(m, UINT64_MAX);
}

int fair_model_run_seed(struct fair_model *m, uint64_t seed, uint64_t ops)
{
    model_input_seed(&m->in, seed);
    return run(m, ops);
}

const char *fair_model_error(const struct fair_model *m)
{
    return m->err;
}

const struct fair_model_counts *fair_model_counts(const struct fair_model *m)
{
    return &m->counts;
}

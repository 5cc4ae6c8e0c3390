/* SPDX-License-Identifier: MIT */
/*
 * fair_sched.c - who gets the capacity of a band_fair: reservations, priority classes and
 * deficit round robin over keys, kept in virtual rounds.
 *
 * Design notes
 * ------------
 * The rules (docs/fair.md states them for users). Let free = capacity - in_use. A request
 * of n units of key k in class c FITS when
 *   (1) k.held + n <= k.cap                                  (per-key cap)
 *   (2) n <= free and in_use + n <= capacity - headroom[c]   (capacity, class headroom)
 *   (3) k.held + n <= k.reserve                              (within its own reservation)
 *       or free - n >= sum of unmet(j) over protected keys j != k     (borrowing)
 * where unmet(j) = j.reserve - j.held, and j is PROTECTED when it holds less than its
 * reservation and one of its queued head requests fits within it (j.held + n <= j.reserve).
 * So a reserved key's unused reservation can be borrowed while it does not wait for it,
 * and not while it does; nothing granted is revoked, so a key that comes back to a borrowed
 * reservation waits for releases, but is then served before the round robin.
 *
 * Dispatch order, after every change that may let a request in (release, cancel, close,
 * a key's configuration, a new request):
 *   1. Reservation pass: every protected key's head requests that fit within its
 *      reservation and (2) are granted, the most urgent class (0) first. They cost no
 *      round credit.
 *   2. Classes from the most urgent (0) on, each by deficit round robin over its active
 *      flows (a flow = one key's queue in one class), and a class that stalls stalls every
 *      less urgent class.
 *
 * Deficit round robin in virtual rounds. In every round a flow may receive its quantum,
 * weight * base quantum. A flow keeps the round it was last credited for (round) and the
 * credit of that round it has left (deficit); its head request of n units is DUE in
 * round + ceil((n - deficit) / quantum) (in round itself when n <= deficit). The ring of
 * a class is ordered by (due, stamp), and the first flow has the turn: it is granted its
 * head if it FITS, paying from the credit of the rounds up to its due round, or the class
 * STALLS (nothing in it or in a less urgent class is granted until capacity frees). A flow
 * that still has credit for its next head stays first, so a turn takes a whole quantum as
 * plain DRR does; a flow whose next head is due in a later round gets a new stamp there,
 * behind the flows that reached that round before it. vround, the due round of the latest turn, is
 * the round being served.
 *
 * Ordering by rounds instead of rotating a ring is what keeps shares exact when a key's
 * cap (or the capacity) is smaller than its quantum. A flow whose key is at its cap for the
 * head is PARKED: taken off the ring without stalling anybody, with its round, credit and
 * stamp. When the key drops below its cap (a release, a larger cap, a smaller head), the
 * flow goes back to the ring at the round it had reached, so it is served ahead of the
 * flows that went on to later rounds meanwhile, and receives the rest of its quantum. A
 * plain ring would end its turn instead, and a key that can never hold its whole quantum
 * at once would lose the difference every round (weights 1:2:4 on capacity 3 gave
 * 117:234:349 instead of 100:200:400). Catching up is bounded: a flow put back on the ring
 * (from the parked list, or with a smaller head or a larger weight) whose head would be
 * paid for by round vround - FAIR_LAG is due in that round instead, with just the credit
 * for that head, so being held back by its cap for long banks nothing.
 * A flow that stays on the ring with the same head keeps its due round: a large request
 * never loses the rounds it waited.
 *
 * New and idle flows. A flow that becomes active starts at round max(vround, its own last
 * round) with no credit, so its head is due after every flow already waiting in the
 * current round (as at the tail of a DRR ring), and a key that empties its queue and
 * comes back is not served twice in a round. An emptied flow loses its credit.
 *
 * Large requests. A request far larger than the quantum is simply due many rounds ahead:
 * nothing spins through the rounds in between, and when it is the earliest due request
 * it is the turn, so a large request is never starved by small ones.
 *
 * A new request is granted at once only if it FITS, its key has nothing queued in its
 * class, and no class from 0 to its own is stalled (a request within the key's
 * reservation ignores stalls, as in the reservation pass): it never overtakes a request
 * the dispatch would serve first.
 *
 * Cost. A grant is O(1) plus the ordered insertion of its flow, which walks back from the
 * ring's tail over the flows due in later rounds (usually none); a flow that returns from
 * the parked list walks from the head. The borrowing check walks the list of reserved
 * keys: O(reserved keys * classes) per grant. Rounds are 64-bit; when vround passes 2^62
 * (only requests of about 2^61 units over a quantum of 1 get there) every flow of the
 * class is rebased, which keeps every round and due value far from overflow. The rebase
 * moves rounds only, never turns rounds into credit: credit in units depends on the
 * quantum, and a key's weight may change after the rebase.
 *
 * No deadlock from reservations: a protected key's request within its reservation is
 * granted by pass 1 as soon as it fits (2), so when nothing is held every protected head
 * is served, and a request blocked only by others' reservations waits for releases.
 */
#include "prim/fair/fair_internal.h"

enum { SERVE_IDLE, SERVE_STALLED };

/* vround past this rebases the class's rounds (see the design notes). */
#define FAIR_REBASE (UINT64_C(1) << 62)

/* A rebase keeps this many rounds before vround - FAIR_LAG: more than any request can
 * need at a quantum of 1, so a flow credited for an older round is caught up anyway. */
#define FAIR_HISTORY (BAND_FAIR_MAX_CAPACITY + 1)

static uint64_t fair_quantum(const band_fair *f, const struct fair_key *k)
{
    return (uint64_t)k->weight * f->quantum; /* <= 2^16 * 2^32: no overflow */
}

static band_fair_acquire_op *flow_head(const struct fair_flow *fl)
{
    struct band__node *n = band__list_first(&fl->reqs);
    return n == NULL ? NULL : band__fair_op_of(band__waiter_of(n));
}

/* Is @j waiting for a request that fits within its unused reservation? */
static bool key_protected(const band_fair *f, const struct fair_key *j)
{
    uint64_t held = key_held(j), reserve = key_reserve(j);
    if (j->nreq == 0 || held >= reserve)
        return false;
    for (uint32_t c = 0; c < f->nclasses; c++) {
        const band_fair_acquire_op *r = flow_head(&j->flow[c]);
        if (r != NULL && r->_n <= reserve - held)
            return true;
    }
    return false;
}

/* The unused reservations of protected keys other than @k, summed. */
static uint64_t protected_except(const band_fair *f, const struct fair_key *k)
{
    uint64_t sum = 0;
    const struct band__node *n;
    band__list_foreach (n, &f->reserved) {
        const struct fair_key *j = band__container_of(n, struct fair_key, rlink);
        if (j != k && key_protected(f, j))
            sum += key_reserve(j) - key_held(j); /* reservations sum to at most the capacity */
    }
    return sum;
}

/* Rules (2) and (3) above; the caller checked the cap. */
static bool fits_shared(const band_fair *f, const struct fair_key *k, uint32_t c, uint64_t n)
{
    uint64_t in_use = fair_in_use(f), free = f->capacity - in_use;
    if (n > free || in_use + n > f->cls[c].limit)
        return false;
    if (band__list_empty(&f->reserved) || key_held(k) + n <= key_reserve(k))
        return true; /* no reservation to protect, or within its own */
    return free - n >= protected_except(f, k);
}

bool band__fair_can_grant_now(const band_fair *f, const struct fair_key *k, uint32_t c, uint64_t n)
{
    if (!band__list_empty(&k->flow[c].reqs))
        return false; /* its own earlier requests go first */
    uint64_t cap = key_cap(k), held = key_held(k);
    if (n > cap || held > cap - n)
        return false;
    uint64_t in_use = fair_in_use(f), free = f->capacity - in_use;
    if (n > free || in_use + n > f->cls[c].limit)
        return false;
    if (held + n <= key_reserve(k))
        return true;
    for (uint32_t c2 = 0; c2 <= c; c2++)
        if (f->cls[c2].stalled)
            return false;
    return band__list_empty(&f->reserved) || free - n >= protected_except(f, k);
}

/* ---------------------------------------------------------------- flows and rounds */

static struct fair_flow *flow_of(struct band__node *n)
{
    return band__container_of(n, struct fair_flow, ring);
}

static bool flow_capped(const struct fair_flow *fl, const band_fair_acquire_op *r)
{
    const struct fair_key *k = fl->key;
    uint64_t cap = key_cap(k);
    return r->_n > cap || key_held(k) > cap - r->_n;
}

/* The round @fl's head is due in: the first by which its credit covers the head. */
static uint64_t flow_due(const band_fair *f, const struct fair_flow *fl)
{
    uint64_t n = flow_head(fl)->_n;
    if (n <= fl->deficit)
        return fl->round;
    uint64_t q = fair_quantum(f, fl->key), need = n - fl->deficit;
    return fl->round + need / q + (need % q != 0); /* round < 2^63, need / q < 2^61 */
}

/* Does @a go before @b on the ring? */
static bool flow_before(const struct fair_flow *a, const struct fair_flow *b)
{
    return a->due < b->due || (a->due == b->due && a->stamp < b->stamp);
}

/* Insert @fl (on no list) into @cl's ring at its place by (due, stamp). */
static void ring_insert(struct fair_class *cl, struct fair_flow *fl)
{
    struct band__node *pos = &cl->ring; /* insert before pos */
    struct band__node *first = cl->ring.next;
    if (first != &cl->ring && flow_before(fl, flow_of(first))) {
        pos = first; /* a flow coming back from the parked list: usually first */
    } else {
        while (pos->prev != &cl->ring && flow_before(fl, flow_of(pos->prev)))
            pos = pos->prev; /* from the tail: past flows due in later rounds */
    }
    band__list_add_tail(pos, &fl->ring);
}

/* @fl's due round, but no earlier than FAIR_LAG rounds before the current one: a flow whose
 * head would be paid for by then is due then, with just the credit for its head. */
static void flow_set_due(const band_fair *f, const struct fair_class *cl, struct fair_flow *fl)
{
    fl->due = flow_due(f, fl);
    if (fl->due <= cl->vround - FAIR_LAG) {
        fl->round = fl->due = cl->vround - FAIR_LAG;
        fl->deficit = flow_head(fl)->_n;
    }
}

static void flow_park(struct fair_class *cl, struct fair_flow *fl)
{
    band__list_del_init(&fl->ring);
    band__list_add_tail(&cl->parked, &fl->ring);
    cl->nparked++;
    fl->parked = true;
}

/* Back from the parked list, in its place: its round, credit and stamp are kept. */
static void flow_unpark(const band_fair *f, struct fair_class *cl, struct fair_flow *fl)
{
    band__list_del_init(&fl->ring);
    cl->nparked--;
    fl->parked = false;
    flow_set_due(f, cl, fl);
    ring_insert(cl, fl);
}

/* @fl's head, its key's cap or held units, or its quantum changed: move it. */
static void flow_refresh(const band_fair *f, struct fair_class *cl, struct fair_flow *fl)
{
    if (fl->nreq == 0)
        return;
    if (fl->parked) {
        if (!flow_capped(fl, flow_head(fl)))
            flow_unpark(f, cl, fl);
        return; /* a capped flow on the ring is parked when it reaches the turn */
    }
    uint64_t old = fl->due;
    flow_set_due(f, cl, fl);
    if (fl->due == old)
        return; /* its place is unchanged */
    band__list_del_init(&fl->ring);
    if (fl->due > old)
        fl->stamp = ++cl->stamps; /* behind the flows already due in that round */
    ring_insert(cl, fl);
}

void band__fair_key_refresh_locked(band_fair *f, struct fair_key *k)
{
    if (k->nreq == 0)
        return;
    for (uint32_t c = 0; c < f->nclasses; c++)
        flow_refresh(f, &f->cls[c], &k->flow[c]);
}

/*
 * vround passed FAIR_REBASE: move every round of class @c down by
 * base = vround - FAIR_LAG - FAIR_HISTORY. Nothing observable changes, whatever quantum a
 * flow has later (its key's weight may change): a flow's credit is kept as its round and
 * the credit left in it, never converted into units at today's quantum. A flow credited
 * for a round before base would, at any quantum of 1 or more, have more than
 * BAND_FAIR_MAX_CAPACITY units of credit by round vround - FAIR_LAG, so whatever its head it
 * is caught up to the lag bound when it is next placed; round 0 (FAIR_HISTORY rounds before
 * that bound) gives exactly the same. Only parked and idle flows can be that old: a flow on
 * the ring is due at vround - FAIR_LAG or later, so its round is at most
 * BAND_FAIR_MAX_CAPACITY rounds before that, and it moves down with its due round and
 * keeps its place.
 */
static void rebase_class(band_fair *f, uint32_t c)
{
    struct fair_class *cl = &f->cls[c];
    const uint64_t base = cl->vround - FAIR_LAG - FAIR_HISTORY;
    for (uint64_t b = 0; b <= f->tab_mask; b++) {
        for (struct fair_key *k = f->tab[b]; k != NULL; k = k->hnext) {
            struct fair_flow *fl = &k->flow[c];
            fl->round = fl->round > base ? fl->round - base : 0;
            fl->due = fl->due > base ? fl->due - base : 0; /* recomputed when placed */
        }
    }
    cl->vround = FAIR_LAG + FAIR_HISTORY;
}

void band__fair_enqueue_locked(band_fair *f, struct fair_key *k, band_fair_acquire_op *r,
                               band_time now)
{
    struct fair_flow *fl = &k->flow[r->_cls];
    struct fair_class *cl = &f->cls[r->_cls];
    r->_k = k;
    r->w._u.want = r->_n;
    r->w._since = now;
    band__list_add_tail(&fl->reqs, &r->w._link);
    if (fl->nreq++ == 0) {
        /* Active again: no credit, and not in a round it was already served in. */
        if (fl->round < cl->vround)
            fl->round = cl->vround;
        fl->deficit = 0;
        fl->parked = false;
        fl->stamp = ++cl->stamps;
        fl->due = flow_due(f, fl);
        ring_insert(cl, fl);
        cl->active++;
    }
    k->nreq++;
    k->waiting_units += r->_n;
    k->queued++;
    cl->nreq++;
    cl->waiting_units += r->_n;
    cl->queued++;
    f->q.len++;
    band__waiter_set(&r->w, &f->q, BAND__W_QUEUED);
}

void band__fair_unlink_locked(band_fair *f, band_fair_acquire_op *r)
{
    struct fair_key *k = r->_k;
    struct fair_flow *fl = &k->flow[r->_cls];
    struct fair_class *cl = &f->cls[r->_cls];
    band__list_del_init(&r->w._link);
    if (--fl->nreq == 0) {
        band__list_del_init(&fl->ring);
        if (fl->parked) {
            cl->nparked--;
            fl->parked = false;
        }
        cl->active--;
        fl->deficit = 0; /* an idle flow keeps no credit; it keeps its round */
    }
    k->nreq--;
    k->waiting_units -= r->_n;
    cl->nreq--;
    cl->waiting_units -= r->_n;
    f->q.len--;
}

#if defined(__GNUC__) || defined(__clang__)
#define FAIR_NOINLINE __attribute__((noinline))
#else
#define FAIR_NOINLINE
#endif

/* Queued @r was charged: unlink it, record its wait, move it onto @wl. Kept out of line:
 * the dispatch loop stays small, and the unlink is inlined here. */
static FAIR_NOINLINE void finish_queued(band_fair *f, band_fair_acquire_op *r, band_time *now,
                                        struct band__wakelist *wl)
{
    struct fair_key *k = r->_k;
    uint32_t c = r->_cls;
    band__fair_unlink_locked(f, r);
    if (*now == 0)
        *now = band_now();
    uint64_t waited = *now > r->w._since ? (uint64_t)(*now - r->w._since) : 0;
    k->wait_ns_total += waited;
    if (waited > k->wait_ns_max)
        k->wait_ns_max = waited;
    f->cls[c].wait_ns_total += waited;
    if (waited > f->cls[c].wait_ns_max)
        f->cls[c].wait_ns_max = waited;
    band__waiter_complete_locked(&r->w, 0, wl);
}

/* Pass 1: requests within their key's reservation, ahead of the round robin. */
static void serve_reserved(band_fair *f, band_time *now, struct band__wakelist *wl)
{
    struct band__node *n;
    band__list_foreach (n, &f->reserved) {
        struct fair_key *j = band__container_of(n, struct fair_key, rlink);
        if (j->nreq == 0)
            continue;
        for (uint32_t c = 0; c < f->nclasses; c++) {
            struct fair_flow *fl = &j->flow[c];
            bool granted = false;
            band_fair_acquire_op *r;
            while ((r = flow_head(fl)) != NULL) {
                uint64_t held = key_held(j), reserve = key_reserve(j), in_use = fair_in_use(f);
                if (held >= reserve || r->_n > reserve - held)
                    break;
                if (r->_n > f->capacity - in_use || in_use + r->_n > f->cls[c].limit)
                    break;
                if (!band__fair_charge(f, j, c, r->_n, reserve))
                    break; /* a handle of j took units meanwhile */
                finish_queued(f, r, now, wl);
                granted = true;
            }
            if (granted)
                flow_refresh(f, &f->cls[c], fl); /* a new head, at no round credit */
        }
    }
}

/* Pass 2 for class @c: the turn goes to the flow whose head is due first. */
static int serve_class(band_fair *f, uint32_t c, band_time *now, struct band__wakelist *wl)
{
    struct fair_class *cl = &f->cls[c];
    for (;;) {
        struct band__node *n = band__list_first(&cl->ring);
        if (n == NULL)
            return SERVE_IDLE;
        struct fair_flow *fl = flow_of(n);
        band_fair_acquire_op *r = flow_head(fl);
        if (flow_capped(fl, r)) {
            flow_park(cl, fl); /* keeps its round and place; stalls nobody */
            continue;
        }
        if (fl->due > cl->vround) {
            cl->vround = fl->due;
            if (cl->vround >= FAIR_REBASE)
                rebase_class(f, c);
        }
        if (!fits_shared(f, fl->key, c, r->_n))
            return SERVE_STALLED;
        if (!band__fair_charge(f, fl->key, c, r->_n, key_cap(fl->key))) {
            flow_park(cl, fl); /* a handle of its key reached the cap meanwhile */
            continue;
        }
        /* pay from the credit of the rounds up to the due one (the product is below n + q) */
        fl->deficit += (fl->due - fl->round) * fair_quantum(f, fl->key);
        fl->round = fl->due;
        fl->deficit -= r->_n;
        finish_queued(f, r, now, wl); /* may empty the flow, which takes it off the ring */
        flow_refresh(f, cl, fl);      /* stays first while its credit covers the next head */
    }
}

void band__fair_dispatch_locked(band_fair *f, struct band__wakelist *wl)
{
    for (uint32_t c = 0; c < f->nclasses; c++)
        f->cls[c].stalled = false;
    if (!f->closed && f->q.len > 0) {
        band_time now = 0;
        serve_reserved(f, &now, wl);
        for (uint32_t c = 0; c < f->nclasses; c++) {
            if (serve_class(f, c, &now, wl) == SERVE_STALLED) {
                f->cls[c].stalled = true;
                break; /* less urgent classes wait behind a stalled more urgent one */
            }
        }
    }
    band__fair_gate_sync_locked(f);
}

#ifdef BAND_TESTING
int band__fair_check_sched_locked(const band_fair *f)
{
    /* The dispatch ran to its fixpoint before the lock was last released: */
    /* 1. no request within its key's reservation that fits is left queued; */
    const struct band__node *n;
    band__list_foreach (n, &f->reserved) {
        const struct fair_key *j = band__container_of(n, struct fair_key, rlink);
        for (uint32_t c = 0; c < f->nclasses; c++) {
            const band_fair_acquire_op *r = flow_head(&j->flow[c]);
            uint64_t held = key_held(j), reserve = key_reserve(j), in_use = fair_in_use(f);
            if (r != NULL && held < reserve && r->_n <= reserve - held &&
                r->_n <= f->capacity - in_use && in_use + r->_n <= f->cls[c].limit && !f->closed)
                return -__LINE__;
        }
    }
    /* 2. every class: the ring is ordered by (due, stamp) with each due up to date, and
     *    every parked flow is at its cap for its head (a release that lowers a key below
     *    its cap puts the flow back on the ring at once); */
    for (uint32_t c = 0; c < f->nclasses; c++) {
        const struct fair_class *cl = &f->cls[c];
        const struct fair_flow *prev = NULL;
        uint64_t ring = 0, parked = 0;
        band__list_foreach (n, &cl->ring) {
            const struct fair_flow *fl = flow_of((struct band__node *)n);
            if (fl->parked || fl->nreq == 0 || fl->due != flow_due(f, fl) ||
                fl->due < cl->vround - FAIR_LAG || fl->stamp > cl->stamps ||
                (prev != NULL && !flow_before(prev, fl)))
                return -__LINE__;
            prev = fl;
            ring++;
        }
        band__list_foreach (n, &cl->parked) {
            const struct fair_flow *fl = flow_of((struct band__node *)n);
            if (!fl->parked || fl->nreq == 0 || !flow_capped(fl, flow_head(fl)))
                return -__LINE__;
            parked++;
        }
        if (parked != cl->nparked || ring + parked != cl->active || cl->vround < FAIR_LAG ||
            cl->vround >= FAIR_REBASE)
            return -__LINE__;
    }
    /* 3. from the most urgent class (0) to the first stalled one, a class that is not
     *    stalled has nothing on its ring (every active flow is parked); a stalled class's
     *    turn is below its cap, due in the current round, and does not fit; classes less
     *    urgent than a stalled one are not marked stalled. */
    bool past_stall = false;
    for (uint32_t c = 0; c < f->nclasses; c++) {
        const struct fair_class *cl = &f->cls[c];
        if (past_stall) {
            if (cl->stalled)
                return -__LINE__;
            continue;
        }
        if (cl->stalled) {
            const struct band__node *first = band__list_first(&cl->ring);
            if (first == NULL)
                return -__LINE__;
            const struct fair_flow *fl = flow_of((struct band__node *)first);
            const band_fair_acquire_op *r = flow_head(fl);
            if (fl->due > cl->vround || flow_capped(fl, r) || fits_shared(f, fl->key, c, r->_n))
                return -__LINE__;
            past_stall = true;
            continue;
        }
        if (!band__list_empty(&cl->ring))
            return -__LINE__;
    }
    return 0;
}
#endif /* BAND_TESTING */

/*
 * fair_sched.c - who gets the capacity of a band_fair: reservations, priority classes and
 * deficit round robin over keys.
 *
 * Design notes
 * ------------
 * The rules (docs/fair.md states them for users). Let free = capacity - in_use. A request
 * of n units of key k in class c FITS when
 *   (1) k.held + n <= k.cap                                  (per-key cap)
 *   (2) n <= free and in_use + n <= threshold[c]             (capacity, class headroom)
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
 *      reservation and (2) are granted, highest class first. They cost no DRR credit.
 *   2. Classes from the highest down, each by deficit round robin over its active flows
 *      (a flow = one key's queue in one class). The first flow on the class ring has the
 *      turn. When its turn starts it gains quantum = weight * base quantum. While its head
 *      request costs no more than its credit, the head is granted if it FITS; if it does not
 *      fit, the class STALLS (the turn keeps its credit and waits for capacity) and so does
 *      every lower class. When the head costs more than the credit, the turn passes (the
 *      flow moves to the ring's tail, keeping its credit). A flow whose key is at its cap is
 *      passed over (its turn ends, keeping its credit, gaining none), and stalls nobody. An emptied
 * flow leaves the ring and loses its credit (DRR: no banking while idle). A new request is granted
 * at once only if it FITS, its key has nothing queued in its class, and no class at or above it is
 * stalled (a request within the key's reservation ignores stalls, as in the reservation pass): it
 * never overtakes a request the dispatch would serve first.
 *
 * Termination and cost. A full pass over a ring without a grant means every flow is capped
 * or short of credit. Instead of spinning the rounds needed for the cheapest head to afford
 * its request (n / quantum of them), skip_ahead() credits every uncapped flow with that many
 * rounds at once (minus one), which is exactly what spinning would do. Each grant takes at
 * least one unit, so a dispatch makes at most (grants + 2) passes. The borrowing check
 * walks the list of reserved keys: O(reserved keys * classes) per grant.
 *
 * No deadlock from reservations: a protected key's request within its reservation is
 * granted by pass 1 as soon as it fits (2), so when nothing is held every protected head
 * is served, and a request blocked only by others' reservations waits for releases.
 */
#include "prim/fair/fair_internal.h"

enum { SERVE_IDLE, SERVE_STALLED };

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t fair_quantum(const band_fair *f, const struct fair_key *k)
{
    return (uint64_t)k->weight * f->quantum; /* <= 2^16 * 2^32: no overflow */
}

static band_fair_req *flow_head(const struct fair_flow *fl)
{
    struct band__node *n = band__list_first(&fl->reqs);
    return n == NULL ? NULL : band__fair_req_of(band__waiter_of(n));
}

/* Is @j waiting for a request that fits within its unused reservation? */
static bool key_protected(const band_fair *f, const struct fair_key *j)
{
    if (j->nreq == 0 || j->held >= j->reserve)
        return false;
    for (uint32_t c = 0; c < f->nclasses; c++) {
        const band_fair_req *r = flow_head(&j->flow[c]);
        if (r != NULL && r->n <= j->reserve - j->held)
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
            sum += j->reserve - j->held; /* reservations sum to at most the capacity */
    }
    return sum;
}

/* Rules (2) and (3) above; the caller checked the cap. */
static bool fits_shared(const band_fair *f, const struct fair_key *k, uint32_t c, uint64_t n)
{
    uint64_t free = f->capacity - f->in_use;
    if (n > free || f->in_use + n > f->cls[c].threshold)
        return false;
    if (k->held + n <= k->reserve)
        return true;
    return free - n >= protected_except(f, k);
}

bool band__fair_can_grant_now(const band_fair *f, const struct fair_key *k, uint32_t c, uint64_t n)
{
    if (!band__list_empty(&k->flow[c].reqs))
        return false; /* its own earlier requests go first */
    if (n > k->cap || k->held > k->cap - n)
        return false;
    uint64_t free = f->capacity - f->in_use;
    if (n > free || f->in_use + n > f->cls[c].threshold)
        return false;
    if (k->held + n <= k->reserve)
        return true;
    for (uint32_t c2 = c; c2 < f->nclasses; c2++)
        if (f->cls[c2].stalled)
            return false;
    return free - n >= protected_except(f, k);
}

void band__fair_charge(band_fair *f, struct fair_key *k, uint32_t c, uint64_t n)
{
    k->held += n;
    f->in_use += n;
    k->granted++;
    k->granted_units += n;
    f->cls[c].granted++;
    f->cls[c].granted_units += n;
}

void band__fair_enqueue_locked(band_fair *f, struct fair_key *k, band_fair_req *r, band_time now)
{
    struct fair_flow *fl = &k->flow[r->cls];
    struct fair_class *cl = &f->cls[r->cls];
    r->_k = k;
    r->w._u.want = r->n;
    r->w._since = now;
    band__list_add_tail(&fl->reqs, &r->w._link);
    if (fl->nreq++ == 0) {
        fl->deficit = 0;
        fl->turn = false;
        band__list_add_tail(&cl->ring, &fl->ring);
        cl->active++;
    }
    k->nreq++;
    k->waiting_units += r->n;
    k->queued++;
    cl->nreq++;
    cl->waiting_units += r->n;
    cl->queued++;
    f->q.len++;
    band__waiter_set(&r->w, &f->q, BAND__W_QUEUED);
}

void band__fair_unlink_locked(band_fair *f, band_fair_req *r)
{
    struct fair_key *k = r->_k;
    struct fair_flow *fl = &k->flow[r->cls];
    struct fair_class *cl = &f->cls[r->cls];
    band__list_del_init(&r->w._link);
    if (--fl->nreq == 0) {
        band__list_del_init(&fl->ring);
        cl->active--;
        fl->deficit = 0;
        fl->turn = false;
    }
    k->nreq--;
    k->waiting_units -= r->n;
    cl->nreq--;
    cl->waiting_units -= r->n;
    f->q.len--;
}

/* Grant queued @r: unlink, charge, record its wait, move it onto @wl. */
static void grant_queued(band_fair *f, band_fair_req *r, band_time *now, struct band__wakelist *wl)
{
    struct fair_key *k = r->_k;
    uint32_t c = r->cls;
    uint64_t n = r->n;
    band__fair_unlink_locked(f, r);
    band__fair_charge(f, k, c, n);
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
        for (uint32_t c = f->nclasses; c-- > 0 && j->nreq > 0;) {
            band_fair_req *r;
            while ((r = flow_head(&j->flow[c])) != NULL) {
                if (j->held >= j->reserve || r->n > j->reserve - j->held)
                    break;
                if (r->n > f->capacity - f->in_use || f->in_use + r->n > f->cls[c].threshold)
                    break;
                grant_queued(f, r, now, wl);
            }
        }
    }
}

static bool flow_capped(const struct fair_flow *fl, const band_fair_req *r)
{
    const struct fair_key *k = fl->key;
    return r->n > k->cap || k->held > k->cap - r->n;
}

/*
 * A full pass found every flow capped or short of credit: credit every uncapped flow with
 * the rounds the cheapest one still needs, minus one. Returns false when every flow is
 * capped (nothing to do until a release).
 */
static bool skip_ahead(band_fair *f, struct fair_class *cl)
{
    uint64_t rounds = UINT64_MAX;
    struct band__node *n;
    band__list_foreach (n, &cl->ring) {
        struct fair_flow *fl = band__container_of(n, struct fair_flow, ring);
        const band_fair_req *r = flow_head(fl);
        if (flow_capped(fl, r))
            continue;
        uint64_t q = fair_quantum(f, fl->key);
        uint64_t need = r->n > fl->deficit ? r->n - fl->deficit : 0;
        uint64_t rr = need / q + (need % q != 0);
        if (rr < rounds)
            rounds = rr;
    }
    if (rounds == UINT64_MAX)
        return false;
    if (rounds <= 1)
        return true;
    band__list_foreach (n, &cl->ring) {
        struct fair_flow *fl = band__container_of(n, struct fair_flow, ring);
        if (flow_capped(fl, flow_head(fl)))
            continue;
        uint64_t q = fair_quantum(f, fl->key);
        uint64_t add = rounds - 1 > UINT64_MAX / q ? UINT64_MAX : (rounds - 1) * q;
        fl->deficit = sat_add(fl->deficit, add);
    }
    return true;
}

/* Move the first flow of @cl's ring to its tail. */
static void ring_rotate(struct fair_class *cl, struct fair_flow *fl)
{
    band__list_del_init(&fl->ring);
    band__list_add_tail(&cl->ring, &fl->ring);
}

/* Pass 2 for class @c: deficit round robin until idle or stalled. */
static int serve_class(band_fair *f, uint32_t c, band_time *now, struct band__wakelist *wl)
{
    struct fair_class *cl = &f->cls[c];
    uint64_t misses = 0; /* flows passed since the last grant */
    for (;;) {
        struct band__node *n = band__list_first(&cl->ring);
        if (n == NULL)
            return SERVE_IDLE;
        if (misses >= cl->active) {
            if (!skip_ahead(f, cl))
                return SERVE_IDLE;
            misses = 0;
        }
        struct fair_flow *fl = band__container_of(n, struct fair_flow, ring);
        band_fair_req *r = flow_head(fl);
        if (flow_capped(fl, r)) {
            fl->turn = false; /* its turn ends; the credit it has left carries over */
            ring_rotate(cl, fl);
            misses++;
            continue;
        }
        if (!fl->turn) {
            fl->deficit = sat_add(fl->deficit, fair_quantum(f, fl->key));
            fl->turn = true;
        }
        if (r->n > fl->deficit) {
            fl->turn = false;
            ring_rotate(cl, fl);
            misses++;
            continue;
        }
        if (!fits_shared(f, fl->key, c, r->n))
            return SERVE_STALLED;
        fl->deficit -= r->n; /* before the grant: it may empty the flow and reset it */
        grant_queued(f, r, now, wl);
        misses = 0;
    }
}

void band__fair_dispatch_locked(band_fair *f, struct band__wakelist *wl)
{
    for (uint32_t c = 0; c < f->nclasses; c++)
        f->cls[c].stalled = false;
    if (f->closed || f->q.len == 0)
        return;
    band_time now = 0;
    serve_reserved(f, &now, wl);
    for (uint32_t c = f->nclasses; c-- > 0;) {
        if (serve_class(f, c, &now, wl) == SERVE_STALLED) {
            f->cls[c].stalled = true;
            break; /* lower classes wait behind a stalled higher class */
        }
    }
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
            const band_fair_req *r = flow_head(&j->flow[c]);
            if (r != NULL && j->held < j->reserve && r->n <= j->reserve - j->held &&
                r->n <= f->capacity - f->in_use && f->in_use + r->n <= f->cls[c].threshold &&
                !f->closed)
                return -__LINE__;
        }
    }
    /* 2. from the highest class down to the first stalled one, a class that is not stalled
     *    has only capped flows; a stalled class's turn can pay for a head that does not
     *    fit; classes below a stalled one are not marked stalled. */
    bool below_stall = false;
    for (uint32_t c = f->nclasses; c-- > 0;) {
        const struct fair_class *cl = &f->cls[c];
        if (below_stall) {
            if (cl->stalled)
                return -__LINE__;
            continue;
        }
        if (cl->stalled) {
            const struct band__node *first = band__list_first(&cl->ring);
            if (first == NULL)
                return -__LINE__;
            const struct fair_flow *fl = band__container_of(first, struct fair_flow, ring);
            const band_fair_req *r = flow_head(fl);
            if (!fl->turn || r->n > fl->deficit || flow_capped(fl, r) ||
                fits_shared(f, fl->key, c, r->n))
                return -__LINE__;
            below_stall = true;
            continue;
        }
        band__list_foreach (n, &cl->ring) {
            const struct fair_flow *fl = band__container_of(n, struct fair_flow, ring);
            if (!flow_capped(fl, flow_head(fl)))
                return -__LINE__;
        }
    }
    return 0;
}
#endif /* BAND_TESTING */

/* SPDX-License-Identifier: MIT */
/*
 * shm_queue.c - handle records, the FIFO of waiter slots, grants, and the recovery of dead
 * processes. Every function here runs with the segment's lock held.
 *
 * One queue per segment holds every waiting request in arrival order. The grant pass
 * walks it from the head with a mask of the bounds that an earlier request still waits
 * for: a request that names one of those bounds waits too (per-bound FIFO: it may not
 * overtake), and a request whose bounds are all clear is granted as soon as every part
 * fits. So a request for one bound is never held up by a waiter on another, and a
 * multi-bound request takes all of its parts in one transaction.
 */
#include <string.h>

#include "shm/shm_internal.h"

static inline struct band__shm_slot *band__slot(band_shm *s, uint64_t link)
{
    return &s->slot[link - 1];
}

/* Whether @link cannot be a queued slot: out of range, not waiting, or owned by no record.
 * The walks check every link they follow, so a segment scribbled on by a broken process
 * is rebuilt (band__shm_repair) instead of followed out of bounds. */
static int band__shm_link_bad(const band_shm *s, uint64_t link)
{
    if (link == 0 || link > s->nslots)
        return 1;
    const struct band__shm_slot *sl = &s->slot[link - 1];
    return sl->state != BAND__SLOT_WAITING || sl->record >= s->nrecords;
}

int band__shm_register_locked(struct band__shm_op *op, uint32_t *out)
{
    band_shm *s = op->s;
    struct band__shm_hdr *h = s->h;
    uint32_t pid;
    uint64_t start;
    int rc = band__shm_self_identity(&pid, &start);
    if (rc != 0)
        return rc;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t r = 0; r < s->nrecords; r++) { /* free ones above the mark too */
            struct band__shm_record *rec = &s->rec[r];
            if (rec->state != BAND__REC_FREE)
                continue;
            rec->pid = pid;
            rec->start = start;
            for (uint32_t b = 0; b < BAND_SHM_MAX_BOUNDS; b++) {
                const struct band__shm_bound *bd = &h->bounds[b];
                int quiet = b < s->nbounds && bd->waiters == 0 && bd->debt == 0 && !h->closed;
                rec->held[b] = 0;
                rec->stolen[b] = 0;
                __atomic_store_n(&rec->cache[b], quiet ? 0 : BAND__CACHE_FROZEN, __ATOMIC_RELEASE);
            }
            if (h->rec_hwm < r + 1)
                __atomic_store_n(&h->rec_hwm, r + 1, __ATOMIC_RELEASE);
            band__shm_set(s, &h->nhandles, h->nhandles + 1);
            band__shm_set(s, &rec->state, BAND__REC_LIVE);
            band__shm_commit(s);
            *out = r;
            return 0;
        }
        /* Full: the dead may be holding records. */
        if (band__shm_sweep_locked(op, 1) == 0)
            break;
    }
    return BAND_EBUSY;
}

int band__shm_self_locked(struct band__shm_op *op)
{
    band_shm *s = op->s;
    uint64_t gen = band__shm_generation();
    if (band__likely(__atomic_load_n(&s->gen, __ATOMIC_RELAXED) == gen))
        return 0;
    if (s->inspect)
        return BAND_EINVAL; /* a handle that looks only holds nothing and never will */
    /* A forked child's first use: its parent's record and waits are not its own. */
    uint32_t r;
    int rc = band__shm_register_locked(op, &r);
    if (rc != 0)
        return rc;
    band__shm_local_after_fork(s);
    s->self = r;
    __atomic_store_n(&s->gen, gen, __ATOMIC_RELEASE);
    band__shm_fast_publish(s);
    return 0;
}

void band__shm_fast_publish(band_shm *s)
{
    if (!s->fast_ok || s->inspect)
        return; /* the fast paths stay off */
    struct band__shm_record *rec = &s->rec[s->self];
    __atomic_store_n(&s->fast->held, rec->held, __ATOMIC_RELEASE);
    __atomic_store_n(&s->fast->cache, rec->cache, __ATOMIC_RELEASE); /* last: it enables */
}

int band__shm_ensure_self(band_shm *s)
{
    if (band__likely(__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == band__shm_generation()))
        return 0;
    struct band__shm_op op;
    int rc = band__shm_lock(&op, s);
    if (rc != 0)
        return rc;
    rc = band__shm_self_locked(&op);
    band__shm_unlock(&op);
    return rc;
}

static void band__shm_unlink_locked(band_shm *s, uint32_t i)
{
    struct band__shm_hdr *h = s->h;
    struct band__shm_slot *sl = &s->slot[i];
    uint64_t prev = sl->prev, next = sl->next;
    if (prev > s->nslots)
        prev = 0; /* damaged; the next walk rebuilds the queue */
    if (next > s->nslots)
        next = 0;
    if (prev != 0)
        band__shm_set(s, &band__slot(s, prev)->next, next);
    else
        band__shm_set(s, &h->qhead, next);
    if (next != 0)
        band__shm_set(s, &band__slot(s, next)->prev, prev);
    else
        band__shm_set(s, &h->qtail, prev);
    band__shm_set(s, &sl->next, 0);
    band__shm_set(s, &sl->prev, 0);
    band__shm_set(s, &h->nwaiting, h->nwaiting - 1);
    for (uint32_t b = 0; b < s->nbounds; b++) {
        if (sl->want[b] == 0)
            continue;
        struct band__shm_bound *bd = &h->bounds[b];
        band__shm_set(s, &bd->waiters, bd->waiters - 1);
        band__shm_set(s, &bd->waiting_units, bd->waiting_units - sl->want[b]);
    }
}

/* End waiting slot @i with @status and ring whoever waits for it. No commit. */
static void band__shm_complete_locked(struct band__shm_op *op, uint32_t i, int status)
{
    band_shm *s = op->s;
    struct band__shm_slot *sl = &s->slot[i];
    band__shm_unlink_locked(s, i);
    band__shm_set(s, (uint64_t *)&sl->status, (uint64_t)(int64_t)status);
    band__shm_set(s, &sl->state, BAND__SLOT_DONE);
    if (sl->flags & BAND__SLOT_ASYNC)
        band__shm_wake_later(op, &s->rec[sl->record].doorbell);
    else
        band__shm_wake_later(op, &sl->futex);
}

void band__shm_slot_free_locked(band_shm *s, uint32_t i)
{
    band__shm_set(s, &s->slot[i].state, BAND__SLOT_FREE);
    band__shm_commit(s);
}

void band__shm_withdraw_locked(struct band__shm_op *op, uint32_t i, int reason)
{
    band_shm *s = op->s;
    struct band__shm_hdr *h = s->h;
    struct band__shm_slot *sl = &s->slot[i];
    for (uint32_t b = 0; b < s->nbounds; b++) {
        if (sl->want[b] == 0)
            continue;
        if (reason == BAND_ETIMEDOUT)
            h->bounds[b].timeouts++;
        else if (reason == BAND_ECANCELED)
            h->bounds[b].cancels++;
    }
    band__shm_unlink_locked(s, i);
    band__shm_set(s, &sl->state, BAND__SLOT_FREE);
    band__shm_commit(s);
}

/* Move @u units from *@held to the bound: the debt first, then the pool. Logged, and
 * left for the caller to commit. */
static void band__shm_pool_add(band_shm *s, uint64_t *held, struct band__shm_bound *bd, uint64_t u)
{
    uint64_t repay = band__min_u64(bd->debt, u);
    band__shm_set(s, held, *held - u);
    if (repay != 0)
        band__shm_set(s, &bd->debt, bd->debt - repay);
    if (u != repay)
        band__shm_set(s, &bd->available, bd->available + (u - repay));
}

void band__shm_give_back_locked(struct band__shm_op *op, uint32_t r, const uint64_t *units)
{
    band_shm *s = op->s;
    struct band__shm_hdr *h = s->h;
    struct band__shm_record *rec = &s->rec[r];
    for (uint32_t b = 0; b < s->nbounds; b++)
        if (units[b] != 0)
            band__shm_pool_add(s, &rec->held[b], &h->bounds[b], units[b]);
    band__shm_commit(s);
}

void band__shm_reclaim_record_locked(struct band__shm_op *op, uint32_t r)
{
    band_shm *s = op->s;
    struct band__shm_hdr *h = s->h;
    for (uint32_t i = 0; i < s->nslots; i++) {
        struct band__shm_slot *sl = &s->slot[i];
        if (sl->state == BAND__SLOT_FREE || sl->record != r)
            continue;
        if (sl->state == BAND__SLOT_WAITING) {
            h->dead_waiters++;
            band__shm_withdraw_locked(op, i, 0);
        } else {
            band__shm_slot_free_locked(s, i); /* a grant's units are already in held */
        }
    }
    struct band__shm_record *rec = &s->rec[r];
    for (uint32_t b = 0; b < s->nbounds; b++) {
        /* Counted are the units it was using; its cache was free for the taking. */
        __atomic_fetch_or(&rec->cache[b], BAND__CACHE_FROZEN, __ATOMIC_ACQ_REL);
        h->bounds[b].reclaimed += rec->held[b] - band__shm_cached(s, r, b);
        /* Its process is gone, so nothing adds to the word any more. */
        band__shm_set(s, &rec->cache[b], BAND__CACHE_FROZEN);
        band__shm_set(s, &rec->stolen[b], 0);
    }
    uint64_t held[BAND_SHM_MAX_BOUNDS];
    memcpy(held, rec->held, sizeof held);
    band__shm_give_back_locked(op, r, held);
    band__shm_set(s, &h->nhandles, h->nhandles - 1);
    band__shm_set(s, &rec->state, BAND__REC_FREE);
    band__shm_commit(s);
    band__shm_grant_pass_locked(op);
}

unsigned band__shm_sweep_locked(struct band__shm_op *op, int force)
{
    band_shm *s = op->s;
    struct band__shm_hdr *h = s->h;
    band_time now = band_now();
    if (!force && (uint64_t)now - h->last_check_ns < (uint64_t)BAND__SHM_CHECK_NS)
        return 0;
    h->last_check_ns = (uint64_t)now;
    uint32_t mypid;
    uint64_t mystart;
    if (band__shm_self_identity(&mypid, &mystart) != 0)
        return 0;
    unsigned dead = 0;
    for (uint32_t r = 0, nrec = band__shm_nrec(s); r < nrec; r++) {
        struct band__shm_record *rec = &s->rec[r];
        if (rec->state != BAND__REC_LIVE)
            continue;
        if (rec->pid == mypid && rec->start == mystart)
            continue;
        if (band__shm_alive((uint32_t)rec->pid, rec->start))
            continue;
        band__shm_reclaim_record_locked(op, r);
        h->dead_handles++;
        dead++;
    }
    return dead;
}

static int band__shm_fits(const band_shm *s, const struct band__shm_slot *sl)
{
    const struct band__shm_hdr *h = s->h;
    for (uint32_t b = 0; b < s->nbounds; b++)
        if (sl->want[b] > h->bounds[b].available)
            return 0;
    return 1;
}

static void band__shm_grant_locked(struct band__shm_op *op, uint32_t i)
{
    band_shm *s = op->s;
    struct band__shm_hdr *h = s->h;
    struct band__shm_slot *sl = &s->slot[i];
    struct band__shm_record *rec = &s->rec[sl->record];
    for (uint32_t b = 0; b < s->nbounds; b++) {
        uint64_t u = sl->want[b];
        if (u == 0)
            continue;
        struct band__shm_bound *bd = &h->bounds[b];
        band__shm_set(s, &bd->available, bd->available - u);
        band__shm_set(s, &rec->held[b], rec->held[b] + u);
        bd->grants++;
    }
    band__shm_complete_locked(op, i, 0);
    band__shm_commit(s);
}

void band__shm_grant_pass_locked(struct band__shm_op *op)
{
    band_shm *s = op->s;
    struct band__shm_hdr *h = s->h;
    if (h->closed)
        return;
    uint64_t all = (UINT64_C(1) << s->nbounds) - 1, blocked = 0;
    uint64_t link = h->qhead;
    while (link != 0 && blocked != all) {
        if (band__shm_link_bad(s, link)) {
            band__shm_repair(s);
            return;
        }
        uint32_t i = (uint32_t)(link - 1);
        struct band__shm_slot *sl = &s->slot[i];
        link = sl->next;
        if ((sl->mask & blocked) == 0 && band__shm_fits(s, sl))
            band__shm_grant_locked(op, i);
        else
            blocked |= sl->mask;
    }
}

/* Fail every waiting slot whose part of bound @b exceeds its capacity, or all when @b is
 * nbounds (close). */
static void band__shm_fail_locked(struct band__shm_op *op, uint32_t b, int status)
{
    band_shm *s = op->s;
    struct band__shm_hdr *h = s->h;
    uint64_t link = h->qhead;
    while (link != 0) {
        if (band__shm_link_bad(s, link)) {
            band__shm_repair(s);
            return;
        }
        uint32_t i = (uint32_t)(link - 1);
        struct band__shm_slot *sl = &s->slot[i];
        link = sl->next;
        if (b < s->nbounds && sl->want[b] <= h->bounds[b].capacity)
            continue;
        for (uint32_t k = 0; k < s->nbounds; k++) {
            if (sl->want[k] == 0)
                continue;
            if (status == BAND_ECLOSED)
                h->bounds[k].closed_fails++;
            else
                h->bounds[k].too_big++;
        }
        band__shm_complete_locked(op, i, status);
        band__shm_commit(s);
    }
}

void band__shm_close_locked(struct band__shm_op *op)
{
    band_shm *s = op->s;
    struct band__shm_hdr *h = s->h;
    if (h->closed)
        return;
    band__shm_set(op->s, &h->closed, 1);
    band__shm_commit(op->s);
    for (uint32_t b = 0; b < s->nbounds; b++)
        band__shm_steal_locked(op->s, b);
    band__shm_fail_locked(op, s->nbounds, BAND_ECLOSED);
}

void band__shm_fail_too_big_locked(struct band__shm_op *op, uint32_t b)
{
    band__shm_fail_locked(op, b, BAND_E2BIG);
}

int band__shm_want_from(const band_shm *s, const band_shm_req *r, struct band__shm_want *out)
{
    memset(out, 0, sizeof *out);
    if (r->n > BAND_SHM_REQ_MAX)
        return BAND_EINVAL;
    for (uint32_t k = 0; k < r->n; k++) {
        uint32_t b = r->bound[k];
        if (b >= s->nbounds || r->units[k] > BAND_MAX_UNITS)
            return BAND_EINVAL;
        if (out->units[b] + r->units[k] > BAND_MAX_UNITS)
            return BAND_EOVERFLOW;
        out->units[b] += r->units[k];
        if (out->units[b] != 0)
            out->mask |= UINT64_C(1) << b;
    }
    return 0;
}

int band__shm_try_locked(struct band__shm_op *op, const struct band__shm_want *want)
{
    band_shm *s = op->s;
    struct band__shm_hdr *h = s->h;
    if (h->closed)
        return BAND_ECLOSED;
    struct band__shm_record *rec = &s->rec[s->self];
    int again = 0;
    for (uint32_t b = 0; b < s->nbounds; b++) {
        uint64_t u = want->units[b];
        if (u == 0)
            continue;
        const struct band__shm_bound *bd = &h->bounds[b];
        if (u > bd->capacity) {
            h->bounds[b].too_big++;
            return BAND_E2BIG;
        }
        if (bd->waiters != 0)
            again = 1; /* never past a waiter */
        if (rec->held[b] - band__shm_cached(s, s->self, b) + u > BAND_MAX_UNITS)
            return BAND_EOVERFLOW; /* what it would use; its idle cache does not count */
    }
    if (again)
        return BAND_EAGAIN;
    /* Units idle in caches are available too: a refusal while they sit there would be
     * wrong, so a short pool takes them back first. */
    uint64_t stolen = 0;
    for (uint32_t b = 0; b < s->nbounds; b++) {
        uint64_t u = want->units[b];
        if (u == 0)
            continue;
        if (u > h->bounds[b].available)
            stolen += band__shm_steal_locked(s, b);
        if (u > h->bounds[b].available)
            return BAND_EAGAIN;
    }
    for (uint32_t b = 0; b < s->nbounds; b++) {
        uint64_t u = want->units[b];
        if (u == 0)
            continue;
        struct band__shm_bound *bd = &h->bounds[b];
        band__shm_set(s, &bd->available, bd->available - u);
        band__shm_set(s, &rec->held[b], rec->held[b] + u);
    }
    band__shm_commit(s);
    /* Units just taken from another process's cache show the bound is shared right now:
     * keep this cache frozen too, so the next release goes to the pool instead of
     * making the other process steal it back. The next quiet slow path thaws it. */
    if (stolen == 0)
        for (uint32_t b = 0; b < s->nbounds; b++)
            if (want->units[b] != 0)
                band__shm_thaw_self_locked(s, b);
    return 0;
}

uint64_t band__shm_cached_raw(const band_shm *s, uint32_t r, uint32_t b)
{
    const struct band__shm_record *rec = &s->rec[r];
    uint64_t c = band__shm_load(&rec->cache[b]) >> BAND__CACHE_SHIFT;
    uint64_t stolen = band__shm_load(&rec->stolen[b]);
    /* Below stolen only in a record whose process died in the middle of a thaw. */
    return c > stolen ? c - stolen : 0;
}

uint64_t band__shm_cached(const band_shm *s, uint32_t r, uint32_t b)
{
    uint64_t c = band__shm_cached_raw(s, r, b);
    uint64_t held = band__shm_load(&s->rec[r].held[b]);
    return c < held ? c : held;
}

uint64_t band__shm_steal_record_locked(band_shm *s, uint32_t r, uint32_t b)
{
    struct band__shm_record *rec = &s->rec[r];
    struct band__shm_bound *bd = &s->h->bounds[b];
    /* Frozen, the word is lowered by nobody until this lock is released: its owner's
     * tries refuse it and its slow paths wait here. Its releases may still add to it,
     * and are counted from then on. Freezing alone is harmless to leave behind, so it
     * needs no log entry; the move of the units does, and it raises stolen instead of
     * writing the word, so a rollback cannot undo an add it never saw. */
    __atomic_fetch_or(&rec->cache[b], BAND__CACHE_FROZEN, __ATOMIC_ACQ_REL);
    uint64_t c = band__shm_cached_raw(s, r, b);
    if (c == 0 || c > rec->held[b])
        return 0; /* above held: a release that returned too much, still being undone */
    band__shm_set(s, &rec->stolen[b], rec->stolen[b] + c);
    band__shm_pool_add(s, &rec->held[b], bd, c);
    band__shm_commit(s);
    return c;
}

uint64_t band__shm_steal_locked(band_shm *s, uint32_t b)
{
    uint64_t others = 0;
    for (uint32_t r = 0, nrec = band__shm_nrec(s); r < nrec; r++) {
        if (s->rec[r].state != BAND__REC_LIVE)
            continue;
        uint64_t c = band__shm_steal_record_locked(s, r, b);
        if (r != s->self)
            others += c;
    }
    return others;
}

void band__shm_thaw_self_locked(band_shm *s, uint32_t b)
{
    struct band__shm_hdr *h = s->h;
    const struct band__shm_bound *bd = &h->bounds[b];
    struct band__shm_record *rec = &s->rec[s->self];
    uint64_t *word = &rec->cache[b];
    uint64_t w = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if ((w & BAND__CACHE_FROZEN) == 0 || bd->waiters != 0 || bd->debt != 0 || h->closed)
        return;
    /* The units steals took leave the word first, while it is still frozen: only this
     * process lowers it, and its tries wait for the flag to clear. A death before the
     * commit leaves a record that recovery returns by held alone. */
    uint64_t stolen = rec->stolen[b];
    if (stolen != 0) {
        __atomic_fetch_sub(word, stolen << BAND__CACHE_SHIFT, __ATOMIC_ACQ_REL);
        band__shm_set(s, &rec->stolen[b], 0);
        band__shm_commit(s);
    }
    /* From here on the owner's threads take from the word again. */
    __atomic_fetch_and(word, ~BAND__CACHE_FROZEN, __ATOMIC_RELEASE);
}

int band__shm_enqueue_locked(struct band__shm_op *op, const struct band__shm_want *want,
                             uint64_t flags, uint32_t *slot)
{
    band_shm *s = op->s;
    struct band__shm_hdr *h = s->h;
    for (uint32_t b = 0; b < s->nbounds; b++)
        if (h->bounds[b].waiting_units + want->units[b] < want->units[b])
            return BAND_EOVERFLOW;
    if (h->qtail > s->nslots || h->qhead > s->nslots)
        band__shm_repair(s);
    uint32_t i = 0;
    while (i < s->nslots && s->slot[i].state != BAND__SLOT_FREE)
        i++;
    if (i == s->nslots)
        return BAND_EBUSY;
    /* While it waits, every release of its bounds must reach the pool, in order. */
    for (uint32_t b = 0; b < s->nbounds; b++)
        if (want->units[b] != 0)
            band__shm_steal_locked(s, b);
    /* A free slot's fields other than its state and links mean nothing until it waits,
     * so they are written directly; only what makes it wait is logged. */
    struct band__shm_slot *sl = &s->slot[i];
    sl->record = s->self;
    sl->seq = h->seq_next;
    sl->since = (uint64_t)band_now();
    sl->flags = flags;
    sl->mask = want->mask;
    sl->status = 0;
    memcpy(sl->want, want->units, sizeof sl->want);
    band__shm_set(s, &h->seq_next, h->seq_next + 1);
    band__shm_set(s, &sl->prev, h->qtail);
    band__shm_set(s, &sl->next, 0);
    if (h->qtail != 0)
        band__shm_set(s, &band__slot(s, h->qtail)->next, i + 1);
    else
        band__shm_set(s, &h->qhead, i + 1);
    band__shm_set(s, &h->qtail, i + 1);
    band__shm_set(s, &h->nwaiting, h->nwaiting + 1);
    for (uint32_t b = 0; b < s->nbounds; b++) {
        if (want->units[b] == 0)
            continue;
        struct band__shm_bound *bd = &h->bounds[b];
        band__shm_set(s, &bd->waiters, bd->waiters + 1);
        band__shm_set(s, &bd->waiting_units, bd->waiting_units + want->units[b]);
        bd->queued++;
    }
    band__shm_set(s, &sl->state, BAND__SLOT_WAITING);
    band__shm_commit(s);
    *slot = i;
    /* The steal above may have freed enough for the requests ahead, or for this one. */
    band__shm_grant_pass_locked(op);
    return 0;
}

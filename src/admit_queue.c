/*
 * admit_queue.c - where a request's nodes sit in the budgets' queues, and how a request
 * moves from waiting to granted (all of its locks held).
 *
 * Global order. Every request that queues gets a ticket from one counter (under the
 * admission mutex) and a class (guaranteed or not, admit_tree.c). Its key is (class,
 * ticket): guaranteed first, then by ticket. In every queue the nodes of requests appear
 * in key order, so the queues agree with one global order of requests and "waits behind"
 * cannot form a cycle (admit_eval.c's design notes). Plain waiters (band_sem_acquire and
 * friends) queue at the tail as always; they sit in one queue only, so they cannot close
 * a cycle whatever their place, and requests keep the place FIFO gave them relative to
 * plain waiters: a non-guaranteed request is never put ahead of a plain waiter that
 * queued before it, except to stay ahead of a request with a later key (stage joins).
 *
 * Stages. Entries added one by one are stage 0; band_admit_req_add_tree() numbers a path
 * from the leaf (0) to the root. A request joins the queues of stage k only once it is the
 * head with enough free units in every queue of the stages below: a tenant at its cap
 * waits in the tenant's queue only and does not hold up its ancestors, whose capacity
 * stays with the others (work-conserving). Joining later still sorts by the ticket taken
 * when it first queued, so the order stays global. With no tree all entries are stage 0
 * and a request joins all of its queues at one instant.
 */
#include "admit_internal.h"

/* Does @a rank before @b? */
static int admit_key_less(const band_admit_req *a, const band_admit_req *b)
{
    int ga = (a->_flags & BAND__ADMIT_GUARANTEED) != 0;
    int gb = (b->_flags & BAND__ADMIT_GUARANTEED) != 0;
    if (ga != gb)
        return ga;
    return a->_ticket < b->_ticket;
}

static int admit_is_front(const band_waiter *w)
{
    return w->data == (const void *)&band__sem_front_tag;
}

/* The node before which @r's node goes in @s's queue (non-empty), &q.head for the tail. */
static struct band__node *admit_slot(band_sem *s, const band_admit_req *r)
{
    struct band__node *node;
    if (r->_flags & BAND__ADMIT_GUARANTEED) {
        /* Behind shortfalls of admitted grants and earlier guaranteed requests, ahead of
         * everything else. */
        band__list_foreach (node, &s->q.head) {
            band_waiter *w = band__waiter_of(node);
            if (admit_is_front(w))
                continue;
            if (band__is_proxy(w) && admit_key_less(w->data, r))
                continue;
            return node;
        }
        return &s->q.head;
    }
    if (r->_ticket > s->admit_max_ticket)
        return &s->q.head; /* the newest request here: the tail, O(1) */
    /* A later stage joining: ahead of every request with a later key, behind the rest. */
    struct band__node *slot = &s->q.head;
    for (node = s->q.head.prev; node != &s->q.head; node = node->prev) {
        band_waiter *w = band__waiter_of(node);
        if (admit_is_front(w))
            break;
        if (band__is_proxy(w)) {
            if (admit_key_less(w->data, r))
                break;
            slot = node;
        }
    }
    return slot;
}

/* Queue @r's node of entry @i in its semaphore (all locks held). */
static void admit_push_locked(band_admit_req *r, unsigned i, band_time now)
{
    band_sem *s = r->e[i].sem;
    band_waiter *node = &r->e[i]._node;
    node->data = r;
    if (s->q.len == 0) {
        /* The first waiter: what is available is set aside for it, as for any head. */
        s->head_got = band__sem_become_slow_locked(s);
        band__waitq_push_locked(&s->q, node, r->e[i].amount, now);
    } else {
        /* A new head inherits the free units set aside for the old one. */
        band__waitq_insert_locked(&s->q, node, admit_slot(s, r), r->e[i].amount, now);
    }
    if (r->_ticket > s->admit_max_ticket)
        s->admit_max_ticket = r->_ticket;
    s->q_units += r->e[i].amount;
    s->nproxy++;
    s->queued++;
}

/* Are @r's nodes of the joined stages each the head of their queue with enough free
 * units (and no sweep pending there)? All locks held. */
static int admit_joined_ready_locked(const band_admit_req *r)
{
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->e[i].amount == 0 || r->_stage[i] >= r->_joined)
            continue;
        const band_waiter *node = &r->e[i]._node;
        band_sem *s = r->e[i].sem;
        if (band__waiter_state(node) != BAND__W_QUEUED || band__waitq_first(&s->q) != node ||
            s->head_got < node->_u.want || s->admit_sweep)
            return 0;
    }
    return 1;
}

/* Refusals for the entries of stage @k: 0, BAND_ECLOSED, BAND_E2BIG, BAND_EOVERFLOW. */
static int admit_stage_check_locked(const band_admit_req *r, unsigned k)
{
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->_stage[i] != k || r->e[i].amount == 0)
            continue;
        band_sem *s = r->e[i].sem;
        if (atomic_load_explicit(&s->state, memory_order_relaxed) & BAND__SEM_CLOSED)
            return BAND_ECLOSED;
        if (r->e[i].amount > atomic_load_explicit(&s->limit, memory_order_relaxed))
            return BAND_E2BIG;
        if (r->e[i].amount > UINT64_MAX - s->q_units)
            return BAND_EOVERFLOW;
    }
    return 0;
}

int band__admit_advance_locked(band_admit_req *r, struct band__wakelist *wl)
{
    for (;;) {
        if (!admit_joined_ready_locked(r))
            return 0;
        if (r->_joined >= r->_nstages) {
            for (uint32_t i = 0; i < r->n; i++) {
                if (band__waiter_state(&r->e[i]._node) == BAND__W_QUEUED)
                    band__admit_remove_locked(r, i, 1, 0, wl);
            }
            return 1;
        }
        int rc = admit_stage_check_locked(r, r->_joined);
        if (rc != 0)
            return rc;
        band_time now = band_now();
        for (uint32_t i = 0; i < r->n; i++) {
            if (r->_stage[i] == r->_joined && r->e[i].amount > 0)
                admit_push_locked(r, i, now);
        }
        r->_joined++;
    }
}

void band__admit_start_locked(band_admit_req *r)
{
    static uint64_t tickets; /* admission mutex */
    r->_ticket = ++tickets;
    r->_joined = 0;
    uint8_t top = 0;
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->_stage[i] > top)
            top = r->_stage[i];
    }
    r->_nstages = (uint8_t)(top + 1);
    r->w._since = band_now();
}

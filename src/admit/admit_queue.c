/* SPDX-License-Identifier: MIT */
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
 * and a request joins all of its queues at one instant. Until it joins a stage, each entry
 * of that stage watches its budget (sem_priv.h), so that a close or shrink there still
 * fails the request at once.
 */
#include "admit/admit_internal.h"

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

/* The queued node of @s before which @r's node of stage @stage goes, NULL for the tail. */
static band_waiter *admit_slot(band_sem *s, const band_admit_req *r, unsigned stage)
{
    struct band__waitq *q = band__sem_queue(s);
    struct band__node *node;
    if (q->len == 0)
        return NULL;
    if (r->_flags & BAND__ADMIT_GUARANTEED) {
        /* Behind shortfalls of admitted grants and earlier guaranteed requests, ahead of
         * everything else. */
        band__list_foreach (node, &q->head) {
            band_waiter *w = band__waiter_of(node);
            if (admit_is_front(w))
                continue;
            if (band__admit_is_node(w) && admit_key_less(band__admit_owner(w), r))
                continue;
            return w;
        }
        return NULL;
    }
    if (stage == 0)
        return NULL; /* it just took the newest ticket: every request queued is older */
    /* A later stage joining: ahead of every request with a later key, behind the rest.
     * Walks back from the tail over the requests with later keys and the plain waiters
     * among them (there are none when the node's budget serves only admissions). */
    band_waiter *slot = NULL;
    for (node = q->head.prev; node != &q->head; node = node->prev) {
        band_waiter *w = band__waiter_of(node);
        if (admit_is_front(w))
            break;
        if (band__admit_is_node(w)) {
            if (admit_key_less(band__admit_owner(w), r))
                break;
            slot = w;
        }
    }
    return slot;
}

/* Queue @r's node of entry @i in its semaphore (all locks held). A node of a later stage
 * stops watching first. */
static void admit_push_locked(band_admit_req *r, unsigned i, band_time now)
{
    band_sem *s = r->e[i].sem;
    band_waiter *node = &r->e[i]._node;
    if (r->_stage[i] > 0)
        band__sem_unwatch_locked(s, node);
    band__sem_smart_push_locked(s, node, admit_slot(s, r, r->_stage[i]), r->e[i].amount, now);
}

/* Are @r's nodes of the joined stages each the head of their queue with enough set aside?
 * All locks held. */
static int admit_joined_ready_locked(const band_admit_req *r)
{
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->e[i].amount == 0 || r->_stage[i] >= r->_joined)
            continue;
        if (!band__sem_smart_covered_locked(r->e[i].sem, &r->e[i]._node))
            return 0;
    }
    return 1;
}

/* Room in the queues of stage @k: 0 or BAND_EOVERFLOW. Closed and too-small budgets were
 * refused before (band__admit_refusal_locked()). */
static int admit_stage_check_locked(const band_admit_req *r, unsigned k)
{
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->_stage[i] == k && r->e[i].amount > 0 &&
            !band__sem_room_locked(r->e[i].sem, r->e[i].amount))
            return BAND_EOVERFLOW;
    }
    return 0;
}

int band__admit_advance_locked(band_admit_req *r)
{
    for (;;) {
        if (!admit_joined_ready_locked(r))
            return 0;
        if (r->_joined >= r->_nstages)
            return 1;
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
        /* A level it has not reached: it hears of that budget's close and shrink. */
        if (r->_stage[i] > 0 && r->e[i].amount > 0)
            band__sem_watch_locked(r->e[i].sem, &r->e[i]._node, r->e[i].amount);
    }
    r->_nstages = (uint8_t)(top + 1);
    r->w._since = band_now();
}

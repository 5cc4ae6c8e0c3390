/* SPDX-License-Identifier: MIT */
/*
 * admit_eval.c - deciding multi-budget requests: the nodes' ops, the inbox, grant, fail,
 * cancel.
 *
 * Design notes
 * ------------
 * Nodes. A pending request has one smart node (core/waitq.h) per budget it names
 * (entry._node, whose data points at the request's _ops): queued in that budget's wait
 * queue, or watching it while the request has not reached that tree level. The request's
 * own waiter sits on no queue; its state points at band__admit_q, whose lock is the
 * admission mutex, so band_waiter_cancel() on it takes that mutex and calls
 * admit_cancel_locked().
 *
 * The seam. The semaphore calls a node's ops with its lock held: ready when the node is
 * the head of its queue with its amount set aside, changed when the budget closed or its
 * capacity fell below the amount. Both do the same here: put the request in the inbox and
 * set the wake list's post to admit_drain_post(), which takes no argument. So nothing the
 * admission does after the semaphore's operation unlocked refers to that semaphore, which
 * a wake may have destroyed by then; it refers only to requests in the inbox.
 *
 * The inbox. Requests to evaluate, linked through the request's own waiter's _link
 * (unused while the request is pending): a lock-free stack the semaphores push onto
 * under their locks, which the admission mutex's holder moves into a FIFO it alone
 * reads (below). A request is in the inbox only while pending:
 * it is added with a lock held under which one of its nodes is queued or watching, and it
 * is taken out, under the admission mutex, before its waiter ends. So a request found in
 * the inbox under the admission mutex is pending and alive, and so are its budgets (a
 * budget with a node queued or watching cannot be destroyed).
 *
 * Lock order. band__admit_mu, then semaphore locks in ascending address order (a request's
 * _order); the inbox takes no lock. Semaphore operations hold one semaphore lock and never
 * wait for the admission mutex; the post runs after they unlocked. No cycle, so no
 * deadlock.
 *
 * One global order. A request joins all of the queues of a stage while holding the
 * admission mutex and all of their locks, i.e. at one instant; a plain acquisition joins
 * its one queue at one instant under that queue's lock. So the order of every queue agrees
 * with one global order of queueing instants (guaranteed-class requests of a hierarchy
 * sort ahead of the rest, by a class fixed for the request in all queues, and later tree
 * levels sort by the request's first ticket: admit_queue.c). "X waits behind Y" therefore
 * never forms a cycle, and the globally first waiter is the head of each of its queues.
 *
 * Holds nothing, takes everything at once. The units set aside for a node at the head
 * are not the request's: if it is cancelled they go on to the next waiter. A request is
 * granted only when, with all of its locks held, it is the head of every queue it is in
 * and every set-aside covers its amount; it then takes all amounts and leaves all queues
 * in one step.
 *
 * No lost evaluation. A request becomes grantable only through an event on one of its
 * budgets that makes "head with enough" true there, and it must fail only through a close
 * or capacity change of one of them; the semaphore calls the node's ops for each, which
 * puts the request in the inbox before that lock is dropped. Whoever adds to the inbox
 * either holds the admission mutex (and drains before releasing it) or has set its post,
 * which drains after it; a callback that finds its request in the inbox already sets no
 * post, because the drain owed to whoever put it there evaluates it after this event. An evaluation
 * re-reads everything under the locks, so a stale one is harmless. While the admission mutex is
 * held a pending request cannot be cancelled or completed by anybody else.
 *
 * Cascades (a grant frees units that make the next head grantable) go through the inbox
 * too: no recursion, no allocation.
 */
#include "admit/admit_internal.h"

static void admit_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                struct band__wakelist *wl);

static const struct band__waitq_ops admit_ops = {admit_cancel_locked};

pthread_mutex_t band__admit_mu = PTHREAD_MUTEX_INITIALIZER;

struct band__waitq band__admit_q = {
    {&band__admit_q.head, &band__admit_q.head}, 0, &band__admit_mu, &admit_ops};

/*
 * Requests to evaluate. The semaphores add to it under their own locks, so it is in two
 * parts: a lock-free stack that they push onto (linked through the request's waiter's
 * _link.next), and a FIFO guarded by the admission mutex that its holder moves the stack
 * into, oldest first, before reading it. A request's _inbox (atomic) says it is in one of
 * the two: whoever sets it from 0 pushes the request, so it is pushed at most once; the
 * mutex holder clears it after taking the request out, and only then may it be pushed
 * again. An addition thus costs two atomic operations and never waits; nothing is locked
 * on either side beyond what each side holds already.
 */
static _Atomic(struct band__node *) inbox_top;
static struct band__node inbox = {&inbox, &inbox}; /* band__admit_mu */

static void admit_drain_post(void);

/* Both ops of a node: its request is to be evaluated (the node's lock held). */
static void admit_node_notify(band_waiter *node, struct band__wakelist *wl)
{
    band_admit_req *r = band__admit_owner(node);
    if (__atomic_exchange_n(&r->_inbox, 1, __ATOMIC_ACQ_REL) != 0)
        return; /* in the inbox: whoever put it there drains it, and evaluates it after this */
    wl->post = admit_drain_post;
    struct band__node *top = atomic_load_explicit(&inbox_top, memory_order_relaxed);
    do {
        r->w._link.next = top;
    } while (!atomic_compare_exchange_weak_explicit(&inbox_top, &top, &r->w._link,
                                                    memory_order_release, memory_order_relaxed));
}

/* Move what the semaphores pushed to the end of the FIFO, oldest first (admission mutex
 * held). */
static void admit_inbox_collect_locked(void)
{
    struct band__node *n = atomic_exchange_explicit(&inbox_top, NULL, memory_order_acquire);
    struct band__node *fifo = NULL;
    while (n != NULL) { /* the stack holds the newest first: reverse it */
        struct band__node *next = n->next;
        n->next = fifo;
        fifo = n;
        n = next;
    }
    while (fifo != NULL) {
        struct band__node *next = fifo->next;
        band__list_add_tail(&inbox, fifo);
        fifo = next;
    }
}

/* Take @n out of the FIFO and clear its request's mark (admission mutex held). From then
 * on a semaphore may push it again. */
static void admit_inbox_del_locked(struct band__node *n)
{
    band__list_del_init(n);
    band_admit_req *r = band__container_of(n, band_admit_req, w._link);
    __atomic_store_n(&r->_inbox, 0, __ATOMIC_RELEASE);
}

const struct band__smart_ops band__admit_node_ops = {admit_node_notify, admit_node_notify};

void band__admit_lock_all(band_admit_req *r)
{
    for (uint32_t k = 0; k < r->n; k++)
        band__sem_lock(r->e[r->_order[k]].sem);
}

void band__admit_unlock_all(band_admit_req *r)
{
    for (uint32_t k = r->n; k > 0; k--)
        band__sem_unlock(r->e[r->_order[k - 1]].sem);
}

int band__admit_refusal_locked(band_admit_req *r, int submit)
{
    for (uint32_t i = 0; i < r->n; i++) {
        if ((submit || r->e[i].amount > 0) && band__sem_closed(r->e[i].sem))
            return BAND_ECLOSED;
    }
    for (uint32_t i = 0; i < r->n; i++) {
        band_sem *s = r->e[i].sem;
        if (r->e[i].amount > band__sem_limit(s)) {
            if (submit)
                band__sem_count_too_big(s);
            return BAND_E2BIG;
        }
    }
    return 0;
}

void band__admit_leave_locked(band_admit_req *r, int granted, int status, struct band__wakelist *wl)
{
    for (uint32_t i = 0; i < r->n; i++) {
        band_waiter *node = &r->e[i]._node;
        if (band__waiter_state(node) == BAND__W_QUEUED)
            band__sem_smart_leave_locked(r->e[i].sem, node, granted, status, wl);
        else if (!band__list_empty(&node->_link)) /* watching */
            band__sem_unwatch_locked(r->e[i].sem, node);
    }
}

void band__admit_finish_locked(band_admit_req *r)
{
    band__admit_tree_leave_locked(r);
    /* Its nodes are out of every queue and watch, so no semaphore pushes it any more, and
     * a push that came before is visible: it was made under one of the locks taken since. */
    if (__atomic_load_n(&r->_inbox, __ATOMIC_ACQUIRE) != 0) {
        admit_inbox_collect_locked();
        admit_inbox_del_locked(&r->w._link);
    }
}

/* Move @r on: fail it (a budget closed or became too small), join its next stage, or
 * grant it. Its wake joins @wl when it ends. Admission mutex held, no lock held. */
static void admit_eval_locked(band_admit_req *r, struct band__wakelist *wl)
{
    band__admit_lock_all(r);
    int rc = band__admit_refusal_locked(r, 0);
    if (rc == 0)
        rc = band__admit_advance_locked(r);
    if (rc != 0)
        band__admit_leave_locked(r, rc == 1, rc, wl);
    band__admit_unlock_all(r);
    if (rc == 0)
        return; /* it waits for another budget, whose events will bring it back */
    band__admit_finish_locked(r);
    if (rc == 1)
        r->_flags |= BAND__ADMIT_GRANTED;
    band__waiter_complete_locked(&r->w, rc == 1 ? 0 : rc, wl);
}

void band__admit_drain_locked(struct band__wakelist *wl)
{
    for (;;) {
        if (band__list_empty(&inbox))
            admit_inbox_collect_locked();
        struct band__node *n = band__list_first(&inbox);
        if (n == NULL)
            break;
        admit_inbox_del_locked(n);
        admit_eval_locked(band__container_of(n, band_admit_req, w._link), wl);
    }
    /* Every request added while this thread held the admission mutex was evaluated; later
     * additions come with a post of their own. */
    wl->post = NULL;
}

static void admit_drain_post(void)
{
    struct band__wakelist wl;
    band__wakelist_init(&wl);
    pthread_mutex_lock(&band__admit_mu);
    band__admit_drain_locked(&wl);
    pthread_mutex_unlock(&band__admit_mu);
    band__wakelist_run(&wl);
}

/* band_waiter_cancel() on a pending request (admission mutex held). */
static void admit_cancel_locked(struct band__waitq *q, band_waiter *w, int reason,
                                struct band__wakelist *wl)
{
    (void)q;
    band_admit_req *r = band__container_of(w, band_admit_req, w);
    band__admit_lock_all(r);
    band__admit_leave_locked(r, 0, reason, wl);
    band__admit_unlock_all(r);
    band__admit_finish_locked(r);
    band__admit_drain_locked(wl);
}

/* SPDX-License-Identifier: MIT */
/*
 * submit.c - putting operations into the queue (bind, start, timed operations) and taking
 * them out again (cancel).
 *
 * Bind claims the op (owned list, armed count, the waiter with our wake) before the
 * primitive sees the waiter: its wake may run on another thread as soon as the _async
 * call queued it. Start then takes the _async call's answer:
 *   BAND_PENDING  keep the op WAITING, its deadline in the heap (reap times it out) and
 *                 its hook on the token (reap cancels it); a closed queue, a deadline
 *                 already past or a token already requested withdraws it at once;
 *   anything else it completed or failed during the call and no wake will come: post it,
 *                 so reap reports it like every other completion.
 * See fd_internal.h for the design notes.
 */
#include "fd_internal.h"

/* Owner: make @op owned by @q in @state. */
static void claim(band_fd_queue *q, band_fd_queue_op *op, unsigned char state, band_time deadline,
                  band_cancel *cancel)
{
    op->status = BAND_PENDING;
    op->_state = state;
    op->_in_heap = 0;
    op->_hooked = 0;
    op->_timed = 0;
    op->_q = q;
    op->_cancel = cancel;
    op->_deadline = deadline;
    op->_ready.next = NULL;
    op->_next = NULL;
    op->_prev = q->last;
    if (q->last != NULL)
        q->last->_next = op;
    else
        q->first = op;
    q->last = op;
    q->count++;
}

/* A refusal (@rc): an idle op says so in its status; an op a queue owns is left alone. */
static int refuse_with(band_fd_queue_op *op, int rc)
{
    if (op != NULL && op->_state == BAND__FD_QUEUE_IDLE)
        op->status = rc;
    return rc;
}

/* A misuse. */
static int refuse(band_fd_queue_op *op)
{
    return refuse_with(op, BAND_EINVAL);
}

int band_fd_queue_bind(band_fd_queue *q, band_fd_queue_op *op, band_waiter *w, band_time deadline,
                       band_cancel *cancel)
{
    if (q == NULL || op == NULL || op->_state != BAND__FD_QUEUE_IDLE || w == NULL ||
        band_waiter_is_pending(w))
        return refuse(op);
    if (q->closed)
        return refuse_with(op, BAND_ECLOSED);
    claim(q, op, BAND__FD_QUEUE_BOUND, deadline, cancel);
    op->_w = w;
    band_waiter_init(w, band__fd_queue_wake, op);
    w->deadline = deadline;
    /* Before the primitive sees the waiter: its wake may run on another thread at once. */
    atomic_fetch_add_explicit(&q->armed, 1, memory_order_relaxed);
    return 0;
}

/* Owner: put a WAITING @op's due time or deadline into the heap. */
static void add_deadline(band_fd_queue *q, band_fd_queue_op *op)
{
    band__dl_insert(&q->heap, &op->_dl, op->_deadline);
    op->_in_heap = 1;
}

/* Owner: hook a WAITING @op's token. 0: hooked (or no token); BAND_ECANCELED: requested. */
static int hook_token(band_fd_queue_op *op)
{
    if (op->_cancel == NULL)
        return 0;
    band_cancel_hook_init(&op->_hook, band__fd_queue_hook, op);
    int rc = band_cancel_hook_add(op->_cancel, &op->_hook);
    if (rc == 0)
        op->_hooked = 1;
    return rc == BAND_ECANCELED ? rc : 0;
}

int band_fd_queue_start(band_fd_queue_op *op, int rc)
{
    if (op == NULL || op->_state != BAND__FD_QUEUE_BOUND)
        return refuse(op);
    band_fd_queue *q = op->_q;
    band_waiter *w = op->_w;
    if ((rc > 0 && rc != BAND_PENDING) || w->wake != band__fd_queue_wake || w->data != op) {
        atomic_fetch_sub_explicit(&q->armed, 1, memory_order_relaxed);
        band__fd_queue_finish(q, op, BAND_EINVAL);
        band__fd_queue_hand_back(q, op); /* never reported: idle, status BAND_EINVAL */
        return BAND_EINVAL;
    }
    if (rc != BAND_PENDING) {
        /* Completed or refused by the primitive at once: no wake will come. */
        atomic_fetch_sub_explicit(&q->armed, 1, memory_order_relaxed);
        band__fd_queue_finish(q, op, rc);
        band__fd_queue_post(q, op);
        return 0;
    }
    op->_state = BAND__FD_QUEUE_WAITING;
    if (q->closed) {
        (void)band__fd_queue_withdraw(q, op, BAND_ECANCELED, 1); /* closed meanwhile */
        return 0;
    }
    band_time deadline = op->_deadline;
    if (deadline != BAND_FOREVER && deadline <= band_now()) {
        (void)band__fd_queue_withdraw(q, op, BAND_ETIMEDOUT, 1); /* past: do not wait */
        return 0;
    }
    if (hook_token(op) == BAND_ECANCELED) {
        (void)band__fd_queue_withdraw(q, op, BAND_ECANCELED, 1); /* requested: do not wait */
        return 0;
    }
    if (deadline != BAND_FOREVER)
        add_deadline(q, op);
    return 0;
}

int band_fd_queue_at(band_fd_queue *q, band_fd_queue_op *op, band_time deadline,
                     band_cancel *cancel)
{
    if (q == NULL || op == NULL || op->_state != BAND__FD_QUEUE_IDLE)
        return refuse(op);
    if (q->closed)
        return refuse_with(op, BAND_ECLOSED);
    claim(q, op, BAND__FD_QUEUE_WAITING, deadline, cancel);
    op->_w = NULL;
    op->_timed = 1;
    if (deadline <= band_now()) {
        /* Due: as a grant, it wins over a requested token. */
        band__fd_queue_finish(q, op, 0);
        band__fd_queue_post(q, op);
        return 0;
    }
    if (hook_token(op) == BAND_ECANCELED) {
        band__fd_queue_finish(q, op, BAND_ECANCELED);
        band__fd_queue_post(q, op);
        return 0;
    }
    add_deadline(q, op);
    return 0;
}

int band_fd_queue_cancel(band_fd_queue_op *op)
{
    if (op == NULL || op->_state == BAND__FD_QUEUE_IDLE || op->_state == BAND__FD_QUEUE_BOUND)
        return BAND_EINVAL;
    if (op->_state == BAND__FD_QUEUE_DONE)
        return BAND_EALREADY;
    return band__fd_queue_withdraw(op->_q, op, BAND_ECANCELED, 1);
}

/* SPDX-License-Identifier: MIT */
/*
 * queue.c - the completion queue's life: create, the eventfd signal, the wake that moves a
 * completed op to the owner, the token hook, posting owner-side completions, withdrawing
 * a waiting op, close and destroy.
 */
#include "fd_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

void band_fd_queue_op_init(band_fd_queue_op *op, void *data)
{
    if (op == NULL)
        return;
    *op = (band_fd_queue_op){0};
    op->data = data;
}

int band_fd_queue_create(band_fd_queue **out)
{
    if (out == NULL)
        return BAND_EINVAL;
    band_fd_queue *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return BAND_ENOMEM;
    q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->efd < 0) {
        int err = errno;
        free(q);
        return err == ENOMEM ? BAND_ENOMEM : -err;
    }
    band__ready_init(&q->ready);
    atomic_init(&q->armed, 0);
    atomic_init(&q->cancel_scan, 0);
    band__dl_init(&q->heap);
    q->batch_head = NULL;
    q->batch_tail = &q->batch_head;
    q->first = NULL;
    q->last = NULL;
    q->count = 0;
    *out = q;
    return 0;
}

int band_fd_queue_fd(const band_fd_queue *q)
{
    return q == NULL ? BAND_EINVAL : q->efd;
}

size_t band_fd_queue_count(const band_fd_queue *q)
{
    return q == NULL ? 0 : q->count;
}

void band__fd_queue_signal(band_fd_queue *q)
{
    const uint64_t one = 1;
    /* Only EAGAIN is possible (the counter is at its maximum), and then the fd is
     * readable anyway. */
    ssize_t rc = write(q->efd, &one, sizeof(one));
    (void)rc;
}

/*
 * The wake of every op (any thread, no band lock held). Reads everything it needs from
 * the op before the push: from then on the owner may reap and free it. The decrement of
 * armed is its last access to the queue.
 */
void band__fd_queue_wake(band_waiter *w)
{
    band_fd_queue_op *op = (band_fd_queue_op *)w->data;
    band_fd_queue *q = op->_q;
    if (band__ready_push(&q->ready, &op->_ready))
        band__fd_queue_signal(q);
    atomic_fetch_sub_explicit(&q->armed, 1, memory_order_release);
}

/*
 * The hook of every op with a token (any thread, maybe a signal handler, under the
 * token's lock). An atomic store and a write(): both async-signal-safe. The queue is
 * alive: hand-back removes the hook before the op or the queue goes.
 */
void band__fd_queue_hook(band_cancel_hook *h)
{
    band_fd_queue_op *op = h->data;
    band_fd_queue *q = op->_q;
    atomic_store_explicit(&q->cancel_scan, 1, memory_order_seq_cst);
    band__fd_queue_signal(q);
}

void band__fd_queue_post(band_fd_queue *q, band_fd_queue_op *op)
{
    if (band__ready_push(&q->ready, &op->_ready))
        band__fd_queue_signal(q);
}

void band__fd_queue_finish(band_fd_queue *q, band_fd_queue_op *op, int status)
{
    op->_result = status; /* op->status stays BAND_PENDING until the hand-back */
    op->_state = BAND__FD_QUEUE_DONE;
    band__fd_queue_forget_deadline(q, op);
}

void band__fd_queue_forget_deadline(band_fd_queue *q, band_fd_queue_op *op)
{
    if (op->_in_heap) {
        band__dl_remove(&q->heap, &op->_dl);
        op->_in_heap = 0;
    }
}

void band__fd_queue_hand_back(band_fd_queue *q, band_fd_queue_op *op)
{
    band__fd_queue_forget_deadline(q, op);
    if (op->_hooked) {
        (void)band_cancel_hook_remove(&op->_hook); /* waits for a hook still running */
        op->_hooked = 0;
    }
    if (op->_prev != NULL)
        op->_prev->_next = op->_next;
    else
        q->first = op->_next;
    if (op->_next != NULL)
        op->_next->_prev = op->_prev;
    else
        q->last = op->_prev;
    op->_next = NULL;
    op->_prev = NULL;
    q->count--;

    if (op->_state == BAND__FD_QUEUE_WAITING && op->_w != NULL)
        op->status = band_waiter_status(op->_w); /* its wake pushed it */
    else
        op->status = op->_result; /* decided by the owner */
    op->_state = BAND__FD_QUEUE_IDLE;
    op->_ready.next = NULL;
    op->_q = NULL;
}

int band__fd_queue_withdraw(band_fd_queue *q, band_fd_queue_op *op, int reason, int post)
{
    if (!op->_timed) {
        if (band_waiter_cancel(op->_w, reason) != 0) {
            /* BAND_EALREADY: completed, its wake brings the result. BAND_EINVAL: another
             * party cancelled the waiter and calls its wake itself (a shutdown token's
             * watch). Either way a wake comes. */
            return BAND_EALREADY;
        }
        atomic_fetch_sub_explicit(&q->armed, 1, memory_order_relaxed);
    }
    band__fd_queue_finish(q, op, reason);
    if (post)
        band__fd_queue_post(q, op);
    return 0;
}

/* Wait until no wake can touch @q any more: with no op left to the queue, a wake can only
 * be between its push and its decrement (a signal), so this is short. */
static void wait_unarmed(band_fd_queue *q)
{
    unsigned spins = 0;
    while (atomic_load_explicit(&q->armed, memory_order_acquire) != 0) {
        if (++spins < 1000) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
}

int band_fd_queue_close(band_fd_queue *q)
{
    if (q == NULL)
        return BAND_EINVAL;
    q->closed = 1;
    /* Withdraw every op still waiting, due times included. Withdrawing never unlinks from
     * the owned list (the hand-back at reap does), so the walk is safe even when a cancel
     * completes other ops of this queue. A BOUND op is withdrawn by its start. */
    for (band_fd_queue_op *op = q->first; op != NULL; op = op->_next)
        if (op->_state == BAND__FD_QUEUE_WAITING)
            (void)band__fd_queue_withdraw(q, op, BAND_ECANCELED, 1);
    return 0;
}

int band_fd_queue_is_closed(const band_fd_queue *q)
{
    return q != NULL && q->closed;
}

int band_fd_queue_destroy(band_fd_queue *q)
{
    if (q == NULL)
        return 0;
    if (q->count != 0)
        return BAND_EBUSY;
    /* Every op was handed back; a wake may still be returning from its push. */
    wait_unarmed(q);
    if (close(q->efd) != 0) {
        /* Nothing to do: the fd is released even when close reports an error. */
    }
    free(q);
    return 0;
}

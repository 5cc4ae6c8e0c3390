/*
 * submit.c - putting operations into the queue (acquire, send, receive) and taking them
 * out again (cancel).
 *
 * Every submission follows one recipe: claim the op (owned list, armed count, waiter
 * with our wake), then ask the primitive. A deadline already at or before band_now()
 * means "do not wait", so the primitive's try function answers (BAND_EAGAIN becomes
 * BAND_ETIMEDOUT; nothing queues, as for the blocking calls); otherwise its _async
 * function does. On its answer:
 *   BAND_PENDING  keep the op WAITING, its deadline in the heap (reap times it out);
 *   BAND_EINVAL   undo everything: a misuse is answered here and never reported;
 *   anything else it completed during the call (granted or refused) and no wake will
 *                 come: post it, so reap reports it like every other completion.
 */
#include "fd_internal.h"

/* Owner: make @op owned by @q and WAITING, with a fresh waiter. */
static void claim(band_fdq *q, band_fdq_op *op, unsigned char kind, band_time deadline)
{
    op->status = BAND_PENDING;
    op->_kind = kind;
    op->_state = BAND__FDQ_WAITING;
    op->_in_heap = 0;
    op->_taken = 0;
    op->_q = q;
    op->_ready.next = NULL;
    op->_next = NULL;
    op->_prev = q->last;
    if (q->last != NULL)
        q->last->_next = op;
    else
        q->first = op;
    q->last = op;
    q->count++;
    band_waiter_init(band__fdq_waiter(op), band__fdq_wake, op);
    band__fdq_waiter(op)->deadline = deadline;
    /* Before the primitive sees the waiter: its wake may run on another thread at once. */
    atomic_fetch_add_explicit(&q->armed, 1, memory_order_relaxed);
}

/* Owner: undo claim() after BAND_EINVAL. */
static void unclaim(band_fdq *q, band_fdq_op *op)
{
    atomic_fetch_sub_explicit(&q->armed, 1, memory_order_relaxed);
    op->_state = BAND__FDQ_DONE;
    op->status = BAND_EINVAL;
    band__fdq_hand_back(q, op);
}

/* Owner: the common tail of every submission; @rc is the primitive's answer. */
static int settle(band_fdq *q, band_fdq_op *op, int rc, band_time deadline)
{
    if (rc == BAND_PENDING) {
        if (deadline != BAND_FOREVER) {
            band__dl_insert(&q->heap, &op->_dl, deadline);
            op->_in_heap = 1;
        }
        return 0;
    }
    if (rc == BAND_EINVAL) {
        unclaim(q, op);
        return BAND_EINVAL;
    }
    atomic_fetch_sub_explicit(&q->armed, 1, memory_order_relaxed);
    band__fdq_finish(q, op, rc);
    band__fdq_post(q, op);
    return 0;
}

static int usable(const band_fdq *q, const band_fdq_op *op)
{
    return q != NULL && op != NULL && op->_state == BAND__FDQ_IDLE;
}

/* A misuse: an idle op says so in its status; an op a queue owns is left alone. */
static int refuse(band_fdq_op *op)
{
    if (op != NULL && op->_state == BAND__FDQ_IDLE)
        op->status = BAND_EINVAL;
    return BAND_EINVAL;
}

/* 1 when @deadline has passed: the submission must not wait. */
static int passed(band_time deadline)
{
    return deadline != BAND_FOREVER && deadline <= band_now();
}

/* A try function's "would wait" is a timeout for a submission that must not wait. */
static int no_wait(int rc)
{
    return rc == BAND_EAGAIN ? BAND_ETIMEDOUT : rc;
}

int band_fdq_acquire(band_fdq *q, band_fdq_op *op, band_sem *s, uint64_t n, band_time deadline)
{
    if (!usable(q, op) || s == NULL || n > BAND_MAX_UNITS)
        return refuse(op);
    claim(q, op, BAND__FDQ_ACQUIRE, deadline);
    op->_a.acq.sem = s;
    op->_a.acq.n = n;
    int rc = passed(deadline) ? no_wait(band_sem_try_acquire(s, n))
                              : band_sem_acquire_async(s, n, band__fdq_waiter(op));
    return settle(q, op, rc, deadline);
}

int band_fdq_send(band_fdq *q, band_fdq_op *op, band_chan *c, const void *elem, uint64_t bytes,
                  band_time deadline)
{
    if (!usable(q, op) || c == NULL || elem == NULL)
        return refuse(op);
    claim(q, op, BAND__FDQ_SEND, deadline);
    op->_a.bytes_out = NULL;
    int rc = passed(deadline) ? no_wait(band_chan_try_send(c, elem, bytes))
                              : band_chan_send_async(c, elem, bytes, &op->_u.send);
    return settle(q, op, rc, deadline);
}

int band_fdq_recv(band_fdq *q, band_fdq_op *op, band_chan *c, void *out, uint64_t *bytes,
                  band_time deadline)
{
    if (!usable(q, op) || c == NULL || out == NULL)
        return refuse(op);
    claim(q, op, BAND__FDQ_RECV, deadline);
    op->_u.recv.bytes = 0; /* the try path writes it only on success */
    op->_a.bytes_out = bytes;
    int rc = passed(deadline) ? no_wait(band_chan_try_recv(c, out, &op->_u.recv.bytes))
                              : band_chan_recv_async(c, out, &op->_u.recv);
    return settle(q, op, rc, deadline);
}

int band_fdq_cancel(band_fdq_op *op)
{
    if (op == NULL || op->_state == BAND__FDQ_IDLE)
        return BAND_EINVAL;
    if (op->_state == BAND__FDQ_DONE)
        return BAND_EALREADY;
    band_fdq *q = op->_q;
    int rc = band_waiter_cancel(band__fdq_waiter(op), BAND_ECANCELED);
    if (rc != 0)
        return BAND_EALREADY; /* the wake won: it reports the real result */
    atomic_fetch_sub_explicit(&q->armed, 1, memory_order_relaxed);
    band__fdq_finish(q, op, BAND_ECANCELED);
    band__fdq_post(q, op);
    return 0;
}

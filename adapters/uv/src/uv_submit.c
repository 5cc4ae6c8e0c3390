/*
 * uv_submit.c - submitting acquires, sends and receives, and the wake that brings their
 * completions back to the loop.
 *
 * A submission prepares the op (the wake reads op->_uv, so it is set before the primitive
 * can see the op), calls the primitive's _async function, and then either leaves the op
 * queued (with its deadline in the heap) or finishes it at once through the ready list:
 * a callback never runs inside the submitting call.
 */
#include "uv_internal.h"

void band_uv__wake(band_waiter *w)
{
    band_uv_op *op = (band_uv_op *)(void *)((char *)w - offsetof(band_uv_op, _u));
    band_uv *u = op->_uv; /* read first: once pushed, the loop may free or reuse op */
    atomic_fetch_add_explicit(&u->wakers, 1, memory_order_relaxed);
    if (band__ready_push(&u->ready, &op->_ready)) {
        /* uv_async_send() starts with a plain read of the handle's pending flag and skips
         * the signal when it is set; the loop clears that flag with a full barrier before
         * it takes the list. This fence orders our push before that read, so either the
         * loop's take sees the push or we see the cleared flag and signal. */
        atomic_thread_fence(memory_order_seq_cst);
        (void)uv_async_send(&u->async);
    }
    /* Last touch of u: close waits for this before it frees the adapter. */
    atomic_fetch_sub_explicit(&u->wakers, 1, memory_order_release);
}

void band_uv__finish(band_uv *u, band_uv_op *op, int status)
{
    op->_status = status;
    op->_state = BAND_UV__DONE;
    if (band__ready_push(&u->ready, &op->_ready))
        (void)uv_async_send(&u->async);
}

void band_uv__accept(band_uv *u, band_uv_op *op, int rc, band_time deadline)
{
    band_uv__list_add_tail(&u->pending, &op->_link);
    if (u->npending++ == 0)
        uv_ref((uv_handle_t *)&u->async);
    if (rc != BAND_PENDING) {
        band_uv__finish(u, op, rc); /* completed or refused by the primitive at once */
        return;
    }
    op->_state = BAND_UV__QUEUED;
    if (deadline == BAND_FOREVER)
        return;
    if (deadline <= band_now())
        (void)band_uv__cancel_queued(op, BAND_ETIMEDOUT); /* past: do not wait */
    else
        band_uv__dl_add(u, op, deadline);
}

/* The checks every submission makes first, then the fields every kind sets. */
static int check_submit(const band_uv *u, const band_uv_op *op, band_uv_cb *cb)
{
    if (u == NULL || op == NULL || cb == NULL)
        return BAND_EINVAL;
    if (op->_state == BAND_UV__QUEUED || op->_state == BAND_UV__DONE)
        return BAND_EINVAL; /* still pending */
    if (u->closing)
        return BAND_ECLOSED;
    return 0;
}

static band_waiter *prepare(band_uv *u, band_uv_op *op, int kind, void *target, band_time deadline,
                            band_uv_cb *cb)
{
    op->_kind = (uint8_t)kind;
    op->_uv = u;
    op->_cb = cb;
    op->_target = target;
    op->_n = 0;
    op->_bytes_out = NULL;
    op->_status = 0;
    op->_flags = 0;
    band_waiter *w = band_uv__waiter(op);
    band_waiter_init(w, band_uv__wake, op);
    w->deadline = deadline;
    return w;
}

int band_uv_acquire(band_uv *u, band_uv_op *op, band_sem *s, uint64_t n, band_time deadline,
                    band_uv_cb *cb)
{
    int rc = check_submit(u, op, cb);
    if (rc != 0)
        return rc;
    if (s == NULL || n > BAND_MAX_UNITS)
        return BAND_EINVAL;
    band_waiter *w = prepare(u, op, BAND_UV__ACQUIRE, s, deadline, cb);
    op->_n = n;
    rc = band_sem_acquire_async(s, n, w);
    if (rc == BAND_EINVAL)
        return rc;
    band_uv__accept(u, op, rc, deadline);
    return 0;
}

int band_uv_op_take_permit(band_uv_op *op, band_permit *out)
{
    if (op == NULL || out == NULL || op->_state != BAND_UV__IDLE || op->_kind != BAND_UV__ACQUIRE ||
        !(op->_flags & BAND_UV__GRANTED))
        return BAND_EINVAL;
    int rc = band_permit_adopt(out, op->_target, op->_n);
    if (rc == 0)
        op->_flags = 0;
    return rc;
}

int band_uv_send(band_uv *u, band_uv_op *op, band_chan *c, const void *elem, uint64_t bytes,
                 band_time deadline, band_uv_cb *cb)
{
    int rc = check_submit(u, op, cb);
    if (rc != 0)
        return rc;
    if (c == NULL || elem == NULL)
        return BAND_EINVAL;
    (void)prepare(u, op, BAND_UV__SEND, c, deadline, cb);
    rc = band_chan_send_async(c, elem, bytes, &op->_u.send);
    if (rc == BAND_EINVAL)
        return rc;
    band_uv__accept(u, op, rc, deadline);
    return 0;
}

int band_uv_recv(band_uv *u, band_uv_op *op, band_chan *c, void *out, uint64_t *bytes,
                 band_time deadline, band_uv_cb *cb)
{
    int rc = check_submit(u, op, cb);
    if (rc != 0)
        return rc;
    if (c == NULL || out == NULL)
        return BAND_EINVAL;
    (void)prepare(u, op, BAND_UV__RECV, c, deadline, cb);
    op->_bytes_out = bytes;
    rc = band_chan_recv_async(c, out, &op->_u.recv);
    if (rc == BAND_EINVAL)
        return rc;
    band_uv__accept(u, op, rc, deadline);
    return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * uv_submit.c - binding a waiter to the loop, starting the operation with the primitive's
 * answer, timed operations, and the wake and token hook that bring completions back to
 * the loop.
 *
 * Bind prepares the waiter (the wake reads op->_uv, so everything it needs is set before
 * the primitive can see the waiter) and links the op, so close waits for it. Start takes
 * the _async call's answer and either leaves the op queued (deadline in the heap, hook on
 * the token) or finishes it at once through the ready list: a callback never runs inside
 * a band_uv_* call. See uv_internal.h for the design notes.
 */
#include "uv_internal.h"

void band_uv__wake(band_waiter *w)
{
    band_uv_op *op = w->data;
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
    /* Last touch of u: close waits for this before it closes the handles. */
    atomic_fetch_sub_explicit(&u->wakers, 1, memory_order_release);
}

void band_uv__hook(band_cancel_hook *h)
{
    band_uv_op *op = h->data;
    band_uv *u = op->_uv; /* alive: delivery removes this hook before the op goes */
    atomic_store_explicit(&u->cancel_scan, 1, memory_order_seq_cst);
    (void)uv_async_send(&u->async); /* async-signal-safe */
}

void band_uv__finish(band_uv *u, band_uv_op *op, int status)
{
    op->_status = status;
    op->_state = BAND_UV__DONE;
    if (band__ready_push(&u->ready, &op->_ready))
        (void)uv_async_send(&u->async);
}

/* Links @op to @u as an operation whose callback is due; the loop stays alive for it. */
static void link_op(band_uv *u, band_uv_op *op, band_cancel *cancel, band_uv_cb *cb,
                    band_time deadline, uint16_t state)
{
    op->_uv = u;
    op->_cb = cb;
    op->_cancel = cancel;
    op->_deadline = deadline;
    op->_status = 0;
    op->_flags = 0;
    op->_state = state;
    band_uv__list_add_tail(&u->pending, &op->_link);
    if (u->npending++ == 0)
        uv_ref((uv_handle_t *)&u->async);
}

/* Undoes link_op() for an op whose callback will not run. */
static void unlink_op(band_uv *u, band_uv_op *op)
{
    band_uv__list_del(&op->_link);
    if (--u->npending == 0)
        uv_unref((uv_handle_t *)&u->async);
    op->_state = BAND_UV__IDLE;
    op->_flags = 0;
    band_uv__maybe_finish_close(u);
}

/* An op that is neither bound nor waiting for its callback. */
static int op_idle(const band_uv_op *op)
{
    return op->_state != BAND_UV__BOUND && op->_state != BAND_UV__QUEUED &&
           op->_state != BAND_UV__DONE;
}

int band_uv_bind(band_uv *u, band_uv_op *op, band_waiter *w, band_uv_cb *cb, band_time deadline,
                 band_cancel *cancel)
{
    if (u == NULL || op == NULL || w == NULL || cb == NULL || !op_idle(op) ||
        band_waiter_is_pending(w))
        return BAND_EINVAL;
    if (u->closing)
        return BAND_ECLOSED;
    band_waiter_init(w, band_uv__wake, op);
    w->deadline = deadline;
    op->_w = w;
    link_op(u, op, cancel, cb, deadline, BAND_UV__BOUND);
    return 0;
}

/* Hooks a QUEUED op's token. 0: hooked (or no token); BAND_ECANCELED: already requested. */
static int hook_token(band_uv_op *op)
{
    if (op->_cancel == NULL)
        return 0;
    band_cancel_hook_init(&op->_hook, band_uv__hook, op);
    int rc = band_cancel_hook_add(op->_cancel, &op->_hook);
    if (rc == 0)
        op->_flags |= BAND_UV__HOOKED;
    return rc == BAND_ECANCELED ? rc : 0;
}

int band_uv_start(band_uv_op *op, int rc)
{
    if (op == NULL || op->_state != BAND_UV__BOUND)
        return BAND_EINVAL;
    band_uv *u = op->_uv;
    band_waiter *w = op->_w;
    if ((rc > 0 && rc != BAND_PENDING) || w->wake != band_uv__wake || w->data != op) {
        unlink_op(u, op);
        return BAND_EINVAL;
    }
    if (rc != BAND_PENDING) {
        band_uv__finish(u, op, rc); /* completed or refused by the primitive at once */
        return 0;
    }
    op->_state = BAND_UV__QUEUED;
    if (u->closing) {
        (void)band_uv__cancel_queued(op, BAND_ECANCELED);
        return 0;
    }
    band_time deadline = op->_deadline;
    if (deadline != BAND_FOREVER && deadline <= band_now()) {
        (void)band_uv__cancel_queued(op, BAND_ETIMEDOUT); /* past: do not wait */
        return 0;
    }
    if (hook_token(op) == BAND_ECANCELED) {
        (void)band_uv__cancel_queued(op, BAND_ECANCELED); /* requested: do not wait */
        return 0;
    }
    if (deadline != BAND_FOREVER)
        band_uv__dl_add(u, op, deadline);
    return 0;
}

int band_uv_at(band_uv *u, band_uv_op *op, band_uv_cb *cb, band_time deadline, band_cancel *cancel)
{
    if (u == NULL || op == NULL || cb == NULL || !op_idle(op))
        return BAND_EINVAL;
    if (u->closing)
        return BAND_ECLOSED;
    op->_w = NULL;
    link_op(u, op, cancel, cb, deadline, BAND_UV__QUEUED);
    op->_flags = BAND_UV__TIMED;
    if (deadline <= band_now()) {
        band_uv__finish(u, op, 0); /* due: as a grant, it wins over a requested token */
        return 0;
    }
    if (hook_token(op) == BAND_ECANCELED) {
        band_uv__finish(u, op, BAND_ECANCELED);
        return 0;
    }
    band_uv__dl_add(u, op, deadline);
    return 0;
}

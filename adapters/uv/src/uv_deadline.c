/* SPDX-License-Identifier: MIT */
/*
 * uv_deadline.c - deadlines, due times and cancellation.
 *
 * One uv_timer_t per adapter, armed for the earliest deadline (or due time of a
 * band_uv_at() op) in the heap. libuv counts
 * in milliseconds of a loop time that may lag the real clock, so the timer is armed for
 * the remaining time rounded up, and on expiry every deadline is compared with band_now()
 * again: an early expiry cancels nothing and re-arms. The heap is pruned eagerly (an op
 * leaves it when it is delivered or cancelled) but the timer lazily: an expiry that finds
 * no deadline due just re-arms for the new earliest one.
 *
 * A timeout is a cancel with BAND_ETIMEDOUT. band_waiter_cancel() answers 0 (the op left
 * the queue, its partial grant went back, no wake will come: the loop finishes it) or
 * BAND_EALREADY (the grant won: the wake has pushed the op or is about to). A timed op has
 * no waiter: reaching its due time finishes it with 0, and a cancel finishes it at once.
 */
#include "uv_internal.h"

static band_uv *uv_of_timer(uv_timer_t *t)
{
    return (band_uv *)(void *)((char *)t - offsetof(band_uv, timer));
}

static void arm(band_uv *u, band_time deadline)
{
    band_time now = band_now();
    uint64_t ms = 0;
    if (deadline > now) {
        band_time left = deadline - now;
        ms = (uint64_t)(left / BAND_MSEC) + (left % BAND_MSEC != 0 ? 1u : 0u); /* round up */
    }
    u->armed_for = deadline;
    (void)uv_timer_start(&u->timer, band_uv__timer_cb, ms, 0);
}

void band_uv__dl_add(band_uv *u, band_uv_op *op, band_time deadline)
{
    band__dl_insert(&u->heap, &op->_dl, deadline);
    op->_flags |= BAND_UV__IN_HEAP;
    if (deadline < u->armed_for)
        arm(u, deadline);
}

void band_uv__dl_del(band_uv *u, band_uv_op *op)
{
    band__dl_remove(&u->heap, &op->_dl);
    op->_flags &= (uint16_t)~BAND_UV__IN_HEAP;
}

void band_uv__timer_cb(uv_timer_t *t)
{
    band_uv *u = uv_of_timer(t);
    u->armed_for = BAND_FOREVER;
    if (u->closing) {
        /* After close the timer only re-checks whether the handles can be closed. */
        uv_unref((uv_handle_t *)&u->timer);
        band_uv__maybe_finish_close(u);
        return;
    }
    band_time now = band_now();
    struct band__dl_node *n;
    while ((n = band__dl_min(&u->heap)) != NULL && n->deadline <= now) {
        band_uv_op *op = band_uv__op_of_dl(n);
        band_uv__dl_del(u, op);
        if (op->_flags & BAND_UV__TIMED)
            band_uv__finish(u, op, 0); /* due */
        else if (!(op->_flags & BAND_UV__CANCELLING))
            (void)band_uv__cancel_queued(op, BAND_ETIMEDOUT);
    }
    if ((n = band__dl_min(&u->heap)) != NULL)
        arm(u, n->deadline);
}

int band_uv__cancel_queued(band_uv_op *op, int reason)
{
    band_uv *u = op->_uv;
    if (op->_flags & BAND_UV__TIMED) {
        if (op->_flags & BAND_UV__IN_HEAP)
            band_uv__dl_del(u, op);
        band_uv__finish(u, op, reason);
        return 0;
    }
    if (band_waiter_cancel(op->_w, reason) == 0) {
        if (op->_flags & BAND_UV__IN_HEAP)
            band_uv__dl_del(u, op);
        band_uv__finish(u, op, reason);
        return 0;
    }
    /* BAND_EALREADY: completed, its wake delivers the real result. BAND_EINVAL: another
     * party cancelled the waiter and calls its wake itself (a shutdown token's watch). */
    op->_flags |= BAND_UV__CANCELLING;
    return BAND_EALREADY;
}

void band_uv__scan_tokens(band_uv *u)
{
    /* Cancelling never unlinks from the pending list (delivery does), so walking it is
     * safe even when a cancel completes other ops of this adapter. */
    for (struct band__node *n = u->pending.next; n != &u->pending; n = n->next) {
        band_uv_op *op = band_uv__op_of_link(n);
        if (op->_state == BAND_UV__QUEUED && (op->_flags & BAND_UV__HOOKED) &&
            !(op->_flags & BAND_UV__CANCELLING) && band_cancel_is_requested(op->_cancel))
            (void)band_uv__cancel_queued(op, BAND_ECANCELED);
    }
}

int band_uv_cancel(band_uv_op *op)
{
    if (op == NULL)
        return BAND_EINVAL;
    if (op->_state == BAND_UV__DONE)
        return BAND_EALREADY;
    if (op->_state != BAND_UV__QUEUED)
        return BAND_EINVAL;
    if (op->_flags & BAND_UV__CANCELLING)
        return BAND_EALREADY;
    return band_uv__cancel_queued(op, BAND_ECANCELED);
}

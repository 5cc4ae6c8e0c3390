/* SPDX-License-Identifier: MIT */
/*
 * uv_adapter.c - the adapter's life: create, deliver completed operations from the ready
 * list to their callbacks, close, destroy.
 *
 * Delivery runs in the async handle's callback. It first cancels the operations whose
 * token was requested (a token's hook only signals the handle), then takes the ready list
 * once per call (completions pushed while callbacks run signal the handle again and are
 * delivered on the next loop iteration, so a callback that resubmits an operation
 * completing at once cannot starve the loop). See uv_internal.h for the design notes.
 */
#include <stdlib.h>

#include "uv_internal.h"

static band_uv *uv_of_async(uv_async_t *a)
{
    return (band_uv *)(void *)((char *)a - offsetof(band_uv, async));
}

/* Hands one completed op to its callback; the callback is the last thing done with it. */
static void deliver(band_uv *u, band_uv_op *op)
{
    int status;
    if (op->_state == BAND_UV__DONE)
        status = op->_status; /* decided on the loop: at start, cancel, timeout or due time */
    else
        status = band_waiter_status(op->_w); /* its wake pushed it */

    if (op->_flags & BAND_UV__IN_HEAP)
        band_uv__dl_del(u, op);
    if (op->_flags & BAND_UV__HOOKED)
        (void)band_cancel_hook_remove(&op->_hook); /* waits for a hook still running */
    band_uv__list_del(&op->_link);
    if (--u->npending == 0)
        uv_unref((uv_handle_t *)&u->async);

    op->_flags = 0;
    op->_state = BAND_UV__IDLE;
    op->_cb(op, status);
}

static void async_cb(uv_async_t *a)
{
    band_uv *u = uv_of_async(a);
    /* Token requests first: their cancels push onto the ready list taken just below. */
    if (atomic_exchange_explicit(&u->cancel_scan, 0, memory_order_seq_cst))
        band_uv__scan_tokens(u);
    struct band__ready_node *n = band__ready_take(&u->ready);
    while (n != NULL) {
        struct band__ready_node *next = n->next; /* the callback may resubmit the op */
        deliver(u, band_uv__op_of_ready(n));
        n = next;
    }
    band_uv__maybe_finish_close(u);
}

int band_uv_create(band_uv **out, uv_loop_t *loop)
{
    if (loop == NULL || out == NULL)
        return BAND_EINVAL;
    band_uv *u = calloc(1, sizeof(*u));
    if (u == NULL)
        return BAND_ENOMEM;
    band__ready_init(&u->ready);
    atomic_init(&u->wakers, 0);
    atomic_init(&u->cancel_scan, 0);
    u->loop = loop;
    band__dl_init(&u->heap);
    u->armed_for = BAND_FOREVER;
    band_uv__list_init(&u->pending);
    int rc = uv_async_init(loop, &u->async, async_cb);
    if (rc != 0) {
        free(u); /* libuv registers the handle only on success */
        return rc;
    }
    (void)uv_timer_init(loop, &u->timer); /* cannot fail */
    /* Pending operations keep the loop alive (the async handle is referenced while any
     * is pending); an idle adapter does not. */
    uv_unref((uv_handle_t *)&u->async);
    uv_unref((uv_handle_t *)&u->timer);
    u->handles = 2;
    *out = u;
    return 0;
}

static void handle_closed(uv_handle_t *h)
{
    band_uv *u = h->data;
    if (--u->handles > 0)
        return;
    /* Closed: band_uv_destroy() may free u from here on, also inside on_closed, so this
     * is the last touch of u. */
    void (*on_closed)(void *) = u->on_closed;
    void *data = u->closed_data;
    if (on_closed != NULL)
        on_closed(data);
}

void band_uv__maybe_finish_close(band_uv *u)
{
    if (!u->closing || u->finishing || u->npending != 0)
        return;
    /* Every op was delivered, so no new wake can start; wait for one still on its way
     * out of uv_async_send() (rare: a short window, re-checked every millisecond). */
    if (atomic_load_explicit(&u->wakers, memory_order_acquire) != 0) {
        uv_ref((uv_handle_t *)&u->timer);
        (void)uv_timer_start(&u->timer, band_uv__timer_cb, 1, 0);
        return;
    }
    u->finishing = 1;
    u->async.data = u;
    u->timer.data = u;
    uv_close((uv_handle_t *)&u->async, handle_closed);
    uv_close((uv_handle_t *)&u->timer, handle_closed);
}

int band_uv_close(band_uv *u, void (*on_closed)(void *data), void *data)
{
    if (u == NULL)
        return BAND_EINVAL;
    if (u->closing)
        return BAND_ECLOSED;
    u->closing = 1;
    u->on_closed = on_closed;
    u->closed_data = data;
    (void)uv_timer_stop(&u->timer);
    u->armed_for = BAND_FOREVER;
    /* Cancelling never unlinks from the pending list (delivery does), so walking it is
     * safe even when a cancel completes other ops of this adapter. A BOUND op is
     * cancelled by band_uv_start(), which sees the adapter closing. */
    for (struct band__node *n = u->pending.next; n != &u->pending; n = n->next) {
        band_uv_op *op = band_uv__op_of_link(n);
        if (op->_state == BAND_UV__QUEUED && !(op->_flags & BAND_UV__CANCELLING))
            (void)band_uv__cancel_queued(op, BAND_ECANCELED);
    }
    band_uv__maybe_finish_close(u);
    return 0;
}

int band_uv_is_closed(const band_uv *u)
{
    return u != NULL && u->closing;
}

int band_uv_destroy(band_uv *u)
{
    if (u == NULL)
        return 0;
    /* Both handles reported closed: no callback, wake or libuv reference is left. */
    if (!u->finishing || u->handles != 0)
        return BAND_EBUSY;
    free(u);
    return 0;
}

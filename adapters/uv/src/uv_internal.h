/* SPDX-License-Identifier: MIT */
/*
 * uv_internal.h - the adapter's private structure and the helpers its files share.
 *
 * Include this header, never band/uv.h directly, in the adapter's sources: it brings the
 * helpers of ready_list.h and deadline_heap.h, whose node types (band/adapter_nodes.h)
 * the op struct of band/uv.h embeds.
 *
 * Design notes
 * ------------
 * The adapter never looks at a primitive. It owns the wake of one band_waiter per op
 * (bound by band_uv_bind()), and everything else follows from the wake contract: a waiter
 * that queued ends exactly once, by its wake or by a band_waiter_cancel() that returned 0.
 *
 * Threads. Everything in struct band_uv except the ready list, the wakers count and the
 * cancel flag belongs to the loop thread: binds, starts, cancels, the timer, delivery and
 * close all run there. A wake (band_uv__wake) runs on whichever thread completed an
 * operation; it reads op->_uv, pushes the op onto the ready list and, on the list's
 * empty-to-non-empty edge, calls uv_async_send(). The push is a release and the loop's
 * take an acquire, so everything band wrote into the primitive's op before the wake
 * (status, received element, grant) is visible to the loop when it delivers.
 *
 * Tokens. A token's hook may run on any thread, inside a signal handler, with the token's
 * lock held, so it only sets u->cancel_scan and calls uv_async_send() (both
 * async-signal-safe). The async callback then walks the pending list and cancels every
 * waiting op whose token is requested. A request is rare (a shutdown), so one walk per
 * request is cheap, and the op needs no second lock-free node.
 *
 * States (op->_state, loop thread only). IDLE: not in use, or its callback is running or
 * ran. BOUND: band_uv_bind() prepared its waiter; the primitive may already hold it (and
 * even have woken it), but the loop does not yet know its answer. QUEUED: started with
 * BAND_PENDING (or a band_uv_at() op waiting for its time); only its wake can move it to
 * the ready list, unless a cancel (timer, band_uv_cancel, token, close) returns 0 first.
 * DONE: the loop decided the result itself (answered at once, cancel or timeout returned
 * 0, due time reached) and pushed the op. The values are magic numbers rather than small
 * integers so that a zeroed op reads as idle. Every bound op sits on u->pending until its
 * callback runs, so close can find the waiting ones and waits for the rest.
 *
 * Exactly once. A QUEUED op reaches the ready list exactly once: pushed by its wake, or
 * by the loop when band_waiter_cancel() returned 0 (and then no wake follows). A cancel
 * that finds the waiter completed (BAND_EALREADY), or cancelled by another party that
 * calls its wake itself (BAND_EINVAL: a shutdown token's watch), marks the op CANCELLING
 * and leaves its delivery to that wake. Delivery takes each op off the list once, unlinks
 * it from everything (heap, token, pending list), marks it IDLE and calls the callback
 * last.
 *
 * Lifetime of the adapter. A waker touches u (the list, the async handle) after it has
 * pushed, and the loop could deliver that op and free u in the meantime. So every wake
 * counts itself in u->wakers before its push and leaves after its uv_async_send(); close
 * closes the handles only once every op was delivered AND wakers is 0 (re-checked on a
 * 1 ms timer when a waker is still on its way out). libuv's uv_close() of an async handle
 * also waits for a uv_async_send() in progress, but only once that call has started. A
 * token's hook needs no count: delivery removes it, and band_cancel_hook_remove() returns
 * only once a running hook has returned. band_uv_destroy() frees u only after libuv
 * reported both handles closed (finishing set and handles 0), which happens after all of
 * that; the close callback touches u for the last time before it calls on_closed.
 */
#ifndef BAND_UV_INTERNAL_H
#define BAND_UV_INTERNAL_H

#ifdef BAND_UV_H
#error "include uv_internal.h before band/uv.h"
#endif

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "deadline_heap.h"
#include "ready_list.h"

#include "band/uv.h"

/* band/uv.h holds copies of the node types for its consumers; they must stay identical. */
_Static_assert(sizeof(struct band__ready_node) == sizeof(void *), "ready node layout");
_Static_assert(sizeof(struct band__dl_node) == sizeof(band_time) + 3 * sizeof(void *),
               "deadline node layout");

/* op->_state: a zeroed op is idle. */
enum {
    BAND_UV__IDLE = 0,
    BAND_UV__BOUND = 0x7542,  /* "uB" */
    BAND_UV__QUEUED = 0x7551, /* "uQ" */
    BAND_UV__DONE = 0x7544,   /* "uD" */
};

/* op->_flags */
enum {
    BAND_UV__IN_HEAP = 1u << 0,    /* in u->heap */
    BAND_UV__CANCELLING = 1u << 1, /* a cancel found it completed: its wake delivers it */
    BAND_UV__HOOKED = 1u << 2,     /* op->_hook is added to op->_cancel */
    BAND_UV__TIMED = 1u << 3,      /* band_uv_at(): completes with 0 at its due time */
};

struct band_uv {
    /* Shared with wakers and token hooks on any thread. */
    struct band__ready_list ready; /* completed ops, in completion order */
    atomic_uint wakers;            /* wakes between their push and their last touch of u */
    atomic_int cancel_scan;        /* a token hook fired: look for requested tokens */

    /* Loop thread only. */
    uv_loop_t *loop;
    uv_async_t async;          /* signalled on the ready list's empty-to-non-empty edge */
    uv_timer_t timer;          /* armed for the earliest deadline; close's re-check */
    struct band__dl_heap heap; /* ops with a deadline or a due time, earliest first */
    band_time armed_for;       /* the deadline the timer is armed for; BAND_FOREVER: idle */
    struct band__node pending; /* every op whose callback has not run, in bind order */
    uint64_t npending;
    int closing;   /* band_uv_close() was called */
    int handles;   /* handles not yet reported closed by libuv */
    int finishing; /* uv_close() was called on the handles */
    void (*on_closed)(void *data);
    void *closed_data;
};

/* ---- the list of pending ops (a circular list with a sentinel, like the core's) ---- */

static inline void band_uv__list_init(struct band__node *n)
{
    n->next = n;
    n->prev = n;
}

static inline void band_uv__list_add_tail(struct band__node *head, struct band__node *n)
{
    n->prev = head->prev;
    n->next = head;
    head->prev->next = n;
    head->prev = n;
}

static inline void band_uv__list_del(struct band__node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    band_uv__list_init(n);
}

/* ---- conversions ---- */

static inline band_uv_op *band_uv__op_of_link(struct band__node *n)
{
    return (band_uv_op *)(void *)((char *)n - offsetof(band_uv_op, _link));
}

static inline band_uv_op *band_uv__op_of_ready(struct band__ready_node *n)
{
    return (band_uv_op *)(void *)((char *)n - offsetof(band_uv_op, _ready));
}

static inline band_uv_op *band_uv__op_of_dl(struct band__dl_node *n)
{
    return (band_uv_op *)(void *)((char *)n - offsetof(band_uv_op, _dl));
}

/* ---- shared by the adapter's files (loop thread unless noted) ---- */

/* The wake function of every bound waiter: hands its op to the loop. Any thread. */
void band_uv__wake(band_waiter *w);

/* The hook of every op with a token: asks the loop to look for requested tokens. Any
 * thread, also a signal handler. */
void band_uv__hook(band_cancel_hook *h);

/* Ends a QUEUED, BOUND or just-linked op with @status decided on the loop: pushes it to
 * the ready list as DONE. */
void band_uv__finish(band_uv *u, band_uv_op *op, int status);

/* Cancels a QUEUED op with @reason: a timed op is finished at once; a waiter through its
 * primitive. 0: the op was finished with @reason; BAND_EALREADY: its wake delivers it
 * (marked CANCELLING). */
int band_uv__cancel_queued(band_uv_op *op, int reason);

/* Cancels, with BAND_ECANCELED, every QUEUED op whose token was requested. */
void band_uv__scan_tokens(band_uv *u);

/* Deadline heap and timer. */
void band_uv__dl_add(band_uv *u, band_uv_op *op, band_time deadline);
void band_uv__dl_del(band_uv *u, band_uv_op *op);
void band_uv__timer_cb(uv_timer_t *t);

/* Close: finishes when nothing is pending and no waker is left. */
void band_uv__maybe_finish_close(band_uv *u);

#endif /* BAND_UV_INTERNAL_H */

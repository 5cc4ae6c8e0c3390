/*
 * uv_internal.h - the adapter's private structure and the helpers its files share.
 *
 * Include this header, never band/uv.h directly, in the adapter's sources: the node types
 * of ready_list.h and deadline_heap.h must be defined before band/uv.h, which otherwise
 * defines identical copies for its consumers.
 *
 * Design notes
 * ------------
 * Threads. Everything in struct band_uv except the ready list and the wakers count
 * belongs to the loop thread: submissions, cancels, the timer, delivery and close all run
 * there. A wake (band_uv__wake) runs on whichever thread completed an operation; it reads
 * op->_uv, pushes the op onto the ready list and, on the list's empty-to-non-empty edge,
 * calls uv_async_send(). The push is a release and the loop's take an acquire, so
 * everything band wrote into the op before the wake (status, received element) is visible
 * to the loop when it delivers.
 *
 * States (op->_state, loop thread only). IDLE: not submitted, or its callback is running
 * or ran. QUEUED: accepted and waiting in a primitive; only its wake can move it to the
 * ready list, unless a cancel (timer, band_uv_cancel, close) returns 0 first. DONE: the
 * loop decided the result itself (completed during submission, cancel or timeout returned
 * 0) and pushed the op. The value is a magic number rather than a small integer so that a
 * zeroed op reads as idle. Every submitted op sits on u->pending until its callback runs,
 * so close can find the queued ones.
 *
 * Exactly once. A QUEUED op reaches the ready list exactly once: pushed by its wake, or
 * by the loop when band_waiter_cancel() returned 0 (and then no wake follows). Delivery
 * takes each op off the list once, unlinks it from everything, marks it IDLE and calls
 * the callback last.
 *
 * Lifetime of the adapter. A waker touches u (the list, the async handle) after it has
 * pushed, and the loop could deliver that op and free u in the meantime. So every wake
 * counts itself in u->wakers before its push and leaves after its uv_async_send(); close
 * frees nothing until every op was delivered AND wakers is 0 (re-checked on a 1 ms timer
 * when a waker is still on its way out). libuv's uv_close() of an async handle also waits
 * for a uv_async_send() in progress, but only once that call has started.
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
    BAND_UV__QUEUED = 0x62755171u, /* "buQq" */
    BAND_UV__DONE = 0x62754471u,   /* "buDq" */
};

/* op->_kind */
enum { BAND_UV__ACQUIRE = 1, BAND_UV__SEND = 2, BAND_UV__RECV = 3 };

/* op->_flags */
enum {
    BAND_UV__IN_HEAP = 1u << 0,    /* in u->heap */
    BAND_UV__CANCELLING = 1u << 1, /* a cancel found it completed: its wake delivers it */
    BAND_UV__GRANTED = 1u << 2,    /* acquire delivered with 0, permits not yet taken */
};

struct band_uv {
    /* Shared with wakers on any thread. */
    struct band__ready_list ready; /* completed ops, in completion order */
    atomic_uint wakers;            /* wakes between their push and their last touch of u */

    /* Loop thread only. */
    uv_loop_t *loop;
    uv_async_t async;          /* signalled on the ready list's empty-to-non-empty edge */
    uv_timer_t timer;          /* armed for the earliest deadline; close's re-check */
    struct band__dl_heap heap; /* ops with a deadline, earliest first */
    band_time armed_for;       /* the deadline the timer is armed for; BAND_FOREVER: idle */
    struct band__node pending; /* every op whose callback has not run, submission order */
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

/* The op's waiter: the first member of whichever band operation it is. */
static inline band_waiter *band_uv__waiter(band_uv_op *op)
{
    switch (op->_kind) {
    case BAND_UV__SEND:
        return &op->_u.send.w;
    case BAND_UV__RECV:
        return &op->_u.recv.w;
    default:
        return &op->_u.w;
    }
}

/* ---- shared by the adapter's files (loop thread unless noted) ---- */

/* The wake function of every op: hands it to the loop. Any thread. */
void band_uv__wake(band_waiter *w);

/* Ends a QUEUED or just-submitted op with @status decided on the loop: pushes it to the
 * ready list as DONE. */
void band_uv__finish(band_uv *u, band_uv_op *op, int status);

/* Accepts a submission whose primitive call returned @rc (0, BAND_PENDING or a refusal
 * other than BAND_EINVAL): links the op, arms its deadline or finishes it. */
void band_uv__accept(band_uv *u, band_uv_op *op, int rc, band_time deadline);

/* Cancels a QUEUED op with @reason through its primitive. 0: the op was finished with
 * @reason; BAND_EALREADY: its wake delivers it (marked CANCELLING). */
int band_uv__cancel_queued(band_uv_op *op, int reason);

/* Deadline heap and timer. */
void band_uv__dl_add(band_uv *u, band_uv_op *op, band_time deadline);
void band_uv__dl_del(band_uv *u, band_uv_op *op);
void band_uv__timer_cb(uv_timer_t *t);

/* Close: finishes when nothing is pending and no waker is left. */
void band_uv__maybe_finish_close(band_uv *u);

#endif /* BAND_UV_INTERNAL_H */

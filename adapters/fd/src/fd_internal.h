/* SPDX-License-Identifier: MIT */
/*
 * fd_internal.h - the completion queue's private state, shared by libband-fd's sources.
 *
 * Design notes
 * ------------
 * The queue never looks at a primitive. It owns the wake of one band_waiter per op (bound
 * by band_fd_queue_bind()), and everything else follows from the wake contract: a waiter that
 * queued ends exactly once, by its wake or by a band_waiter_cancel() that returned 0.
 *
 * Who touches what. The owner thread owns everything in struct band_fd_queue except
 * @ready, @armed and @cancel_scan, and every op from bind until reap hands it back, except
 * the op's _ready node while a wake pushes it. A wake (any thread) reads
 * op->_q, pushes op->_ready onto q->ready, writes the eventfd when the list was empty, and
 * decrements q->armed, in that order: after the push the owner may reap and free the op,
 * and after the decrement it may free the queue. A token's hook (any thread, maybe a
 * signal handler, under the token's lock) sets q->cancel_scan and writes the eventfd,
 * both async-signal-safe; reap then walks the owned ops and cancels those whose token is
 * requested. Hand-back removes the hook, and band_cancel_hook_remove() returns only once
 * a running hook has returned, so no hook touches a freed queue.
 *
 * Op states (op->_state, owner only):
 *   IDLE     no queue owns it (never bound, or reaped).
 *   BOUND    band_fd_queue_bind() prepared its waiter; the primitive may already hold it (and
 *            even have woken it), but the queue does not know its answer yet.
 *   WAITING  started with BAND_PENDING: either a wake will push it (exactly once), or a
 *            cancel that returns 0 ends it. Its result is read from the waiter at reap.
 *            A band_fd_queue_at() op waits in this state too, with no waiter, until its due
 *            time or a cancel ends it.
 *   DONE     the owner already knows the result (answered at once, cancelled or timed
 *            out with a cancel that returned 0, due time reached): op->_result holds it
 *            (op->status shows BAND_PENDING until the hand-back), it was posted to the
 *            ready list by the owner, and no wake will come.
 *
 * No lost signal. Pushers write the eventfd on the list's empty-to-non-empty edge. Reap
 * reads (drains) the eventfd BEFORE it looks at the token flag and takes the list: a push
 * or a hook that the take missed writes again. Ops taken but not returned (more than @max)
 * stay in the owner's batch FIFO, and reap writes the eventfd before returning so the loop
 * comes back.
 *
 * Close withdraws every WAITING op (a cancel that returns 0 posts it as DONE; one that
 * answers BAND_EALREADY leaves it to its wake) and sets @closed, which makes bind and at()
 * refuse and start withdraw a BOUND op that queued. Reap hands everything back as usual.
 *
 * armed counts the ops whose wake may still run (BOUND and WAITING ops with a waiter,
 * minus those whose cancel returned 0 or whose start reported an answer at once).
 * Destroy refuses while the queue owns an op; once it owns none, armed can only count a
 * wake that pushed its (already reaped) op and has not yet decremented, so destroy waits
 * for it to reach 0 and no wake touches the queue after it is freed (libuv's
 * uv_async_send busy counter, same reason).
 */
#ifndef BAND_FD_INTERNAL_H
#define BAND_FD_INTERNAL_H

/* The common node types first: band/fd.h then uses these definitions (its layout note). */
#include "deadline_heap.h"
#include "ready_list.h"

/* After the common headers, on purpose (see above). */
#include "band/fd.h"

#include <stdatomic.h>
#include <stddef.h>

enum band__fd_queue_state {
    BAND__FD_QUEUE_IDLE = 0,
    BAND__FD_QUEUE_BOUND = 1,
    BAND__FD_QUEUE_WAITING = 2,
    BAND__FD_QUEUE_DONE = 3,
};

struct band_fd_queue {
    int efd;                       /* the eventfd; read only by reap, written by signal */
    struct band__ready_list ready; /* completions pushed by wakes and by the owner */
    atomic_size_t armed;           /* ops whose wake may still run */
    atomic_int cancel_scan;        /* a token hook fired: look for requested tokens */
    char pad[64];                  /* keeps the wakes' cache line off the owner's fields */
    /* owner only: */
    struct band__dl_heap heap;           /* deadlines and due times of WAITING ops */
    struct band__ready_node *batch_head; /* taken from @ready, not yet returned */
    struct band__ready_node **batch_tail;
    band_fd_queue_op *first, *last; /* every op the queue owns, in bind order */
    size_t count;                   /* how many */
    int closed;                     /* band_fd_queue_close() was called */
};

/* The op a ready node or a heap node belongs to. */
static inline band_fd_queue_op *band__fd_queue_op_of_ready(struct band__ready_node *n)
{
    return (band_fd_queue_op *)(void *)((char *)n - offsetof(band_fd_queue_op, _ready));
}

static inline band_fd_queue_op *band__fd_queue_op_of_dl(struct band__dl_node *n)
{
    return (band_fd_queue_op *)(void *)((char *)n - offsetof(band_fd_queue_op, _dl));
}

/* Make the eventfd readable (any thread). A full counter is already readable: ignored. */
void band__fd_queue_signal(band_fd_queue *q);

/* Owner: append @op, which must be DONE, to the ready list, signalling on the edge. */
void band__fd_queue_post(band_fd_queue *q, band_fd_queue_op *op);

/* Owner: @op's operation ended with @status and no wake will come (DONE). */
void band__fd_queue_finish(band_fd_queue *q, band_fd_queue_op *op, int status);

/* Owner: drop @op's deadline, if it has one in the heap. */
void band__fd_queue_forget_deadline(band_fd_queue *q, band_fd_queue_op *op);

/* Owner: take @op off the owned list and its token, settle its status, make it IDLE. */
void band__fd_queue_hand_back(band_fd_queue *q, band_fd_queue_op *op);

/* Owner: withdraw a WAITING @op with @reason. 0: it is DONE with @reason (posted when
 * @post); BAND_EALREADY: its wake brings the result. */
int band__fd_queue_withdraw(band_fd_queue *q, band_fd_queue_op *op, int reason, int post);

/* The wake function of every bound waiter (any thread). */
void band__fd_queue_wake(band_waiter *w);

/* The hook of every op with a token (any thread, also a signal handler). */
void band__fd_queue_hook(band_cancel_hook *h);

#endif /* BAND_FD_INTERNAL_H */

/*
 * fd_internal.h - the completion queue's private state, shared by libband-fd's sources.
 *
 * Design notes
 * ------------
 * Who touches what. The owner thread owns everything in struct band_fdq except @ready and
 * @armed, and every op from submission until it is handed back (reap or destroy), except
 * the op's _ready node while a wake pushes it. A wake (any thread) reads op->_q, pushes
 * op->_ready onto q->ready, writes the eventfd when the list was empty, and decrements
 * q->armed, in that order: after the push the owner may reap and free the op, and after
 * the decrement it may free the queue.
 *
 * Op states (op->_state, owner only):
 *   IDLE     no queue owns it (never submitted, reaped, or handed back by destroy).
 *   WAITING  submitted and queued on its primitive: either a wake will push it (exactly
 *            once), or a cancel that returns 0 ends it. Its result is read from the
 *            waiter at reap.
 *   DONE     the owner already knows the result (completed during submission, cancelled
 *            or timed out with a cancel that returned 0): op->status holds it, it was
 *            posted to the ready list or the batch by the owner, and no wake will come.
 *
 * No lost signal. Pushers write the eventfd on the list's empty-to-non-empty edge. Reap
 * reads (drains) the eventfd BEFORE it takes the list: a push that the take missed found
 * the list empty and writes again. Ops taken but not returned (more than @max) stay in the
 * owner's batch FIFO, and reap writes the eventfd before returning so the loop comes back.
 *
 * armed counts the ops whose wake may still run (WAITING ops, minus those whose cancel
 * returned 0). destroy() waits for it to reach 0 after cancelling, so no wake can touch
 * the queue after it is freed (libuv's uv_async_send busy counter, same reason).
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

enum band__fdq_kind {
    BAND__FDQ_ACQUIRE = 1,
    BAND__FDQ_SEND = 2,
    BAND__FDQ_RECV = 3,
};

enum band__fdq_state {
    BAND__FDQ_IDLE = 0,
    BAND__FDQ_WAITING = 1,
    BAND__FDQ_DONE = 2,
};

struct band_fdq {
    int efd;                       /* the eventfd; read only by reap, written by signal */
    struct band__ready_list ready; /* completions pushed by wakes and by the owner */
    atomic_size_t armed;           /* ops whose wake may still run */
    char pad[64];                  /* keeps the wakes' cache line off the owner's fields */
    /* owner only: */
    struct band__dl_heap heap;           /* deadlines of WAITING ops that have one */
    struct band__ready_node *batch_head; /* taken from @ready, not yet returned */
    struct band__ready_node **batch_tail;
    band_fdq_op *first, *last; /* every op the queue owns, in submission order */
    size_t count;              /* how many */
};

/* The op a ready node or a heap node belongs to. */
static inline band_fdq_op *band__fdq_op_of_ready(struct band__ready_node *n)
{
    return (band_fdq_op *)(void *)((char *)n - offsetof(band_fdq_op, _ready));
}

static inline band_fdq_op *band__fdq_op_of_dl(struct band__dl_node *n)
{
    return (band_fdq_op *)(void *)((char *)n - offsetof(band_fdq_op, _dl));
}

/* The waiter embedded in @op (first member of every union variant). */
static inline band_waiter *band__fdq_waiter(band_fdq_op *op)
{
    return &op->_u.w;
}

/* Make the eventfd readable (any thread). A full counter is already readable: ignored. */
void band__fdq_signal(band_fdq *q);

/* Owner: append @op, which must be DONE, to the ready list, signalling on the edge. */
void band__fdq_post(band_fdq *q, band_fdq_op *op);

/* Owner: @op's operation ended with @status and no wake will come (DONE). */
void band__fdq_finish(band_fdq *q, band_fdq_op *op, int status);

/* Owner: drop @op's deadline, if it has one in the heap. */
void band__fdq_forget_deadline(band_fdq *q, band_fdq_op *op);

/* Owner: take @op off the owned list, settle status and bytes, make it IDLE. */
void band__fdq_hand_back(band_fdq *q, band_fdq_op *op);

/* The wake function of every op's waiter (any thread). */
void band__fdq_wake(band_waiter *w);

#endif /* BAND_FD_INTERNAL_H */

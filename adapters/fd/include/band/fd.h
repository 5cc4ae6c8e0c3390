/* SPDX-License-Identifier: MIT */
/**
 * @file band/fd.h
 * @brief libband-fd: a completion queue with an eventfd, for any event loop.
 *
 * A band_fd_queue lets a program that already runs an event loop (epoll, io_uring,
 * libevent, poll) wait for any band operation in that loop. The queue knows no primitive:
 * every band operation that can wait ends through a band_waiter (band/core.h), and the
 * queue bridges that waiter. So the semaphore, budgets, channels (send, receive, reserve),
 * oneshot, watch, broadcast, wait group, latch, shutdown scope, fair share and admission
 * are all waited for the same way, and so will any primitive added later. Whenever an
 * operation completes (granted, refused, closed, timed out or cancelled) the queue's
 * eventfd becomes readable, and band_fd_queue_reap() hands the completed operations back,
 * oldest first. docs/fd.md has the long form and the loop skeletons for epoll and
 * io_uring.
 *
 * One operation, three steps, on the owner thread:
 *
 * @code
 *     band_fd_queue_bind(q, op, &send.w, deadline, cancel); // the waiter is the queue's
 *     int rc = band_chan_send_async(chan, &v, 1, &send);    // any primitive's _async call
 *     band_fd_queue_start(op, rc);                          // hand its answer over
 * @endcode
 *
 *  - One path. Every started operation is reported by band_fd_queue_reap() exactly once,
 *    with its result in op->status: the _async call's own answer when it completed or
 *    failed at once (0 or a negative code), or the result of the wait. Only a misuse of
 *    the queue itself (BAND_EINVAL), or a closed queue (BAND_ECLOSED), is answered by
 *    bind, start or band_fd_queue_at(), and then nothing is reported. Results stay where
 *    the primitive puts them: permits are the owner's when a semaphore acquisition reports
 *    0 (band_permit_adopt() wraps them), a received element is in the receive op's buffer,
 *    a grant in the admission request.
 *  - No allocation per operation. A band_fd_queue_op is the caller's memory, embedded
 *    beside the primitive's op in a request, a task or a connection; the queue allocates
 *    only in band_fd_queue_create().
 *  - Wakes from any thread. A release or a send on another thread completes an operation
 *    there; its wake pushes the op onto a lock-free list and writes the eventfd only when
 *    that list was empty. Nothing is lost when writes coalesce: band_fd_queue_reap() reads
 *    the eventfd first and takes the list after, so a completion that lands after the take
 *    signals again.
 *  - The fd stays readable while anything is left to reap: if band_fd_queue_reap() returns
 *    max operations and more are waiting, it signals again before it returns. So the fd
 *    may be watched level- or edge-triggered (EPOLLET), or with a one-shot IORING_OP_
 *    POLL_ADD re-armed after each reap. Never read the eventfd yourself.
 *  - Deadlines. The queue arms no timer: it keeps the deadlines of its pending operations
 *    in a heap, tells the loop the next one (band_fd_queue_next_deadline(), or
 *    band_fd_queue_timeout_ms() rounded up for epoll_wait), and band_fd_queue_reap() times
 *    out every operation whose deadline is at or before band_now(). A deadline never fires
 *    early. A timed-out operation leaves its primitive with band_waiter_cancel(
 *    BAND_ETIMEDOUT): whatever it had been partially granted goes back to the next
 *    waiters. A grant that races with the deadline wins and is reported as a grant.
 *    band_fd_queue_at() is an operation with no primitive that completes, with 0, at its
 *    deadline: a rate budget's booking falls due in the loop that way.
 *  - Cancellation: band_fd_queue_cancel(), a cancellation token (band/cancel.h) given to
 *    bind, or band_fd_queue_close(). A token may be requested from any thread or a signal
 *    handler: its hook only writes the eventfd, and the next reap cancels on the owner
 *    thread.
 *  - Life: band_fd_queue_create(); band_fd_queue_close() cancels what is left, and reap
 *    reports it; band_fd_queue_destroy() frees a queue that owns no operation any more.
 *
 * Threads. A queue has one owner thread at a time (hand it over with your own
 * synchronization): every band_fd_queue_* function except band_fd_queue_fd() must be
 * called on it, and never from inside a band wake function. Wakes run on any thread. The
 * primitives an operation was submitted to are used from any thread as usual.
 *
 * Private fields. The op embeds the node types of band/adapter_nodes.h (installed with
 * the adapters, shared with band/uv.h), so no field is ever type-punned; test_fd checks
 * that the library and a caller see the same layout.
 */
#ifndef BAND_FD_H
#define BAND_FD_H

#include "band/adapter_nodes.h" /* private node types the op struct embeds */
#include "band/band.h"          /* every primitive whose operations the queue bridges */

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A completion queue: an eventfd, a ready list and a deadline heap. One owner thread. */
typedef struct band_fd_queue band_fd_queue;

/** @brief One operation in a band_fd_queue (struct band_fd_queue_op), embedded by its owner. */
typedef struct band_fd_queue_op band_fd_queue_op;

/**
 * @brief One operation in a band_fd_queue, embedded by its owner beside the primitive's op
 *        (or waiter) it bridges.
 *
 * Zero-initialise it or call band_fd_queue_op_init() once; after that it can be bound
 * again each time band_fd_queue_reap() has handed it back. From bind until then the queue
 * owns it: keep it alive and do not touch it, except to read data. 160 bytes on LP64
 * platforms.
 */
struct band_fd_queue_op {
    void *data; /**< public: the owner's pointer; band never touches it */
    int status; /**< public: BAND_PENDING while the queue owns the op; after reap, the result:
                   0 or a negative BAND_E* code; BAND_EINVAL or BAND_ECLOSED after a bind,
                   start or band_fd_queue_at() of this op was refused */
    /** @privatesection */
    /* private: owned by the queue from bind until reap */
    unsigned char _state;   /* idle, bound, waiting (a wake may come), done (result known) */
    unsigned char _in_heap; /* its deadline is in the heap */
    unsigned char _hooked;  /* _hook is added to _cancel */
    unsigned char _timed;   /* band_fd_queue_at(): completes with 0 at its deadline */
    band_waiter *_w;        /* the bridged waiter, or NULL for band_fd_queue_at() */
    band_fd_queue *_q;
    band_fd_queue_op *_next, *_prev; /* the queue's list of ops it owns, in bind order */
    struct band__ready_node _ready;  /* ready list, then the reap batch */
    struct band__dl_node _dl;        /* deadline heap */
    band_cancel_hook _hook;          /* on _cancel while the operation waits */
    band_cancel *_cancel;            /* the token given to bind or band_fd_queue_at() */
    band_time _deadline;             /* the deadline (of band_fd_queue_at(): its due time) */
    int _result;                     /* the result once known, stored in status at reap */
};

/**
 * @brief Make @p op idle, with owner pointer @p data and status 0.
 *
 * Equivalent to zero-initialising it and setting @p data. Must not be called while a queue
 * owns @p op. NULL is ignored. Not MT-safe with other uses of @p op.
 *
 * @param op    The operation, the caller's memory; NULL is ignored.
 * @param data  The owner's pointer stored in op->data; band never touches it.
 */
BAND_API void band_fd_queue_op_init(band_fd_queue_op *op, void *data);

/**
 * @brief Allocate a completion queue and its eventfd (EFD_NONBLOCK | EFD_CLOEXEC).
 *
 * Returns 0 and stores the queue in *@p out, BAND_EINVAL when @p out is NULL, BAND_ENOMEM, or
 * the negative errno of eventfd() (for example -EMFILE when the process is out of file
 * descriptors). On failure *@p out is unchanged and nothing is allocated. The calling thread
 * becomes the owner. Free it with band_fd_queue_destroy().
 *
 * @param[out] out  Receives the queue; must not be NULL. The caller owns it.
 * @return 0, BAND_EINVAL, BAND_ENOMEM or the negative errno of eventfd() as described
 *         above.
 */
BAND_API int band_fd_queue_create(band_fd_queue **out);

/**
 * @brief Cancel every operation @p q still owns and refuse new ones.
 *
 * Every operation still waiting is withdrawn (a partial grant goes to the next waiters)
 * and will be reaped once with BAND_ECANCELED, band_fd_queue_at() operations included; an
 * operation whose completion won that race, or that had completed and was not yet reaped,
 * keeps its real result, and its owner owns what it carries. An operation bound but not
 * yet started is cancelled by its band_fd_queue_start() (or reports what its _async call
 * answered at once). From this call on, bind and band_fd_queue_at() on @p q return
 * BAND_ECLOSED. Nothing is handed back here: band_fd_queue_reap() reports every operation
 * as usual, and the eventfd stays readable until it has; once band_fd_queue_count() is 0,
 * band_fd_queue_destroy() frees the queue. Wakes of other waiters that the returned units
 * complete run on this thread. A second close changes nothing. Returns 0, or BAND_EINVAL
 * for NULL. Owner thread only.
 *
 * @param q  The queue; must not be NULL.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_fd_queue_close(band_fd_queue *q);

/**
 * @brief Whether band_fd_queue_close() was called on @p q.
 *
 * Owner thread.
 *
 * @param q  The queue, or NULL.
 * @return 1 once band_fd_queue_close() was called on @p q, 0 before and for NULL.
 */
BAND_API int band_fd_queue_is_closed(const band_fd_queue *q);

/**
 * @brief Close the eventfd and free @p q, which owns no operation.
 *
 * Returns 0 (also for NULL), or BAND_EBUSY, changing nothing, while @p q owns operations
 * (band_fd_queue_count() > 0: bound, waiting, or completed and not yet reaped). Destroy
 * never cancels and never closes for you: close, reap until the count is 0, then destroy
 * (an idle queue, never closed, can be destroyed at once). It only waits, briefly, for a
 * wake that already handed its op over and is still returning on another thread (a push
 * and a write), so that no wake touches the freed queue. Owner thread only; never from
 * inside a band wake function.
 *
 * @param q  The queue, or NULL (a no-op). Nobody may use it after 0.
 * @return 0, or BAND_EBUSY as described above.
 */
BAND_API int band_fd_queue_destroy(band_fd_queue *q);

/**
 * @brief The eventfd to watch for readability (POLLIN / EPOLLIN).
 *
 * Readable whenever band_fd_queue_reap() has an operation to return; possibly readable,
 * harmlessly, when it has none. Only band_fd_queue_reap() reads it: never read, write or
 * close it yourself. Returns the fd, or BAND_EINVAL for NULL. MT-safe.
 *
 * @param q  The queue.
 * @return The eventfd (owned by the queue), or BAND_EINVAL for NULL.
 */
BAND_API int band_fd_queue_fd(const band_fd_queue *q);

/**
 * @brief Make the waiter @p w of a band operation complete through @p q, as @p op.
 *
 * Calls band_waiter_init(@p w) with the queue's wake and sets @p w->deadline to @p deadline (so
 * a deadline-aware primitive sees it at submission). Bind after the primitive's own
 * initialisation of the op that embeds @p w, if it has one (band_admit_req_init()), then
 * submit @p w with that primitive's _async function and hand its answer to
 * band_fd_queue_start() before any other band_fd_queue_* call on @p q; nothing else may
 * touch @p w until @p op is reaped (never cancel it directly: use band_fd_queue_cancel()). A
 * primitive that cancels a waiter and then calls its wake itself (band_shutdown_watch())
 * is fine: its result is reaped like any other.
 * @p deadline is absolute (band_now() nanoseconds); BAND_FOREVER waits without limit, and a
 * time already past means "do not wait": an operation that queues is withdrawn at once
 * and is reaped with BAND_ETIMEDOUT. @p cancel (NULL: none) is a token whose request cancels
 * the wait (BAND_ECANCELED); it must outlive the operation until it is reaped.
 * @p w must not be pending, and must hold a waiter's state (zeroed, initialised, or ended):
 * bind refuses a pending one rather than take its wake away.
 * Returns 0 (@p op is bound and owned by @p q: start it), BAND_ECLOSED when @p q is closed, or
 * BAND_EINVAL (NULL @p q, @p op or @p w, @p op owned by a queue, @p w pending): nothing is bound
 * then, and an idle @p op's status holds that code. Owner thread only.
 *
 * @param q         The queue; must not be NULL or closed.
 * @param op        The operation, idle (zeroed or band_fd_queue_op_init()) or reaped; the
 *                  caller's, owned by @p q until it is reaped.
 * @param w         The primitive's waiter to bridge; not pending.
 * @param deadline  Absolute time on band's clock (BAND_FOREVER: no limit).
 * @param cancel    Cancellation token, or NULL for none; must outlive the operation until
 *                  it is reaped.
 * @return 0, BAND_ECLOSED or BAND_EINVAL as described above.
 */
BAND_API int band_fd_queue_bind(band_fd_queue *q, band_fd_queue_op *op, band_waiter *w,
                                band_time deadline, band_cancel *cancel);

/**
 * @brief Hand the answer @p rc of the _async call that submitted the bound waiter to the
 *        queue.
 *
 * BAND_PENDING: the operation waits; the queue keeps its deadline in the heap and hooks
 * the token, and band_fd_queue_reap() reports how the wait ended (on a closed queue it is
 * withdrawn at once and reaped with BAND_ECANCELED). Any other band result (0 or a
 * negative code: completed or refused at once, no wake follows) is reaped as the op's
 * status as it is. The primitive must outlive the operation until it is reaped.
 * Returns 0 (band_fd_queue_reap() returns @p op exactly once), or BAND_EINVAL (NULL or
 * unbound @p op; @p rc positive but not BAND_PENDING; or the waiter no longer carries the
 * queue's wake because it was initialised again after the bind): then @p op is idle again
 * with status BAND_EINVAL and is never reported. Owner thread only.
 *
 * @param op  The operation band_fd_queue_bind() bound.
 * @param rc  The _async call's answer: BAND_PENDING, 0 or a negative band code.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_fd_queue_start(band_fd_queue_op *op, int rc);

/**
 * @brief Complete @p op at time @p deadline through @p q, with no primitive behind it.
 *
 * An operation that waits for nothing but its deadline: reaching it is its success.
 * band_fd_queue_reap() returns it with status 0 once band_now() reached @p deadline (never
 * before; a time already past is reaped by the next reap), or BAND_ECANCELED when
 * band_fd_queue_cancel(), @p cancel or band_fd_queue_close() came first. @p deadline counts
 * for band_fd_queue_next_deadline() like any other. For a rate budget: book with
 * band_rate_reserve() (a bucket on the default clock), then band_fd_queue_at(q, op,
 * ticket.at, cancel); on BAND_ECANCELED give the booking back with
 * band_rate_ticket_cancel().
 * Returns 0 (reaped exactly once), BAND_ECLOSED when @p q is closed, or BAND_EINVAL (NULL @p q
 * or @p op, @p op owned by a queue): then nothing is queued or reported, and an idle @p op's
 * status holds that code. Owner thread only.
 *
 * @param q         The queue; must not be NULL or closed.
 * @param op        The operation, idle or reaped; owned by @p q until it is reaped.
 * @param deadline  When to complete, absolute time on band's clock.
 * @param cancel    Cancellation token, or NULL for none; must outlive the operation until
 *                  it is reaped.
 * @return 0, BAND_ECLOSED or BAND_EINVAL as described above.
 */
BAND_API int band_fd_queue_at(band_fd_queue *q, band_fd_queue_op *op, band_time deadline,
                              band_cancel *cancel);

/**
 * @brief Withdraw a submitted operation.
 *
 * Returns 0 when @p op was still waiting: it left its primitive (a partial grant went to the
 * next waiters) and band_fd_queue_reap() will return it once with status BAND_ECANCELED.
 * Returns BAND_EALREADY when it had already completed (granted, refused, timed out or
 * cancelled before): band_fd_queue_reap() will return it once with that result, and the
 * owner owns what it carries (permits, an element). Returns BAND_EINVAL when @p op is NULL
 * or not started (idle, bound but not started, or already reaped). Wakes of other waiters
 * that the returned units complete run on this thread. Owner thread only.
 *
 * @param op  The operation.
 * @return 0, BAND_EALREADY or BAND_EINVAL as described above.
 */
BAND_API int band_fd_queue_cancel(band_fd_queue_op *op);

/**
 * @brief Take up to @p max completed operations, oldest first, into @p out.
 *
 * First times out every pending operation whose deadline is at or before band_now() (each
 * is reported BAND_ETIMEDOUT, or, if a completion won the race, with its real result) and
 * completes every band_fd_queue_at() operation that fell due, then reads the eventfd,
 * cancels the operations whose token was requested, and collects what completed on any
 * thread. Returns how many ops it stored in @p out[0..], in the order they completed; each
 * is handed back to its owner (idle, status set), so it may be freed or bound again. When
 * more are left than @p max, the eventfd is signalled again before this returns, so the
 * loop comes back. Returns 0 for a NULL @p q, or a NULL @p out with @p max > 0. @p max 0 only
 * times out and collects. Owner thread only.
 *
 * @param q         The queue.
 * @param[out] out  An array of @p max pointers that receives the completed operations;
 *                  NULL only with @p max 0.
 * @param max       The most operations to return.
 * @return How many operations were stored in @p out (0 for the bad arguments above).
 */
BAND_API size_t band_fd_queue_reap(band_fd_queue *q, band_fd_queue_op **out, size_t max);

/**
 * @brief The earliest deadline among pending operations, or BAND_FOREVER when none has one
 *        (also for NULL).
 *
 * An absolute CLOCK_MONOTONIC time in ns: arm an IORING_OP_TIMEOUT with
 * IORING_TIMEOUT_ABS at it, or a timerfd, and call band_fd_queue_reap() when it fires. It
 * may name an op that already completed (harmless: the fd is readable then). Owner thread.
 *
 * @param q  The queue, or NULL.
 * @return The earliest deadline, or BAND_FOREVER.
 */
BAND_API band_time band_fd_queue_next_deadline(const band_fd_queue *q);

/**
 * @brief Milliseconds until band_fd_queue_next_deadline(), rounded UP, for
 *        epoll_wait()/poll().
 *
 * Returns -1 when there is no deadline (or for NULL), 0 when it has passed, INT_MAX at
 * most. A wait of that long never ends before the deadline. Owner thread.
 *
 * @param q  The queue, or NULL.
 * @return The timeout in milliseconds, -1 for none, as described above.
 */
BAND_API int band_fd_queue_timeout_ms(const band_fd_queue *q);

/**
 * @brief How many operations @p q owns: bound and not yet reaped (pending or completed).
 *
 * Owner thread.
 *
 * @param q  The queue, or NULL.
 * @return The number of operations @p q owns, 0 for NULL.
 */
BAND_API size_t band_fd_queue_count(const band_fd_queue *q);

#ifdef __cplusplus
}
#endif
#endif /* BAND_FD_H */

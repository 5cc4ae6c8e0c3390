/*
 * band/fd.h - libband-fd: a completion queue with an eventfd, for any event loop.
 *
 * A band_fdq lets a program that already runs an event loop (epoll, io_uring, libevent,
 * poll) wait for band operations in that loop. The owner submits acquisitions, sends and
 * receives into the queue; whenever an operation completes (granted, refused, closed,
 * timed out or cancelled) the queue's eventfd becomes readable, and band_fdq_reap() hands
 * the completed operations back, oldest first. docs/fd.md has the long form and the loop
 * skeletons for epoll and io_uring.
 *
 *  - One path. Every accepted submission is reported by band_fdq_reap() exactly once,
 *    even when it completed during the submitting call (granted at once, or refused
 *    because the primitive is closed): submitting never reports anything itself. Only a
 *    misuse (BAND_EINVAL) is answered by the submitting call, and then nothing is queued.
 *  - No allocation per operation. A band_fdq_op is the caller's memory, embedded in a
 *    request, a task or a connection; the queue allocates only in band_fdq_create().
 *  - Wakes from any thread. A release or a send on another thread completes an operation
 *    there; its wake pushes the op onto a lock-free list and writes the eventfd only when
 *    that list was empty. Nothing is lost when writes coalesce: band_fdq_reap() reads the
 *    eventfd first and takes the list after, so a completion that lands after the take
 *    signals again.
 *  - The fd stays readable while anything is left to reap: if band_fdq_reap() returns
 *    @max operations and more are waiting, it signals again before it returns. So the fd
 *    may be watched level- or edge-triggered (EPOLLET), or with a one-shot IORING_OP_
 *    POLL_ADD re-armed after each reap. Never read the eventfd yourself.
 *  - Deadlines. The queue arms no timer: it keeps the deadlines of its pending operations
 *    in a heap, tells the loop the next one (band_fdq_next_deadline(), or
 *    band_fdq_timeout_ms() rounded up for epoll_wait), and band_fdq_reap() times out every
 *    operation whose deadline is at or before band_now(). A deadline never fires early. A
 *    timed-out operation leaves its primitive with band_waiter_cancel(BAND_ETIMEDOUT):
 *    whatever it had been partially granted goes back to the next waiters. A grant that
 *    races with the deadline wins and is reported as a grant.
 *
 * Threads. A queue has one owner thread at a time (hand it over with your own
 * synchronization): every band_fdq_* function except band_fdq_fd() must be called on it,
 * and never from inside a band wake function. Wakes run on any thread. The primitives an
 * operation was submitted to are used from any thread as usual.
 *
 * Private fields. The op embeds the node types of band/adapter_nodes.h (installed with
 * the adapters, shared with band/uv.h), so no field is ever type-punned; test_fd checks
 * that the library and a caller see the same layout.
 */
#ifndef BAND_FD_H
#define BAND_FD_H

#include "band/adapter_nodes.h" /* private node types the op struct embeds */
#include "band/chan.h"
#include "band/core.h"
#include "band/error.h"
#include "band/permit.h"
#include "band/sem.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A completion queue: an eventfd, a ready list and a deadline heap. One owner thread. */
typedef struct band_fdq band_fdq;

typedef struct band_fdq_op band_fdq_op;

/**
 * struct band_fdq_op - one operation submitted to a band_fdq, embedded by its owner.
 *
 * Zero-initialise it or call band_fdq_op_init() once; after that it can be submitted
 * again each time band_fdq_reap() (or band_fdq_destroy()) has handed it back. From
 * submission until then the queue owns it: keep it alive and do not touch it, except to
 * read @data. 176 bytes on LP64 platforms.
 */
struct band_fdq_op {
    void *data; /* public: the owner's pointer; band never touches it */
    int status; /* public: BAND_PENDING while the queue owns the op; after reap, the result:
                   0 or a negative BAND_E* code (see each submit function); BAND_EINVAL
                   after a submission of this idle op was refused as a misuse */
    /* private: owned by the queue from submission until reap */
    unsigned char _kind;  /* acquire, send or receive */
    unsigned char _state; /* idle, waiting (a wake may come), done (result known) */
    unsigned char _in_heap;
    unsigned char _taken; /* the permit was moved out by band_fdq_op_take_permit() */
    union {
        band_waiter w;
        struct band_chan_send_op send;
        struct band_chan_recv_op recv;
    } _u;
    band_fdq *_q;
    union {
        struct {
            band_sem *sem;
            uint64_t n;
        } acq;
        uint64_t *bytes_out; /* receive: where reap stores the element's bytes */
    } _a;
    band_fdq_op *_next, *_prev;     /* the queue's list of ops it owns, in submission order */
    struct band__ready_node _ready; /* ready list, then the reap batch */
    struct band__dl_node _dl;       /* deadline heap */
};

/**
 * band_fdq_op_init() - make @op idle, with owner pointer @data and status 0.
 *
 * Equivalent to zero-initialising it and setting @data. Must not be called while a queue
 * owns @op. NULL is ignored.
 */
BAND_API void band_fdq_op_init(band_fdq_op *op, void *data);

/**
 * band_fdq_create() - allocate a completion queue and its eventfd
 * (EFD_NONBLOCK | EFD_CLOEXEC).
 *
 * Returns 0 and stores the queue in *@out, BAND_EINVAL when @out is NULL, BAND_ENOMEM, or
 * the negative errno of eventfd() (for example -EMFILE when the process is out of file
 * descriptors). On failure *@out is unchanged. The calling thread becomes the owner.
 */
BAND_API int band_fdq_create(band_fdq **out);

/**
 * band_fdq_fd() - the eventfd to watch for readability (POLLIN / EPOLLIN).
 *
 * Readable whenever band_fdq_reap() has an operation to return; possibly readable,
 * harmlessly, when it has none. Only band_fdq_reap() reads it: never read, write or close
 * it yourself. Returns the fd, or BAND_EINVAL for NULL. MT-safe.
 */
BAND_API int band_fdq_fd(const band_fdq *q);

/**
 * band_fdq_acquire() - take @n permits of @s through @q, waiting until @deadline.
 *
 * Returns 0 when the acquisition was accepted: band_fdq_reap() will return @op exactly
 * once, with status 0 (the owner holds @n permits of @s: take them with
 * band_fdq_op_take_permit(), or release them with band_sem_release()), BAND_ETIMEDOUT (the
 * deadline passed first; nothing is held, and any partial grant went to the next
 * waiters), BAND_ECANCELED (band_fdq_cancel() or band_fdq_destroy() won), or the refusals
 * of band_sem_acquire_async(): BAND_ECLOSED, BAND_E2BIG, BAND_EOVERFLOW. A deadline at or
 * before band_now() means "do not wait": the op never queues then, and is reported as
 * granted or as BAND_ETIMEDOUT. BAND_FOREVER waits without limit.
 * Returns BAND_EINVAL, and nothing is queued or reported, when @q, @op or @s is NULL, @op
 * is owned by a queue, or @n exceeds BAND_MAX_UNITS. Owner thread only. @s must
 * outlive the operation (until it is reaped).
 */
BAND_API int band_fdq_acquire(band_fdq *q, band_fdq_op *op, band_sem *s, uint64_t n,
                              band_time deadline);

/**
 * band_fdq_send() - send a copy of *@elem, which stands for @bytes against the byte
 * bound, on @c through @q, waiting for room until @deadline.
 *
 * Returns 0 when accepted: band_fdq_reap() will return @op exactly once, with status 0
 * (the element was queued or handed to a receiver), BAND_ETIMEDOUT, BAND_ECANCELED, or a
 * refusal of band_chan_send_async(): BAND_ECLOSED, BAND_E2BIG. On any status but 0 the
 * element stays with the caller. A past deadline means "do not wait", as for
 * band_fdq_acquire(). @elem must stay valid and unchanged until the op is reaped: it is
 * copied when the send is granted. Returns BAND_EINVAL, and nothing is queued or
 * reported, for a NULL argument, an op owned by a queue, a channel with an overflow
 * policy, or @bytes out of range (see band_chan_try_send()). Owner thread only.
 */
BAND_API int band_fdq_send(band_fdq *q, band_fdq_op *op, band_chan *c, const void *elem,
                           uint64_t bytes, band_time deadline);

/**
 * band_fdq_recv() - receive the oldest element of @c into @out through @q, waiting until
 * @deadline.
 *
 * Returns 0 when accepted: band_fdq_reap() will return @op exactly once, with status 0
 * (@out holds the element, and *@bytes, when @bytes is not NULL, its declared bytes, stored
 * by band_fdq_reap()), BAND_ETIMEDOUT, BAND_ECANCELED, or BAND_ECLOSED (closed and
 * drained). A past deadline means "do not wait". @out (elem_size bytes) and @bytes must
 * stay valid until the op is reaped. Returns BAND_EINVAL, and nothing is queued or
 * reported, when @q, @op, @c or @out is NULL or @op is owned by a queue. Owner thread
 * only.
 */
BAND_API int band_fdq_recv(band_fdq *q, band_fdq_op *op, band_chan *c, void *out, uint64_t *bytes,
                           band_time deadline);

/**
 * band_fdq_cancel() - withdraw a submitted operation.
 *
 * Returns 0 when @op was still waiting: it left its primitive (a partial grant went to the
 * next waiters) and band_fdq_reap() will return it once with status BAND_ECANCELED.
 * Returns BAND_EALREADY when it had already completed (granted, refused, timed out or
 * cancelled before): band_fdq_reap() will return it once with that result, and the owner
 * owns what it carries (permits, an element). Returns BAND_EINVAL when @op is NULL or no
 * queue owns it (never submitted, or already reaped). Wakes of other waiters that the
 * returned units complete run on this thread. Owner thread only.
 */
BAND_API int band_fdq_cancel(band_fdq_op *op);

/**
 * band_fdq_reap() - take up to @max completed operations, oldest first, into @out.
 *
 * First times out every pending operation whose deadline is at or before band_now() (each
 * is reported BAND_ETIMEDOUT, or, if a completion won the race, with its real result),
 * then reads the eventfd and collects what completed on any thread. Returns how many ops
 * it stored in @out[0..], in the order they completed; each is handed back to its owner
 * (idle, status set, and for a receive *bytes stored), so it may be freed or submitted
 * again. When more are left than @max, the eventfd is signalled again before this returns,
 * so the loop comes back. Returns 0 for a NULL @q, or a NULL @out with @max > 0. @max 0
 * only times out and collects. Owner thread only.
 */
BAND_API size_t band_fdq_reap(band_fdq *q, band_fdq_op **out, size_t max);

/**
 * band_fdq_next_deadline() - the earliest deadline among pending operations, or
 * BAND_FOREVER when none has one (also for NULL).
 *
 * An absolute CLOCK_MONOTONIC time in ns: arm an IORING_OP_TIMEOUT with
 * IORING_TIMEOUT_ABS at it, or a timerfd, and call band_fdq_reap() when it fires. It may
 * name an op that already completed (harmless: the fd is readable then). Owner thread.
 */
BAND_API band_time band_fdq_next_deadline(const band_fdq *q);

/**
 * band_fdq_timeout_ms() - milliseconds until band_fdq_next_deadline(), rounded UP, for
 * epoll_wait()/poll(): -1 when there is no deadline (or for NULL), 0 when it has passed,
 * INT_MAX at most. A wait of that long never ends before the deadline. Owner thread.
 */
BAND_API int band_fdq_timeout_ms(const band_fdq *q);

/**
 * band_fdq_count() - how many operations @q owns: submitted and not yet reaped (pending
 * or completed). 0 for NULL. Owner thread.
 */
BAND_API size_t band_fdq_count(const band_fdq *q);

/**
 * band_fdq_drop_fn - receives, from band_fdq_destroy(), each operation the queue still
 * owned. @op is idle with its status set, as if reaped; the callback may take its permit,
 * consume a received element, free @op, or submit it elsewhere. It must not call band_fdq_*
 * on the queue being destroyed.
 */
typedef void band_fdq_drop_fn(band_fdq_op *op, void *ctx);

/**
 * band_fdq_destroy() - cancel every operation @q still owns, hand each back once, and free
 * @q and its eventfd.
 *
 * Every pending op is cancelled (status BAND_ECANCELED; a partial grant goes to the next
 * waiters); an op whose completion won that race, or that had completed and was not yet
 * reaped, keeps its real result. The call waits for wakes already running on other
 * threads (they only push and signal, so this is short). Then each op is handed back
 * once, in submission order: to @drop(op, @ctx) when @drop is not NULL, which then owns
 * its result; with @drop NULL, permits granted to an acquisition are released back to
 * their semaphore, and an element received stays in the op's @out buffer (status 0).
 * After this call band never touches any op again. Returns 0, or BAND_EINVAL for NULL
 * (nothing happens). Owner thread only; never from inside a band wake function.
 *
 * @drop is how destroy reports each pending op exactly once: there is no reap after it.
 */
BAND_API int band_fdq_destroy(band_fdq *q, band_fdq_drop_fn *drop, void *ctx);

/**
 * band_fdq_op_take_permit() - move the permits of a reaped, granted acquisition into the
 * empty permit @out.
 *
 * Returns 0 (*@out holds the op's n permits of its semaphore; the op holds none any
 * more), or BAND_EINVAL (nothing changes) when @op or @out is NULL, @op is not an
 * acquisition, is still owned by a queue, did not end with status 0, was already taken
 * from, or @out is not empty. Not synchronized: call it where you handle the op.
 */
BAND_API int band_fdq_op_take_permit(band_fdq_op *op, band_permit *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_FD_H */

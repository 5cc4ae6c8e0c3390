/*
 * band/uv.h - libband-uv: band operations completed as libuv callbacks.
 *
 * One band_uv serves one uv loop. It turns a band wake, which runs on whichever thread
 * completed the operation (a release, a send, a close on any thread), into a callback on
 * the loop's thread. docs/uv.md has the guide; the rules here are the contract.
 *
 *  1. Submission never calls the callback. band_uv_acquire(), band_uv_send() and
 *     band_uv_recv() return 0 when they accepted the operation: from then on its callback
 *     runs exactly once, later, on the loop thread - also when the operation completed
 *     during the submission. Any other return is a negative BAND_E* code, and then the
 *     callback never runs.
 *  2. Callbacks run in the order the operations completed (the order of their wakes).
 *  3. A deadline is enforced with one libuv timer per adapter. The callback never reports
 *     BAND_ETIMEDOUT before band_now() reached the deadline. A timed-out or cancelled
 *     operation leaves the primitive's queue and returns whatever it had been partially
 *     granted, so nothing leaks.
 *  4. A grant that races with the deadline, a cancel or a close wins: the callback then
 *     reports status 0 and the caller holds the result (permits, a sent or received
 *     element).
 *  5. The operation struct is the caller's: no allocation per operation. The adapter
 *     touches it for the last time just before it calls the callback, so the callback may
 *     free the op or submit it again.
 *  6. band_uv_close() ends every operation still queued with BAND_ECANCELED, closes the
 *     adapter's two libuv handles and frees the adapter; on_closed runs once after that.
 *
 * Threads. band_uv_create(), band_uv_close(), the three submissions, band_uv_cancel()
 * and band_uv_op_take_permit() must be called on the loop's thread (the thread that runs
 * uv_run() for the loop, or any thread while the loop is not running). The semaphores and
 * channels the operations wait on stay MT-safe: other threads release, send, receive and
 * close them as usual, and the completions they cause come back to the loop.
 *
 * Building: `pkg-config --cflags --libs band-uv`, or find_package(band COMPONENTS uv) and
 * band::band_uv. libuv's <uv.h> needs the POSIX declarations: under -std=c11 define
 * _POSIX_C_SOURCE as 200809L before the first include.
 */
#ifndef BAND_UV_H
#define BAND_UV_H

#include <stdint.h>

#include <uv.h>

#include "band/band.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(BAND_UV_STATIC)
#define BAND_UV_API
#elif defined(_WIN32)
#if defined(BAND_UV_BUILDING)
#define BAND_UV_API __declspec(dllexport)
#else
#define BAND_UV_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#define BAND_UV_API __attribute__((visibility("default")))
#else
#define BAND_UV_API
#endif

#include "band/adapter_nodes.h" /* private node types the op struct embeds */

/** The adapter: one per uv loop, created by band_uv_create(), freed by band_uv_close(). */
typedef struct band_uv band_uv;

typedef struct band_uv_op band_uv_op;

/**
 * band_uv_cb - the completion callback of an operation.
 *
 * Runs exactly once per accepted submission, on the loop thread, from inside uv_run().
 * @status is 0 on success, or BAND_ETIMEDOUT, BAND_ECANCELED, BAND_ECLOSED (the
 * primitive was closed), BAND_E2BIG or BAND_EOVERFLOW (the primitive's own refusals).
 * The adapter no longer uses @op: the callback may free it, reuse it, submit it again,
 * cancel other operations, or close the adapter.
 */
typedef void band_uv_cb(band_uv_op *op, int status);

/**
 * struct band_uv_op - one acquire, send or receive, embedded by its owner.
 *
 * Zero it before its first submission (`= {0}`, calloc or memset): the adapter reads its
 * state to refuse a second submission while it is pending. After that the adapter keeps
 * it consistent, and it can be submitted again from its own callback or any time after.
 * It must stay valid and untouched (except @data) from submission until its callback
 * runs. It holds no libuv handle.
 */
struct band_uv_op {
    void *data; /* public: the owner's pointer; the adapter never touches it */

    /* private: owned by the adapter from submission until the callback */
    union {
        band_waiter w;
        struct band_chan_send_op send;
        struct band_chan_recv_op recv;
    } _u;                           /* the band operation; its waiter is first */
    struct band__ready_node _ready; /* on the adapter's ready list once completed */
    struct band__dl_node _dl;       /* in the adapter's deadline heap while it has one */
    struct band__node _link;        /* on the adapter's list of operations not yet called */
    band_uv *_uv;
    band_uv_cb *_cb;
    void *_target;        /* the band_sem or band_chan */
    uint64_t _n;          /* acquire: permits asked for */
    uint64_t *_bytes_out; /* recv: where the element's bytes go (may be NULL) */
    int _status;          /* result decided on the loop thread (immediate, cancel) */
    uint32_t _state;      /* idle, queued or done (not yet called) */
    uint8_t _kind;        /* acquire, send, recv */
    uint8_t _flags;       /* in heap, cancel asked, permits not yet taken */
};

/**
 * band_uv_create() - make an adapter for @loop and store it in *@out.
 *
 * Initialises one uv_async_t and one uv_timer_t on @loop. Neither keeps the loop alive
 * while no operation is pending: uv_run() returns when the adapter has nothing to do,
 * and stays in the loop while any operation waits for its callback.
 * Returns 0, BAND_EINVAL (NULL argument), BAND_ENOMEM, or a negative libuv error code
 * (UV_E*, for uv_strerror()) when libuv cannot create the async handle; *@out is left
 * unchanged on failure. Loop thread only. Free it with band_uv_close().
 */
BAND_UV_API int band_uv_create(uv_loop_t *loop, band_uv **out);

/**
 * band_uv_close() - cancel everything pending, close the handles and free @u.
 *
 * Every operation still queued on a primitive is cancelled: its callback runs once with
 * BAND_ECANCELED (what it had been partially granted went back). An operation that had
 * already completed but whose callback has not run yet is delivered with its real status
 * (the caller then holds its permits or element, as always). Submissions on @u fail with
 * BAND_ECLOSED from this call on. Once every callback has run and no other thread is still
 * handing a completion to @u, the adapter closes its two libuv handles; when libuv reports
 * both closed, @u is freed and then @on_closed(@data) runs once, on the loop thread (skip
 * it with NULL). Keep running the loop until then: uv_run() returns afterwards, and
 * uv_loop_close() succeeds if nothing else is open on the loop.
 * Returns 0, BAND_EINVAL for NULL @u, or BAND_ECLOSED when close was already called
 * (nothing changes). Never calls a callback or @on_closed itself. Loop thread only.
 */
BAND_UV_API int band_uv_close(band_uv *u, void (*on_closed)(void *data), void *data);

/**
 * band_uv_acquire() - take @n permits of @s, completing on @u's loop.
 *
 * @s may be a budget's semaphore (band_budget_sem()). When the callback reports 0 the
 * caller holds @n permits: move them into a band_permit with band_uv_op_take_permit(), or
 * release them with band_sem_release(). Other statuses hold nothing: BAND_ETIMEDOUT at
 * @deadline, BAND_ECANCELED (band_uv_cancel(), band_uv_close()), BAND_ECLOSED (@s was
 * closed), BAND_E2BIG (a budget smaller than @n), BAND_EOVERFLOW (queued units would
 * overflow). @deadline is absolute (band_now() nanoseconds); BAND_FOREVER waits without
 * limit, and a time already past takes the permits only if they are available now.
 * Returns 0 (accepted: @cb runs exactly once, later, on the loop thread), BAND_ECLOSED
 * when @u is closing, or BAND_EINVAL (NULL @u, @op, @s or @cb, @n above
 * BAND_MAX_UNITS, @op still pending); @cb never runs after a negative return.
 * Loop thread only. @s must outlive the operation.
 */
BAND_UV_API int band_uv_acquire(band_uv *u, band_uv_op *op, band_sem *s, uint64_t n,
                                band_time deadline, band_uv_cb *cb);

/**
 * band_uv_op_take_permit() - move the permits of a successful acquire into *@out.
 *
 * Call it from the acquire's callback after status 0, or later while @op is not
 * submitted again: *@out (which must be empty) then holds the @n permits of the
 * semaphore, to release with band_permit_release(). Returns 0, or BAND_EINVAL (NULL
 * argument, @out not empty, @op not an acquire that completed with 0, or its permits
 * already taken). Loop thread only (it reads the op's state).
 */
BAND_UV_API int band_uv_op_take_permit(band_uv_op *op, band_permit *out);

/**
 * band_uv_send() - send the element at @elem (the channel's element size) into @c,
 * declaring @bytes against its byte bound, completing on @u's loop.
 *
 * The element is not copied at submission: *@elem must stay valid and unchanged until
 * the callback runs (the copy into the channel may happen on another thread, when a
 * receiver makes room). Status 0 means the channel took a copy. Any other status means
 * it did not, and the element is still the caller's: BAND_ETIMEDOUT, BAND_ECANCELED,
 * BAND_ECLOSED, BAND_E2BIG (@bytes above the byte capacity).
 * Returns 0 (accepted, as for band_uv_acquire()), BAND_ECLOSED when @u is closing, or
 * BAND_EINVAL (NULL argument, @op still pending, a channel with a drop policy, @bytes
 * above BAND_MAX_UNITS on a channel without byte bound). Loop thread only. @c must
 * outlive the operation.
 */
BAND_UV_API int band_uv_send(band_uv *u, band_uv_op *op, band_chan *c, const void *elem,
                             uint64_t bytes, band_time deadline, band_uv_cb *cb);

/**
 * band_uv_recv() - receive the oldest element of @c into @out, completing on @u's loop.
 *
 * When the callback reports 0, @out holds the element and *@bytes (unless @bytes is NULL)
 * its declared bytes. @out may be written on another thread before the callback runs; it
 * must stay valid until then. *@bytes is written on the loop thread just before the
 * callback, and only on success. Other statuses leave nothing in @out: BAND_ETIMEDOUT,
 * BAND_ECANCELED, BAND_ECLOSED (closed and drained).
 * Returns 0 (accepted, as for band_uv_acquire()), BAND_ECLOSED when @u is closing, or
 * BAND_EINVAL (NULL @u, @op, @c, @out or @cb, or @op still pending). Loop thread only.
 * @c must outlive the operation.
 */
BAND_UV_API int band_uv_recv(band_uv *u, band_uv_op *op, band_chan *c, void *out, uint64_t *bytes,
                             band_time deadline, band_uv_cb *cb);

/**
 * band_uv_cancel() - ask a pending operation to end with BAND_ECANCELED.
 *
 * Returns 0 when the operation was still queued: it left the primitive's queue, what it
 * had been partially granted went back (to the next waiters first), and its callback will
 * run with BAND_ECANCELED. Returns BAND_EALREADY when it had already completed (or a
 * cancel was already asked): its callback will run with its real status, and a status 0
 * result (permits, an element) is the caller's. Either way the callback runs exactly
 * once, later, on the loop thread; band_uv_cancel() never calls it.
 * Returns BAND_EINVAL for NULL or an operation that is not pending (never submitted, or
 * its callback already ran). Loop thread only.
 */
BAND_UV_API int band_uv_cancel(band_uv_op *op);

#ifdef __cplusplus
}
#endif
#endif /* BAND_UV_H */

/* SPDX-License-Identifier: MIT */
/**
 * @file band/uv.h
 * @brief libband-uv: any band operation completed as a libuv callback.
 *
 * One band_uv serves one uv loop. It turns the wake of any band operation, which runs on
 * whichever thread completed it (a release, a send, a close on any thread), into a
 * callback on the loop's thread. It knows no primitive: every band operation that can
 * wait ends through a band_waiter (band/core.h), and the adapter bridges that waiter. So
 * the semaphore, budgets, channels (send, receive, reserve), oneshot, watch, broadcast,
 * wait group, latch, shutdown scope, fair share and admission all complete on the loop
 * the same way, and so will any primitive added later. docs/uv.md has the guide; the
 * rules here are the contract.
 *
 * One operation, three steps, all on the loop thread:
 *
 * @code
 *     band_uv_bind(u, op, &send.w, on_sent, deadline, cancel); // the waiter is now ours
 *     int rc = band_chan_send_async(chan, &v, 1, &send);       // any primitive's _async
 *     band_uv_start(op, rc);                                   // hand its answer over
 * @endcode
 *
 *  1. band_uv_bind() prepares the caller's waiter (band_waiter_init() with the adapter's
 *     wake, and the deadline) before its _async call. An admission request, the one op
 *     built before its call, is bound after band_admit_req_init() and band_admit_req_add().
 *  2. One path. Once band_uv_start() returned 0, the callback runs exactly once, later,
 *     on the loop thread, with the operation's result: the _async call's own answer when
 *     it completed or failed at once (0 or a negative code; no callback ever runs inside
 *     a band_uv_* call), or the result of the wait. Only a misuse of the adapter itself is
 *     returned by bind or start, and then no callback runs.
 *  3. Results stay where the primitive puts them: permits are the caller's when a
 *     semaphore acquisition reports 0 (band_permit_adopt() wraps them), a received
 *     element is in the receive op's buffer, a grant in the admission request.
 *  4. Callbacks run in the order the operations completed (the order of their wakes).
 *  5. A deadline is enforced with one libuv timer per adapter: a timeout is
 *     band_waiter_cancel(w, BAND_ETIMEDOUT), so a timed-out wait leaves the primitive's
 *     queue and returns whatever it had been partially granted. The callback never reports
 *     BAND_ETIMEDOUT before band_now() reached the deadline.
 *  6. Cancellation: band_uv_cancel(), a cancellation token (band/cancel.h) given to bind,
 *     or band_uv_close(). The token may be requested from any thread or a signal handler:
 *     its hook only signals the loop, which then cancels on its own thread.
 *  7. A grant that races with the deadline, a cancel or a close wins: the callback then
 *     reports 0 and the caller holds the result.
 *  8. band_uv_at() completes an operation at its deadline with no primitive behind it: a
 *     rate budget's booking (band_rate_reserve() and its ticket's at) falls due on the
 *     loop's timer that way.
 *  9. The op is the caller's: no allocation per operation. The adapter touches it for the
 *     last time just before it calls the callback, so the callback may free it (and the
 *     primitive's op and waiter) or submit it again.
 *
 * Life. band_uv_create(), band_uv_close() (asynchronous: it ends with its on_closed
 * callback, because libuv closes handles asynchronously), then band_uv_destroy(), which
 * frees the adapter.
 *
 * Threads. Every band_uv_* function must be called on the loop's thread (the thread that
 * runs uv_run() for the loop, or any one thread while the loop is not running). The
 * primitives stay MT-safe: other threads release, send, receive and close them as usual,
 * and the completions they cause come back to the loop.
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

/**
 * @def BAND_UV_API
 * @brief Marks the functions libband-uv exports (empty with BAND_UV_STATIC, for the static
 *        library).
 */
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

/**
 * @brief The adapter: one per uv loop, created by band_uv_create(), closed by
 *        band_uv_close(), freed by band_uv_destroy().
 */
typedef struct band_uv band_uv;

/** @brief One operation on the loop (struct band_uv_op), embedded by its owner. */
typedef struct band_uv_op band_uv_op;

/**
 * @brief The completion callback of an operation.
 *
 * Runs exactly once per started operation, on the loop thread, from inside uv_run().
 * @p status is the operation's result: 0, or the primitive's own codes (BAND_ECLOSED,
 * BAND_E2BIG, BAND_EOVERFLOW, BAND_ELAGGED, ... as its _async function documents them),
 * BAND_ETIMEDOUT (the deadline), or BAND_ECANCELED (band_uv_cancel(), the token,
 * band_uv_close()). The adapter no longer uses @p op: the callback may free it, reuse it,
 * submit it again, cancel other operations, or close the adapter.
 *
 * @param op      The operation that ended; the caller's again.
 * @param status  Its result, as above.
 */
typedef void band_uv_cb(band_uv_op *op, int status);

/**
 * @brief One operation on the loop, embedded by its owner beside the primitive's op (or
 *        waiter) it bridges.
 *
 * Zero it before its first use (`= {0}`, calloc or memset): the adapter reads its state to
 * refuse a second bind while it is in use. After that the adapter keeps it consistent,
 * and it can be bound again from its own callback or any time after. From bind until its
 * callback runs it must stay valid and untouched (except data). It holds no libuv
 * handle. 160 bytes on LP64.
 */
struct band_uv_op {
    void *data; /**< public: the owner's pointer; the adapter never touches it */

    /** @privatesection */
    /* private: owned by the adapter from bind until the callback */
    band_waiter *_w; /* the bridged waiter, or NULL for band_uv_at() */
    band_uv *_uv;
    band_uv_cb *_cb;
    struct band__ready_node _ready; /* on the adapter's ready list once completed */
    struct band__dl_node _dl;       /* in the adapter's deadline heap while it has one */
    struct band__node _link;        /* on the adapter's list of operations not yet called */
    band_cancel_hook _hook;         /* on _cancel while the operation waits */
    band_cancel *_cancel;           /* the token given to bind or band_uv_at(), or NULL */
    band_time _deadline;            /* the deadline, or the due time of band_uv_at() */
    int _status;                    /* result decided on the loop thread */
    uint16_t _state;                /* idle, bound, queued or done (not yet called) */
    uint16_t _flags;                /* in heap, cancel asked, hooked, timed */
};

/**
 * @brief Make an adapter for @p loop and store it in *@p out.
 *
 * Initialises one uv_async_t and one uv_timer_t on @p loop. Neither keeps the loop alive
 * while no operation is in use: uv_run() returns when the adapter has nothing to do, and
 * stays in the loop while any bound operation waits for its callback.
 * Returns 0, BAND_EINVAL (NULL argument), BAND_ENOMEM, or a negative libuv error code
 * (UV_E*, for uv_strerror()) when libuv cannot create the async handle; *@p out is left
 * unchanged and nothing is allocated on failure. Loop thread only. End it with
 * band_uv_close(), then band_uv_destroy().
 *
 * @param[out] out  Receives the adapter; must not be NULL. The caller owns it.
 * @param loop      The loop; must not be NULL, and must outlive the adapter.
 * @return 0, BAND_EINVAL, BAND_ENOMEM or a libuv error code as described above.
 */
BAND_UV_API int band_uv_create(band_uv **out, uv_loop_t *loop);

/**
 * @brief Cancel everything pending and close the adapter's libuv handles.
 *
 * Every operation still waiting is cancelled: its callback runs once with BAND_ECANCELED
 * (what it had been partially granted went back). An operation that had already completed
 * but whose callback has not run yet is delivered with its real status (the caller then
 * holds its result, as always). An operation bound but not yet started is cancelled when
 * band_uv_start() is called. Binds on @p u fail with BAND_ECLOSED from this call on.
 *
 * Close is asynchronous, unlike the close of a band primitive, because libuv closes a
 * handle asynchronously: uv_close() only asks, and the handle's memory (here, inside @p u)
 * must stay valid until libuv calls its close callback on a later loop iteration. The
 * adapter also waits for every callback to run and for wakes still on their way from
 * other threads before it closes its two handles. When libuv reports both closed,
 * @p on_closed(@p data) runs once, on the loop thread (skip it with NULL); from then on the
 * adapter never touches @p u again, and band_uv_destroy() frees it (@p on_closed may call it).
 * Keep running the loop until then: uv_run() returns afterwards, and uv_loop_close()
 * succeeds if nothing else is open on the loop.
 * Returns 0, BAND_EINVAL for NULL @p u, or BAND_ECLOSED when close was already called
 * (nothing changes: the first call's @p on_closed is the one that runs). Never calls a
 * callback or @p on_closed itself. Loop thread only.
 *
 * @param u          The adapter; must not be NULL.
 * @param on_closed  Called once, on the loop thread, when the close completed; or NULL.
 * @param data       Passed to @p on_closed.
 * @return 0, BAND_EINVAL or BAND_ECLOSED as described above.
 */
BAND_UV_API int band_uv_close(band_uv *u, void (*on_closed)(void *data), void *data);

/**
 * @brief Whether band_uv_close() was called on @p u.
 *
 * Loop thread only.
 *
 * @param u  The adapter, or NULL.
 * @return 1 once band_uv_close() was called on @p u (its handles may still be closing), 0
 *         before and for NULL.
 */
BAND_UV_API int band_uv_is_closed(const band_uv *u);

/**
 * @brief Free an adapter whose close has completed.
 *
 * Returns 0 (also for NULL; @p u is freed), or BAND_EBUSY, changing nothing, until the
 * close that band_uv_close() started has completed: before band_uv_close() (destroy never
 * closes for you: the adapter's handles are still open on the loop), and while operations
 * wait for their callbacks or libuv has not yet reported the handles closed. It completes
 * just before @p on_closed runs, so @p on_closed may call this; without an @p on_closed, call it
 * once uv_run() returned. Never waits. Loop thread only.
 *
 * @param u  The adapter, or NULL (a no-op). Nobody may use it after 0.
 * @return 0, or BAND_EBUSY as described above.
 */
BAND_UV_API int band_uv_destroy(band_uv *u);

/**
 * @brief Make the waiter @p w of a band operation complete on @p u's loop, as @p op.
 *
 * Calls band_waiter_init(@p w) with the adapter's wake and sets @p w->deadline to @p deadline
 * (so a deadline-aware primitive sees it at submission). Bind after the primitive's own
 * initialisation of the op that embeds @p w, if it has one (band_admit_req_init()), then
 * submit @p w with that primitive's _async function and hand its answer to band_uv_start();
 * nothing else may touch @p w until the callback ran (never cancel it directly: use
 * band_uv_cancel()). A primitive that cancels a waiter and then calls its wake itself
 * (band_shutdown_watch()) is fine: its result comes back like any other. @p cb is the
 * callback; the deadline and the token come last, as in every blocking band call.
 * @p deadline is absolute (band_now() nanoseconds); BAND_FOREVER waits without limit, and a
 * time already past means "do not wait": an operation that queues is withdrawn at once
 * and reports BAND_ETIMEDOUT. @p cancel (NULL: none) is a token whose request cancels the
 * wait (BAND_ECANCELED); it must outlive the callback.
 * @p w must not be pending, and must hold a waiter's state (zeroed, initialised, or ended):
 * bind refuses a pending one rather than take its wake away.
 * Returns 0 (@p op is bound: start it), BAND_ECLOSED when @p u is closing, or BAND_EINVAL
 * (NULL @p u, @p op, @p w or @p cb, @p op bound or pending, @p w pending); on an error
 * @p op and @p w are untouched and no callback runs. Loop thread only.
 *
 * @param u         The adapter; must not be NULL or closing.
 * @param op        The operation, zeroed before its first use, not bound or pending; the
 *                  caller's, valid and untouched until its callback ran.
 * @param w         The primitive's waiter to bridge; not pending.
 * @param cb        The completion callback; must not be NULL.
 * @param deadline  Absolute time on band's clock (BAND_FOREVER: no limit).
 * @param cancel    Cancellation token, or NULL for none; must outlive the callback.
 * @return 0, BAND_ECLOSED or BAND_EINVAL as described above.
 */
BAND_UV_API int band_uv_bind(band_uv *u, band_uv_op *op, band_waiter *w, band_uv_cb *cb,
                             band_time deadline, band_cancel *cancel);

/**
 * @brief Hand the answer @p rc of the _async call that submitted the bound waiter to the
 *        adapter.
 *
 * BAND_PENDING: the operation waits; the adapter arms the deadline and hooks the token,
 * and the callback reports how the wait ended. Any other band result (0 or a negative
 * code: completed or refused at once, no wake follows) becomes the callback's status as
 * it is. The primitive must outlive the operation.
 * Returns 0 (the callback runs exactly once, later, on the loop thread), or BAND_EINVAL
 * (NULL or unbound @p op; @p rc positive but not BAND_PENDING; or the waiter no longer
 * carries the adapter's wake because it was initialised again after the bind): then @p op
 * is idle again and no callback runs. Loop thread only.
 *
 * @param op  The operation band_uv_bind() bound.
 * @param rc  The _async call's answer: BAND_PENDING, 0 or a negative band code.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_UV_API int band_uv_start(band_uv_op *op, int rc);

/**
 * @brief Complete @p op at time @p deadline, on @p u's loop, with no primitive behind it.
 *
 * An operation that waits for nothing but its deadline: reaching it is its success. The
 * callback @p cb reports 0 once band_now() reached @p deadline (never before; a time already
 * past completes on the next loop turn), or BAND_ECANCELED when band_uv_cancel(), @p cancel
 * or band_uv_close() came first. For a rate budget: book with band_rate_reserve() (a
 * bucket on the default clock), then band_uv_at(u, op, cb, ticket.at, cancel); on
 * BAND_ECANCELED give the booking back with band_rate_ticket_cancel().
 * Returns 0 (the callback runs exactly once, later), BAND_ECLOSED when @p u is closing, or
 * BAND_EINVAL (NULL @p u, @p op or @p cb, @p op bound or pending); then no callback runs. Loop
 * thread only.
 *
 * @param u         The adapter; must not be NULL or closing.
 * @param op        The operation, zeroed before its first use, not bound or pending.
 * @param cb        The completion callback; must not be NULL.
 * @param deadline  When to complete, absolute time on band's clock.
 * @param cancel    Cancellation token, or NULL for none; must outlive the callback.
 * @return 0, BAND_ECLOSED or BAND_EINVAL as described above.
 */
BAND_UV_API int band_uv_at(band_uv *u, band_uv_op *op, band_uv_cb *cb, band_time deadline,
                           band_cancel *cancel);

/**
 * @brief Ask a pending operation to end with BAND_ECANCELED.
 *
 * Returns 0 when the operation was still waiting: it left the primitive's queue, what it
 * had been partially granted went back (to the next waiters first), and its callback will
 * run with BAND_ECANCELED. Returns BAND_EALREADY when it had already completed (or a
 * cancel was already asked): its callback will run with its real status, and a status 0
 * result is the caller's. Either way the callback runs exactly once, later, on the loop
 * thread; band_uv_cancel() never calls it.
 * Returns BAND_EINVAL for NULL or an operation that is not pending (idle, bound but not
 * started, or its callback already ran). Loop thread only.
 *
 * @param op  The operation.
 * @return 0, BAND_EALREADY or BAND_EINVAL as described above.
 */
BAND_UV_API int band_uv_cancel(band_uv_op *op);

#ifdef __cplusplus
}
#endif
#endif /* BAND_UV_H */

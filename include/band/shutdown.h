/* SPDX-License-Identifier: MIT */
/**
 * @file band/shutdown.h
 * @brief The shutdown scope: request, join/leave, drain, and a cancellation
 * token that stops every wait in band.
 *
 * A band_shutdown carries a shutdown request to the work it concerns and tracks that work
 * until it has finished. docs/coordination.md has the long form.
 *
 *  - The request. Anybody may request shutdown once, with a reason; work loops poll
 *    band_shutdown_is_requested() (one atomic load) or wait for the request.
 *  - The cancellation token. Each shutdown owns a band_cancel (band_shutdown_cancel())
 *    that its first request requests, so any blocking call of band - band_sem_acquire(),
 *    band_chan_recv(), band_group_wait(), ... - given that token returns BAND_ECANCELED
 *    when shutdown is requested, and an event-loop adapter cancels the operations it was
 *    given under it.
 *  - Participants. Work joins before it starts and leaves when done; joining after the
 *    request is refused, so the set of participants only shrinks once shutdown has begun,
 *    and band_shutdown_wait_drained() waits until the request was made and every
 *    participant left.
 *  - Links. A link (band_shutdown_watch()) cancels one pending band_waiter of any
 *    primitive with the shutdown's own reason, without user callbacks under any lock.
 *
 * Rules (band/core.h has the wake contract):
 *  - The participant count never wraps: a join past BAND_SHUTDOWN_MAX_PARTICIPANTS fails
 *    with BAND_EOVERFLOW, and a leave with nobody joined fails with BAND_EINVAL; nothing
 *    changes then.
 *  - The call that releases waits (the request, or the last leave after it) runs their
 *    wakes on its own thread, after every band lock is released.
 *  - A wait on something already true completes at once: 0, no wake. A blocking wait
 *    whose deadline is in the past does not wait: it returns 0 if satisfied, else
 *    BAND_ETIMEDOUT, and then it never queued, so it counts in no counter.
 *  - band_waiter_cancel() withdraws a queued wait (0), or reports that it was already
 *    released (BAND_EALREADY; the wake has run or is running). A waiter holds nothing.
 *  - Every function is MT-safe. The participant count and the requested flag are read
 *    without a lock; join, a leave that drains nothing and band_shutdown_is_requested()
 *    take no lock.
 */
#ifndef BAND_SHUTDOWN_H
#define BAND_SHUTDOWN_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The most participants a shutdown scope can hold at once. */
#define BAND_SHUTDOWN_MAX_PARTICIPANTS ((UINT64_C(1) << 63) - 1)

/** @brief A shutdown scope (opaque): band_shutdown_create(), band_shutdown_destroy(). */
typedef struct band_shutdown band_shutdown;

/**
 * @brief Ties one pending band_waiter to a shutdown scope
 * (band_shutdown_watch()).
 *
 * Embedded by the owner of the waiter, usually next to it. Initialise with
 * band_shutdown_link_init(). All fields are private.
 */
typedef struct band_shutdown_link {
    struct band__node _node; /* on the scope's watch list while watched */
    band_waiter *_w;         /* the waiter to cancel */
    band_shutdown *_t;       /* the scope it is linked to, NULL when idle */
    int _state;              /* idle, watched, firing, fired */
} band_shutdown_link;

/**
 * @brief Allocate a shutdown scope: not requested, no participants,
 * and its cancellation token (band_shutdown_cancel()), not requested.
 *
 * Returns 0 and stores it in *@p out, BAND_EINVAL when @p out is NULL, or BAND_ENOMEM (*@p out
 * unchanged, nothing allocated). Free it with band_shutdown_destroy().
 *
 * @param[out] out  Receives the new shutdown scope.
 * @return 0, BAND_EINVAL or BAND_ENOMEM, as described above.
 */
BAND_API int band_shutdown_create(band_shutdown **out);

/**
 * @brief Free @p t and its cancellation token.
 *
 * Returns 0, or BAND_EBUSY (nothing is freed) while waits are queued, participants have
 * not left, links are still watched (band_shutdown_unwatch() every link first), or the
 * cancellation token is still in use (a thread blocked under it, an adapter watching it,
 * or a child token created under it: band_cancel_destroy() would refuse). Destroying NULL
 * returns 0. Not MT-safe with other uses of @p t.
 *
 * @param t  The shutdown scope, or NULL.
 * @return 0 (also for NULL) or BAND_EBUSY, as described above.
 */
BAND_API int band_shutdown_destroy(band_shutdown *t);

/**
 * @brief Request shutdown, for @p reason.
 *
 * @p reason is the negative BAND_E* code that work stopped by this scope reports (usually
 * BAND_ECANCELED; a deadline-driven shutdown may use BAND_ETIMEDOUT). The first request
 * wins: it sets the reason, refuses every later band_shutdown_join(), requests the
 * cancellation token (band_shutdown_cancel(): every call blocked under it returns
 * BAND_ECANCELED, whatever @p reason is), releases every queued
 * band_shutdown_wait_requested() (status 0) and, when no participant is joined, every
 * queued band_shutdown_wait_drained() (status 0), then fires every watched link
 * (band_shutdown_watch()). All those wakes and cancels run on the calling thread, after
 * the scope's lock is released, before this call returns (a wake may call back into @p t).
 * Returns 0 for the first request, BAND_EALREADY when shutdown was already requested
 * (nothing changes: the first reason stays), or BAND_EINVAL (NULL @p t, @p reason >= 0).
 * MT-safe; may be called from a wake (not from a band_cancel_fn hook).
 *
 * @param t       The shutdown scope.
 * @param reason  A negative BAND_E* code, usually BAND_ECANCELED or BAND_ETIMEDOUT.
 * @return 0 for the first request, BAND_EALREADY or BAND_EINVAL, as described above.
 */
BAND_API int band_shutdown_request(band_shutdown *t, int reason);

/**
 * @brief 1 once shutdown was requested, 0 before (and for NULL).
 *
 * One atomic load with acquire ordering, no lock: the check a work loop polls. When it
 * returns 1, band_shutdown_reason() returns the reason. MT-safe.
 *
 * @param t  The shutdown scope, or NULL.
 * @return 1 once requested, 0 before and for NULL.
 */
BAND_API int band_shutdown_is_requested(const band_shutdown *t);

/**
 * @brief The first request's reason, or 0 before any request (and for
 * NULL). MT-safe.
 *
 * @param t  The shutdown scope, or NULL.
 * @return The first request's negative reason, or 0.
 */
BAND_API int band_shutdown_reason(const band_shutdown *t);

/**
 * @brief The cancellation token of @p t (NULL for NULL).
 *
 * Owned by @p t and valid until band_shutdown_destroy(@p t). The first band_shutdown_request()
 * requests it (after band_shutdown_is_requested() turned 1, before the request returns),
 * so pass it to any blocking call of band, or create child tokens under it
 * (band_cancel_opts.parent), to stop them at shutdown. Requesting the token directly
 * (band_cancel_request()) stops the waits under it but does not request the shutdown.
 * Never fails. MT-safe.
 *
 * @param t  The shutdown scope, or NULL.
 * @return The scope's token, owned by @p t; NULL for NULL.
 */
BAND_API band_cancel *band_shutdown_cancel(band_shutdown *t);

/**
 * @brief Block this thread until shutdown is requested, or until
 * @p deadline.
 *
 * Returns 0 once requested (the reason is band_shutdown_reason()), BAND_ETIMEDOUT when
 * @p deadline passed first (a past deadline means "do not wait"), or BAND_EINVAL for NULL.
 * MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h). Passing band_shutdown_cancel(@p t) is
 * harmless: the request releases this wait (0) before it requests the token.
 *
 * @param t         The shutdown scope.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_EINVAL or BAND_ECANCELED, as described above.
 */
BAND_API int band_shutdown_wait_requested(band_shutdown *t, band_time deadline,
                                          band_cancel *cancel);

/**
 * @brief Complete now if shutdown was requested, or queue
 * @p w until it is.
 *
 * Returns 0 (requested; no wake follows), BAND_PENDING (exactly one of {wake with status 0
 * on the thread that requested shutdown, band_waiter_cancel() returns 0} follows), or
 * BAND_EINVAL (NULL @p t or @p w, @p w pending or without wake; @p w untouched). MT-safe.
 *
 * @param t  The shutdown scope.
 * @param w  The waiter, initialised with band_waiter_init() and not pending.
 * @return 0, BAND_PENDING or BAND_EINVAL, as described above.
 */
BAND_API int band_shutdown_wait_requested_async(band_shutdown *t, band_waiter *w);

/**
 * @brief Register one participant: work that shutdown must wait for.
 *
 * Returns 0 (the caller must call band_shutdown_leave() once when its work is done), the
 * scope's reason (a negative code, usually BAND_ECANCELED) once shutdown was requested:
 * no new work starts after the request, BAND_EOVERFLOW at BAND_SHUTDOWN_MAX_PARTICIPANTS
 * participants, or BAND_EINVAL for NULL. A join and a request race safely: either the join
 * is refused, or the request's drain waits for that participant. Lock-free. MT-safe.
 *
 * @param t  The shutdown scope.
 * @return 0, the scope's negative reason (usually BAND_ECANCELED), BAND_EOVERFLOW or
 *         BAND_EINVAL, as described above.
 */
BAND_API int band_shutdown_join(band_shutdown *t);

/**
 * @brief One participant finished.
 *
 * Returns 0, or BAND_EINVAL when @p t is NULL or no participant is joined (nothing
 * changes). When shutdown was requested and this was the last participant, every queued
 * band_shutdown_wait_drained() is released (status 0), its wake running on this thread
 * after the scope's lock is released, before this call returns. Lock-free otherwise.
 * MT-safe.
 *
 * @param t  The shutdown scope.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_shutdown_leave(band_shutdown *t);

/**
 * @brief Participants joined now (0 for NULL). A snapshot.
 * MT-safe.
 *
 * @param t  The shutdown scope, or NULL.
 * @return The number of participants joined now.
 */
BAND_API uint64_t band_shutdown_participants(const band_shutdown *t);

/**
 * @brief Block this thread until shutdown was requested and every
 * participant left, or until @p deadline.
 *
 * Returns 0 when drained, BAND_ETIMEDOUT when @p deadline passed first (a past deadline
 * means "do not wait"), or BAND_EINVAL for NULL. It does not request shutdown itself.
 * A participant that waits for the drain of its own scope waits forever (it has not left):
 * leave first. MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h). So do not pass band_shutdown_cancel(@p t)
 * itself: the request would stop the wait for the drain it starts.
 *
 * @param t         The shutdown scope.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_EINVAL or BAND_ECANCELED, as described above.
 */
BAND_API int band_shutdown_wait_drained(band_shutdown *t, band_time deadline, band_cancel *cancel);

/**
 * @brief Complete now if @p t is drained, or queue @p w until it
 * is.
 *
 * Returns 0 (drained; no wake follows), BAND_PENDING (exactly one of {wake with status 0
 * on the thread whose request or leave drained the scope, band_waiter_cancel() returns 0}
 * follows), or BAND_EINVAL (NULL @p t or @p w, @p w pending or without wake; @p w untouched).
 * MT-safe.
 *
 * @param t  The shutdown scope.
 * @param w  The waiter, initialised with band_waiter_init() and not pending.
 * @return 0, BAND_PENDING or BAND_EINVAL, as described above.
 */
BAND_API int band_shutdown_wait_drained_async(band_shutdown *t, band_waiter *w);

/**
 * @brief Prepare @p link (idle). Not for a watched link.
 *
 * @param[out] link  The link to prepare.
 */
BAND_API void band_shutdown_link_init(band_shutdown_link *link);

/**
 * @brief Cancel the pending operation @p w when shutdown of @p t is
 * requested.
 *
 * Submit @p w first (its _async call returned BAND_PENDING), then watch it. When shutdown
 * is requested, the requesting thread calls band_waiter_cancel(@p w, reason). If that cancel
 * wins (returns 0), the scope then calls @p w's wake itself, once, with
 * band_waiter_status(@p w) == reason; if it loses, the primitive's own wake reports the
 * result. Either way the owner sees exactly one wake, as without the link, and no user
 * code runs under a lock.
 *
 * Returns 0 when linked; the scope's reason (negative; nothing linked, @p w untouched) when
 * shutdown was already requested - the caller then decides, typically by cancelling @p w
 * itself; BAND_EALREADY when @p w already completed (nothing linked); or BAND_EINVAL (NULL
 * argument, @p link already watched, @p w never submitted or cancelled).
 *
 * Ownership: @p link and @p w must stay valid until band_shutdown_unwatch(@p link) returned,
 * and the owner must unwatch before it reuses or frees @p w (or destroys @p w's primitive),
 * even after its wake ran. MT-safe with respect to the scope and the waiter.
 *
 * @param t             The shutdown scope.
 * @param[in,out] link  An idle link, initialised with band_shutdown_link_init().
 * @param w             A pending waiter (its _async call returned BAND_PENDING).
 * @return 0, the scope's negative reason, BAND_EALREADY or BAND_EINVAL, as described above.
 */
BAND_API int band_shutdown_watch(band_shutdown *t, band_shutdown_link *link, band_waiter *w);

/**
 * @brief Detach @p link from its scope.
 *
 * Returns 0 when the scope had not fired the link: it will never touch @p link or its
 * waiter again. Returns BAND_EALREADY when shutdown fired it: the scope's cancel has
 * returned (this call waits for a cancel in progress on another thread, a short bounded
 * wait), and the waiter's operation ended or ends with exactly one wake, from its
 * primitive or from the scope. Returns BAND_EINVAL when @p link is NULL or not watched.
 * May be called from any wake, including the watched waiter's own; must not be called,
 * from a wake that runs inside the scope's cancel of another link, for that other link.
 * MT-safe; @p link is idle afterwards and may be reused.
 *
 * @param[in,out] link  A watched link; idle afterwards.
 * @return 0, BAND_EALREADY or BAND_EINVAL, as described above.
 */
BAND_API int band_shutdown_unwatch(band_shutdown_link *link);

/** @brief A snapshot of a shutdown scope's counters. */
typedef struct band_shutdown_stats {
    int requested;              /**< 1 after the first request */
    int reason;                 /**< the first request's reason, or 0 */
    uint64_t participants;      /**< joined now */
    uint64_t waiting_requested; /**< band_shutdown_wait_requested waits queued now */
    uint64_t waiting_drained;   /**< band_shutdown_wait_drained waits queued now */
    uint64_t watched;           /**< links watched now (including fired, not yet unwatched) */
    uint64_t queued;            /**< waits of both kinds that had to queue, since creation */
    uint64_t released;          /**< queued waits released by the request or the drain */
    uint64_t timeouts;          /**< queued waits that ended with BAND_ETIMEDOUT */
    uint64_t cancels;           /**< queued waits cancelled for any other reason */
    uint64_t join_refusals;     /**< joins refused because shutdown was requested */
    uint64_t fired;             /**< links fired by the request */
    uint64_t fired_cancelled;   /**< fired links whose cancel won (the scope called wake) */
} band_shutdown_stats;

/**
 * @brief Copy @p t's counters into *@p out.
 *
 * Takes the scope's lock briefly. Returns 0 or BAND_EINVAL (NULL argument). MT-safe.
 *
 * @param t         The shutdown scope.
 * @param[out] out  Receives the snapshot.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_shutdown_get_stats(const band_shutdown *t, band_shutdown_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_SHUTDOWN_H */

/* SPDX-License-Identifier: MIT */
/**
 * @file band/watch.h
 * @brief The latest value, with a version, for any number of receivers.
 *
 * A band_watch holds one fixed-size value (value_size bytes, copied in and out) and a
 * version that starts at 0 with the initial value and grows by one with every send.
 * Receivers are caller-owned cursors (band_watch_rx) that remember the last version they
 * saw; they wait for a newer one, copy the value that is current when they wake, and mark
 * that version seen. Semantics (docs/oneshot-watch.md has the long form):
 *
 *  - Latest value only. A send replaces the value; a receiver that was slow skips the
 *    versions it missed and sees the newest one. Nothing queues, so a watch bounds its
 *    memory by construction: one value, whatever the number of receivers or sends.
 *  - Every waiting receiver is woken by each send, with the new value already copied into
 *    its buffer and its cursor advanced, before the wakes run.
 *  - Close. After band_watch_close() sends fail with BAND_ECLOSED (the value stays with the
 *    sender). A receiver that has not seen the last version still gets it first; after that
 *    it gets BAND_ECLOSED. The value stays readable.
 *  - No lock while nobody waits. A send with no receiver waiting, try_recv, read,
 *    rx_read, mark_seen and version take no lock and make no system call: the value is
 *    kept twice (the current one and the one being written) behind a sequence word, so a
 *    reader never waits for a sender, even a stalled one. Sends exclude each other (a
 *    second sender spins briefly). A send or a receive costs one copy of value_size
 *    bytes, word by word, and a large value makes every waiting receiver's copy part of
 *    the send. For large state, send a pointer to an immutable, reference-counted
 *    snapshot.
 *
 * Shape: receivers are not registered with the watch (a cursor is two words of caller
 * memory; dropping one is just not using it again, so nothing can leak and rx creation
 * cannot fail); a pending wait keeps its cursor and its output buffer in the op, so the
 * watch needs no per-receiver storage; "try" variants never wait; reads that do not mark
 * seen (band_watch_read) are separate from reads that do (band_watch_rx_read,
 * band_watch_recv).
 *
 * Every band_watch_* function is MT-safe. Sends and closes run the wakes of the receivers
 * they complete on the calling thread, after every band lock is released.
 */
#ifndef BAND_WATCH_H
#define BAND_WATCH_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A watch channel (opaque): band_watch_create(), band_watch_destroy(). */
typedef struct band_watch band_watch;

/**
 * @brief A receiver's cursor: the watch and the last version it saw.
 *
 * Caller-owned and not registered anywhere: initialise it with band_watch_rx_init() and
 * simply stop using it when done (after its pending wait, if any, has ended). The fields
 * are private; read the version with band_watch_rx_seen(). A cursor has one owner and at
 * most one pending wait; calls on it are nevertheless safe from any thread (of several
 * racing calls on one cursor, one takes each version; a call that lost that race may have
 * written its output buffer although it returns BAND_EAGAIN).
 */
typedef struct band_watch_rx {
    band_watch *_watch;
    uint64_t _seen; /* accessed atomically */
    void *_op;      /* the pending wait, or NULL; accessed atomically */
} band_watch_rx;

/**
 * @brief A pending wait for a change, embedded by its owner.
 *
 * @p w comes first, so a wake function can convert &op->w back to the op with a cast or
 * container_of. band_watch_recv_async() sets @p rx and @p out from its arguments. When the
 * wake reports 0, the value of version @p version (the result) has been copied to @p out
 * (unless @p out is NULL) and @p rx's seen version is @p version. Keep the op, the cursor and
 * the buffer valid and untouched while pending.
 */
typedef struct band_watch_recv_op {
    band_waiter w;     /**< first member: band_waiter_cancel(&op->w, ...) withdraws it */
    band_watch_rx *rx; /**< the cursor, set by band_watch_recv_async() */
    void *out;         /**< where the value is copied, set by band_watch_recv_async() */
    uint64_t version;  /**< output: the version received (the result) */
} band_watch_recv_op;

/**
 * @brief Allocate a watch holding @p value_size bytes, initially @p initial.
 *
 * @p initial may be NULL: the value then starts as zero bytes. @p value_size may be 0 (a watch
 * of versions only). The version starts at 0. Returns 0 and stores the watch in *@p out,
 * BAND_EINVAL when @p out is NULL, or BAND_ENOMEM (also for a @p value_size that cannot be
 * allocated). On failure *@p out is unchanged. The caller frees it with band_watch_destroy().
 *
 * @param[out] out    Receives the new watch.
 * @param value_size  The size of the value in bytes; 0 for a watch of versions only.
 * @param initial     The initial value (value_size bytes, copied).
 * @return 0, BAND_EINVAL or BAND_ENOMEM, as described above.
 */
BAND_API int band_watch_create(band_watch **out, size_t value_size, const void *initial);

/**
 * @brief Free @p w.
 *
 * Returns 0, or BAND_EBUSY while a receiver waits (nothing is freed; close it first, which
 * wakes every waiter, or cancel them). Destroying NULL returns 0. Cursors of @p w become
 * dangling: nobody may use them, or @p w, after this call.
 *
 * @param w  The watch, or NULL.
 * @return 0 (also for NULL) or BAND_EBUSY, as described above.
 */
BAND_API int band_watch_destroy(band_watch *w);

/**
 * @brief Replace the value with a copy of @p value and advance the version.
 *
 * Every waiting receiver gets the new value copied into its buffer and its cursor set to
 * the new version, and its wake runs (status 0) on this thread before this call returns.
 * Returns 0, BAND_ECLOSED after close (nothing changes; the value stays with the caller),
 * BAND_EOVERFLOW when the version is already UINT64_MAX (nothing changes), or BAND_EINVAL
 * (NULL @p w, or NULL @p value with a non-zero value size). Never waits. MT-safe.
 *
 * @param w      The watch.
 * @param value  The new value: value_size bytes, copied (NULL allowed when the value size
 *               is 0).
 * @return 0, BAND_ECLOSED, BAND_EOVERFLOW or BAND_EINVAL, as described above.
 */
BAND_API int band_watch_send(band_watch *w, const void *value);

/**
 * @brief Copy the current value to @p out and its version to *@p version.
 *
 * Either pointer may be NULL (then that part is not reported). Marks nothing seen. Works
 * after close. Returns 0 or BAND_EINVAL (NULL @p w). MT-safe; lock-free (the copy is never
 * torn: it is retried if two sends overtake it).
 *
 * @param w             The watch.
 * @param[out] out      Receives the value (value_size bytes), or NULL.
 * @param[out] version  Receives the version of that value, or NULL.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_watch_read(band_watch *w, void *out, uint64_t *version);

/**
 * @brief The current version (0 for NULL). Lock-free snapshot. MT-safe.
 *
 * @param w  The watch, or NULL.
 * @return The current version.
 */
BAND_API uint64_t band_watch_version(const band_watch *w);

/**
 * @brief Refuse every later send, and wake every waiting receiver.
 *
 * Waiting receivers have seen the current version (otherwise they would not be waiting),
 * so they end with BAND_ECLOSED; their wakes run on this thread before this call returns.
 * Receivers that have not seen the last version still get it first. Closing twice is
 * harmless. Returns 0, or BAND_EINVAL for NULL. MT-safe.
 *
 * @param w  The watch.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_watch_close(band_watch *w);

/**
 * @brief 1 after band_watch_close(), 0 before (and for NULL). MT-safe.
 *
 * @param w  The watch, or NULL.
 * @return 1 after close, 0 before and for NULL.
 */
BAND_API int band_watch_is_closed(const band_watch *w);

/**
 * @brief Point the cursor @p rx at @p w, with the current version seen.
 *
 * So the first band_watch_recv() waits for the next send; call band_watch_rx_read() for
 * the value as it is now. Returns 0 or BAND_EINVAL (NULL argument). Must not be called on a
 * cursor with a pending wait. Not MT-safe for the same @p rx (it has one owner).
 *
 * @param[out] rx  The cursor to point at @p w.
 * @param w        The watch.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_watch_rx_init(band_watch_rx *rx, band_watch *w);

/**
 * @brief The last version @p rx marked seen (0 for NULL). MT-safe.
 *
 * @param rx  The receiver (cursor), or NULL.
 * @return The version @p rx last marked seen.
 */
BAND_API uint64_t band_watch_rx_seen(const band_watch_rx *rx);

/**
 * @brief Copy the current value to @p out (may be NULL), its version to
 * *@p version (may be NULL), and mark that version seen by @p rx, changed or not.
 *
 * Works after close. Returns 0, BAND_EBUSY while @p rx has a pending wait (nothing changes),
 * or BAND_EINVAL (NULL or uninitialised @p rx). MT-safe.
 *
 * @param rx            The receiver (cursor).
 * @param[out] out      Receives the value (value_size bytes), or NULL.
 * @param[out] version  Receives the version of that value, or NULL.
 * @return 0, BAND_EBUSY or BAND_EINVAL, as described above.
 */
BAND_API int band_watch_rx_read(band_watch_rx *rx, void *out, uint64_t *version);

/**
 * @brief Mark the current version seen by @p rx without copying the value.
 *
 * Returns band_watch_rx_read(@p rx, NULL, NULL)'s codes. MT-safe.
 *
 * @param rx  The receiver (cursor).
 * @return The codes of band_watch_rx_read(): 0, BAND_EBUSY or BAND_EINVAL.
 */
BAND_API int band_watch_mark_seen(band_watch_rx *rx);

/**
 * @brief If a version newer than @p rx's is current, copy the value to
 * @p out (may be NULL), mark it seen and return 0; never waits.
 *
 * Returns 0, BAND_EAGAIN when @p rx has seen the current version and the watch is open,
 * BAND_ECLOSED when @p rx has seen the last version and
 * the watch is closed, BAND_EBUSY while @p rx has a pending wait, or BAND_EINVAL (NULL or
 * uninitialised @p rx). Never takes a lock. MT-safe.
 *
 * @param rx        The receiver (cursor).
 * @param[out] out  Receives the value (value_size bytes), or NULL.
 * @return 0, BAND_EAGAIN, BAND_ECLOSED, BAND_EBUSY or BAND_EINVAL, as described above.
 */
BAND_API int band_watch_try_recv(band_watch_rx *rx, void *out);

/**
 * @brief Wait until @p deadline for a version newer than @p rx's, then copy the
 * value to @p out (may be NULL) and mark it seen.
 *
 * Returns the codes of band_watch_try_recv(), except that instead of BAND_EAGAIN it
 * waits, and returns BAND_ETIMEDOUT when @p deadline passed first (@p rx is unchanged; a
 * deadline at or before band_now() means "do not wait": such a call never queues). A
 * change that races with the deadline is returned (0), never half-applied. If several sends
 * happen before the caller runs, it gets the newest value as of the send that woke it.
 * Blocks the calling thread. MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param rx        The receiver (cursor).
 * @param[out] out  Receives the value (value_size bytes), or NULL.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, a code of band_watch_try_recv() other than BAND_EAGAIN, BAND_ETIMEDOUT or
 *         BAND_ECANCELED, as described above.
 */
BAND_API int band_watch_recv(band_watch_rx *rx, void *out, band_time deadline, band_cancel *cancel);

/**
 * @brief Take a newer version into @p out now, or queue @p op until one is
 * sent.
 *
 * Returns 0 when a newer version was current (copied to @p out, marked seen, op->version set;
 * no wake follows), or BAND_PENDING when @p op was queued: from then on exactly one of {the
 * wake runs once, band_waiter_cancel(&op->w) returns 0} ends it. Its status is then 0
 * (the next send's value was copied to @p out before the wake, op->version and @p rx were
 * updated), BAND_ECLOSED (closed; @p rx had seen the last version), or the cancel's reason
 * (@p rx unchanged). Any other answer also ends it at once and, except for BAND_EINVAL
 * (which leaves @p op untouched), is then its status: BAND_ECLOSED, BAND_EBUSY (@p rx already
 * has a pending wait). BAND_EINVAL: NULL @p op or uninitialised/NULL @p rx, @p op pending or
 * without a wake function. Wakes run on the thread that sends or closes, with no band lock
 * held. Never calls wake itself. MT-safe.
 *
 * @param rx        The receiver (cursor).
 * @param[out] out  Receives the value (value_size bytes), or NULL. It must stay valid while
 *                  @p op is pending.
 * @param op        The operation, owned by the caller; it stays valid and untouched while
 *                  pending.
 * @return 0, BAND_PENDING, BAND_ECLOSED, BAND_EINVAL or BAND_EBUSY, as described above.
 */
BAND_API int band_watch_recv_async(band_watch_rx *rx, void *out, band_watch_recv_op *op);

/** @brief A snapshot of a watch's counters. */
typedef struct band_watch_stats {
    size_t value_size;     /**< bytes per value */
    int closed;            /**< 1 after close */
    uint64_t version;      /**< the current version (= accepted sends) */
    uint64_t waiters;      /**< receivers waiting now */
    uint64_t sends;        /**< sends accepted */
    uint64_t refused;      /**< sends refused after close */
    uint64_t delivered;    /**< changes delivered to receivers (at once or through a wake) */
    uint64_t queued;       /**< waits that had to queue */
    uint64_t timeouts;     /**< queued waits that ended with BAND_ETIMEDOUT */
    uint64_t cancels;      /**< queued waits cancelled for any other reason */
    uint64_t closed_fails; /**< queued waits ended by close */
} band_watch_stats;

/**
 * @brief Copy @p w's counters into *@p out.
 *
 * Takes the watch's lock briefly. Returns 0 or BAND_EINVAL (NULL argument). MT-safe.
 *
 * @param w         The watch.
 * @param[out] out  Receives the snapshot.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_watch_get_stats(const band_watch *w, band_watch_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_WATCH_H */

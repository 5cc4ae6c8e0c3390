/* SPDX-License-Identifier: MIT */
/**
 * @file band/oneshot.h
 * @brief One value from one producer to one consumer.
 *
 * A band_oneshot carries at most one fixed-size value (value_size bytes, copied in and out;
 * a pointer is one such value). It has two sides, each of which ends exactly once:
 *
 *  - the sender ends by band_oneshot_send() (the value is delivered or stored) or by
 *    band_oneshot_close() (it gave up: the receiver learns BAND_ECLOSED);
 *  - the receiver ends by receiving the value, by learning that the sender gave up, or by
 *    band_oneshot_receiver_drop() (it left: a later send returns BAND_ECLOSED and the value
 *    stays with the sender).
 *
 * Nothing is lost on any path: a value is owned by exactly one party at every moment - the
 * sender (before a send, or after a send refused with BAND_ECLOSED), the oneshot (sent, not
 * yet received), or the receiver (after a receive returned 0 or its wake reported 0). A
 * value that arrived before the receiver dropped stays receivable with
 * band_oneshot_try_recv(), exactly as a closed channel still hands out what it had queued.
 *
 * Shape (docs/oneshot-watch.md explains each choice): one object with both ends (not two
 * handles), because a C caller passes one pointer around and frees it once; explicit
 * destruction (no hidden reference count), so ownership is one documented rule (see
 * band_oneshot_destroy()); the receive's output pointer is kept in the oneshot, since at
 * most one receive can be pending, so the blocking receive reuses the core's blocker and
 * the async op stays small.
 *
 * Every band_oneshot_* function is MT-safe. Sends, closes and drops may run the pending
 * receiver's wake on the calling thread, after every band lock is released. While no
 * receive is pending, send, close, receiver_drop and try_recv take no lock and make no
 * system call: each is one or two atomic read-modify-writes on the oneshot's state word.
 */
#ifndef BAND_ONESHOT_H
#define BAND_ONESHOT_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A oneshot channel (opaque): band_oneshot_create(), band_oneshot_destroy(). */
typedef struct band_oneshot band_oneshot;

/**
 * @brief A pending receive, embedded by its owner.
 *
 * @p w comes first, so a wake function that receives &op->w can convert it back to the op
 * with a cast or container_of. @p out is set by band_oneshot_recv_async() from its argument
 * and is where the value is copied before the wake runs. Keep the op (and the buffer @p out
 * points to) valid and untouched while it is pending.
 */
typedef struct band_oneshot_recv_op {
    band_waiter w; /**< first member: band_waiter_cancel(&op->w, ...) withdraws it */
    void *out;     /**< where the value is copied, set by band_oneshot_recv_async() */
} band_oneshot_recv_op;

/**
 * @brief Allocate a oneshot for one value of @p value_size bytes.
 *
 * @p value_size may be 0: the oneshot then carries only the fact that a send happened, and
 * NULL is accepted wherever a value or an output buffer is expected. Returns 0 and stores
 * the oneshot in *@p out, BAND_EINVAL when @p out is NULL, or BAND_ENOMEM (also for a
 * @p value_size that cannot be allocated). On failure *@p out is unchanged. The caller owns the
 * oneshot and frees it with band_oneshot_destroy().
 *
 * @param[out] out    Receives the new oneshot.
 * @param value_size  The size of the value in bytes; 0 for a oneshot that carries only the
 *                    fact of a send.
 * @return 0, BAND_EINVAL or BAND_ENOMEM, as described above.
 */
BAND_API int band_oneshot_create(band_oneshot **out, size_t value_size);

/**
 * @brief Free @p o.
 *
 * Returns 0, or BAND_EBUSY while a receive is pending (nothing is freed; cancel it, or let
 * the sender end, first). Destroying NULL returns 0. A value that was sent and never
 * received is discarded with the oneshot (its bytes; if it is a pointer to a resource,
 * receive it first). Ownership rule: destroy once no side will call again - typically
 * the receiver, once it holds its final answer (0 or BAND_ECLOSED from a receive, or its
 * drop) and the sender's last call has returned. band's last access to @p o in a send, close
 * or drop is an atomic update of its state or the release of its lock, before any wake
 * runs, so a receiver whose wake has run (or whose try_recv returned the value) may
 * destroy @p o at once.
 *
 * @param o  The oneshot, or NULL.
 * @return 0 (also for NULL) or BAND_EBUSY, as described above.
 */
BAND_API int band_oneshot_destroy(band_oneshot *o);

/**
 * @brief Hand the value at @p value (value_size bytes, copied) to the receiver.
 *
 * If a receive is pending the value is copied into its buffer and its wake runs on this
 * thread (status 0) before this call returns; otherwise the value is stored in @p o for the
 * receiver to take. Returns 0 (the value now belongs to the oneshot or the receiver),
 * BAND_ECLOSED when the receiver has dropped (nothing was copied: the value stays with the
 * caller), BAND_EALREADY when the sender side already ended (a value was sent before, or
 * band_oneshot_close() was called; the value stays with the caller), or BAND_EINVAL (NULL
 * @p o, or NULL @p value with a non-zero value size). Never waits. MT-safe.
 *
 * @param o      The oneshot.
 * @param value  The value: value_size bytes, copied (NULL allowed when the value size is
 *               0).
 * @return 0, BAND_ECLOSED, BAND_EALREADY or BAND_EINVAL, as described above.
 */
BAND_API int band_oneshot_send(band_oneshot *o, const void *value);

/**
 * @brief The sender gives up: it will not send.
 *
 * Before a send, a pending receive ends with BAND_ECLOSED (its wake runs on this thread
 * before this call returns), and every later receive returns BAND_ECLOSED. After a send
 * it only marks the sender done (the value stays receivable), so a sender may always
 * close when it is done. A later send returns BAND_EALREADY (the sender side has ended).
 * Idempotent. Returns 0, or BAND_EINVAL for NULL. MT-safe.
 *
 * @param o  The oneshot.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_oneshot_close(band_oneshot *o);

/**
 * @brief 1 once band_oneshot_close() was called (before or after a
 * send), 0 before, and for NULL. One atomic load, no lock. MT-safe.
 *
 * @param o  The oneshot, or NULL.
 * @return 1 once closed, 0 before and for NULL.
 */
BAND_API int band_oneshot_is_closed(const band_oneshot *o);

/**
 * @brief Take the value if it has arrived, without waiting.
 *
 * Returns 0 (the value was copied to @p out and belongs to the caller), BAND_EAGAIN when
 * nothing has been sent yet, BAND_ECLOSED when the sender closed without sending, or
 * after the receiver dropped and no value had arrived, BAND_EALREADY when the value was
 * already received, BAND_EBUSY while another receive is pending, or BAND_EINVAL (NULL @p o,
 * or NULL @p out with a non-zero value size). Never takes a lock: of two racing receives
 * exactly one gets the value (the other BAND_EALREADY). MT-safe.
 *
 * @param o         The oneshot.
 * @param[out] out  Receives the value (value_size bytes; NULL allowed when the value size
 *                  is 0).
 * @return 0, BAND_EAGAIN, BAND_ECLOSED, BAND_EALREADY, BAND_EBUSY or BAND_EINVAL, as
 *         described above.
 */
BAND_API int band_oneshot_try_recv(band_oneshot *o, void *out);

/**
 * @brief Wait until @p deadline for the value and copy it to @p out.
 *
 * Returns the codes of band_oneshot_try_recv(), except that instead of BAND_EAGAIN it
 * waits, and returns BAND_ETIMEDOUT when @p deadline passed first (a deadline at or before
 * band_now() means "do not wait": such a call never queues). A value that arrives as the
 * deadline passes is returned (0), never dropped; a value sent after the timeout stays in
 * the oneshot for a later receive. Returns BAND_ECANCELED when the receiver was dropped
 * by another thread meanwhile. Blocks the calling thread. MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param o         The oneshot.
 * @param[out] out  Receives the value (value_size bytes; NULL allowed when the value size
 *                  is 0).
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, a code of band_oneshot_try_recv() other than BAND_EAGAIN, BAND_ETIMEDOUT or
 *         BAND_ECANCELED, as described above.
 */
BAND_API int band_oneshot_recv(band_oneshot *o, void *out, band_time deadline, band_cancel *cancel);

/**
 * @brief Take the value into @p out now, or queue @p op until it arrives.
 *
 * Returns 0 when the value was copied to @p out at once (no wake follows), BAND_PENDING when
 * @p op was queued: from then on exactly one of {the wake runs once, band_waiter_cancel(&op->w)
 * returns 0} ends it. Its status (band_waiter_status(&op->w)) is then 0 (the value was
 * copied to @p out before the wake ran, and belongs to the owner), BAND_ECLOSED (the sender
 * closed without sending), BAND_ECANCELED (the receiver was dropped), or the cancel's
 * reason. Any other answer also ends it at once and, except for BAND_EINVAL (which leaves
 * @p op untouched), is then its status: the codes of band_oneshot_try_recv() other than
 * BAND_EAGAIN. BAND_EINVAL: NULL @p o or @p op, @p op pending or without a wake function, NULL
 * @p out with a non-zero value size. The wake runs on the thread that sends, closes, drops
 * or (for a cancel of someone else) never; with no band lock held. A cancel that returns 0
 * leaves any value that arrives later in the oneshot. Never calls wake itself. MT-safe.
 *
 * @param o         The oneshot.
 * @param[out] out  Receives the value (value_size bytes; NULL allowed when the value size
 *                  is 0); it must stay valid while @p op is pending.
 * @param op        The operation, owned by the caller; it stays valid and untouched while
 *                  pending.
 * @return 0, BAND_PENDING, BAND_EINVAL, or a code of band_oneshot_try_recv() other than
 *         BAND_EAGAIN, as described above.
 */
BAND_API int band_oneshot_recv_async(band_oneshot *o, void *out, band_oneshot_recv_op *op);

/**
 * @brief The receiver leaves.
 *
 * Every later send returns BAND_ECLOSED, so the sender keeps its value. A pending receive
 * ends with BAND_ECANCELED (its wake runs on this thread before this call returns). A value
 * that had already arrived stays in the oneshot and can still be taken with
 * band_oneshot_try_recv() (nothing is lost); after that, receives return BAND_EALREADY,
 * as after any receive. Without a value, receives return BAND_ECLOSED. Idempotent. Returns 0, or
 * BAND_EINVAL for NULL. MT-safe.
 *
 * @param o  The oneshot.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_oneshot_receiver_drop(band_oneshot *o);

/** @brief A snapshot of a oneshot's state. */
typedef struct band_oneshot_stats {
    size_t value_size;    /**< bytes per value */
    int sent;             /**< 1 once a send returned 0 */
    int received;         /**< 1 once the value was delivered to the receiver */
    int closed;           /**< 1 after band_oneshot_close() (before or after a send) */
    int receiver_dropped; /**< 1 after band_oneshot_receiver_drop() */
    int waiting;          /**< 1 while a receive is pending */
    int holds_value;      /**< 1 while a sent value waits in the oneshot */
    uint64_t refused;     /**< sends answered BAND_ECLOSED or BAND_EALREADY */
    uint64_t queued;      /**< receives that had to wait */
    uint64_t timeouts;    /**< queued receives that ended with BAND_ETIMEDOUT */
    uint64_t cancels;     /**< queued receives cancelled for any other reason */
} band_oneshot_stats;

/**
 * @brief Copy @p o's state into *@p out.
 *
 * Takes the oneshot's lock briefly. Returns 0 or BAND_EINVAL (NULL argument). MT-safe.
 *
 * @param o         The oneshot.
 * @param[out] out  Receives the snapshot.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_oneshot_get_stats(const band_oneshot *o, band_oneshot_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_ONESHOT_H */

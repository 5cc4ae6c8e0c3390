/* SPDX-License-Identifier: MIT */
/**
 * @file band/broadcast.h
 * @brief Every receiver sees every message.
 *
 * A band_broadcast is a ring of @p capacity fixed-size elements, copied in by senders and
 * copied out by each subscribed receiver independently. Every message gets a sequence
 * number (0, 1, 2, ... in send order). A receiver is a caller-owned cursor
 * (band_broadcast_rx) holding the sequence of the next message it will read. Two modes,
 * chosen at creation (docs/broadcast.md has the long form):
 *
 *  - BAND_BROADCAST_LOSSLESS. A message stays in the ring until every receiver that was
 *    subscribed when it was sent has read it (or unsubscribed). The slowest receiver holds
 *    back senders: a send waits while the ring is full. Waiting senders are served in
 *    arrival order, and try_send never barges past them. Nothing is ever skipped: every
 *    subscribed receiver receives every message sent after it subscribed exactly once,
 *    in send order.
 *  - BAND_BROADCAST_LOSSY. Senders never wait: a send into a full ring overwrites the
 *    oldest message. A receiver whose next message was overwritten gets BAND_ELAGGED once,
 *    with the exact number it missed, and its cursor moves to the oldest message still
 *    retained; it then continues from there. It receives every other message exactly
 *    once, in order.
 *
 * Decisions (each one tested in tests/unit/test_broadcast.c):
 *  - Subscribing starts a receiver at the next message sent; history is never replayed.
 *    So a message sent while nobody is subscribed reaches nobody: in lossless mode such a
 *    send completes at once and the message is dropped (counted in sent_unheard); it never
 *    waits and never holds back later senders.
 *  - Receivers are caller-owned structs (no allocation on subscribe); the ring, allocated
 *    at create, is the only allocation. Send, receive, subscribe, unsubscribe and cancel
 *    never allocate.
 *  - A lag is reported by the receive call that discovers it, never by a wake: a queued
 *    receive is always caught up (a send hands its message straight to every queued
 *    receive), so it cannot fall behind while it waits.
 *  - Unsubscribing a receiver ends its queued receives with BAND_ECLOSED and, in lossless
 *    mode, releases every message only it was still holding (which may let senders in).
 *  - Lossy mode takes no lock while no receive is queued: try_send, send and send_async
 *    publish into the ring with two atomic read-modify-writes (senders exclude each other
 *    briefly), and try_recv copies a message out and validates the copy against the
 *    ring's tail, so an overwrite during the copy is reported as the exact lag it is.
 *    Lossless mode takes no lock while no send and no receive is queued: try_send, and
 *    send or send_async with room, publish the same way (and refuse a full ring without
 *    the lock); try_recv copies its message out, moves the cursor by compare-and-swap and
 *    drops its claim on the slot with an atomic decrement, and the read that takes a
 *    slot's count to zero frees it. While a send or receive is queued, sends and lossless
 *    receives go through the lock, so queued operations keep their FIFO order.
 *    Subscribe, unsubscribe, close, queued operations and stats take the lock, which is
 *    never held while user code runs.
 *
 * Every band_broadcast_* function is MT-safe. Several threads may even share one receiver:
 * its cursor moves by compare-and-swap, so each of its messages goes to exactly one of the
 * competing calls (a call that lost such a race, or in lossy mode one whose message was
 * overwritten while it copied, may have written its output buffer before it answers
 * otherwise). Sends, receives, unsubscribes, closes and cancels may run
 * wakes of operations they completed on the calling thread, after every band lock is
 * released; a wake may call back into the broadcast.
 */
#ifndef BAND_BROADCAST_H
#define BAND_BROADCAST_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Modes for band_broadcast_create(). */
/** @brief Mode for band_broadcast_create(): a full ring loses its oldest message. */
#define BAND_BROADCAST_LOSSY 1
/** @brief Mode for band_broadcast_create(): senders wait for the slowest receiver. */
#define BAND_BROADCAST_LOSSLESS 2

/** @brief The largest ring a broadcast can have (2^32 messages). */
#define BAND_BROADCAST_MAX_CAPACITY (UINT64_C(1) << 32)

/** @brief A broadcast channel (opaque): band_broadcast_create(), band_broadcast_destroy(). */
typedef struct band_broadcast band_broadcast;

/**
 * @brief A receiver: one cursor into a broadcast, owned by the caller.
 *
 * Zero-initialise it (`band_broadcast_rx rx = {0};`) or call band_broadcast_rx_init()
 * before its first band_broadcast_subscribe(). Every field is private and guarded by the
 * broadcast's lock while subscribed. The memory must stay valid until
 * band_broadcast_unsubscribe() returned; after that it may be freed or subscribed again.
 */
typedef struct band_broadcast_rx {
    band_broadcast *_b;      /* the broadcast it is subscribed to, NULL when not */
    struct band__node _link; /* the broadcast's list of receivers */
    uint64_t _next;          /* sequence of the next message it reads */
    uint64_t _lagged_last;   /* messages missed, as reported by the last BAND_ELAGGED */
    uint64_t _lagged_total;  /* messages missed since it subscribed */
    uint64_t _start;         /* the sequence it subscribed at */
} band_broadcast_rx;

/**
 * @brief A pending send, embedded by its owner.
 *
 * Initialise @p w with band_waiter_init(). The waiter is the first member, so adapters can
 * pass &op->w and a wake function can convert it back to the op with a cast. The other fields are
 * private.
 */
typedef struct band_broadcast_send_op {
    band_waiter w;     /**< first member */
    const void *_elem; /* the caller's element, copied in when the send completes */
} band_broadcast_send_op;

/**
 * @brief A pending receive, embedded by its owner.
 *
 * Initialise @p w with band_waiter_init(). @p lagged is the one public result field besides
 * the status: the number of messages missed when the status is BAND_ELAGGED, 0 otherwise.
 */
typedef struct band_broadcast_recv_op {
    band_waiter w;          /**< first member */
    uint64_t lagged;        /**< result: messages missed when the status is BAND_ELAGGED */
    band_broadcast_rx *_rx; /* private */
    void *_out;             /* private: where the message is copied */
} band_broadcast_recv_op;

/**
 * @brief Allocate a broadcast of @p capacity elements of @p elem_size bytes.
 *
 * @p mode is BAND_BROADCAST_LOSSY or BAND_BROADCAST_LOSSLESS. Returns 0 and stores the
 * broadcast in *@p out, BAND_EINVAL (NULL @p out, @p elem_size 0, @p capacity 0 or above
 * BAND_BROADCAST_MAX_CAPACITY, @p capacity * @p elem_size overflowing size_t, unknown @p mode),
 * or BAND_ENOMEM. *@p out is unchanged on failure. The caller frees it with
 * band_broadcast_destroy(). The ring is the only memory band allocates for it.
 *
 * @param[out] out   Receives the new broadcast.
 * @param elem_size  The size of one message in bytes, at least 1.
 * @param capacity   The ring's slots, 1 to BAND_BROADCAST_MAX_CAPACITY.
 * @param mode       BAND_BROADCAST_LOSSY or BAND_BROADCAST_LOSSLESS.
 * @return 0, BAND_EINVAL or BAND_ENOMEM, as described above.
 */
BAND_API int band_broadcast_create(band_broadcast **out, size_t elem_size, uint64_t capacity,
                                   int mode);

/**
 * @brief Free @p b.
 *
 * Returns 0, or BAND_EBUSY (nothing is freed) while a receiver is subscribed or an
 * operation is queued: unsubscribe every receiver first (close it to end queued sends).
 * Destroying NULL returns 0. Nobody may use @p b after a successful call.
 *
 * @param b  The broadcast, or NULL.
 * @return 0 (also for NULL) or BAND_EBUSY, as described above.
 */
BAND_API int band_broadcast_destroy(band_broadcast *b);

/**
 * @brief Make @p rx an unsubscribed receiver (same as zeroing it).
 *
 * @param[out] rx  The receiver to prepare.
 */
BAND_API void band_broadcast_rx_init(band_broadcast_rx *rx);

/**
 * @brief Attach @p rx to @p b, starting at the next message sent.
 *
 * Returns 0, BAND_ECLOSED after close (nothing more will ever be sent; @p rx is left as it
 * was; checked before the next code), or BAND_EINVAL (NULL argument, @p rx already
 * subscribed). From now on, in
 * lossless mode, every message sent holds a place in the ring until @p rx has read it.
 * Never allocates. MT-safe.
 *
 * @param b           The broadcast.
 * @param[in,out] rx  An unsubscribed receiver.
 * @return 0, BAND_ECLOSED or BAND_EINVAL, as described above.
 */
BAND_API int band_broadcast_subscribe(band_broadcast *b, band_broadcast_rx *rx);

/**
 * @brief Detach @p rx from its broadcast.
 *
 * In lossless mode the messages @p rx had not read yet stop holding back senders; queued
 * sends that now fit complete, and their wakes (and those of receives they complete) run
 * on this thread before it returns. Queued receives on @p rx end with BAND_ECLOSED (their
 * wakes run on this thread too). Afterwards @p rx may be freed or subscribed again, once
 * every call on @p rx that ran concurrently with this one has returned (a receive that was
 * under way is refused, or took its message before the unsubscribe counted it).
 * Returns 0, or BAND_EINVAL (NULL @p rx, @p rx not subscribed). MT-safe; the broadcast must
 * still exist.
 *
 * @param[in,out] rx  A subscribed receiver.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_broadcast_unsubscribe(band_broadcast_rx *rx);

/**
 * @brief Send a copy of *@p elem now, or refuse without waiting.
 *
 * Returns 0 (copied into the ring and handed to every queued receive, whose wakes run on
 * this thread before it returns), BAND_EAGAIN in lossless mode when the ring is full or
 * other sends are queued (try never barges past a waiting sender), BAND_ECLOSED after
 * close, BAND_EOVERFLOW after 2^64 - 1 messages, or BAND_EINVAL (NULL argument). On any
 * failure the element stays with the caller: nothing was copied. In lossy mode it never
 * answers BAND_EAGAIN: a full ring loses its oldest message. MT-safe.
 *
 * @param b     The broadcast.
 * @param elem  The message: elem_size bytes, copied.
 * @return 0, BAND_EAGAIN, BAND_ECLOSED, BAND_EOVERFLOW or BAND_EINVAL, as described above.
 */
BAND_API int band_broadcast_try_send(band_broadcast *b, const void *elem);

/**
 * @brief Send a copy of *@p elem, blocking this thread until @p deadline.
 *
 * Lossless mode waits, in FIFO order with other senders, until the slowest receiver has
 * made room; lossy mode never waits. Returns 0 (sent; a grant that races with the
 * deadline wins), BAND_ETIMEDOUT when @p deadline passed first (not sent; a deadline at or
 * before band_now() means "do not wait" and such a call never queues), or the other codes
 * of band_broadcast_try_send() except BAND_EAGAIN. Refused elements stay with the caller.
 * *@p elem is only read while this call runs. MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED (the message is not sent); a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param b         The broadcast.
 * @param elem      The message: elem_size bytes, copied. Read only while the call runs.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_ECANCELED, or a code of band_broadcast_try_send() other
 *         than BAND_EAGAIN, as described above.
 */
BAND_API int band_broadcast_send(band_broadcast *b, const void *elem, band_time deadline,
                                 band_cancel *cancel);

/**
 * @brief Send a copy of *@p elem now, or queue @p op until there is
 * room.
 *
 * Returns 0 when sent at once (no wake follows), BAND_PENDING when queued (lossless mode
 * only: from then on exactly one of {wake called once, band_waiter_cancel() returns 0}
 * ends the operation), BAND_ECLOSED or BAND_EOVERFLOW (ended at once, status set, no
 * wake), or BAND_EINVAL (NULL argument, @p op->w pending already or without a wake
 * function; @p op is left untouched). While queued, *@p elem must stay valid and unchanged:
 * it is copied when the send completes, by the thread that made room (a receive, an
 * unsubscribe), which then runs the wake after releasing the lock. A queued send that
 * ends with BAND_ECLOSED (close) or is cancelled was not sent; the element stays with the
 * caller. MT-safe.
 *
 * @param b     The broadcast.
 * @param elem  The message: elem_size bytes, copied. It must stay valid and unchanged while
 *              @p op is pending.
 * @param op    The operation, owned by the caller; it stays valid and untouched while
 *              pending.
 * @return 0, BAND_PENDING, BAND_ECLOSED, BAND_EOVERFLOW or BAND_EINVAL, as described above.
 */
BAND_API int band_broadcast_send_async(band_broadcast *b, const void *elem,
                                       band_broadcast_send_op *op);

/**
 * @brief Copy @p rx's next message into *@p out, or refuse without waiting.
 *
 * Returns 0 (copied; the cursor moved on), BAND_ELAGGED in lossy mode when messages @p rx
 * had not read were overwritten (nothing is copied; the cursor moves to the oldest
 * retained message; band_broadcast_rx_lagged() tells how many were missed, and the next
 * call returns that oldest message), BAND_EAGAIN when @p rx has read everything sent so far,
 * BAND_ECLOSED once the broadcast is closed and @p rx has read (or lagged past) everything
 * that remains, or BAND_EINVAL (NULL argument, @p rx not subscribed). In lossless mode a
 * receive may make room for queued senders, whose wakes then run on this thread before it
 * returns. MT-safe.
 *
 * @param rx        The receiver.
 * @param[out] out  Receives the message (elem_size bytes).
 * @return 0, BAND_ELAGGED, BAND_EAGAIN, BAND_ECLOSED or BAND_EINVAL, as described above.
 */
BAND_API int band_broadcast_try_recv(band_broadcast_rx *rx, void *out);

/**
 * @brief Copy @p rx's next message into *@p out, blocking until @p deadline.
 *
 * Returns 0, BAND_ELAGGED, BAND_ECLOSED or BAND_EINVAL as band_broadcast_try_recv()
 * (none of them waits), or BAND_ETIMEDOUT when nothing was sent before @p deadline (a
 * deadline at or before band_now() means "do not wait"). A message that races with the
 * deadline wins: it is returned as 0 and never lost. MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param rx        The receiver.
 * @param[out] out  Receives the message (elem_size bytes).
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ELAGGED, BAND_ECLOSED, BAND_EINVAL, BAND_ETIMEDOUT or BAND_ECANCELED, as
 *         described above.
 */
BAND_API int band_broadcast_recv(band_broadcast_rx *rx, void *out, band_time deadline,
                                 band_cancel *cancel);

/**
 * @brief Copy @p rx's next message into *@p out now, or queue @p op.
 *
 * Returns 0 (copied at once, no wake), BAND_ELAGGED (at once, no wake; @p op->lagged holds
 * the count), BAND_ECLOSED (at once, no wake), BAND_PENDING when @p rx has read everything
 * (the next send copies its message into *@p out and completes @p op with status 0 on the
 * sending thread; a close or an unsubscribe completes it with BAND_ECLOSED; or
 * band_waiter_cancel() returns 0 and @p rx's cursor has not moved), or BAND_EINVAL (NULL
 * argument, @p rx not subscribed, @p op->w pending or without a wake function; @p op is left
 * untouched). While queued, @p op and *@p out must stay valid and *@p out untouched. A queued
 * receive is never completed with BAND_ELAGGED (see the header comment). MT-safe.
 *
 * @param rx        The receiver.
 * @param[out] out  Receives the message (elem_size bytes). It must stay valid and untouched
 *                  while @p op is pending.
 * @param op        The operation, owned by the caller; it stays valid and untouched while
 *                  pending.
 * @return 0, BAND_PENDING, BAND_ELAGGED, BAND_ECLOSED or BAND_EINVAL, as described above.
 */
BAND_API int band_broadcast_recv_async(band_broadcast_rx *rx, void *out,
                                       band_broadcast_recv_op *op);

/**
 * @brief Messages @p rx missed, as reported by its last BAND_ELAGGED.
 *
 * 0 before any lag and for NULL or unsubscribed receivers. MT-safe (if several threads
 * share @p rx, the value is that of whichever lag was reported last).
 *
 * @param rx  The receiver, or NULL.
 * @return The number of messages missed at the last BAND_ELAGGED.
 */
BAND_API uint64_t band_broadcast_rx_lagged(const band_broadcast_rx *rx);

/**
 * @brief Messages sent that @p rx has not read yet.
 *
 * Includes messages it will be told it lagged past. 0 for NULL or unsubscribed receivers.
 * A snapshot. MT-safe.
 *
 * @param rx  The receiver, or NULL.
 * @return The number of messages sent that @p rx has not read yet.
 */
BAND_API uint64_t band_broadcast_rx_backlog(const band_broadcast_rx *rx);

/**
 * @brief Stop accepting messages.
 *
 * Every queued send ends with BAND_ECLOSED (not sent: the element stays with its owner),
 * and so does every queued receive (it had read everything). Future sends and subscribes
 * fail with BAND_ECLOSED. Messages already sent can still be received: each receiver
 * drains what remains (lagging as usual in lossy mode) and then sees BAND_ECLOSED. Wakes
 * run on this thread before it returns. Closing twice is harmless. Returns 0, or
 * BAND_EINVAL for NULL. MT-safe.
 *
 * @param b  The broadcast.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_broadcast_close(band_broadcast *b);

/**
 * @brief 1 after band_broadcast_close(), 0 before and for NULL.
 *
 * @param b  The broadcast, or NULL.
 * @return 1 after close, 0 before and for NULL.
 */
BAND_API int band_broadcast_is_closed(const band_broadcast *b);

/**
 * @brief A snapshot of a broadcast's counters.
 *
 * Gauges describe the moment of the snapshot; counters count since creation. Sequence
 * numbers: messages [oldest_seq, next_seq) are in the ring; next_seq is also the number of
 * messages sent so far.
 */
typedef struct band_broadcast_stats {
    int mode;                    /**< BAND_BROADCAST_LOSSY or BAND_BROADCAST_LOSSLESS */
    int closed;                  /**< 1 after close */
    size_t elem_size;            /**< bytes per element */
    uint64_t capacity;           /**< ring slots */
    uint64_t oldest_seq;         /**< sequence of the oldest retained message */
    uint64_t next_seq;           /**< sequence the next message gets == messages sent */
    uint64_t retained;           /**< next_seq - oldest_seq */
    uint64_t receivers;          /**< subscribed now */
    uint64_t waiting_senders;    /**< queued sends (lossless only) */
    uint64_t waiting_receivers;  /**< queued receives */
    uint64_t sent_unheard;       /**< messages sent while nobody was subscribed */
    uint64_t overwritten;        /**< lossy: messages overwritten in a full ring */
    uint64_t received;           /**< messages copied out to receivers, in total */
    uint64_t lag_events;         /**< BAND_ELAGGED answers */
    uint64_t lagged;             /**< messages receivers missed, in total */
    uint64_t try_send_refusals;  /**< try_send answered BAND_EAGAIN */
    uint64_t send_queued;        /**< sends that had to queue */
    uint64_t send_timeouts;      /**< queued sends that ended with BAND_ETIMEDOUT */
    uint64_t send_cancels;       /**< queued sends cancelled for any other reason */
    uint64_t send_closed_fails;  /**< queued sends failed by close */
    uint64_t send_wait_ns_total; /**< time queued sends that completed spent waiting */
    uint64_t send_wait_ns_max;   /**< the longest any of them waited */
    uint64_t recv_queued;        /**< receives that had to queue */
    uint64_t recv_timeouts;      /**< queued receives that ended with BAND_ETIMEDOUT */
    uint64_t recv_cancels;       /**< queued receives cancelled for any other reason */
    uint64_t recv_closed_fails;  /**< queued receives ended by close or unsubscribe */
} band_broadcast_stats;

/**
 * @brief Copy @p b's counters into *@p out.
 *
 * Takes the broadcast's lock briefly. Returns 0 or BAND_EINVAL (NULL argument). MT-safe.
 *
 * @param b         The broadcast.
 * @param[out] out  Receives the snapshot.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_broadcast_get_stats(const band_broadcast *b, band_broadcast_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_BROADCAST_H */

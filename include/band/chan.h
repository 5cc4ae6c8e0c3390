/* SPDX-License-Identifier: MIT */
/**
 * @file band/chan.h
 * @brief Bounded channels with explicit backpressure.
 *
 * A band_chan carries fixed-size elements, copied in and out (a pointer is one such
 * element), between any number of senders and receivers. It is bounded twice: by a number
 * of elements, and optionally by bytes, where each send declares the bytes its element
 * stands for (a buffer it points to, say). Both bounds hold at once.
 *
 *  - Full and closed are different answers, and a refused element stays with its sender.
 *  - Freed capacity goes to the oldest waiting sender: a newcomer's try_send cannot take
 *    it. Waiting receivers are served in arrival order too. A send that finds a receiver
 *    waiting hands its element straight to it.
 *  - reserve takes a slot (and its bytes) now; a later band_chan_slot_send() fills it and
 *    cannot fail, even after close. An unused reservation is returned with
 *    band_chan_slot_release().
 *  - close (from either side): pending and later sends fail with BAND_ECLOSED and keep
 *    their elements; queued elements (and reservations still to be filled) can still be
 *    received; then receivers see BAND_ECLOSED. With sender counting the channel closes
 *    when the last sender leaves.
 *  - Overflow policies for streams where waiting is wrong: drop-oldest and drop-newest,
 *    through band_chan_offer(), which hands the dropped element back and counts it.
 *  - Destroying a channel with elements inside calls a drop function once per element.
 *
 * Cost: no allocation per operation. While nobody waits, send and receive are lock-free
 * (a CAS on a bounded ring with per-slot sequence numbers); waiting, reservations, close,
 * and every operation of a channel with a byte bound or an overflow policy take the
 * channel's lock. docs/chan.md has the details.
 *
 * Every function is MT-safe. Operations that complete other waiters run their wakes on
 * the calling thread after every band lock is released.
 */
#ifndef BAND_CHAN_H
#define BAND_CHAN_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"
#include "band/sem.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A bounded channel (opaque): band_chan_create(), band_chan_destroy(). */
typedef struct band_chan band_chan;

/** @brief What a full channel does with a new element. */
enum band_chan_overflow {
    BAND_CHAN_WAIT = 0,        /**< senders wait (send) or are refused (try_send): default */
    BAND_CHAN_DROP_OLDEST = 1, /**< band_chan_offer() evicts the oldest element */
    BAND_CHAN_DROP_NEWEST = 2, /**< band_chan_offer() refuses the new element */
};

/** @brief Called once per element still queued when the channel is destroyed. */
typedef void band_chan_drop_fn(void *elem, void *ctx);

struct band_histo;

/**
 * @brief Every creation option. A zero-initialised struct (or a NULL
 * pointer) means the defaults: no byte bound, senders wait when full, no drop function,
 * no sender counting, FIFO, no wait histogram.
 */
typedef struct band_chan_opts {
    uint64_t byte_capacity;  /**< 0: no byte bound; else 1..BAND_MAX_UNITS declared bytes */
    int overflow;            /**< enum band_chan_overflow */
    band_chan_drop_fn *drop; /**< optional */
    void *drop_ctx;          /**< passed to @p drop as its ctx */
    uint64_t senders;        /**< > 0: count senders, starting at this many; the channel closes
                                when band_chan_sender_leave() brings the count to 0 */
    int deadline_aware;      /**< 1: a send or reservation that would have to queue is refused
                                at once with BAND_ETIMEDOUT when the measured pace at which
                                waiting senders are served predicts it would miss its deadline
                                (the blocking call's deadline, or op->w.deadline for _async) */
    band_time lifo_after;    /**< > 0: receivers take the NEWEST element first while the oldest
                                has been queued longer than this (adaptive LIFO for overload:
                                fresh requests still have time); 0: FIFO. Every operation of
                                such a channel takes its lock */
    struct band_histo *wait_histo; /**< optional (band/histo.h): records how long each queued
                             sender waited (ns, from queueing to being served, timing out,
                             being cancelled or failed by close). Senders that never queue
                             record nothing (their wait was 0). It stays the caller's and
                             must outlive the channel */
} band_chan_opts;

/**
 * @brief A channel of @p capacity elements of @p elem_size bytes, with the
 * options in @p opts (NULL: the defaults, see struct band_chan_opts). @p opts is read during
 * the call only (the wait histogram it names is kept).
 *
 * Returns 0 and stores it in *@p out, BAND_EINVAL (NULL @p out, @p elem_size 0, @p capacity 0 or
 * above BAND_MAX_UNITS, byte_capacity above BAND_MAX_UNITS, an unknown overflow policy,
 * deadline_aware other than 0 or 1, a negative lifo_after), or BAND_ENOMEM. On error
 * *@p out is untouched and nothing is allocated. MT-safe.
 *
 * @param[out] out   Receives the new channel.
 * @param elem_size  The size of one element in bytes, at least 1.
 * @param capacity   The most elements queued at once, at least 1.
 * @param opts       Options, or NULL for the defaults.
 * @return 0, BAND_EINVAL or BAND_ENOMEM, as described above.
 */
BAND_API int band_chan_create(band_chan **out, size_t elem_size, uint64_t capacity,
                              const band_chan_opts *opts);

/**
 * @brief Free @p c, calling the drop function once per queued element.
 *
 * Returns 0, or BAND_EBUSY (nothing freed) while operations are pending or reservations
 * are outstanding. NULL returns 0. Never waits and never closes: close, let the waiters
 * go, then destroy. Nobody may use @p c afterwards.
 *
 * @param c  The channel, or NULL.
 * @return 0 (also for NULL) or BAND_EBUSY, as described above.
 */
BAND_API int band_chan_destroy(band_chan *c);

/**
 * @brief Name @p c in its counters: the name is copied (at most
 * BAND_NAME_MAX bytes with its NUL; NULL or "" clears it). Returns 0, or BAND_EINVAL
 * (NULL @p c, a name too long: nothing changes). MT-safe.
 *
 * @param c     The channel.
 * @param name  The name to copy, or NULL to clear it.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_set_name(band_chan *c, const char *name);

/*
 * Sending. @p bytes is what the element stands for against the byte bound (ignored when the
 * channel has none, but still counted). A send that finds a receiver waiting hands the
 * element to it directly.
 */

/**
 * @brief Queue a copy of *@p elem now, or refuse.
 *
 * Returns 0, BAND_EAGAIN (full, or older senders are waiting), BAND_ECLOSED, BAND_E2BIG
 * (@p bytes above the byte capacity), or BAND_EINVAL (NULL argument, a channel with a drop
 * policy - use band_chan_offer() - or, without a byte bound, @p bytes above
 * BAND_MAX_UNITS). On any refusal the element stays with the caller.
 *
 * @param c      The channel.
 * @param elem   The element to send: elem_size bytes, copied.
 * @param bytes  The bytes the element stands for against the byte bound.
 * @return 0, BAND_EAGAIN, BAND_ECLOSED, BAND_E2BIG or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_try_send(band_chan *c, const void *elem, uint64_t bytes);

/**
 * @brief As try_send, but waits in FIFO order until @p deadline: 0,
 * BAND_ETIMEDOUT (also at once on a deadline-aware channel, see struct band_chan_opts),
 * BAND_ECLOSED, BAND_E2BIG, BAND_EINVAL, or BAND_ECANCELED (@p cancel was requested while
 * it waited; the element stays with the caller).
 *
 * @param c         The channel.
 * @param elem      The element to send: elem_size bytes, copied.
 * @param bytes     The bytes the element stands for against the byte bound.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_ECLOSED, BAND_E2BIG, BAND_EINVAL or BAND_ECANCELED, as
 *         described above.
 */
BAND_API int band_chan_send(band_chan *c, const void *elem, uint64_t bytes, band_time deadline,
                            band_cancel *cancel);

/**
 * @brief An asynchronous send, embedded by its owner. Initialise @p w
 * with band_waiter_init() (and set @p w.deadline on a deadline-aware channel); the call
 * fills the other fields. No field is an input to fill in.
 */
typedef struct band_chan_send_op {
    band_waiter w;    /**< first member: band_waiter_cancel(&op->w, ...) withdraws it */
    const void *elem; /**< input copy: the call's @p elem; *elem is copied into the channel when
                         the send is granted, before the wake, so it must stay valid while
                         the op is pending. Read-only to the owner */
    uint64_t bytes;   /**< input copy: the call's @p bytes. Read-only to the owner */
} band_chan_send_op;

/**
 * @brief Queue a copy of *@p elem (declaring @p bytes) now, or queue @p op
 * until there is room. @p op must not be pending; it stays the caller's and must stay valid
 * (with *@p elem) until the operation ended.
 *
 * Returns 0 (sent, no wake), BAND_PENDING (exactly one of {wake, successful cancel} ends
 * it; status 0 means the element was queued, BAND_ECLOSED that it stays with the caller),
 * or a refusal as for band_chan_try_send() (full is never a refusal here; nothing is
 * queued and no wake follows; BAND_EINVAL leaves a pending @p op as it is), or, on a
 * deadline-aware channel only, BAND_ETIMEDOUT at once when waiting is predicted to miss
 * @p op->w.deadline. MT-safe.
 *
 * @param c      The channel.
 * @param elem   The element to send: elem_size bytes, copied. It must stay valid while @p
 *               op is pending.
 * @param bytes  The bytes the element stands for against the byte bound.
 * @param op     The operation, owned by the caller; it stays valid and untouched while
 *               pending.
 * @return 0, BAND_PENDING, a refusal of band_chan_try_send() (BAND_ECLOSED, BAND_E2BIG,
 *         BAND_EINVAL) or BAND_ETIMEDOUT, as described above.
 */
BAND_API int band_chan_send_async(band_chan *c, const void *elem, uint64_t bytes,
                                  band_chan_send_op *op);

/**
 * @brief Send on a channel with a drop policy; never waits.
 *
 * Returns 0 and sets *@p dropped_out to 0 when the element was queued with nothing dropped.
 * When the channel is full, drop-oldest evicts the oldest element into @p dropped (and its
 * declared bytes into *@p dropped_bytes, if not NULL), queues the new one and sets
 * *@p dropped_out to 1; drop-newest copies the new element into @p dropped instead, queues
 * nothing, and sets *@p dropped_out to 1. Either way the dropped element is the caller's and
 * is counted in stats.dropped. If evicting one element would not make room for @p bytes,
 * nothing is evicted and BAND_EAGAIN is returned. Also BAND_ECLOSED, BAND_E2BIG, and
 * BAND_EINVAL (NULL argument, or a waiting channel: use send/try_send there).
 *
 * @param c                   The channel.
 * @param elem                The element to send: elem_size bytes, copied.
 * @param bytes               The bytes the element stands for against the byte bound.
 * @param[out] dropped        Receives the dropped element (elem_size bytes) when one is
 *                            dropped.
 * @param[out] dropped_bytes  Receives the dropped element's declared bytes, or NULL.
 * @param[out] dropped_out    Receives 1 when an element was dropped, else 0.
 * @return 0, BAND_EAGAIN, BAND_ECLOSED, BAND_E2BIG or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_offer(band_chan *c, const void *elem, uint64_t bytes, void *dropped,
                             uint64_t *dropped_bytes, int *dropped_out);

/**
 * @brief Reservations: a slot (and its bytes) taken now, filled later by a send that
 * cannot fail.
 *
 * A slot is a value with one owner, like a permit. Initialise with BAND_CHAN_SLOT_INIT.
 */
typedef struct band_chan_slot {
    band_chan *chan; /**< NULL when empty */
    uint64_t bytes;  /**< the bytes reserved with the slot */
} band_chan_slot;

/** @brief The initialiser of an empty band_chan_slot. */
#define BAND_CHAN_SLOT_INIT                                                                        \
    {                                                                                              \
        NULL, 0                                                                                    \
    }

/**
 * @brief Reserve one slot and @p bytes now into the empty @p slot: 0,
 * BAND_EAGAIN, BAND_ECLOSED, BAND_E2BIG, BAND_EINVAL (NULL, @p slot not empty, drop policy).
 * MT-safe; @p slot has one owner.
 *
 * @param c          The channel.
 * @param bytes      The bytes the element to come stands for against the byte bound.
 * @param[out] slot  An empty slot; receives the reservation.
 * @return 0, BAND_EAGAIN, BAND_ECLOSED, BAND_E2BIG or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_try_reserve(band_chan *c, uint64_t bytes, band_chan_slot *slot);

/**
 * @brief As try_reserve, waiting in FIFO order (with senders) until
 * @p deadline: adds BAND_ETIMEDOUT (also at once on a deadline-aware channel) and
 * BAND_ECANCELED (@p cancel was requested while it waited; nothing reserved).
 *
 * @param c          The channel.
 * @param bytes      The bytes the element to come stands for against the byte bound.
 * @param[out] slot  An empty slot; receives the reservation.
 * @param deadline   Absolute deadline (band_now() clock); BAND_FOREVER never expires, a
 *                   past one means "do not wait".
 * @param cancel     Cancellation token, or NULL for none.
 * @return 0, or a code of band_chan_try_reserve(), BAND_ETIMEDOUT or BAND_ECANCELED, as
 *         described above.
 */
BAND_API int band_chan_reserve(band_chan *c, uint64_t bytes, band_chan_slot *slot,
                               band_time deadline, band_cancel *cancel);

/**
 * @brief An asynchronous reservation, embedded by its owner.
 * Initialise @p w with band_waiter_init() (and set @p w.deadline on a deadline-aware
 * channel); the call fills the other fields.
 */
typedef struct band_chan_reserve_op {
    band_waiter w;       /**< first member: band_waiter_cancel(&op->w, ...) withdraws it */
    uint64_t bytes;      /**< input copy: the call's @p bytes. Read-only to the owner */
    band_chan_slot slot; /**< output: the reservation (of @p bytes) once the op succeeded - at
                            once, or a wake with status 0 - and empty otherwise. It is the
                            owner's: fill it with band_chan_slot_send(&op->slot, ...) or
                            return it with band_chan_slot_release(&op->slot), or move it
                            to a slot of its own (then empty this one) */
} band_chan_reserve_op;

/**
 * @brief Reserve one slot and @p bytes now or when there is room.
 * @p op must not be pending; the call empties @p op->slot first, so a reservation still held
 * there must be filled or released before @p op is submitted again.
 *
 * Returns 0 (reserved: @p op->slot holds it, no wake), BAND_PENDING (exactly one of {wake,
 * successful cancel} ends it; status 0 means @p op->slot holds the reservation), or a
 * refusal as for band_chan_try_reserve() (full is never a refusal here; nothing is
 * queued, no wake follows, @p op->slot stays empty; BAND_EINVAL leaves a pending @p op as it
 * is), or, on a deadline-aware channel only, BAND_ETIMEDOUT at once when waiting is
 * predicted to miss @p op->w.deadline. MT-safe.
 *
 * @param c      The channel.
 * @param bytes  The bytes the element to come stands for against the byte bound.
 * @param op     The operation, owned by the caller; it stays valid and untouched while
 *               pending.
 * @return 0, BAND_PENDING, a refusal of band_chan_try_reserve() (BAND_EINVAL among them) or
 *         BAND_ETIMEDOUT, as described above.
 */
BAND_API int band_chan_reserve_async(band_chan *c, uint64_t bytes, band_chan_reserve_op *op);

/**
 * @brief Fill the reserved @p slot with a copy of *@p elem and empty it.
 *
 * Cannot fail on a held reservation, even after close: returns 0, or BAND_EINVAL for a
 * NULL argument or an empty slot.
 *
 * @param[in,out] slot  The reservation; empty afterwards.
 * @param elem          The element to send: elem_size bytes, copied.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_slot_send(band_chan_slot *slot, const void *elem);

/**
 * @brief Return an unused reservation and empty @p slot; an empty slot
 * returns 0 and does nothing. BAND_EINVAL for NULL.
 *
 * @param[in,out] slot  The reservation; empty afterwards.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_slot_release(band_chan_slot *slot);

/*
 * Receiving. @p bytes (may be NULL) receives the element's declared bytes.
 */

/**
 * @brief Take the oldest element into *@p out now, or refuse.
 *
 * When nothing is queued but a sender waits (every slot reserved), its element is taken
 * straight from it. Returns 0, BAND_EAGAIN (empty, or older receivers are waiting),
 * BAND_ECLOSED (closed, empty and no reservation left to fill), or BAND_EINVAL.
 *
 * @param c           The channel.
 * @param[out] out    Receives the element (elem_size bytes).
 * @param[out] bytes  Receives the element's declared bytes, or NULL.
 * @return 0, BAND_EAGAIN, BAND_ECLOSED or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_try_recv(band_chan *c, void *out, uint64_t *bytes);

/**
 * @brief As try_recv, waiting in FIFO order until @p deadline: 0,
 * BAND_ETIMEDOUT, BAND_ECLOSED, BAND_EINVAL, or BAND_ECANCELED (@p cancel was requested
 * while it waited; nothing taken).
 *
 * @param c           The channel.
 * @param[out] out    Receives the element (elem_size bytes).
 * @param[out] bytes  Receives the element's declared bytes, or NULL.
 * @param deadline    Absolute deadline (band_now() clock); BAND_FOREVER never expires, a
 *                    past one means "do not wait".
 * @param cancel      Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_ECLOSED, BAND_EINVAL or BAND_ECANCELED, as described
 *         above.
 */
BAND_API int band_chan_recv(band_chan *c, void *out, uint64_t *bytes, band_time deadline,
                            band_cancel *cancel);

/**
 * @brief An asynchronous receive, embedded by its owner. Initialise
 * @p w with band_waiter_init(); the call fills the other fields.
 */
typedef struct band_chan_recv_op {
    band_waiter w;  /**< first member: band_waiter_cancel(&op->w, ...) withdraws it */
    void *out;      /**< input copy: the call's @p out, where the element is copied before the
                       wake; it must stay valid while the op is pending. Read-only to the
                       owner */
    uint64_t bytes; /**< output: the received element's declared bytes (when the status
                       is 0) */
} band_chan_recv_op;

/**
 * @brief Take the oldest element into *@p out now, or queue @p op until one
 * comes. @p op must not be pending; it stays the caller's and must stay valid (with @p out)
 * until the operation ended.
 *
 * Returns 0 (received now: *@p out holds the element and @p op->bytes its bytes, no wake),
 * BAND_PENDING (exactly one of {wake, successful cancel} ends it; status 0 means *@p out
 * and @p op->bytes hold the element), BAND_ECLOSED (closed, empty and no reservation left
 * to fill; no wake), or BAND_EINVAL (NULL argument, a pending @p op or one without a wake
 * function: nothing queued, a pending @p op is left as it is). MT-safe.
 *
 * @param c    The channel.
 * @param out  Receives the element (elem_size bytes). It must stay valid while @p op is
 *             pending.
 * @param op   The operation, owned by the caller; it stays valid and untouched while
 *             pending.
 * @return 0, BAND_PENDING, BAND_ECLOSED or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_recv_async(band_chan *c, void *out, band_chan_recv_op *op);

/**
 * @brief Receive a batch: wait until @p deadline for at least one element,
 * then take up to @p max in order into the array @p out (@p max * elem_size bytes), and their
 * bytes into @p bytes (NULL, or an array of @p max). *@p n receives the count.
 *
 * Returns 0 with *@p n >= 1, BAND_ETIMEDOUT, BAND_ECLOSED or BAND_EINVAL (NULL @p c, @p out or
 * @p n, @p max 0; *@p n is 0 then, when @p n is not NULL).
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h). MT-safe.
 *
 * @param c           The channel.
 * @param max         The most elements to take, at least 1.
 * @param[out] out    Receives the elements: an array of @p max elements.
 * @param[out] bytes  Receives their declared bytes: NULL, or an array of @p max.
 * @param[out] n      Receives the number of elements taken.
 * @param deadline    Absolute deadline (band_now() clock); BAND_FOREVER never expires, a
 *                    past one means "do not wait".
 * @param cancel      Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_ECLOSED, BAND_EINVAL or BAND_ECANCELED, as described
 *         above.
 */
BAND_API int band_chan_recv_many(band_chan *c, size_t max, void *out, uint64_t *bytes, size_t *n,
                                 band_time deadline, band_cancel *cancel);

/**
 * @brief Close for both sides.
 *
 * Waiting senders and reservations fail with BAND_ECLOSED (their elements stay with them);
 * queued elements and held reservations can still be received; then receivers see
 * BAND_ECLOSED. Idempotent. Returns 0 or BAND_EINVAL.
 *
 * @param c  The channel.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_close(band_chan *c);

/**
 * @brief 1 once @p c was closed (band_chan_close(), or the last counted
 * sender left), 0 before, and 0 for NULL. Queued elements may still be receivable.
 * MT-safe (an acquire load, no lock).
 *
 * @param c  The channel, or NULL.
 * @return 1 once closed, 0 before and for NULL.
 */
BAND_API int band_chan_is_closed(const band_chan *c);

/**
 * @brief One more sender (sender counting only): 0, BAND_ECLOSED once
 * closed, BAND_EOVERFLOW, or BAND_EINVAL (NULL, or a channel without sender counting).
 *
 * @param c  The channel.
 * @return 0, BAND_ECLOSED, BAND_EOVERFLOW or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_sender_join(band_chan *c);

/**
 * @brief One sender fewer; the last one closes the channel: 0, or
 * BAND_EINVAL (NULL, no sender counting, or no sender left).
 *
 * @param c  The channel.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_sender_leave(band_chan *c);

/** @brief Counters; see band_chan_get_stats(). */
typedef struct band_chan_stats {
    char name[BAND_NAME_MAX];   /**< "" when unnamed */
    int closed;                 /**< 1 once closed */
    uint64_t capacity;          /**< the element bound */
    uint64_t byte_capacity;     /**< the byte bound (0: none) */
    uint64_t len;               /**< queued elements */
    uint64_t bytes;             /**< declared bytes of queued elements (without a byte bound:
                                   summed on demand, saturating at UINT64_MAX) */
    uint64_t reserved;          /**< reservations held, not yet filled */
    uint64_t reserved_bytes;    /**< their bytes */
    uint64_t senders;           /**< counted senders (sender counting only) */
    uint64_t waiting_senders;   /**< queued sends and reservations */
    uint64_t waiting_receivers; /**< queued receives */
    uint64_t sent;              /**< elements accepted (queued or handed to a receiver) */
    uint64_t received;          /**< elements taken by receivers */
    uint64_t refused_full;      /**< refused because full (incl. blocking sends whose deadline
                                   had already passed) */
    uint64_t refused_closed;    /**< refused, or waiting and failed, because closed */
    uint64_t refused_too_big;   /**< refused with BAND_E2BIG */
    uint64_t dropped;           /**< elements handed back by an overflow policy (a drop-newest offer
                                   is not counted in sent) */
    uint64_t send_wait_ns;      /**< time senders spent queued, summed */
    uint64_t send_wait_ns_max;  /**< the longest any sender waited */
    uint64_t refused_deadline;  /**< deadline-aware: refused at once, predicted to miss */
    uint64_t serve_gap_ns;      /**< the measured time between two waiting senders being
                                   served (moving average; 0: not measured yet): the pace
                                   at which a full channel drains */
    uint64_t lifo_taken;        /**< lifo_after: elements received newest-first */
} band_chan_stats;

/**
 * @brief Snapshot of @p c's counters: 0 or BAND_EINVAL. MT-safe.
 *
 * @param c         The channel.
 * @param[out] out  Receives the snapshot.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_chan_get_stats(const band_chan *c, band_chan_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_CHAN_H */

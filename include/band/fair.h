/* SPDX-License-Identifier: MIT */
/**
 * @file band/fair.h
 * @brief Per-key fair share of one capacity, with priority classes.
 *
 * A band_fair is a budget of units (permits, bytes, connections) shared by many keys
 * (tenants, users, connections), each identified by a uint64_t id. docs/fair.md has the
 * long form and the exact rules; in short:
 *
 *  - Weighted fair queuing. Waiting requests are queued per key and per priority class.
 *    Within a class, keys are served by deficit round robin: a key's quantum per round is
 *    its weight times the base quantum, and a request of n units costs n. While keys are
 *    backlogged they receive units in proportion to their weights (off by at most about a
 *    quantum and a request at any moment), however many requests each has queued and
 *    whatever the capacity; an idle key's share goes to the others (work-conserving).
 *  - Whole grants, no barging. A request is granted in one piece. When the key whose turn
 *    it is does not fit, its class stalls: later requests (queued or new, try included) of
 *    that class and of less urgent classes wait behind it, so a large request is never
 *    starved by small ones. Requests of a key are served in arrival order (per class).
 *  - Per-key cap: a key never holds more than its cap; a key at its cap is skipped by the
 *    round robin (it does not stall anybody) until it releases, and keeps its place in
 *    the rounds, so a quantum larger than the cap is still received in full, interleaved
 *    with the other keys.
 *  - Per-key reservation: while a key holds less than its reservation and waits for a
 *    request that fits in it, that unused reservation is protected: other keys may borrow
 *    it only while the reserved key does not wait for it. Requests within a key's
 *    reservation are served before the round robin. Nothing granted is ever revoked.
 *  - Priority classes 0 (the most urgent) to classes-1 (the least urgent). A class-c
 *    request needs in_use + n <= capacity - headroom[c]: class c leaves headroom[c] units
 *    free for more urgent classes (class 0 has none, and headroom never decreases as c
 *    grows), so urgent work finds room. More urgent classes are served first when
 *    capacity frees, and a stalled class stalls every less urgent class.
 *  - Registry. A key's state is allocated on its first use and freed (to a small cache)
 *    as soon as the key is idle: nothing held, nothing queued, no configuration. At most
 *    max_keys keys are live; a request for a new key past it fails with BAND_ENOMEM. The
 *    request path of a live key never allocates.
 *  - One lock, and a lock-free path for key handles. Every decision is made under the
 *    fair's mutex, except one: a key handle (band_fair_handle_get()) takes and returns
 *    units without the lock while nothing is queued, the fair is open and its key has no
 *    reservation; that is exactly when the rules come down to the key's cap and the
 *    class's headroom, which the handle checks with atomics. Otherwise a handle takes the
 *    lock too. Wakes run after the lock is released, on the thread that completed the
 *    request, as the wake contract in band/core.h says.
 *
 * The capacity is the fair's own (it does not draw from a band_sem). To bound a budget
 * that other code also uses, acquire from the fair first, then from the shared budget,
 * and release in the reverse order.
 *
 * Every function is MT-safe. Releases, cancels, closes, key changes and acquisitions
 * granted at once (which can end a stall) may run wakes of completed requests on the
 * calling thread, after every band lock is released; a submission never runs its own wake.
 */
#ifndef BAND_FAIR_H
#define BAND_FAIR_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The most priority classes a fair can have. */
#define BAND_FAIR_MAX_CLASSES 8
/** @brief The largest weight a key can have. */
#define BAND_FAIR_MAX_WEIGHT 65536u
/** @brief The largest base quantum. */
#define BAND_FAIR_MAX_QUANTUM (UINT64_C(1) << 32)
/** @brief The largest capacity (BAND_MAX_UNITS, as a semaphore's). */
#define BAND_FAIR_MAX_CAPACITY ((UINT64_C(1) << 61) - 1)
/** @brief max_keys used when the options leave it 0. */
#define BAND_FAIR_DEFAULT_MAX_KEYS 1024u

/** @brief A fair share of one capacity (opaque): created with band_fair_create(). */
typedef struct band_fair band_fair;
/** @brief A reference to one key of a fair, for its lock-free path (band_fair_handle_get()). */
typedef struct band_fair_handle band_fair_handle;

/**
 * @brief How band_fair_create() sets up a fair besides its capacity.
 *
 * Zero-initialise it and set what you need; zero fields take the defaults shown, and a
 * NULL @p opts means every default.
 */
typedef struct band_fair_opts {
    uint32_t classes;        /**< priority classes, 1..BAND_FAIR_MAX_CLASSES (0: 1) */
    uint32_t max_keys;       /**< live keys at most (0: BAND_FAIR_DEFAULT_MAX_KEYS) */
    uint64_t quantum;        /**< base quantum in units, 1..BAND_FAIR_MAX_QUANTUM (0: 1) */
    uint32_t default_weight; /**< weight of keys never configured (0: 1) */
    uint64_t default_cap;    /**< cap of keys never configured (0: the capacity) */
    /** headroom[c]: the units class c leaves free for more urgent classes. A request of
     * class c is granted only while in_use + n <= capacity - headroom[c]. headroom[0] must
     * be 0 (class 0 is the most urgent), every entry is below the capacity, entries do not
     * decrease with c, and entries at or past `classes` must be 0. */
    uint64_t headroom[BAND_FAIR_MAX_CLASSES];
} band_fair_opts;

/**
 * @brief Allocate a fair of @p capacity units, every unit available, set up by *@p opts
 *        (NULL: the defaults).
 *
 * Returns 0 and stores the fair in *@p out, BAND_EINVAL when @p out is NULL or a value is out
 * of range (@p capacity 0 or above BAND_FAIR_MAX_CAPACITY, too many classes, a quantum,
 * default weight or default cap out of range, a headroom that is not 0 for class 0, not
 * below the capacity, smaller than a more urgent class's, or set for a class the fair does
 * not have), or BAND_ENOMEM. *@p out is unchanged on failure and nothing is allocated. Free
 * with band_fair_destroy(). MT-safe.
 *
 * @param[out] out  Receives the fair; must not be NULL. The caller owns it.
 * @param capacity  Units shared by the keys, 1 to BAND_FAIR_MAX_CAPACITY.
 * @param opts      The setup, or NULL for every default; read during the call only.
 * @return 0, BAND_EINVAL or BAND_ENOMEM as described above.
 */
BAND_API int band_fair_create(band_fair **out, uint64_t capacity, const band_fair_opts *opts);

/**
 * @brief Free @p f and every key state.
 *
 * Returns 0, or BAND_EBUSY while requests are queued or key handles are live (nothing
 * freed: close and put the handles first). Units still held become meaningless. NULL
 * returns 0. Nobody may use @p f after it returned 0: not MT-safe with other uses of @p f.
 *
 * @param f  The fair, or NULL (a no-op).
 * @return 0, or BAND_EBUSY as described above.
 */
BAND_API int band_fair_destroy(band_fair *f);

/**
 * @brief Give @p f a name that band_fair_get_stats() reports.
 *
 * The name is copied. NULL clears it. Returns 0, or BAND_EINVAL when @p f is NULL or the
 * name does not fit in BAND_NAME_MAX bytes including its NUL (nothing changes). MT-safe.
 *
 * @param f     The fair; must not be NULL.
 * @param name  The name, copied; NULL clears it.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_fair_set_name(band_fair *f, const char *name);

/**
 * @brief The configuration of one key.
 *
 * weight 1..BAND_FAIR_MAX_WEIGHT; cap 1..capacity (0: the capacity); reserve 0..cap, and
 * the reservations of all keys together may not exceed the capacity.
 */
typedef struct band_fair_key_opts {
    uint32_t weight;  /**< the key's weight, 1..BAND_FAIR_MAX_WEIGHT */
    uint64_t cap;     /**< the most units the key may hold, 1..capacity (0: the capacity) */
    uint64_t reserve; /**< units reserved for the key, 0..cap */
} band_fair_key_opts;

/**
 * @brief Configure @p key (creating its state if needed) and pin it.
 *
 * A configured key is never evicted, so it counts towards max_keys until
 * band_fair_key_unset(). New settings apply from the next decision on: nothing held is
 * revoked (a lowered cap only stops new grants), and queued requests of @p key larger than
 * the new cap end with BAND_E2BIG (their wakes run on this thread). Returns 0,
 * BAND_EINVAL (NULL argument, a value out of range, reservations over the capacity;
 * nothing changes), BAND_ENOMEM (key table full or no memory). Works after close. MT-safe.
 *
 * @param f     The fair; must not be NULL.
 * @param key   The key's id, any value.
 * @param opts  The configuration; must not be NULL; read during the call only.
 * @return 0, BAND_EINVAL or BAND_ENOMEM as described above.
 */
BAND_API int band_fair_key_set(band_fair *f, uint64_t key, const band_fair_key_opts *opts);

/**
 * @brief Return @p key to the defaults and unpin it; its state is evicted once it is idle.
 *
 * Returns 0 (also when @p key was not configured) or BAND_EINVAL (NULL). Queued requests
 * larger than the default cap end with BAND_E2BIG. MT-safe.
 *
 * @param f    The fair; must not be NULL.
 * @param key  The key's id.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_fair_key_unset(band_fair *f, uint64_t key);

/**
 * @brief One asynchronous acquisition, owned by the caller.
 *
 * Embed it in your own structure; the waiter is the first member, so a wake function can
 * turn its band_waiter back into the op. Initialise w with band_waiter_init() before
 * each submission; band_fair_acquire_async() copies the key, class and units into the
 * private fields, which must not be touched while the op is pending. 96 bytes on LP64.
 */
typedef struct band_fair_acquire_op {
    band_waiter w; /**< first member: the operation (wake, data, status, cancel) */
    /** @privatesection */
    /* private */
    uint64_t _key; /* the key charged */
    uint64_t _n;   /* units asked for */
    uint32_t _cls; /* priority class */
    uint32_t _pad;
    void *_k; /* the key state while queued */
} band_fair_acquire_op;

/**
 * @brief Take @p n units for @p key in class @p cls now, or refuse.
 *
 * Returns 0 (granted; n == 0 always succeeds on an open fair and creates no key state),
 * BAND_EAGAIN (does not fit now, or it would overtake a waiting request it must not
 * pass), BAND_E2BIG (@p n exceeds the key's cap, or the capacity minus the class's headroom:
 * it could never be granted), BAND_ENOMEM (@p key is new and the key table is full, or its
 * state could not be allocated), BAND_ECLOSED, or BAND_EINVAL (NULL @p f, @p cls out of
 * range). Never waits. A grant can end a stall (this
 * key reached its cap where it had the turn, or it no longer protects its reservation), so
 * this call may run wakes of the requests that lets in, on this thread, after unlocking.
 * MT-safe.
 *
 * @param f    The fair; must not be NULL.
 * @param key  The key charged (its state is created on first use).
 * @param cls  The priority class, 0 (the most urgent) to the fair's classes - 1.
 * @param n    Units to take, 0 to the key's cap.
 * @return 0, BAND_EAGAIN, BAND_E2BIG, BAND_ENOMEM, BAND_ECLOSED or BAND_EINVAL as
 *         described above.
 */
BAND_API int band_fair_try_acquire(band_fair *f, uint64_t key, uint32_t cls, uint64_t n);

/**
 * @brief Take @p n units for @p key in class @p cls now, or queue @p op.
 *
 * @p op->w must have been initialised with band_waiter_init() (a wake function is needed)
 * and must not be pending; @p key, @p cls and @p n are copied into @p op. Returns 0 when granted
 * at once (no wake follows), BAND_PENDING when queued (from then on exactly one of {wake
 * called once, band_waiter_cancel(&op->w) returns 0} ends it), or a code as
 * band_fair_try_acquire() except BAND_EAGAIN; BAND_EINVAL also when @p op is NULL, or its
 * waiter is pending or has no wake (then @p op is untouched); BAND_EOVERFLOW when the units
 * queued in class @p cls would exceed 2^64 - 1. Refusals other than BAND_EINVAL are also
 * reported by band_waiter_status(&op->w). When the wake reports 0 the owner holds @p n
 * units of @p key; a wake may also report BAND_ECLOSED or BAND_E2BIG (the key's cap was
 * lowered below @p n). Cancelling a queued op returns nothing (a request holds nothing until
 * it is granted whole), but may let other requests be granted: their wakes run on the
 * cancelling thread. Never allocates for a live key. MT-safe.
 *
 * @param f    The fair; must not be NULL.
 * @param key  The key charged (its state is created on first use).
 * @param cls  The priority class, 0 (the most urgent) to the fair's classes - 1.
 * @param n    Units to take, 0 to the key's cap.
 * @param op   The op, its waiter initialised and not pending; owned by the caller, it must
 *             stay valid until it ends.
 * @return 0, BAND_PENDING, BAND_E2BIG, BAND_ENOMEM, BAND_ECLOSED, BAND_EOVERFLOW or
 *         BAND_EINVAL as described above.
 */
BAND_API int band_fair_acquire_async(band_fair *f, uint64_t key, uint32_t cls, uint64_t n,
                                     band_fair_acquire_op *op);

/**
 * @brief Take @p n units for @p key in class @p cls, blocking until @p deadline.
 *
 * Returns 0 (a grant that races with the deadline wins), BAND_ETIMEDOUT (a past deadline
 * means "do not wait": such a call never queues), or a code as band_fair_acquire_async().
 * MT-safe.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param f    The fair; must not be NULL.
 * @param key  The key charged (its state is created on first use).
 * @param cls  The priority class, 0 (the most urgent) to the fair's classes - 1.
 * @param n    Units to take, 0 to the key's cap.
 * @param deadline  Absolute time on band's clock to stop waiting at.
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_ECANCELED, BAND_E2BIG, BAND_ENOMEM, BAND_ECLOSED,
 *         BAND_EOVERFLOW or BAND_EINVAL as described above.
 */
BAND_API int band_fair_acquire(band_fair *f, uint64_t key, uint32_t cls, uint64_t n,
                               band_time deadline, band_cancel *cancel);

/**
 * @brief Return @p n units that @p key holds.
 *
 * The units go to waiting requests as the rules above decide; their wakes run on this
 * thread before it returns. Returns 0, or BAND_EINVAL (NULL @p f, or @p key holds fewer than
 * @p n units: nothing changes). Works after close. MT-safe.
 *
 * @param f    The fair; must not be NULL.
 * @param key  The key that holds the units.
 * @param n    Units to return, 0 to what @p key holds.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_fair_release(band_fair *f, uint64_t key, uint64_t n);

/**
 * @brief A handle on @p key, for band_fair_handle_try_acquire() and
 *        band_fair_handle_release(), which skip the key lookup and, while nothing is
 *        queued, the lock.
 *
 * Creates @p key's state when it has none. While a handle refers to it the state is never
 * evicted, so it counts towards max_keys until band_fair_handle_put() (a handle does not
 * configure the key: key_set/key_unset work as usual). Several handles may refer to one
 * key (one per thread, say). The units are the key's, not the handle's: units taken
 * through a handle can be released by band_fair_release() with the key id and the other
 * way round, and the key's and classes' counters include the handles' grants.
 *
 * Returns 0 and stores the handle in *@p out, BAND_EINVAL (NULL argument), or BAND_ENOMEM
 * (@p key is new and the key table is full, or no memory; *@p out unchanged). Works after
 * close. MT-safe. Put every handle before band_fair_destroy().
 *
 * @param f         The fair; must not be NULL.
 * @param key       The key's id.
 * @param[out] out  Receives the handle; must not be NULL. The caller owns it and drops it
 *                  with band_fair_handle_put().
 * @return 0, BAND_EINVAL or BAND_ENOMEM as described above.
 */
BAND_API int band_fair_handle_get(band_fair *f, uint64_t key, band_fair_handle **out);

/**
 * @brief Drop handle @p h (freed); its key's state is evicted once idle and unreferenced.
 *
 * Units the key holds stay held, those taken through @p h included. Returns 0 (NULL: 0). MT-safe,
 * but @p h must not be in use by another call.
 *
 * @param h  The handle, or NULL (a no-op). Nobody may use it afterwards.
 * @return 0.
 */
BAND_API int band_fair_handle_put(band_fair_handle *h);

/**
 * @brief band_fair_try_acquire() for @p h's key.
 *
 * The same answers, counters and wakes (never BAND_ENOMEM: the key is live). Lock-free (one
 * compare-and-swap on the fair's units in use, and a second one on the key's units when its
 * cap lies below a class limit) while nothing is queued, the fair is open and the key has
 * no reservation; it takes the lock otherwise. BAND_EINVAL for NULL @p h or @p cls out of range.
 * With GCC or Clang the lock-free path runs inline in the caller (see "Inline fast paths"
 * below).
 *
 * Calls on one handle must not overlap (the handle's own grant counters are written
 * without atomic read-modify-writes): give each thread its own handle. Different handles,
 * of one key or of several, may be used at the same time.
 *
 * @param h    The handle; must not be NULL.
 * @param cls  The priority class, 0 to the fair's classes - 1.
 * @param n    Units to take for the handle's key.
 * @return 0, BAND_EAGAIN, BAND_E2BIG, BAND_ECLOSED or BAND_EINVAL as band_fair_try_acquire()
 *         returns them.
 */
BAND_API int band_fair_handle_try_acquire(band_fair_handle *h, uint32_t cls, uint64_t n);

/**
 * @brief band_fair_release() for @p h's key.
 *
 * Returns 0, or BAND_EINVAL (NULL @p h, or the key holds fewer than @p n units: nothing
 * changes). Lock-free while nothing is queued and the fair is open, when the units lie in
 * the handle's own count (it took them) or in the key's shared word; units that another
 * handle of the key took are found under the lock. With requests waiting it takes the lock
 * to hand the units to them, whose wakes run on this thread. Works after close. Calls on one handle
 * must not overlap.
 *
 * @param h  The handle; must not be NULL.
 * @param n  Units to return, 0 to what the handle's key holds.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_fair_handle_release(band_fair_handle *h, uint64_t n);

/**
 * @brief Fail every queued and future acquisition with BAND_ECLOSED.
 *
 * Wakes of the queued requests run on this thread. Held units can still be released.
 * Closing twice is harmless. Returns 0 or BAND_EINVAL (NULL). MT-safe.
 *
 * @param f  The fair; must not be NULL.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_fair_close(band_fair *f);

/**
 * @brief Whether band_fair_close() was called on @p f.
 *
 * MT-safe.
 *
 * @param f  The fair, or NULL.
 * @return 1 once band_fair_close() was called on @p f, else 0 (0 for NULL).
 */
BAND_API int band_fair_is_closed(const band_fair *f);

/** @brief Counters of one priority class. */
typedef struct band_fair_class_stats {
    uint64_t headroom;      /**< units this class leaves free: in_use + n must not exceed
                               the capacity minus this */
    int stalled;            /**< 1 while the key whose turn it is waits for capacity */
    uint64_t waiters;       /**< queued requests */
    uint64_t waiting_units; /**< units they ask for */
    uint64_t granted;       /**< requests granted (at once or after queuing) */
    uint64_t granted_units; /**< units granted */
    uint64_t queued;        /**< requests that had to queue */
    uint64_t timeouts;      /**< queued requests ended by BAND_ETIMEDOUT */
    uint64_t cancels;       /**< queued requests cancelled for another reason */
    uint64_t wait_ns_total; /**< time queued requests waited until granted */
    uint64_t wait_ns_max;   /**< the longest such wait */
} band_fair_class_stats;

/** @brief A snapshot of a fair's counters. */
typedef struct band_fair_stats {
    char name[BAND_NAME_MAX]; /**< "" when unnamed */
    uint64_t capacity;        /**< the fair's capacity */
    uint64_t in_use;          /**< units held by all keys */
    uint64_t reserved;        /**< sum of the configured reservations */
    int closed;               /**< 1 after band_fair_close() */
    uint32_t classes;         /**< priority classes */
    uint64_t keys;            /**< live key states */
    uint64_t keys_pinned;     /**< configured keys */
    uint64_t max_keys;        /**< the most live keys */
    uint64_t keys_created;    /**< key states created since creation */
    uint64_t keys_evicted;    /**< idle key states evicted */
    uint64_t key_refusals;    /**< requests refused with BAND_ENOMEM: key table full */
    uint64_t waiters;         /**< queued requests, all classes */
    uint64_t try_refusals;    /**< try calls that answered BAND_EAGAIN */
    uint64_t too_big;         /**< requests refused with BAND_E2BIG */
    uint64_t closed_fails;    /**< queued requests failed by close */
    band_fair_class_stats cls[BAND_FAIR_MAX_CLASSES]; /**< cls[0]: the most urgent class */
    /* The counters of every key state evicted so far, summed: each evicted key's granted,
     * granted_units, queued, timeouts, cancels and wait_ns_total (band_fair_key_stats)
     * are added here when it is evicted, so the live keys' counters plus these never go
     * backwards. */
    uint64_t evicted_granted;       /**< requests granted to keys evicted since */
    uint64_t evicted_granted_units; /**< units granted to them */
    uint64_t evicted_queued;        /**< their requests that had to queue */
    uint64_t evicted_timeouts;      /**< their queued requests ended by BAND_ETIMEDOUT */
    uint64_t evicted_cancels;       /**< their queued requests cancelled otherwise */
    uint64_t evicted_wait_ns_total; /**< time their queued requests waited */
} band_fair_stats;

/**
 * @brief Counters of one key.
 *
 * They start at 0 when the key's state is created; when an idle unconfigured key is
 * evicted they are added to the evicted_* totals of band_fair_stats.
 */
typedef struct band_fair_key_stats {
    uint64_t key;           /**< the key's id */
    int live;               /**< 0: the key has no state now; everything else is 0 */
    int pinned;             /**< configured with band_fair_key_set() */
    uint32_t weight;        /**< its weight (configured or default) */
    uint64_t cap;           /**< its cap */
    uint64_t reserve;       /**< its reservation */
    uint64_t held;          /**< units held now */
    uint64_t waiters;       /**< queued requests, all classes */
    uint64_t waiting_units; /**< units they ask for */
    uint64_t granted;       /**< requests granted */
    uint64_t granted_units; /**< units granted */
    uint64_t queued;        /**< requests that had to queue */
    uint64_t timeouts;      /**< queued requests ended by BAND_ETIMEDOUT */
    uint64_t cancels;       /**< queued requests cancelled for another reason */
    uint64_t wait_ns_total; /**< time queued requests waited until granted */
    uint64_t wait_ns_max;   /**< the longest such wait */
} band_fair_key_stats;

/**
 * @brief Copy @p f's counters into *@p out.
 *
 * MT-safe.
 *
 * @param f         The fair; must not be NULL.
 * @param[out] out  Receives the snapshot; must not be NULL.
 * @return 0 or BAND_EINVAL (a NULL argument).
 */
BAND_API int band_fair_get_stats(const band_fair *f, band_fair_stats *out);

/**
 * @brief Copy @p key's counters into *@p out.
 *
 * Returns 0 (out->live says whether the key has state; never creates it) or BAND_EINVAL.
 * MT-safe.
 *
 * @param f         The fair; must not be NULL.
 * @param key       The key's id.
 * @param[out] out  Receives the counters; must not be NULL.
 * @return 0, or BAND_EINVAL for a NULL argument.
 */
BAND_API int band_fair_key_get_stats(const band_fair *f, uint64_t key, band_fair_key_stats *out);

/**
 * @brief Copy the counters of up to @p max live keys into @p out (in no particular order)
 *        and store how many were copied in *@p count.
 *
 * Returns 0, or BAND_EINVAL (NULL @p f or @p count, or NULL @p out with @p max > 0). Takes the lock
 * for the whole copy: for operators, not for hot paths. MT-safe.
 *
 * @param f           The fair; must not be NULL.
 * @param[out] out    An array of @p max entries; NULL only when @p max is 0.
 * @param max         The entries @p out has room for.
 * @param[out] count  Receives how many entries were copied; must not be NULL.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_fair_list_keys(const band_fair *f, band_fair_key_stats *out, size_t max,
                                 size_t *count);

/**
 * @brief Complete a handle try whose first steps ran inline.
 *
 * Called only by the inline band_fair_handle_try_acquire() below, never directly: after it
 * added @p n to the fair's state word (the units in use), found the key charged in its
 * shared word (its fast cap is not BAND_FAIR_PREFIX_SPLIT), and the cap check or the
 * compare-and-swap on the key's shared units held failed, finding @p held there. It charges the
 * key, or gives the units in use back and lets the lock decide. Returns what
 * band_fair_handle_try_acquire() returns for the same call; BAND_EINVAL (nothing done) for NULL @p
 * h, @p cls out of range or @p n == 0. Same thread rules as band_fair_handle_try_acquire().
 *
 * @param h     The handle.
 * @param cls   The priority class of the try.
 * @param n     The units the inline code added to the fair's state word.
 * @param held  The key's units held that its failed compare-and-swap found.
 * @return What band_fair_handle_try_acquire() returns for the same call, or BAND_EINVAL as
 *         described above.
 */
BAND_API int band_fair_handle_try_finish(band_fair_handle *h, uint32_t cls, uint64_t n,
                                         uint64_t held);

/**
 * @brief Complete a handle release that ran inline.
 *
 * Called only by the inline band_fair_handle_release() below, never directly: after it
 * took its units off the handle's own count and the fair's state word and found
 * BAND_FAIR_PREFIX_SLOW set there (requests may wait for them). It hands the units on under the
 * lock; wakes run on this thread. Returns 0, or BAND_EINVAL (NULL @p h). MT-safe.
 *
 * @param h  The handle whose release ran inline.
 * @return 0, or BAND_EINVAL for NULL @p h.
 */
BAND_API int band_fair_handle_release_finish(band_fair_handle *h);

/*
 * Inline fast paths
 * -----------------
 * With GCC or Clang, band_fair_handle_try_acquire() and band_fair_handle_release() are
 * macros over the static inline functions below, so that a lock-free try and release cost
 * the caller three locked instructions together and no call: the try one compare-and-swap
 * on the fair's state word (the units it takes then stay in the handle's own count,
 * written by its owner with plain stores), the release a compare-and-swap on the handle's
 * released count and an atomic subtract on the state word. A key whose cap lies below a
 * class limit is charged in its shared word instead, with a second compare-and-swap in the
 * try, and a release of more units than the handle's own count has takes them off that
 * shared word. Anything else - a NULL handle, a class out of range, n == 0, a shut gate
 * (requests queued, closed, a lock holder deciding), a class limit or the key's cap
 * reached, a key with a reservation, more units released than the handle's count or the
 * key's shared word has, a failed compare-and-swap - goes to the exported functions of the
 * same names or to the two above, which give every answer and
 * count every refusal as documented; so the inline path and the exported functions have
 * identical outcomes and counters, and taking the address of either name yields the
 * exported function. Define BAND_NO_INLINE before including this header to call the
 * exported functions always (the library itself is built so).
 *
 * The ABI promise. The inline code reads the start of every band_fair_handle as struct
 * band_fair_handle_prefix: a pointer to the fair's state word (units in use |
 * BAND_FAIR_PREFIX_SLOW, the gate), a pointer to the key's two words (its shared units
 * held, then the fast cap: what those may reach on the lock-free path, 0 while the key has
 * a reservation, BAND_FAIR_PREFIX_SPLIT while the handles count their own units), the class
 * count and the class limits (capacity - headroom; constant), the handle's own grant
 * counters (written by its owner only), and the handle's own units: the busy flag (1 from
 * before the try's compare-and-swap on the state word until its count is stored), the units
 * it took (written by its owner only) and the units of those released (changed by atomic
 * read-modify-writes only). The words are accessed only with atomic operations. That
 * layout, the encoding and the two finish functions are frozen for inline ABI
 * BAND_FAIR_INLINE_ABI, which holds for every library release with the same symbol version
 * node as the headers a program was built with (BAND_0.<minor> before 1.0; BAND_<major>
 * from 1.0 on). A release that changes any of them changes BAND_FAIR_INLINE_ABI and the
 * node. The rest of the handle and the fair is private.
 */
/** @brief The inline ABI of band_fair_handle_prefix and the finish functions. */
#define BAND_FAIR_INLINE_ABI 2

/** @brief The state word's gate bit: set while handles must take the lock. */
#define BAND_FAIR_PREFIX_SLOW (UINT64_C(1) << 63)

/** @brief The fast cap of a key whose handles count their own units (above every cap). */
#define BAND_FAIR_PREFIX_SPLIT UINT64_MAX

/** @brief The frozen start of every band_fair_handle. */
struct band_fair_handle_prefix {
    uint64_t *state;   /**< offset 0: the fair's state word; atomic access only */
    uint64_t *key;     /**< offset 8: [0] the key's shared units held, [1] its fast cap */
    uint32_t nclasses; /**< offset 16; constant */
    uint32_t _pad;     /**< offset 20: padding */
    uint64_t limit[BAND_FAIR_MAX_CLASSES]; /**< offset 24: capacity - headroom[c]; constant */
    /** @brief The handle's own grant counters of one class. */
    struct {
        uint64_t granted, units;    /**< lock-free grants of class c; the owner writes them */
    } count[BAND_FAIR_MAX_CLASSES]; /**< offset 88 */
    uint64_t busy;                  /**< offset 216: 1 while a try may store taken */
    uint64_t taken;                 /**< offset 224: units taken; the owner writes it */
    uint64_t given;                 /**< offset 232: of those, units released; RMW only */
};

#if !defined(BAND_NO_INLINE) && !defined(BAND_BUILDING) && (defined(__GNUC__) || defined(__clang__))
#define BAND_FAIR_HAVE_INLINE 1

static inline int band__fair_handle_try_inline(band_fair_handle *h, uint32_t cls, uint64_t n)
{
    struct band_fair_handle_prefix *p = (struct band_fair_handle_prefix *)(void *)h;
    if (__builtin_expect(h != NULL && cls < p->nclasses && n != 0, 1)) {
        /* read once: to the compiler the atomics below are fences */
        uint64_t *state = p->state, *key = p->key;
        const uint64_t limit = p->limit[cls];
        uint64_t s = __atomic_load_n(state, __ATOMIC_ACQUIRE);
        /* a shut gate makes s exceed every limit; a key whose cap binds and is reached is
         * refused before it takes units in use that others might want */
        uint64_t cap0 = __atomic_load_n(&key[1], __ATOMIC_RELAXED);
        if (__builtin_expect(
                n <= limit && s <= limit - n &&
                    (cap0 == BAND_FAIR_PREFIX_SPLIT ||
                     (n <= cap0 && __atomic_load_n(&key[0], __ATOMIC_RELAXED) <= cap0 - n)),
                1)) {
            __atomic_store_n(&p->busy, 1, __ATOMIC_RELAXED);
            if (__builtin_expect(__atomic_compare_exchange_n(state, &s, s + n, 0, __ATOMIC_ACQ_REL,
                                                             __ATOMIC_ACQUIRE),
                                 1)) {
                /* the key's mode and cap as of the compare-and-swap, not before it */
                uint64_t cap = __atomic_load_n(&key[1], __ATOMIC_RELAXED);
                uint64_t *g = &p->count[cls].granted, *u = &p->count[cls].units;
                if (__builtin_expect(cap == BAND_FAIR_PREFIX_SPLIT, 1)) {
                    __atomic_store_n(&p->taken, __atomic_load_n(&p->taken, __ATOMIC_RELAXED) + n,
                                     __ATOMIC_RELEASE);
                    __atomic_store_n(g, __atomic_load_n(g, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
                    __atomic_store_n(u, __atomic_load_n(u, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
                    __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
                    return 0;
                }
                __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
                uint64_t held = __atomic_load_n(&key[0], __ATOMIC_RELAXED);
                if (__builtin_expect(n <= cap && held <= cap - n &&
                                         __atomic_compare_exchange_n(&key[0], &held, held + n, 0,
                                                                     __ATOMIC_RELAXED,
                                                                     __ATOMIC_RELAXED),
                                     1)) {
                    __atomic_store_n(g, __atomic_load_n(g, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
                    __atomic_store_n(u, __atomic_load_n(u, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
                    return 0;
                }
                return band_fair_handle_try_finish(h, cls, n, held);
            }
            __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
        }
    }
    return (band_fair_handle_try_acquire)(h, cls, n);
}

static inline int band__fair_handle_release_inline(band_fair_handle *h, uint64_t n)
{
    struct band_fair_handle_prefix *p = (struct band_fair_handle_prefix *)(void *)h;
    if (__builtin_expect(h != NULL && n != 0, 1)) {
        uint64_t *state = p->state, *key = p->key;
        uint64_t given = __atomic_load_n(&p->given, __ATOMIC_ACQUIRE);
        uint64_t taken = __atomic_load_n(&p->taken, __ATOMIC_RELAXED);
        int took;
        if (__builtin_expect(taken - given >= n, 1)) { /* the handle's own units */
            took = __atomic_compare_exchange_n(&p->given, &given, given + n, 0, __ATOMIC_ACQ_REL,
                                               __ATOMIC_RELAXED);
        } else { /* the key's shared word */
            uint64_t held = __atomic_load_n(&key[0], __ATOMIC_RELAXED);
            took = held >= n && __atomic_compare_exchange_n(&key[0], &held, held - n, 0,
                                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        }
        if (__builtin_expect(took, 1)) {
            uint64_t old = __atomic_fetch_sub(state, n, __ATOMIC_ACQ_REL);
            if (__builtin_expect((old & BAND_FAIR_PREFIX_SLOW) == 0, 1))
                return 0;
            return band_fair_handle_release_finish(h);
        }
    }
    return (band_fair_handle_release)(h, n);
}

#define band_fair_handle_try_acquire(h, cls, n) band__fair_handle_try_inline((h), (cls), (n))
#define band_fair_handle_release(h, n)          band__fair_handle_release_inline((h), (n))
#endif

#ifdef __cplusplus
}
#endif
#endif /* BAND_FAIR_H */

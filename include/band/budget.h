/* SPDX-License-Identifier: MIT */
/**
 * @file band/budget.h
 * @brief Byte budgets: a semaphore that knows its capacity.
 *
 * A budget bounds a resource whose units are consumed unequally (bytes of memory, bytes
 * in flight). It keeps every semaphore rule (FIFO hand-off, deficit, close) and adds:
 *
 *  - A request larger than the capacity fails at once with BAND_E2BIG: returning every
 *    outstanding unit could never satisfy it, so it never waits.
 *  - A reservation is one acquisition, never piecemeal: several callers each holding part
 *    of what they need while waiting for the rest is how budgets deadlock.
 *  - band_budget_alloc() reserves before it allocates and returns a buffer that carries
 *    its reservation; band_budget_free() returns both. Growing reserves the difference
 *    first. The budget counts payload bytes only, not allocator overhead.
 *  - Capacity can change at run time: growing releases units, shrinking works like
 *    band_sem_reduce() (a debt repaid by returns, nothing revoked), and queued requests
 *    that no longer fit fail with BAND_E2BIG.
 *
 * Every function is MT-safe. Releases, closes and capacity changes may run wakes of
 * completed waiters on the calling thread, after every band lock is released.
 */
#ifndef BAND_BUDGET_H
#define BAND_BUDGET_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"
#include "band/sem.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A byte budget (opaque): band_budget_create(), band_budget_destroy(). */
typedef struct band_budget band_budget;

struct band_histo;

/**
 * @brief Options for band_budget_create(), as band_sem_opts are for a
 * semaphore. NULL, or a zero-initialised struct, means the defaults; the options are fixed
 * for the budget's lifetime.
 */
typedef struct band_budget_opts {
    /**
     * 1: refuse at once, with BAND_ETIMEDOUT, a request that would have to queue and is
     * predicted to miss its deadline (band_sem_opts.deadline_aware has the rule). 0 (the
     * default): requests queue whatever their deadline. Any other value: BAND_EINVAL.
     */
    int deadline_aware;
    /**
     * When not NULL, how long each queued request waited (ns) is recorded into it
     * (band/histo.h). It stays the caller's and must outlive the budget. Default: NULL.
     */
    struct band_histo *wait_histo;
} band_budget_opts;

/**
 * @brief Allocate a budget of @p capacity units, all available.
 *
 * @p opts may be NULL (the defaults). Returns 0 and stores it in *@p out, BAND_EINVAL when @p out
 * is NULL, @p capacity is 0 or above BAND_MAX_UNITS, or @p opts->deadline_aware is neither 0
 * nor 1, or BAND_ENOMEM; on failure *@p out is untouched and nothing is allocated. Free with
 * band_budget_destroy(). MT-safe.
 *
 * @param[out] out  Receives the new budget.
 * @param capacity  The capacity in units (bytes), 1 to BAND_MAX_UNITS.
 * @param opts      Options, or NULL for the defaults.
 * @return 0, BAND_EINVAL or BAND_ENOMEM, as described above.
 */
BAND_API int band_budget_create(band_budget **out, uint64_t capacity, const band_budget_opts *opts);

/**
 * @brief Free @p b, as band_sem_destroy() frees a semaphore.
 *
 * Never waits and never closes. Returns 0 (also for NULL), or BAND_EBUSY (nothing is freed)
 * while requests are queued on @p b (multi-budget admissions included). Units and buffers
 * still held are their holders' to return first: nobody may use @p b, its semaphore or its
 * buffers after this call. Not MT-safe with other uses of @p b.
 *
 * @param b  The budget, or NULL.
 * @return 0 (also for NULL) or BAND_EBUSY, as described above.
 */
BAND_API int band_budget_destroy(band_budget *b);

/**
 * @brief The budget as a semaphore, for band_permit_* (band/permit.h) and
 * every band_sem_* call but band_sem_destroy(); its acquisitions keep the capacity check,
 * and band_sem_get_stats() on it reports is_budget, capacity and in_use. NULL for NULL.
 *
 * @param b  The budget, or NULL.
 * @return The budget's semaphore, owned by the budget; NULL for NULL.
 */
BAND_API band_sem *band_budget_sem(band_budget *b);

/**
 * @brief As band_sem_set_name(): the name is copied (NULL clears it);
 * 0, or BAND_EINVAL for a NULL @p b or a name that does not fit in BAND_NAME_MAX bytes with
 * its NUL (nothing changes). MT-safe.
 *
 * @param b     The budget.
 * @param name  The name to copy, or NULL to clear it.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_budget_set_name(band_budget *b, const char *name);

/**
 * @brief Reserve @p n units now or refuse: 0, BAND_EAGAIN,
 * BAND_E2BIG (@p n > capacity), BAND_ECLOSED, BAND_EINVAL. Never waits.
 *
 * @param b  The budget.
 * @param n  Units to reserve.
 * @return 0, BAND_EAGAIN, BAND_E2BIG, BAND_ECLOSED or BAND_EINVAL, as described above.
 */
BAND_API int band_budget_try_acquire(band_budget *b, uint64_t n);

/**
 * @brief Reserve @p n units in one acquisition, blocking until @p deadline:
 * 0, BAND_ETIMEDOUT, BAND_E2BIG (at once, never waits), BAND_ECLOSED, BAND_EINVAL, or
 * BAND_EOVERFLOW as band_sem_acquire().
 *
 * @param b         The budget.
 * @param n         Units to reserve.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_E2BIG, BAND_ECLOSED, BAND_EINVAL or BAND_EOVERFLOW, as
 *         described above.
 */
BAND_API int band_budget_acquire(band_budget *b, uint64_t n, band_time deadline,
                                 band_cancel *cancel);

/**
 * @brief As band_sem_acquire_async(), with BAND_E2BIG at once for
 * @p n > capacity. A queued request that a later shrink makes too big ends with status
 * BAND_E2BIG through its wake.
 *
 * @param b  The budget.
 * @param n  Units to reserve.
 * @param w  The waiter, initialised with band_waiter_init() and not pending.
 * @return 0, BAND_PENDING, BAND_E2BIG, or another answer of band_sem_acquire_async(), as
 *         described above.
 */
BAND_API int band_budget_acquire_async(band_budget *b, uint64_t n, band_waiter *w);

/**
 * @brief Return @p n units: 0, BAND_EOVERFLOW when @p n is more than
 * callers hold - available + the head waiter's partial grant + @p n would exceed capacity +
 * debt (a release of units never acquired; nothing changes) - or BAND_EINVAL.
 *
 * @param b  The budget.
 * @param n  Units to return.
 * @return 0, BAND_EOVERFLOW or BAND_EINVAL, as described above.
 */
BAND_API int band_budget_release(band_budget *b, uint64_t n);

/**
 * @brief As band_sem_close(): every queued and later request fails with
 * BAND_ECLOSED; held units can still be returned. Returns 0, or BAND_EINVAL for NULL.
 * Closing twice is harmless. MT-safe.
 *
 * @param b  The budget.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_budget_close(band_budget *b);

/**
 * @brief 1 after band_budget_close() (or band_sem_close() of its
 * semaphore), 0 before and for NULL. MT-safe.
 *
 * @param b  The budget, or NULL.
 * @return 1 after close, 0 before and for NULL.
 */
BAND_API int band_budget_is_closed(const band_budget *b);

/**
 * @brief The current capacity (0 for NULL). MT-safe snapshot.
 *
 * @param b  The budget, or NULL.
 * @return The current capacity in units.
 */
BAND_API uint64_t band_budget_capacity(const band_budget *b);

/**
 * @brief Units available now (0 for NULL). MT-safe snapshot.
 *
 * @param b  The budget, or NULL.
 * @return The units available now.
 */
BAND_API uint64_t band_budget_available(const band_budget *b);

/**
 * @brief Add @p n units of capacity; they go to the debt, then to waiters,
 * then become available.
 *
 * Returns 0, BAND_EOVERFLOW when the capacity would exceed BAND_MAX_UNITS (nothing
 * changes), or BAND_EINVAL. MT-safe; serialize capacity changes in one controller.
 *
 * @param b  The budget.
 * @param n  Units of capacity to add.
 * @return 0, BAND_EOVERFLOW or BAND_EINVAL, as described above.
 */
BAND_API int band_budget_grow(band_budget *b, uint64_t n);

/**
 * @brief Remove @p n units of capacity, like band_sem_reduce().
 *
 * Available units go first; the rest becomes a debt that returns repay before any waiter.
 * Nothing held is revoked. Queued requests larger than the new capacity end with
 * BAND_E2BIG (their wakes run on this thread). Returns 0, or BAND_EINVAL when @p b is NULL or
 * @p n is not below the capacity (a budget keeps at least one unit). MT-safe.
 *
 * @param b  The budget.
 * @param n  Units of capacity to remove, below the capacity.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_budget_shrink(band_budget *b, uint64_t n);

/**
 * @brief A snapshot of a budget's counters.
 *
 * The fields mean what band_sem_stats's do, in units (bytes), and capacity and in_use are
 * always set. in_use is what callers hold: the capacity plus the debt, less what is free
 * (available, and the head request's partial grant).
 */
typedef struct band_budget_stats {
    char name[BAND_NAME_MAX];  /**< "" when unnamed */
    int closed;                /**< 1 after close */
    uint64_t capacity;         /**< the current capacity */
    uint64_t in_use;           /**< units held by callers */
    uint64_t available;        /**< units available now */
    uint64_t debt;             /**< units that returns must repay before requests */
    uint64_t waiters;          /**< queued requests */
    uint64_t waiting_units;    /**< units the queued requests asked for, in total */
    uint64_t head_granted;     /**< units already handed to the head request (partial grant) */
    uint64_t queued;           /**< requests that had to queue, since creation */
    uint64_t grants;           /**< queued requests that were granted */
    uint64_t timeouts;         /**< queued requests that ended with BAND_ETIMEDOUT */
    uint64_t cancels;          /**< queued requests cancelled for any other reason */
    uint64_t closed_fails;     /**< queued requests failed by close */
    uint64_t try_refusals;     /**< try_acquire calls that answered BAND_EAGAIN */
    uint64_t too_big;          /**< requests refused with BAND_E2BIG */
    uint64_t wait_ns_total;    /**< time queued requests spent waiting, summed */
    uint64_t wait_ns_max;      /**< the longest any queued request waited */
    uint64_t refused_deadline; /**< deadline-aware: refused at once, predicted to miss */
    uint64_t grant_pace_ns;    /**< the measured time per unit granted to queued requests
                                  (moving average; 0: not measured yet) */
} band_budget_stats;

/**
 * @brief Copy @p b's counters into *@p out.
 *
 * Takes the budget's lock briefly; the fast paths never wait for it. Returns 0 or
 * BAND_EINVAL (NULL argument). MT-safe.
 *
 * @param b         The budget.
 * @param[out] out  Receives the snapshot.
 * @return 0 or BAND_EINVAL, as described above.
 */
BAND_API int band_budget_get_stats(const band_budget *b, band_budget_stats *out);

/*
 * Budgeted buffers. A buffer from band_budget_alloc() is ordinary memory aligned for any
 * type, preceded by a hidden header that records its budget and reservation. Pass it only
 * to band_budget_realloc()/band_budget_free(), never to free(). A buffer has one owner and
 * may move between threads with it; the budget calls are MT-safe.
 */

/**
 * @brief Reserve @p len units of @p b (blocking until @p deadline), then allocate
 * @p len bytes.
 *
 * Returns 0 and stores the buffer in *@p out, or: BAND_E2BIG (@p len > capacity, at once),
 * BAND_ETIMEDOUT, BAND_ECLOSED, BAND_ENOMEM (the reservation is returned), BAND_EINVAL
 * (NULL argument). *@p out is untouched on failure. A past @p deadline means "only if the
 * units are available now". @p len 0 reserves nothing and returns a valid buffer (or
 * BAND_ECLOSED once the budget is closed, as every acquisition does).
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED (nothing reserved or allocated); a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param b         The budget.
 * @param len       Bytes to allocate, reserved as as many units of @p b.
 * @param[out] out  Receives the buffer.
 * @param deadline  Absolute deadline (band_now() clock); BAND_FOREVER never expires, a past
 *                  one means "do not wait".
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_E2BIG, BAND_ETIMEDOUT, BAND_ECLOSED, BAND_ENOMEM, BAND_EINVAL or
 *         BAND_ECANCELED, as described above.
 */
BAND_API int band_budget_alloc(band_budget *b, size_t len, void **out, band_time deadline,
                               band_cancel *cancel);

/**
 * @brief Allocate @p len bytes against @p len units the caller already
 * reserved on @p b (for example by band_budget_acquire_async()). The buffer takes over the
 * reservation. Returns 0, BAND_ENOMEM (the caller keeps its reservation), BAND_EINVAL, or
 * BAND_E2BIG (counted in too_big, nothing allocated) when @p len exceeds what callers of @p b
 * can hold: its capacity plus any debt a shrink left (units held across a shrink may
 * exceed the new capacity).
 *
 * @param b         The budget.
 * @param len       Bytes to allocate, as many units as the caller reserved.
 * @param[out] out  Receives the buffer.
 * @return 0, BAND_ENOMEM, BAND_EINVAL or BAND_E2BIG, as described above.
 */
BAND_API int band_budget_alloc_reserved(band_budget *b, size_t len, void **out);

/**
 * @brief Resize *@p buf to @p len bytes.
 *
 * Growing reserves the difference first (blocking until @p deadline), then reallocates;
 * shrinking reallocates, then returns the difference. Returns 0 (the new buffer is in
 * *@p buf), or BAND_E2BIG (growing to more than the capacity, at once, for any @p len up to
 * SIZE_MAX, before anything is reserved or allocated), BAND_ETIMEDOUT, BAND_ECLOSED,
 * BAND_ENOMEM, BAND_EINVAL (NULL argument); on failure *@p buf is unchanged, still valid,
 * and keeps its reservation.
 * Growing while holding a reservation is incremental acquisition: size buffers up front
 * where possible.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED (the buffer is unchanged); a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param[in,out] buf  The buffer (from band_budget_alloc() or
 *                     band_budget_alloc_reserved()); receives the resized one.
 * @param len          The new size in bytes.
 * @param deadline     Absolute deadline (band_now() clock); BAND_FOREVER never expires, a
 *                     past one means "do not wait".
 * @param cancel       Cancellation token, or NULL for none.
 * @return 0, BAND_E2BIG, BAND_ETIMEDOUT, BAND_ECLOSED, BAND_ENOMEM, BAND_EINVAL or
 *         BAND_ECANCELED, as described above.
 */
BAND_API int band_budget_realloc(void **buf, size_t len, band_time deadline, band_cancel *cancel);

/**
 * @brief Free @p buf and return its reservation. NULL does nothing.
 *
 * @param buf  A buffer from band_budget_alloc() or band_budget_alloc_reserved(), or NULL.
 */
BAND_API void band_budget_free(void *buf);

/**
 * @brief The bytes @p buf holds and has reserved (0 for NULL).
 *
 * @param buf  A buffer from band_budget_alloc() or band_budget_alloc_reserved(), or NULL.
 * @return Its size in bytes, which is also its reservation in units.
 */
BAND_API size_t band_budget_buf_size(const void *buf);

/**
 * @brief The budget @p buf is charged to (NULL for NULL).
 *
 * @param buf  A buffer from band_budget_alloc() or band_budget_alloc_reserved(), or NULL.
 * @return The budget it is charged to.
 */
BAND_API band_budget *band_budget_buf_owner(const void *buf);

#ifdef __cplusplus
}
#endif
#endif /* BAND_BUDGET_H */

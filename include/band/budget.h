/* SPDX-License-Identifier: MIT */
/*
 * band/budget.h - byte budgets: a semaphore that knows its capacity.
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

typedef struct band_budget band_budget;

struct band_histo;

/**
 * struct band_budget_opts - options for band_budget_create(), as band_sem_opts are for a
 * semaphore. NULL, or a zero-initialised struct, means the defaults; the options are fixed
 * for the budget's lifetime.
 */
typedef struct band_budget_opts {
    /** 1: refuse at once, with BAND_ETIMEDOUT, a request that would have to queue and is
     *  predicted to miss its deadline (band_sem_opts.deadline_aware has the rule). 0 (the
     *  default): requests queue whatever their deadline. Any other value: BAND_EINVAL. */
    int deadline_aware;
    /** When not NULL, how long each queued request waited (ns) is recorded into it
     *  (band/histo.h). It stays the caller's and must outlive the budget. Default: NULL. */
    struct band_histo *wait_histo;
} band_budget_opts;

/**
 * band_budget_create() - allocate a budget of @capacity units, all available.
 *
 * @opts may be NULL (the defaults). Returns 0 and stores it in *@out, BAND_EINVAL when @out
 * is NULL, @capacity is 0 or above BAND_MAX_UNITS, or @opts->deadline_aware is neither 0
 * nor 1, or BAND_ENOMEM; on failure *@out is untouched and nothing is allocated. Free with
 * band_budget_destroy(). MT-safe.
 */
BAND_API int band_budget_create(band_budget **out, uint64_t capacity, const band_budget_opts *opts);

/**
 * band_budget_destroy() - free @b, as band_sem_destroy() frees a semaphore.
 *
 * Never waits and never closes. Returns 0 (also for NULL), or BAND_EBUSY (nothing is freed)
 * while requests are queued on @b (multi-budget admissions included). Units and buffers
 * still held are their holders' to return first: nobody may use @b, its semaphore or its
 * buffers after this call. Not MT-safe with other uses of @b.
 */
BAND_API int band_budget_destroy(band_budget *b);

/** band_budget_sem() - the budget as a semaphore, for band_permit_* (band/permit.h) and
 *  every band_sem_* call but band_sem_destroy(); its acquisitions keep the capacity check,
 *  and band_sem_get_stats() on it reports is_budget, capacity and in_use. NULL for NULL. */
BAND_API band_sem *band_budget_sem(band_budget *b);

/** band_budget_set_name() - as band_sem_set_name(): the name is copied (NULL clears it);
 *  0, or BAND_EINVAL for a NULL @b or a name that does not fit in BAND_NAME_MAX bytes with
 *  its NUL (nothing changes). MT-safe. */
BAND_API int band_budget_set_name(band_budget *b, const char *name);

/** band_budget_try_acquire() - reserve @n units now or refuse: 0, BAND_EAGAIN,
 *  BAND_E2BIG (@n > capacity), BAND_ECLOSED, BAND_EINVAL. Never waits. */
BAND_API int band_budget_try_acquire(band_budget *b, uint64_t n);

/** band_budget_acquire() - reserve @n units in one acquisition, blocking until @deadline:
 *  0, BAND_ETIMEDOUT, BAND_E2BIG (at once, never waits), BAND_ECLOSED, BAND_EINVAL, or
 *  BAND_EOVERFLOW as band_sem_acquire(). */
BAND_API int band_budget_acquire(band_budget *b, uint64_t n, band_time deadline,
                                 band_cancel *cancel);

/** band_budget_acquire_async() - as band_sem_acquire_async(), with BAND_E2BIG at once for
 *  @n > capacity. A queued request that a later shrink makes too big ends with status
 *  BAND_E2BIG through its wake. */
BAND_API int band_budget_acquire_async(band_budget *b, uint64_t n, band_waiter *w);

/** band_budget_release() - return @n units: 0, BAND_EOVERFLOW when @n is more than
 *  callers hold - available + the head waiter's partial grant + @n would exceed capacity +
 *  debt (a release of units never acquired; nothing changes) - or BAND_EINVAL. */
BAND_API int band_budget_release(band_budget *b, uint64_t n);

/** band_budget_close() - as band_sem_close(): every queued and later request fails with
 *  BAND_ECLOSED; held units can still be returned. Returns 0, or BAND_EINVAL for NULL.
 *  Closing twice is harmless. MT-safe. */
BAND_API int band_budget_close(band_budget *b);

/** band_budget_is_closed() - 1 after band_budget_close() (or band_sem_close() of its
 *  semaphore), 0 before and for NULL. MT-safe. */
BAND_API int band_budget_is_closed(const band_budget *b);

/** band_budget_capacity() - the current capacity (0 for NULL). MT-safe snapshot. */
BAND_API uint64_t band_budget_capacity(const band_budget *b);

/** band_budget_available() - units available now (0 for NULL). MT-safe snapshot. */
BAND_API uint64_t band_budget_available(const band_budget *b);

/**
 * band_budget_grow() - add @n units of capacity; they go to the debt, then to waiters,
 * then become available.
 *
 * Returns 0, BAND_EOVERFLOW when the capacity would exceed BAND_MAX_UNITS (nothing
 * changes), or BAND_EINVAL. MT-safe; serialize capacity changes in one controller.
 */
BAND_API int band_budget_grow(band_budget *b, uint64_t n);

/**
 * band_budget_shrink() - remove @n units of capacity, like band_sem_reduce().
 *
 * Available units go first; the rest becomes a debt that returns repay before any waiter.
 * Nothing held is revoked. Queued requests larger than the new capacity end with
 * BAND_E2BIG (their wakes run on this thread). Returns 0, or BAND_EINVAL when @b is NULL or
 * @n is not below the capacity (a budget keeps at least one unit). MT-safe.
 */
BAND_API int band_budget_shrink(band_budget *b, uint64_t n);

/**
 * struct band_budget_stats - a snapshot of a budget's counters.
 *
 * The fields mean what band_sem_stats's do, in units (bytes), and capacity and in_use are
 * always set. in_use is what callers hold: the capacity plus the debt, less what is free
 * (available, and the head request's partial grant).
 */
typedef struct band_budget_stats {
    char name[BAND_NAME_MAX];  /* "" when unnamed */
    int closed;                /* 1 after close */
    uint64_t capacity;         /* the current capacity */
    uint64_t in_use;           /* units held by callers */
    uint64_t available;        /* units available now */
    uint64_t debt;             /* units that returns must repay before requests */
    uint64_t waiters;          /* queued requests */
    uint64_t waiting_units;    /* units the queued requests asked for, in total */
    uint64_t head_granted;     /* units already handed to the head request (partial grant) */
    uint64_t queued;           /* requests that had to queue, since creation */
    uint64_t grants;           /* queued requests that were granted */
    uint64_t timeouts;         /* queued requests that ended with BAND_ETIMEDOUT */
    uint64_t cancels;          /* queued requests cancelled for any other reason */
    uint64_t closed_fails;     /* queued requests failed by close */
    uint64_t try_refusals;     /* try_acquire calls that answered BAND_EAGAIN */
    uint64_t too_big;          /* requests refused with BAND_E2BIG */
    uint64_t wait_ns_total;    /* time queued requests spent waiting, summed */
    uint64_t wait_ns_max;      /* the longest any queued request waited */
    uint64_t refused_deadline; /* deadline-aware: refused at once, predicted to miss */
    uint64_t grant_pace_ns;    /* the measured time per unit granted to queued requests
                                  (moving average; 0: not measured yet) */
} band_budget_stats;

/**
 * band_budget_get_stats() - copy @b's counters into *@out.
 *
 * Takes the budget's lock briefly; the fast paths never wait for it. Returns 0 or
 * BAND_EINVAL (NULL argument). MT-safe.
 */
BAND_API int band_budget_get_stats(const band_budget *b, band_budget_stats *out);

/*
 * Budgeted buffers. A buffer from band_budget_alloc() is ordinary memory aligned for any
 * type, preceded by a hidden header that records its budget and reservation. Pass it only
 * to band_budget_realloc()/band_budget_free(), never to free(). A buffer has one owner and
 * may move between threads with it; the budget calls are MT-safe.
 */

/**
 * band_budget_alloc() - reserve @len units of @b (blocking until @deadline), then allocate
 * @len bytes.
 *
 * Returns 0 and stores the buffer in *@out, or: BAND_E2BIG (@len > capacity, at once),
 * BAND_ETIMEDOUT, BAND_ECLOSED, BAND_ENOMEM (the reservation is returned), BAND_EINVAL
 * (NULL argument). *@out is untouched on failure. A past @deadline means "only if the
 * units are available now". @len 0 reserves nothing and returns a valid buffer (or
 * BAND_ECLOSED once the budget is closed, as every acquisition does).
 *
 * @cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED (nothing reserved or allocated); a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 */
BAND_API int band_budget_alloc(band_budget *b, size_t len, void **out, band_time deadline,
                               band_cancel *cancel);

/**
 * band_budget_alloc_reserved() - allocate @len bytes against @len units the caller already
 * reserved on @b (for example by band_budget_acquire_async()). The buffer takes over the
 * reservation. Returns 0, BAND_ENOMEM (the caller keeps its reservation), BAND_EINVAL, or
 * BAND_E2BIG (counted in too_big, nothing allocated) when @len exceeds what callers of @b
 * can hold: its capacity plus any debt a shrink left (units held across a shrink may
 * exceed the new capacity).
 */
BAND_API int band_budget_alloc_reserved(band_budget *b, size_t len, void **out);

/**
 * band_budget_realloc() - resize *@buf to @len bytes.
 *
 * Growing reserves the difference first (blocking until @deadline), then reallocates;
 * shrinking reallocates, then returns the difference. Returns 0 (the new buffer is in
 * *@buf), or BAND_E2BIG (growing to more than the capacity, at once, for any @len up to
 * SIZE_MAX, before anything is reserved or allocated), BAND_ETIMEDOUT, BAND_ECLOSED,
 * BAND_ENOMEM, BAND_EINVAL (NULL argument); on failure *@buf is unchanged, still valid,
 * and keeps its reservation.
 * Growing while holding a reservation is incremental acquisition: size buffers up front
 * where possible.
 *
 * @cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED (the buffer is unchanged); a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 */
BAND_API int band_budget_realloc(void **buf, size_t len, band_time deadline, band_cancel *cancel);

/** band_budget_free() - free @buf and return its reservation. NULL does nothing. */
BAND_API void band_budget_free(void *buf);

/** band_budget_buf_size() - the bytes @buf holds and has reserved (0 for NULL). */
BAND_API size_t band_budget_buf_size(const void *buf);

/** band_budget_buf_owner() - the budget @buf is charged to (NULL for NULL). */
BAND_API band_budget *band_budget_buf_owner(const void *buf);

#ifdef __cplusplus
}
#endif
#endif /* BAND_BUDGET_H */

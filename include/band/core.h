/* SPDX-License-Identifier: MIT */
/**
 * @file band/core.h
 * @brief The waiter, time and the export macro.
 *
 * Every pending operation in band lives in a band_waiter that the caller embeds in its
 * own structure (a request, a task, a stack frame). band never allocates on an acquire
 * path. The rules below are the wake contract; docs/contracts.md links each rule to the
 * test that proves it.
 *
 *  1. Submitting never calls wake. An _async call completes at once (returns 0, no wake),
 *     queues (returns BAND_PENDING) or fails (negative BAND_E* code, no wake).
 *  2. A queued operation ends exactly once: either band calls wake once, on the thread
 *     that completed it, with no band lock held, or band_waiter_cancel() returns 0 and no
 *     wake follows.
 *  3. The call to wake is band's last access to the waiter: the wake function may free
 *     or resubmit it.
 *  4. A wake function only schedules work. It must not block. It may call band (no band
 *     lock is held), but keeping it short keeps stack depth bounded.
 */
#ifndef BAND_CORE_H
#define BAND_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "band/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @def BAND_API
 * @brief Marks the functions the shared library exports (default visibility, or
 * dllexport/dllimport on Windows); empty with BAND_STATIC defined, for the static library.
 */
#if defined(BAND_STATIC)
#define BAND_API
#elif defined(_WIN32)
#if defined(BAND_BUILDING)
#define BAND_API __declspec(dllexport)
#else
#define BAND_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#define BAND_API __attribute__((visibility("default")))
#else
#define BAND_API
#endif

/**
 * @brief The largest count of units any band bound can hold, request or owe: permits,
 * bytes, elements (2^61 - 1; a semaphore's state word keeps the bit above it as headroom
 * for releases in flight).
 */
#define BAND_MAX_UNITS ((UINT64_C(1) << 61) - 1)

/** @brief The longest name a primitive can carry, including the terminating NUL. */
#define BAND_NAME_MAX 48

/** @brief Time: nanoseconds of CLOCK_MONOTONIC. Deadlines are absolute. */
typedef int64_t band_time;

/**
 * @brief A deadline that never expires. Any deadline at or before band_now() means "do not wait".
 */
#define BAND_FOREVER INT64_MAX
#define BAND_USEC    ((band_time)1000)       /**< one microsecond, in band_time */
#define BAND_MSEC    ((band_time)1000000)    /**< one millisecond, in band_time */
#define BAND_SEC     ((band_time)1000000000) /**< one second, in band_time */

/**
 * @brief The current CLOCK_MONOTONIC time in nanoseconds.
 *
 * Build deadlines from it once and share them across every step of an operation:
 * `band_time deadline = band_now() + 250 * BAND_MSEC;`. MT-safe; never fails.
 *
 * @return The current time in nanoseconds of CLOCK_MONOTONIC.
 */
BAND_API band_time band_now(void);

/**
 * @brief band_now() + @p ns, saturating at BAND_FOREVER.
 *
 * A negative @p ns gives a deadline in the past ("do not wait"). MT-safe.
 *
 * @param ns  Nanoseconds from now; negative for a deadline in the past.
 * @return The absolute deadline, at most BAND_FOREVER.
 */
BAND_API band_time band_deadline_after(band_time ns);

/**
 * @brief The library's version as "MAJOR.MINOR.PATCH".
 *
 * The string is static. Compare with BAND_VERSION_STRING to detect a header/library
 * mismatch. MT-safe.
 *
 * @return A static string, never NULL.
 */
BAND_API const char *band_version(void);

/**
 * @brief BAND_VERSION_MAJOR * 10000 + MINOR * 100 + PATCH of the library.
 *
 * @return The library's version as one number, BAND_VERSION_NUMBER of the headers it was
 *         built from.
 */
BAND_API unsigned band_version_number(void);

/** @brief One pending operation (struct band_waiter), embedded by its owner. */
typedef struct band_waiter band_waiter;

/**
 * @brief Called exactly once when a queued operation completes.
 *
 * Runs on the thread that completed the operation (a release, a close, a cancel whose
 * returned permits completed another waiter, or an adapter's thread), with no band lock
 * held. The result is band_waiter_status(w). This call is band's last access to @p w.
 */
typedef void band_wake_fn(band_waiter *w);

/* Private node type; the fields below that start with '_' belong to band while the
 * waiter is pending. Never read or write them. */
struct band__node {
    struct band__node *next;
    struct band__node *prev;
};

/**
 * @brief One pending operation, embedded by its owner.
 *
 * Exactly 64 bytes on LP64 platforms. Initialise with band_waiter_init(); a waiter can
 * be resubmitted once its previous operation ended (its wake ran, it completed at once,
 * or a cancel returned 0). One owner at a time; one operation at a time.
 */
struct band_waiter {
    band_wake_fn *wake; /**< public: set by band_waiter_init() */
    void *data;         /**< public: the owner's pointer; band never touches it */
    band_time deadline; /**< public: for front ends and adapters that arm a timer. No
                           primitive cancels a waiter at it; only a semaphore or channel
                           in deadline-aware mode reads it, at submission, to refuse a
                           wait predicted to miss it */
    /* private */
    band_time _since;        /* when it was queued (wait-time counters) */
    struct band__node _link; /* queue node; next also threads the wake list */
    uintptr_t _qstate;       /* the queue it sits on | state in the low 2 bits */
    union {
        uint64_t want;  /**< while queued: the units it asked for */
        int64_t status; /**< once ended: 0 or a negative BAND_E* code */
    } _u;
};

/**
 * @brief Prepare @p w for submission with wake function @p wake and owner
 * pointer @p data.
 *
 * Sets the deadline to BAND_FOREVER and the status to 0. @p wake may be NULL only for
 * waiters that are never queued (for example when the owner only uses try operations).
 * Must not be called on a pending waiter. Not MT-safe for the same @p w (it has one owner).
 *
 * @param w     The waiter to prepare.
 * @param wake  Called once when a queued operation of @p w completes; NULL only for a
 *              waiter that is never queued.
 * @param data  The owner's pointer, stored in @p w->data; band never touches it.
 */
BAND_API void band_waiter_init(band_waiter *w, band_wake_fn *wake, void *data);

/**
 * @brief Withdraw a pending operation.
 *
 * @p reason is the status the operation ends with: BAND_ECANCELED, or BAND_ETIMEDOUT for a
 * deadline (which also counts as a timeout in the primitive's counters). No other code is
 * a reason.
 *
 * Returns 0 when the operation was still queued: it is removed, whatever it had been
 * partially granted went back to the primitive (to the next waiters first), its status is
 * @p reason, and its wake will NOT be called. Wakes of other waiters that the returned
 * units completed run on this thread before this call returns.
 * Returns BAND_EALREADY when the operation already completed: its wake has run or is about
 * to run, and the result (permits) belongs to the owner, who must wait for the wake before
 * reusing or freeing @p w.
 * Returns BAND_EINVAL, changing nothing, when @p reason is neither BAND_ECANCELED nor
 * BAND_ETIMEDOUT, @p w is NULL, or @p w is not pending (never submitted, completed at once, or
 * already cancelled).
 *
 * MT-safe: may race with releases, closes and other cancels from any thread. The primitive
 * @p w was submitted to must still exist.
 *
 * @param w       The pending waiter.
 * @param reason  BAND_ECANCELED or BAND_ETIMEDOUT: the status the operation ends with.
 * @return 0 when withdrawn, BAND_EALREADY when already completed, or BAND_EINVAL, as
 *         described above.
 */
BAND_API int band_waiter_cancel(band_waiter *w, int reason);

/**
 * @brief The result of @p w's last operation.
 *
 * 0 when granted, a negative BAND_E* code when it failed or was cancelled, BAND_PENDING
 * while it is queued, BAND_EINVAL for a NULL @p w. Read it after the wake was called (the
 * owner must see the wake with acquire ordering, which every band front end provides) or
 * after a synchronous return.
 *
 * @param w  The waiter, or NULL.
 * @return 0, a negative BAND_E* code, BAND_PENDING, or BAND_EINVAL for NULL, as described
 *         above.
 */
BAND_API int band_waiter_status(const band_waiter *w);

/**
 * @brief 1 if @p w is queued on a primitive, 0 otherwise. MT-safe.
 *
 * @param w  The waiter, or NULL.
 * @return 1 while queued, 0 otherwise (and for NULL).
 */
BAND_API int band_waiter_is_pending(const band_waiter *w);

#ifdef __cplusplus
}
#endif
#endif /* BAND_CORE_H */

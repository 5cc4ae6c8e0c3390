/* SPDX-License-Identifier: MIT */
/**
 * @file band/shm.h
 * @brief Budgets shared by the processes of one host, in a shared-memory segment.
 *
 * A band_shm is a handle on a segment: a named object under /dev/shm, or an anonymous
 * memfd handed to children, that holds up to BAND_SHM_MAX_BOUNDS named bounds (a
 * connection count, a byte budget, ...). Every process that opens the segment shares
 * them. No daemon runs; waiters sleep on futex words in the segment. docs/shm.md has the
 * long form; the rules:
 *
 *  - The in-process semantics. Weighted acquisitions, strict FIFO per bound across every
 *    process (a request is never overtaken by a later one that needs one of the same
 *    bounds; a large head holds back smaller waiters behind it), try that never barges,
 *    blocking with a deadline and a cancellation token, asynchronous waits that complete
 *    through band_waiter (so through libband-uv and libband-fd), reduce with a debt that
 *    releases repay first, grow, drain, close, counters.
 *  - Admission over several bounds of one segment: a band_shm_req takes every amount it
 *    names at once or nothing.
 *  - Exact ownership. Each handle has a record in the segment with the units it holds per
 *    bound and its process identity (PID and start time, so a reused PID is never taken
 *    for the old process). A handle can release only what it holds.
 *  - Crash safety. When a process dies, its exact units go back, its queued waiters leave
 *    the queue, and the order of the living is kept. Death is noticed through the robust
 *    mutex that guards the segment (a process killed inside the critical section: its
 *    unfinished change is rolled back from an undo log before anyone sees it), and by
 *    liveness checks: a waiter that has waited 50 ms, a try that is refused, a new handle
 *    and band_shm_reclaim() look for dead holders, at most once per 50 ms per segment.
 *  - A checked layout. Magic, version and size are read with pread() before anything is
 *    mapped; a segment of another version, a truncated file or garbage is refused.
 *
 * All processes that share a segment must share a PID namespace. Every function is
 * MT-safe unless its comment says otherwise; a handle may be used by many threads. After
 * fork() the child may keep using its parent's handles: on its first use the child gets
 * its own record (it holds nothing; what the parent holds stays the parent's) and the
 * parent's pending asynchronous waiters are not the child's.
 */
#ifndef BAND_SHM_H
#define BAND_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A handle on a shared segment (opaque): band_shm_create(), band_shm_open(). */
typedef struct band_shm band_shm;

/** @brief The most bounds one segment holds. */
#define BAND_SHM_MAX_BOUNDS 8

/** @brief The layout version this library reads and writes. */
#define BAND_SHM_VERSION 2

/** @brief A bound counted in units (permits, connections). */
#define BAND_SHM_UNITS 0
/** @brief A bound counted in bytes (reported as bytes; same rules). */
#define BAND_SHM_BYTES 1

/** @brief One bound of a new segment, for band_shm_create(). */
typedef struct band_shm_bound {
    const char *name;  /**< 1 to BAND_NAME_MAX - 1 bytes, unique in the segment */
    uint64_t capacity; /**< units available at first, 0 to BAND_MAX_UNITS */
    int kind;          /**< BAND_SHM_UNITS or BAND_SHM_BYTES */
} band_shm_bound;

/**
 * @brief Options for band_shm_create() and band_shm_open(). NULL, or a zero-initialised
 * struct, means the defaults.
 */
typedef struct band_shm_opts {
    /** create: the file mode of a named segment, exactly (the umask does not apply);
        0 means 0600. Ignored by open. */
    unsigned mode;
    /** create: how many handles can be open at once over all processes; 0 means 64,
        at most 4096. Ignored by open. */
    uint32_t max_handles;
    /** create: how many requests can wait at once over all processes; 0 means 256, at
        most 65536. Ignored by open. */
    uint32_t max_waiters;
    /** open: 1 opens the segment only to look at it and administer it, changing nothing
        by opening: no handle record is taken and no liveness check runs. Such a handle
        serves band_shm_get_stats(), band_shm_list_holders(), band_shm_list_waiters(),
        band_shm_reclaim(), band_shm_grow(), band_shm_reduce() and band_shm_close();
        operations that take or return units answer BAND_EINVAL. 0 (the default): a
        normal handle. Any other value is refused with BAND_EINVAL. Ignored by create. */
    int inspect;
} band_shm_opts;

/**
 * @brief Create a segment and open a handle on it.
 *
 * @p name is a shared-memory object name ("/conns": a leading slash and no other),
 * created under /dev/shm with mode @p opts->mode; it must not exist yet. The segment is
 * built under a private temporary name, its memory is allocated (posix_fallocate, so a
 * full /dev/shm fails here instead of at a later page fault), and then it is linked to
 * @p name in one step, so no process ever opens a half-built segment. @p name NULL
 * creates an anonymous segment (a sealed memfd that cannot be resized) whose descriptor,
 * band_shm_fd(), children inherit across fork() or receive otherwise and open with
 * band_shm_open_fd(). MT-safe.
 *
 * @param[out] out  Receives the handle.
 * @param name      The object name, or NULL for an anonymous segment.
 * @param bounds    The bounds, @p nbounds of them.
 * @param nbounds   1 to BAND_SHM_MAX_BOUNDS.
 * @param opts      Options, or NULL for the defaults.
 * @return 0; BAND_EINVAL (NULL @p out or @p bounds, a bad name, count, capacity, kind,
 *         an empty, too long or repeated bound name, or an option out of range);
 *         BAND_EEXIST when @p name exists; BAND_EACCES when /dev/shm refuses;
 *         BAND_ENOSPC when /dev/shm is full; BAND_ENOMEM. On failure nothing is left
 *         behind and *@p out is unchanged.
 */
BAND_API int band_shm_create(band_shm **out, const char *name, const band_shm_bound *bounds,
                             unsigned nbounds, const band_shm_opts *opts);

/**
 * @brief Open a handle on the existing segment @p name.
 *
 * The header is read and checked before anything is mapped: its magic, version, sizes and
 * the file's size must agree. MT-safe.
 *
 * @param[out] out  Receives the handle.
 * @param name      The object name ("/conns").
 * @param opts      Options (none apply yet), or NULL.
 * @return 0; BAND_EINVAL (NULL argument, a bad name, @p opts->inspect neither 0 nor 1);
 *         BAND_ENOENT when there is no such object; BAND_EACCES when its mode refuses this
 *         process read and write access; BAND_EBADSEG when it is not a band segment (wrong
 *         magic, truncated, sizes that disagree, garbage, a directory or a symlink); BAND_EVERSION
 * for a segment of another layout version; BAND_EBUSY when all its handle records are in use by
 * live processes; BAND_ENOMEM. On failure *@p out is unchanged.
 */
BAND_API int band_shm_open(band_shm **out, const char *name, const band_shm_opts *opts);

/**
 * @brief Open a handle on the segment behind descriptor @p fd (an anonymous segment's,
 * inherited or received). The descriptor is duplicated; the caller keeps its own.
 *
 * @param[out] out  Receives the handle.
 * @param fd        A descriptor of a segment.
 * @param opts      Options (none apply yet), or NULL.
 * @return 0, BAND_EINVAL (NULL @p out, a descriptor that is not open), BAND_EBADSEG,
 *         BAND_EVERSION, BAND_EBUSY or BAND_ENOMEM, as for band_shm_open().
 */
BAND_API int band_shm_open_fd(band_shm **out, int fd, const band_shm_opts *opts);

/**
 * @brief Close handle @p s and free it (the segment stays for the other handles).
 *
 * Units the handle still holds go back to the segment, exactly as if its process had
 * died (counted in reclaimed). Returns 0 (also for NULL) or BAND_EBUSY - nothing changes -
 * while asynchronous waits of this handle are pending. Not MT-safe with other uses of
 * @p s.
 *
 * @param s  The handle, or NULL.
 * @return 0 or BAND_EBUSY, as described above.
 */
BAND_API int band_shm_destroy(band_shm *s);

/**
 * @brief Remove the name @p name. Open handles keep working; the memory goes when the
 * last handle is closed. MT-safe.
 *
 * @param name  The object name.
 * @return 0, BAND_EINVAL (NULL or bad name), BAND_ENOENT or BAND_EACCES.
 */
BAND_API int band_shm_unlink(const char *name);

/**
 * @brief The descriptor of the segment behind @p s (-1 for NULL); it stays the handle's.
 *
 * It is close-on-exec: clear FD_CLOEXEC (fcntl) to hand an anonymous segment to a program
 * that a child executes, or send it over a UNIX socket.
 *
 * @param s  The handle.
 * @return The descriptor, or -1 for NULL.
 */
BAND_API int band_shm_fd(const band_shm *s);

/**
 * @brief The index of the bound called @p name, into *@p out.
 *
 * @param s         The handle.
 * @param name      The bound's name.
 * @param[out] out  Receives the index, 0 to band_shm_bound_count() - 1.
 * @return 0, BAND_EINVAL (NULL argument) or BAND_ENOENT (no such bound).
 */
BAND_API int band_shm_bound_index(const band_shm *s, const char *name, unsigned *out);

/**
 * @brief How many bounds the segment holds (0 for NULL).
 *
 * @param s  The handle, or NULL.
 * @return The number of bounds.
 */
BAND_API unsigned band_shm_bound_count(const band_shm *s);

/**
 * @brief Take @p n units of bound @p bound now, or refuse without waiting.
 *
 * Never barges: a request queued for the same bound makes it refuse. A refusal also
 * looks for dead holders (at most once per 50 ms per segment) and takes the units when
 * their recovery freed enough.
 *
 * @param s      The handle.
 * @param bound  The bound's index.
 * @param n      Units to take, 0 to BAND_MAX_UNITS.
 * @return 0 (held by this handle), BAND_EAGAIN, BAND_ECLOSED, BAND_E2BIG (@p n above
 *         the bound's capacity), BAND_EINVAL (NULL @p s, a bad index, @p n above
 *         BAND_MAX_UNITS), BAND_EOVERFLOW (this handle would hold more than
 *         BAND_MAX_UNITS), BAND_EBUSY (a forked child found no free handle record) or
 *         BAND_EBADSEG (the segment's lock cannot be recovered).
 */
BAND_API int band_shm_try_acquire(band_shm *s, unsigned bound, uint64_t n);

/**
 * @brief Take @p n units of bound @p bound, blocking this thread until @p deadline.
 *
 * Queues in the segment's FIFO when the units are not free at once, and sleeps on its
 * own futex word until a grant, the deadline, the token, close, or a reduction that
 * leaves the bound's capacity below @p n. A grant that races with the deadline or the
 * token wins. Every 50 ms of waiting it looks for dead holders and waiters.
 *
 * @param s         The handle.
 * @param bound     The bound's index.
 * @param n         Units to take, 0 to BAND_MAX_UNITS.
 * @param deadline  Absolute (band_now() clock); BAND_FOREVER never expires; a past one
 *                  means "do not wait".
 * @param cancel    Cancellation token, or NULL.
 * @return 0, BAND_ETIMEDOUT, BAND_ECANCELED, BAND_ECLOSED, BAND_E2BIG (also when a
 *         reduction leaves the capacity below @p n while it waits), BAND_EINVAL,
 *         BAND_EOVERFLOW, BAND_EBADSEG as for band_shm_try_acquire(), or BAND_EBUSY when
 *         every waiter slot of the segment is taken (nothing queued).
 */
BAND_API int band_shm_acquire(band_shm *s, unsigned bound, uint64_t n, band_time deadline,
                              band_cancel *cancel);

/**
 * @brief Take @p n units of bound @p bound now, or queue @p w for them.
 *
 * A grant made in any process is delivered to this handle's doorbell (a futex word in
 * its record) and completed by one thread the handle starts on first use; @p w's wake
 * runs there. band_waiter_cancel() withdraws the request from the segment; a cancel
 * that meets a grant not yet delivered returns the granted units to the segment, so
 * cancel still returns 0 and nothing is held.
 *
 * @param s      The handle.
 * @param bound  The bound's index.
 * @param n      Units to take, 0 to BAND_MAX_UNITS.
 * @param w      The waiter, initialised and not pending; valid until it ends.
 * @return 0 (granted at once, no wake), BAND_PENDING (exactly one wake or one cancel
 *         that returns 0 ends it; the wake's status is 0, BAND_ECLOSED or BAND_E2BIG),
 *         BAND_ECLOSED, BAND_E2BIG, BAND_EOVERFLOW, BAND_EBUSY (no free waiter slot),
 *         BAND_ENOMEM (the doorbell thread could not start), BAND_EBADSEG, or BAND_EINVAL
 *         (bad argument; @p w untouched). Every answer but BAND_EINVAL is also
 *         band_waiter_status(@p w).
 */
BAND_API int band_shm_acquire_async(band_shm *s, unsigned bound, uint64_t n, band_waiter *w);

/**
 * @brief Return @p n units of bound @p bound that this handle holds.
 *
 * They repay the bound's debt first, then go to the queued requests in order, then
 * become available. Works after close.
 *
 * The count is per process: a release by one thread of units another thread of the same
 * process acquired is accepted. MT-safe; lock-free while nobody waits on the bound.
 * One corner, for a process that returns more than it uses while its other threads
 * acquire: a release of no more than the process holds (its cache included) is added to
 * the cache first and checked with the value the add returns, so it is refused, but a
 * try-acquire in another thread that runs between the add and the refusal can take units
 * of the surplus; the process then holds that many beyond its count. When two of its
 * threads release at once more than it uses in all, either one may be refused. A release
 * of more than the process holds is refused before it adds, and a process that releases
 * only what it acquired never meets the corner.
 *
 * @param s      The handle.
 * @param bound  The bound's index.
 * @param n      Units to return.
 * @return 0, BAND_EOVERFLOW - nothing changes - when this handle holds fewer than @p n,
 *         BAND_EINVAL (NULL @p s, a bad index) or BAND_EBADSEG.
 */
BAND_API int band_shm_release(band_shm *s, unsigned bound, uint64_t n);

/**
 * @brief Complete a release whose atomic add to the cache was done inline.
 *
 * Called only by band_shm_release() (inline or exported), never directly: after it added
 * @p n << BAND_SHM_CACHE_SHIFT to this process's cache word of @p bound and the value it
 * found there was frozen (somebody waits, a debt is owed, the bound is closed, or another
 * process needed the units) or left more cached than this process holds. Under the lock
 * it hands the units on to the queue, repays the debt, or takes them back out of the cache
 * when this process holds fewer than they. MT-safe.
 *
 * @param s      The handle.
 * @param bound  The bound's index.
 * @param n      The units the add put in the cache, 1 to BAND_SHM_CACHE_ADD_MAX.
 * @return 0, BAND_EOVERFLOW (the units were taken back out: this process holds fewer),
 *         BAND_EINVAL - nothing done - (NULL @p s, a bad index, @p n outside
 *         1..BAND_SHM_CACHE_ADD_MAX, a handle opened to inspect, or a forked child that has
 *         not used the handle yet, which never adds) or BAND_EBADSEG.
 */
BAND_API int band_shm_release_finish(band_shm *s, unsigned bound, uint64_t n);

/**
 * @brief Lower bound @p bound's capacity by @p n without revoking anything held.
 *
 * Available units go first; the rest becomes a debt that releases repay before any
 * waiter. Queued requests larger than the new capacity fail with BAND_E2BIG.
 *
 * @param s      The handle.
 * @param bound  The bound's index.
 * @param n      Units to remove, at most the capacity.
 * @return 0, BAND_EINVAL (NULL @p s, a bad index, @p n above the capacity),
 *         BAND_EOVERFLOW (the debt would exceed BAND_MAX_UNITS) or BAND_EBADSEG.
 */
BAND_API int band_shm_reduce(band_shm *s, unsigned bound, uint64_t n);

/**
 * @brief Raise bound @p bound's capacity by @p n: the debt is repaid first, the rest goes
 * to the queued requests in order, then becomes available.
 *
 * @param s      The handle.
 * @param bound  The bound's index.
 * @param n      Units to add.
 * @return 0, BAND_EINVAL (NULL @p s, a bad index), BAND_EOVERFLOW (the capacity would
 *         exceed BAND_MAX_UNITS; nothing changes) or BAND_EBADSEG.
 */
BAND_API int band_shm_grow(band_shm *s, unsigned bound, uint64_t n);

/**
 * @brief Take up to @p up_to of bound @p bound's available units; this handle then holds
 * them. Creates no debt and works after close.
 *
 * @param s      The handle, or NULL.
 * @param bound  The bound's index.
 * @param up_to  The most units to take.
 * @return The units taken (0 for NULL, a bad index, or nothing available).
 */
BAND_API uint64_t band_shm_drain(band_shm *s, unsigned bound, uint64_t up_to);

/**
 * @brief The units of bound @p bound available now, a snapshot (0 for NULL or a bad index).
 *
 * Thread-safe and lock-free: the pool and every live handle's idle cache, read one after
 * the other. While another process moves units between a cache and the pool the sum can
 * be short by the units in motion, also when that process is killed there, until the
 * next operation that takes the segment's lock finishes or rolls back the move; for an
 * exact figure use band_shm_get_stats(), which reads under the lock.
 *
 * @param s      The handle, or NULL.
 * @param bound  The bound's index.
 * @return The available units.
 */
BAND_API uint64_t band_shm_available(const band_shm *s, unsigned bound);

/**
 * @brief The units of bound @p bound this handle holds (0 for NULL or a bad index).
 *
 * Thread-safe. Exact while no thread of this process acquires or releases on the handle;
 * other processes' operations never make it count units the handle does not hold. It
 * reads without the segment's lock unless another process is moving units to or from
 * this handle (its cache is frozen); then it takes the lock for a moment, which also
 * finishes the recovery of a process killed in the middle of such a move.
 *
 * @param s      The handle, or NULL.
 * @param bound  The bound's index.
 * @return The units held.
 */
BAND_API uint64_t band_shm_held(const band_shm *s, unsigned bound);

/**
 * @brief Close the segment for every process: all queued and later acquisitions fail
 * with BAND_ECLOSED; held units can still be released. Closing twice is harmless.
 *
 * @param s  The handle.
 * @return 0, BAND_EINVAL for NULL, or BAND_EBADSEG.
 */
BAND_API int band_shm_close(band_shm *s);

/**
 * @brief 1 once the segment was closed by any process, 0 before and for NULL.
 *
 * @param s  The handle, or NULL.
 * @return 1 or 0.
 */
BAND_API int band_shm_is_closed(const band_shm *s);

/**
 * @brief Check every record now and recover the dead: their units go back, their waiters
 * leave the queue. Runs whatever the time since the last check.
 *
 * @param s          The handle.
 * @param[out] dead  Receives how many dead handles were recovered (may be NULL).
 * @return 0, BAND_EINVAL for NULL @p s, or BAND_EBADSEG when the segment's lock cannot be
 *         recovered.
 */
BAND_API int band_shm_reclaim(band_shm *s, unsigned *dead);

/** @brief The most parts one request can name. */
#define BAND_SHM_REQ_MAX BAND_SHM_MAX_BOUNDS

/**
 * @brief An admission over several bounds of one segment, and its own asynchronous op.
 *
 * Build it with band_shm_req_init() and band_shm_req_add(); it is granted all at once or
 * not at all. One owner; its functions are not synchronised against each other on the
 * same request.
 */
typedef struct band_shm_req {
    band_waiter w;                    /**< the operation, for band_shm_admit_async() */
    uint32_t n;                       /**< parts in use */
    uint32_t bound[BAND_SHM_REQ_MAX]; /**< the bound of each part */
    uint64_t units[BAND_SHM_REQ_MAX]; /**< the units of each part */
    /** @privatesection */
    uint32_t _slot; /* private: the waiter slot while pending */
} band_shm_req;

/**
 * @brief Make @p r an empty request; its waiter gets @p wake and @p data.
 *
 * @p r may be uninitialised memory, so it is not read: like band_waiter_init(), never
 * call it on a request that is pending.
 *
 * @param r     The request.
 * @param wake  The wake for band_shm_admit_async(), or NULL when it is only used blocking.
 * @param data  The owner's pointer, stored in @p r->w.data.
 * @return 0, or BAND_EINVAL for NULL @p r.
 */
BAND_API int band_shm_req_init(band_shm_req *r, band_wake_fn *wake, void *data);

/**
 * @brief Add @p units of bound @p bound to @p r (a bound named twice adds up).
 *
 * @param r      The request, not pending.
 * @param bound  The bound's index (checked against the segment when used).
 * @param units  Units, 0 to BAND_MAX_UNITS.
 * @return 0, BAND_EINVAL (NULL, pending, @p bound not below BAND_SHM_MAX_BOUNDS, more
 *         than BAND_SHM_REQ_MAX parts) or BAND_EOVERFLOW (a part above BAND_MAX_UNITS).
 */
BAND_API int band_shm_req_add(band_shm_req *r, unsigned bound, uint64_t units);

/**
 * @brief Grant @p r now, all parts or none, or refuse without waiting.
 *
 * @param s  The handle.
 * @param r  The request.
 * @return 0, BAND_EAGAIN, BAND_ECLOSED, BAND_E2BIG (a part above its bound's capacity),
 *         BAND_EINVAL (NULL argument, a bound index the segment does not have),
 *         BAND_EOVERFLOW, BAND_EBUSY or BAND_EBADSEG, as for band_shm_try_acquire().
 */
BAND_API int band_shm_try_admit(band_shm *s, const band_shm_req *r);

/**
 * @brief Grant @p r, all parts or none, blocking until @p deadline.
 *
 * @param s         The handle.
 * @param r         The request.
 * @param deadline  As band_shm_acquire().
 * @param cancel    Cancellation token, or NULL.
 * @return 0, BAND_ETIMEDOUT, BAND_ECANCELED, BAND_ECLOSED, BAND_E2BIG, BAND_EINVAL,
 *         BAND_EOVERFLOW, BAND_EBUSY or BAND_EBADSEG, as for band_shm_acquire().
 */
BAND_API int band_shm_admit(band_shm *s, const band_shm_req *r, band_time deadline,
                            band_cancel *cancel);

/**
 * @brief Grant @p r now, or queue it; @p r->w ends it as for band_shm_acquire_async().
 *
 * @param s  The handle.
 * @param r  The request, with a wake; valid and untouched until it ends.
 * @return 0, BAND_PENDING, BAND_ECLOSED, BAND_E2BIG, BAND_EOVERFLOW, BAND_EBUSY,
 *         BAND_ENOMEM, BAND_EBADSEG or BAND_EINVAL, as for band_shm_acquire_async().
 */
BAND_API int band_shm_admit_async(band_shm *s, band_shm_req *r);

/**
 * @brief Return every part of granted request @p r (each checked as band_shm_release()
 * does, all or nothing).
 *
 * @param s  The handle.
 * @param r  The request that was granted.
 * @return 0, BAND_EOVERFLOW (this handle holds less than some part; nothing changes),
 *         BAND_EINVAL (NULL argument, a bound the segment does not have) or BAND_EBADSEG.
 */
BAND_API int band_shm_release_req(band_shm *s, const band_shm_req *r);

/** @brief One bound's state and counters, in band_shm_stats. */
typedef struct band_shm_bound_stats {
    char name[BAND_NAME_MAX]; /**< the bound's name */
    int kind;                 /**< BAND_SHM_UNITS or BAND_SHM_BYTES */
    uint64_t capacity;        /**< the current capacity */
    uint64_t available;       /**< units free now */
    uint64_t debt;            /**< units releases must repay before waiters */
    uint64_t in_use;          /**< units held by live and not yet recovered handles */
    uint64_t waiters;         /**< requests queued for this bound */
    uint64_t waiting_units;   /**< units those requests ask of it */
    uint64_t queued;          /**< requests that had to queue, since creation */
    uint64_t grants;          /**< queued requests granted */
    uint64_t timeouts;        /**< queued requests that timed out */
    uint64_t cancels;         /**< queued requests cancelled */
    uint64_t closed_fails;    /**< queued requests failed by close */
    uint64_t try_refusals;    /**< tries refused with BAND_EAGAIN */
    uint64_t too_big;         /**< requests refused or failed with BAND_E2BIG */
    uint64_t reclaimed;       /**< units returned from dead or closed handles */
} band_shm_bound_stats;

/** @brief A snapshot of a segment. */
typedef struct band_shm_stats {
    uint32_t version;      /**< layout version */
    uint32_t nbounds;      /**< bounds in use in @p bounds */
    uint32_t max_handles;  /**< handle records */
    uint32_t max_waiters;  /**< waiter slots */
    uint32_t handles;      /**< records in use */
    uint32_t waiters;      /**< requests queued */
    int closed;            /**< 1 after band_shm_close() */
    uint64_t size;         /**< bytes of the segment */
    uint64_t recoveries;   /**< times the lock was taken over from a dead owner */
    uint64_t dead_handles; /**< records of dead processes recovered */
    uint64_t dead_waiters; /**< queued requests of dead processes removed */
    band_shm_bound_stats bounds[BAND_SHM_MAX_BOUNDS]; /**< per bound */
} band_shm_stats;

/**
 * @brief Copy a consistent snapshot of the segment into *@p out (under its lock).
 *
 * @param s         The handle.
 * @param[out] out  Receives the snapshot.
 * @return 0, BAND_EINVAL (NULL argument) or BAND_EBADSEG (lock not recoverable).
 */
BAND_API int band_shm_get_stats(const band_shm *s, band_shm_stats *out);

/** @brief One handle record, for band_shm_list_holders(). */
typedef struct band_shm_holder {
    int32_t pid;                        /**< its process */
    uint64_t start_time;                /**< the process's start time (clock ticks since boot) */
    int alive;                          /**< 1 when the process was alive at the snapshot */
    uint64_t held[BAND_SHM_MAX_BOUNDS]; /**< units held per bound */
} band_shm_holder;

/** @brief One queued request, for band_shm_list_waiters(). */
typedef struct band_shm_waiter_info {
    int32_t pid;                        /**< its process */
    uint64_t seq;                       /**< its place in the arrival order (smaller is earlier) */
    band_time waited;                   /**< how long it has waited, ns */
    int async;                          /**< 1 for an asynchronous request */
    uint64_t want[BAND_SHM_MAX_BOUNDS]; /**< units asked per bound */
} band_shm_waiter_info;

/**
 * @brief Copy up to @p cap handle records in use into @p out; *@p count receives how many
 * are in use (which may exceed @p cap).
 *
 * @param s           The handle.
 * @param[out] out    The records, or NULL when @p cap is 0.
 * @param cap         Room in @p out.
 * @param[out] count  Receives the number in use.
 * @return 0, BAND_EINVAL or BAND_EBADSEG.
 */
BAND_API int band_shm_list_holders(const band_shm *s, band_shm_holder *out, size_t cap,
                                   size_t *count);

/**
 * @brief Copy up to @p cap queued requests, in FIFO order, into @p out; *@p count receives
 * how many are queued.
 *
 * @param s           The handle.
 * @param[out] out    The requests, or NULL when @p cap is 0.
 * @param cap         Room in @p out.
 * @param[out] count  Receives the number queued.
 * @return 0, BAND_EINVAL or BAND_EBADSEG.
 */
BAND_API int band_shm_list_waiters(const band_shm *s, band_shm_waiter_info *out, size_t cap,
                                   size_t *count);

/**
 * @brief The version of the inline fast paths' ABI, described here.
 *
 * Inline fast paths: with GCC or Clang, band_shm_try_acquire() and band_shm_release() are
 * macros over the static inline functions below, so that an uncontended acquire costs the
 * caller one compare-and-swap and a release one atomic add, with no call. They work on the
 * handle's cache: units this process returned while nobody waited, counted as held by the
 * handle. Anything else - a NULL handle, a bad index, n == 0 or above the limits, a frozen
 * cache (a waiter, a debt, close, another process that needed the units), too few cached
 * units, a forked child's first use, a failed compare-and-swap - goes to the exported
 * functions of the same names, which give every answer as documented above; a release
 * whose add found the word frozen or left the cache above held goes to
 * band_shm_release_finish(). So both have identical outcomes, and taking the address of
 * either name yields the exported function.
 * Define BAND_NO_INLINE before including this header to call the exported functions
 * always (the library itself is built so).
 *
 * The ABI promise. The inline code reads struct band_shm_prefix at the start of every
 * band_shm, and through it struct band_shm_fast_view on a private page of the handle that
 * a forked child finds zeroed (MADV_WIPEONFORK), so a child never uses its parent's cache.
 * The cache words hold cached units << BAND_SHM_CACHE_SHIFT | BAND_SHM_CACHE_FROZEN and
 * are accessed only with atomic operations; a frozen word may still be added to, and only
 * its own process lowers it. These layouts, the encoding, BAND_SHM_CACHE_ADD_MAX and
 * band_shm_release_finish() are frozen for
 * inline ABI BAND_SHM_INLINE_ABI, under the same symbol-version rule as
 * BAND_SEM_INLINE_ABI (band/sem.h). The rest of struct band_shm is private.
 */
#define BAND_SHM_INLINE_ABI 2

/** @brief Cache word flag: frozen; the owner must take the lock. */
#define BAND_SHM_CACHE_FROZEN UINT64_C(1)
/** @brief A cache word holds its units above this many flag bits. */
#define BAND_SHM_CACHE_SHIFT 2
/** @brief The most units an inline release adds to a cache word in one call. */
#define BAND_SHM_CACHE_ADD_MAX (UINT64_C(1) << 32)

/** @brief What the fast paths read of this process's record (see the ABI promise). */
struct band_shm_fast_view {
    uint64_t *cache; /**< the cache words, one per bound; NULL: use the exported functions */
    uint64_t *held;  /**< the units held per bound, the cache included; atomic access only */
};

/** @brief The frozen start of every band_shm (see the ABI promise). */
struct band_shm_prefix {
    struct band_shm_fast_view *fast; /**< offset 0; constant while the handle lives */
    uint32_t nbounds;                /**< offset 8; the segment's bounds; constant */
};

#if !defined(BAND_NO_INLINE) && !defined(BAND_BUILDING) && (defined(__GNUC__) || defined(__clang__))
#define BAND_SHM_HAVE_INLINE 1

static inline int band__shm_try_acquire_inline(band_shm *s, unsigned bound, uint64_t n)
{
    const struct band_shm_prefix *p = (const struct band_shm_prefix *)(const void *)s;
    if (__builtin_expect(s != NULL && n - 1 < BAND_MAX_UNITS && bound < p->nbounds, 1)) {
        uint64_t *cache = __atomic_load_n(&p->fast->cache, __ATOMIC_ACQUIRE);
        if (__builtin_expect(cache != NULL, 1)) {
            uint64_t *word = &cache[bound];
            uint64_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
            if (__builtin_expect(
                    (w & BAND_SHM_CACHE_FROZEN) == 0 && (w >> BAND_SHM_CACHE_SHIFT) >= n &&
                        __atomic_compare_exchange_n(word, &w, w - (n << BAND_SHM_CACHE_SHIFT), 0,
                                                    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED),
                    1))
                return 0;
        }
    }
    return (band_shm_try_acquire)(s, bound, n);
}

static inline int band__shm_release_inline(band_shm *s, unsigned bound, uint64_t n)
{
    const struct band_shm_prefix *p = (const struct band_shm_prefix *)(const void *)s;
    if (__builtin_expect(s != NULL && n - 1 < BAND_SHM_CACHE_ADD_MAX && bound < p->nbounds, 1)) {
        const struct band_shm_fast_view *f = p->fast;
        uint64_t *cache = __atomic_load_n(&f->cache, __ATOMIC_ACQUIRE);
        if (__builtin_expect(cache != NULL, 1)) {
            /* Add, then check the value the add returns: whether the word was frozen,
             * and whether the cache now holds more than this process does; either goes
             * to the lock. A release of more than this process holds at all is refused
             * before it adds. A load of the word before the add would cost as much as
             * half the add, on the path of every release. */
            uint64_t held = __atomic_load_n(&f->held[bound], __ATOMIC_ACQUIRE);
            if (__builtin_expect(held >= n, 1)) {
                uint64_t old =
                    __atomic_fetch_add(&cache[bound], n << BAND_SHM_CACHE_SHIFT, __ATOMIC_RELEASE);
                if (__builtin_expect((old & BAND_SHM_CACHE_FROZEN) == 0 &&
                                         (old >> BAND_SHM_CACHE_SHIFT) <= held - n,
                                     1))
                    return 0;
                return band_shm_release_finish(s, bound, n);
            }
        }
    }
    return (band_shm_release)(s, bound, n);
}

#define band_shm_try_acquire(s, bound, n) band__shm_try_acquire_inline((s), (bound), (n))
#define band_shm_release(s, bound, n)     band__shm_release_inline((s), (bound), (n))
#endif

#ifdef __cplusplus
}
#endif

#endif /* BAND_SHM_H */

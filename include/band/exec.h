/* SPDX-License-Identifier: MIT */
/**
 * @file band/exec.h
 * @brief A bounded executor: a fixed set of worker threads fed by a bounded channel.
 *
 * The executor is the one band object that owns threads: band_exec_create() starts its
 * workers with pthreads and band_exec_join() joins them. Every other band primitive is a
 * state machine that runs on its callers' threads. docs/exec.md has the long form.
 *
 *  - Jobs are caller-owned: a band_job embedded in the caller's own structure, with a
 *    function and an argument. Submitting allocates nothing; the job's pointer travels
 *    through a band_chan of pointers whose capacity bounds the queue.
 *  - Backpressure is explicit: band_exec_run() waits for room until a deadline,
 *    band_exec_try_run() refuses at once with BAND_EAGAIN. A refused job is handed back
 *    untouched (the caller still owns it).
 *  - Every accepted job ends exactly once, in one of two ways: its function runs on a
 *    worker (and from then on the job belongs to the function), or it is handed back
 *    through the executor's handback callback - with BAND_ECANCELED after a successful
 *    band_exec_cancel(), with BAND_ECLOSED when an immediate shutdown drained it.
 *  - Shutdown is the executor's close: graceful (band_exec_shutdown(ex, BAND_EXEC_DRAIN))
 *    closes the queue and lets the workers finish everything already queued; immediate
 *    (BAND_EXEC_NOW) closes the queue, lets running jobs finish, and hands every queued job
 *    back. band_exec_join() then waits for the workers, and only then does
 *    band_exec_destroy() free the executor: shutdown, join, destroy, as close, let the
 *    waiters go, destroy for every other band object.
 *  - Queue time (accepted -> started) and service time (started -> function returned) are
 *    recorded separately in two band_histo histograms.
 *
 * Every function is MT-safe unless stated otherwise.
 */
#ifndef BAND_EXEC_H
#define BAND_EXEC_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"
#include "band/histo.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A bounded executor (opaque): created with band_exec_create(). */
typedef struct band_exec band_exec;
/** @brief One unit of work, embedded by its owner (struct band_job). */
typedef struct band_job band_job;

/**
 * @brief A job's function.
 *
 * Runs once on a worker thread; from its first instruction the job belongs to it (it may
 * free or resubmit @p job). It may call band, including band_exec_run() on its own
 * executor (beware waiting for room from a worker: with every worker waiting, nobody
 * drains the queue - use a deadline or band_exec_try_run()).
 *
 * @param job  The job being run; its arg is the owner's pointer.
 */
typedef void band_job_fn(band_job *job);

/**
 * @brief Receives a job that will not run.
 *
 * @p reason is BAND_ECANCELED (band_exec_cancel() won before a worker started it) or
 * BAND_ECLOSED (an immediate shutdown drained it from the queue). Called once per such job,
 * on a worker thread or on the thread calling band_exec_shutdown(), with no band lock
 * held. This call is band's last access to @p job: the callback may free it.
 *
 * @param job     The job handed back; it belongs to the callback from now on.
 * @param reason  BAND_ECANCELED or BAND_ECLOSED, as above.
 * @param ctx     band_exec_opts.handback_ctx.
 */
typedef void band_exec_handback_fn(band_job *job, int reason, void *ctx);

/**
 * @brief One unit of work, embedded by its owner.
 *
 * Set fn and arg with band_job_init(); the fields starting with '_' belong to the executor
 * while it is queued.
 */
struct band_job {
    band_job_fn *fn; /**< public: the function a worker runs */
    void *arg;       /**< public: the owner's pointer; band never touches it */
    /** @privatesection */
    /* private */
    uint32_t _state; /* BAND_JOB_* below, changed with atomic compare-and-swap */
    uint32_t _pad;   /* reserved */
    band_time _enq;  /* when the executor accepted it (queue-time histogram) */
};

/** @brief Job states, as band_job_state() reports them. */
enum band_job_state {
    BAND_JOB_IDLE = 0,      /**< initialised, or handed back after a refused submission */
    BAND_JOB_QUEUED = 1,    /**< accepted, waiting for a worker */
    BAND_JOB_RUNNING = 2,   /**< a worker took it; its function runs or has run */
    BAND_JOB_CANCELLED = 3, /**< band_exec_cancel() won; still in the queue, handback pending
                               (IDLE again once handed back) */
    BAND_JOB_DRAINED = 4,   /**< handed back by an immediate shutdown */
};

/**
 * @brief Set @p job's function and argument and make it idle.
 *
 * Not MT-safe for the same @p job; must not be called while it is queued. NULL @p job is
 * ignored.
 *
 * @param job  The job, owned by the caller; NULL is ignored.
 * @param fn   The function a worker will run; band_exec_run() refuses a job without one.
 * @param arg  The owner's pointer, stored in the job; band never touches it.
 */
BAND_API void band_job_init(band_job *job, band_job_fn *fn, void *arg);

/**
 * @brief @p job's state, read with acquire ordering.
 *
 * RUNNING stays RUNNING after the function returned: the executor never writes the job
 * again once it starts it. MT-safe.
 *
 * @param job  The job.
 * @return The state (enum band_job_state), or BAND_EINVAL for a NULL @p job.
 */
BAND_API int band_job_state(const band_job *job);

/** @brief How a shutdown treats queued jobs. */
enum band_exec_shutdown_mode {
    BAND_EXEC_DRAIN = 0, /**< graceful: workers run every queued job, then exit */
    BAND_EXEC_NOW = 1,   /**< immediate: running jobs finish; queued jobs are handed back */
};

/**
 * @brief A clock for the histograms (tests pass a fake one); NULL means band_now().
 *
 * @param ctx  band_exec_opts.clock_ctx.
 * @return The current time, in the units the histograms record.
 */
typedef band_time band_exec_clock_fn(void *ctx);

/**
 * @brief The executor's hooks.
 *
 * A zero-initialised struct (or a NULL pointer) means none: no handback callback,
 * band_now() as the clock.
 */
typedef struct band_exec_opts {
    band_exec_handback_fn *handback; /**< optional; see band_exec_cancel() without it */
    void *handback_ctx;              /**< passed to handback */
    band_exec_clock_fn *clock;       /**< optional: NULL uses band_now() */
    void *clock_ctx;                 /**< passed to clock */
} band_exec_opts;

/** @brief The most worker threads one executor can start. */
#define BAND_EXEC_MAX_WORKERS 1024

/**
 * @brief Start an executor with @p workers threads (1..BAND_EXEC_MAX_WORKERS) and a queue
 *        of @p capacity jobs (1..BAND_MAX_UNITS, not counting running ones), with the
 *        hooks in @p opts (NULL: none).
 *
 * @p opts is read during the call only.
 *
 * Returns 0 and stores it in *@p out, BAND_EINVAL (NULL @p out, 0 or too many workers, a
 * capacity of 0 or above BAND_MAX_UNITS), BAND_ENOMEM, or BAND_EAGAIN when a thread could
 * not be created (the ones started are stopped and joined; nothing leaks). On error *@p out
 * is untouched. The caller ends it with band_exec_shutdown(), band_exec_join() and
 * band_exec_destroy(). MT-safe.
 *
 * @param[out] out  Receives the executor; must not be NULL. The caller owns it.
 * @param workers   Worker threads to start, 1 to BAND_EXEC_MAX_WORKERS.
 * @param capacity  Jobs the queue holds, 1 to BAND_MAX_UNITS.
 * @param opts      The hooks, or NULL for none; read during the call only.
 * @return 0, BAND_EINVAL, BAND_ENOMEM or BAND_EAGAIN as described above.
 */
BAND_API int band_exec_create(band_exec **out, unsigned workers, uint64_t capacity,
                              const band_exec_opts *opts);

/**
 * @brief Name @p ex in its counters (band_exec_stats.name).
 *
 * The name is copied (at most BAND_NAME_MAX bytes with its NUL; NULL or "" clears it).
 * Returns 0, or BAND_EINVAL (NULL @p ex, a name too long: nothing changes). MT-safe.
 *
 * @param ex    The executor; must not be NULL.
 * @param name  The name, copied; NULL or "" clears it.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_exec_set_name(band_exec *ex, const char *name);

/**
 * @brief Queue @p job, waiting until @p deadline for room.
 *
 * Returns 0 (accepted: the job now runs or is handed back exactly once), BAND_ETIMEDOUT
 * (still full at @p deadline; a deadline in the past means "do not wait"), BAND_ECLOSED
 * (the executor is shutting down, also when it started while this call waited), or
 * BAND_EINVAL (NULL argument, NULL function, or @p job is queued or cancelled and not yet
 * handed back). On any refusal the job is back to IDLE and belongs to the caller,
 * untouched. Waiting senders get room in arrival order. A job may be submitted again once
 * it ended (its function started, or its handback ran), including from its own function.
 * Cancelling a job before its submission returned is a race of the caller's making; if
 * such a cancel wins against a refused submission, the job is handed back (BAND_ECANCELED)
 * on this thread and this call returns BAND_ECANCELED.
 *
 * @p cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED (the job is not queued); a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 *
 * @param ex        The executor; must not be NULL.
 * @param job       The job, initialised with band_job_init() with a function; idle, or
 *                  ended (started or handed back). On 0 it belongs to the executor until
 *                  it runs or is handed back; on any refusal it stays the caller's.
 * @param deadline  Absolute time on band's clock to stop waiting for room at.
 * @param cancel    Cancellation token, or NULL for none.
 * @return 0, BAND_ETIMEDOUT, BAND_ECLOSED, BAND_ECANCELED or BAND_EINVAL as described
 *         above.
 */
BAND_API int band_exec_run(band_exec *ex, band_job *job, band_time deadline, band_cancel *cancel);

/**
 * @brief Queue @p job now or refuse.
 *
 * Returns 0, BAND_EAGAIN (full, or older submitters are waiting), BAND_ECLOSED,
 * BAND_EINVAL; refused jobs stay with the caller. As with band_exec_run(), a cancel that
 * wins against a refused submission hands the job back (BAND_ECANCELED) on this thread,
 * and this call then returns BAND_ECANCELED. MT-safe.
 *
 * @param ex   The executor; must not be NULL.
 * @param job  The job, as for band_exec_run().
 * @return 0, BAND_EAGAIN, BAND_ECLOSED, BAND_ECANCELED or BAND_EINVAL as described above.
 */
BAND_API int band_exec_try_run(band_exec *ex, band_job *job);

/**
 * @brief Withdraw @p job before a worker starts it.
 *
 * Returns 0 when the job was still queued: it will not run, and it is handed back with
 * BAND_ECANCELED exactly once (by the worker that next meets it in the queue, or by an
 * immediate shutdown) - the caller must keep @p job valid until then, because its pointer
 * is still in the queue. Without a handback callback, keep it valid until
 * band_exec_join() returned. Returns BAND_EALREADY when a worker already started it (it
 * runs to completion), and BAND_EINVAL when @p job is NULL or not queued (idle, cancelled
 * already, drained). MT-safe; races with workers are decided by one compare-and-swap.
 *
 * @param job  The job to withdraw.
 * @return 0, BAND_EALREADY or BAND_EINVAL as described above.
 */
BAND_API int band_exec_cancel(band_job *job);

/**
 * @brief The executor's close: stop accepting jobs; @p mode says what happens to queued
 *        ones.
 *
 * Both modes close the queue at once: later and waiting submissions fail with
 * BAND_ECLOSED, and their jobs stay with their submitters. BAND_EXEC_DRAIN lets the
 * workers run every queued job and exit. BAND_EXEC_NOW lets running jobs finish, and hands
 * every queued job back (BAND_ECLOSED, or BAND_ECANCELED for one cancelled earlier)
 * through the handback callback, each exactly once, on this thread or a worker. Does not
 * wait for the workers: band_exec_join() does. A second call can turn a DRAIN into a NOW;
 * otherwise it changes nothing. Returns 0, or BAND_EINVAL (NULL @p ex, bad @p mode).
 * May be called from a job. MT-safe.
 *
 * @param ex    The executor; must not be NULL.
 * @param mode  BAND_EXEC_DRAIN or BAND_EXEC_NOW (enum band_exec_shutdown_mode).
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_exec_shutdown(band_exec *ex, int mode);

/**
 * @brief Wait for every worker to exit (after a shutdown).
 *
 * Returns 0 once all workers have been joined (at once if they were already), BAND_EINVAL
 * for NULL @p ex or when called before band_exec_shutdown() (it would wait forever), or from
 * one of @p ex's own workers (it would wait for itself). After it returned 0, every accepted
 * job has run or been handed back. MT-safe.
 *
 * @param ex  The executor, shut down; must not be NULL.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_exec_join(band_exec *ex);

/**
 * @brief Free @p ex once it was shut down and joined.
 *
 * Returns 0 (NULL too), or BAND_EBUSY, freeing and changing nothing, before
 * band_exec_shutdown() was called or before band_exec_join() returned 0 (also when called
 * from one of @p ex's own workers, which are not joined yet). It never shuts down and never
 * waits: shut down, join, then destroy. Nobody may use @p ex afterwards.
 *
 * @param ex  The executor, or NULL (a no-op).
 * @return 0, or BAND_EBUSY as described above.
 */
BAND_API int band_exec_destroy(band_exec *ex);

/** @brief A snapshot of an executor's counters. */
typedef struct band_exec_stats {
    char name[BAND_NAME_MAX]; /**< band_exec_set_name(); "" when unnamed */
    unsigned workers;         /**< worker threads started */
    int closed;               /**< 1 after band_exec_shutdown() */
    uint64_t capacity;        /**< queue capacity */
    uint64_t queued;          /**< jobs in the queue now (cancelled ones until skipped) */
    uint64_t waiting;         /**< submitters blocked in band_exec_run() for room */
    uint64_t running;         /**< jobs whose function runs now */
    uint64_t accepted;        /**< jobs accepted by run/try_run */
    uint64_t refused_full;    /**< refused with BAND_EAGAIN or BAND_ETIMEDOUT */
    uint64_t refused_closed;  /**< refused with BAND_ECLOSED */
    uint64_t completed;       /**< jobs whose function returned */
    uint64_t cancelled;       /**< jobs handed back with BAND_ECANCELED */
    uint64_t drained;         /**< jobs handed back with BAND_ECLOSED */
} band_exec_stats;

/**
 * @brief Copy @p ex's counters into *@p out.
 *
 * Counters are read one by one with relaxed loads; at quiescence
 * accepted == completed + cancelled + drained + queued + running. MT-safe.
 *
 * @param ex        The executor; must not be NULL.
 * @param[out] out  Receives the snapshot; must not be NULL.
 * @return 0, or BAND_EINVAL for a NULL argument.
 */
BAND_API int band_exec_get_stats(const band_exec *ex, band_exec_stats *out);

/**
 * @brief Snapshots of the queue-time and service-time histograms (in the executor clock's
 *        units, ns for band_now()); either pointer may be NULL.
 *
 * Queue time is from acceptance to the moment a worker took the job (cancelled and drained
 * jobs are not recorded); service time is from then until its function returned. A busy
 * worker that takes its next job without waiting uses the previous job's end as the next
 * one's start (one clock read per job), so its pop counts as queue time. Each worker keeps
 * its own histograms; this call merges them.
 * Returns 0 or BAND_EINVAL (NULL @p ex). MT-safe.
 *
 * @param ex                 The executor; must not be NULL.
 * @param[out] queue_time    Receives the merged queue-time histogram, or NULL.
 * @param[out] service_time  Receives the merged service-time histogram, or NULL.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_exec_get_histos(const band_exec *ex, band_histo_snapshot *queue_time,
                                  band_histo_snapshot *service_time);

#ifdef __cplusplus
}
#endif
#endif /* BAND_EXEC_H */

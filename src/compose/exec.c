/* SPDX-License-Identifier: MIT */
/*
 * exec.c - the bounded executor (band/exec.h).
 *
 * Design notes
 * ------------
 * The queue is a band_chan of band_job pointers: submissions are band_chan_send (with the
 * caller's deadline) or band_chan_try_send, workers block in band_chan_recv, and closing
 * the channel is the shutdown. The channel's lock-free fast path is what a submission and
 * a pop cost while nobody waits; its FIFO sender queue gives waiting submitters room in
 * arrival order.
 *
 * Each job carries one state word, changed only by compare-and-swap:
 *
 *   IDLE/RUNNING/DRAINED --submit--> QUEUED --worker--> RUNNING   (function runs)
 *                                   QUEUED --cancel--> CANCELLED --worker/drain--> IDLE
 *                                   QUEUED --drain---> DRAINED                  (handback)
 *
 * The submitter writes QUEUED (release) before it sends the pointer, so that the pointer
 * can never be popped before its state says it is queued. Exactly one of {worker, cancel,
 * drain} wins the CAS out of QUEUED, which is what makes "runs or is handed back, exactly
 * once" hold. A CANCELLED job is still in the channel; whoever pops it (a worker, or the
 * drain of an immediate shutdown) hands it back. The pointer is in the channel exactly
 * once, and only the one thread that pops it touches the job afterwards.
 *
 * Once the worker has started a job (read its function and its enqueue time) it never
 * touches it again: the function owns it. Service time is recorded after the function
 * returns, from values held on the worker's stack.
 *
 * Immediate shutdown sets mode = NOW before closing the channel. A worker that pops a job
 * after that hands it back instead of running it and exits; the shutting-down thread
 * drains whatever is left with try_recv. Each pointer is popped once, by one of them.
 *
 * Bookkeeping: each worker has its own counters (started, completed) and its own two
 * histograms, written only by that worker, on its own cache lines; band_exec_get_stats()
 * and band_exec_get_histos() add the shards up. The shared counters are the submitters'
 * (accepted, refusals) and the rare handbacks (cancelled, drained).
 *
 * Lock discipline: the executor has one mutex, join_mu, which only serializes
 * band_exec_join() (and lets band_exec_destroy() see whether the workers were joined,
 * without waiting: it only tries it); no user code (job, handback, clock) runs under it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "band/chan.h"
#include "band/exec.h"
#include "core/internal.h"

enum { MODE_OPEN = 0, MODE_DRAIN = 1, MODE_NOW = 2 };

/* One worker's thread and its own counters and histograms. Only this worker writes them
 * (atomics, so readers may load them at any time), which keeps the per-job bookkeeping
 * off shared cache lines; readers add the shards up. */
struct exec_worker {
    _Alignas(BAND__CACHELINE) band_exec *ex;
    pthread_t tid;
    atomic_uint_fast64_t started;   /* jobs whose function it called */
    atomic_uint_fast64_t completed; /* ... and that returned */
    band_histo queue_time;
    band_histo service_time;
};

struct band_exec {
    band_chan *ch;
    band_exec_handback_fn *handback;
    void *handback_ctx;
    band_exec_clock_fn *clock;
    void *clock_ctx;
    unsigned nworkers; /* threads started (and to be joined) */
    struct exec_worker *w;
    atomic_int mode;

    pthread_mutex_t join_mu; /* protects joined; held while joining */
    int joined;

    _Alignas(BAND__CACHELINE) atomic_uint_fast64_t accepted;
    atomic_uint_fast64_t refused_full;
    atomic_uint_fast64_t refused_closed;
    _Alignas(BAND__CACHELINE) atomic_uint_fast64_t cancelled; /* rare: shared */
    atomic_uint_fast64_t drained;
};

static band_time exec_clock(const band_exec *ex)
{
    return ex->clock != NULL ? ex->clock(ex->clock_ctx) : band_now();
}

static uint32_t job_load(const band_job *job)
{
    return __atomic_load_n(&job->_state, __ATOMIC_ACQUIRE);
}

static int job_cas(band_job *job, uint32_t from, uint32_t to)
{
    return __atomic_compare_exchange_n(&job->_state, &from, to, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

void band_job_init(band_job *job, band_job_fn *fn, void *arg)
{
    if (job == NULL)
        return;
    job->fn = fn;
    job->arg = arg;
    job->_pad = 0;
    job->_enq = 0;
    __atomic_store_n(&job->_state, (uint32_t)BAND_JOB_IDLE, __ATOMIC_RELEASE);
}

int band_job_state(const band_job *job)
{
    if (job == NULL)
        return BAND_EINVAL;
    return (int)job_load(job);
}

/* Hand @job back with @reason: the callback's call is the last access to the job. A
 * cancelled job becomes IDLE first, so that the callback may resubmit it. */
static void exec_handback(band_exec *ex, band_job *job, int reason)
{
    if (reason == BAND_ECANCELED) {
        __atomic_store_n(&job->_state, (uint32_t)BAND_JOB_IDLE, __ATOMIC_RELEASE);
        atomic_fetch_add_explicit(&ex->cancelled, 1, memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(&ex->drained, 1, memory_order_relaxed);
    }
    if (ex->handback != NULL)
        ex->handback(job, reason, ex->handback_ctx);
}

/* A job popped during an immediate shutdown: drained, unless it was cancelled before. */
static void exec_drain_one(band_exec *ex, band_job *job)
{
    if (job_cas(job, BAND_JOB_QUEUED, BAND_JOB_DRAINED))
        exec_handback(ex, job, BAND_ECLOSED);
    else
        exec_handback(ex, job, BAND_ECANCELED);
}

/* Bump a counter that only the calling worker writes. Release, so that a reader that
 * loads `completed` (acquire) and then `started` never sees more completions than starts. */
static void own_inc(atomic_uint_fast64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_release);
}

/* Run one popped job on worker @w, or hand it back if it was cancelled while queued.
 * @start is the time it was taken (see exec_worker). Returns the time its function
 * returned, or 0 when it was handed back. */
static band_time exec_one(struct exec_worker *w, band_job *job, band_time start)
{
    band_exec *ex = w->ex;
    if (!job_cas(job, BAND_JOB_QUEUED, BAND_JOB_RUNNING)) {
        exec_handback(ex, job, BAND_ECANCELED);
        return 0;
    }
    band_job_fn *fn = job->fn;
    band_time enq = job->_enq;
    band_histo_record(&w->queue_time, start > enq ? (uint64_t)(start - enq) : 0);
    own_inc(&w->started);
    fn(job); /* the job belongs to its function from here on */
    band_time end = exec_clock(ex);
    band_histo_record(&w->service_time, end > start ? (uint64_t)(end - start) : 0);
    own_inc(&w->completed);
    return end;
}

/*
 * A worker's loop. Clock reads are a large part of a tiny job's cost (about a fifth of it
 * on a VM), so a busy worker reads the clock once per job: when it takes the next job
 * without waiting (try_recv succeeded right after the previous job returned), that job's
 * start is the previous job's end. After a wait (or a handback) it reads the clock anew.
 */
static void *exec_worker(void *arg)
{
    struct exec_worker *w = arg;
    band_exec *ex = w->ex;
    band_time last_end = 0; /* 0: read the clock for the next start */
    while (atomic_load_explicit(&ex->mode, memory_order_acquire) != MODE_NOW) {
        band_job *job = NULL;
        int rc = last_end != 0 ? band_chan_try_recv(ex->ch, &job, NULL) : BAND_EAGAIN;
        if (rc == BAND_EAGAIN) {
            rc = band_chan_recv(ex->ch, &job, NULL, BAND_FOREVER, NULL);
            last_end = 0;
        }
        if (rc != 0)
            break; /* closed and empty */
        if (atomic_load_explicit(&ex->mode, memory_order_acquire) == MODE_NOW) {
            exec_drain_one(ex, job);
            break;
        }
        last_end = exec_one(w, job, last_end != 0 ? last_end : exec_clock(ex));
    }
    return NULL;
}

/* Free @ex's memory and its (closed, empty) queue; the workers have been joined. */
static void exec_free(band_exec *ex)
{
    (void)band_chan_destroy(ex->ch);
    (void)pthread_mutex_destroy(&ex->join_mu);
    free(ex->w);
    free(ex);
}

int band_exec_create(band_exec **out, unsigned workers, uint64_t capacity,
                     const band_exec_opts *opts)
{
    static const band_exec_opts none;
    if (opts == NULL)
        opts = &none;
    if (out == NULL || workers == 0 || workers > BAND_EXEC_MAX_WORKERS || capacity == 0 ||
        capacity > BAND_MAX_UNITS)
        return BAND_EINVAL;
    band_exec *ex = calloc(1, sizeof(*ex));
    if (ex == NULL)
        return BAND_ENOMEM;
    ex->w = aligned_alloc(BAND__CACHELINE, workers * sizeof(struct exec_worker));
    if (ex->w == NULL) {
        free(ex);
        return BAND_ENOMEM;
    }
    int rc = band_chan_create(&ex->ch, sizeof(band_job *), capacity, NULL);
    if (rc != 0) {
        free(ex->w);
        free(ex);
        return rc;
    }
    if (pthread_mutex_init(&ex->join_mu, NULL) != 0) {
        (void)band_chan_destroy(ex->ch);
        free(ex->w);
        free(ex);
        return BAND_ENOMEM;
    }
    ex->handback = opts->handback;
    ex->handback_ctx = opts->handback_ctx;
    ex->clock = opts->clock;
    ex->clock_ctx = opts->clock_ctx;
    atomic_init(&ex->mode, MODE_OPEN);
    for (unsigned i = 0; i < workers; i++) {
        struct exec_worker *w = &ex->w[i];
        memset(w, 0, sizeof(*w));
        w->ex = ex;
        atomic_init(&w->started, 0);
        atomic_init(&w->completed, 0);
        band_histo_init(&w->queue_time);
        band_histo_init(&w->service_time);
    }
    for (unsigned i = 0; i < workers; i++) {
        if (pthread_create(&ex->w[i].tid, NULL, exec_worker, &ex->w[i]) != 0) {
            /* Nothing was accepted yet: stop the ones started and give up. */
            atomic_store_explicit(&ex->mode, MODE_NOW, memory_order_release);
            (void)band_chan_close(ex->ch);
            for (unsigned j = 0; j < i; j++)
                (void)pthread_join(ex->w[j].tid, NULL);
            exec_free(ex);
            return BAND_EAGAIN;
        }
        ex->nworkers = i + 1;
    }
    *out = ex;
    return 0;
}

int band_exec_set_name(band_exec *ex, const char *name)
{
    if (ex == NULL)
        return BAND_EINVAL;
    return band_chan_set_name(ex->ch, name); /* the queue carries the executor's name */
}

/* Count a refusal by its code. */
static void exec_count_refusal(band_exec *ex, int rc)
{
    if (rc == BAND_ECLOSED)
        atomic_fetch_add_explicit(&ex->refused_closed, 1, memory_order_relaxed);
    else if (rc == BAND_EAGAIN || rc == BAND_ETIMEDOUT)
        atomic_fetch_add_explicit(&ex->refused_full, 1, memory_order_relaxed);
}

/* Submit @job: with @try_only, try_send; otherwise send until @deadline. */
static int exec_submit(band_exec *ex, band_job *job, band_time deadline, band_cancel *cancel,
                       int try_only)
{
    if (ex == NULL || job == NULL || job->fn == NULL)
        return BAND_EINVAL;
    uint32_t st = job_load(job);
    if (st == BAND_JOB_QUEUED || st == BAND_JOB_CANCELLED)
        return BAND_EINVAL;
    if (atomic_load_explicit(&ex->mode, memory_order_acquire) != MODE_OPEN) {
        exec_count_refusal(ex, BAND_ECLOSED);
        return BAND_ECLOSED;
    }
    job->_enq = exec_clock(ex);
    if (!job_cas(job, st, BAND_JOB_QUEUED))
        return BAND_EINVAL; /* a concurrent submission of the same job won */
    const band_job *elem = job;
    int rc = try_only ? band_chan_try_send(ex->ch, &elem, 0)
                      : band_chan_send(ex->ch, &elem, 0, deadline, cancel);
    if (rc == 0) {
        atomic_fetch_add_explicit(&ex->accepted, 1, memory_order_relaxed);
        return 0;
    }
    exec_count_refusal(ex, rc);
    if (job_cas(job, BAND_JOB_QUEUED, BAND_JOB_IDLE))
        return rc;
    /* A cancel won while the send was being refused (see the header): the cancel promised
     * a handback, and the job is not in the queue, so it is handed back here. */
    exec_handback(ex, job, BAND_ECANCELED);
    return BAND_ECANCELED;
}

int band_exec_run(band_exec *ex, band_job *job, band_time deadline, band_cancel *cancel)
{
    return exec_submit(ex, job, deadline, cancel, 0);
}

int band_exec_try_run(band_exec *ex, band_job *job)
{
    return exec_submit(ex, job, 0, NULL, 1);
}

int band_exec_cancel(band_job *job)
{
    if (job == NULL)
        return BAND_EINVAL;
    if (job_cas(job, BAND_JOB_QUEUED, BAND_JOB_CANCELLED))
        return 0;
    return job_load(job) == BAND_JOB_RUNNING ? BAND_EALREADY : BAND_EINVAL;
}

int band_exec_shutdown(band_exec *ex, int mode)
{
    if (ex == NULL || (mode != BAND_EXEC_DRAIN && mode != BAND_EXEC_NOW))
        return BAND_EINVAL;
    int want = mode == BAND_EXEC_NOW ? MODE_NOW : MODE_DRAIN;
    int cur = atomic_load_explicit(&ex->mode, memory_order_acquire);
    do {
        if (cur >= want)
            return 0;
    } while (!atomic_compare_exchange_weak_explicit(&ex->mode, &cur, want, memory_order_acq_rel,
                                                    memory_order_acquire));
    (void)band_chan_close(ex->ch);
    if (want == MODE_NOW) {
        band_job *job = NULL;
        while (band_chan_try_recv(ex->ch, &job, NULL) == 0)
            exec_drain_one(ex, job);
    }
    return 0;
}

/* 1 when the calling thread is one of @ex's workers. */
static int exec_is_worker(const band_exec *ex)
{
    pthread_t self = pthread_self();
    for (unsigned i = 0; i < ex->nworkers; i++)
        if (pthread_equal(self, ex->w[i].tid))
            return 1;
    return 0;
}

int band_exec_join(band_exec *ex)
{
    if (ex == NULL || exec_is_worker(ex) ||
        atomic_load_explicit(&ex->mode, memory_order_acquire) == MODE_OPEN)
        return BAND_EINVAL;
    (void)pthread_mutex_lock(&ex->join_mu);
    if (!ex->joined) {
        for (unsigned i = 0; i < ex->nworkers; i++)
            (void)pthread_join(ex->w[i].tid, NULL);
        ex->joined = 1;
    }
    (void)pthread_mutex_unlock(&ex->join_mu);
    return 0;
}

int band_exec_destroy(band_exec *ex)
{
    if (ex == NULL)
        return 0;
    /* A join in progress holds join_mu: busy too (destroy never waits for it). */
    if (pthread_mutex_trylock(&ex->join_mu) != 0)
        return BAND_EBUSY;
    int joined = ex->joined;
    (void)pthread_mutex_unlock(&ex->join_mu);
    if (!joined)
        return BAND_EBUSY; /* not shut down, or its workers not joined yet */
    exec_free(ex);
    return 0;
}

int band_exec_get_stats(const band_exec *ex, band_exec_stats *out)
{
    if (ex == NULL || out == NULL)
        return BAND_EINVAL;
    band_chan_stats cs;
    memset(out, 0, sizeof(*out));
    if (band_chan_get_stats(ex->ch, &cs) == 0) {
        memcpy(out->name, cs.name, sizeof(out->name));
        out->capacity = cs.capacity;
        out->queued = cs.len;
        out->waiting = cs.waiting_senders;
    }
    out->workers = ex->nworkers;
    out->closed = atomic_load_explicit(&ex->mode, memory_order_acquire) != MODE_OPEN;
    uint64_t started = 0, completed = 0;
    for (unsigned i = 0; i < ex->nworkers; i++) {
        /* completed first: then started >= completed even while jobs finish meanwhile */
        completed += atomic_load_explicit(&ex->w[i].completed, memory_order_acquire);
        started += atomic_load_explicit(&ex->w[i].started, memory_order_acquire);
    }
    out->running = started - completed;
    out->completed = completed;
    out->accepted = atomic_load_explicit(&ex->accepted, memory_order_relaxed);
    out->refused_full = atomic_load_explicit(&ex->refused_full, memory_order_relaxed);
    out->refused_closed = atomic_load_explicit(&ex->refused_closed, memory_order_relaxed);
    out->cancelled = atomic_load_explicit(&ex->cancelled, memory_order_relaxed);
    out->drained = atomic_load_explicit(&ex->drained, memory_order_relaxed);
    return 0;
}

int band_exec_get_histos(const band_exec *ex, band_histo_snapshot *queue_time,
                         band_histo_snapshot *service_time)
{
    if (ex == NULL)
        return BAND_EINVAL;
    band_histo_snapshot part;
    if (queue_time != NULL)
        memset(queue_time, 0, sizeof(*queue_time));
    if (service_time != NULL)
        memset(service_time, 0, sizeof(*service_time));
    for (unsigned i = 0; i < ex->nworkers; i++) {
        if (queue_time != NULL) {
            (void)band_histo_read(&ex->w[i].queue_time, &part);
            (void)band_histo_merge(queue_time, &part);
        }
        if (service_time != NULL) {
            (void)band_histo_read(&ex->w[i].service_time, &part);
            (void)band_histo_merge(service_time, &part);
        }
    }
    return 0;
}

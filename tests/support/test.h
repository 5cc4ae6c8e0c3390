/* SPDX-License-Identifier: MIT */
/*
 * test.h - cmocka includes and small helpers shared by band's unit and stress tests.
 *
 * Rules every test follows:
 *  - assert_* only on the test's main thread: a failed assert longjmps to a jmp_buf set on
 *    that thread. Worker threads record what they saw (struct test_thread, struct
 *    wake_rec) and the main thread checks it after join.
 *  - No sleep-then-assert. When a test must wait for another thread to reach a state
 *    (for example "the worker is queued"), it polls that state with test_wait_until(),
 *    which is bounded and reports failure instead of hanging.
 *  - Fresh fixture per test (cmocka setup/teardown).
 */
#ifndef BAND_TEST_H
#define BAND_TEST_H

/* cmocka needs these before its header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "band/band.h"

/* cmocka 1.1.5 has no assert_uint_equal; its integers are LargestIntegralType (uintmax_t). */
#define assert_u64_equal(a, b) assert_int_equal((uint64_t)(a), (uint64_t)(b))

/* The number of elements of an array. */
#define TEST_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------------------ */
/* Wake recording                                                                       */

/*
 * A log of wakes in the order they ran, shared by several recorders. MT-safe (an atomic
 * index); each entry is the id of the recorder that was woken.
 */
#define WAKE_LOG_MAX 256
struct wake_log {
    atomic_uint len;
    int ids[WAKE_LOG_MAX];
    int statuses[WAKE_LOG_MAX];
};

struct wake_rec;
/* Optional hook run inside the wake (after the recorder's counters are updated). */
typedef void wake_hook_fn(struct wake_rec *r);

/*
 * A waiter with a wake counter: the wake function increments count, stores the status it
 * saw, appends to the shared log (if any) and runs the hook (if any). The waiter is the
 * first member, so a wake function converts its band_waiter * back with a cast.
 */
struct wake_rec {
    band_waiter w;
    int id;
    atomic_int count;      /* wakes received: must end up 0 or 1 per submission */
    atomic_int status;     /* band_waiter_status() seen inside the wake */
    atomic_int pending_in; /* band_waiter_is_pending() seen inside the wake */
    pthread_t thread;      /* the thread the (last) wake ran on */
    struct wake_log *log;  /* optional */
    wake_hook_fn *hook;    /* optional: may call back into band */
    void *ctx;             /* for the hook */
    int hook_rc;           /* for the hook to record a result */
    uint64_t hook_u64;     /* for the hook to record a result */
};

/* Initialise @r with id @id, logging into @log (may be NULL). */
void wake_rec_init(struct wake_rec *r, int id, struct wake_log *log);

/* The wake function behind every wake_rec. */
void wake_rec_fn(band_waiter *w);

void wake_log_init(struct wake_log *log);

/* ------------------------------------------------------------------------------------ */
/* Threads                                                                              */

/*
 * A worker thread that runs fn(arg) and records an int result. test_thread_join() returns
 * it, so the main thread can assert on it.
 */
struct test_thread {
    pthread_t tid;
    int (*fn)(void *arg);
    void *arg;
    atomic_int done;
    int rc;
};

/* Start @t; returns 0 or the pthread_create error. */
int test_thread_start(struct test_thread *t, int (*fn)(void *), void *arg);

/* Join @t and return its recorded result. */
int test_thread_join(struct test_thread *t);

/*
 * Poll @cond(@arg) until it returns true or @timeout_ns passes (yielding, with short
 * sleeps after a while). Returns true when the condition held. Used to wait for another
 * thread to reach a state, never to wait "long enough".
 */
bool test_wait_until(bool (*cond)(void *arg), void *arg, band_time timeout_ns);

/* Condition helpers for test_wait_until(): the semaphore has at least N queued waiters. */
struct sem_waiters_cond {
    band_sem *sem;
    uint64_t waiters;
};
bool test_cond_sem_waiters(void *arg);

/* ------------------------------------------------------------------------------------ */
/* Random numbers (deterministic, seeded)                                               */

/* splitmix64: small, good enough, and the same on every platform. */
static inline uint64_t test_rng_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* A number in [lo, hi]. */
static inline uint64_t test_rng_range(uint64_t *state, uint64_t lo, uint64_t hi)
{
    return lo + test_rng_next(state) % (hi - lo + 1);
}

/* 1 when the build runs under a sanitizer that slows code down a lot (TSan, ASan). */
int test_under_sanitizer(void);

/* 1 when the build runs under ThreadSanitizer. */
int test_under_tsan(void);

/*
 * Replay a fuzz corpus: call @run(data, len, path, ctx) once for every file in each of the
 * directories @dirs[0..@ndirs-1] (files starting with '.' are skipped). @run returns 0 when
 * the input passed, non-zero after printing why it failed. Returns the number of failures
 * (an unreadable directory counts as one); *@files receives the number of files run.
 */
typedef int test_corpus_fn(const uint8_t *data, size_t len, const char *path, void *ctx);
unsigned test_replay_corpus(char **dirs, int ndirs, test_corpus_fn *run, void *ctx,
                            unsigned *files);

#endif /* BAND_TEST_H */

/* SPDX-License-Identifier: MIT */
/*
 * parker.c - futex (Linux) or condition-variable parking for blocking front ends.
 */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* syscall() */
#endif
#include "core/parker.h"

#include <stdbool.h>

#include <errno.h>
#include <sched.h>
#include <time.h>

/* How long to spin before sleeping: the order of a hand-off between two running threads,
 * and far less than a futex sleep and wake (tens of microseconds on a virtual machine).
 * Bounded by time, since a pause instruction costs anything from 1 to 40 ns by CPU. */
#define BAND__PARK_SPIN_NS       (4 * BAND_USEC)
#define BAND__PARK_SPIN_CHECK    16 /* pauses between clock reads */
#define BAND__PARK_SPIN_YIELD_NS (1 * BAND_USEC)

#if defined(BAND__PARKER_FUTEX)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { PARKER_EMPTY = 0, PARKER_PARKED = 1, PARKER_NOTIFIED = 2, PARKER_INTERRUPTED = 3 };

void band__parker_init(struct band__parker *p)
{
    __atomic_store_n(&p->state, PARKER_EMPTY, __ATOMIC_RELAXED);
}

void band__parker_destroy(struct band__parker *p)
{
    (void)p;
}

/* Sleep while *addr == val, until the absolute CLOCK_MONOTONIC @deadline. */
static long futex_wait_until(uint32_t *addr, uint32_t val, band_time deadline)
{
    struct timespec ts;
    struct timespec *tsp = NULL;
    if (deadline != BAND_FOREVER) {
        ts.tv_sec = (time_t)(deadline / BAND_SEC);
        ts.tv_nsec = (long)(deadline % BAND_SEC);
        tsp = &ts;
    }
    /* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC timeout. */
    return syscall(SYS_futex, addr, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, val, tsp, NULL,
                   FUTEX_BITSET_MATCH_ANY);
}

/*
 * ThreadSanitizer runs a signal handler only when the thread next enters a function it
 * intercepts, and the raw futex call is none: a handler that would end this park
 * (band_cancel_request() from a signal handler) would otherwise wait forever. Such builds
 * sleep at most 10 ms at a time and make one intercepted call after each sleep.
 */
#if defined(__SANITIZE_THREAD__)
#define BAND__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BAND__TSAN 1
#endif
#endif
static void sanitizer_signal_point(void)
{
#if defined(BAND__TSAN)
    (void)usleep(0);
#endif
}

static band_time sanitizer_sleep_until(band_time deadline)
{
#if defined(BAND__TSAN)
    band_time cap = band_now() + 10 * BAND_MSEC;
    return deadline < cap ? deadline : cap;
#else
    return deadline;
#endif
}

/*
 * Spin until notified or interrupted (1) or until the spin budget is spent (0). A
 * notification that lands while the waiter spins costs the notifier no system call.
 * Past BAND__PARK_SPIN_YIELD_NS the spin yields the processor between checks: with more
 * threads than cores, the thread that will notify this one (or the one just woken ahead
 * of it) may be waiting for this core.
 */
static int parker_spin(const struct band__parker *p)
{
    band_time start = 0;
    for (;;) {
        for (int i = 0; i < BAND__PARK_SPIN_CHECK; i++) {
            uint32_t st = __atomic_load_n(&p->state, __ATOMIC_ACQUIRE);
            if (st == PARKER_NOTIFIED || st == PARKER_INTERRUPTED)
                return 1;
            band__cpu_relax();
        }
        band_time now = band_now();
        if (start == 0)
            start = now;
        else if (now - start >= BAND__PARK_SPIN_NS)
            return 0;
        else if (now - start >= BAND__PARK_SPIN_YIELD_NS)
            (void)sched_yield();
    }
}

int band__parker_park(struct band__parker *p, band_time deadline)
{
    (void)parker_spin(p);
    for (;;) {
        uint32_t st = __atomic_load_n(&p->state, __ATOMIC_ACQUIRE);
        if (st == PARKER_NOTIFIED)
            return 0;
        if (st == PARKER_INTERRUPTED) {
            /* Consume it; a notification that lands meanwhile wins. */
            if (__atomic_compare_exchange_n(&p->state, &st, PARKER_EMPTY, false, __ATOMIC_ACQUIRE,
                                            __ATOMIC_ACQUIRE))
                return BAND_ECANCELED;
            continue;
        }
        if (st == PARKER_EMPTY && !__atomic_compare_exchange_n(&p->state, &st, PARKER_PARKED, false,
                                                               __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
            continue; /* notified meanwhile */
        if (deadline != BAND_FOREVER && band_now() >= deadline) {
            uint32_t parked = PARKER_PARKED;
            if (__atomic_compare_exchange_n(&p->state, &parked, PARKER_EMPTY, false,
                                            __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
                return BAND_ETIMEDOUT;
            continue; /* notified meanwhile */
        }
        (void)futex_wait_until(&p->state, PARKER_PARKED, sanitizer_sleep_until(deadline));
        sanitizer_signal_point();
    }
}

void band__parker_unpark(struct band__parker *p)
{
    if (__atomic_exchange_n(&p->state, PARKER_NOTIFIED, __ATOMIC_RELEASE) == PARKER_PARKED)
        (void)syscall(SYS_futex, &p->state, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
}

void band__parker_interrupt(struct band__parker *p)
{
    uint32_t st = __atomic_load_n(&p->state, __ATOMIC_ACQUIRE);
    while (st == PARKER_EMPTY || st == PARKER_PARKED) {
        if (__atomic_compare_exchange_n(&p->state, &st, PARKER_INTERRUPTED, false, __ATOMIC_RELEASE,
                                        __ATOMIC_ACQUIRE)) {
            if (st == PARKER_PARKED)
                (void)syscall(SYS_futex, &p->state, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL,
                              0);
            return;
        }
    }
}

#else /* portable fallback */

void band__parker_init(struct band__parker *p)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&p->mu, NULL);
    p->notified = 0;
    p->interrupted = 0;
}

void band__parker_destroy(struct band__parker *p)
{
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
}

int band__parker_park(struct band__parker *p, band_time deadline)
{
    int rc = 0;
    pthread_mutex_lock(&p->mu);
    while (!p->notified) {
        if (p->interrupted) {
            p->interrupted = 0;
            rc = BAND_ECANCELED;
            break;
        }
        if (deadline == BAND_FOREVER) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        struct timespec ts = {(time_t)(deadline / BAND_SEC), (long)(deadline % BAND_SEC)};
        if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT && !p->notified &&
            !p->interrupted) {
            rc = BAND_ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void band__parker_unpark(struct band__parker *p)
{
    pthread_mutex_lock(&p->mu);
    p->notified = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Not async-signal-safe: the portable parker has only a mutex and a condition variable. */
void band__parker_interrupt(struct band__parker *p)
{
    pthread_mutex_lock(&p->mu);
    if (!p->notified)
        p->interrupted = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

#endif

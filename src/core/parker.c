/*
 * parker.c - futex (Linux) or condition-variable parking for blocking front ends.
 */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* syscall() */
#endif
#include "core/parker.h"

#include <stdbool.h>

#include <errno.h>
#include <time.h>

/* How long to spin before sleeping: the order of a hand-off between two running threads,
 * and far less than a futex sleep and wake (tens of microseconds on a virtual machine).
 * Bounded by time, since a pause instruction costs anything from 1 to 40 ns by CPU. */
#define BAND__PARK_SPIN_NS    (4 * BAND_USEC)
#define BAND__PARK_SPIN_CHECK 16 /* pauses between clock reads */

#if defined(BAND__PARKER_FUTEX)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { PARKER_EMPTY = 0, PARKER_PARKED = 1, PARKER_NOTIFIED = 2 };

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

/* Spin until notified (1) or until the spin budget is spent (0). */
static int parker_spin(const struct band__parker *p)
{
    band_time until = 0;
    for (;;) {
        for (int i = 0; i < BAND__PARK_SPIN_CHECK; i++) {
            if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == PARKER_NOTIFIED)
                return 1;
            band__cpu_relax();
        }
        band_time now = band_now();
        if (until == 0)
            until = now + BAND__PARK_SPIN_NS;
        else if (now >= until)
            return 0;
    }
}

int band__parker_park(struct band__parker *p, band_time deadline)
{
    if (parker_spin(p))
        return 0;
    for (;;) {
        uint32_t st = __atomic_load_n(&p->state, __ATOMIC_ACQUIRE);
        if (st == PARKER_NOTIFIED)
            return 0;
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
        (void)futex_wait_until(&p->state, PARKER_PARKED, deadline);
    }
}

void band__parker_unpark(struct band__parker *p)
{
    if (__atomic_exchange_n(&p->state, PARKER_NOTIFIED, __ATOMIC_RELEASE) == PARKER_PARKED)
        (void)syscall(SYS_futex, &p->state, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
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
        if (deadline == BAND_FOREVER) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        struct timespec ts = {(time_t)(deadline / BAND_SEC), (long)(deadline % BAND_SEC)};
        if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT && !p->notified) {
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

#endif

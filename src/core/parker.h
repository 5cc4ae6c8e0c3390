/* SPDX-License-Identifier: MIT */
/*
 * parker.h - lets one thread sleep until another notifies it, or until a deadline.
 *
 * One parker serves one wait: the sleeping thread owns it (usually on its stack) and one
 * other thread notifies it once. On Linux it is a futex word; elsewhere a mutex and a
 * condition variable on CLOCK_MONOTONIC.
 */
#ifndef BAND_CORE_PARKER_H
#define BAND_CORE_PARKER_H

#include <stdint.h>

#include "core/internal.h"

#if defined(__linux__)
#define BAND__PARKER_FUTEX 1
struct band__parker {
    uint32_t state; /* EMPTY, PARKED, NOTIFIED or INTERRUPTED; accessed atomically */
};
#else
#include <pthread.h>
struct band__parker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int notified;
    int interrupted;
};
#endif

void band__parker_init(struct band__parker *p);
void band__parker_destroy(struct band__parker *p);

/*
 * Sleep until notified (returns 0), until interrupted (returns BAND_ECANCELED) or until
 * @deadline passes (returns BAND_ETIMEDOUT). A notification or an interruption that
 * arrives before the call is not lost. A notification wins over an interruption, and an
 * interruption is consumed by the park that reports it (the next park sleeps again).
 * Spins briefly before sleeping: on a hand-off between two running threads that saves
 * both system calls.
 */
int band__parker_park(struct band__parker *p, band_time deadline);

/*
 * Wake the parked thread (or let its next park return at once). May be called once per
 * wait, from any thread. After the notification is published the sleeper may return and
 * free the parker; the futex wake that may follow only names the address to the kernel,
 * which touches no memory there.
 */
void band__parker_unpark(struct band__parker *p);

/*
 * Make the parked thread's current (or next) park return BAND_ECANCELED, unless it was
 * notified. Async-signal-safe with the futex parker (one compare-and-swap and a futex
 * wake); the sleeper may free the parker once its park returned, as with unpark.
 */
void band__parker_interrupt(struct band__parker *p);

#endif /* BAND_CORE_PARKER_H */

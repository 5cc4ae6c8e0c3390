/* SPDX-License-Identifier: MIT */
/*
 * sync_internal.h - test hooks into the oneshot, the watch and the broadcast (never
 * installed).
 *
 * The hooks exist only in the test-only libraries (band_testing, band_fuzzing), which
 * define BAND_TESTING. libband.so and libband.a neither contain nor export them.
 */
#ifndef BAND_SYNC_INTERNAL_H
#define BAND_SYNC_INTERNAL_H

#include <pthread.h>

#include "band/broadcast.h"
#include "band/oneshot.h"
#include "band/watch.h"

#ifdef BAND_TESTING
/* The object's internal mutex, so that a test can hold it from another thread and show
 * that the non-waiting operations complete without taking it. */
pthread_mutex_t *band__oneshot_lock(band_oneshot *o);
pthread_mutex_t *band__watch_lock(band_watch *w);
pthread_mutex_t *band__broadcast_lock(band_broadcast *b);

/* Verify the object's state word against its queue, under its lock. Return 0 when they
 * agree, otherwise the negated source line of the first failed check. Exact whenever no
 * other thread is operating on the object (no send half done, no waiter being queued). */
int band__oneshot_check(band_oneshot *o);
int band__watch_check(band_watch *w);

/* Set a watch's version (to reach UINT64_MAX without 2^64 sends). */
void band__watch_set_version(band_watch *w, uint64_t v);
#endif /* BAND_TESTING */

#endif

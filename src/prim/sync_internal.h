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

/* Set a watch's version (to reach UINT64_MAX without 2^64 sends). */
void band__watch_set_version(band_watch *w, uint64_t v);
#endif /* BAND_TESTING */

#endif

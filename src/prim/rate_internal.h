/* SPDX-License-Identifier: MIT */
/*
 * rate_internal.h - test hooks of the rate budget, compiled only into the libraries that
 * define BAND_TESTING. libband.so and libband.a neither contain nor export them.
 */
#ifndef BAND_RATE_INTERNAL_H
#define BAND_RATE_INTERNAL_H

#include "band/rate.h"

#ifdef BAND_TESTING
/* Call @fn(@ctx) once, in the next band_rate_try_acquire() on @r that reaches its
 * compare-and-swap, just before it: a single-threaded test interleaves another operation
 * there, as a racing thread would, and the CAS then fails and retries. The hook is cleared
 * before it is called; NULL @fn clears it. Not MT-safe. */
void band__rate_cas_hook(band_rate *r, void (*fn)(void *ctx), void *ctx);
#endif

#endif /* BAND_RATE_INTERNAL_H */

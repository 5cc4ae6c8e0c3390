/* SPDX-License-Identifier: MIT */
/*
 * broadcast_internal.h - hooks into the broadcast channel for tests (never installed).
 *
 * The hooks exist only in the test-only libraries (band_testing, band_fuzzing), which
 * define BAND_TESTING. libband.so and libband.a neither contain nor export them.
 */
#ifndef BAND_BROADCAST_INTERNAL_H
#define BAND_BROADCAST_INTERNAL_H

#include "band/broadcast.h"

#ifdef BAND_TESTING
/**
 * band__broadcast_check() - verify @b's invariants under its lock.
 *
 * Returns 0 when they hold, otherwise the negated source line of the first failed check.
 * Exact whenever no other thread is operating on @b.
 */
int band__broadcast_check(const band_broadcast *b);
#endif /* BAND_TESTING */

#endif

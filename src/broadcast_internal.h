/*
 * broadcast_internal.h - hooks into the broadcast channel for tests (never installed).
 */
#ifndef BAND_BROADCAST_INTERNAL_H
#define BAND_BROADCAST_INTERNAL_H

#include "band/broadcast.h"

/**
 * band__broadcast_check() - verify @b's invariants under its lock.
 *
 * Returns 0 when they hold, otherwise the negated source line of the first failed check.
 * Exact whenever no other thread is operating on @b.
 */
BAND_API int band__broadcast_check(const band_broadcast *b);

#endif

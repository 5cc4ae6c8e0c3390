/* SPDX-License-Identifier: MIT */
/*
 * sem_internal.h - hooks into the semaphore for tests and fuzz targets (never installed).
 *
 * The hooks exist only in the test-only libraries (band_testing, band_fuzzing), which
 * define BAND_TESTING. libband.so and libband.a neither contain nor export them.
 */
#ifndef BAND_SEM_INTERNAL_H
#define BAND_SEM_INTERNAL_H

#include "band/sem.h"

#ifdef BAND_TESTING
/**
 * band__sem_check() - verify @s's invariants under its lock.
 *
 * Returns 0 when they hold, otherwise the negated source line of the first failed check.
 * Checked: waiters queued or debt owed => nothing available; the queue's length, unit
 * total and count of smart nodes match its nodes; watchers are smart and not queued; a
 * plain head's partial grant is below what it asked for (a smart head's set-aside may
 * exceed it); available does not exceed the limit (a budget's capacity).
 *
 * Exact only while no other thread operates on @s (tests call it single-threaded or at
 * quiescence): an add-first release in flight briefly leaves permits available beside
 * queued waiters until it takes the lock and hands them on.
 */
int band__sem_check(const band_sem *s);

/* The spin budget of a blocking acquisition before it queues, and its updates. */
#include "prim/sem_priv.h"
#endif /* BAND_TESTING */

#endif

/* SPDX-License-Identifier: MIT */
/*
 * demo_parts.h - the parts of band_demo that live in their own files.
 *
 * Each prints its own table to stdout and returns 0, or 1 when a bound band governs was
 * exceeded or a request did not end exactly once. @quick shortens the run (CI smoke test).
 */
#ifndef BAND_DEMO_PARTS_H
#define BAND_DEMO_PARTS_H

/* Part 4: tenants with weights share eight slots through one band_fair (tenants.c). */
int band_tenants_demo(int quick);

/* Part 5: offered load ramps to 3x capacity; FIFO vs deadline-aware vs adaptive LIFO. */
int demo_overload(int quick);

#endif /* BAND_DEMO_PARTS_H */

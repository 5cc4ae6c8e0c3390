/* SPDX-License-Identifier: MIT */
/*
 * demo_parts.h - the parts of band_demo that live in their own files.
 *
 * Each prints its own table to stdout, with a line that starts "verdict: ", and returns 0,
 * or 1 when a bound band governs was exceeded, a request did not end exactly once or a data
 * file could not be written. @quick shortens the run (CI smoke test). A non-NULL @data_dir
 * is an existing directory: the part writes what it measured there as a TSV file.
 */
#ifndef BAND_DEMO_PARTS_H
#define BAND_DEMO_PARTS_H

/* Part 4: tenants with weights share eight slots through one band_fair (tenants.c);
 * tenants.tsv. */
int band_tenants_demo(int quick, const char *data_dir);

/* Part 5: offered loads from 0.5x to 3x capacity in front of one server; FIFO, deadline-aware
 * and adaptive LIFO queues (demo_overload.c); overload.tsv. */
int demo_overload(int quick, const char *data_dir);

#endif /* BAND_DEMO_PARTS_H */

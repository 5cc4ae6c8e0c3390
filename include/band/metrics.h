/* SPDX-License-Identifier: MIT */
/**
 * @file band/metrics.h
 * @brief Every bound's counters in one snapshot, in Prometheus text format.
 *
 * A program registers the primitives an operator should see (semaphores and budgets,
 * channels, rate budgets, front doors) and any latency histograms (band/histo.h: a
 * channel's send waits, an executor's queue and service times, a front door's hold
 * times), each under a name. band_metrics_write() then renders one consistent-per-primitive
 * snapshot as Prometheus text exposition format (version 0.0.4): gauges for what is held and
 * waiting now, counters for grants and for refusals by reason, and histograms in seconds. A bound
 * whose waiters and wait time grow while the others idle is the bottleneck.
 *
 * The registry does not own what it lists: each primitive and histogram must outlive the
 * registry (or be removed by destroying the registry first). Registration and writing are
 * for one thread at a time (the registry keeps its scratch copies of the counters); writing
 * is MT-safe against the primitives' own use (each is read through its get_stats / read
 * function).
 */
#ifndef BAND_METRICS_H
#define BAND_METRICS_H

#include <stddef.h>
#include <stdio.h>

#include "band/chan.h"
#include "band/core.h"
#include "band/error.h"
#include "band/front_door.h"
#include "band/histo.h"
#include "band/rate.h"
#include "band/sem.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A registry of what to export (opaque): created with band_metrics_create(). */
typedef struct band_metrics band_metrics;

/**
 * @brief A registry of at most @p max_entries entries (> 0).
 *
 * Returns 0, BAND_EINVAL (NULL @p out, @p max_entries 0 or too large to allocate) or
 * BAND_ENOMEM; on error *@p out is untouched. MT-safe. Free it with
 * band_metrics_destroy().
 *
 * @param[out] out     Receives the registry; must not be NULL. The caller owns it.
 * @param max_entries  The most entries it can hold, at least 1.
 * @return 0, BAND_EINVAL or BAND_ENOMEM as described above.
 */
BAND_API int band_metrics_create(band_metrics **out, size_t max_entries);

/**
 * @brief Free the registry (not what it lists).
 *
 * NULL is a no-op. Not MT-safe against other calls on @p m. Returns 0.
 *
 * @param m  The registry, or NULL.
 * @return 0.
 */
BAND_API int band_metrics_destroy(band_metrics *m);

/**
 * @brief Export semaphore or budget @p s as @p name (@p wait may be NULL).
 *
 * Registration. @p name becomes the label name="..." of every series of the entry (copied;
 * 1..BAND_NAME_MAX-1 bytes; escaped on output). @p wait, where offered, is an optional
 * histogram of waits in nanoseconds that the caller records into (for a channel:
 * band_chan_opts.wait_histo); it is rendered as a Prometheus histogram in seconds. @p hold
 * of a front door is the histogram its band_front_door_opts.hold records into (or NULL).
 * The registry only points at the primitive and the histogram: both stay the caller's.
 * Each returns 0, BAND_EINVAL (NULL @p m or primitive, bad name) or BAND_E2BIG (registry
 * full). One thread at a time per registry.
 *
 * @param m     The registry; must not be NULL.
 * @param name  The entry's name label, 1 to BAND_NAME_MAX - 1 bytes; copied.
 * @param s     The semaphore or budget's semaphore; must not be NULL; must outlive the
 *              registry.
 * @param wait  A histogram of its waits in nanoseconds (band_sem_opts.wait_histo), or NULL.
 * @return 0, BAND_EINVAL or BAND_E2BIG as described above.
 */
BAND_API int band_metrics_add_sem(band_metrics *m, const char *name, const band_sem *s,
                                  const band_histo *wait);

/**
 * @brief Export channel @p c as @p name (@p wait may be NULL); returns as
 *        band_metrics_add_sem().
 *
 * One thread at a time per registry.
 *
 * @param m     The registry; must not be NULL.
 * @param name  The entry's name label, 1 to BAND_NAME_MAX - 1 bytes; copied.
 * @param c     The channel; must not be NULL; must outlive the registry.
 * @param wait  A histogram of its send waits in nanoseconds (band_chan_opts.wait_histo),
 *              or NULL.
 * @return 0, BAND_EINVAL or BAND_E2BIG as band_metrics_add_sem().
 */
BAND_API int band_metrics_add_chan(band_metrics *m, const char *name, const band_chan *c,
                                   const band_histo *wait);

/**
 * @brief Export rate budget @p r as @p name; returns as band_metrics_add_sem().
 *
 * One thread at a time per registry.
 *
 * @param m     The registry; must not be NULL.
 * @param name  The entry's name label, 1 to BAND_NAME_MAX - 1 bytes; copied.
 * @param r     The rate budget; must not be NULL; must outlive the registry.
 * @return 0, BAND_EINVAL or BAND_E2BIG as band_metrics_add_sem().
 */
BAND_API int band_metrics_add_rate(band_metrics *m, const char *name, const band_rate *r);

/**
 * @brief Export front door @p d as @p name (@p hold may be NULL); returns as
 *        band_metrics_add_sem().
 *
 * One thread at a time per registry.
 *
 * @param m     The registry; must not be NULL.
 * @param name  The entry's name label, 1 to BAND_NAME_MAX - 1 bytes; copied.
 * @param d     The front door; must not be NULL; must outlive the registry.
 * @param hold  The histogram its band_front_door_opts.hold records into, or NULL.
 * @return 0, BAND_EINVAL or BAND_E2BIG as band_metrics_add_sem().
 */
BAND_API int band_metrics_add_front_door(band_metrics *m, const char *name,
                                         const band_front_door *d, const band_histo *hold);

/**
 * @brief A histogram of durations in nanoseconds under the metric family @p family (a
 *        Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*, rendered with the suffix
 *        _seconds), labelled name=@p name, with the help text @p help (copied; may be NULL).
 *
 * Entries sharing a family share its HELP and TYPE lines. Returns as the others, and
 * BAND_EINVAL for an invalid family name. One thread at a time per registry.
 *
 * @param m       The registry; must not be NULL.
 * @param family  The metric family: [a-zA-Z_:][a-zA-Z0-9_:]*, 1 to BAND_NAME_MAX - 10
 *                bytes (room for the _seconds suffix); copied.
 * @param name    The entry's name label, 1 to BAND_NAME_MAX - 1 bytes; copied.
 * @param help    The HELP text, or NULL for none; copied, at most its first 127 bytes.
 * @param h       The histogram; must not be NULL; must outlive the registry.
 * @return 0, BAND_EINVAL or BAND_E2BIG as band_metrics_add_sem().
 */
BAND_API int band_metrics_add_histo(band_metrics *m, const char *family, const char *name,
                                    const char *help, const band_histo *h);

/**
 * @brief Render every entry into @p buf (@p cap bytes, NUL-terminated).
 *
 * Returns 0 with *@p len (when not NULL) set to the text's length; BAND_E2BIG when @p cap is too
 * small: *@p len is then the length needed (allocate *@p len + 1 and call again) and @p buf holds
 * a truncated, NUL-terminated prefix; BAND_EINVAL for NULL @p m or @p buf with @p cap > 0.
 * Histogram buckets are cumulative at 1 us, 10 us, 100 us, 1 ms, 10 ms, 100 ms, 1 s, 10 s
 * and +Inf; a bucket counts the values whose log bucket (band/histo.h) lies wholly at or
 * below its bound, so it never counts a value above the bound. One thread at a time per
 * registry (it keeps its scratch copies of the counters in @p m); MT-safe against the
 * primitives' own use.
 *
 * @param m         The registry; must not be NULL.
 * @param[out] buf  The buffer of @p cap bytes; NULL only with @p cap 0 (to learn the
 *                  length).
 * @param cap       The size of @p buf in bytes.
 * @param[out] len  Receives the text's length (or the length needed), or NULL.
 * @return 0, BAND_E2BIG or BAND_EINVAL as described above.
 */
BAND_API int band_metrics_write(const band_metrics *m, char *buf, size_t cap, size_t *len);

/**
 * @brief band_metrics_write() to @p f.
 *
 * Returns 0, BAND_EINVAL (NULL argument), BAND_ENOMEM, or BAND_E2BIG when the counters
 * kept outgrowing the buffer through four attempts (a stream error stays in ferror(@p f)).
 * One thread at a time per registry, as band_metrics_write().
 *
 * @param m  The registry; must not be NULL.
 * @param f  The stream written to; must not be NULL.
 * @return 0, BAND_EINVAL, BAND_ENOMEM or BAND_E2BIG as described above.
 */
BAND_API int band_metrics_fprint(const band_metrics *m, FILE *f);

#ifdef __cplusplus
}
#endif
#endif /* BAND_METRICS_H */

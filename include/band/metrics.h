/* SPDX-License-Identifier: MIT */
/**
 * @file band/metrics.h
 * @brief Every bound's counters in one snapshot, in Prometheus text format.
 *
 * A program registers the primitives an operator should see (semaphores, budgets,
 * channels, rate budgets, front doors, fair shares, admission sets, capacity tree nodes,
 * adaptive limits, executors, oneshots, watches, broadcasts, wait groups, latches) and any latency
 * histograms (band/histo.h: a channel's send waits, an executor's queue and service times, a front
 * door's hold times), each under a name. band_metrics_write() then renders one
 * consistent-per-primitive snapshot as Prometheus text exposition format (version 0.0.4): gauges
 * for what is held and waiting now, counters for grants and for refusals by reason, and histograms
 * in seconds. A bound whose waiters and wait time grow while the others idle is the bottleneck.
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

#include "band/admit.h"
#include "band/broadcast.h"
#include "band/budget.h"
#include "band/cap_tree.h"
#include "band/chan.h"
#include "band/core.h"
#include "band/error.h"
#include "band/exec.h"
#include "band/fair.h"
#include "band/front_door.h"
#include "band/group.h"
#include "band/histo.h"
#include "band/latch.h"
#include "band/limit.h"
#include "band/oneshot.h"
#include "band/rate.h"
#include "band/sem.h"
#include "band/watch.h"

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

/** The most keys band_metrics_add_fair() lists of one fair share. */
#define BAND_METRICS_MAX_KEYS 4096

/**
 * @brief Export budget @p b as @p name: the band_budget_* families.
 *
 * The same series as a semaphore's, under the prefix band_budget (units are bytes or
 * whatever the budget counts). The registry only points at @p b and @p wait. One thread
 * at a time per registry.
 *
 * @param m     The registry.
 * @param name  The label name="..." (copied; 1..BAND_NAME_MAX-1 bytes).
 * @param b     The budget; it must outlive the registry.
 * @param wait  The histogram its band_budget_opts.wait_histo records into, or NULL.
 * @return 0, BAND_EINVAL (NULL @p m or @p b, bad name) or BAND_E2BIG (registry full).
 */
BAND_API int band_metrics_add_budget(band_metrics *m, const char *name, const band_budget *b,
                                     const band_histo *wait);

/**
 * @brief Export fair share @p f as @p name: its totals, each class, and up to
 * @p max_keys keys.
 *
 * Classes are labelled class="0" (the most urgent) and up; keys key="<id>". Each write
 * lists at most @p max_keys live keys (band_fair_list_keys(), in no particular order), so
 * the output stays bounded however many keys the fair holds; band_fair_keys says how many
 * live keys there are. The counters of evicted key states appear as key="evicted"
 * (band_fair_stats.evicted_*), so a sum over the key series never goes backwards while
 * every live key is listed. Allocates room for @p max_keys key snapshots. One thread at a
 * time per registry.
 *
 * @param m         The registry.
 * @param name      The label name="..." (copied; 1..BAND_NAME_MAX-1 bytes).
 * @param f         The fair share; it must outlive the registry.
 * @param max_keys  The most keys listed per write, 0 to BAND_METRICS_MAX_KEYS (0: none,
 *                  only the evicted totals).
 * @return 0, BAND_EINVAL (NULL @p m or @p f, bad name, @p max_keys above
 *         BAND_METRICS_MAX_KEYS), BAND_ENOMEM or BAND_E2BIG (registry full).
 */
BAND_API int band_metrics_add_fair(band_metrics *m, const char *name, const band_fair *f,
                                   size_t max_keys);

/**
 * @brief Export an admission set: the budgets @p sems[0..@p n) that admission requests
 * charge together, as @p name, one series per budget labelled budget="<its name>" (its
 * band_sem_set_name() name, or its index when unnamed).
 *
 * Admission counts in the budgets themselves (band/admit.h): these are the budgets'
 * held units, waiters and refusals, grouped by set. The array is copied; the budgets
 * stay the caller's and must outlive the registry. One thread at a time per registry.
 *
 * @param m     The registry.
 * @param name  The label name="..." (copied; 1..BAND_NAME_MAX-1 bytes).
 * @param sems  The semaphores or budgets (band_budget_sem(), band_cap_tree_sem()).
 * @param n     How many, 1 to BAND_ADMIT_MAX.
 * @return 0, BAND_EINVAL (NULL @p m, @p sems or one of them, bad name, @p n 0 or above
 *         BAND_ADMIT_MAX) or BAND_E2BIG (registry full).
 */
BAND_API int band_metrics_add_admit(band_metrics *m, const char *name, const band_sem *const *sems,
                                    size_t n);

/**
 * @brief Export capacity tree node @p t as @p name (band_cap_tree_get_stats()).
 *
 * Register each node of interest; a node whose parent is registered too carries
 * parent="<the parent's name>" (parent="" otherwise). One thread at a time per registry.
 *
 * @param m     The registry.
 * @param name  The label name="..." (copied; 1..BAND_NAME_MAX-1 bytes).
 * @param t     The node; it must outlive the registry.
 * @return 0, BAND_EINVAL (NULL @p m or @p t, bad name) or BAND_E2BIG (registry full).
 */
BAND_API int band_metrics_add_cap_tree(band_metrics *m, const char *name, const band_cap_tree *t);

/**
 * @brief Export adaptive limit @p l as @p name: its limit, bounds, in flight, round trips
 * and sample counters. One thread at a time per registry.
 *
 * @param m     The registry.
 * @param name  The label name="..." (copied; 1..BAND_NAME_MAX-1 bytes).
 * @param l     The limit; it must outlive the registry.
 * @return 0, BAND_EINVAL (NULL @p m or @p l, bad name) or BAND_E2BIG (registry full).
 */
BAND_API int band_metrics_add_limit(band_metrics *m, const char *name, const band_limit *l);

/**
 * @brief Export executor @p ex as @p name: its queue and job counters, and its queue-time
 * and service-time histograms (band_exec_get_histos()). Allocates two histogram
 * snapshots. One thread at a time per registry.
 *
 * @param m     The registry.
 * @param name  The label name="..." (copied; 1..BAND_NAME_MAX-1 bytes).
 * @param ex    The executor; it must outlive the registry.
 * @return 0, BAND_EINVAL (NULL @p m or @p ex, bad name), BAND_ENOMEM or BAND_E2BIG
 *         (registry full).
 */
BAND_API int band_metrics_add_exec(band_metrics *m, const char *name, const band_exec *ex);

/**
 * @brief Export oneshot @p o as @p name (its state as 0/1 gauges, and its counters). One
 * thread at a time per registry.
 *
 * @param m     The registry.
 * @param name  The label name="..." (copied; 1..BAND_NAME_MAX-1 bytes).
 * @param o     The oneshot; it must outlive the registry.
 * @return 0, BAND_EINVAL (NULL @p m or @p o, bad name) or BAND_E2BIG (registry full).
 */
BAND_API int band_metrics_add_oneshot(band_metrics *m, const char *name, const band_oneshot *o);

/**
 * @brief Export watch @p w as @p name. One thread at a time per registry.
 *
 * @param m     The registry.
 * @param name  The label name="..." (copied; 1..BAND_NAME_MAX-1 bytes).
 * @param w     The watch; it must outlive the registry.
 * @return 0, BAND_EINVAL (NULL @p m or @p w, bad name) or BAND_E2BIG (registry full).
 */
BAND_API int band_metrics_add_watch(band_metrics *m, const char *name, const band_watch *w);

/**
 * @brief Export broadcast @p b as @p name. One thread at a time per registry.
 *
 * @param m     The registry.
 * @param name  The label name="..." (copied; 1..BAND_NAME_MAX-1 bytes).
 * @param b     The broadcast; it must outlive the registry.
 * @return 0, BAND_EINVAL (NULL @p m or @p b, bad name) or BAND_E2BIG (registry full).
 */
BAND_API int band_metrics_add_broadcast(band_metrics *m, const char *name, const band_broadcast *b);

/**
 * @brief Export wait group @p g as @p name. One thread at a time per registry.
 *
 * @param m     The registry.
 * @param name  The label name="..." (copied; 1..BAND_NAME_MAX-1 bytes).
 * @param g     The group; it must outlive the registry.
 * @return 0, BAND_EINVAL (NULL @p m or @p g, bad name) or BAND_E2BIG (registry full).
 */
BAND_API int band_metrics_add_group(band_metrics *m, const char *name, const band_group *g);

/**
 * @brief Export latch @p l as @p name. One thread at a time per registry.
 *
 * @param m     The registry.
 * @param name  The label name="..." (copied; 1..BAND_NAME_MAX-1 bytes).
 * @param l     The latch; it must outlive the registry.
 * @return 0, BAND_EINVAL (NULL @p m or @p l, bad name) or BAND_E2BIG (registry full).
 */
BAND_API int band_metrics_add_latch(band_metrics *m, const char *name, const band_latch *l);

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
 * @brief The registry's text in a buffer of its own, allocated with malloc().
 *
 * Sizes the text with band_metrics_write(), allocates a quarter more (the counters move
 * between sizing and writing) and writes; when the counters outgrew even that it tries
 * again, four times at most. On success *@p out is a NUL-terminated string of *@p len
 * bytes that the caller owns and frees with free(); on any error *@p out is NULL and
 * nothing is allocated. One thread at a time per registry, as band_metrics_write().
 *
 * @param m          The registry; must not be NULL.
 * @param[out] out   Receives the text; must not be NULL.
 * @param[out] len   Receives the text's length, or NULL.
 * @return 0; BAND_EINVAL (NULL @p m or @p out), BAND_ENOMEM (out of memory) or BAND_E2BIG
 *         (the counters kept outgrowing the buffer through four attempts).
 */
BAND_API int band_metrics_render(const band_metrics *m, char **out, size_t *len);

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

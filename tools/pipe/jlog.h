/* SPDX-License-Identifier: MIT */
/*
 * jlog.h - the JSON lines event log (--log FILE.jsonl): one object per line per event of a
 * tile, so a run can be replayed with jq, e.g. the start-time histogram
 *   jq -r 'select(.event=="tile_started") | .ts' run.jsonl | cut -c1-19 | uniq -c
 *
 * Every line has
 *   "ts"        wall-clock time, UTC ISO 8601 with milliseconds ("2026-12-02T05:31:07.123Z")
 *   "t"         seconds since the run began (a number with 3 decimals)
 *   "event"     tile_started, stage_start, stage_end, tile_done, tile_failed, tile_skipped,
 *               tile_abandoned (whatever the caller passes)
 *   "tile", "source"  the tile's name and source (null when unset)
 *   "stage"     the stage's name, or null when the event is not a stage's
 *   "reserved"  bytes of the memory budget the tile holds
 *   "waited_ms" {"descriptors": ms, "connections": ms, ...}: every budget, time waited so far
 * and, on stage_end only, "bytes" (fetch: body_bytes, decode: warped_bytes, write:
 * output_bytes), with "attempts" and "throttled" on fetch's; on the final events
 * (tile_done, tile_failed, tile_skipped, tile_abandoned) "result", "reason" and "detail".
 * Strings are escaped for JSON (quote, backslash, control characters as \uXXXX or the short
 * escapes); valid UTF-8 passes through, a byte that is not valid UTF-8 becomes U+FFFD.
 *
 * A struct jlog is used from one thread at a time (the loop thread).
 */
#ifndef PIPE_JLOG_H
#define PIPE_JLOG_H

#include <stddef.h>

#include <band/band.h>

#include "tile.h"

struct jlog;

/* Create (or truncate) @path and take the offset between band's clock and the wall clock
 * that "ts" uses. Returns the log, or NULL with a message in @err (the path and strerror)
 * when the file cannot be opened or memory runs out. */
struct jlog *jlog_open(const char *path, char *err, size_t errlen);

/* Append one line for @event of tile @t at @now (band_now() time), "t" counted from @t0.
 * @stage is an enum pipe_stage, or -1 (any value out of range) for "stage": null. A NULL
 * @j does nothing; a NULL @t logs "tile" and "source" as null and no tile fields. Write
 * errors are remembered for jlog_close(); the line is buffered (not flushed). */
void jlog_event(struct jlog *j, const struct tile *t, const char *event, int stage, band_time now,
                band_time t0);

/* Flush and close the file and free @j. Returns 0, or -1 when any write, the flush or the
 * close failed (the log is then incomplete). NULL returns 0. */
int jlog_close(struct jlog *j);

#endif /* PIPE_JLOG_H */

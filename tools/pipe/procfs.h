/* SPDX-License-Identifier: MIT */
/*
 * procfs.h - what the process itself holds, read from /proc/self: open descriptors, the
 * resident set and its peak. Each function is MT-safe (it opens, reads and closes its own
 * file) and returns 0 when the value is unknown (no /proc, a read error).
 */
#ifndef PIPE_PROCFS_H
#define PIPE_PROCFS_H

#include <stdint.h>

/* Open descriptors now: the entries of /proc/self/fd, not counting the one the listing
 * itself holds. Another thread opening or closing descriptors meanwhile may or may not be
 * counted. 0: unknown. */
uint64_t procfs_open_fds(void);

/* Resident set size now, in bytes (/proc/self/statm, resident pages x page size).
 * 0: unknown. */
uint64_t procfs_rss(void);

/* Peak resident set size of the process so far, in bytes: VmHWM of /proc/self/status, or
 * getrusage's ru_maxrss when that cannot be read. 0: unknown. */
uint64_t procfs_peak_rss(void);

#endif /* PIPE_PROCFS_H */

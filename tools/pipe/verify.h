/* SPDX-License-Identifier: MIT */
/*
 * verify.h - --verify: a sampler thread that checks, every VERIFY_PERIOD_NS, that the
 * process stays inside its budgets (open descriptors, budgeted bytes) and keeps the peaks
 * and the first violation. It reads only /proc/self and the caller's callback, so it can
 * run beside the loop without touching the pipeline's state.
 */
#ifndef PIPE_VERIFY_H
#define PIPE_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include <band/band.h>

#define VERIFY_PERIOD_NS (2 * BAND_MSEC)
#define VERIFY_TEXT_MAX  200

struct verify_limits {
    uint64_t fd_budget;    /* open descriptors allowed; 0: not checked */
    uint64_t bytes_budget; /* budgeted bytes allowed; 0: not checked */
    /* Bytes the process holds against its memory budget now. Called on the sampler thread
     * concurrently with everything else, so it must be MT-safe (an atomic load). NULL: not
     * sampled (peak_bytes stays 0). */
    uint64_t (*budgeted_bytes)(void *arg);
    void *arg;
};

struct verify_result {
    uint64_t peak_fds;   /* largest procfs_open_fds() seen (the sampler's listing excluded) */
    uint64_t peak_rss;   /* largest procfs_rss() seen, bytes */
    uint64_t peak_bytes; /* largest budgeted_bytes() seen */
    uint64_t samples;    /* samples taken */
    uint64_t violations; /* samples in which a checked value was over its budget */
    band_time first_violation_t;           /* since verify_start(), 0 when none */
    char first_violation[VERIFY_TEXT_MAX]; /* "at 1.234 s: 1030 open descriptors > 1024";
                                              "" when none */
};

struct verify;

/* Start the sampler thread with a copy of @l; the first sample is taken before this
 * returns, so even a short run has one. Returns 0 with *@out set, or -1 with a message in
 * @err (NULL arguments, out of memory, the thread cannot be created). Call from one
 * thread; pair with verify_stop(). */
int verify_start(struct verify **out, const struct verify_limits *l, char *err, size_t errlen);

/* Stop the sampler (it takes one last sample), join it, fill @out (may be NULL) and free
 * @v. Returns 0 (also for a NULL @v, which fills @out with zeroes). */
int verify_stop(struct verify *v, struct verify_result *out);

#endif /* PIPE_VERIFY_H */

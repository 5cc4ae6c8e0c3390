/* SPDX-License-Identifier: MIT */
/* fair_inline_log.h - what one run of fair_inline_script.h records (test_fair_inline.c). */
#ifndef FAIR_INLINE_LOG_H
#define FAIR_INLINE_LOG_H

#include <stdint.h>

#define FAIR_INLINE_LOG_MAX 8192
#define FAIR_INLINE_KEYS    4

struct fair_inline_entry {
    int rc;
    int op;
    uint64_t in_use, waiters, try_refusals, too_big;
    uint64_t cls_granted[2], cls_units[2];
    uint64_t held[FAIR_INLINE_KEYS], granted[FAIR_INLINE_KEYS], units[FAIR_INLINE_KEYS];
};

struct fair_inline_log {
    int n;
    struct fair_inline_entry e[FAIR_INLINE_LOG_MAX];
};

/* One scripted run through the header's inline path, and the same through the exported
 * functions (BAND_NO_INLINE). 0, or the first setup or teardown call that failed (> 0). */
int fair_inline_script_inline(uint64_t seed, struct fair_inline_log *log);
int fair_inline_script_exported(uint64_t seed, struct fair_inline_log *log);

/* 1 when the translation unit of the exported run saw no inline path. */
int fair_inline_exported_is_plain(void);

#endif

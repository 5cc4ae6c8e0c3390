/* SPDX-License-Identifier: MIT */
/* sem_inline_log.h - what one run of sem_inline_script.h records (test_sem_inline.c). */
#ifndef SEM_INLINE_LOG_H
#define SEM_INLINE_LOG_H

#include <stdint.h>

#define SEM_INLINE_LOG_MAX 8192

struct sem_inline_entry {
    int rc;
    uint64_t available, try_refusals, too_big, debt, waiters, grants;
};

struct sem_inline_log {
    int n;
    struct sem_inline_entry e[SEM_INLINE_LOG_MAX];
};

/* One scripted run through the header's inline path, and the same through the exported
 * functions (BAND_NO_INLINE). 0, or what destroying the semaphore returned. */
int sem_inline_script_inline(uint64_t seed, int budget, struct sem_inline_log *log);
int sem_inline_script_exported(uint64_t seed, int budget, struct sem_inline_log *log);

/* 1 when the translation unit of the exported run saw no inline path. */
int sem_inline_exported_is_plain(void);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * name.h - the optional name a primitive reports in its counters.
 */
#ifndef BAND_CORE_NAME_H
#define BAND_CORE_NAME_H

#include <pthread.h>

#include "core/internal.h"

/*
 * Copy @name (NULL clears it) into @dst, which holds BAND_NAME_MAX bytes, under @lock (the
 * primitive's, which its stats snapshot also takes). Returns 0, or BAND_EINVAL when the
 * name does not fit with its NUL; nothing changes then.
 */
int band__set_name(char *dst, const char *name, pthread_mutex_t *lock);

#endif /* BAND_CORE_NAME_H */

/* SPDX-License-Identifier: MIT */
/*
 * name.c - the optional name a primitive reports in its counters.
 */
#include <string.h>

#include "core/name.h"

int band__set_name(char *dst, const char *name, pthread_mutex_t *lock)
{
    size_t len = name == NULL ? 0 : strlen(name);
    if (len >= BAND_NAME_MAX)
        return BAND_EINVAL;
    pthread_mutex_lock(lock);
    if (len > 0)
        memcpy(dst, name, len);
    dst[len] = '\0';
    pthread_mutex_unlock(lock);
    return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * permit.c - permits as values: {semaphore, count} with one owner.
 */
#include "band/permit.h"
#include "core/internal.h"
#include "prim/sem_priv.h"

static int permit_is_empty(const band_permit *p)
{
    return p->count == 0;
}

static void permit_clear(band_permit *p)
{
    p->sem = NULL;
    p->count = 0;
}

int band_permit_try_acquire(band_permit *p, band_sem *s, uint64_t n)
{
    if (p == NULL || !permit_is_empty(p))
        return BAND_EINVAL;
    int rc = band_sem_try_acquire(s, n);
    if (rc == 0) {
        p->sem = s;
        p->count = n;
    }
    return rc;
}

int band_permit_acquire(band_permit *p, band_sem *s, uint64_t n, band_time deadline,
                        band_cancel *cancel)
{
    if (p == NULL || !permit_is_empty(p))
        return BAND_EINVAL;
    int rc = band_sem_acquire(s, n, deadline, cancel);
    if (rc == 0) {
        p->sem = s;
        p->count = n;
    }
    return rc;
}

int band_permit_adopt(band_permit *p, band_sem *s, uint64_t n)
{
    if (p == NULL || s == NULL || !permit_is_empty(p) || n > BAND_MAX_UNITS)
        return BAND_EINVAL;
    /* More than a budget's callers can hold is no reservation: a permit of it could never
     * be released, and BAND_SCOPED_PERMIT would then forget the budget's capacity away. */
    int rc = band__sem_check_holdable(s, n);
    if (rc != 0)
        return rc;
    p->sem = s;
    p->count = n;
    return 0;
}

int band_permit_release(band_permit *p)
{
    if (p == NULL)
        return BAND_EINVAL;
    if (permit_is_empty(p)) {
        permit_clear(p);
        return 0;
    }
    int rc = band_sem_release(p->sem, p->count);
    if (rc == 0)
        permit_clear(p);
    return rc;
}

int band_permit_split(band_permit *p, uint64_t n, band_permit *out)
{
    if (p == NULL || out == NULL || p == out || !permit_is_empty(out) || permit_is_empty(p) ||
        n > p->count)
        return BAND_EINVAL;
    out->sem = p->sem;
    out->count = n;
    p->count -= n;
    if (p->count == 0)
        p->sem = NULL;
    return 0;
}

int band_permit_merge(band_permit *p, band_permit *other)
{
    if (p == NULL || other == NULL || p == other)
        return BAND_EINVAL;
    if (permit_is_empty(other)) {
        permit_clear(other);
        return 0;
    }
    if (permit_is_empty(p)) {
        *p = *other;
        permit_clear(other);
        return 0;
    }
    if (p->sem != other->sem)
        return BAND_EINVAL;
    if (other->count > BAND_MAX_UNITS - p->count)
        return BAND_EOVERFLOW;
    p->count += other->count;
    permit_clear(other);
    return 0;
}

uint64_t band_permit_forget(band_permit *p)
{
    if (p == NULL)
        return 0;
    uint64_t n = p->count;
    if (n > 0)
        band__sem_forget(p->sem, n);
    permit_clear(p);
    return n;
}

int band_permit_reconcile(band_permit *p, uint64_t used)
{
    if (p == NULL || permit_is_empty(p) || used > BAND_MAX_UNITS)
        return BAND_EINVAL;
    if (used == p->count)
        return 0;
    if (used < p->count) {
        int rc = band_sem_release(p->sem, p->count - used);
        if (rc == 0) {
            p->count = used;
            if (used == 0)
                permit_clear(p);
        }
        return rc;
    }
    int rc = band__sem_charge(p->sem, used - p->count);
    if (rc == 0)
        p->count = used;
    return rc;
}

void band_permit_release_scoped(band_permit *p)
{
    if (band_permit_release(p) != 0)
        (void)band_permit_forget(p);
}

/* SPDX-License-Identifier: MIT */
/*
 * shm_stats.c - what a segment holds, for programs and for band-shm: its bounds, their
 * counters, the handle records and the queue, each a snapshot taken under the lock.
 */
#include <string.h>

#include "shm/shm_internal.h"

int band_shm_bound_index(const band_shm *s, const char *name, unsigned *out)
{
    if (s == NULL || name == NULL || out == NULL)
        return BAND_EINVAL;
    for (uint32_t b = 0; b < s->nbounds; b++) {
        if (strncmp(s->h->bounds[b].name, name, BAND_NAME_MAX) == 0) {
            *out = b;
            return 0;
        }
    }
    return BAND_ENOENT;
}

unsigned band_shm_bound_count(const band_shm *s)
{
    return s == NULL ? 0 : s->nbounds;
}

int band_shm_get_stats(const band_shm *s, band_shm_stats *out)
{
    if (s == NULL || out == NULL)
        return BAND_EINVAL;
    struct band__shm_op op;
    int rc = band__shm_lock(&op, (band_shm *)s);
    if (rc != 0)
        return rc;
    const struct band__shm_hdr *h = s->h;
    memset(out, 0, sizeof *out);
    out->version = h->version;
    out->nbounds = s->nbounds;
    out->max_handles = s->nrecords;
    out->max_waiters = s->nslots;
    out->handles = (uint32_t)h->nhandles;
    out->waiters = (uint32_t)h->nwaiting;
    out->closed = h->closed != 0;
    out->size = h->size;
    out->recoveries = h->recoveries;
    out->dead_handles = h->dead_handles;
    out->dead_waiters = h->dead_waiters;
    for (uint32_t b = 0; b < s->nbounds; b++) {
        const struct band__shm_bound *bd = &h->bounds[b];
        band_shm_bound_stats *o = &out->bounds[b];
        uint64_t cached = 0; /* idle in handles' caches: available to anyone */
        for (uint32_t r = 0, nrec = band__shm_nrec(s); r < nrec; r++)
            if (s->rec[r].state == BAND__REC_LIVE)
                cached += band__shm_cached(s, r, b);
        memcpy(o->name, bd->name, sizeof o->name);
        o->name[sizeof o->name - 1] = '\0';
        o->kind = (int)bd->kind;
        o->capacity = bd->capacity;
        o->available = bd->available + cached;
        o->debt = bd->debt;
        o->in_use = bd->capacity + bd->debt - o->available;
        o->waiters = bd->waiters;
        o->waiting_units = bd->waiting_units;
        o->queued = bd->queued;
        o->grants = bd->grants;
        o->timeouts = bd->timeouts;
        o->cancels = bd->cancels;
        o->closed_fails = bd->closed_fails;
        o->try_refusals = bd->try_refusals;
        o->too_big = bd->too_big;
        o->reclaimed = bd->reclaimed;
    }
    band__shm_unlock(&op);
    return 0;
}

int band_shm_list_holders(const band_shm *s, band_shm_holder *out, size_t cap, size_t *count)
{
    if (s == NULL || count == NULL || (out == NULL && cap != 0))
        return BAND_EINVAL;
    struct band__shm_op op;
    int rc = band__shm_lock(&op, (band_shm *)s);
    if (rc != 0)
        return rc;
    size_t n = 0;
    for (uint32_t r = 0, nrec = band__shm_nrec(s); r < nrec; r++) {
        const struct band__shm_record *rec = &s->rec[r];
        if (rec->state != BAND__REC_LIVE)
            continue;
        if (n < cap) {
            band_shm_holder *o = &out[n];
            memset(o, 0, sizeof *o);
            o->pid = (int32_t)rec->pid;
            o->start_time = rec->start;
            o->alive = band__shm_alive((uint32_t)rec->pid, rec->start);
            for (uint32_t b = 0; b < s->nbounds; b++)
                o->held[b] = rec->held[b] - band__shm_cached(s, r, b);
        }
        n++;
    }
    band__shm_unlock(&op);
    *count = n;
    return 0;
}

int band_shm_list_waiters(const band_shm *s, band_shm_waiter_info *out, size_t cap, size_t *count)
{
    if (s == NULL || count == NULL || (out == NULL && cap != 0))
        return BAND_EINVAL;
    struct band__shm_op op;
    int rc = band__shm_lock(&op, (band_shm *)s);
    if (rc != 0)
        return rc;
    band_time now = band_now();
    size_t n = 0;
    for (uint64_t link = s->h->qhead; link != 0 && link <= s->nslots && n <= s->nslots; n++) {
        const struct band__shm_slot *sl = &s->slot[link - 1];
        if (sl->record >= s->nrecords)
            break;
        if (n < cap) {
            band_shm_waiter_info *o = &out[n];
            memset(o, 0, sizeof *o);
            o->pid = (int32_t)s->rec[sl->record].pid;
            o->seq = sl->seq;
            o->waited = now - (band_time)sl->since;
            o->async = (sl->flags & BAND__SLOT_ASYNC) != 0;
            memcpy(o->want, sl->want, sizeof o->want);
        }
        link = sl->next;
    }
    band__shm_unlock(&op);
    *count = n;
    return 0;
}

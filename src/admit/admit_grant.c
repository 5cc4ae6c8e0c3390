/* SPDX-License-Identifier: MIT */
/*
 * admit_grant.c - the grant as a value: release all, release part early, adjust.
 *
 * A grant is {semaphore, count} per budget (band_permit entries). Releasing goes through
 * band_sem_release(), so freed units reach the budgets' queues (plain and multi-budget
 * waiters alike) in FIFO order. Adjusting up takes the shortfall ahead of every queued
 * waiter (band__sem_acquire_front()): they all arrived after this grant's request was
 * admitted, so it keeps its place in the global order. Reconciling up charges what was
 * already used (band__sem_charge()): available units first, then debt, never a wait.
 */
#include <string.h>

#include "admit/admit_internal.h"

/* The entry of @g for @s, or NULL. */
static band_permit *grant_find(band_admit_grant *g, const band_sem *s)
{
    if (g == NULL || s == NULL)
        return NULL;
    for (uint32_t i = 0; i < g->n && i < BAND_ADMIT_MAX; i++) {
        if (g->p[i].sem == s)
            return &g->p[i];
    }
    return NULL;
}

int band_admit_release(band_admit_grant *g)
{
    if (g == NULL)
        return BAND_EINVAL;
    uint32_t n = g->n < BAND_ADMIT_MAX ? g->n : BAND_ADMIT_MAX;
    if (n == 1 && g->p[0].count > 0) { /* the common single budget, without the loops */
        int rc = band_sem_release(g->p[0].sem, g->p[0].count);
        if (rc == 0) {
            g->p[0].count = 0;
            g->p[0].sem = NULL;
            g->n = 0;
        }
        return rc;
    }
    int first = 0; /* the first refusal; every code is negative */
    for (uint32_t i = 0; i < n; i++) {
        band_permit *p = &g->p[i];
        if (p->count == 0)
            continue;
        int rc = band_sem_release(p->sem, p->count);
        if (rc == 0)
            p->count = 0;
        else if (first == 0)
            first = rc;
    }
    if (first == 0) {
        for (uint32_t i = 0; i < n; i++)
            g->p[i].sem = NULL;
        g->n = 0;
    }
    return first;
}

int band_admit_release_part(band_admit_grant *g, band_sem *s, uint64_t n)
{
    band_permit *p = grant_find(g, s);
    if (p == NULL || n > p->count)
        return BAND_EINVAL;
    if (n == 0)
        return 0;
    int rc = band_sem_release(s, n);
    if (rc == 0)
        p->count -= n;
    return rc;
}

int band_admit_adjust(band_admit_grant *g, band_sem *s, uint64_t amount, band_time deadline,
                      band_cancel *cancel)
{
    band_permit *p = grant_find(g, s);
    if (p == NULL || amount > BAND_MAX_UNITS)
        return BAND_EINVAL;
    if (amount <= p->count)
        return band_admit_release_part(g, s, p->count - amount);
    if (amount > band__sem_limit(s)) {
        band__sem_count_too_big(s);
        return BAND_E2BIG;
    }
    int rc = band__sem_acquire_front(s, amount - p->count, deadline, cancel);
    if (rc == 0)
        p->count = amount;
    return rc;
}

int band_admit_reconcile(band_admit_grant *g, band_sem *s, uint64_t used)
{
    band_permit *p = grant_find(g, s);
    if (p == NULL || used > BAND_MAX_UNITS)
        return BAND_EINVAL;
    if (used <= p->count)
        return band_admit_release_part(g, s, p->count - used);
    /* Already consumed: charged at once, never waited for, whatever queues there. */
    int rc = band__sem_charge(s, used - p->count);
    if (rc == 0)
        p->count = used;
    return rc;
}

uint64_t band_admit_held(const band_admit_grant *g, const band_sem *s)
{
    const band_permit *p = grant_find((band_admit_grant *)(uintptr_t)g, s);
    return p == NULL ? 0 : p->count;
}

void band_admit_release_scoped(band_admit_grant *g)
{
    if (g == NULL || band_admit_release(g) == 0)
        return;
    for (uint32_t i = 0; i < g->n && i < BAND_ADMIT_MAX; i++) {
        if (g->p[i].count > 0)
            band__sem_forget(g->p[i].sem, g->p[i].count);
    }
    memset(g, 0, sizeof(*g));
}

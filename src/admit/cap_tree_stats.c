/* SPDX-License-Identifier: MIT */
/*
 * cap_tree_stats.c - a capacity tree node's counters (band_cap_tree_get_stats()).
 *
 * The node's budget gives what is held and queued (its own lock); the tree's bookkeeping
 * (children, their reservations, queued guaranteed units) is read under the admission
 * mutex. The two are read one after the other, never nested, so a snapshot is exact per
 * part and close to one instant as a whole.
 */
#include <string.h>

#include "admit/admit_internal.h"

int band_cap_tree_get_stats(const band_cap_tree *t, band_cap_tree_stats *out)
{
    if (t == NULL || out == NULL)
        return BAND_EINVAL;
    band_sem_stats st;
    int rc = band_sem_get_stats(&t->sem, &st);
    if (rc != 0)
        return rc;
    memset(out, 0, sizeof(*out));
    memcpy(out->name, st.name, sizeof(out->name));
    out->closed = st.closed;
    out->capacity = st.capacity;
    out->in_use = st.in_use;
    out->available = st.available;
    out->debt = st.debt;
    out->waiters = st.waiters;
    out->waiting_units = st.waiting_units;
    out->reserve = t->reserve;
    pthread_mutex_lock(&band__admit_mu);
    out->children = t->children;
    out->child_reserve = t->child_reserve;
    out->guaranteed_waiting_units = t->g_pending;
    pthread_mutex_unlock(&band__admit_mu);
    out->queued = st.queued;
    out->grants = st.grants;
    out->too_big = st.too_big;
    out->try_refusals = st.try_refusals;
    out->timeouts = st.timeouts;
    out->cancels = st.cancels;
    out->closed_fails = st.closed_fails;
    return 0;
}

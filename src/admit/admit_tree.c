/* SPDX-License-Identifier: MIT */
/*
 * admit_tree.c - capacity hierarchies: nodes with a cap and a guaranteed reservation.
 *
 * A node is a budget (its cap) with a parent. band_admit_req_add_tree() names a leaf and
 * all of its ancestors, so one admission charges the path at once (admit.c, admit_eval.c).
 *
 * Reservations are a queueing class, not a partition. Free capacity goes to whoever asks
 * (work-conserving: a sibling may use a reservation its owner does not use). When a
 * request must wait and its reserving node (the nearest node with a reservation on its
 * path) is within the reservation counting the request and the node's guaranteed requests
 * already queued, the request is "guaranteed": it queues ahead of every non-guaranteed
 * waiter in each of its queues, so it gets the next freed capacity first. Nothing already
 * granted is revoked. The class is decided once, with all of the request's locks held,
 * and used in every queue it joins, so the queues agree with one global order (class,
 * then arrival) and admission stays deadlock-free. Bookkeeping (child_reserve, children,
 * g_pending) is guarded by the admission mutex.
 */
#include <stdlib.h>

#include "admit/admit_internal.h"

int band_cap_tree_create(band_cap_tree **out, band_cap_tree *parent, uint64_t cap, uint64_t reserve)
{
    if (out == NULL || cap == 0 || cap > BAND_MAX_UNITS || reserve > cap)
        return BAND_EINVAL;
    band_cap_tree *t = aligned_alloc(BAND__CACHELINE, sizeof(*t));
    if (t == NULL)
        return BAND_ENOMEM;
    int rc = band__sem_init(&t->sem, cap, 1);
    if (rc != 0) {
        free(t);
        return rc;
    }
    t->parent = parent;
    t->reserve = reserve;
    t->child_reserve = 0;
    t->children = 0;
    t->g_pending = 0;
    pthread_mutex_lock(&band__admit_mu);
    if (parent != NULL) {
        uint64_t pcap = band__sem_limit(&parent->sem);
        /* A parent shrunk below its children's reservations has room for no further
         * reservation (a child without one is still fine). */
        if (reserve > 0 &&
            (parent->child_reserve > pcap || reserve > pcap - parent->child_reserve)) {
            rc = BAND_EINVAL;
        } else {
            parent->child_reserve += reserve;
            parent->children++;
        }
    }
    pthread_mutex_unlock(&band__admit_mu);
    if (rc != 0) {
        band__sem_fini(&t->sem);
        free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int band_cap_tree_destroy(band_cap_tree *t)
{
    if (t == NULL)
        return 0;
    int rc = 0;
    pthread_mutex_lock(&band__admit_mu);
    /* Waiters queued, or requests that will reach this level (watching it). */
    if (t->children > 0 || band__sem_busy(&t->sem) != 0)
        rc = BAND_EBUSY;
    if (rc == 0 && t->parent != NULL) {
        t->parent->child_reserve -= t->reserve;
        t->parent->children--;
    }
    pthread_mutex_unlock(&band__admit_mu);
    if (rc != 0)
        return rc;
    band__sem_fini(&t->sem);
    free(t);
    return 0;
}

band_sem *band_cap_tree_sem(band_cap_tree *t)
{
    return t == NULL ? NULL : &t->sem;
}

band_cap_tree *band_cap_tree_parent(const band_cap_tree *t)
{
    return t == NULL ? NULL : t->parent;
}

int band_admit_req_add_tree(band_admit_req *r, band_cap_tree *leaf, uint64_t amount)
{
    if (r == NULL || leaf == NULL || amount > BAND_MAX_UNITS || band_waiter_is_pending(&r->w))
        return BAND_EINVAL;
    /* Check first that the whole path fits, so that nothing changes on failure. */
    uint32_t fresh = 0;
    band_cap_tree *tenant = NULL;
    for (band_cap_tree *t = leaf; t != NULL; t = t->parent) {
        if (tenant == NULL && t->reserve > 0)
            tenant = t;
        uint32_t i = 0;
        while (i < r->n && r->e[i].sem != &t->sem)
            i++;
        if (i == r->n)
            fresh++;
        else if (amount > BAND_MAX_UNITS - r->e[i].amount)
            return BAND_EOVERFLOW;
    }
    if (r->n + fresh > BAND_ADMIT_MAX)
        return BAND_EINVAL;
    uint32_t k = 0;
    if (tenant != NULL) {
        while (k < r->_ntenant && r->_tenant[k] != tenant)
            k++;
        if (k == r->_ntenant && k == BAND_ADMIT_MAX)
            return BAND_EINVAL; /* cannot happen: a tenant is one of the named nodes */
        if (k < r->_ntenant && amount > BAND_MAX_UNITS - r->_tenant_amt[k])
            return BAND_EOVERFLOW;
    }
    unsigned stage = 0;
    for (band_cap_tree *t = leaf; t != NULL; t = t->parent)
        (void)band__admit_req_add_staged(r, &t->sem, amount, stage++);
    if (tenant != NULL) {
        if (k == r->_ntenant) {
            r->_tenant[k] = tenant;
            r->_tenant_amt[k] = 0;
            r->_ntenant++;
        }
        r->_tenant_amt[k] += amount;
    }
    return 0;
}

void band__admit_tree_classify_locked(band_admit_req *r)
{
    if (r->_ntenant == 0)
        return;
    for (uint32_t k = 0; k < r->_ntenant; k++) {
        band_cap_tree *t = r->_tenant[k];
        uint64_t used = band__sem_in_use_locked(&t->sem);
        uint64_t amt = r->_tenant_amt[k];
        if (used > t->reserve || t->g_pending > t->reserve - used ||
            amt > t->reserve - used - t->g_pending)
            return;
    }
    r->_flags |= BAND__ADMIT_GUARANTEED;
    for (uint32_t k = 0; k < r->_ntenant; k++)
        r->_tenant[k]->g_pending += r->_tenant_amt[k];
}

void band__admit_tree_leave_locked(band_admit_req *r)
{
    if (!(r->_flags & BAND__ADMIT_GUARANTEED))
        return;
    r->_flags &= ~BAND__ADMIT_GUARANTEED;
    for (uint32_t k = 0; k < r->_ntenant; k++)
        r->_tenant[k]->g_pending -= r->_tenant_amt[k];
}

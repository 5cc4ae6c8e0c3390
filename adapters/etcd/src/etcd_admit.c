/* SPDX-License-Identifier: MIT */
/*
 * etcd_admit.c - requests over several budgets, granted all parts or none: their keys
 * share one create revision (one transaction) and are marked in one transaction.
 */
#include <string.h>

#include "etcd_internal.h"

int band_etcd_req_init(band_etcd_req *r, band_wake_fn *wake, void *data)
{
    if (r == NULL)
        return BAND_EINVAL;
    memset(r, 0, sizeof(*r));
    band_waiter_init(&r->w, wake, data);
    return 0;
}

int band_etcd_req_add(band_etcd_req *r, band_etcd_budget *b, uint64_t units)
{
    if (r == NULL || b == NULL || units == 0 || units > BAND_MAX_UNITS ||
        band_waiter_is_pending(&r->w) || r->n >= BAND_ETCD_REQ_MAX)
        return BAND_EINVAL;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->budget[i] == b)
            return BAND_EINVAL;
    r->budget[r->n] = b;
    r->units[r->n] = units;
    r->n++;
    return 0;
}

static int req_ok(band_etcd *e, const band_etcd_req *r)
{
    if (e == NULL || r == NULL || r->n == 0 || r->n > BAND_ETCD_REQ_MAX)
        return 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->budget[i] == NULL || r->budget[i]->e != e || r->units[i] == 0 ||
            r->units[i] > BAND_MAX_UNITS)
            return 0;
    return 1;
}

int band_etcd_try_admit(band_etcd *e, band_etcd_req *r)
{
    if (!req_ok(e, r) || band_waiter_is_pending(&r->w))
        return BAND_EINVAL;
    return etcd_submit(e, r->n, r->budget, r->units, NULL, &r->grant, ETCD_TRY, NULL, NULL, NULL);
}

int band_etcd_admit(band_etcd *e, band_etcd_req *r, band_time deadline, band_cancel *cancel)
{
    if (!req_ok(e, r) || band_waiter_is_pending(&r->w))
        return BAND_EINVAL;
    return etcd_wait_blocking(e, r->n, r->budget, r->units, &r->grant, deadline, cancel);
}

int band_etcd_admit_async(band_etcd *e, band_etcd_req *r)
{
    if (!req_ok(e, r) || r->w.wake == NULL || band_waiter_is_pending(&r->w))
        return BAND_EINVAL;
    r->_req = NULL;
    return etcd_submit(e, r->n, r->budget, r->units, &r->w, &r->grant, ETCD_ASYNC, NULL, NULL,
                       NULL);
}

int band_etcd_release_req(band_etcd *e, band_etcd_req *r)
{
    if (!req_ok(e, r) || r->grant.token <= 0 || r->grant.id[0] == '\0' ||
        memchr(r->grant.id, '\0', sizeof(r->grant.id)) == NULL)
        return BAND_EINVAL;
    pthread_mutex_lock(&e->lock);
    int own = etcd_is_own_lease(e, r->grant.lease);
    int current = r->grant.lease == e->lease;
    pthread_mutex_unlock(&e->lock);
    if (!own)
        return BAND_EINVAL;
    if (!current)
        return BAND_ESTALE;
    int64_t deleted = 0;
    int rc = etcd_delete_req(e, r->n, r->budget, r->grant.id, &deleted);
    if (rc != 0)
        return rc;
    if (deleted == 0)
        return BAND_ESTALE;
    r->grant.token = 0;
    return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * etcd_client.c - one client of a cluster: options, its lease, its thread, its counters,
 * and the operator's revoke.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "etcd_internal.h"

void etcd_kick(struct band_etcd *e)
{
    if (e->multi)
        curl_multi_wakeup(e->multi);
}

int etcd_is_own_lease(const struct band_etcd *e, int64_t lease)
{
    if (lease <= 0)
        return 0;
    if (lease == e->lease)
        return 1;
    for (int i = 0; i < ETCD_PAST_LEASES; i++)
        if (e->past[i] == lease)
            return 1;
    return 0;
}

static int text_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e || s[i] == '"' || s[i] == '\\')
            return 0;
    return 1;
}

/* Grant a lease; the lock is not held. */
static int take_lease(struct band_etcd *e)
{
    band_time sent = band_now();
    int64_t lease = 0, ttl = 0;
    int rc = etcd_lease_grant(e, e->ttl_s, &lease, &ttl);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&e->lock);
    e->lease = lease;
    e->lease_deadline = sent + ttl * BAND_SEC;
    e->next_keepalive = sent + e->ttl_s * BAND_SEC / 3;
    pthread_mutex_unlock(&e->lock);
    return 0;
}

void etcd_lease_lost(struct band_etcd *e, int64_t lease)
{
    pthread_mutex_lock(&e->lock);
    if (e->lease != lease) {
        pthread_mutex_unlock(&e->lock);
        return;
    }
    memmove(&e->past[1], &e->past[0], (ETCD_PAST_LEASES - 1) * sizeof(e->past[0]));
    e->past[0] = lease;
    e->lease = 0;
    e->lease_check = 0;
    for (struct etcd_rec *r = e->recs; r; r = r->next)
        if (r->lease == lease && !r->end_status)
            r->end_status = BAND_ESTALE;
    pthread_mutex_unlock(&e->lock);
    atomic_fetch_add(&e->leases_lost, 1);
    etcd_process_recs(e);
    if (e->on_lost)
        e->on_lost(e, lease, e->data);
    /* A lease given up for a late renewal may still live on the server, keeping keys this
     * client no longer tracks: revoke it, so they go now rather than at its expiry (an
     * error means it is gone already, or the cluster is away and will expire it). */
    (void)etcd_lease_revoke(e, lease);
    (void)take_lease(e); /* when the cluster does not answer, the thread tries again */
}

int band_etcd_create(band_etcd **out, const char *endpoints, const band_etcd_opts *opts)
{
    if (out == NULL || endpoints == NULL)
        return BAND_EINVAL;
    band_etcd_opts o;
    memset(&o, 0, sizeof(o));
    if (opts)
        o = *opts;
    if (o.lease_ttl < 0 || o.request_timeout < 0 || o.connect_timeout < 0 ||
        o.lease_ttl > 3600 * BAND_SEC || o.request_timeout > 600 * BAND_SEC ||
        o.connect_timeout > 600 * BAND_SEC)
        return BAND_EINVAL;
    if (o.prefix && (!text_ok(o.prefix, ETCD_PREFIX_MAX)))
        return BAND_EINVAL;
    if (o.holder && !text_ok(o.holder, ETCD_HOLDER_MAX))
        return BAND_EINVAL;
    band_etcd *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return BAND_ENOMEM;
    int rc = etcd_http_init(&e->http, endpoints, o.request_timeout ? o.request_timeout : BAND_SEC,
                            o.connect_timeout ? o.connect_timeout : 200 * BAND_MSEC);
    if (rc != 0) {
        free(e);
        return rc;
    }
    (void)snprintf(e->prefix, sizeof(e->prefix), "%s", o.prefix ? o.prefix : "/band/");
    if (o.holder) {
        (void)snprintf(e->holder, sizeof(e->holder), "%s", o.holder);
    } else {
        char host[48] = "host";
        if (gethostname(host, sizeof(host)) != 0 || !text_ok(host, sizeof(host) - 1))
            strcpy(host, "host");
        host[sizeof(host) - 1] = '\0';
        (void)snprintf(e->holder, sizeof(e->holder), "%s:%ld", host, (long)getpid());
    }
    band_time ttl = o.lease_ttl ? o.lease_ttl : 5 * BAND_SEC;
    e->ttl_s = (ttl + BAND_SEC - 1) / BAND_SEC;
    if (e->ttl_s < 2)
        e->ttl_s = 2;
    e->on_lost = o.on_lost;
    e->data = o.data;
    atomic_init(&e->keepalives, 0);
    atomic_init(&e->leases_lost, 0);
    atomic_init(&e->watches, 0);
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    rc = band_relay_create(&e->relay, etcd_relay_cancel, e);
    if (rc == 0) {
        e->multi = curl_multi_init();
        if (e->multi == NULL)
            rc = BAND_ENOMEM;
    }
    if (rc == 0)
        rc = take_lease(e);
    if (rc == 0 && pthread_create(&e->thread, NULL, etcd_thread_main, e) != 0) {
        (void)etcd_lease_revoke(e, e->lease);
        rc = BAND_ENOMEM;
    }
    if (rc != 0) {
        if (e->multi)
            curl_multi_cleanup(e->multi);
        band_relay_destroy(e->relay);
        pthread_cond_destroy(&e->cond);
        pthread_mutex_destroy(&e->lock);
        etcd_http_fini(&e->http);
        free(e);
        return rc;
    }
    *out = e;
    return 0;
}

int band_etcd_destroy(band_etcd *e)
{
    if (e == NULL)
        return 0;
    pthread_mutex_lock(&e->lock);
    if (e->budgets != NULL) {
        pthread_mutex_unlock(&e->lock);
        return BAND_EBUSY;
    }
    e->stop = 1;
    pthread_mutex_unlock(&e->lock);
    etcd_kick(e);
    pthread_join(e->thread, NULL);
    if (e->lease != 0)
        (void)etcd_lease_revoke(e, e->lease);
    etcd_retry_orphans(e);
    while (e->orphans) {
        struct etcd_orphan *o = e->orphans;
        e->orphans = o->next;
        free(o->key);
        free(o);
    }
    curl_multi_cleanup(e->multi);
    band_relay_destroy(e->relay);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
    etcd_http_fini(&e->http);
    free(e);
    return 0;
}

int band_etcd_get_stats(const band_etcd *e, band_etcd_stats *out)
{
    if (e == NULL || out == NULL)
        return BAND_EINVAL;
    band_etcd *m = (band_etcd *)e; /* the lock is not part of the value */
    memset(out, 0, sizeof(*out));
    out->requests = atomic_load(&m->http.requests);
    out->txns = atomic_load(&m->http.txns);
    out->failovers = atomic_load(&m->http.failovers);
    out->keepalives = atomic_load(&m->keepalives);
    out->leases_lost = atomic_load(&m->leases_lost);
    out->watches = atomic_load(&m->watches);
    pthread_mutex_lock(&m->lock);
    out->lease = m->lease;
    out->lease_deadline = m->lease_deadline;
    pthread_mutex_unlock(&m->lock);
    return 0;
}

int band_etcd_revoke(band_etcd *e, int64_t lease)
{
    if (e == NULL || lease <= 0)
        return BAND_EINVAL;
    int rc = etcd_lease_revoke(e, lease);
    pthread_mutex_lock(&e->lock);
    if (lease == e->lease)
        e->lease_check = 1; /* reported through on_lost by the thread */
    pthread_mutex_unlock(&e->lock);
    etcd_kick(e);
    return rc == BAND_ENOENT ? BAND_ENOENT : rc == 0 ? 0 : BAND_EUNAVAIL;
}

int etcd_take_lease(struct band_etcd *e)
{
    return take_lease(e);
}

/* SPDX-License-Identifier: MIT */
/*
 * etcd_budget.c - one named budget: opening it (creating its capacity key), its handle's
 * close, capacity changes, the reads (stats, list, fencing check), and the single-budget
 * acquisitions, which are one-part requests of the engine in etcd_req.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_internal.h"

static int name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > BAND_ETCD_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static char *join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        (void)snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

static void budget_free(band_etcd_budget *b)
{
    free(b->pfx);
    free(b->end);
    free(b->cap_key);
    free(b->q_pfx);
    free(b->q_end);
    etcd_view_free(&b->view);
    free(b);
}

void etcd_budget_load(struct band_etcd_budget *b, const json_t *range_resp, int64_t rev)
{
    struct etcd_kvs kvs;
    if (etcd_kvs_parse(range_resp, &kvs) != 0)
        return;
    pthread_mutex_lock(&b->e->lock);
    if (rev > b->view.rev) {
        etcd_view_load(&b->view, b, &kvs, rev);
        b->e->eval = 1;
    }
    pthread_mutex_unlock(&b->e->lock);
    etcd_kvs_free(&kvs);
}

/* Read the budget and load the view. */
static int budget_read(band_etcd_budget *b)
{
    struct etcd_kvs kvs;
    int64_t rev = 0;
    int rc = etcd_range(b->e, b->pfx, b->end, &kvs, &rev);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&b->e->lock);
    etcd_view_load(&b->view, b, &kvs, rev);
    pthread_mutex_unlock(&b->e->lock);
    etcd_kvs_free(&kvs);
    return 0;
}

int band_etcd_budget_create(band_etcd_budget **out, band_etcd *e, const char *name,
                            uint64_t capacity)
{
    if (out == NULL || e == NULL || name == NULL || !name_ok(name) || capacity > BAND_MAX_UNITS)
        return BAND_EINVAL;
    band_etcd_budget *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return BAND_ENOMEM;
    b->e = e;
    strcpy(b->name, name);
    b->pfx = join(e->prefix, name, "/");
    b->end = join(e->prefix, name, "0");
    b->cap_key = join(e->prefix, name, "/cap");
    b->q_pfx = join(e->prefix, name, "/q/");
    b->q_end = join(e->prefix, name, "/q0");
    if (!b->pfx || !b->end || !b->cap_key || !b->q_pfx || !b->q_end) {
        budget_free(b);
        return BAND_ENOMEM;
    }
    int rc = budget_read(b);
    if (rc == 0 && b->view.cap_mod == 0) {
        if (capacity == 0) {
            rc = BAND_ENOENT;
        } else {
            char v[32];
            (void)snprintf(v, sizeof(v), "%llu", (unsigned long long)capacity);
            json_t *cmp = json_array(), *ok = json_array();
            json_array_append_new(cmp, etcd_cmp("EQUAL", "CREATE", b->cap_key, NULL, 0, NULL));
            json_array_append_new(ok, etcd_op_put(b->cap_key, v, 0));
            json_t *resp = NULL;
            rc = etcd_txn(e, cmp, ok, NULL, &resp, NULL);
            json_decref(resp);
            if (rc == 0)
                rc = budget_read(b);
        }
    }
    if (rc != 0) {
        budget_free(b);
        return rc == BAND_ESTALE ? BAND_EUNAVAIL : rc;
    }
    pthread_mutex_lock(&e->lock);
    b->next = e->budgets;
    e->budgets = b;
    pthread_mutex_unlock(&e->lock);
    etcd_kick(e); /* the thread starts the watch */
    *out = b;
    return 0;
}

int band_etcd_budget_destroy(band_etcd_budget *b)
{
    if (b == NULL)
        return 0;
    band_etcd *e = b->e;
    pthread_mutex_lock(&e->lock);
    for (struct etcd_rec *r = e->recs; r; r = r->next) {
        for (uint32_t i = 0; i < r->n; i++) {
            if (r->b[i] == b) {
                pthread_mutex_unlock(&e->lock);
                return BAND_EBUSY;
            }
        }
    }
    b->dying = 1;
    if (pthread_equal(pthread_self(), e->thread)) {
        pthread_mutex_unlock(&e->lock);
        etcd_watch_stop(e, b);
        pthread_mutex_lock(&e->lock);
    } else {
        etcd_kick(e);
        while (!b->watch_gone)
            pthread_cond_wait(&e->cond, &e->lock);
    }
    for (band_etcd_budget **p = &e->budgets; *p; p = &(*p)->next) {
        if (*p == b) {
            *p = b->next;
            break;
        }
    }
    pthread_mutex_unlock(&e->lock);
    budget_free(b);
    return 0;
}

int band_etcd_budget_close(band_etcd_budget *b)
{
    if (b == NULL)
        return BAND_EINVAL;
    band_etcd *e = b->e;
    pthread_mutex_lock(&e->lock);
    b->closed = 1;
    for (struct etcd_rec *r = e->recs; r; r = r->next)
        for (uint32_t i = 0; i < r->n; i++)
            if (r->b[i] == b && !r->end_status)
                r->end_status = BAND_ECLOSED;
    pthread_mutex_unlock(&e->lock);
    etcd_kick(e);
    return 0;
}

int band_etcd_budget_is_closed(const band_etcd_budget *b)
{
    if (b == NULL)
        return 0;
    pthread_mutex_lock(&b->e->lock);
    int c = b->closed;
    pthread_mutex_unlock(&b->e->lock);
    return c;
}

int band_etcd_budget_set_capacity(band_etcd_budget *b, uint64_t capacity)
{
    if (b == NULL || capacity == 0 || capacity > BAND_MAX_UNITS)
        return BAND_EINVAL;
    char v[32];
    (void)snprintf(v, sizeof(v), "%llu", (unsigned long long)capacity);
    json_t *ok = json_array();
    json_array_append_new(ok, etcd_op_put(b->cap_key, v, 0));
    json_t *resp = NULL;
    int rc = etcd_txn(b->e, NULL, ok, NULL, &resp, NULL);
    json_decref(resp);
    return rc == 0 ? 0 : BAND_EUNAVAIL;
}

/* Read the budget's requests, in queue order. */
static int read_entries(band_etcd_budget *b, struct etcd_view *v)
{
    struct etcd_kvs kvs;
    int64_t rev = 0;
    memset(v, 0, sizeof(*v));
    int rc = etcd_range(b->e, b->pfx, b->end, &kvs, &rev);
    if (rc != 0)
        return rc;
    rc = etcd_view_load(v, b, &kvs, rev);
    etcd_kvs_free(&kvs);
    return rc;
}

int band_etcd_budget_get_stats(const band_etcd_budget *b, band_etcd_budget_stats *out)
{
    if (b == NULL || out == NULL)
        return BAND_EINVAL;
    struct etcd_view v;
    int rc = read_entries((band_etcd_budget *)b, &v);
    if (rc != 0)
        return rc;
    memset(out, 0, sizeof(*out));
    out->capacity = v.capacity;
    out->revision = v.rev;
    for (size_t i = 0; i < v.n; i++) {
        if (v.ent[i].granted) {
            out->held += v.ent[i].units;
            out->holders++;
        } else {
            out->queued += v.ent[i].units;
            out->waiters++;
        }
    }
    out->debt = out->held > out->capacity ? out->held - out->capacity : 0;
    etcd_view_free(&v);
    return 0;
}

int band_etcd_budget_list(band_etcd_budget *b, band_etcd_entry *out, size_t max, size_t *n)
{
    if (b == NULL || n == NULL || (out == NULL && max > 0))
        return BAND_EINVAL;
    struct etcd_view v;
    int rc = read_entries(b, &v);
    if (rc != 0)
        return rc;
    *n = v.n;
    for (size_t i = 0; i < v.n && i < max; i++) {
        const struct etcd_entry *en = &v.ent[i];
        band_etcd_entry *d = &out[i];
        memset(d, 0, sizeof(*d));
        memcpy(d->id, en->id, sizeof(d->id));
        memcpy(d->holder, en->holder, sizeof(d->holder));
        d->units = en->units;
        d->granted = en->granted;
        d->token = en->granted ? en->mod : 0;
        d->created = en->created;
        d->lease = en->lease;
    }
    etcd_view_free(&v);
    return 0;
}

int band_etcd_budget_check_token(band_etcd_budget *b, int64_t token)
{
    if (b == NULL || token <= 0)
        return BAND_EINVAL;
    struct etcd_kvs kvs;
    int rc = etcd_range(b->e, b->q_pfx, b->q_end, &kvs, NULL);
    if (rc != 0)
        return rc;
    rc = BAND_ESTALE;
    for (size_t i = 0; i < kvs.n && rc != 0; i++) {
        struct etcd_entry en;
        memset(&en, 0, sizeof(en));
        if (kvs.kv[i].mod == token && etcd_entry_parse(&en, kvs.kv[i].value, kvs.kv[i].vlen) == 0 &&
            en.granted)
            rc = 0;
    }
    etcd_kvs_free(&kvs);
    return rc;
}

/* ---- single-budget acquisitions ---------------------------------------------------- */

static int units_ok(uint64_t units)
{
    return units > 0 && units <= BAND_MAX_UNITS;
}

int band_etcd_budget_try_acquire(band_etcd_budget *b, uint64_t units, band_etcd_grant *out)
{
    if (b == NULL || out == NULL || !units_ok(units))
        return BAND_EINVAL;
    return etcd_submit(b->e, 1, &b, &units, NULL, out, ETCD_TRY, NULL, NULL, NULL);
}

int band_etcd_budget_acquire(band_etcd_budget *b, uint64_t units, band_etcd_grant *out,
                             band_time deadline, band_cancel *cancel)
{
    if (b == NULL || out == NULL || !units_ok(units))
        return BAND_EINVAL;
    return etcd_wait_blocking(b->e, 1, &b, &units, out, deadline, cancel);
}

int band_etcd_budget_acquire_async(band_etcd_budget *b, uint64_t units,
                                   band_etcd_budget_acquire_op *op)
{
    if (b == NULL || op == NULL || !units_ok(units) || op->w.wake == NULL ||
        band_waiter_is_pending(&op->w))
        return BAND_EINVAL;
    op->units = units;
    op->_req = NULL;
    int rc = etcd_submit(b->e, 1, &b, &units, &op->w, &op->grant, ETCD_ASYNC, NULL, NULL, NULL);
    return rc;
}

int band_etcd_budget_release(band_etcd_budget *b, const band_etcd_grant *g)
{
    if (b == NULL || g == NULL || g->id[0] == '\0' || memchr(g->id, '\0', sizeof(g->id)) == NULL)
        return BAND_EINVAL;
    band_etcd *e = b->e;
    pthread_mutex_lock(&e->lock);
    int own = etcd_is_own_lease(e, g->lease);
    int current = g->lease == e->lease;
    pthread_mutex_unlock(&e->lock);
    if (!own)
        return BAND_EINVAL;
    if (!current)
        return BAND_ESTALE;
    int64_t deleted = 0;
    int rc = etcd_delete_req(e, 1, &b, g->id, &deleted);
    if (rc != 0)
        return rc;
    return deleted > 0 ? 0 : BAND_ESTALE;
}

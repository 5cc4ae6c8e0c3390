/* SPDX-License-Identifier: MIT */
/*
 * etcd_req.c - the request engine: one request over 1 to BAND_ETCD_REQ_MAX budgets is
 * queued and granted by the fast-path transaction when the view shows room, else marked
 * granted by its requester when the grant rule allows it (at once or, queued, on the
 * client's thread as the watch reports the budget changing).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "etcd_internal.h"

char *etcd_req_key(const struct band_etcd_budget *b, const char *id)
{
    size_t n = strlen(b->q_pfx) + strlen(id) + 1;
    char *k = malloc(n);
    if (k)
        (void)snprintf(k, n, "%s%s", b->q_pfx, id);
    return k;
}

/* The keys and both values of one request, built once. */
struct req_text {
    uint32_t n;
    char *key[BAND_ETCD_REQ_MAX];
    char g0[BAND_ETCD_REQ_MAX][160];
    char g1[BAND_ETCD_REQ_MAX][160];
};

static void text_free(struct req_text *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->key[i]);
    t->n = 0;
}

static int text_build(struct req_text *t, struct band_etcd *e, uint32_t n,
                      struct band_etcd_budget *const *b, const uint64_t *units, const char *id)
{
    memset(t, 0, sizeof(*t));
    for (uint32_t i = 0; i < n; i++) {
        t->key[i] = etcd_req_key(b[i], id);
        if (t->key[i] == NULL) {
            t->n = i;
            text_free(t);
            return BAND_ENOMEM;
        }
        (void)snprintf(t->g0[i], sizeof(t->g0[i]), "{\"u\":%llu,\"g\":0,\"h\":\"%s\",\"p\":%u}",
                       (unsigned long long)units[i], e->holder, (unsigned)n);
        (void)snprintf(t->g1[i], sizeof(t->g1[i]), "{\"u\":%llu,\"g\":1,\"h\":\"%s\",\"p\":%u}",
                       (unsigned long long)units[i], e->holder, (unsigned)n);
    }
    t->n = n;
    return 0;
}

/* Our own key in a range answer: 1 found (granted, mod, create set), 0 absent. */
static int own_state(const json_t *range_resp, const char *key, int *granted, int64_t *mod,
                     int64_t *create)
{
    struct etcd_kvs kvs;
    if (etcd_kvs_parse(range_resp, &kvs) != 0)
        return 0;
    int found = 0;
    for (size_t i = 0; i < kvs.n; i++) {
        if (strcmp(kvs.kv[i].key, key) != 0)
            continue;
        struct etcd_entry en;
        memset(&en, 0, sizeof(en));
        if (etcd_entry_parse(&en, kvs.kv[i].value, kvs.kv[i].vlen) == 0) {
            found = 1;
            *granted = en.granted;
            *mod = kvs.kv[i].mod;
            *create = kvs.kv[i].create;
        }
        break;
    }
    etcd_kvs_free(&kvs);
    return found;
}

/* Load the ranges of a failed transaction's answer, from responses[first]. */
static const json_t *load_ranges(json_t *resp, size_t first, uint32_t n,
                                 struct band_etcd_budget *const *b)
{
    int64_t rev = etcd_json_i64(json_object_get(resp, "header"), "revision");
    json_t *rs = json_object_get(resp, "responses");
    const json_t *r0 = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const json_t *rr = json_object_get(json_array_get(rs, first + i), "response_range");
        if (rr == NULL)
            continue;
        if (i == 0)
            r0 = rr;
        etcd_budget_load(b[i], rr, rev);
    }
    return r0;
}

/* The lean form of the fast path, for a budget nobody else was seen using lately: only
 * the compare and the grant, so the cluster parses and applies the least. 0 granted
 * (*token), 1 refused (nothing written), or an error. */
static int lean_txn(struct band_etcd *e, uint32_t n, struct band_etcd_budget *const *b,
                    const struct req_text *t, int64_t lease, const int64_t *below, int64_t *token,
                    int *maybe_applied)
{
    json_t *cmp = json_array(), *ok = json_array();
    for (uint32_t i = 0; i < n; i++) {
        json_array_append_new(cmp, etcd_cmp("LESS", "MOD", b[i]->pfx, b[i]->end, below[i], NULL));
        json_array_append_new(ok, etcd_op_put(t->key[i], t->g1[i], lease));
    }
    /* No "key absent" compare: the key is in the range, and once written its revision is
     * above the view's, so a retry of an attempt that was applied is refused already. */
    json_t *resp = NULL;
    int rc = etcd_txn(e, cmp, ok, NULL, &resp, maybe_applied);
    if (rc != 0)
        return rc;
    int granted = json_is_true(json_object_get(resp, "succeeded"));
    *token = etcd_json_i64(json_object_get(resp, "header"), "revision");
    json_decref(resp);
    return granted ? 0 : 1;
}

/* The fast path: 0 granted (*token), 1 queued (*created), or an error. */
static int fast_txn(struct band_etcd *e, uint32_t n, struct band_etcd_budget *const *b,
                    const uint64_t *units, const struct req_text *t, int64_t lease, int64_t *token,
                    int64_t *created, int *maybe_applied)
{
    int64_t below[BAND_ETCD_REQ_MAX];
    int room = 1, alone = 1;
    band_time now = band_now();
    pthread_mutex_lock(&e->lock);
    for (uint32_t i = 0; i < n; i++) {
        room = room && etcd_view_has_room(&b[i]->view, units[i]);
        alone = alone && now >= b[i]->watch_until;
        below[i] = b[i]->view.rev + 1;
    }
    pthread_mutex_unlock(&e->lock);
    if (room && alone) {
        /* When it is refused, the budget changed behind the view: the full form below
         * queues the request and reads the budget. Its "only if absent" also finds a
         * grant of this one whose answer was lost, without queueing it. */
        int rc = lean_txn(e, n, b, t, lease, below, token, maybe_applied);
        if (rc <= 0) {
            *created = *token;
            return rc;
        }
    }
    json_t *cmp = json_array();
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(
            cmp, etcd_cmp("LESS", "MOD", b[i]->pfx, b[i]->end, room ? below[i] : 1, NULL));
    json_array_append_new(cmp, etcd_cmp("EQUAL", "CREATE", t->key[0], NULL, 0, NULL));
    json_t *ok = json_array(), *queue = json_array(), *fail = json_array();
    for (uint32_t i = 0; i < n; i++) {
        json_array_append_new(ok, etcd_op_put(t->key[i], t->g1[i], lease));
        json_array_append_new(queue, etcd_op_put(t->key[i], t->g0[i], lease));
    }
    /* Queue only if the key is not there yet: a retry after an unknown outcome must not
     * turn a grant back into a waiting request. */
    json_t *absent = json_array();
    json_array_append_new(absent, etcd_cmp("EQUAL", "CREATE", t->key[0], NULL, 0, NULL));
    json_array_append_new(fail, etcd_op_txn(absent, queue, NULL));
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(fail, etcd_op_range(b[i]->pfx, b[i]->end));
    json_t *resp = NULL;
    int rc = etcd_txn(e, cmp, ok, fail, &resp, maybe_applied);
    if (rc != 0)
        return rc;
    int64_t rev = etcd_json_i64(json_object_get(resp, "header"), "revision");
    if (json_is_true(json_object_get(resp, "succeeded"))) {
        json_decref(resp);
        *token = rev;
        *created = rev;
        return 0;
    }
    pthread_mutex_lock(&e->lock);
    for (uint32_t i = 0; i < n; i++)
        etcd_watch_linger(b[i]); /* somebody else uses the budget: keep the view current */
    pthread_mutex_unlock(&e->lock);
    const json_t *r0 = load_ranges(resp, 1, n, b);
    int granted = 0;
    int64_t mod = 0;
    int found = r0 ? own_state(r0, t->key[0], &granted, &mod, created) : 0;
    json_decref(resp);
    if (!found)
        return BAND_ESTALE;
    if (granted) {
        *token = mod;
        return 0;
    }
    return 1;
}

/* Mark a queued request granted, guarded by @capmod, the capacity revisions of the views
 * the decision was made on: 0 granted (*token), 1 not now (views refreshed), BAND_ESTALE
 * (its key is gone), or an error. */
static int mark_txn(struct band_etcd *e, uint32_t n, struct band_etcd_budget *const *b,
                    const struct req_text *t, int64_t lease, const int64_t *capmod, int64_t *token)
{
    json_t *cmp = json_array(), *ok = json_array(), *fail = json_array();
    for (uint32_t i = 0; i < n; i++) {
        json_array_append_new(cmp, etcd_cmp("EQUAL", "MOD", b[i]->cap_key, NULL, capmod[i], NULL));
        json_array_append_new(cmp, etcd_cmp("EQUAL", "VALUE", t->key[i], NULL, 0, t->g0[i]));
        json_array_append_new(ok, etcd_op_put(t->key[i], t->g1[i], lease));
        json_array_append_new(fail, etcd_op_range(b[i]->pfx, b[i]->end));
    }
    json_t *resp = NULL;
    int maybe = 0;
    int rc = etcd_txn(e, cmp, ok, fail, &resp, &maybe);
    if (rc != 0)
        return rc;
    if (json_is_true(json_object_get(resp, "succeeded"))) {
        *token = etcd_json_i64(json_object_get(resp, "header"), "revision");
        json_decref(resp);
        return 0;
    }
    const json_t *r0 = load_ranges(resp, 0, n, b);
    int granted = 0;
    int64_t mod = 0, create = 0;
    int found = r0 ? own_state(r0, t->key[0], &granted, &mod, &create) : 0;
    json_decref(resp);
    if (!found)
        return BAND_ESTALE;
    if (granted) { /* an earlier attempt whose answer was lost marked it */
        *token = mod;
        return 0;
    }
    return 1;
}

/* 1 when the views grant request @id in every part; @capmod receives the capacity
 * revisions they were read at (lock held). */
static int may_grant_locked(struct band_etcd_budget *const *b, uint32_t n, const uint64_t *units,
                            const char *id, int64_t *capmod)
{
    for (uint32_t i = 0; i < n; i++) {
        if (etcd_view_may_grant(&b[i]->view, id, units[i]) != 1)
            return 0;
        capmod[i] = b[i]->view.cap_mod;
    }
    return 1;
}

static int may_grant(struct band_etcd *e, uint32_t n, struct band_etcd_budget *const *b,
                     const uint64_t *units, const char *id, int64_t *capmod)
{
    pthread_mutex_lock(&e->lock);
    int ok = may_grant_locked(b, n, units, id, capmod);
    pthread_mutex_unlock(&e->lock);
    return ok;
}

static void fill_grant_locked(struct band_etcd *e, band_etcd_grant *out, uint32_t n,
                              const uint64_t *units, const char *id, int64_t lease, int64_t token)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += units[i];
    out->units = sum;
    out->token = token;
    out->lease = lease;
    out->lease_deadline = e->lease_deadline;
    (void)snprintf(out->id, sizeof(out->id), "%s", id);
}

/* Our grant into the views at once, so that the next decision of this client counts it
 * before the watch reports it (lock held). @created 0: only the requests already there. */
static void note_granted_locked(struct band_etcd *e, uint32_t n, struct band_etcd_budget *const *b,
                                const uint64_t *units, const char *id, int64_t lease,
                                int64_t created, int64_t token)
{
    for (uint32_t i = 0; i < n; i++)
        etcd_view_note_granted(&b[i]->view, id, units[i], e->holder, n, created, token, lease);
}

void etcd_retry_orphans(struct band_etcd *e)
{
    pthread_mutex_lock(&e->lock);
    struct etcd_orphan *list = e->orphans;
    e->orphans = NULL;
    pthread_mutex_unlock(&e->lock);
    while (list) {
        struct etcd_orphan *o = list;
        list = o->next;
        int maybe = 0;
        if (etcd_delete_keys(e, &o->key, 1, NULL, &maybe) == 0) {
            free(o->key);
            free(o);
            continue;
        }
        pthread_mutex_lock(&e->lock);
        o->next = e->orphans;
        e->orphans = o;
        pthread_mutex_unlock(&e->lock);
    }
}

static uint64_t key_hash(const char *k)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * UINT64_C(1099511628211);
    return h | 1; /* never 0, the empty slot */
}

/* Remember that deleting these keys may have happened. */
static void unsure_note(struct band_etcd *e, char *const *keys, uint32_t n)
{
    pthread_mutex_lock(&e->lock);
    for (uint32_t i = 0; i < n; i++) {
        e->unsure[e->unsure_next] = key_hash(keys[i]);
        e->unsure_next = (e->unsure_next + 1) % ETCD_UNSURE;
    }
    pthread_mutex_unlock(&e->lock);
}

/* 1 when every key is one whose deletion may have happened. */
static int unsure_all(struct band_etcd *e, char *const *keys, uint32_t n)
{
    int all = 1;
    pthread_mutex_lock(&e->lock);
    for (uint32_t i = 0; i < n && all; i++) {
        uint64_t h = key_hash(keys[i]);
        int found = 0;
        for (unsigned k = 0; k < ETCD_UNSURE && !found; k++)
            found = e->unsure[k] == h;
        all = found;
    }
    pthread_mutex_unlock(&e->lock);
    return all;
}

int etcd_delete_req(struct band_etcd *e, uint32_t n, struct band_etcd_budget *const *b,
                    const char *id, int64_t *deleted)
{
    char *keys[BAND_ETCD_REQ_MAX] = {NULL};
    uint32_t k = 0;
    for (; k < n; k++) {
        keys[k] = etcd_req_key(b[k], id);
        if (keys[k] == NULL)
            break;
    }
    int rc = k == n ? 0 : BAND_ENOMEM;
    int maybe = 0;
    if (rc == 0)
        rc = etcd_delete_keys(e, keys, n, deleted, &maybe);
    if (rc == 0) {
        /* The keys are gone now, whoever deleted them: the next acquisition of this client
         * finds the room at once, without waiting for the watch to report the deletion. */
        pthread_mutex_lock(&e->lock);
        for (uint32_t i = 0; i < n; i++)
            etcd_view_note_gone(&b[i]->view, id);
        pthread_mutex_unlock(&e->lock);
    }
    /* Gone already, after an attempt (now or in an earlier call) whose answer was lost:
     * that attempt deleted them. */
    if (rc == 0 && deleted && *deleted == 0 && (maybe || unsure_all(e, keys, n)))
        *deleted = (int64_t)n;
    if (k == n && (rc != 0 || maybe))
        unsure_note(e, keys, n);
    for (uint32_t i = 0; i < k; i++) {
        struct etcd_orphan *o = rc != 0 ? malloc(sizeof(*o)) : NULL;
        if (o == NULL) {
            free(keys[i]);
            continue;
        }
        o->key = keys[i];
        pthread_mutex_lock(&e->lock);
        o->next = e->orphans;
        e->orphans = o;
        pthread_mutex_unlock(&e->lock);
    }
    return rc;
}

static void note_lease_error(struct band_etcd *e, int rc)
{
    if (rc != BAND_ESTALE)
        return;
    pthread_mutex_lock(&e->lock);
    e->lease_check = 1;
    pthread_mutex_unlock(&e->lock);
    etcd_kick(e);
}

int etcd_submit(struct band_etcd *e, uint32_t n, struct band_etcd_budget *const *b,
                const uint64_t *units, band_waiter *w, band_etcd_grant *out, enum etcd_mode mode,
                char id_out[BAND_ETCD_ID_SIZE], void (*on_free)(void *), void *free_arg)
{
    char id[BAND_ETCD_ID_SIZE];
    int64_t lease;
    pthread_mutex_lock(&e->lock);
    for (uint32_t i = 0; i < n; i++) {
        if (b[i]->closed) {
            pthread_mutex_unlock(&e->lock);
            return BAND_ECLOSED;
        }
    }
    lease = e->lease;
    uint64_t seq = ++e->counter;
    pthread_mutex_unlock(&e->lock);
    if (lease == 0)
        return BAND_EUNAVAIL; /* between a lost lease and the next one */
    (void)snprintf(id, sizeof(id), "%llx-%llx", (unsigned long long)lease, (unsigned long long)seq);
    if (id_out)
        memcpy(id_out, id, sizeof(id));

    struct req_text t;
    int rc = text_build(&t, e, n, b, units, id);
    if (rc != 0)
        return rc;
    int64_t token = 0, created = 0;
    int maybe = 0;
    rc = fast_txn(e, n, b, units, &t, lease, &token, &created, &maybe);
    if (rc < 0) {
        if (maybe)
            (void)etcd_delete_req(e, n, b, id, NULL);
        note_lease_error(e, rc);
        text_free(&t);
        return rc;
    }
    /* Queued: mark it at once when the fresh view allows it. */
    int64_t capmod[BAND_ETCD_REQ_MAX];
    for (int round = 0; rc == 1 && round < 4 && may_grant(e, n, b, units, id, capmod); round++)
        rc = mark_txn(e, n, b, &t, lease, capmod, &token);
    if (rc == 0) {
        pthread_mutex_lock(&e->lock);
        note_granted_locked(e, n, b, units, id, lease, created, token);
        fill_grant_locked(e, out, n, units, id, lease, token);
        pthread_mutex_unlock(&e->lock);
        text_free(&t);
        return 0;
    }
    if (rc < 0 || mode == ETCD_TRY) {
        int big = 0;
        pthread_mutex_lock(&e->lock);
        for (uint32_t i = 0; i < n; i++)
            big = big || units[i] > b[i]->view.capacity;
        pthread_mutex_unlock(&e->lock);
        (void)etcd_delete_req(e, n, b, id, NULL);
        note_lease_error(e, rc);
        text_free(&t);
        return rc < 0 ? rc : big ? BAND_E2BIG : BAND_EAGAIN;
    }
    text_free(&t);

    struct etcd_rec *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        (void)etcd_delete_req(e, n, b, id, NULL);
        return BAND_ENOMEM;
    }
    r->w = w;
    r->out = out;
    r->on_free = on_free;
    r->free_arg = free_arg;
    memcpy(r->id, id, sizeof(id));
    r->lease = lease;
    r->n = n;
    for (uint32_t i = 0; i < n; i++) {
        r->b[i] = b[i];
        r->units[i] = units[i];
    }
    pthread_mutex_lock(&e->lock);
    r->next = e->recs;
    e->recs = r;
    pthread_mutex_unlock(&e->lock);
    if (band_relay_park(e->relay, w) != 0) { /* checked by the callers: cannot happen */
        pthread_mutex_lock(&e->lock);
        for (struct etcd_rec **p = &e->recs; *p; p = &(*p)->next) {
            if (*p == r) {
                *p = r->next;
                break;
            }
        }
        pthread_mutex_unlock(&e->lock);
        (void)etcd_delete_req(e, n, b, id, NULL);
        free(r);
        return BAND_EINVAL;
    }
    pthread_mutex_lock(&e->lock);
    r->parked = 1;
    if (r->lease != e->lease && !r->end_status)
        r->end_status = BAND_ESTALE; /* the lease ended while it was being queued */
    e->eval = 1;
    pthread_mutex_unlock(&e->lock);
    etcd_kick(e);
    return BAND_PENDING;
}

void etcd_relay_cancel(band_relay *rl, band_waiter *w, int reason, void *data)
{
    (void)rl;
    struct band_etcd *e = data;
    pthread_mutex_lock(&e->lock);
    for (struct etcd_rec *r = e->recs; r; r = r->next) {
        if (r->w == w) {
            r->cancelled = reason;
            break;
        }
    }
    pthread_mutex_unlock(&e->lock);
    etcd_kick(e);
}

void etcd_rec_free(struct etcd_rec *r)
{
    if (r->on_free)
        r->on_free(r->free_arg);
    free(r);
}

static void unlink_rec_locked(struct band_etcd *e, struct etcd_rec *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        etcd_watch_linger(r->b[i]);
    for (struct etcd_rec **p = &e->recs; *p; p = &(*p)->next) {
        if (*p == r) {
            *p = r->next;
            return;
        }
    }
}

/* End the requests that were cancelled, closed or whose lease ended. */
static void process_ends(struct band_etcd *e)
{
    struct etcd_rec *done = NULL;
    pthread_mutex_lock(&e->lock);
    for (struct etcd_rec **p = &e->recs; *p;) {
        struct etcd_rec *r = *p;
        if (r->parked && !r->busy && (r->cancelled || r->end_status)) {
            *p = r->next;
            r->next = done;
            done = r;
        } else {
            p = &r->next;
        }
    }
    pthread_mutex_unlock(&e->lock);
    while (done) {
        struct etcd_rec *r = done;
        done = r->next;
        if (r->cancelled || r->end_status != BAND_ESTALE)
            (void)etcd_delete_req(e, r->n, r->b, r->id, NULL);
        if (!r->cancelled)
            (void)band_relay_complete(e->relay, r->w, r->end_status);
        etcd_rec_free(r);
    }
}

/* Mark the queued requests the views now grant. */
static void process_grants(struct band_etcd *e)
{
    struct etcd_rec *cand[64];
    int64_t capmods[64][BAND_ETCD_REQ_MAX];
    size_t nc = 0;
    pthread_mutex_lock(&e->lock);
    if (!e->eval) {
        pthread_mutex_unlock(&e->lock);
        return;
    }
    e->eval = 0;
    for (struct etcd_rec *r = e->recs; r && nc < 64; r = r->next) {
        if (!r->parked || r->busy || r->cancelled || r->end_status)
            continue;
        if (may_grant_locked(r->b, r->n, r->units, r->id, capmods[nc])) {
            r->busy = 1;
            cand[nc++] = r;
        }
    }
    if (nc == 64)
        e->eval = 1;
    pthread_mutex_unlock(&e->lock);
    for (size_t k = 0; k < nc; k++) {
        struct etcd_rec *r = cand[k];
        struct req_text t;
        int64_t token = 0;
        int rc = text_build(&t, e, r->n, r->b, r->units, r->id);
        if (rc == 0) {
            rc = mark_txn(e, r->n, r->b, &t, r->lease, capmods[k], &token);
            text_free(&t);
        }
        pthread_mutex_lock(&e->lock);
        r->busy = 0;
        if (r->cancelled || rc == BAND_ESTALE || rc < 0) {
            if (rc == BAND_ESTALE && !r->cancelled && !r->end_status) {
                r->end_status = BAND_ESTALE; /* its key went away: the lease did */
                e->lease_check = 1;
            }
            if (rc < 0 && rc != BAND_ESTALE)
                e->eval = 1; /* try again on the next turn */
            pthread_mutex_unlock(&e->lock);
            continue;
        }
        if (rc == 1) {
            pthread_mutex_unlock(&e->lock);
            continue;
        }
        /* Written under the lock the cancel hook takes: a cancel cannot have returned
         * (and the owner freed the operation) before this write. */
        note_granted_locked(e, r->n, r->b, r->units, r->id, r->lease, 0, token);
        fill_grant_locked(e, r->out, r->n, r->units, r->id, r->lease, token);
        unlink_rec_locked(e, r);
        pthread_mutex_unlock(&e->lock);
        if (band_relay_complete(e->relay, r->w, 0) != 0)
            (void)etcd_delete_req(e, r->n, r->b, r->id, NULL); /* cancelled meanwhile */
        etcd_rec_free(r);
    }
}

void etcd_process_recs(struct band_etcd *e)
{
    process_ends(e);
    process_grants(e);
}

/* ---- blocking calls: an asynchronous submission and an eventfd ------------------- */

/* Shared by the blocked caller and the request's record: freed by the last of them, so
 * the client's thread never touches freed memory however a cancel races a grant. */
struct blocking {
    band_waiter w;
    band_etcd_grant g;
    int efd;
    atomic_int done;
    atomic_int refs;
    band_cancel_hook hook;
};

static void blocking_unref(void *arg)
{
    struct blocking *k = arg;
    if (atomic_fetch_sub(&k->refs, 1) == 1) {
        close(k->efd);
        free(k);
    }
}

static void poke(int fd)
{
    uint64_t one = 1;
    ssize_t rc;
    do
        rc = write(fd, &one, sizeof(one));
    while (rc < 0 && errno == EINTR);
}

static void blocking_wake(band_waiter *w)
{
    struct blocking *k = w->data;
    atomic_store(&k->done, 1);
    poke(k->efd);
}

static void blocking_cancel(band_cancel_hook *h)
{
    struct blocking *k = h->data;
    poke(k->efd); /* async-signal-safe */
}

static void wait_fd(int fd, band_time deadline)
{
    int ms = -1;
    if (deadline != BAND_FOREVER) {
        band_time left = deadline - band_now();
        ms = left <= 0 ? 0 : (int)((left + BAND_MSEC - 1) / BAND_MSEC);
        if (left > 1000 * BAND_SEC)
            ms = 1000 * 1000;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) > 0) {
        uint64_t v;
        ssize_t rc = read(fd, &v, sizeof(v));
        (void)rc;
    }
}

int etcd_wait_blocking(struct band_etcd *e, uint32_t n, struct band_etcd_budget *const *b,
                       const uint64_t *units, band_etcd_grant *out, band_time deadline,
                       band_cancel *cancel)
{
    /* On the client's own thread (a wake, on_lost) nothing can be granted while this call
     * waits: answer as a deadline that has passed does. */
    if (pthread_equal(pthread_self(), e->thread))
        deadline = band_now();
    /* On the heap: the client's thread may look at the waiter after a cancel. */
    struct blocking *k = calloc(1, sizeof(*k));
    if (k == NULL)
        return BAND_ENOMEM;
    k->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (k->efd < 0) {
        free(k);
        return BAND_ENOMEM;
    }
    band_waiter_init(&k->w, blocking_wake, k);
    atomic_init(&k->refs, 2);
    char id[BAND_ETCD_ID_SIZE];
    int rc = etcd_submit(e, n, b, units, &k->w, &k->g, ETCD_ASYNC, id, blocking_unref, k);
    if (rc != BAND_PENDING) {
        if (rc == 0)
            *out = k->g;
        close(k->efd);
        free(k);
        return rc;
    }
    int hooked = 0;
    if (cancel) {
        band_cancel_hook_init(&k->hook, blocking_cancel, k);
        hooked = band_cancel_hook_add(cancel, &k->hook) == 0;
    }
    int result = BAND_PENDING;
    for (;;) {
        if (atomic_load(&k->done)) {
            result = band_waiter_status(&k->w);
            break;
        }
        int reason = 0;
        if (cancel && band_cancel_is_requested(cancel))
            reason = BAND_ECANCELED;
        else if (deadline != BAND_FOREVER && band_now() >= deadline)
            reason = BAND_ETIMEDOUT;
        if (reason) {
            if (band_waiter_cancel(&k->w, reason) == 0) {
                /* Withdrawn: delete the key before answering, so it is gone on return. */
                (void)etcd_delete_req(e, n, b, id, NULL);
                result = reason;
                break;
            }
            deadline = BAND_FOREVER; /* completing: wait for the wake */
            cancel = NULL;
            continue;
        }
        wait_fd(k->efd, deadline);
    }
    if (hooked)
        (void)band_cancel_hook_remove(&k->hook);
    if (result == 0)
        *out = k->g;
    blocking_unref(k);
    return result;
}

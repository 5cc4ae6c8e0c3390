/* SPDX-License-Identifier: MIT */
/*
 * etcd_watch.c - the client's thread: one streaming watch per open budget (a curl multi
 * loop) that keeps the budget's view current, the lease's renewal every TTL/3 and the
 * detection of its loss, the end and the grant of queued requests, and the restart of a
 * watch on the next endpoint after a failure (from the view's revision + 1; after a
 * compaction, from a fresh read).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_internal.h"

#define WATCH_BATCH 64
#define WATCH_RETRY (200 * BAND_MSEC)
#define TICK_MS     100

void etcd_watch_linger(struct band_etcd_budget *b)
{
    b->watch_until = band_now() + ETCD_WATCH_LINGER;
}

/* 1 when @key is a request of this client's current lease (its id starts "<lease>-"). */
static int own_request(const struct band_etcd *e, const band_etcd_budget *b, const char *key)
{
    size_t n = strlen(b->q_pfx);
    if (strncmp(key, b->q_pfx, n) != 0 || e->lease == 0)
        return 0;
    char lease[24];
    int len = snprintf(lease, sizeof(lease), "%llx-", (unsigned long long)e->lease);
    return len > 0 && strncmp(key + n, lease, (size_t)len) == 0;
}

static void apply_event(struct band_etcd *e, band_etcd_budget *b, const json_t *ev, int64_t base,
                        int64_t *maxrev)
{
    const json_t *kv = json_object_get(ev, "kv");
    int64_t mod = etcd_json_i64(kv, "mod_revision");
    if (mod <= base)
        return; /* already in the view (it was read after this change) */
    if (mod > *maxrev)
        *maxrev = mod;
    const char *k64 = json_string_value(json_object_get(kv, "key"));
    char *key = etcd_b64_decode(k64 ? k64 : "", NULL);
    if (key == NULL)
        return;
    if (!own_request(e, b, key))
        etcd_watch_linger(b);
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (type && strcmp(type, "DELETE") == 0) {
        etcd_view_apply(&b->view, b, key, NULL, 0, 0, mod, 0);
        /* A queued request of ours that went away without us (its lease ended, or an
         * operator deleted it) ends, and the lease is checked at once. */
        const char *id =
            strncmp(key, b->q_pfx, strlen(b->q_pfx)) == 0 ? key + strlen(b->q_pfx) : NULL;
        for (struct etcd_rec *r = e->recs; id && r; r = r->next) {
            if (strcmp(r->id, id) == 0 && !r->cancelled && !r->end_status && !r->busy) {
                r->end_status = BAND_ESTALE; /* it can never be granted now */
                e->lease_check = 1;
            }
        }
    } else {
        const char *v64 = json_string_value(json_object_get(kv, "value"));
        size_t vlen = 0;
        char *value = etcd_b64_decode(v64 ? v64 : "", &vlen);
        if (value)
            etcd_view_apply(&b->view, b, key, value, vlen, etcd_json_i64(kv, "create_revision"),
                            mod, etcd_json_i64(kv, "lease"));
        free(value);
    }
    free(key);
}

/* One message of the stream; 0 to go on, -1 to end the stream. */
static int watch_message(band_etcd_budget *b, const char *line, size_t len)
{
    struct band_etcd *e = b->e;
    json_t *j = json_loadb(line, len, 0, NULL);
    const json_t *res = json_object_get(j, "result");
    if (res == NULL) {
        json_decref(j);
        return -1;
    }
    if (etcd_json_i64(res, "compact_revision") > 0 ||
        json_is_true(json_object_get(res, "canceled"))) {
        b->watch_rerange = 1;
        json_decref(j);
        return -1;
    }
    const json_t *evs = json_object_get(res, "events");
    if (json_array_size(evs) > 0) {
        pthread_mutex_lock(&e->lock);
        int64_t base = b->view.rev, maxrev = base;
        for (size_t i = 0; i < json_array_size(evs); i++)
            apply_event(e, b, json_array_get(evs, i), base, &maxrev);
        b->view.rev = maxrev;
        e->eval = 1;
        pthread_mutex_unlock(&e->lock);
    }
    json_decref(j);
    return 0;
}

static size_t watch_write(char *data, size_t size, size_t nmemb, void *arg)
{
    band_etcd_budget *b = arg;
    size_t len = size * nmemb;
    if (b->wlen + len + 1 > b->wcap) {
        size_t cap = b->wcap ? b->wcap * 2 : 4096;
        while (cap < b->wlen + len + 1)
            cap *= 2;
        if (cap > ((size_t)64 << 20))
            return 0; /* a message this large is not ours: start again */
        char *p = realloc(b->wbuf, cap);
        if (p == NULL)
            return 0;
        b->wbuf = p;
        b->wcap = cap;
    }
    memcpy(b->wbuf + b->wlen, data, len);
    b->wlen += len;
    size_t start = 0;
    for (size_t i = 0; i < b->wlen; i++) {
        if (b->wbuf[i] != '\n')
            continue;
        if (i > start && watch_message(b, b->wbuf + start, i - start) != 0)
            return 0;
        start = i + 1;
    }
    memmove(b->wbuf, b->wbuf + start, b->wlen - start);
    b->wlen -= start;
    return len;
}

static void watch_close(struct band_etcd *e, band_etcd_budget *b)
{
    if (b->watch) {
        curl_multi_remove_handle(e->multi, b->watch);
        curl_easy_cleanup(b->watch);
        b->watch = NULL;
        atomic_fetch_sub(&e->watches, 1);
    }
    curl_slist_free_all(b->watch_hdrs);
    b->watch_hdrs = NULL;
    free(b->watch_body);
    b->watch_body = NULL;
    free(b->wbuf);
    b->wbuf = NULL;
    b->wlen = b->wcap = 0;
}

void etcd_watch_stop(struct band_etcd *e, band_etcd_budget *b)
{
    watch_close(e, b);
    pthread_mutex_lock(&e->lock);
    b->watch_gone = 1;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
}

static void watch_start(struct band_etcd *e, band_etcd_budget *b)
{
    if (b->watch_rerange) {
        struct etcd_kvs kvs;
        int64_t rev = 0;
        if (etcd_range(e, b->pfx, b->end, &kvs, &rev) != 0) {
            b->watch_retry = band_now() + WATCH_RETRY;
            return;
        }
        pthread_mutex_lock(&e->lock);
        b->view.rev = 0; /* replace it whatever it had */
        etcd_view_load(&b->view, b, &kvs, rev);
        e->eval = 1;
        pthread_mutex_unlock(&e->lock);
        etcd_kvs_free(&kvs);
        b->watch_rerange = 0;
    }
    pthread_mutex_lock(&e->lock);
    int64_t from = b->view.rev + 1;
    pthread_mutex_unlock(&e->lock);
    json_t *req = json_object();
    char *k = etcd_b64_encode(b->pfx, strlen(b->pfx));
    char *end = etcd_b64_encode(b->end, strlen(b->end));
    json_object_set_new(req, "key", json_string(k ? k : ""));
    json_object_set_new(req, "range_end", json_string(end ? end : ""));
    json_object_set_new(req, "start_revision", etcd_json_i64_new(from));
    free(k);
    free(end);
    json_t *body = json_pack("{s:o}", "create_request", req);
    b->watch_body = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    size_t idx;
    const char *ep = etcd_http_endpoint(&e->http, &idx);
    size_t ulen = strlen(ep) + 16;
    char *url = malloc(ulen);
    b->watch = curl_easy_init();
    if (b->watch)
        atomic_fetch_add(&e->watches, 1); /* watch_close() takes it back */
    b->watch_hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    if (b->watch_body == NULL || url == NULL || b->watch == NULL || b->watch_hdrs == NULL) {
        free(url);
        watch_close(e, b);
        b->watch_retry = band_now() + WATCH_RETRY;
        return;
    }
    (void)snprintf(url, ulen, "%s/v3/watch", ep);
    b->watch_ep = idx;
    CURL *c = b->watch;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, b->watch_body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, b->watch_hdrs);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, e->http.connect_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 2L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(c, CURLOPT_PRIVATE, b);
    free(url);
    curl_multi_add_handle(e->multi, c);
}

/* 1 when a request of this client waits in @b (lock held). */
static int has_waiting(const struct band_etcd *e, const band_etcd_budget *b)
{
    for (const struct etcd_rec *r = e->recs; r; r = r->next)
        for (uint32_t i = 0; i < r->n; i++)
            if (r->b[i] == b)
                return 1;
    return 0;
}

/* 1 when @b wants a watch now (lock held). A budget only this client uses needs none: its
 * own writes enter the view at once, and the fast path's compare catches whatever else
 * changed. A watch runs while a request of ours waits, and for a while after any sign of
 * another user, so that the fast path keeps finding a current view; each watch event is
 * work for the cluster, so an idle one is closed. */
static int wants_watch(const struct band_etcd *e, const band_etcd_budget *b, band_time now)
{
    return !b->dying && (now < b->watch_until || has_waiting(e, b));
}

/* Start and stop the watches the budgets want. */
static void sync_watches(struct band_etcd *e)
{
    band_etcd_budget *start[WATCH_BATCH], *stop[WATCH_BATCH], *move[WATCH_BATCH],
        *idle[WATCH_BATCH];
    size_t ns = 0, nt = 0, nm = 0, ni = 0;
    band_time now = band_now();
    size_t current;
    (void)etcd_http_endpoint(&e->http, &current);
    pthread_mutex_lock(&e->lock);
    for (band_etcd_budget *b = e->budgets; b; b = b->next) {
        int want = wants_watch(e, b, now);
        if (b->dying && !b->watch_gone && nt < WATCH_BATCH)
            stop[nt++] = b;
        else if (want && b->watch == NULL && now >= b->watch_retry && ns < WATCH_BATCH)
            start[ns++] = b;
        else if (want && b->watch != NULL && b->watch_ep != current && nm < WATCH_BATCH)
            move[nm++] = b;
        else if (!want && !b->dying && b->watch != NULL && ni < WATCH_BATCH)
            idle[ni++] = b;
    }
    pthread_mutex_unlock(&e->lock);
    for (size_t i = 0; i < nt; i++)
        etcd_watch_stop(e, stop[i]);
    /* The view keeps the revision of the last event applied: a later watch starts after
     * it, so nothing is missed in between. */
    for (size_t i = 0; i < ni; i++)
        watch_close(e, idle[i]);
    /* A request failed over away from the endpoint a watch is on: that member may be
     * stalled with the stream still open, so follow the requests to the next one. */
    for (size_t i = 0; i < nm; i++) {
        watch_close(e, move[i]);
        watch_start(e, move[i]);
    }
    for (size_t i = 0; i < ns; i++)
        watch_start(e, start[i]);
}

static void finished_watches(struct band_etcd *e)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(e->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        band_etcd_budget *b = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&b);
        if (b == NULL)
            continue;
        CURLcode rc = m->data.result;
        size_t ep = b->watch_ep;
        watch_close(e, b);
        b->watch_retry = band_now() + WATCH_RETRY;
        /* An error of ours (a message we ended on) is not the endpoint's fault. */
        if (rc != CURLE_WRITE_ERROR || b->watch_rerange == 0)
            etcd_http_failover(&e->http, ep);
    }
}

static void lease_turn(struct band_etcd *e)
{
    band_time now = band_now();
    pthread_mutex_lock(&e->lock);
    int64_t lease = e->lease;
    int due = now >= e->next_keepalive || e->lease_check;
    band_time deadline = e->lease_deadline;
    pthread_mutex_unlock(&e->lock);
    if (lease == 0) {
        if (etcd_take_lease(e) != 0) {
            pthread_mutex_lock(&e->lock);
            e->next_keepalive = now + 500 * BAND_MSEC;
            pthread_mutex_unlock(&e->lock);
        }
        return;
    }
    if (due) {
        int64_t ttl = 0;
        int rc = etcd_lease_keepalive(e, lease, &ttl);
        if (rc == 0 && ttl <= 0) {
            etcd_lease_lost(e, lease);
            return;
        }
        pthread_mutex_lock(&e->lock);
        if (rc == 0) {
            e->lease_deadline = now + ttl * BAND_SEC;
            e->next_keepalive = now + e->ttl_s * BAND_SEC / 3;
            e->lease_check = 0;
            deadline = e->lease_deadline;
        } else {
            e->next_keepalive = now + 250 * BAND_MSEC;
        }
        pthread_mutex_unlock(&e->lock);
        if (rc == 0)
            atomic_fetch_add(&e->keepalives, 1);
    }
    if (band_now() >= deadline)
        etcd_lease_lost(e, lease); /* no renewal in time: the server may have ended it */
}

void *etcd_thread_main(void *arg)
{
    struct band_etcd *e = arg;
    band_time next_sweep = 0;
    for (;;) {
        pthread_mutex_lock(&e->lock);
        int stop = e->stop;
        pthread_mutex_unlock(&e->lock);
        if (stop)
            break;
        sync_watches(e);
        lease_turn(e);
        etcd_process_recs(e);
        band_time now = band_now();
        if (now >= next_sweep) {
            /* A slow beat: deletions that could not be made, and queued requests whose
             * marking failed on an unreachable cluster. */
            next_sweep = now + BAND_SEC;
            etcd_retry_orphans(e);
            pthread_mutex_lock(&e->lock);
            if (e->recs)
                e->eval = 1;
            pthread_mutex_unlock(&e->lock);
        }
        int running = 0;
        curl_multi_perform(e->multi, &running);
        finished_watches(e);
        /* Sleep until the next renewal or the slow beat (a kick wakes it sooner); retry
         * missing watches on a short tick. */
        pthread_mutex_lock(&e->lock);
        int busy = e->eval || e->lease_check;
        band_time wake = e->next_keepalive < next_sweep ? e->next_keepalive : next_sweep;
        now = band_now();
        for (band_etcd_budget *b = e->budgets; b; b = b->next) {
            if (b->watch == NULL && wants_watch(e, b, now))
                wake = now + TICK_MS * BAND_MSEC;
            else if (b->watch != NULL && b->watch_until > now && b->watch_until < wake)
                wake = b->watch_until; /* close it when it is no longer wanted */
        }
        pthread_mutex_unlock(&e->lock);
        band_time left = wake - band_now();
        int ms = left <= 0 ? 0 : (int)((left + BAND_MSEC - 1) / BAND_MSEC);
        if (!busy && ms > 0)
            curl_multi_poll(e->multi, NULL, 0, ms > 1000 ? 1000 : ms, NULL);
    }
    pthread_mutex_lock(&e->lock);
    for (band_etcd_budget *b = e->budgets; b; b = b->next)
        watch_close(e, b);
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* SPDX-License-Identifier: MIT */
/*
 * bench_etcd - one measurement of acquire+release on an etcd cluster, by one of five
 * ways, with C concurrent clients (threads), for bench/etcd/run.sh.
 *
 *   bench_etcd -e ENDPOINTS -m band|bare|tput|txn|lock -c CLIENTS -n OPS [-k CAPACITY]
 *
 *   band  band_etcd_budget_acquire(1) + band_etcd_budget_release() on a budget of its own
 *         (capacity 1, or -k; uncontended: one pair at a time): every thread has its own band_etcd
 * client (its own lease, connection and thread); bare  the floor of the same work through
 * the same path: a put of a key (a request's value, under a lease) and its delete, two HTTP/JSON
 * requests of the JSON gateway on a kept-alive libcurl handle per thread; txn   the protocol's own
 * requests sent bare: the fast path's transaction as a client that has its budget to itself sends
 * it (nothing in the budget modified since a revision: put the key granted) and the release's
 * delete, on a budget of its own; what the band way costs without the library's client (its view,
 * thread); tput  bare's put sent as a transaction with no compare, then the delete: what the
 * transaction path costs the server beyond a put before any compare; lock  etcd's mutex recipe as a
 * service: /v3/lock/lock (with a lease) and /v3/lock/unlock through the gateway, a lock name per
 * thread, a handle per thread.
 *
 * Each thread does OPS acquire+release pairs after a common start; prints one line:
 *   MODE CLIENTS OPS_TOTAL SECONDS OPS_PER_S MEDIAN_US P99_US REQUESTS_PER_PAIR
 * (latency of one acquire+release pair; HTTP requests the pairs sent, per pair: for band
 * its client's counter, so its renewals of the lease count too). Exit status 0, 1 when an operation
 * failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include <band/band.h>
#include <band/etcd.h>

enum mode { MODE_BAND, MODE_BARE, MODE_TPUT, MODE_TXN, MODE_LOCK };

struct cfg {
    const char *endpoint; /* the first of the list: bare and lock talk to one member */
    const char *endpoints;
    enum mode mode;
    int clients;
    int ops;
    int capacity; /* of band's budgets */
};

struct thr {
    const struct cfg *cfg;
    int index;
    pthread_t tid;
    int64_t *lat; /* ns per pair */
    int failed;
    uint64_t requests; /* HTTP requests during the pairs */
};

static pthread_barrier_t start;

static int64_t mono_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---------------------------------------------------------------------------------------
 * The JSON gateway through one kept-alive handle. */

struct http {
    CURL *c;
    struct curl_slist *hdr;
    char *buf;
    size_t len, cap;
    char url[256];
    const char *base;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    struct http *h = arg;
    size_t n = size * nmemb;
    if (h->len + n + 1 > h->cap) {
        h->cap = (h->len + n + 1) * 2;
        h->buf = realloc(h->buf, h->cap);
        if (!h->buf)
            return 0;
    }
    memcpy(h->buf + h->len, p, n);
    h->len += n;
    h->buf[h->len] = '\0';
    return n;
}

static int http_init(struct http *h, const char *base)
{
    memset(h, 0, sizeof(*h));
    h->base = base;
    h->c = curl_easy_init();
    if (!h->c)
        return -1;
    h->hdr = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h->c, CURLOPT_HTTPHEADER, h->hdr);
    curl_easy_setopt(h->c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h->c, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(h->c, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h->c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h->c, CURLOPT_TIMEOUT_MS, 1000L);
    curl_easy_setopt(h->c, CURLOPT_CONNECTTIMEOUT_MS, 200L);
    return 0;
}

static void http_free(struct http *h)
{
    curl_slist_free_all(h->hdr);
    curl_easy_cleanup(h->c);
    free(h->buf);
}

/* POST @body to @path; the answer parsed, or NULL. */
static json_t *http_post(struct http *h, const char *path, const char *body)
{
    (void)snprintf(h->url, sizeof(h->url), "%s%s", h->base, path);
    h->len = 0;
    curl_easy_setopt(h->c, CURLOPT_URL, h->url);
    curl_easy_setopt(h->c, CURLOPT_POSTFIELDS, body);
    long code = 0;
    if (curl_easy_perform(h->c) != CURLE_OK)
        return NULL;
    curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200 || !h->buf)
        return NULL;
    return json_loadb(h->buf, h->len, 0, NULL);
}

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64(const char *s, char *out)
{
    size_t n = strlen(s), o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)(unsigned char)s[i + 1] << 8;
        if (i + 2 < n)
            v |= (uint32_t)(unsigned char)s[i + 2];
        out[o++] = b64chars[(v >> 18) & 63];
        out[o++] = b64chars[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? b64chars[v & 63] : '=';
    }
    out[o] = '\0';
}

/* A lease of @ttl seconds; its id as the gateway writes it (a decimal string). */
static int lease_grant(struct http *h, int ttl, char *id, size_t idlen)
{
    char body[64];
    (void)snprintf(body, sizeof(body), "{\"TTL\":%d}", ttl);
    json_t *r = http_post(h, "/v3/lease/grant", body);
    const char *s = json_string_value(json_object_get(r, "ID"));
    int ok = s != NULL;
    if (ok)
        (void)snprintf(id, idlen, "%s", s);
    json_decref(r);
    return ok ? 0 : -1;
}

/* ---------------------------------------------------------------------------------------
 * The three ways. */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void run_band(struct thr *t)
{
    const struct cfg *cfg = t->cfg;
    band_etcd *e = NULL;
    band_etcd_budget *b = NULL;
    char name[64];
    (void)snprintf(name, sizeof(name), "bench-%ld-%d", (long)getpid(), t->index);
    int rc = band_etcd_create(&e, cfg->endpoints, NULL);
    if (rc == 0)
        rc = band_etcd_budget_create(&b, e, name, (uint64_t)cfg->capacity);
    if (rc != 0) {
        fprintf(stderr, "bench_etcd: band open: %s\n", band_err_name(rc));
        t->failed = 1;
    }
    band_etcd_stats s0 = {0}, s1 = {0};
    if (e)
        (void)band_etcd_get_stats(e, &s0);
    pthread_barrier_wait(&start);
    for (int i = 0; i < cfg->ops && !t->failed; i++) {
        band_etcd_grant g;
        int64_t t0 = mono_ns();
        rc = band_etcd_budget_acquire(b, 1, &g, BAND_FOREVER, NULL);
        if (rc == 0)
            rc = band_etcd_budget_release(b, &g);
        t->lat[i] = mono_ns() - t0;
        if (rc != 0) {
            fprintf(stderr, "bench_etcd: band: %s\n", band_err_name(rc));
            t->failed = 1;
        }
    }
    if (e)
        (void)band_etcd_get_stats(e, &s1);
    t->requests = s1.requests - s0.requests;
    (void)band_etcd_budget_destroy(b);
    (void)band_etcd_destroy(e);
}

static void run_http(struct thr *t)
{
    const struct cfg *cfg = t->cfg;
    struct http h;
    char lease[32] = "", key[128], kb[192], put[512], del[256];
    if (http_init(&h, cfg->endpoint) != 0 || lease_grant(&h, 30, lease, sizeof(lease)) != 0) {
        fprintf(stderr, "bench_etcd: no lease from %s\n", cfg->endpoint);
        t->failed = 1;
    }
    char txn[2048];
    if (cfg->mode == MODE_TXN) {
        char vb[128], pb[128], eb[128], pfx[96], end[96];
        (void)snprintf(pfx, sizeof(pfx), "/bench-txn/%ld-%d/", (long)getpid(), t->index);
        (void)snprintf(end, sizeof(end), "/bench-txn/%ld-%d0", (long)getpid(), t->index);
        (void)snprintf(key, sizeof(key), "%sq/%s-1", pfx, lease);
        b64(key, kb);
        b64(pfx, pb);
        b64(end, eb);
        b64("{\"u\":1,\"g\":1,\"h\":\"bench\",\"p\":1}", vb);
        (void)snprintf(txn, sizeof(txn),
                       "{\"compare\":[{\"result\":\"LESS\",\"target\":\"MOD\",\"key\":\"%s\","
                       "\"range_end\":\"%s\",\"mod_revision\":\"9223372036854775807\"}],"
                       "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\","
                       "\"lease\":\"%s\"}}],\"failure\":[]}",
                       pb, eb, kb, vb, lease);
        (void)snprintf(del, sizeof(del), "{\"key\":\"%s\"}", kb);
    } else if (cfg->mode == MODE_BARE || cfg->mode == MODE_TPUT) {
        /* The key and value a request of the library has. */
        char vb[128];
        (void)snprintf(key, sizeof(key), "/bench-bare/%ld-%d/q/%s-1", (long)getpid(), t->index,
                       lease);
        b64(key, kb);
        b64("{\"u\":1,\"g\":1,\"h\":\"bench\",\"p\":1}", vb);
        (void)snprintf(put, sizeof(put), "{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%s\"}", kb,
                       vb, lease);
        (void)snprintf(txn, sizeof(txn), "{\"success\":[{\"request_put\":%s}]}", put);
        (void)snprintf(del, sizeof(del), "{\"key\":\"%s\"}", kb);
    } else {
        (void)snprintf(key, sizeof(key), "/bench-lock/%ld-%d", (long)getpid(), t->index);
        b64(key, kb);
        (void)snprintf(put, sizeof(put), "{\"name\":\"%s\",\"lease\":\"%s\"}", kb, lease);
    }
    pthread_barrier_wait(&start);
    for (int i = 0; i < cfg->ops && !t->failed; i++) {
        int64_t t0 = mono_ns();
        json_t *r;
        if (cfg->mode == MODE_TXN) {
            r = http_post(&h, "/v3/kv/txn", txn);
            t->requests++;
            if (r && !json_is_true(json_object_get(r, "succeeded"))) {
                json_decref(r);
                r = NULL;
            }
            if (r) {
                json_decref(r);
                r = http_post(&h, "/v3/kv/deleterange", del);
                t->requests++;
            }
        } else if (cfg->mode == MODE_BARE || cfg->mode == MODE_TPUT) {
            r = cfg->mode == MODE_BARE ? http_post(&h, "/v3/kv/put", put)
                                       : http_post(&h, "/v3/kv/txn", txn);
            t->requests++;
            if (r) {
                json_decref(r);
                r = http_post(&h, "/v3/kv/deleterange", del);
                t->requests++;
            }
        } else {
            r = http_post(&h, "/v3/lock/lock", put);
            t->requests++;
            const char *held = json_string_value(json_object_get(r, "key"));
            if (held) {
                (void)snprintf(del, sizeof(del), "{\"key\":\"%s\"}", held);
                json_decref(r);
                r = http_post(&h, "/v3/lock/unlock", del);
                t->requests++;
            } else {
                json_decref(r);
                r = NULL;
            }
        }
        t->lat[i] = mono_ns() - t0;
        if (!r) {
            fprintf(stderr, "bench_etcd: %s: a request failed\n",
                    cfg->mode == MODE_BARE   ? "bare"
                    : cfg->mode == MODE_TPUT ? "tput"
                    : cfg->mode == MODE_TXN  ? "txn"
                                             : "lock");
            t->failed = 1;
        }
        json_decref(r);
    }
    if (lease[0]) {
        char body[64];
        (void)snprintf(body, sizeof(body), "{\"ID\":\"%s\"}", lease);
        json_decref(http_post(&h, "/v3/lease/revoke", body));
    }
    http_free(&h);
}

static void *thread_main(void *arg)
{
    struct thr *t = arg;
    if (t->cfg->mode == MODE_BAND)
        run_band(t);
    else
        run_http(t);
    return NULL;
}

int main(int argc, char **argv)
{
    struct cfg cfg = {0};
    const char *mode = NULL;
    int c;
    cfg.capacity = 1;
    while ((c = getopt(argc, argv, "e:m:c:n:k:")) != -1) {
        switch (c) {
        case 'e':
            cfg.endpoints = optarg;
            break;
        case 'm':
            mode = optarg;
            break;
        case 'c':
            cfg.clients = atoi(optarg);
            break;
        case 'n':
            cfg.ops = atoi(optarg);
            break;
        case 'k':
            cfg.capacity = atoi(optarg);
            break;
        default:
            return 2;
        }
    }
    if (!cfg.endpoints || !mode || cfg.clients <= 0 || cfg.clients > 1024 || cfg.ops <= 0 ||
        cfg.capacity <= 0) {
        fprintf(stderr,
                "usage: bench_etcd -e ENDPOINTS -m band|bare|tput|txn|lock -c CLIENTS -n OPS\n");
        return 2;
    }
    if (strcmp(mode, "band") == 0)
        cfg.mode = MODE_BAND;
    else if (strcmp(mode, "bare") == 0)
        cfg.mode = MODE_BARE;
    else if (strcmp(mode, "tput") == 0)
        cfg.mode = MODE_TPUT;
    else if (strcmp(mode, "txn") == 0)
        cfg.mode = MODE_TXN;
    else if (strcmp(mode, "lock") == 0)
        cfg.mode = MODE_LOCK;
    else
        return 2;
    static char first[256];
    (void)snprintf(first, sizeof(first), "%.*s", (int)strcspn(cfg.endpoints, ","), cfg.endpoints);
    cfg.endpoint = first;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct thr *t = calloc((size_t)cfg.clients, sizeof(*t));
    int64_t *lat = calloc((size_t)cfg.clients * (size_t)cfg.ops, sizeof(*lat));
    if (!t || !lat)
        return 1;
    pthread_barrier_init(&start, NULL, (unsigned)cfg.clients + 1);
    for (int i = 0; i < cfg.clients; i++) {
        t[i].cfg = &cfg;
        t[i].index = i;
        t[i].lat = lat + (size_t)i * (size_t)cfg.ops;
        if (pthread_create(&t[i].tid, NULL, thread_main, &t[i]) != 0)
            return 1;
    }
    pthread_barrier_wait(&start);
    int64_t t0 = mono_ns();
    int failed = 0;
    uint64_t requests = 0;
    for (int i = 0; i < cfg.clients; i++) {
        pthread_join(t[i].tid, NULL);
        failed |= t[i].failed;
        requests += t[i].requests;
    }
    double secs = (double)(mono_ns() - t0) / 1e9;
    size_t n = (size_t)cfg.clients * (size_t)cfg.ops;
    qsort(lat, n, sizeof(*lat), cmp_i64);
    printf("%s %d %zu %.3f %.1f %.1f %.1f %.2f\n", mode, cfg.clients, n, secs, (double)n / secs,
           (double)lat[n / 2] / 1e3, (double)lat[(n * 99) / 100] / 1e3,
           (double)requests / (double)n);
    free(lat);
    free(t);
    curl_global_cleanup();
    return failed ? 1 : 0;
}

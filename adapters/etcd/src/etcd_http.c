/* SPDX-License-Identifier: MIT */
/*
 * etcd_http.c - the transport: endpoints, a pool of curl handles, one JSON POST with a
 * timeout and failover to the next endpoint, base64 and int64 helpers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd_internal.h"

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static void curl_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void free_endpoints(struct etcd_http *h)
{
    for (size_t i = 0; i < h->n_ep; i++)
        free(h->ep[i]);
    free(h->ep);
    h->ep = NULL;
    h->n_ep = 0;
}

/* One endpoint: "http://host:port" or "https://...", optional trailing '/'. */
static int add_endpoint(struct etcd_http *h, const char *s, size_t len)
{
    while (len > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '/'))
        len--;
    if (len == 0 || len > 512)
        return BAND_EINVAL;
    if (!(len > 7 && strncmp(s, "http://", 7) == 0) && !(len > 8 && strncmp(s, "https://", 8) == 0))
        return BAND_EINVAL;
    char **ep = realloc(h->ep, (h->n_ep + 1) * sizeof(*ep));
    if (ep == NULL)
        return BAND_ENOMEM;
    h->ep = ep;
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return BAND_ENOMEM;
    memcpy(copy, s, len);
    copy[len] = '\0';
    h->ep[h->n_ep++] = copy;
    return 0;
}

int etcd_http_init(struct etcd_http *h, const char *endpoints, band_time timeout,
                   band_time connect_timeout)
{
    memset(h, 0, sizeof(*h));
    pthread_once(&g_curl_once, curl_once);
    const char *p = endpoints;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int rc = add_endpoint(h, p, len);
        if (rc != 0) {
            free_endpoints(h);
            return rc;
        }
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    h->timeout_ms = (long)((timeout + BAND_MSEC - 1) / BAND_MSEC);
    h->connect_ms = (long)((connect_timeout + BAND_MSEC - 1) / BAND_MSEC);
    pthread_mutex_init(&h->pool_lock, NULL);
    atomic_init(&h->current, 0);
    return 0;
}

void etcd_http_fini(struct etcd_http *h)
{
    for (size_t i = 0; i < h->n_pool; i++)
        curl_easy_cleanup(h->pool[i]);
    h->n_pool = 0;
    pthread_mutex_destroy(&h->pool_lock);
    free_endpoints(h);
}

const char *etcd_http_endpoint(struct etcd_http *h, size_t *idx)
{
    size_t i = atomic_load(&h->current) % h->n_ep;
    if (idx)
        *idx = i;
    return h->ep[i];
}

void etcd_http_failover(struct etcd_http *h, size_t idx)
{
    size_t expect = idx;
    /* Only the first of several threads that saw idx fail moves on. */
    if (atomic_compare_exchange_strong(&h->current, &expect, (idx + 1) % h->n_ep))
        atomic_fetch_add(&h->failovers, 1);
}

static CURL *pool_get(struct etcd_http *h)
{
    CURL *c = NULL;
    pthread_mutex_lock(&h->pool_lock);
    if (h->n_pool > 0)
        c = h->pool[--h->n_pool];
    pthread_mutex_unlock(&h->pool_lock);
    return c ? c : curl_easy_init();
}

static void pool_put(struct etcd_http *h, CURL *c)
{
    pthread_mutex_lock(&h->pool_lock);
    if (h->n_pool < ETCD_POOL_MAX) {
        h->pool[h->n_pool++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&h->pool_lock);
    if (c)
        curl_easy_cleanup(c);
}

struct buf {
    char *p;
    size_t n;
    size_t cap;
};

static size_t buf_write(char *data, size_t size, size_t nmemb, void *arg)
{
    struct buf *b = arg;
    size_t len = size * nmemb;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->n + len + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
    b->p[b->n] = '\0';
    return len;
}

/* A gRPC code that says "this member cannot serve now: ask another one". */
static int grpc_try_elsewhere(int code)
{
    return code == 14 /* Unavailable: no leader, leader changed */ ||
           code == 4 /* DeadlineExceeded */;
}

int etcd_http_post(struct etcd_http *h, const char *path, json_t *body, json_t **out,
                   int *grpc_code, int *maybe_applied)
{
    *out = NULL;
    char *text = json_dumps(body, JSON_COMPACT);
    if (text == NULL)
        return BAND_ENOMEM;
    CURL *c = pool_get(h);
    if (c == NULL) {
        free(text);
        return BAND_ENOMEM;
    }
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    int rc = BAND_EUNAVAIL;
    band_time started = band_now();
    /* Two rounds over the endpoints, the second after a short pause: a cluster electing a
     * leader answers "unavailable" everywhere for a few hundred milliseconds. */
    for (size_t attempt = 0; attempt < 2 * h->n_ep; attempt++) {
        if (attempt == h->n_ep) {
            if (band_now() - started > (band_time)h->timeout_ms * BAND_MSEC)
                break; /* a member timed out: the caller has waited long enough */
            struct timespec ts = {0, 150L * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        size_t idx;
        const char *ep = etcd_http_endpoint(h, &idx);
        char url[640];
        (void)snprintf(url, sizeof(url), "%s%s", ep, path);
        struct buf b = {0};
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->timeout_ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->connect_ms);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
        atomic_fetch_add(&h->requests, 1);
        CURLcode cr = curl_easy_perform(c);
        long status = 0;
        if (cr == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        json_t *j = NULL;
        if (cr == CURLE_OK && b.p != NULL)
            j = json_loads(b.p, 0, NULL);
        free(b.p);
        if (cr != CURLE_OK) {
            /* A refused or unresolved connection never reached a server. */
            if (cr != CURLE_COULDNT_CONNECT && cr != CURLE_COULDNT_RESOLVE_HOST)
                *maybe_applied = 1;
            etcd_http_failover(h, idx);
            continue;
        }
        if (j == NULL || !json_is_object(j)) {
            json_decref(j);
            *maybe_applied = 1;
            etcd_http_failover(h, idx);
            continue;
        }
        json_t *code = json_object_get(j, "code");
        json_t *err = json_object_get(j, "error");
        if (json_is_object(err)) /* a streaming call's error: {"error":{"grpc_code":..}} */
            code = json_object_get(err, "grpc_code");
        if (status != 200 || (code != NULL && err != NULL)) {
            int gc = code ? (int)json_integer_value(code) : 13;
            json_decref(j);
            if (grpc_try_elsewhere(gc) || (status >= 500 && code == NULL)) {
                *maybe_applied = 1;
                etcd_http_failover(h, idx);
                continue;
            }
            *grpc_code = gc;
            rc = ETCD_EGRPC;
            break;
        }
        *out = j;
        rc = 0;
        break;
    }
    curl_slist_free_all(hdrs);
    pool_put(h, c);
    free(text);
    return rc;
}

/* ---- base64 (standard alphabet, padded) ------------------------------------------- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *etcd_b64_encode(const char *s, size_t len)
{
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (out == NULL)
        return NULL;
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)u[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)u[i + 1] << 8;
        if (i + 2 < len)
            v |= u[i + 2];
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = (char)(i + 1 < len ? b64[(v >> 6) & 63] : '=');
        out[o++] = (char)(i + 2 < len ? b64[v & 63] : '=');
    }
    out[o] = '\0';
    return out;
}

static int b64_val(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

char *etcd_b64_decode(const char *s, size_t *len)
{
    size_t n = strlen(s);
    if (n % 4 != 0)
        return NULL;
    char *out = malloc(n / 4 * 3 + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        for (size_t k = 0; k < 4; k++)
            v[k] = s[i + k] == '=' ? 0 : b64_val(s[i + k]);
        if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0) {
            free(out);
            return NULL;
        }
        uint32_t w =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (char)(w >> 16);
        if (s[i + 2] != '=')
            out[o++] = (char)(w >> 8);
        if (s[i + 3] != '=')
            out[o++] = (char)w;
    }
    out[o] = '\0';
    if (len)
        *len = o;
    return out;
}

int64_t etcd_json_i64(const json_t *obj, const char *field)
{
    const json_t *v = json_object_get(obj, field);
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    return 0;
}

json_t *etcd_json_i64_new(int64_t v)
{
    char s[32];
    (void)snprintf(s, sizeof(s), "%lld", (long long)v);
    return json_string(s);
}

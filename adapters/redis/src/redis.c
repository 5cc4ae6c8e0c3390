/* SPDX-License-Identifier: MIT */
/*
 * redis.c - libband-redis: a band_keyrate backend on one hiredis connection.
 *
 * One blocking hiredis context under a mutex: a decision is one EVALSHA round trip, bounded
 * by the command timeout. Any failure (connect, timeout, I/O, a reply of the wrong shape)
 * drops the context, so the next call starts from a fresh connection, and connects are
 * spaced by the reconnect interval, so a dead server costs one connect timeout per
 * interval, never a wait per call. The script's SHA1 comes from SCRIPT LOAD on each new
 * connection; a NOSCRIPT reply (the server restarted, or SCRIPT FLUSH) loads it again and
 * retries once.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "band/redis.h"
#include "keyrate_lua.h" /* band_redis_lua: src/keyrate.lua as a C string (generated) */

#define DEF_CONNECT   (100 * (BAND_SEC / 1000))
#define DEF_COMMAND   (50 * (BAND_SEC / 1000))
#define DEF_RECONNECT (100 * (BAND_SEC / 1000))
#define KEY_MAX       (BAND_KEYRATE_KEY_LEN_MAX + 256)
#define TOKENS_MAX    (UINT64_C(1) << 32)
#define DEPTH_MAX     (UINT64_C(1) << 52)

struct band_redis {
    pthread_mutex_t lock; /* guards everything below */
    char *host;
    int port;
    band_time connect_timeout, command_timeout, reconnect_interval;
    char *prefix;
    size_t prefix_len;
    redisContext *c; /* NULL while down */
    band_time next_connect;
    char sha[41];
    uint64_t calls, errors, connects, reloads;
};

static struct timeval tv_of(band_time ns)
{
    struct timeval tv;
    tv.tv_sec = (time_t)(ns / BAND_SEC);
    tv.tv_usec = (suseconds_t)((ns % BAND_SEC) / 1000);
    return tv;
}

static void drop(band_redis *r)
{
    if (r->c != NULL)
        redisFree(r->c);
    r->c = NULL;
}

/* SCRIPT LOAD on the current connection: 0, or -1 (the connection is dropped). */
static int load_script(band_redis *r)
{
    const char *argv[3] = {"SCRIPT", "LOAD", band_redis_lua};
    size_t lens[3] = {6, 4, sizeof(band_redis_lua) - 1};
    redisReply *rep = redisCommandArgv(r->c, 3, argv, lens);
    int ok = rep != NULL && rep->type == REDIS_REPLY_STRING && rep->len == 40;
    if (ok) {
        memcpy(r->sha, rep->str, 40);
        r->sha[40] = 0;
    }
    if (rep != NULL)
        freeReplyObject(rep);
    if (!ok) {
        drop(r);
        return -1;
    }
    return 0;
}

/* A connection, made now if it is down and the interval allows (lock held): 0 or -1. */
static int ensure(band_redis *r)
{
    if (r->c != NULL)
        return 0;
    band_time now = band_now();
    if (now < r->next_connect)
        return -1;
    r->next_connect = now + r->reconnect_interval;
    r->c = redisConnectWithTimeout(r->host, r->port, tv_of(r->connect_timeout));
    if (r->c == NULL || r->c->err != 0 || redisSetTimeout(r->c, tv_of(r->command_timeout)) != 0) {
        drop(r);
        return -1;
    }
    r->connects++;
    return load_script(r);
}

/* Decimal digits of @v at @p; returns the end. */
static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

static char *put_str(char *p, const void *s, size_t len)
{
    memcpy(p, s, len);
    return p + len;
}

/* @v (below 2^53, so exact) as a little-endian IEEE double, the script's struct '<d'. */
static char *put_double(char *p, uint64_t v)
{
    double d = (double)v;
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    for (int i = 0; i < 8; i++)
        *p++ = (char)(bits >> (8 * i));
    return p;
}

/* Room for the command: EVALSHA <sha> 1 <prefix + key> <33 bytes>, with RESP's framing. */
#define CMD_MAX (KEY_MAX + 160)
#define PACKED  33 /* the mode and four doubles: struct '<c1dddd' */

/*
 * EVALSHA sha 1 <key> <packed> in RESP, written by hand into @buf: one buffer on the
 * stack, the key copied once, no decimal formatting of the settings. Returns its length.
 */
static size_t format_call(const band_redis *r, char *buf, const void *key, size_t keylen,
                          const char *packed)
{
    char *p = buf;
    p = put_str(p, "*5\r\n$7\r\nEVALSHA\r\n$40\r\n", 22);
    p = put_str(p, r->sha, 40);
    p = put_str(p, "\r\n$1\r\n1\r\n$", 10);
    p = put_u64(p, r->prefix_len + keylen);
    p = put_str(p, "\r\n", 2);
    p = put_str(p, r->prefix, r->prefix_len);
    if (keylen > 0)
        p = put_str(p, key, keylen);
    p = put_str(p, "\r\n$33\r\n", 7);
    p = put_str(p, packed, PACKED);
    p = put_str(p, "\r\n", 2);
    return (size_t)(p - buf);
}

/*
 * Run the script in @mode for @key (lock held). On 0, *@rep is its reply (the caller
 * frees it); BAND_EOVERFLOW for settings beyond the script's range; any other code when
 * it could not decide.
 */
static int run(band_redis *r, char mode, const void *key, size_t keylen, uint64_t n,
               uint64_t tokens, band_time period, uint64_t burst, redisReply **rep)
{
    if (tokens > TOKENS_MAX || period <= 0 || burst > DEPTH_MAX / (uint64_t)period ||
        n > DEPTH_MAX / (uint64_t)period)
        return BAND_EOVERFLOW;
    if (r->prefix_len + keylen > KEY_MAX)
        return BAND_EINVAL;
    char packed[PACKED], *p = packed;
    *p++ = mode;
    p = put_double(p, n);
    p = put_double(p, tokens);
    p = put_double(p, (uint64_t)period);
    (void)put_double(p, burst);
    char cmd[CMD_MAX];
    for (int attempt = 0; attempt < 2; attempt++) {
        if (ensure(r) != 0)
            return BAND_ECLOSED; /* down: could not decide */
        size_t len = format_call(r, cmd, key, keylen, packed);
        r->calls++;
        void *reply = NULL;
        if (redisAppendFormattedCommand(r->c, cmd, len) != REDIS_OK ||
            redisGetReply(r->c, &reply) != REDIS_OK || reply == NULL) {
            /* I/O error or timeout: the context is unusable */
            if (reply != NULL)
                freeReplyObject(reply);
            drop(r);
            return BAND_EUNAVAIL;
        }
        redisReply *x = reply;
        if (x->type == REDIS_REPLY_ERROR && x->len >= 8 && memcmp(x->str, "NOSCRIPT", 8) == 0) {
            freeReplyObject(x);
            r->reloads++;
            if (load_script(r) != 0)
                return BAND_ECLOSED;
            continue;
        }
        if (x->type == REDIS_REPLY_ERROR) {
            freeReplyObject(x);
            return BAND_EINVAL;
        }
        *rep = x;
        return 0;
    }
    return BAND_ECLOSED;
}

static int be_try(void *ctx, const void *key, size_t keylen, uint64_t n, uint64_t tokens,
                  band_time period, uint64_t burst, band_time *retry_after)
{
    band_redis *r = ctx;
    redisReply *rep = NULL;
    pthread_mutex_lock(&r->lock);
    int rc = run(r, 't', key, keylen, n, tokens, period, burst, &rep);
    if (rc == 0) {
        /* 0: granted; above 0: refused, the retry-after in ns */
        if (rep->type == REDIS_REPLY_INTEGER && rep->integer > 0) {
            *retry_after = (band_time)rep->integer;
            rc = BAND_EAGAIN;
        } else if (rep->type != REDIS_REPLY_INTEGER || rep->integer != 0) {
            rc = BAND_EINVAL; /* a reply of the wrong shape */
        }
        freeReplyObject(rep);
    }
    if (rc != 0 && rc != BAND_EAGAIN)
        r->errors++;
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static int be_available(void *ctx, const void *key, size_t keylen, uint64_t tokens,
                        band_time period, uint64_t burst, uint64_t *out)
{
    band_redis *r = ctx;
    redisReply *rep = NULL;
    pthread_mutex_lock(&r->lock);
    int rc = run(r, 'a', key, keylen, 0, tokens, period, burst, &rep);
    if (rc == 0) {
        if (rep->type == REDIS_REPLY_INTEGER && rep->integer >= 0)
            *out = (uint64_t)rep->integer;
        else
            rc = BAND_EINVAL;
        freeReplyObject(rep);
    }
    if (rc != 0)
        r->errors++;
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static int be_forget(void *ctx, const void *key, size_t keylen)
{
    band_redis *r = ctx;
    redisReply *rep = NULL;
    pthread_mutex_lock(&r->lock);
    /* The script only deletes the key here: the settings are not read. */
    int rc = run(r, 'f', key, keylen, 0, 1, 1, 1, &rep);
    if (rc == 0) {
        if (rep->type == REDIS_REPLY_INTEGER)
            rc = rep->integer == 1 ? 0 : BAND_ENOENT;
        else
            rc = BAND_EINVAL;
        freeReplyObject(rep);
    }
    if (rc != 0 && rc != BAND_ENOENT)
        r->errors++;
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int band_redis_create(band_redis **out, const char *host, int port, const band_redis_opts *opts)
{
    static const band_redis_opts defaults;
    const band_redis_opts *o = opts != NULL ? opts : &defaults;
    if (out == NULL || host == NULL || port < 1 || port > 65535 || o->connect_timeout < 0 ||
        o->command_timeout < 0 || o->reconnect_interval < 0)
        return BAND_EINVAL;
    band_redis *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return BAND_ENOMEM;
    const char *prefix = o->prefix != NULL ? o->prefix : "band:kr:";
    r->host = strdup(host);
    r->prefix = strdup(prefix);
    if (r->host == NULL || r->prefix == NULL || strlen(prefix) > 256 ||
        pthread_mutex_init(&r->lock, NULL) != 0) {
        int rc = r->host == NULL || r->prefix == NULL ? BAND_ENOMEM : BAND_EINVAL;
        free(r->host);
        free(r->prefix);
        free(r);
        return rc;
    }
    r->prefix_len = strlen(prefix);
    r->port = port;
    r->connect_timeout = o->connect_timeout > 0 ? o->connect_timeout : DEF_CONNECT;
    r->command_timeout = o->command_timeout > 0 ? o->command_timeout : DEF_COMMAND;
    r->reconnect_interval = o->reconnect_interval > 0 ? o->reconnect_interval : DEF_RECONNECT;
    r->next_connect = INT64_MIN;
    pthread_mutex_lock(&r->lock);
    (void)ensure(r); /* a server that is down now is tried again later */
    pthread_mutex_unlock(&r->lock);
    *out = r;
    return 0;
}

int band_redis_destroy(band_redis *r)
{
    if (r == NULL)
        return 0;
    drop(r);
    pthread_mutex_destroy(&r->lock);
    free(r->host);
    free(r->prefix);
    free(r);
    return 0;
}

int band_redis_backend(band_redis *r, band_keyrate_backend *out)
{
    if (r == NULL || out == NULL)
        return BAND_EINVAL;
    out->try_acquire = be_try;
    out->available = be_available;
    out->forget = be_forget;
    out->ctx = r;
    return 0;
}

int band_redis_get_stats(const band_redis *cr, band_redis_stats *out)
{
    if (cr == NULL || out == NULL)
        return BAND_EINVAL;
    band_redis *r = (band_redis *)cr; /* the lock is logically const */
    pthread_mutex_lock(&r->lock);
    out->calls = r->calls;
    out->errors = r->errors;
    out->connects = r->connects;
    out->reloads = r->reloads;
    out->connected = r->c != NULL;
    pthread_mutex_unlock(&r->lock);
    return 0;
}

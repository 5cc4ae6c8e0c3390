/* SPDX-License-Identifier: MIT */
/*
 * redis_bench.c - libband-redis against a running redis-server, beside the bare EVALSHA
 * round trip and a counting semaphore made of two Lua scripts (bench/redis/README.md).
 *
 *   band_redis_bench --port PORT [--host 127.0.0.1] [--rounds 7] [--calls 2000]
 *                    [--seconds 0.5] [--clients 1,8,64] [--permits 0] [--only LIST]
 *                    [--tsv FILE]
 *
 * Sections (--only takes a comma-separated list of their letters; default all):
 *   d  decision: one keyed band_keyrate_try_acquire() through the backend (a grant: read,
 *      write and TTL) against one bare EVALSHA of `return 1`, each on one connection with
 *      the same timeouts, in interleaved rounds (the order flips every round); per round
 *      the median latency of each, then the median over rounds of the latencies and of
 *      the per-round ratio.
 *   p  profile: where a decision's time goes. The bare script with the decision's key and
 *      arguments, scripts that do part of the decision's work, the backend called without
 *      band_keyrate, and band_keyrate over a backend that answers at once (no network).
 *   s  semaphore: with 1, 8 and 64 clients (threads, each with its own connection), the
 *      bare EVALSHA, an acquire + release pair of a counting semaphore kept as one Redis
 *      counter (acquire: one script that reads the counter and decrements it when enough
 *      permits are left; release: one script that increments it and publishes the new
 *      count for waiters, as Redisson's RSemaphore does), and a keyed decision (each
 *      client its own band_redis), interleaved in rounds of --seconds each: throughput
 *      and median latency per operation, medians over rounds, and ratios to the bare
 *      EVALSHA at the same concurrency.
 *
 * A refused acquire is retried at once (a busy retry; the pair's latency includes it) and
 * counted. --permits 0 gives the semaphore as many permits as clients (uncontended).
 * Exits 0, 1 on a Redis error, 2 on bad arguments.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "band/keyrate.h"
#include "band/redis.h"

#define MAX_ROUNDS  64
#define MAX_CLIENTS 256
#define SAMPLES_CAP 65536 /* latencies kept per thread per round */
#define NKEYS       64    /* the keyed decisions cycle over this many keys */

/* band_redis's defaults, so the bare connection waits as the backend's does. */
#define CONNECT_MS 100
#define COMMAND_MS 50

static const char *g_host = "127.0.0.1";
static int g_port;
static int g_rounds = 7, g_calls = 2000;
static double g_seconds = 0.5;
static int g_clients[8] = {1, 8, 64}, g_nclients = 3;
static int g_permits;
static const char *g_only = "dps";
static FILE *g_tsv;

static const char BARE_LUA[] = "return 1";
static const char ACQUIRE_LUA[] =
    "local v = tonumber(redis.call('GET', KEYS[1]))\n"
    "local n = tonumber(ARGV[1])\n"
    "if v ~= nil and v >= n then redis.call('DECRBY', KEYS[1], n) return 1 end\n"
    "return 0\n";
static const char RELEASE_LUA[] = "local v = redis.call('INCRBY', KEYS[1], ARGV[1])\n"
                                  "redis.call('PUBLISH', KEYS[2], v)\n"
                                  "return v\n";

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of @n values (sorted in place). */
static int64_t median_i64(int64_t *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_i64);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double median_dbl(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, const redisContext *c)
{
    fprintf(stderr, "band_redis_bench: %s%s%s\n", what, c != NULL ? ": " : "",
            c != NULL ? c->errstr : "");
    exit(1);
}

/* A blocking connection with band_redis's default timeouts. */
static redisContext *connect_bare(void)
{
    struct timeval ct = {0, CONNECT_MS * 1000}, cmd = {0, COMMAND_MS * 1000};
    redisContext *c = redisConnectWithTimeout(g_host, g_port, ct);
    if (c == NULL || c->err != 0)
        die("connect", c);
    if (redisSetTimeout(c, cmd) != 0)
        die("set timeout", c);
    return c;
}

static void load(redisContext *c, const char *lua, char sha[41])
{
    redisReply *r = redisCommand(c, "SCRIPT LOAD %s", lua);
    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40)
        die("SCRIPT LOAD", c);
    memcpy(sha, r->str, 41);
    freeReplyObject(r);
}

/* EVALSHA sha with @argc further arguments (numkeys first; their lengths in @lens, or
 * NULL for strings); the reply's integer. */
static long long evalsha_n(redisContext *c, const char *sha, int argc, const char **args,
                           const size_t *lens_in)
{
    const char *argv[16] = {"EVALSHA", sha};
    size_t lens[16] = {7, 40};
    for (int i = 0; i < argc; i++) {
        argv[2 + i] = args[i];
        lens[2 + i] = lens_in != NULL ? lens_in[i] : strlen(args[i]);
    }
    redisReply *r = redisCommandArgv(c, 2 + argc, argv, lens);
    if (r == NULL)
        die("EVALSHA", c);
    long long v = -1;
    if (r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
             r->element[0]->type == REDIS_REPLY_INTEGER)
        v = r->element[0]->integer;
    else if (r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "band_redis_bench: EVALSHA: %s\n", r->str);
        exit(1);
    }
    freeReplyObject(r);
    return v;
}

static long long evalsha(redisContext *c, const char *sha, int argc, const char **args)
{
    return evalsha_n(c, sha, argc, args, NULL);
}

static void flushall(void)
{
    redisContext *c = connect_bare();
    redisReply *r = redisCommand(c, "FLUSHALL");
    if (r == NULL)
        die("FLUSHALL", c);
    freeReplyObject(r);
    redisFree(c);
}

static void tsv(const char *section, const char *name, int clients, double median_us, double ops_s,
                double ratio)
{
    if (g_tsv != NULL)
        fprintf(g_tsv, "%s\t%s\t%d\t%.2f\t%.0f\t%.3f\n", section, name, clients, median_us, ops_s,
                ratio);
}

/* ------------------------------------------------------------------ one connection */

/* The operations timed on one connection, in the same rounds. */
enum op_kind {
    OP_BARE,
    OP_KEYRATE,
    OP_BARE_ARGS,
    OP_TIME,
    OP_TIME_READ,
    OP_TIME_RW,
    OP_BACKEND,
    OP_KEYRATE_LOCAL,
    OP_COUNT
};

static const char *const OP_NAMES[OP_COUNT] = {
    "bare EVALSHA (return 1)",
    "keyed decision (band_keyrate)",
    "bare, decision's arguments",
    "script: TIME",
    "script: TIME + GET",
    "script: TIME + GET + SET PX",
    "backend call (no band_keyrate)",
    "band_keyrate, local stub backend",
};

/* Partial scripts: each does a prefix of a decision's server work (src/keyrate.lua: TIME,
 * GET of the bucket, SET of the new bucket with its TTL), with its arguments unpacked. */
static const char *const OP_LUA[OP_COUNT] = {
    [OP_BARE] = BARE_LUA,
    [OP_BARE_ARGS] = BARE_LUA,
    [OP_TIME] = "local m, n, t, p, b = struct.unpack('<c1dddd', ARGV[1])\n"
                "local c = redis.call('TIME') return 1",
    [OP_TIME_READ] = "local m, n, t, p, b = struct.unpack('<c1dddd', ARGV[1])\n"
                     "local c = redis.call('TIME')\n"
                     "local s = redis.call('GET', KEYS[1]) return 1",
    [OP_TIME_RW] = "local m, n, t, p, b = struct.unpack('<c1dddd', ARGV[1])\n"
                   "local c = redis.call('TIME')\n"
                   "local s = redis.call('GET', KEYS[1])\n"
                   "redis.call('SET', KEYS[1], struct.pack('<dddd', n, c[1] * 1000000 + c[2], "
                   "p, t), 'PX', 1000) return 1",
};

/* A decision's packed argument ('<c1dddd': take 1 of 10^6 tokens per s, bursts of 1000),
 * as the backend sends it. */
static void pack_args(char out[33])
{
    const double v[4] = {1, 1000000, 1000000000, 1000};
    out[0] = 't';
    for (int i = 0; i < 4; i++) {
        uint64_t bits;
        memcpy(&bits, &v[i], sizeof(bits));
        for (int j = 0; j < 8; j++)
            out[1 + 8 * i + j] = (char)(bits >> (8 * j));
    }
}

struct single {
    redisContext *c;
    char sha[OP_COUNT][41];
    band_redis *r;
    band_keyrate_backend be;
    band_keyrate *k, *k_local;
    char keys[NKEYS][16];
    size_t keylens[NKEYS];
    char full_keys[NKEYS][32];
    char packed[33];
};

static int stub_try(void *ctx, const void *key, size_t keylen, uint64_t n, uint64_t tokens,
                    band_time period, uint64_t burst, band_time *retry_after)
{
    (void)ctx, (void)key, (void)keylen, (void)n, (void)tokens, (void)period, (void)burst;
    (void)retry_after;
    return 0;
}

static int stub_available(void *ctx, const void *key, size_t keylen, uint64_t tokens,
                          band_time period, uint64_t burst, uint64_t *out)
{
    (void)ctx, (void)key, (void)keylen, (void)tokens, (void)period, (void)burst;
    *out = 0;
    return 0;
}

static int stub_forget(void *ctx, const void *key, size_t keylen)
{
    (void)ctx, (void)key, (void)keylen;
    return 0;
}

/* Settings that always grant: 10^6 tokens per second, bursts of 1000, over NKEYS keys. */
#define RATE_TOKENS 1000000
#define RATE_BURST  1000

static band_keyrate *make_table(const band_keyrate_backend *be)
{
    band_keyrate_opts o;
    memset(&o, 0, sizeof(o));
    o.backend = be;
    band_keyrate *k = NULL;
    if (band_keyrate_create(&k, RATE_TOKENS, BAND_SEC, RATE_BURST, &o) != 0)
        die("band_keyrate_create", NULL);
    return k;
}

static void single_init(struct single *s)
{
    memset(s, 0, sizeof(*s));
    s->c = connect_bare();
    for (int i = 0; i < OP_COUNT; i++)
        if (OP_LUA[i] != NULL)
            load(s->c, OP_LUA[i], s->sha[i]);
    if (band_redis_create(&s->r, g_host, g_port, NULL) != 0)
        die("band_redis_create", NULL);
    band_redis_stats st;
    if (band_redis_get_stats(s->r, &st) != 0 || !st.connected)
        die("band_redis: not connected", NULL);
    if (band_redis_backend(s->r, &s->be) != 0)
        die("band_redis_backend", NULL);
    s->k = make_table(&s->be);
    static const band_keyrate_backend stub = {stub_try, stub_available, stub_forget, NULL};
    s->k_local = make_table(&stub);
    pack_args(s->packed);
    for (int i = 0; i < NKEYS; i++) {
        s->keylens[i] = (size_t)snprintf(s->keys[i], sizeof(s->keys[i]), "key%d", i);
        snprintf(s->full_keys[i], sizeof(s->full_keys[i]), "band:kr:key%d", i);
    }
}

static void single_free(struct single *s)
{
    band_keyrate_destroy(s->k);
    band_keyrate_destroy(s->k_local);
    band_redis_destroy(s->r);
    redisFree(s->c);
}

/* One call of @op on call number @i. */
static void single_call(struct single *s, enum op_kind op, int i)
{
    int key = i % NKEYS;
    switch (op) {
    case OP_BARE:
        if (evalsha(s->c, s->sha[op], 1, (const char *[]){"0"}) != 1)
            die("bare EVALSHA: unexpected reply", NULL);
        return;
    case OP_KEYRATE:
        if (band_keyrate_try_acquire(s->k, s->keys[key], s->keylens[key], 1, NULL) != 0)
            die("band_keyrate_try_acquire did not grant", NULL);
        return;
    case OP_BACKEND: {
        band_time ra = 0;
        if (s->be.try_acquire(s->be.ctx, s->keys[key], s->keylens[key], 1, RATE_TOKENS, BAND_SEC,
                              RATE_BURST, &ra) != 0)
            die("backend try_acquire did not grant", NULL);
        return;
    }
    case OP_KEYRATE_LOCAL:
        if (band_keyrate_try_acquire(s->k_local, s->keys[key], s->keylens[key], 1, NULL) != 0)
            die("stub band_keyrate_try_acquire did not grant", NULL);
        return;
    default: {
        /* The decision's arguments: numkeys, key, packed settings. */
        const char *args[3] = {"1", s->full_keys[key], s->packed};
        const size_t lens[3] = {1, strlen(s->full_keys[key]), sizeof(s->packed)};
        if (evalsha_n(s->c, s->sha[op], 3, args, lens) != 1)
            die("EVALSHA: unexpected reply", NULL);
        return;
    }
    }
}

/* CONFIG RESETSTAT: the server's command counters start again. */
static void reset_stats(redisContext *c)
{
    redisReply *r = redisCommand(c, "CONFIG RESETSTAT");
    if (r == NULL)
        die("CONFIG RESETSTAT", c);
    freeReplyObject(r);
}

/* The server's own time per EVALSHA since the last reset_stats() (INFO commandstats), in
 * ns: the script's work without the round trip. */
static int64_t server_ns_per_evalsha(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    if (r == NULL || (r->type != REDIS_REPLY_STRING))
        die("INFO commandstats", c);
    int64_t ns = 0;
    const char *at = strstr(r->str, "cmdstat_evalsha:");
    unsigned long long calls = 0, usec = 0;
    if (at != NULL && sscanf(at, "cmdstat_evalsha:calls=%llu,usec=%llu", &calls, &usec) == 2 &&
        calls > 0)
        ns = (int64_t)(usec * 1000 / calls);
    freeReplyObject(r);
    return ns;
}

/* Median latency (ns) of @calls calls of @op; @samples has room for them. */
static int64_t single_block(struct single *s, enum op_kind op, int calls, int64_t *samples)
{
    for (int i = 0; i < calls; i++) {
        int64_t t0 = now_ns();
        single_call(s, op, i);
        samples[i] = now_ns() - t0;
    }
    return median_i64(samples, (size_t)calls);
}

/* Rounds over @ops (interleaved, the order reversed every other round); prints a table.
 * Returns the median ratio of the keyed decision to the bare EVALSHA (0 without it). */
static double single_rounds(const char *section, const enum op_kind *ops, int nops)
{
    double x_keyrate = 0;
    struct single s;
    single_init(&s);
    int64_t *samples = malloc(sizeof(int64_t) * (size_t)g_calls);
    static int64_t med[OP_COUNT][MAX_ROUNDS], srv[OP_COUNT][MAX_ROUNDS];
    static double ratio[OP_COUNT][MAX_ROUNDS];
    if (samples == NULL)
        die("out of memory", NULL);
    for (int j = 0; j < nops; j++) /* warm-up: connections, scripts, keys, caches */
        single_block(&s, ops[j], g_calls / 4 + 1, samples);
    for (int r = 0; r < g_rounds; r++) {
        int64_t m[OP_COUNT] = {0};
        for (int j = 0; j < nops; j++) {
            enum op_kind o = r % 2 ? ops[nops - 1 - j] : ops[j];
            reset_stats(s.c);
            m[o] = single_block(&s, o, g_calls, samples);
            srv[o][r] = server_ns_per_evalsha(s.c);
        }
        for (int j = 0; j < nops; j++) {
            med[ops[j]][r] = m[ops[j]];
            ratio[ops[j]][r] = m[OP_BARE] > 0 ? (double)m[ops[j]] / (double)m[OP_BARE] : 0;
        }
    }
    printf("%-40s %10s %15s %12s\n", "operation (one connection)", "median us", "x bare EVALSHA",
           "server us");
    for (int j = 0; j < nops; j++) {
        enum op_kind o = ops[j];
        double us = (double)median_i64(med[o], (size_t)g_rounds) / 1000.0;
        double x = median_dbl(ratio[o], (size_t)g_rounds);
        double sv = (double)median_i64(srv[o], (size_t)g_rounds) / 1000.0;
        printf("%-40s %10.2f %14.3fx %12.2f\n", OP_NAMES[o], us, x, sv);
        tsv(section, OP_NAMES[o], 1, us, us > 0 ? 1e6 / us : 0, x);
        if (o == OP_KEYRATE)
            x_keyrate = x;
    }
    free(samples);
    single_free(&s);
    return x_keyrate;
}

static void section_decision(void)
{
    printf("== d: a keyed decision vs one bare EVALSHA round trip (%d rounds x %d calls)\n",
           g_rounds, g_calls);
    flushall();
    const enum op_kind ops[] = {OP_BARE, OP_KEYRATE};
    double x = single_rounds("decision", ops, 2);
    printf("target: keyed decision <= 1.20x bare EVALSHA: %s (%.3fx)\n\n",
           x <= 1.20 ? "met" : "NOT met", x);
}

static void section_profile(void)
{
    printf("== p: where a decision's time goes (%d rounds x %d calls)\n", g_rounds, g_calls);
    flushall();
    const enum op_kind ops[] = {OP_BARE,    OP_BARE_ARGS, OP_TIME,    OP_TIME_READ,
                                OP_TIME_RW, OP_KEYRATE,   OP_BACKEND, OP_KEYRATE_LOCAL};
    single_rounds("profile", ops, (int)(sizeof(ops) / sizeof(ops[0])));
    printf("\n");
}

/* ------------------------------------------------------------------ many clients */

enum mc_kind { MC_BARE, MC_SEM, MC_KEYRATE, MC_COUNT };
static const char *const MC_NAMES[MC_COUNT] = {
    "bare EVALSHA",
    "semaphore acquire+release",
    "keyed decision",
};

struct mc_shared {
    int kind;
    atomic_int ready;
    atomic_int go, stop;
};

struct mc_thread {
    pthread_t th;
    struct mc_shared *sh;
    int id;
    redisContext *c;
    char bare_sha[41], acq_sha[41], rel_sha[41];
    band_redis *r;
    band_keyrate_backend be;
    band_keyrate *k;
    int64_t *samples;
    size_t nsamples;
    uint64_t ops, retries;
};

static void mc_op(struct mc_thread *t, uint64_t i)
{
    switch (t->sh->kind) {
    case MC_BARE:
        if (evalsha(t->c, t->bare_sha, 1, (const char *[]){"0"}) != 1)
            die("bare EVALSHA: unexpected reply", NULL);
        return;
    case MC_SEM: {
        const char *acq[3] = {"1", "bench:sem", "1"};
        while (evalsha(t->c, t->acq_sha, 3, acq) != 1)
            t->retries++;
        const char *rel[4] = {"2", "bench:sem", "bench:sem:released", "1"};
        if (evalsha(t->c, t->rel_sha, 4, rel) < 1)
            die("release: unexpected reply", NULL);
        return;
    }
    default: {
        char key[16];
        int len = snprintf(key, sizeof(key), "key%d", (int)((i * 131 + (uint64_t)t->id) % NKEYS));
        if (band_keyrate_try_acquire(t->k, key, (size_t)len, 1, NULL) != 0)
            die("band_keyrate_try_acquire did not grant", NULL);
        return;
    }
    }
}

static void *mc_main(void *arg)
{
    struct mc_thread *t = arg;
    atomic_fetch_add(&t->sh->ready, 1);
    while (!atomic_load(&t->sh->go))
        sched_yield();
    uint64_t i = 0;
    while (!atomic_load_explicit(&t->sh->stop, memory_order_relaxed)) {
        int64_t t0 = now_ns();
        mc_op(t, i++);
        if (t->nsamples < SAMPLES_CAP)
            t->samples[t->nsamples++] = now_ns() - t0;
    }
    t->ops = i;
    return NULL;
}

/* One round of @kind with @n clients: ops per second and the median latency in ns. */
static void mc_round(struct mc_thread *ts, int n, int kind, double *ops_s, int64_t *med,
                     uint64_t *retries)
{
    struct mc_shared sh;
    sh.kind = kind;
    atomic_init(&sh.ready, 0);
    atomic_init(&sh.go, 0);
    atomic_init(&sh.stop, 0);
    for (int i = 0; i < n; i++) {
        ts[i].sh = &sh;
        ts[i].nsamples = 0;
        ts[i].ops = ts[i].retries = 0;
        if (pthread_create(&ts[i].th, NULL, mc_main, &ts[i]) != 0)
            die("pthread_create", NULL);
    }
    while (atomic_load(&sh.ready) < n)
        sched_yield();
    int64_t t0 = now_ns();
    atomic_store(&sh.go, 1);
    struct timespec d = {(time_t)g_seconds, (long)((g_seconds - (double)(time_t)g_seconds) * 1e9)};
    while (nanosleep(&d, &d) != 0 && errno == EINTR) {
    }
    atomic_store(&sh.stop, 1);
    uint64_t total = 0;
    size_t all = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(ts[i].th, NULL);
        total += ts[i].ops;
        all += ts[i].nsamples;
    }
    int64_t wall = now_ns() - t0;
    int64_t *v = malloc(sizeof(int64_t) * (all > 0 ? all : 1));
    if (v == NULL)
        die("out of memory", NULL);
    size_t at = 0;
    *retries = 0;
    for (int i = 0; i < n; i++) {
        memcpy(v + at, ts[i].samples, sizeof(int64_t) * ts[i].nsamples);
        at += ts[i].nsamples;
        *retries += ts[i].retries;
    }
    *med = median_i64(v, all);
    *ops_s = wall > 0 ? (double)total * 1e9 / (double)wall : 0;
    free(v);
}

static void section_semaphore(void)
{
    printf("== s: a Redis semaphore (two Lua scripts) and keyed decisions with many clients\n"
           "   (%d rounds x %.2f s per operation, interleaved; each client a thread with its\n"
           "   own connection)\n",
           g_rounds, g_seconds);
    printf("%-8s %-28s %12s %12s %10s %10s %8s\n", "clients", "operation", "median us", "ops/s",
           "x bare lat", "x bare ops", "retries");
    for (int ci = 0; ci < g_nclients; ci++) {
        int n = g_clients[ci];
        flushall();
        struct mc_thread *ts = calloc((size_t)n, sizeof(*ts));
        if (ts == NULL)
            die("out of memory", NULL);
        int permits = g_permits > 0 ? g_permits : n;
        redisContext *admin = connect_bare();
        redisReply *rep = redisCommand(admin, "SET bench:sem %d", permits);
        if (rep == NULL)
            die("SET", admin);
        freeReplyObject(rep);
        for (int i = 0; i < n; i++) {
            ts[i].id = i;
            ts[i].c = connect_bare();
            load(ts[i].c, BARE_LUA, ts[i].bare_sha);
            load(ts[i].c, ACQUIRE_LUA, ts[i].acq_sha);
            load(ts[i].c, RELEASE_LUA, ts[i].rel_sha);
            if (band_redis_create(&ts[i].r, g_host, g_port, NULL) != 0 ||
                band_redis_backend(ts[i].r, &ts[i].be) != 0)
                die("band_redis_create", NULL);
            ts[i].k = make_table(&ts[i].be);
            ts[i].samples = malloc(sizeof(int64_t) * SAMPLES_CAP);
            if (ts[i].samples == NULL)
                die("out of memory", NULL);
        }
        static double ops[MC_COUNT][MAX_ROUNDS], xlat[MC_COUNT][MAX_ROUNDS],
            xops[MC_COUNT][MAX_ROUNDS];
        static int64_t med[MC_COUNT][MAX_ROUNDS];
        uint64_t retries[MC_COUNT] = {0};
        for (int r = -1; r < g_rounds; r++) { /* round -1 warms up */
            double o[MC_COUNT];
            int64_t m[MC_COUNT];
            for (int j = 0; j < MC_COUNT; j++) {
                int kind = r % 2 ? MC_COUNT - 1 - j : j;
                uint64_t rt = 0;
                mc_round(ts, n, kind, &o[kind], &m[kind], &rt);
                if (r >= 0)
                    retries[kind] += rt;
            }
            if (r < 0)
                continue;
            for (int j = 0; j < MC_COUNT; j++) {
                ops[j][r] = o[j];
                med[j][r] = m[j];
                xlat[j][r] = m[MC_BARE] > 0 ? (double)m[j] / (double)m[MC_BARE] : 0;
                xops[j][r] = o[MC_BARE] > 0 ? o[j] / o[MC_BARE] : 0;
            }
        }
        for (int j = 0; j < MC_COUNT; j++) {
            double us = (double)median_i64(med[j], (size_t)g_rounds) / 1000.0;
            double os = median_dbl(ops[j], (size_t)g_rounds);
            double xl = median_dbl(xlat[j], (size_t)g_rounds);
            double xo = median_dbl(xops[j], (size_t)g_rounds);
            printf("%-8d %-28s %12.2f %12.0f %9.3fx %9.3fx %8llu\n", n, MC_NAMES[j], us, os, xl, xo,
                   (unsigned long long)retries[j]);
            tsv("clients", MC_NAMES[j], n, us, os, xl);
        }
        for (int i = 0; i < n; i++) {
            band_keyrate_destroy(ts[i].k);
            band_redis_destroy(ts[i].r);
            redisFree(ts[i].c);
            free(ts[i].samples);
        }
        redisFree(admin);
        free(ts);
    }
    printf("(an acquire+release pair is two round trips; its ratio to one bare EVALSHA is\n"
           " about 2x when the scripts cost nothing)\n\n");
}

/* ------------------------------------------------------------------ main */

static int parse_clients(const char *s)
{
    g_nclients = 0;
    while (*s != 0 && g_nclients < 8) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > MAX_CLIENTS)
            return -1;
        g_clients[g_nclients++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != 0)
            return -1;
    }
    return g_nclients > 0 ? 0 : -1;
}

static void usage(void)
{
    fprintf(stderr, "usage: band_redis_bench --port PORT [--host H] [--rounds N] [--calls N]\n"
                    "       [--seconds S] [--clients 1,8,64] [--permits N] [--only dps]"
                    " [--tsv FILE]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            usage();
        if (strcmp(a, "--port") == 0)
            g_port = atoi(v);
        else if (strcmp(a, "--host") == 0)
            g_host = v;
        else if (strcmp(a, "--rounds") == 0)
            g_rounds = atoi(v);
        else if (strcmp(a, "--calls") == 0)
            g_calls = atoi(v);
        else if (strcmp(a, "--seconds") == 0)
            g_seconds = atof(v);
        else if (strcmp(a, "--clients") == 0) {
            if (parse_clients(v) != 0)
                usage();
        } else if (strcmp(a, "--permits") == 0)
            g_permits = atoi(v);
        else if (strcmp(a, "--only") == 0)
            g_only = v;
        else if (strcmp(a, "--tsv") == 0) {
            g_tsv = fopen(v, "w");
            if (g_tsv == NULL) {
                perror(v);
                return 2;
            }
            fprintf(g_tsv, "section\toperation\tclients\tmedian_us\tops_s\tx_bare\n");
        } else
            usage();
    }
    if (g_port < 1 || g_port > 65535 || g_rounds < 1 || g_rounds > MAX_ROUNDS || g_calls < 1 ||
        g_seconds <= 0 || g_permits < 0)
        usage();
    if (strchr(g_only, 'd') != NULL)
        section_decision();
    if (strchr(g_only, 'p') != NULL)
        section_profile();
    if (strchr(g_only, 's') != NULL)
        section_semaphore();
    if (g_tsv != NULL)
        fclose(g_tsv);
    return 0;
}

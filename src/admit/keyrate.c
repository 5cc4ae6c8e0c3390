/* SPDX-License-Identifier: MIT */
/*
 * keyrate.c - keyed rate budgets: a bounded, sharded table of GCRA buckets.
 *
 * Design notes
 * ------------
 * Each key keeps the state band_rate keeps for its locked form: @last, the latest time
 * applied to it, and @missing, how far its bucket is from full at @last in units of
 * 1/tokens of a nanosecond (one token is @period units; the bucket holds
 * depth = burst x period units). dt nanoseconds refill dt x tokens units; n tokens may be
 * taken when missing + n x period <= depth, else the wait is
 * ceil((missing + n x period - depth) / tokens) ns. There are no bookings, so a grant never
 * leaves more than depth missing: @missing always fits in 63 bits, and so does every sum
 * (missing + n x period <= 2 x depth < 2^64) and every retry-after (<= depth / tokens).
 *
 * Idle keys: a key whose @missing is 0 at its shard's time is in exactly the state of a
 * key the table has never seen (a new key starts full), and it stays so as time goes on,
 * since the shard's time never goes back. Dropping it therefore changes no answer, which
 * is why the table may drop idle keys whenever it wants the room (sweep()), and why
 * band_keyrate_forget() and band_keyrate_get_stats() treat an idle key as absent. The
 * eviction order, used only when every key of a full shard is short of full and the table
 * evicts (BAND_KEYRATE_FULL_EVICT), is the smallest @missing (the key closest to full), ties
 * going to the key that left full earliest (@seq, renewed whenever a key leaves full, so
 * that an idle key that stayed in the table orders as a new key would).
 *
 * The table: max_keys entries split over the shards, allocated once. A shard is a chained
 * hash table over its own array of nodes (32-bit indices, a free list), its key bytes in
 * one block of cap x max_key_len, its own mutex, time and counters, on its own cache
 * lines. Settings (tokens, period, burst) are read under any one shard mutex and written
 * by band_keyrate_set() under all of them, taken in index order; a decision takes one.
 *
 * A full shard is swept when a new key needs a node: every key is brought to now, the idle
 * ones are dropped all at once, and the sweep remembers the eviction victim on the way. So
 * a table of idle keys costs one sweep per shard-full of new keys, but a table full of
 * keys short of full costs one sweep (O(keys per shard)) per new key: the price of a flood
 * of new keys, which FULL_REFUSE turns away and FULL_EVICT lets in.
 *
 * The hash is seeded per table from the clock and the table's address, so which keys
 * share a shard or a chain differs from table to table (not a cryptographic defence
 * against chosen keys: a chain is bounded by its shard's size).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "admit/keyrate_internal.h"
#include "band/keyrate.h"
#include "core/internal.h"
#include "core/name.h"

#if !defined(__SIZEOF_INT128__)
#error "src/admit/keyrate.c needs a compiler with 128-bit integers (GCC or Clang, 64-bit)"
#endif
__extension__ typedef unsigned __int128 u128;

#define NIL        UINT32_MAX
#define KEYS_LIMIT (UINT64_C(1) << 31)
#define CACHE_LINE 64

struct kr_node {
    uint64_t hash;
    uint64_t missing; /* units (1/tokens ns) from full at @last; 0: idle */
    band_time last;   /* the latest time applied to this key */
    uint64_t seq;     /* when it last left full: the eviction tie-break */
    uint32_t next;    /* the next node of its chain, or of the free list */
    uint32_t keylen;
};

struct kr_shard {
    _Alignas(CACHE_LINE) pthread_mutex_t lock; /* guards everything below */
    band_time last;                            /* the latest clock reading applied here */
    uint32_t cap, count, free_head, mask;
    uint32_t *heads; /* mask + 1 chains */
    struct kr_node *nodes;
    unsigned char *keys; /* node i's key at i x max_key_len */
    uint64_t seq;
    uint64_t granted, granted_tokens, refused_rate, refused_too_big, refused_full, refused_closed,
        evicted_busy, evicted_idle, forgotten;
};

struct band_keyrate {
    /* Read under any shard's mutex, written by band_keyrate_set() under all of them. */
    uint64_t tokens, burst;
    band_time period;
    uint64_t seed;
    size_t max_keys, max_key_len;
    unsigned nshards;
    int full;
    _Atomic int closed;
    band_rate_clock_fn *clock;
    void *clock_ctx;
    int has_backend, fail;
    band_keyrate_backend backend;
    /* The backend's counts (atomic: no lock is held around a backend call). */
    _Atomic uint64_t b_granted, b_tokens, b_refused_rate, b_forgotten, b_errors, b_failed_open;
    pthread_mutex_t name_lock;
    char name[BAND_NAME_MAX];
    struct kr_shard *shards;
};

/* ---------------------------------------------------------------- helpers */

static band_time default_clock(void *ctx)
{
    (void)ctx;
    return band_now();
}

static int check_settings(uint64_t tokens, band_time period, uint64_t burst)
{
    if (tokens == 0 || period <= 0 || burst == 0 || tokens > (uint64_t)INT64_MAX)
        return BAND_EINVAL;
    if ((u128)burst * (uint64_t)period > (u128)INT64_MAX)
        return BAND_EOVERFLOW; /* the bucket's depth in time must be representable */
    return 0;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

static uint64_t hash_key(uint64_t seed, const unsigned char *p, size_t len)
{
    uint64_t h = seed ^ ((uint64_t)len * UINT64_C(0x9e3779b97f4a7c15));
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = mix64(h ^ w) + UINT64_C(0x9e3779b97f4a7c15);
        p += 8;
        len -= 8;
    }
    uint64_t w = 0;
    if (len > 0)
        memcpy(&w, p, len);
    return mix64(h ^ w ^ ((uint64_t)len << 59));
}

static unsigned shard_index(const band_keyrate *k, uint64_t h)
{
    return (unsigned)(((h >> 32) * (uint64_t)k->nshards) >> 32);
}

static int key_ok(const band_keyrate *k, const void *key, size_t keylen)
{
    return (key != NULL || keylen == 0) && keylen <= k->max_key_len;
}

/* The shard's time at the reading @now (lock held): the shard's time never goes back. */
static band_time shard_time(struct kr_shard *sh, band_time now)
{
    if (now < sh->last)
        return sh->last;
    sh->last = now;
    return now;
}

/* Bring node @n to @now (>= its time; lock held). */
static void advance(struct kr_node *n, band_time now, uint64_t tokens)
{
    if (now <= n->last)
        return;
    uint64_t dt = (uint64_t)now - (uint64_t)n->last;
    u128 refill = (u128)dt * tokens;
    n->missing = refill >= n->missing ? 0 : n->missing - (uint64_t)refill;
    n->last = now;
}

static uint32_t find(const band_keyrate *k, const struct kr_shard *sh, uint64_t h, const void *key,
                     size_t keylen)
{
    for (uint32_t i = sh->heads[h & sh->mask]; i != NIL; i = sh->nodes[i].next) {
        const struct kr_node *n = &sh->nodes[i];
        if (n->hash == h && n->keylen == keylen &&
            (keylen == 0 || memcmp(sh->keys + (size_t)i * k->max_key_len, key, keylen) == 0))
            return i;
    }
    return NIL;
}

/* Unlink node @i from its chain and free it (lock held). */
static void remove_node(struct kr_shard *sh, uint32_t i)
{
    uint32_t *link = &sh->heads[sh->nodes[i].hash & sh->mask];
    while (*link != i)
        link = &sh->nodes[*link].next;
    *link = sh->nodes[i].next;
    sh->nodes[i].next = sh->free_head;
    sh->free_head = i;
    sh->count--;
}

/*
 * Bring every key of @sh to @now and drop the idle ones (lock held). Returns the node to
 * evict among those left (smallest missing, then oldest seq), or NIL when none is left.
 */
static uint32_t sweep(const band_keyrate *k, struct kr_shard *sh, band_time now)
{
    uint32_t victim = NIL;
    for (uint32_t b = 0; b <= sh->mask; b++) {
        uint32_t *link = &sh->heads[b];
        while (*link != NIL) {
            uint32_t i = *link;
            struct kr_node *n = &sh->nodes[i];
            advance(n, now, k->tokens);
            if (n->missing == 0) {
                *link = n->next;
                n->next = sh->free_head;
                sh->free_head = i;
                sh->count--;
                sh->evicted_idle++;
                continue;
            }
            if (victim == NIL || n->missing < sh->nodes[victim].missing ||
                (n->missing == sh->nodes[victim].missing && n->seq < sh->nodes[victim].seq))
                victim = i;
            link = &n->next;
        }
    }
    return victim;
}

/* A node for a new key (lock held): a free one, one freed by a sweep, or the victim's;
 * NIL when the table refuses (counted). */
static uint32_t make_room(const band_keyrate *k, struct kr_shard *sh, band_time now)
{
    if (sh->free_head == NIL) {
        uint32_t victim = sweep(k, sh, now);
        if (sh->free_head == NIL) {
            if (k->full == BAND_KEYRATE_FULL_REFUSE) {
                sh->refused_full++;
                return NIL;
            }
            remove_node(sh, victim);
            sh->evicted_busy++;
        }
    }
    uint32_t i = sh->free_head;
    sh->free_head = sh->nodes[i].next;
    return i;
}

static void insert_node(const band_keyrate *k, struct kr_shard *sh, uint32_t i, uint64_t h,
                        const void *key, size_t keylen, band_time now)
{
    struct kr_node *n = &sh->nodes[i];
    n->hash = h;
    n->missing = 0;
    n->last = now;
    n->seq = 0;
    n->keylen = (uint32_t)keylen;
    if (keylen > 0)
        memcpy(sh->keys + (size_t)i * k->max_key_len, key, keylen);
    uint32_t *head = &sh->heads[h & sh->mask];
    n->next = *head;
    *head = i;
    sh->count++;
}

/* ---------------------------------------------------------------- create, destroy */

static void free_table(band_keyrate *k, unsigned made)
{
    for (unsigned s = 0; s < made; s++) {
        struct kr_shard *sh = &k->shards[s];
        pthread_mutex_destroy(&sh->lock);
        free(sh->heads);
        free(sh->nodes);
        free(sh->keys);
    }
    free(k->shards);
    pthread_mutex_destroy(&k->name_lock);
    free(k);
}

static int init_shard(band_keyrate *k, struct kr_shard *sh, uint32_t cap)
{
    uint32_t buckets = 1;
    while (buckets < cap)
        buckets <<= 1;
    sh->cap = cap;
    sh->mask = buckets - 1;
    sh->last = INT64_MIN; /* the first reading is at or after it */
    sh->heads = malloc((size_t)buckets * sizeof(*sh->heads));
    sh->nodes = malloc((size_t)cap * sizeof(*sh->nodes));
    sh->keys = malloc((size_t)cap * k->max_key_len);
    if (sh->heads == NULL || sh->nodes == NULL || sh->keys == NULL ||
        pthread_mutex_init(&sh->lock, NULL) != 0) {
        free(sh->heads);
        free(sh->nodes);
        free(sh->keys);
        return BAND_ENOMEM;
    }
    memset(sh->heads, 0xff, (size_t)buckets * sizeof(*sh->heads)); /* NIL */
    for (uint32_t i = 0; i < cap; i++)
        sh->nodes[i].next = i + 1 < cap ? i + 1 : NIL;
    sh->free_head = 0;
    return 0;
}

int band_keyrate_create(band_keyrate **out, uint64_t tokens, band_time period, uint64_t burst,
                        const band_keyrate_opts *opts)
{
    static const band_keyrate_opts defaults;
    const band_keyrate_opts *o = opts != NULL ? opts : &defaults;
    if (out == NULL)
        return BAND_EINVAL;
    int rc = check_settings(tokens, period, burst);
    if (rc != 0)
        return rc;
    size_t max_keys = o->max_keys != 0 ? o->max_keys : BAND_KEYRATE_MAX_KEYS_DEFAULT;
    size_t key_len = o->max_key_len != 0 ? o->max_key_len : BAND_KEYRATE_KEY_LEN_DEFAULT;
    unsigned shards = o->shards != 0 ? o->shards : BAND_KEYRATE_SHARDS_DEFAULT;
    if (max_keys > KEYS_LIMIT || key_len > BAND_KEYRATE_KEY_LEN_MAX ||
        shards > BAND_KEYRATE_SHARDS_MAX ||
        (o->full != BAND_KEYRATE_FULL_EVICT && o->full != BAND_KEYRATE_FULL_REFUSE))
        return BAND_EINVAL;
    const band_keyrate_backend *be = o->backend;
    if (be != NULL && (be->try_acquire == NULL || be->available == NULL || be->forget == NULL ||
                       (o->fail != BAND_KEYRATE_FAIL_CLOSED && o->fail != BAND_KEYRATE_FAIL_OPEN)))
        return BAND_EINVAL;
    if (be != NULL)
        max_keys = shards = 1; /* the table is not used */
    if (shards > max_keys)
        shards = (unsigned)max_keys;
    band_keyrate *k = calloc(1, sizeof(*k));
    if (k == NULL)
        return BAND_ENOMEM;
    if (pthread_mutex_init(&k->name_lock, NULL) != 0) {
        free(k);
        return BAND_ENOMEM;
    }
    k->shards = aligned_alloc(CACHE_LINE, (size_t)shards * sizeof(*k->shards));
    if (k->shards == NULL) {
        pthread_mutex_destroy(&k->name_lock);
        free(k);
        return BAND_ENOMEM;
    }
    memset(k->shards, 0, (size_t)shards * sizeof(*k->shards));
    k->tokens = tokens;
    k->period = period;
    k->burst = burst;
    k->max_keys = max_keys;
    k->max_key_len = key_len;
    k->nshards = shards;
    k->full = o->full;
    k->clock = o->clock != NULL ? o->clock : default_clock;
    k->clock_ctx = o->clock_ctx;
    k->seed = mix64((uint64_t)band_now() ^ mix64((uint64_t)(uintptr_t)k));
    atomic_init(&k->closed, 0);
    if (be != NULL) {
        k->has_backend = 1;
        k->backend = *be;
        k->fail = o->fail;
    }
    for (unsigned s = 0; s < shards; s++) {
        uint32_t cap = (uint32_t)(max_keys / shards + (s < max_keys % shards));
        if (init_shard(k, &k->shards[s], cap) != 0) {
            free_table(k, s);
            return BAND_ENOMEM;
        }
    }
    *out = k;
    return 0;
}

int band_keyrate_destroy(band_keyrate *k)
{
    if (k != NULL)
        free_table(k, k->nshards);
    return 0;
}

int band_keyrate_set_name(band_keyrate *k, const char *name)
{
    if (k == NULL)
        return BAND_EINVAL;
    return band__set_name(k->name, name, &k->name_lock);
}

int band_keyrate_set(band_keyrate *k, uint64_t tokens, band_time period, uint64_t burst)
{
    if (k == NULL)
        return BAND_EINVAL;
    int rc = check_settings(tokens, period, burst);
    if (rc != 0)
        return rc;
    band_time reading = k->clock(k->clock_ctx);
    for (unsigned s = 0; s < k->nshards; s++)
        pthread_mutex_lock(&k->shards[s].lock);
    /* Each key keeps how many tokens it is short of full, re-counted in the new units
     * rounding up and at most the new burst: missing' = min(ceil(missing x new period /
     * old period), new depth). A key that is full stays full, as a key the table does not
     * hold does; so a change never tells an idle key from an absent one. missing x new
     * period < 2^63 x 2^63 fits in 128 bits. */
    uint64_t op = (uint64_t)k->period;
    uint64_t new_depth = burst * (uint64_t)period; /* <= INT64_MAX (checked) */
    for (unsigned s = 0; s < k->nshards; s++) {
        struct kr_shard *sh = &k->shards[s];
        band_time now = shard_time(sh, reading);
        for (uint32_t b = 0; b <= sh->mask; b++) {
            for (uint32_t i = sh->heads[b]; i != NIL; i = sh->nodes[i].next) {
                struct kr_node *n = &sh->nodes[i];
                advance(n, now, k->tokens);
                u128 num = (u128)n->missing * (uint64_t)period;
                u128 q = num / op + (num % op != 0);
                n->missing = q > new_depth ? new_depth : (uint64_t)q;
            }
        }
    }
    k->tokens = tokens;
    k->period = period;
    k->burst = burst;
    for (unsigned s = k->nshards; s-- > 0;)
        pthread_mutex_unlock(&k->shards[s].lock);
    return 0;
}

int band_keyrate_close(band_keyrate *k)
{
    if (k == NULL)
        return BAND_EINVAL;
    atomic_store_explicit(&k->closed, 1, memory_order_release);
    return 0;
}

int band_keyrate_is_closed(const band_keyrate *k)
{
    if (k == NULL)
        return 0;
    return atomic_load_explicit(&k->closed, memory_order_acquire);
}

/* ---------------------------------------------------------------- with a backend */

#define ADD1(field) atomic_fetch_add_explicit(&k->field, 1, memory_order_relaxed)

struct settings {
    uint64_t tokens, burst;
    band_time period;
};

/* The current settings (a copy, under shard 0's mutex, which band_keyrate_set() holds). */
static struct settings settings_of(band_keyrate *k)
{
    pthread_mutex_lock(&k->shards[0].lock);
    struct settings st = {k->tokens, k->burst, k->period};
    pthread_mutex_unlock(&k->shards[0].lock);
    return st;
}

/* try_acquire through the backend, after the argument checks. */
static int backend_try(band_keyrate *k, const void *key, size_t keylen, uint64_t n,
                       band_time *retry_after)
{
    struct settings st = settings_of(k);
    if (atomic_load_explicit(&k->closed, memory_order_acquire)) {
        pthread_mutex_lock(&k->shards[0].lock);
        k->shards[0].refused_closed++;
        pthread_mutex_unlock(&k->shards[0].lock);
        return BAND_ECLOSED;
    }
    if (n > st.burst) {
        pthread_mutex_lock(&k->shards[0].lock);
        k->shards[0].refused_too_big++;
        pthread_mutex_unlock(&k->shards[0].lock);
        return BAND_E2BIG;
    }
    band_time ra = 0;
    int rc =
        k->backend.try_acquire(k->backend.ctx, key, keylen, n, st.tokens, st.period, st.burst, &ra);
    if (rc == 0) {
        ADD1(b_granted);
        atomic_fetch_add_explicit(&k->b_tokens, n, memory_order_relaxed);
        return 0;
    }
    if (rc == BAND_EAGAIN) {
        ADD1(b_refused_rate);
        if (retry_after != NULL)
            *retry_after = ra > 0 ? ra : 1; /* a refusal always names a wait */
        return BAND_EAGAIN;
    }
    ADD1(b_errors);
    if (k->fail == BAND_KEYRATE_FAIL_OPEN) {
        ADD1(b_failed_open);
        return 0;
    }
    return BAND_EUNAVAIL;
}

/* ---------------------------------------------------------------- decisions */

int band_keyrate_try_acquire(band_keyrate *k, const void *key, size_t keylen, uint64_t n,
                             band_time *retry_after)
{
    if (retry_after != NULL)
        *retry_after = 0;
    if (k == NULL || n == 0 || !key_ok(k, key, keylen))
        return BAND_EINVAL;
    if (k->has_backend)
        return backend_try(k, key, keylen, n, retry_after);
    uint64_t h = hash_key(k->seed, key, keylen);
    struct kr_shard *sh = &k->shards[shard_index(k, h)];
    band_time reading = k->clock(k->clock_ctx);
    int rc = 0;
    pthread_mutex_lock(&sh->lock);
    band_time now = shard_time(sh, reading);
    if (atomic_load_explicit(&k->closed, memory_order_acquire)) {
        sh->refused_closed++;
        rc = BAND_ECLOSED;
        goto out;
    }
    if (n > k->burst) {
        sh->refused_too_big++;
        rc = BAND_E2BIG;
        goto out;
    }
    uint64_t depth = k->burst * (uint64_t)k->period; /* <= INT64_MAX */
    uint32_t i = find(k, sh, h, key, keylen);
    uint64_t missing = 0;
    if (i != NIL) {
        advance(&sh->nodes[i], now, k->tokens);
        missing = sh->nodes[i].missing;
    }
    uint64_t after = missing + n * (uint64_t)k->period; /* <= 2 x depth */
    if (after > depth) {
        sh->refused_rate++;
        if (retry_after != NULL) {
            uint64_t over = after - depth;
            *retry_after = (band_time)(over / k->tokens + (over % k->tokens != 0));
        }
        rc = BAND_EAGAIN;
        goto out;
    }
    if (i == NIL) {
        i = make_room(k, sh, now);
        if (i == NIL) {
            rc = BAND_ENOSPC;
            goto out;
        }
        insert_node(k, sh, i, h, key, keylen, now);
    }
    struct kr_node *node = &sh->nodes[i];
    if (node->missing == 0)
        node->seq = ++sh->seq; /* it leaves full: it orders as a new key */
    node->missing = after;
    sh->granted++;
    sh->granted_tokens = n > UINT64_MAX - sh->granted_tokens ? UINT64_MAX : sh->granted_tokens + n;
out:
    pthread_mutex_unlock(&sh->lock);
    return rc;
}

uint64_t band_keyrate_available(const band_keyrate *ck, const void *key, size_t keylen)
{
    if (ck == NULL || !key_ok(ck, key, keylen))
        return 0;
    band_keyrate *k = (band_keyrate *)ck; /* the locks and the refill are logically const */
    if (k->has_backend) {
        struct settings st = settings_of(k);
        uint64_t out = 0;
        if (k->backend.available(k->backend.ctx, key, keylen, st.tokens, st.period, st.burst,
                                 &out) == 0)
            return out < st.burst ? out : st.burst;
        ADD1(b_errors);
        return k->fail == BAND_KEYRATE_FAIL_OPEN ? st.burst : 0;
    }
    uint64_t h = hash_key(k->seed, key, keylen);
    struct kr_shard *sh = &k->shards[shard_index(k, h)];
    band_time reading = k->clock(k->clock_ctx);
    pthread_mutex_lock(&sh->lock);
    band_time now = shard_time(sh, reading);
    uint64_t missing = 0;
    uint32_t i = find(k, sh, h, key, keylen);
    if (i != NIL) {
        advance(&sh->nodes[i], now, k->tokens);
        missing = sh->nodes[i].missing;
    }
    uint64_t depth = k->burst * (uint64_t)k->period;
    uint64_t avail = missing >= depth ? 0 : (depth - missing) / (uint64_t)k->period;
    pthread_mutex_unlock(&sh->lock);
    return avail;
}

int band_keyrate_forget(band_keyrate *k, const void *key, size_t keylen)
{
    if (k == NULL || !key_ok(k, key, keylen))
        return BAND_EINVAL;
    if (k->has_backend) {
        int brc = k->backend.forget(k->backend.ctx, key, keylen);
        if (brc == 0) {
            ADD1(b_forgotten);
            return 0;
        }
        if (brc == BAND_ENOENT)
            return BAND_ENOENT;
        ADD1(b_errors);
        return BAND_EUNAVAIL;
    }
    uint64_t h = hash_key(k->seed, key, keylen);
    struct kr_shard *sh = &k->shards[shard_index(k, h)];
    band_time reading = k->clock(k->clock_ctx);
    int rc = BAND_ENOENT;
    pthread_mutex_lock(&sh->lock);
    band_time now = shard_time(sh, reading);
    uint32_t i = find(k, sh, h, key, keylen);
    if (i != NIL) {
        advance(&sh->nodes[i], now, k->tokens);
        if (sh->nodes[i].missing == 0) {
            sh->evicted_idle++; /* idle: as absent, so the answer is ENOENT */
        } else {
            sh->forgotten++;
            rc = 0;
        }
        remove_node(sh, i);
    }
    pthread_mutex_unlock(&sh->lock);
    return rc;
}

/* ---------------------------------------------------------------- observability */

int band_keyrate_get_stats(const band_keyrate *ck, band_keyrate_stats *out)
{
    if (ck == NULL || out == NULL)
        return BAND_EINVAL;
    band_keyrate *k = (band_keyrate *)ck; /* the locks and the sweep are logically const */
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&k->name_lock);
    memcpy(out->name, k->name, sizeof(out->name));
    pthread_mutex_unlock(&k->name_lock);
    out->max_keys = k->max_keys;
    out->shards = k->nshards;
    band_time reading = k->clock(k->clock_ctx);
    for (unsigned s = 0; s < k->nshards; s++) {
        struct kr_shard *sh = &k->shards[s];
        pthread_mutex_lock(&sh->lock);
        if (s == 0) {
            out->tokens = k->tokens;
            out->burst = k->burst;
            out->period = k->period;
        }
        (void)sweep(k, sh, shard_time(sh, reading));
        out->keys += sh->count;
        out->granted += sh->granted;
        out->granted_tokens = sh->granted_tokens > UINT64_MAX - out->granted_tokens
                                  ? UINT64_MAX
                                  : out->granted_tokens + sh->granted_tokens;
        out->refused_rate += sh->refused_rate;
        out->refused_too_big += sh->refused_too_big;
        out->refused_full += sh->refused_full;
        out->refused_closed += sh->refused_closed;
        out->evicted_busy += sh->evicted_busy;
        out->evicted_idle += sh->evicted_idle;
        out->forgotten += sh->forgotten;
        pthread_mutex_unlock(&sh->lock);
    }
    if (k->has_backend) {
        out->keys = 0; /* they live in the backend */
        out->granted += atomic_load_explicit(&k->b_granted, memory_order_relaxed);
        out->granted_tokens += atomic_load_explicit(&k->b_tokens, memory_order_relaxed);
        out->refused_rate += atomic_load_explicit(&k->b_refused_rate, memory_order_relaxed);
        out->forgotten += atomic_load_explicit(&k->b_forgotten, memory_order_relaxed);
        out->backend_errors = atomic_load_explicit(&k->b_errors, memory_order_relaxed);
        out->failed_open = atomic_load_explicit(&k->b_failed_open, memory_order_relaxed);
        out->granted += out->failed_open;
    }
    out->closed = band_keyrate_is_closed(k);
    return 0;
}

#ifdef BAND_TESTING
unsigned band__keyrate_shard_of(const band_keyrate *k, const void *key, size_t keylen)
{
    return shard_index(k, hash_key(k->seed, key, keylen));
}

size_t band__keyrate_held(const band_keyrate *ck, unsigned shard)
{
    band_keyrate *k = (band_keyrate *)ck;
    struct kr_shard *sh = &k->shards[shard];
    pthread_mutex_lock(&sh->lock);
    size_t n = sh->count;
    pthread_mutex_unlock(&sh->lock);
    return n;
}
#endif

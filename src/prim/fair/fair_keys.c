/* SPDX-License-Identifier: MIT */
/*
 * fair_keys.c - the key registry of a band_fair: a chained hash table of key states.
 *
 * Design notes
 * ------------
 * Bound. At most max_keys states are live. A state is created on a key's first use and
 * evicted as soon as the key is idle (nothing held, nothing queued) unless it is pinned by
 * band_fair_key_set() or a handle refers to it. Evicted states go to a cache of at most
 * FAIR_FREE_CACHE states for reuse and the rest are freed, so memory is bounded by max_keys states
 * plus the table, whatever keys an attacker sends. A new key past the bound is refused with
 * BAND_ENOMEM.
 *
 * Table. Power-of-two buckets, each a singly linked chain. It starts small and doubles
 * when the live keys outnumber the buckets, up to the power of two at or above max_keys,
 * so chains stay short; a failed growth is harmless (chains get longer). The hash is a
 * splitmix64 finalizer of id ^ seed, with a per-fair seed taken from the clock and the
 * fair's address, so that chosen ids are hard to aim at one bucket.
 *
 * Allocation happens only here, only when a key has no state: the request path of a live
 * key never allocates. Everything runs under the fair's lock.
 */
#include <stdlib.h>
#include <string.h>

#include "prim/fair/fair_internal.h"

#define FAIR_TAB_MIN 16u

static uint64_t fair_hash(const band_fair *f, uint64_t id)
{
    uint64_t z = id ^ f->seed;
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

int band__fair_keys_init(band_fair *f, uint64_t max_keys)
{
    uint64_t max = FAIR_TAB_MIN;
    while (max < max_keys)
        max <<= 1;
    uint64_t n = FAIR_TAB_MIN;
    f->tab = calloc((size_t)n, sizeof(struct fair_key *));
    if (f->tab == NULL)
        return BAND_ENOMEM;
    f->tab_mask = n - 1;
    f->tab_max = max;
    f->seed = (uint64_t)band_now() ^ ((uint64_t)(uintptr_t)f * UINT64_C(0x9E3779B97F4A7C15));
    f->max_keys = max_keys;
    f->nkeys = f->npinned = f->nfree = 0;
    f->free_keys = NULL;
    f->key_size = sizeof(struct fair_key) + (size_t)f->nclasses * sizeof(struct fair_flow);
    return 0;
}

struct fair_key *band__fair_key_find(const band_fair *f, uint64_t id)
{
    struct fair_key *k = f->tab[fair_hash(f, id) & f->tab_mask];
    while (k != NULL && k->id != id)
        k = k->hnext;
    return k;
}

/* Double the table (rehash every chain); on allocation failure keep the old one. */
static void fair_tab_grow(band_fair *f)
{
    uint64_t n = (f->tab_mask + 1) * 2;
    struct fair_key **nt = calloc((size_t)n, sizeof(struct fair_key *));
    if (nt == NULL)
        return;
    for (uint64_t i = 0; i <= f->tab_mask; i++) {
        struct fair_key *k = f->tab[i];
        while (k != NULL) {
            struct fair_key *next = k->hnext;
            uint64_t b = fair_hash(f, k->id) & (n - 1);
            k->hnext = nt[b];
            nt[b] = k;
            k = next;
        }
    }
    free((void *)f->tab);
    f->tab = nt;
    f->tab_mask = n - 1;
}

static void fair_key_reset(band_fair *f, struct fair_key *k, uint64_t id)
{
    memset(k, 0, f->key_size);
    k->id = id;
    k->weight = f->default_weight;
    atomic_init(&k->a_held, 0);
    atomic_init(&k->a_cap, f->default_cap);
    atomic_init(&k->a_reserve, 0);
    atomic_init(&k->a_fast_cap, fair_fast_cap(f, f->default_cap, 0));
    band__list_init(&k->rlink);
    band__list_init(&k->handles);
    for (uint32_t c = 0; c < f->nclasses; c++) {
        struct fair_flow *fl = &k->flow[c];
        band__list_init(&fl->reqs);
        band__list_init(&fl->ring);
        fl->key = k;
    }
}

struct fair_key *band__fair_key_get(band_fair *f, uint64_t id, int *rc)
{
    struct fair_key *k = band__fair_key_find(f, id);
    if (k != NULL)
        return k;
    if (f->nkeys >= f->max_keys) {
        f->key_refusals++;
        *rc = BAND_ENOMEM;
        return NULL;
    }
    if (f->free_keys != NULL) {
        k = f->free_keys;
        f->free_keys = k->hnext;
        f->nfree--;
    } else {
        k = malloc(f->key_size);
        if (k == NULL) {
            *rc = BAND_ENOMEM;
            return NULL;
        }
    }
    fair_key_reset(f, k, id);
    if (f->nkeys >= f->tab_mask + 1 && f->tab_mask + 1 < f->tab_max)
        fair_tab_grow(f);
    uint64_t b = fair_hash(f, id) & f->tab_mask;
    k->hnext = f->tab[b];
    f->tab[b] = k;
    f->nkeys++;
    f->keys_created++;
    return k;
}

void band__fair_key_maybe_evict(band_fair *f, struct fair_key *k)
{
    if (k->pinned || k->refs != 0 || key_held(k) != 0 || k->nreq != 0)
        return;
    struct fair_key **pp = &f->tab[fair_hash(f, k->id) & f->tab_mask];
    while (*pp != k)
        pp = &(*pp)->hnext;
    *pp = k->hnext;
    f->nkeys--;
    f->keys_evicted++;
    /* Its counters live on in the fair's evicted totals (band_fair_stats.evicted_*), so a
     * sum over keys never goes backwards. No handle refers to it: nothing is unfolded. */
    f->ev_granted += k->granted;
    f->ev_granted_units += k->granted_units;
    f->ev_queued += k->queued;
    f->ev_timeouts += k->timeouts;
    f->ev_cancels += k->cancels;
    f->ev_wait_ns += k->wait_ns_total;
    if (f->nfree < FAIR_FREE_CACHE) {
        k->hnext = f->free_keys;
        f->free_keys = k;
        f->nfree++;
    } else {
        free(k);
    }
}

void band__fair_keys_free(band_fair *f)
{
    for (uint64_t i = 0; i <= f->tab_mask; i++) {
        struct fair_key *k = f->tab[i];
        while (k != NULL) {
            struct fair_key *next = k->hnext;
            free(k);
            k = next;
        }
    }
    free((void *)f->tab);
    f->tab = NULL;
    while (f->free_keys != NULL) {
        struct fair_key *next = f->free_keys->hnext;
        free(f->free_keys);
        f->free_keys = next;
    }
    f->nfree = 0;
}

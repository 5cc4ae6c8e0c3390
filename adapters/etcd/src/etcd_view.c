/* SPDX-License-Identifier: MIT */
/*
 * etcd_view.c - a client's view of one budget: its capacity and its requests in queue
 * order, loaded from a range and kept current by the watch; and the grant rule on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_internal.h"

static int is_gone(const struct etcd_view *v, const char *id)
{
    for (unsigned i = 0; i < ETCD_VIEW_GONE; i++)
        if (v->gone[i][0] != '\0' && strcmp(v->gone[i], id) == 0)
            return 1;
    return 0;
}

void etcd_view_free(struct etcd_view *v)
{
    free(v->ent);
    memset(v, 0, sizeof(*v));
}

int etcd_entry_parse(struct etcd_entry *en, const char *value, size_t vlen)
{
    json_t *j = json_loadb(value, vlen, 0, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return BAND_EINVAL;
    }
    json_int_t u = json_integer_value(json_object_get(j, "u"));
    en->units = u > 0 ? (uint64_t)u : 0;
    en->granted = json_integer_value(json_object_get(j, "g")) == 1;
    json_int_t p = json_integer_value(json_object_get(j, "p"));
    en->parts = p > 0 ? (uint32_t)p : 1;
    const char *h = json_string_value(json_object_get(j, "h"));
    en->holder[0] = '\0';
    if (h) {
        strncpy(en->holder, h, sizeof(en->holder) - 1);
        en->holder[sizeof(en->holder) - 1] = '\0';
    }
    json_decref(j);
    return 0;
}

/* The id of a request key of @b, or NULL for other keys. */
static const char *key_id(const struct band_etcd_budget *b, const char *key)
{
    size_t n = strlen(b->q_pfx);
    if (strncmp(key, b->q_pfx, n) != 0)
        return NULL;
    const char *id = key + n;
    return (*id && strlen(id) < BAND_ETCD_ID_SIZE) ? id : NULL;
}

static size_t find_index(const struct etcd_view *v, const char *id)
{
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->ent[i].id, id) == 0)
            return i;
    return SIZE_MAX;
}

const struct etcd_entry *etcd_view_find(const struct etcd_view *v, const char *id)
{
    size_t i = find_index(v, id);
    return i == SIZE_MAX ? NULL : &v->ent[i];
}

static int insert(struct etcd_view *v, const struct etcd_entry *en)
{
    if (v->n == v->cap_n) {
        size_t cap = v->cap_n ? v->cap_n * 2 : 8;
        struct etcd_entry *p = realloc(v->ent, cap * sizeof(*p));
        if (p == NULL)
            return BAND_ENOMEM;
        v->ent = p;
        v->cap_n = cap;
    }
    size_t i = v->n;
    while (i > 0 && v->ent[i - 1].created > en->created)
        i--;
    memmove(&v->ent[i + 1], &v->ent[i], (v->n - i) * sizeof(*en));
    v->ent[i] = *en;
    v->n++;
    return 0;
}

static void put_key(struct etcd_view *v, const struct band_etcd_budget *b, const char *key,
                    const char *value, size_t vlen, int64_t create, int64_t mod, int64_t lease)
{
    if (strcmp(key, b->cap_key) == 0) {
        v->capacity = strtoull(value, NULL, 10);
        v->cap_mod = mod;
        return;
    }
    const char *id = key_id(b, key);
    if (id == NULL || is_gone(v, id))
        return;
    struct etcd_entry en;
    memset(&en, 0, sizeof(en));
    if (etcd_entry_parse(&en, value, vlen) != 0)
        return;
    strcpy(en.id, id);
    en.created = create;
    en.mod = mod;
    en.lease = lease;
    size_t i = find_index(v, id);
    if (i != SIZE_MAX)
        v->ent[i] = en;
    else
        (void)insert(v, &en);
}

int etcd_view_load(struct etcd_view *v, const struct band_etcd_budget *b,
                   const struct etcd_kvs *kvs, int64_t rev)
{
    if (rev <= v->rev)
        return 0;
    v->n = 0;
    v->capacity = 0;
    v->cap_mod = 0;
    for (size_t i = 0; i < kvs->n; i++) {
        const struct etcd_kv *kv = &kvs->kv[i];
        put_key(v, b, kv->key, kv->value, kv->vlen, kv->create, kv->mod, kv->lease);
    }
    v->rev = rev;
    return 0;
}

void etcd_view_apply(struct etcd_view *v, const struct band_etcd_budget *b, const char *key,
                     const char *value, size_t vlen, int64_t create, int64_t mod, int64_t lease)
{
    if (value != NULL) {
        put_key(v, b, key, value, vlen, create, mod, lease);
        return;
    }
    if (strcmp(key, b->cap_key) == 0) {
        v->capacity = 0;
        v->cap_mod = 0;
        return;
    }
    const char *id = key_id(b, key);
    size_t i = id ? find_index(v, id) : SIZE_MAX;
    if (i != SIZE_MAX) {
        memmove(&v->ent[i], &v->ent[i + 1], (v->n - i - 1) * sizeof(v->ent[0]));
        v->n--;
    }
}

void etcd_view_note_granted(struct etcd_view *v, const char *id, uint64_t units, const char *holder,
                            uint32_t parts, int64_t created, int64_t mod, int64_t lease)
{
    if (is_gone(v, id))
        return;
    size_t i = find_index(v, id);
    if (i != SIZE_MAX) {
        v->ent[i].granted = 1;
        if (mod > v->ent[i].mod)
            v->ent[i].mod = mod;
        return;
    }
    if (created <= 0)
        return;
    struct etcd_entry en;
    memset(&en, 0, sizeof(en));
    (void)snprintf(en.id, sizeof(en.id), "%s", id);
    (void)snprintf(en.holder, sizeof(en.holder), "%s", holder);
    en.created = created;
    en.mod = mod;
    en.lease = lease;
    en.units = units;
    en.parts = parts;
    en.granted = 1;
    (void)insert(v, &en); /* without room the view only lacks a key newer than v->rev */
}

void etcd_view_note_gone(struct etcd_view *v, const char *id)
{
    size_t i = find_index(v, id);
    if (i != SIZE_MAX) {
        memmove(&v->ent[i], &v->ent[i + 1], (v->n - i - 1) * sizeof(v->ent[0]));
        v->n--;
    }
    if (!is_gone(v, id)) {
        (void)snprintf(v->gone[v->gone_next], sizeof(v->gone[0]), "%s", id);
        v->gone_next = (v->gone_next + 1) % ETCD_VIEW_GONE;
    }
}

int etcd_view_may_grant(const struct etcd_view *v, const char *id, uint64_t units)
{
    uint64_t ahead = 0;
    for (size_t i = 0; i < v->n; i++) {
        const struct etcd_entry *en = &v->ent[i];
        if (strcmp(en->id, id) == 0)
            return v->cap_mod != 0 && units <= v->capacity && ahead <= v->capacity - units;
        if (!en->granted)
            return 0;
        ahead += en->units;
    }
    return -1;
}

int etcd_view_has_room(const struct etcd_view *v, uint64_t units)
{
    if (v->cap_mod == 0 || v->rev == 0 || units > v->capacity)
        return 0;
    uint64_t held = 0;
    for (size_t i = 0; i < v->n; i++) {
        if (!v->ent[i].granted)
            return 0;
        held += v->ent[i].units;
    }
    return held <= v->capacity - units;
}

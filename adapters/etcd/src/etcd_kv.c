/* SPDX-License-Identifier: MIT */
/*
 * etcd_kv.c - the key-value and lease calls of the JSON gateway, with their answers
 * parsed: range, txn, delete, lease grant, revoke and keepalive.
 */
#include <stdlib.h>
#include <string.h>

#include "etcd_internal.h"

/* Set @field of @o to base64(@s); 0 or -1 (no memory). */
static int set_b64(json_t *o, const char *field, const char *s)
{
    char *enc = etcd_b64_encode(s, strlen(s));
    if (enc == NULL)
        return -1;
    int rc = json_object_set_new(o, field, json_string(enc));
    free(enc);
    return rc;
}

void etcd_kvs_free(struct etcd_kvs *k)
{
    for (size_t i = 0; i < k->n; i++) {
        free(k->kv[i].key);
        free(k->kv[i].value);
    }
    free(k->kv);
    k->kv = NULL;
    k->n = 0;
}

int etcd_kvs_parse(const json_t *range_response, struct etcd_kvs *out)
{
    out->kv = NULL;
    out->n = 0;
    const json_t *kvs = json_object_get(range_response, "kvs");
    size_t n = json_is_array(kvs) ? json_array_size(kvs) : 0;
    if (n == 0)
        return 0;
    out->kv = calloc(n, sizeof(*out->kv));
    if (out->kv == NULL)
        return BAND_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *kv = json_array_get(kvs, i);
        const char *k = json_string_value(json_object_get(kv, "key"));
        const char *v = json_string_value(json_object_get(kv, "value"));
        struct etcd_kv *d = &out->kv[out->n];
        d->key = etcd_b64_decode(k ? k : "", NULL);
        d->value = etcd_b64_decode(v ? v : "", &d->vlen);
        if (d->key == NULL || d->value == NULL) {
            free(d->key);
            free(d->value);
            continue;
        }
        d->create = etcd_json_i64(kv, "create_revision");
        d->mod = etcd_json_i64(kv, "mod_revision");
        d->lease = etcd_json_i64(kv, "lease");
        out->n++;
    }
    return 0;
}

json_t *etcd_op_put(const char *key, const char *value, int64_t lease)
{
    json_t *p = json_object();
    set_b64(p, "key", key);
    set_b64(p, "value", value);
    if (lease != 0)
        json_object_set_new(p, "lease", etcd_json_i64_new(lease));
    return json_pack("{s:o}", "request_put", p);
}

json_t *etcd_op_range(const char *key, const char *end)
{
    json_t *p = json_object();
    set_b64(p, "key", key);
    if (end)
        set_b64(p, "range_end", end);
    return json_pack("{s:o}", "request_range", p);
}

json_t *etcd_op_delete(const char *key, const char *end)
{
    json_t *p = json_object();
    set_b64(p, "key", key);
    if (end)
        set_b64(p, "range_end", end);
    return json_pack("{s:o}", "request_delete_range", p);
}

json_t *etcd_op_txn(json_t *compare, json_t *success, json_t *failure)
{
    json_t *t = json_object();
    json_object_set_new(t, "compare", compare ? compare : json_array());
    json_object_set_new(t, "success", success ? success : json_array());
    json_object_set_new(t, "failure", failure ? failure : json_array());
    return json_pack("{s:o}", "request_txn", t);
}

json_t *etcd_cmp(const char *result, const char *target, const char *key, const char *end,
                 int64_t ival, const char *sval)
{
    json_t *c = json_object();
    json_object_set_new(c, "result", json_string(result));
    json_object_set_new(c, "target", json_string(target));
    set_b64(c, "key", key);
    if (end)
        set_b64(c, "range_end", end);
    if (strcmp(target, "MOD") == 0)
        json_object_set_new(c, "mod_revision", etcd_json_i64_new(ival));
    else if (strcmp(target, "CREATE") == 0)
        json_object_set_new(c, "create_revision", etcd_json_i64_new(ival));
    else if (strcmp(target, "VALUE") == 0)
        set_b64(c, "value", sval);
    return c;
}

static int post(struct band_etcd *e, const char *path, json_t *body, json_t **out,
                int *maybe_applied)
{
    int gc = 0, dummy = 0;
    int rc = etcd_http_post(&e->http, path, body, out, &gc, maybe_applied ? maybe_applied : &dummy);
    if (rc == ETCD_EGRPC)
        rc = gc == ETCD_GRPC_NOT_FOUND ? BAND_ENOENT : BAND_EUNAVAIL;
    return rc;
}

int etcd_txn(struct band_etcd *e, json_t *compare, json_t *success, json_t *failure, json_t **resp,
             int *maybe_applied)
{
    json_t *body = json_object();
    json_object_set_new(body, "compare", compare ? compare : json_array());
    json_object_set_new(body, "success", success ? success : json_array());
    json_object_set_new(body, "failure", failure ? failure : json_array());
    atomic_fetch_add(&e->http.txns, 1);
    int rc = post(e, "/v3/kv/txn", body, resp, maybe_applied);
    json_decref(body);
    /* A put under a lease that does not exist is the only "not found" a txn gives. */
    return rc == BAND_ENOENT ? BAND_ESTALE : rc;
}

int etcd_range(struct band_etcd *e, const char *key, const char *end, struct etcd_kvs *out,
               int64_t *revision)
{
    json_t *body = json_object();
    set_b64(body, "key", key);
    if (end)
        set_b64(body, "range_end", end);
    json_t *resp = NULL;
    int rc = post(e, "/v3/kv/range", body, &resp, NULL);
    json_decref(body);
    if (rc != 0)
        return rc == BAND_ENOENT ? BAND_EUNAVAIL : rc;
    if (revision)
        *revision = etcd_json_i64(json_object_get(resp, "header"), "revision");
    rc = etcd_kvs_parse(resp, out);
    json_decref(resp);
    return rc;
}

int etcd_delete_keys(struct band_etcd *e, char *const *keys, size_t n, int64_t *deleted,
                     int *maybe_applied)
{
    json_t *resp = NULL;
    int64_t sum = 0;
    if (n == 1) {
        /* One key: a plain deletion, which costs the cluster less than a transaction. */
        json_t *body = json_object();
        set_b64(body, "key", keys[0]);
        int rc = post(e, "/v3/kv/deleterange", body, &resp, maybe_applied);
        json_decref(body);
        if (rc != 0)
            return rc == BAND_ENOENT ? BAND_EUNAVAIL : rc;
        sum = etcd_json_i64(resp, "deleted");
    } else {
        json_t *ops = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(ops, etcd_op_delete(keys[i], NULL));
        int rc = etcd_txn(e, NULL, ops, NULL, &resp, maybe_applied);
        if (rc != 0)
            return rc == BAND_ESTALE ? BAND_EUNAVAIL : rc;
        json_t *rs = json_object_get(resp, "responses");
        for (size_t i = 0; i < json_array_size(rs); i++)
            sum += etcd_json_i64(json_object_get(json_array_get(rs, i), "response_delete_range"),
                                 "deleted");
    }
    json_decref(resp);
    if (deleted)
        *deleted = sum;
    return 0;
}

int etcd_lease_grant(struct band_etcd *e, int64_t ttl_s, int64_t *lease, int64_t *ttl_out)
{
    json_t *body = json_pack("{s:o,s:s}", "TTL", etcd_json_i64_new(ttl_s), "ID", "0");
    json_t *resp = NULL;
    int rc = post(e, "/v3/lease/grant", body, &resp, NULL);
    json_decref(body);
    if (rc != 0)
        return BAND_EUNAVAIL;
    *lease = etcd_json_i64(resp, "ID");
    *ttl_out = etcd_json_i64(resp, "TTL");
    json_decref(resp);
    return *lease > 0 ? 0 : BAND_EUNAVAIL;
}

int etcd_lease_revoke(struct band_etcd *e, int64_t lease)
{
    json_t *body = json_pack("{s:o}", "ID", etcd_json_i64_new(lease));
    json_t *resp = NULL;
    int rc = post(e, "/v3/lease/revoke", body, &resp, NULL);
    json_decref(body);
    json_decref(resp);
    return rc;
}

int etcd_lease_keepalive(struct band_etcd *e, int64_t lease, int64_t *ttl_out)
{
    json_t *body = json_pack("{s:o}", "ID", etcd_json_i64_new(lease));
    json_t *resp = NULL;
    int rc = post(e, "/v3/lease/keepalive", body, &resp, NULL);
    json_decref(body);
    if (rc == BAND_ENOENT) {
        *ttl_out = 0;
        return 0;
    }
    if (rc != 0)
        return rc;
    json_t *result = json_object_get(resp, "result");
    if (result == NULL) {
        json_decref(resp);
        return BAND_EUNAVAIL;
    }
    *ttl_out = etcd_json_i64(result, "TTL");
    json_decref(resp);
    return 0;
}

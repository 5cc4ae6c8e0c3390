/* SPDX-License-Identifier: MIT */
/*
 * etcd_internal.h - the structures shared by libband-etcd's source files.
 *
 * Locking: one mutex per client (band_etcd.lock) guards the lease, the budgets' views and
 * flags, and the list of pending requests. No HTTP request is made with it held, and
 * band_relay_* is never called with it held (the relay's cancel hook takes it: the order
 * is relay lock, then client lock).
 */
#ifndef BAND_ETCD_INTERNAL_H
#define BAND_ETCD_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>

#include "band/band.h"
#include "band/etcd.h"
#include "band/relay.h"

/* ---- transport (etcd_http.c) ------------------------------------------------------- */

#define ETCD_POOL_MAX   16
#define ETCD_PREFIX_MAX 128
#define ETCD_HOLDER_MAX 63

/* A gRPC status the gateway answered with (not a transport failure): see grpc_code. */
#define ETCD_EGRPC          (-5000)
#define ETCD_GRPC_NOT_FOUND 5

struct etcd_http {
    char **ep; /* base URLs, without a trailing '/' */
    size_t n_ep;
    atomic_size_t current; /* the endpoint requests go to first */
    long timeout_ms;
    long connect_ms;
    pthread_mutex_t pool_lock;
    CURL *pool[ETCD_POOL_MAX];
    size_t n_pool;
    atomic_uint_fast64_t requests;
    atomic_uint_fast64_t txns;
    atomic_uint_fast64_t failovers;
};

int etcd_http_init(struct etcd_http *h, const char *endpoints, band_time timeout,
                   band_time connect_timeout);
void etcd_http_fini(struct etcd_http *h);
/* POST @body (JSON, kept by the caller) to @path on the current endpoint, trying the next
 * ones on a transport failure. *out gets the answer (caller decrefs). Returns 0,
 * ETCD_EGRPC (*grpc_code set, *out NULL), BAND_EUNAVAIL or BAND_ENOMEM. *maybe_applied
 * becomes 1 when an attempt failed after the request could have reached a server. */
int etcd_http_post(struct etcd_http *h, const char *path, json_t *body, json_t **out,
                   int *grpc_code, int *maybe_applied);
/* The endpoint requests go to now, and moving past endpoint @idx after it failed. */
const char *etcd_http_endpoint(struct etcd_http *h, size_t *idx);
void etcd_http_failover(struct etcd_http *h, size_t idx);

char *etcd_b64_encode(const char *s, size_t len);
char *etcd_b64_decode(const char *s, size_t *len);           /* NUL-terminated, NULL on bad input */
int64_t etcd_json_i64(const json_t *obj, const char *field); /* "123" or 123; 0 absent */
json_t *etcd_json_i64_new(int64_t v);                        /* as a JSON string */

/* ---- key-value calls (etcd_kv.c) ---------------------------------------------------- */

struct etcd_kv {
    char *key;
    char *value;
    size_t vlen;
    int64_t create;
    int64_t mod;
    int64_t lease;
};

struct etcd_kvs {
    struct etcd_kv *kv;
    size_t n;
};

void etcd_kvs_free(struct etcd_kvs *k);
int etcd_kvs_parse(const json_t *range_response, struct etcd_kvs *out);

json_t *etcd_op_put(const char *key, const char *value, int64_t lease);
json_t *etcd_op_range(const char *key, const char *end);
json_t *etcd_op_delete(const char *key, const char *end);
json_t *etcd_op_txn(json_t *compare, json_t *success, json_t *failure);
/* A compare; @end may be NULL. @target is "MOD", "CREATE" or "VALUE"; for VALUE @sval. */
json_t *etcd_cmp(const char *result, const char *target, const char *key, const char *end,
                 int64_t ival, const char *sval);

struct band_etcd;
/* A transaction: *resp receives the answer. Returns as etcd_http_post(), with
 * BAND_ESTALE for "lease not found". */
int etcd_txn(struct band_etcd *e, json_t *compare, json_t *success, json_t *failure, json_t **resp,
             int *maybe_applied);
int etcd_range(struct band_etcd *e, const char *key, const char *end, struct etcd_kvs *out,
               int64_t *revision);
int etcd_delete_keys(struct band_etcd *e, char *const *keys, size_t n, int64_t *deleted,
                     int *maybe_applied);
int etcd_lease_grant(struct band_etcd *e, int64_t ttl_s, int64_t *lease, int64_t *ttl_out);
int etcd_lease_revoke(struct band_etcd *e, int64_t lease);
int etcd_lease_keepalive(struct band_etcd *e, int64_t lease, int64_t *ttl_out);

/* ---- views (etcd_view.c) ------------------------------------------------------------- */

struct etcd_entry {
    char id[BAND_ETCD_ID_SIZE];
    char holder[64];
    int64_t created;
    int64_t mod;
    int64_t lease;
    uint64_t units;
    uint32_t parts;
    int granted;
};

/* Requests of this client whose deletion the cluster confirmed, newest last: a watch event
 * or a range read older than the deletion must not bring them back into the view. */
#define ETCD_VIEW_GONE 16

struct etcd_view {
    struct etcd_entry *ent; /* sorted by created */
    size_t n;
    size_t cap_n;
    uint64_t capacity;
    int64_t cap_mod; /* 0: no capacity key */
    int64_t rev;     /* every change up to it is in the view */
    char gone[ETCD_VIEW_GONE][BAND_ETCD_ID_SIZE];
    unsigned gone_next;
};

struct band_etcd_budget;
void etcd_view_free(struct etcd_view *v);
/* Replace @v with the keys of a range read at @rev (no-op when @rev is not newer). */
int etcd_view_load(struct etcd_view *v, const struct band_etcd_budget *b,
                   const struct etcd_kvs *kvs, int64_t rev);
/* Apply one put (value non-NULL) or delete of @key at @mod. */
void etcd_view_apply(struct etcd_view *v, const struct band_etcd_budget *b, const char *key,
                     const char *value, size_t vlen, int64_t create, int64_t mod, int64_t lease);
const struct etcd_entry *etcd_view_find(const struct etcd_view *v, const char *id);
/* This client's own writes, applied before the watch reports them. A granted request
 * (@created 0: only when it is in the view already) and a request whose keys are confirmed
 * gone. Both keep the view safe for the fast path, whose compare admits only keys not
 * modified since v->rev: the view may hold more than the cluster, never less. */
void etcd_view_note_granted(struct etcd_view *v, const char *id, uint64_t units, const char *holder,
                            uint32_t parts, int64_t created, int64_t mod, int64_t lease);
void etcd_view_note_gone(struct etcd_view *v, const char *id);
/* The grant rule for request @id of @units: 1 grants now, 0 waits, -1 when @id is not in
 * the view (the view is older than the request). */
int etcd_view_may_grant(const struct etcd_view *v, const char *id, uint64_t units);
/* 1 when a new request of @units would be granted at once: all keys granted and room. */
int etcd_view_has_room(const struct etcd_view *v, uint64_t units);
/* Parse a request's value. */
int etcd_entry_parse(struct etcd_entry *en, const char *value, size_t vlen);

/* ---- client, budgets, requests ------------------------------------------------------- */

/* One acquisition in flight (queued, or being decided). */
struct etcd_rec {
    struct etcd_rec *next;
    band_waiter *w;       /* the caller's waiter */
    band_etcd_grant *out; /* where the grant goes */
    char id[BAND_ETCD_ID_SIZE];
    int64_t lease;
    uint32_t n;
    struct band_etcd_budget *b[BAND_ETCD_REQ_MAX];
    uint64_t units[BAND_ETCD_REQ_MAX];
    int parked;              /* the waiter is on the relay */
    int cancelled;           /* the cancel hook withdrew it: delete its keys */
    int end_status;          /* nonzero: end it with this status (close, lost lease) */
    int busy;                /* the client's thread is marking it */
    void (*on_free)(void *); /* told when the record is freed, or NULL */
    void *free_arg;
};

void etcd_rec_free(struct etcd_rec *r);

/* Keys to delete once the cluster answers (an ambiguous write that could not be undone). */
struct etcd_orphan {
    struct etcd_orphan *next;
    char *key;
};

#define ETCD_PAST_LEASES 8
/* Keys whose deletion this client sent without learning the outcome (by hash). */
#define ETCD_UNSURE 64

struct band_etcd {
    struct etcd_http http;
    char prefix[ETCD_PREFIX_MAX + 1];
    char holder[ETCD_HOLDER_MAX + 1];
    int64_t ttl_s;
    band_etcd_lost_fn *on_lost;
    void *data;

    pthread_mutex_t lock;
    pthread_cond_t cond;
    int64_t lease; /* 0 while none */
    int64_t past[ETCD_PAST_LEASES];
    band_time lease_deadline;
    band_time next_keepalive;
    int lease_check; /* renew at once: a key of ours went away */
    uint64_t counter;
    struct band_etcd_budget *budgets;
    struct etcd_rec *recs;
    struct etcd_orphan *orphans;
    uint64_t unsure[ETCD_UNSURE];
    unsigned unsure_next;
    int eval; /* re-evaluate queued requests */
    int stop;
    band_relay *relay;
    pthread_t thread;
    CURLM *multi;

    atomic_uint_fast64_t keepalives;
    atomic_uint_fast64_t leases_lost;
    atomic_uint_fast64_t watches;
};

struct band_etcd_budget {
    struct band_etcd *e;
    struct band_etcd_budget *next;
    char name[BAND_ETCD_NAME_MAX + 1];
    char *pfx;     /* P N/ */
    char *end;     /* P N0 */
    char *cap_key; /* P N/cap */
    char *q_pfx;   /* P N/q/ */
    char *q_end;   /* P N/q0 */
    int closed;
    struct etcd_view view;

    /* The watch, owned by the client's thread. */
    CURL *watch;
    struct curl_slist *watch_hdrs;
    char *watch_body;
    char *wbuf;
    size_t wlen;
    size_t wcap;
    int watch_rerange;     /* compacted or unreadable: read the budget again first */
    band_time watch_retry; /* no new watch before this time */
    size_t watch_ep;
    band_time watch_until; /* keep a watch until then though nothing of ours waits */
    int dying;
    int watch_gone;
};

/* How long a budget's watch stays open after the last sign that somebody else uses the
 * budget (a fast path refused, a waiting request ended, another client's change). */
#define ETCD_WATCH_LINGER (5 * BAND_SEC)
/* Keep @b's watch open for ETCD_WATCH_LINGER from now (lock held). */
void etcd_watch_linger(struct band_etcd_budget *b);

void etcd_kick(struct band_etcd *e);
/* The thread's main function (etcd_watch.c). */
void *etcd_thread_main(void *arg);
/* Stop @b's watch (the thread, or destroy on the thread). */
void etcd_watch_stop(struct band_etcd *e, struct band_etcd_budget *b);
/* Called by the thread with the lock NOT held: end every request of @lease, tell on_lost,
 * take a new lease. */
void etcd_lease_lost(struct band_etcd *e, int64_t lease);
/* Grant a new lease (lock NOT held). */
int etcd_take_lease(struct band_etcd *e);
/* Note the old lease so its grants answer ESTALE (lock held). */
int etcd_is_own_lease(const struct band_etcd *e, int64_t lease);

/* The key of request @id in budget @b, malloc'd. */
char *etcd_req_key(const struct band_etcd_budget *b, const char *id);
/* Apply a range read inside a transaction answer to @b's view (lock NOT held). */
void etcd_budget_load(struct band_etcd_budget *b, const json_t *range_resp, int64_t rev);

/* The request engine (etcd_req.c). */
enum etcd_mode { ETCD_TRY, ETCD_ASYNC };
int etcd_submit(struct band_etcd *e, uint32_t n, struct band_etcd_budget *const *b,
                const uint64_t *units, band_waiter *w, band_etcd_grant *out, enum etcd_mode mode,
                char id_out[BAND_ETCD_ID_SIZE], void (*on_free)(void *), void *free_arg);
/* Wait for an asynchronous submission (blocking calls). */
int etcd_wait_blocking(struct band_etcd *e, uint32_t n, struct band_etcd_budget *const *b,
                       const uint64_t *units, band_etcd_grant *out, band_time deadline,
                       band_cancel *cancel);
/* The thread's work on requests: ends, cancels, grants (lock NOT held). */
void etcd_process_recs(struct band_etcd *e);
void etcd_relay_cancel(band_relay *r, band_waiter *w, int reason, void *data);
/* Delete the keys of @id in @n budgets, remembering them for later when the cluster does
 * not answer. */
int etcd_delete_req(struct band_etcd *e, uint32_t n, struct band_etcd_budget *const *b,
                    const char *id, int64_t *deleted);
void etcd_retry_orphans(struct band_etcd *e);

#endif /* BAND_ETCD_INTERNAL_H */

/* SPDX-License-Identifier: MIT */
/**
 * @file band/etcd.h
 * @brief libband-etcd: weighted, strictly FIFO budgets kept by an etcd cluster, shared by
 * every process on every host, with leases and fencing tokens.
 *
 * A band_etcd is one client of one etcd cluster (3.4 or later), spoken to through its JSON
 * gateway over HTTP (libcurl; request bodies with jansson). The client holds one lease,
 * granted by the cluster and renewed in the background while the process is healthy; every
 * request the client queues lives under that lease, so a holder that dies or stalls past
 * the lease's time to live loses its units, measured by the server's clock, never by the
 * client's. A band_etcd_budget is one named budget on the cluster.
 *
 * The protocol (docs/etcd.md has it whole, with the Promela model that checks it):
 *  - a budget is the key `<prefix><name>/cap` (its capacity, decimal) and one key
 *    `<prefix><name>/q/<id>` per request, under the requester's lease, whose value holds
 *    its units and whether it is granted; requests are ordered by create revision;
 *  - a request is granted when every request ahead of it is granted and the units of all
 *    of them plus its own fit in the capacity; the requester marks it granted in a
 *    transaction that also checks that the capacity did not change, and that
 *    transaction's revision is the grant's fencing token (unique and increasing across
 *    the cluster);
 *  - when the client's view of the budget shows room, the acquisition is one transaction
 *    (created granted, guarded by "nothing in the budget changed since the view"); release
 *    is one request (the key is deleted); the client's own writes enter its view at once;
 *  - a waiting requester learns of its turn through a watch on the budget, never by
 *    polling; a budget nobody else uses has no watch;
 *  - lowering the capacity revokes nothing: what holders have above it is a debt that
 *    their releases repay before anybody else is granted.
 *
 * Every etcd request has a timeout and is tried on the next endpoint when one does not
 * answer; writes are idempotent (a request's key names it) and a write whose outcome is
 * unknown is read back, so nothing is queued, held or released twice. BAND_EUNAVAIL says
 * that no endpoint answered.
 *
 * Thread-safety: every function is MT-safe, except destroy, which must not race other calls
 * on the same object. Wakes of asynchronous acquisitions, and the lease-lost hook, run on
 * the client's own thread.
 */
#ifndef BAND_ETCD_H
#define BAND_ETCD_H

#include <stddef.h>
#include <stdint.h>

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief One client of an etcd cluster: its endpoints, its lease, its thread (opaque). */
typedef struct band_etcd band_etcd;

/** @brief One named budget on the cluster, opened through a client (opaque). */
typedef struct band_etcd_budget band_etcd_budget;

/** @brief The longest budget name, without its NUL. */
#define BAND_ETCD_NAME_MAX 63

/** @brief The size of a request id, with its NUL (band_etcd_grant.id). */
#define BAND_ETCD_ID_SIZE 40

/** @brief The most budgets one admission request can span. */
#define BAND_ETCD_REQ_MAX 8

/**
 * @brief Told that the client's lease ended: every grant and queued request of the client
 * is gone, on every budget.
 *
 * Runs on the client's thread, once per lease lost. The holder must stop using what its
 * grants protected: another process may already hold those units. Queued acquisitions end
 * with BAND_ESTALE; later acquisitions use a new lease. Must not block for long; may call
 * band_etcd_* functions other than band_etcd_destroy().
 *
 * @param e      The client.
 * @param lease  The lease that ended.
 * @param data   band_etcd_opts.data.
 */
typedef void band_etcd_lost_fn(band_etcd *e, int64_t lease, void *data);

/** @brief Options of band_etcd_create(); NULL or zero-initialised means the defaults. */
typedef struct band_etcd_opts {
    band_time lease_ttl;        /**< 0: 5 s; rounded up to whole seconds, at least 2 s */
    band_time request_timeout;  /**< 0: 1 s; one HTTP request to one endpoint */
    band_time connect_timeout;  /**< 0: 200 ms */
    const char *prefix;         /**< NULL: "/band/"; every key starts with it (copied) */
    const char *holder;         /**< NULL: "<hostname>:<pid>"; shown by band-dist (copied) */
    band_etcd_lost_fn *on_lost; /**< told when the lease ends, or NULL */
    void *data;                 /**< passed to on_lost */
} band_etcd_opts;

/** @brief Counters of one client; see band_etcd_get_stats(). */
typedef struct band_etcd_stats {
    uint64_t requests;        /**< HTTP requests sent */
    uint64_t txns;            /**< transactions among them */
    uint64_t failovers;       /**< requests tried again on another endpoint */
    uint64_t keepalives;      /**< lease renewals that succeeded */
    uint64_t leases_lost;     /**< leases that ended under the client */
    uint64_t watches;         /**< watch streams open now: one per budget that another
                                   client uses or a request of this one waits in */
    int64_t lease;            /**< the current lease's id */
    band_time lease_deadline; /**< band_now() time by which the lease ends unless renewed:
                                 the last renewal's send time plus its time to live, so it
                                 is never later than the server's expiry */
} band_etcd_stats;

/**
 * @brief Connect to the cluster at @p endpoints and take a lease.
 *
 * @p endpoints is a comma-separated list of base URLs ("http://127.0.0.1:2379,
 * http://127.0.0.1:22379"); requests go to the first that answers. The lease is granted
 * here, so a cluster that cannot be reached is an error. Starts the client's thread
 * (keepalive and watches).
 *
 * @param[out] out   Receives the client; the caller owns it.
 * @param endpoints  The endpoints, copied.
 * @param opts       Options, or NULL for the defaults; read during the call only.
 * @return 0, BAND_EINVAL (NULL @p out or @p endpoints, an empty or malformed list, a
 *         negative or out-of-range option, a prefix or holder too long), BAND_EUNAVAIL (no
 *         endpoint granted a lease in time) or BAND_ENOMEM.
 */
BAND_API int band_etcd_create(band_etcd **out, const char *endpoints, const band_etcd_opts *opts);

/**
 * @brief Revoke the lease, stop the client's thread and free @p e (NULL is a no-op).
 *
 * Revoking the lease deletes every key of the client at once, so its grants go back to
 * their budgets without waiting for the lease to expire (a cluster that cannot be reached
 * lets it expire instead).
 *
 * @param e  The client, or NULL.
 * @return 0, or BAND_EBUSY (nothing changes) while budgets opened through @p e exist.
 */
BAND_API int band_etcd_destroy(band_etcd *e);

/**
 * @brief A snapshot of @p e's counters and lease.
 *
 * @param e         The client.
 * @param[out] out  Receives the snapshot.
 * @return 0 or BAND_EINVAL (NULL argument).
 */
BAND_API int band_etcd_get_stats(const band_etcd *e, band_etcd_stats *out);

/**
 * @brief Revoke lease @p lease on the cluster: an operator's removal of a dead holder.
 *
 * Every key under it is deleted at once and its units go to the next requests in order.
 * Revoking one's own lease is how a client gives everything back at once; it is then
 * reported through on_lost.
 *
 * @param e      The client that talks to the cluster.
 * @param lease  The lease id (band_etcd_entry.lease).
 * @return 0, BAND_ENOENT (no such lease: it expired or was revoked already),
 *         BAND_EINVAL (NULL @p e, @p lease not positive) or BAND_EUNAVAIL.
 */
BAND_API int band_etcd_revoke(band_etcd *e, int64_t lease);

/**
 * @brief Open budget @p name on the cluster, creating it with @p capacity if it does not
 * exist.
 *
 * An existing budget keeps its capacity (band_etcd_budget_set_capacity() changes it).
 * With @p capacity 0 the budget must exist. Reads the budget once; the client's thread
 * watches it while a request of this client waits in it, and for a few seconds after any
 * sign that another client uses it.
 *
 * @param[out] out  Receives the handle; the caller owns it.
 * @param e         The client; it must outlive the handle.
 * @param name      The name: 1 to BAND_ETCD_NAME_MAX bytes of [A-Za-z0-9._-], copied.
 * @param capacity  The capacity when the budget is created, at most BAND_MAX_UNITS.
 * @return 0, BAND_EINVAL (NULL argument, a bad name, @p capacity above BAND_MAX_UNITS),
 *         BAND_ENOENT (@p capacity 0 and no such budget), BAND_EUNAVAIL or BAND_ENOMEM.
 */
BAND_API int band_etcd_budget_create(band_etcd_budget **out, band_etcd *e, const char *name,
                                     uint64_t capacity);

/**
 * @brief Stop the budget's watch and free @p b (NULL is a no-op).
 *
 * Grants made through @p b stay held on the cluster (under the client's lease) until they
 * are released through another handle of the same client or the lease ends.
 *
 * @param b  The handle, or NULL.
 * @return 0, or BAND_EBUSY (nothing changes) while acquisitions through @p b are queued.
 */
BAND_API int band_etcd_budget_destroy(band_etcd_budget *b);

/**
 * @brief Close this handle: its queued acquisitions end with BAND_ECLOSED (their keys are
 * deleted) and later ones fail with BAND_ECLOSED.
 *
 * The budget on the cluster and other handles are not affected. Grants can still be
 * released.
 *
 * @param b  The handle.
 * @return 0 or BAND_EINVAL (NULL @p b).
 */
BAND_API int band_etcd_budget_close(band_etcd_budget *b);

/**
 * @brief 1 once band_etcd_budget_close() was called on @p b, else 0 (0 for NULL).
 *
 * @param b  The handle, or NULL.
 * @return 1 when closed, 0 otherwise.
 */
BAND_API int band_etcd_budget_is_closed(const band_etcd_budget *b);

/**
 * @brief Set the budget's capacity on the cluster.
 *
 * Raising it grants the requests that now fit, in order. Lowering it revokes nothing: the
 * holders' units above the new capacity are a debt, and releases repay it before any
 * queued request is granted. Queued requests larger than the new capacity are not
 * refused (the capacity may rise again).
 *
 * @param b         The handle.
 * @param capacity  The new capacity, 1 to BAND_MAX_UNITS.
 * @return 0, BAND_EINVAL (NULL @p b, @p capacity 0 or above BAND_MAX_UNITS) or
 *         BAND_EUNAVAIL.
 */
BAND_API int band_etcd_budget_set_capacity(band_etcd_budget *b, uint64_t capacity);

/**
 * @brief What a holder keeps of a grant: enough to release it and to prove it.
 *
 * Plain data: copy it, send it to the process that uses the resource.
 */
typedef struct band_etcd_grant {
    uint64_t units;             /**< the units held */
    int64_t token;              /**< the fencing token: the revision of the grant */
    int64_t lease;              /**< the lease the grant lives under */
    band_time lease_deadline;   /**< band_now() time by which the lease ends unless
                                   renewed, when the grant was made */
    char id[BAND_ETCD_ID_SIZE]; /**< the request's id, its key's last part */
} band_etcd_grant;

/**
 * @brief Take @p units now, or refuse without waiting.
 *
 * Refuses when they do not fit or when requests are queued ahead (try never barges):
 * one transaction in both cases.
 *
 * @param b          The handle.
 * @param units      1 to BAND_MAX_UNITS.
 * @param[out] out   Receives the grant.
 * @return 0, BAND_EAGAIN, BAND_E2BIG (above the capacity), BAND_ECLOSED, BAND_ESTALE (the
 *         lease ended during the call), BAND_EINVAL (NULL argument, @p units 0 or above
 *         BAND_MAX_UNITS) or BAND_EUNAVAIL.
 */
BAND_API int band_etcd_budget_try_acquire(band_etcd_budget *b, uint64_t units,
                                          band_etcd_grant *out);

/**
 * @brief Take @p units, waiting in strict FIFO order until @p deadline.
 *
 * A request that times out or is cancelled deletes its key, and holds nothing.
 *
 * @param b          The handle.
 * @param units      1 to BAND_MAX_UNITS.
 * @param[out] out   Receives the grant.
 * @param deadline   Absolute band_now() time, BAND_FOREVER for none.
 * @param cancel     A cancellation token, or NULL.
 * @return 0, BAND_ETIMEDOUT, BAND_ECANCELED, BAND_ECLOSED, BAND_ESTALE (the lease ended
 *         while it waited), BAND_EINVAL or BAND_EUNAVAIL.
 */
BAND_API int band_etcd_budget_acquire(band_etcd_budget *b, uint64_t units, band_etcd_grant *out,
                                      band_time deadline, band_cancel *cancel);

/** @brief An asynchronous acquisition: band_etcd_budget_acquire_async(). */
typedef struct band_etcd_budget_acquire_op {
    band_waiter w;         /**< the operation; its wake reports the status */
    uint64_t units;        /**< the units asked for (set by the call) */
    band_etcd_grant grant; /**< the grant, once the status is 0 */
    /** @privatesection */
    void *_req; /* private: the client's record while pending */
} band_etcd_budget_acquire_op;

/**
 * @brief Take @p units now, or queue and end @p op through its waiter.
 *
 * band_waiter_cancel(&op->w) withdraws it (its key is deleted by the client's thread,
 * after the cancel returns; the units it would have had go to the next requests). A
 * deadline is the caller's (libband-uv arms one from op->w.deadline).
 *
 * @param b      The handle.
 * @param units  1 to BAND_MAX_UNITS.
 * @param op     The operation, its waiter initialised and not pending.
 * @return 0 (granted at once: op->grant holds it; no wake), BAND_PENDING (queued; the wake
 *         reports 0, BAND_ECLOSED, BAND_ESTALE or BAND_EUNAVAIL), BAND_ECLOSED, BAND_ESTALE,
 *         BAND_EINVAL (op untouched) or BAND_EUNAVAIL.
 */
BAND_API int band_etcd_budget_acquire_async(band_etcd_budget *b, uint64_t units,
                                            band_etcd_budget_acquire_op *op);

/**
 * @brief Give back a grant: one transaction that deletes its key.
 *
 * @param b  A handle of the budget, opened through the client that holds the grant.
 * @param g  The grant.
 * @return 0, BAND_ESTALE (the grant was no longer held: its lease ended or was revoked;
 *         its units went back already), BAND_EINVAL (NULL argument, a grant of another
 *         client's lease) or BAND_EUNAVAIL.
 */
BAND_API int band_etcd_budget_release(band_etcd_budget *b, const band_etcd_grant *g);

/**
 * @brief The fencing check: 0 when a grant with fencing token @p token is still held on
 * the budget, BAND_ESTALE when it is not.
 *
 * A protected resource calls it (through any client of the cluster) with the token that
 * came with a piece of work and refuses the work on BAND_ESTALE: the holder stalled past
 * its lease, lost it, or released. The answer is linearizable at the moment of the check.
 *
 * @param b      A handle of the budget.
 * @param token  The token (band_etcd_grant.token).
 * @return 0, BAND_ESTALE, BAND_EINVAL (NULL @p b, @p token not positive) or BAND_EUNAVAIL.
 */
BAND_API int band_etcd_budget_check_token(band_etcd_budget *b, int64_t token);

/** @brief The budget as the cluster holds it; see band_etcd_budget_get_stats(). */
typedef struct band_etcd_budget_stats {
    uint64_t capacity; /**< the capacity */
    uint64_t held;     /**< units of granted requests */
    uint64_t debt;     /**< held above the capacity, owed after a lowering */
    uint64_t queued;   /**< units of requests waiting */
    uint32_t holders;  /**< granted requests */
    uint32_t waiters;  /**< waiting requests */
    int64_t revision;  /**< the cluster revision the snapshot was read at */
} band_etcd_budget_stats;

/**
 * @brief Read the budget from the cluster (one linearizable range).
 *
 * @param b         The handle.
 * @param[out] out  Receives the snapshot.
 * @return 0, BAND_EINVAL (NULL argument) or BAND_EUNAVAIL.
 */
BAND_API int band_etcd_budget_get_stats(const band_etcd_budget *b, band_etcd_budget_stats *out);

/** @brief One request of a budget, as band_etcd_budget_list() reports it. */
typedef struct band_etcd_entry {
    char id[BAND_ETCD_ID_SIZE]; /**< the request's id */
    char holder[64];            /**< the requester's holder name */
    uint64_t units;             /**< units asked for or held */
    int granted;                /**< 1 when granted */
    int64_t token;              /**< fencing token when granted, else 0 */
    int64_t created;            /**< create revision: the queue order */
    int64_t lease;              /**< the lease it lives under */
} band_etcd_entry;

/**
 * @brief The budget's requests in queue order (holders first, as they are ahead).
 *
 * @param b          The handle.
 * @param[out] out   Receives up to @p max entries.
 * @param max        Room in @p out (0 only counts).
 * @param[out] n     Receives the number of requests, which may exceed @p max.
 * @return 0, BAND_EINVAL (NULL @p b or @p n, NULL @p out with @p max above 0) or
 *         BAND_EUNAVAIL.
 */
BAND_API int band_etcd_budget_list(band_etcd_budget *b, band_etcd_entry *out, size_t max,
                                   size_t *n);

/**
 * @brief A request over several budgets of one client, granted all parts or none.
 *
 * Its keys are created in one transaction (so they share one create revision and one
 * place in every queue) and granted in one transaction when every part fits. Its waiter is
 * its own operation for band_etcd_admit_async().
 */
typedef struct band_etcd_req {
    band_waiter w;                               /**< the operation, for admit_async */
    uint32_t n;                                  /**< parts in use */
    band_etcd_budget *budget[BAND_ETCD_REQ_MAX]; /**< the budget of each part */
    uint64_t units[BAND_ETCD_REQ_MAX];           /**< the units of each part */
    band_etcd_grant grant;                       /**< once granted: units is the sum,
                                                    token the one fencing token of
                                                    every part */
    /** @privatesection */
    void *_req; /* private: the client's record while pending */
} band_etcd_req;

/**
 * @brief Make @p r an empty request; its waiter gets @p wake and @p data.
 *
 * @param r     The request (may be uninitialised memory; never one that is pending).
 * @param wake  The wake for band_etcd_admit_async(), or NULL when only used blocking.
 * @param data  The owner's pointer, stored in @p r->w.data.
 * @return 0, or BAND_EINVAL for NULL @p r.
 */
BAND_API int band_etcd_req_init(band_etcd_req *r, band_wake_fn *wake, void *data);

/**
 * @brief Add @p units of budget @p b to @p r.
 *
 * @param r      The request, not pending.
 * @param b      A budget opened through the client that will admit @p r; each budget at
 *               most once per request.
 * @param units  1 to BAND_MAX_UNITS.
 * @return 0, or BAND_EINVAL (NULL, pending, more than BAND_ETCD_REQ_MAX parts, @p b named
 *         twice, @p units 0 or above BAND_MAX_UNITS).
 */
BAND_API int band_etcd_req_add(band_etcd_req *r, band_etcd_budget *b, uint64_t units);

/**
 * @brief Grant @p r now, all parts or none, or refuse without waiting.
 *
 * @param e  The client every part's budget was opened through.
 * @param r  The request.
 * @return 0 (r->grant holds it), BAND_EAGAIN, BAND_E2BIG, BAND_ECLOSED, BAND_ESTALE,
 *         BAND_EINVAL (NULL, no parts, a budget of another client) or BAND_EUNAVAIL.
 */
BAND_API int band_etcd_try_admit(band_etcd *e, band_etcd_req *r);

/**
 * @brief Grant @p r, all parts or none, waiting until @p deadline.
 *
 * @param e         The client.
 * @param r         The request.
 * @param deadline  Absolute band_now() time, BAND_FOREVER for none.
 * @param cancel    A cancellation token, or NULL.
 * @return 0, BAND_ETIMEDOUT, BAND_ECANCELED, BAND_ECLOSED, BAND_ESTALE, BAND_EINVAL or
 *         BAND_EUNAVAIL, as band_etcd_budget_acquire().
 */
BAND_API int band_etcd_admit(band_etcd *e, band_etcd_req *r, band_time deadline,
                             band_cancel *cancel);

/**
 * @brief Grant @p r now, or queue it; @p r->w ends it, as
 * band_etcd_budget_acquire_async().
 *
 * @param e  The client.
 * @param r  The request, its waiter with a wake function and not pending.
 * @return 0, BAND_PENDING, BAND_ECLOSED, BAND_ESTALE, BAND_EINVAL or BAND_EUNAVAIL, as
 *         band_etcd_budget_acquire_async().
 */
BAND_API int band_etcd_admit_async(band_etcd *e, band_etcd_req *r);

/**
 * @brief Give back every part of granted request @p r in one transaction.
 *
 * @param e  The client.
 * @param r  The granted request.
 * @return 0, BAND_ESTALE (no longer held), BAND_EINVAL (NULL, not granted) or
 *         BAND_EUNAVAIL.
 */
BAND_API int band_etcd_release_req(band_etcd *e, band_etcd_req *r);

#ifdef __cplusplus
}
#endif
#endif /* BAND_ETCD_H */

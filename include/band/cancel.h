/* SPDX-License-Identifier: MIT */
/*
 * band/cancel.h - the cancellation token: one object that every wait in band honours.
 *
 * A token is requested once and stays requested. Every blocking call in band takes an
 * optional token as its last argument, beside its deadline: a thread blocked in
 * band_sem_acquire(), band_chan_send(), band_chan_recv(), ... returns BAND_ECANCELED as
 * soon as the token is requested, holding nothing (a refused send leaves the element with
 * the caller). A requested token means "do not wait", as a past deadline does: a call that
 * can complete at once still completes; one that would have to wait returns
 * BAND_ECANCELED at once, as it would report an expired deadline.
 *
 * Tokens nest: a child is requested when its parent is (a request of the child does not
 * reach the parent), so a request for the whole program stops every stage, and one stage
 * can be stopped alone.
 *
 * band_cancel_request() is async-signal-safe on Linux: a SIGINT handler may call it, and
 * every thread blocked under the token (or a child) returns at once. Asynchronous waits
 * observe a token through hooks (band_cancel_hook_add()): the event-loop adapters use
 * them to cancel their pending operations on the loop's own thread.
 *
 * Nothing allocates per wait: a blocking call keeps its hook on its own stack.
 */
#ifndef BAND_CANCEL_H
#define BAND_CANCEL_H

#include "band/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct band_cancel band_cancel;
typedef struct band_cancel_hook band_cancel_hook;

/**
 * band_cancel_fn - called once when the token a hook is added to is requested.
 *
 * Runs on the requesting thread, which may be inside a signal handler, with the token's
 * internal spin lock held: it must be async-signal-safe (an atomic store, a futex wake,
 * a write() to an eventfd or a pipe, uv_async_send()) and must not add or remove hooks of
 * the same token. After band_cancel_hook_remove() returned, it is not running and never
 * runs again.
 */
typedef void band_cancel_fn(band_cancel_hook *h);

/**
 * struct band_cancel_hook - one observer of a token, embedded by its owner.
 *
 * Prepare it with band_cancel_hook_init() (or zero-initialise it and set @fn and @data);
 * the fields that start with '_' belong to band from band_cancel_hook_add() until
 * band_cancel_hook_remove().
 */
struct band_cancel_hook {
    band_cancel_fn *fn; /* public: called once on request */
    void *data;         /* public: the owner's pointer; band never touches it */
    /* private */
    struct band__node _node;
    band_cancel *_token;
    int _state;
};

/** Options for band_cancel_create(). Zero-initialised (or NULL) means the defaults. */
typedef struct band_cancel_opts {
    /** A parent token: the new token is requested when the parent is (default: none).
     * The parent must outlive the child (band_cancel_destroy() of the parent refuses
     * while children exist). */
    band_cancel *parent;
} band_cancel_opts;

/**
 * band_cancel_create() - allocate a token, not requested, into *@out.
 *
 * With @opts->parent set, the token is a child: requested already when the parent is,
 * and requested with it later. Returns 0, BAND_EINVAL (@out NULL) or BAND_ENOMEM (*@out
 * untouched on error). MT-safe (a parent may be requested concurrently).
 */
BAND_API int band_cancel_create(band_cancel **out, const band_cancel_opts *opts);

/**
 * band_cancel_destroy() - detach @c from its parent and free it.
 *
 * Returns 0 (also for NULL), or BAND_EBUSY when hooks are still added to @c, fired or not,
 * until band_cancel_hook_remove(): a thread is blocked under it (or has not yet left after
 * the request), an adapter still watches it, or a child still exists (nothing is freed
 * then). Not MT-safe with other uses of @c; a concurrent request of the parent is fine.
 */
BAND_API int band_cancel_destroy(band_cancel *c);

/**
 * band_cancel_request() - request cancellation of @c and of every child.
 *
 * Wakes every thread blocked under @c (their calls return BAND_ECANCELED unless their
 * operation completed first) and calls every added hook once. Idempotent: returns 0 for
 * the first request, BAND_EALREADY for later ones, BAND_EINVAL for NULL.
 *
 * Async-signal-safe on Linux: safe from a signal handler, including one that interrupted
 * a band call on the same thread (the hooks then run when that call leaves the token's
 * lock, a few instructions later). MT-safe.
 */
BAND_API int band_cancel_request(band_cancel *c);

/**
 * band_cancel_is_requested() - 1 once @c (or an ancestor) was requested, 0 before and for
 * NULL. One atomic load; async-signal-safe; MT-safe.
 */
BAND_API int band_cancel_is_requested(const band_cancel *c);

/** band_cancel_hook_init() - prepare @h (not added) to call @fn with owner pointer @data. */
BAND_API void band_cancel_hook_init(band_cancel_hook *h, band_cancel_fn *fn, void *data);

/**
 * band_cancel_hook_add() - call @h->fn once when @c is requested.
 *
 * Returns 0 when added; BAND_ECANCELED when @c was already requested (nothing added,
 * @h->fn not called: act on it yourself); BAND_EINVAL when @c, @h or @h->fn is NULL or @h
 * is attached to a token (added, or fired and not yet removed). @h must stay valid until
 * band_cancel_hook_remove(). MT-safe.
 */
BAND_API int band_cancel_hook_add(band_cancel *c, band_cancel_hook *h);

/**
 * band_cancel_hook_remove() - detach @h from its token.
 *
 * Returns 0 when @h had not fired (its fn will never run), BAND_EALREADY when it fired
 * (its fn has returned), BAND_EINVAL when @h is NULL or not added. Either way band never
 * touches @h again: the owner may free or reuse it. Must not be called from a hook's fn.
 * MT-safe.
 */
BAND_API int band_cancel_hook_remove(band_cancel_hook *h);

#ifdef __cplusplus
}
#endif
#endif /* BAND_CANCEL_H */

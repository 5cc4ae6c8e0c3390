/* SPDX-License-Identifier: MIT */
/**
 * @file band/cancel.h
 * @brief The cancellation token: one object that every wait in band honours.
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

/** @brief A cancellation token (opaque): band_cancel_create(), band_cancel_destroy(). */
typedef struct band_cancel band_cancel;
/** @brief One observer of a token (struct band_cancel_hook), embedded by its owner. */
typedef struct band_cancel_hook band_cancel_hook;

/**
 * @brief Called once when the token a hook is added to is requested.
 *
 * Runs on the requesting thread, which may be inside a signal handler, with the token's
 * internal spin lock held: it must be async-signal-safe (an atomic store, a futex wake,
 * a write() to an eventfd or a pipe, uv_async_send()) and must not add or remove hooks of
 * the same token. After band_cancel_hook_remove() returned, it is not running and never
 * runs again.
 */
typedef void band_cancel_fn(band_cancel_hook *h);

/**
 * @brief One observer of a token, embedded by its owner.
 *
 * Prepare it with band_cancel_hook_init() (or zero-initialise it and set @p fn and @p data);
 * the fields that start with '_' belong to band from band_cancel_hook_add() until
 * band_cancel_hook_remove().
 */
struct band_cancel_hook {
    band_cancel_fn *fn; /**< public: called once on request */
    void *data;         /**< public: the owner's pointer; band never touches it */
    /* private */
    struct band__node _node;
    band_cancel *_token;
    int _state;
};

/** @brief Options for band_cancel_create(). Zero-initialised (or NULL) means the defaults. */
typedef struct band_cancel_opts {
    /**
     * A parent token: the new token is requested when the parent is (default: none).
     * The parent must outlive the child (band_cancel_destroy() of the parent refuses
     * while children exist).
     */
    band_cancel *parent;
} band_cancel_opts;

/**
 * @brief Allocate a token, not requested, into *@p out.
 *
 * With @p opts->parent set, the token is a child: requested already when the parent is,
 * and requested with it later. Returns 0, BAND_EINVAL (@p out NULL) or BAND_ENOMEM (*@p out
 * untouched on error). MT-safe (a parent may be requested concurrently).
 *
 * @param[out] out  Receives the new token.
 * @param opts      Options, or NULL for the defaults.
 * @return 0, BAND_EINVAL or BAND_ENOMEM, as described above.
 */
BAND_API int band_cancel_create(band_cancel **out, const band_cancel_opts *opts);

/**
 * @brief Detach @p c from its parent and free it.
 *
 * Returns 0 (also for NULL), or BAND_EBUSY when hooks are still added to @p c, fired or not,
 * until band_cancel_hook_remove(): a thread is blocked under it (or has not yet left after
 * the request), an adapter still watches it, or a child still exists (nothing is freed
 * then). Not MT-safe with other uses of @p c; a concurrent request of the parent is fine.
 *
 * @param c  The token.
 * @return 0 (also for NULL) or BAND_EBUSY, as described above.
 */
BAND_API int band_cancel_destroy(band_cancel *c);

/**
 * @brief Request cancellation of @p c and of every child.
 *
 * Wakes every thread blocked under @p c (their calls return BAND_ECANCELED unless their
 * operation completed first) and calls every added hook once. Idempotent: returns 0 for
 * the first request, BAND_EALREADY for later ones, BAND_EINVAL for NULL.
 *
 * Async-signal-safe on Linux: safe from a signal handler, including one that interrupted
 * a band call on the same thread (the hooks then run when that call leaves the token's
 * lock, a few instructions later). MT-safe.
 *
 * @param c  The token.
 * @return 0 for the first request, BAND_EALREADY for later ones, BAND_EINVAL for NULL.
 */
BAND_API int band_cancel_request(band_cancel *c);

/**
 * @brief 1 once @p c (or an ancestor) was requested, 0 before and for NULL.
 *
 * One atomic load; async-signal-safe; MT-safe.
 *
 * @param c  The token.
 * @return 1 or 0, as described above.
 */
BAND_API int band_cancel_is_requested(const band_cancel *c);

/**
 * @brief Prepare @p h (not added) to call @p fn with owner pointer @p data.
 *
 * @param h     The hook to prepare.
 * @param fn    Called once when the token the hook is added to is requested.
 * @param data  The owner's pointer, passed to @p fn.
 */
BAND_API void band_cancel_hook_init(band_cancel_hook *h, band_cancel_fn *fn, void *data);

/**
 * @brief Call @p h->fn once when @p c is requested.
 *
 * Returns 0 when added; BAND_ECANCELED when @p c was already requested (nothing added,
 * @p h->fn not called: act on it yourself); BAND_EINVAL when @p c, @p h or @p h->fn is NULL or @p h
 * is attached to a token (added, or fired and not yet removed). @p h must stay valid until
 * band_cancel_hook_remove(). MT-safe.
 *
 * @param c  The token.
 * @param h  The hook.
 * @return 0, BAND_ECANCELED or BAND_EINVAL, as described above.
 */
BAND_API int band_cancel_hook_add(band_cancel *c, band_cancel_hook *h);

/**
 * @brief Detach @p h from its token.
 *
 * Returns 0 when @p h had not fired (its fn will never run), BAND_EALREADY when it fired
 * (its fn has returned), BAND_EINVAL when @p h is NULL or not added. Either way band never
 * touches @p h again: the owner may free or reuse it. Must not be called from a hook's fn.
 * MT-safe.
 *
 * @param h  The hook.
 * @return 0, BAND_EALREADY or BAND_EINVAL, as described above.
 */
BAND_API int band_cancel_hook_remove(band_cancel_hook *h);

#ifdef __cplusplus
}
#endif
#endif /* BAND_CANCEL_H */

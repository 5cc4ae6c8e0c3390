/* SPDX-License-Identifier: MIT */
/**
 * @file band/relay.h
 * @brief Waiters completed by code outside band: a remote store, a device, another loop.
 *
 * A band_relay lets a library or an application that is not part of band offer the same
 * asynchronous contract as band's own primitives (band/core.h): its callers submit a
 * band_waiter, and it ends exactly once, either through its wake or through
 * band_waiter_cancel() returning 0. So the operation completes on libuv through libband-uv
 * and on any loop through libband-fd with no glue. libband-etcd completes distributed
 * acquisitions this way.
 *
 * The source parks a waiter (band_relay_park()) when its operation starts, and later ends
 * it with band_relay_complete(). A cancel from any thread withdraws a parked waiter and
 * tells the source through its cancel hook, so the source can undo the remote side (delete
 * a queued request, return units) knowing that no wake will follow. Exactly one of the two
 * wins: band_relay_complete() answers BAND_EALREADY once the waiter was cancelled, and the
 * source still owns whatever it was about to deliver.
 *
 * Every band_relay_* function is MT-safe.
 */
#ifndef BAND_RELAY_H
#define BAND_RELAY_H

#include <stddef.h>

#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A set of parked waiters that the code owning it completes (opaque). */
typedef struct band_relay band_relay;

/**
 * @brief Told that band_waiter_cancel() withdrew parked waiter @p w with @p reason.
 *
 * Runs on the cancelling thread with the relay's lock held, after @p w left the relay and
 * before the cancel returns 0: @p w's status is already @p reason and no wake will be
 * called. It must not block and must not call band_relay_* on @p r; it records what has to
 * be undone and lets the source's own thread do it. It may read @p w->data.
 *
 * @param r       The relay.
 * @param w       The withdrawn waiter.
 * @param reason  BAND_ECANCELED or BAND_ETIMEDOUT.
 * @param data    The pointer given to band_relay_create().
 */
typedef void band_relay_cancel_fn(band_relay *r, band_waiter *w, int reason, void *data);

/**
 * @brief Create an empty relay.
 *
 * @param[out] out     Receives the relay; the caller owns it.
 * @param on_cancel    Called when a parked waiter is cancelled, or NULL.
 * @param data         Passed to @p on_cancel; band never touches it.
 * @return 0, BAND_EINVAL (NULL @p out; *@p out untouched) or BAND_ENOMEM.
 */
BAND_API int band_relay_create(band_relay **out, band_relay_cancel_fn *on_cancel, void *data);

/**
 * @brief Free @p r (NULL is a no-op).
 *
 * @param r  The relay, or NULL.
 * @return 0, or BAND_EBUSY (nothing changes) while waiters are parked on it: complete
 *         them first.
 */
BAND_API int band_relay_destroy(band_relay *r);

/**
 * @brief Park @p w on @p r: it is pending (BAND_PENDING) until completed or cancelled.
 *
 * The source calls it when its operation has to wait and then returns BAND_PENDING to its
 * own caller. No wake is called here.
 *
 * @param r  The relay.
 * @param w  An initialised waiter with a wake function that is not pending.
 * @return 0, or BAND_EINVAL (NULL argument, no wake function, @p w already pending;
 *         @p w untouched).
 */
BAND_API int band_relay_park(band_relay *r, band_waiter *w);

/**
 * @brief End parked waiter @p w with @p status, calling its wake on this thread.
 *
 * The wake runs after the relay's lock is released and is the relay's last access to
 * @p w. Must not be called with a lock the wake may take.
 *
 * @p w may have been cancelled, and even freed by its owner, since the source last looked:
 * the relay looks for @p w among its parked waiters by address and reads it only when it
 * is there, so a source may always complete what it believes parked and learn from
 * BAND_EALREADY that a cancel won. The search costs O(parked waiters), a step or two when
 * waiters are completed in the order they were parked.
 *
 * @param r       The relay @p w was parked on.
 * @param w       The waiter.
 * @param status  0 (granted) or a negative BAND_E* code.
 * @return 0 when @p w was ended (its wake ran), BAND_EALREADY when it is no longer parked
 *         on @p r (it was cancelled, or already completed): what it would have received
 *         stays with the caller; BAND_EINVAL for NULL or a positive @p status.
 */
BAND_API int band_relay_complete(band_relay *r, band_waiter *w, int status);

/**
 * @brief The number of waiters parked on @p r.
 *
 * @param r  The relay, or NULL (0).
 * @return The number of parked waiters.
 */
BAND_API size_t band_relay_count(const band_relay *r);

#ifdef __cplusplus
}
#endif
#endif /* BAND_RELAY_H */

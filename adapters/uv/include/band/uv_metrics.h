/* SPDX-License-Identifier: MIT */
/**
 * @file band/uv_metrics.h
 * libband-uv: a small HTTP endpoint that serves a band_metrics registry at /metrics.
 *
 * band_uv_metrics_serve() listens on a TCP address on a libuv loop. Each connection may
 * send one HTTP/1.x request: GET (or HEAD) /metrics, with or without a query string, is
 * answered 200 with Content-Type `text/plain; version=0.0.4; charset=utf-8` (Prometheus text
 * exposition format 0.0.4) and the registry's band_metrics_write() text; any other request
 * is answered 404. Every answer carries Content-Length and `Connection: close`; once it
 * was sent the endpoint shuts its side down and closes when the peer does (after 2 s at
 * most). Up to BAND_UV_METRICS_MAX_CLIENTS connections are
 * served at once (more are answered 503 and closed); a request head larger than
 * BAND_UV_METRICS_MAX_REQUEST bytes is answered 431; a connection that has not sent a
 * whole request head within BAND_UV_METRICS_TIMEOUT_MS is closed.
 *
 * Threads: every band_uv_metrics_* function, and every call on the registry while it is
 * served (registration, band_metrics_write()), must run on the loop's thread, because the
 * endpoint renders the registry there. The primitives the registry lists stay MT-safe.
 *
 * Life: band_uv_metrics_serve(), band_uv_metrics_close() (asynchronous, like uv_close(): it
 * ends with its callback once every connection and the listener are closed), then
 * band_uv_metrics_destroy().
 */
#ifndef BAND_UV_METRICS_H
#define BAND_UV_METRICS_H

#include "band/metrics.h"
#include "band/uv.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The most connections served at once; more are answered 503 and closed. */
#define BAND_UV_METRICS_MAX_CLIENTS 64
/** The largest request head (request line and headers) read, in bytes. */
#define BAND_UV_METRICS_MAX_REQUEST 8192
/** How long a connection may take to send its request head, in milliseconds. */
#define BAND_UV_METRICS_TIMEOUT_MS 10000

/** A /metrics endpoint on one uv loop. */
typedef struct band_uv_metrics band_uv_metrics;

/**
 * @brief Serve registry @p m at http://@p addr:@p port/metrics on @p loop.
 *
 * Binds and listens at once (so a port in use fails here); connections are accepted and
 * answered as the loop runs. @p port 0 picks a free port: band_uv_metrics_port() says
 * which. The registry and the loop are the caller's and must outlive the endpoint. Must be
 * called on the loop's thread.
 *
 * @param[out] out  The endpoint, untouched on failure.
 * @param loop      The libuv loop to serve on.
 * @param addr      An IPv4 or IPv6 address in numeric form ("127.0.0.1", "::1",
 *                  "0.0.0.0").
 * @param port      The TCP port, 0 to 65535 (0: any free port).
 * @param m         The registry to render.
 * @return 0; BAND_EINVAL when @p out, @p loop, @p addr or @p m is NULL, @p addr is not a
 *         numeric address, @p port is out of range, or the address cannot be bound or
 *         listened on (in use, not local, not permitted); BAND_ENOMEM.
 */
BAND_UV_API int band_uv_metrics_serve(band_uv_metrics **out, uv_loop_t *loop, const char *addr,
                                      int port, const band_metrics *m);

/**
 * @brief The TCP port the endpoint listens on (the one chosen when it was asked for 0).
 *
 * @param s  The endpoint.
 * @return The port, 1 to 65535; BAND_EINVAL when @p s is NULL or closed.
 */
BAND_UV_API int band_uv_metrics_port(const band_uv_metrics *s);

/**
 * @brief Stop serving: close the listener and every connection, answered or not.
 *
 * Asynchronous: @p on_closed (may be NULL) runs once, on the loop thread from inside
 * uv_run(), when every handle of the endpoint is closed; only then may
 * band_uv_metrics_destroy() free it. Closing twice returns BAND_ECLOSED and changes
 * nothing.
 *
 * @param s          The endpoint.
 * @param on_closed  Called once everything is closed, or NULL.
 * @param data       Passed to @p on_closed.
 * @return 0, BAND_EINVAL (NULL @p s) or BAND_ECLOSED (already closing).
 */
BAND_UV_API int band_uv_metrics_close(band_uv_metrics *s, void (*on_closed)(void *data),
                                      void *data);

/**
 * @brief Free the endpoint once its close has completed.
 *
 * @param s  The endpoint, or NULL (nothing is done).
 * @return 0; BAND_EBUSY (nothing freed) before band_uv_metrics_close() has completed.
 */
BAND_UV_API int band_uv_metrics_destroy(band_uv_metrics *s);

#ifdef __cplusplus
}
#endif
#endif /* BAND_UV_METRICS_H */

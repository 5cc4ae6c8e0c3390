/* SPDX-License-Identifier: MIT */
/*
 * curl_uv.h - libcurl's multi interface driven by a libuv loop.
 *
 * One curl multi handle whose sockets are watched with uv_poll_t and whose timeout is a
 * uv_timer_t (CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION). Transfers are easy handles
 * added with curl_uv_add(); each finished transfer is removed from the multi handle and
 * reported once through its done function, on the loop thread. Everything here runs on the
 * loop's thread; nothing is thread-safe.
 */
#ifndef BAND_TOOLS_CURL_UV_H
#define BAND_TOOLS_CURL_UV_H

#include <curl/curl.h>
#include <uv.h>

struct curl_uv;
struct curl_uv_xfer;

/* Called once when a transfer ends by itself (completed or failed), after it was removed
 * from the multi handle. The easy handle is the owner's again: clean it up or reuse it. */
typedef void curl_uv_done_fn(struct curl_uv_xfer *x, CURLcode result);

/* A transfer, embedded by its owner. */
struct curl_uv_xfer {
    CURL *easy;            /* set by the owner before curl_uv_add() */
    curl_uv_done_fn *done; /* set by the owner before curl_uv_add() */
};

/**
 * curl_uv_create() - a multi handle driven by @loop. Returns 0, or -1 after printing why.
 * curl_global_init() must have been called.
 */
int curl_uv_create(uv_loop_t *loop, struct curl_uv **out);

/** curl_uv_add() - start transfer @x. Returns 0 (its done function will be called once,
 *  unless it is removed first) or -1 (not added; nothing will be called). */
int curl_uv_add(struct curl_uv *cu, struct curl_uv_xfer *x);

/** curl_uv_remove() - stop transfer @x before it ended; its done function is not called.
 *  Must not be called from inside a curl callback. */
void curl_uv_remove(struct curl_uv *cu, struct curl_uv_xfer *x);

/** curl_uv_multi() - the multi handle, for curl_multi_setopt() (connection cache size, ...). */
CURLM *curl_uv_multi(struct curl_uv *cu);

/**
 * curl_uv_close() - clean up the multi handle (remove every transfer first) and close the
 * uv handles; @on_closed(@data) runs on the loop once they are all closed and @cu is freed.
 * May be called from a done function.
 */
void curl_uv_close(struct curl_uv *cu, void (*on_closed)(void *data), void *data);

#endif /* BAND_TOOLS_CURL_UV_H */

/* SPDX-License-Identifier: MIT */
/*
 * curl_uv.c - libcurl's multi_socket API on a libuv loop (see curl_uv.h).
 *
 * curl tells us, per socket, which events it wants (socket_cb) and when it next needs to
 * be called without any event (timer_cb); libuv tells us when a socket is ready (on_poll)
 * or the time has come (on_timeout), and we hand that to curl_multi_socket_action(). After
 * each call we read curl's finished transfers and report them. Neither callback of curl
 * calls back into curl: the rule of the multi_socket API.
 *
 * Closing is deferred while a uv callback of ours is on the stack ("busy"), so a done
 * function may close the glue without curl_multi_cleanup() running inside
 * curl_multi_info_read()'s loop.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "curl_uv.h"

#include <stdio.h>
#include <stdlib.h>

/* One socket curl asked us to watch. */
struct curl_uv_sock {
    uv_poll_t poll; /* poll.data points back here */
    curl_socket_t fd;
    struct curl_uv *cu;
    struct curl_uv_sock *prev, *next; /* cu->socks: every watcher not yet closing */
};

struct curl_uv {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;           /* curl's timeout */
    struct curl_uv_sock *socks; /* open watchers */
    unsigned open_handles;      /* uv handles not yet closed: the timer and the watchers */
    int busy;                   /* > 0 while on_poll/on_timeout run */
    int closing;
    void (*on_closed)(void *data);
    void *closed_data;
};

static void handle_closed(struct curl_uv *cu)
{
    if (--cu->open_handles == 0) {
        void (*cb)(void *) = cu->on_closed;
        void *data = cu->closed_data;
        free(cu);
        if (cb != NULL)
            cb(data);
    }
}

static void on_sock_closed(uv_handle_t *h)
{
    struct curl_uv_sock *cs = h->data;
    struct curl_uv *cu = cs->cu;
    free(cs);
    handle_closed(cu);
}

static void on_timer_closed(uv_handle_t *h)
{
    handle_closed(h->data);
}

/* Stops watching @cs and closes its poll handle (freed once libuv is done with it). */
static void sock_close(struct curl_uv *cu, struct curl_uv_sock *cs)
{
    if (cs->prev != NULL)
        cs->prev->next = cs->next;
    else
        cu->socks = cs->next;
    if (cs->next != NULL)
        cs->next->prev = cs->prev;
    uv_poll_stop(&cs->poll);
    uv_close((uv_handle_t *)&cs->poll, on_sock_closed);
}

/* Reports every finished transfer: removes it from the multi handle, then calls done. */
static void drain(struct curl_uv *cu)
{
    CURLMsg *m;
    int left;
    while (cu->multi != NULL && (m = curl_multi_info_read(cu->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *easy = m->easy_handle;
        CURLcode result = m->data.result;
        char *priv = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
        struct curl_uv_xfer *x = (void *)priv;
        curl_multi_remove_handle(cu->multi, easy);
        x->done(x, result);
    }
}

static void finish_close(struct curl_uv *cu)
{
    if (cu->multi != NULL) {
        curl_multi_cleanup(cu->multi); /* may report sockets to remove: socket_cb */
        cu->multi = NULL;
    }
    while (cu->socks != NULL)
        sock_close(cu, cu->socks);
    uv_timer_stop(&cu->timer);
    uv_close((uv_handle_t *)&cu->timer, on_timer_closed);
}

/* Leaves a uv callback: runs a close that was asked for while we were busy. */
static void unbusy(struct curl_uv *cu)
{
    if (--cu->busy == 0 && cu->closing == 1) {
        cu->closing = 2;
        finish_close(cu);
    }
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct curl_uv_sock *cs = h->data;
    struct curl_uv *cu = cs->cu;
    curl_socket_t fd = cs->fd; /* socket_cb may free cs during socket_action */
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    int running;
    cu->busy++;
    if (cu->multi != NULL) {
        curl_multi_socket_action(cu->multi, fd, flags, &running);
        drain(cu);
    }
    unbusy(cu);
}

static void on_timeout(uv_timer_t *t)
{
    struct curl_uv *cu = t->data;
    int running;
    cu->busy++;
    if (cu->multi != NULL) {
        curl_multi_socket_action(cu->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        drain(cu);
    }
    unbusy(cu);
}

/* CURLMOPT_SOCKETFUNCTION: watch @s for @what, or stop watching it. */
static int socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)easy;
    struct curl_uv *cu = userp;
    struct curl_uv_sock *cs = socketp;

    if (what == CURL_POLL_REMOVE) {
        if (cs != NULL)
            sock_close(cu, cs); /* curl forgets its pointer to cs itself */
        return 0;
    }
    if (cs == NULL) {
        cs = calloc(1, sizeof(*cs));
        if (cs == NULL)
            return -1;
        if (uv_poll_init_socket(cu->loop, &cs->poll, s) != 0) {
            free(cs);
            return -1;
        }
        cs->poll.data = cs;
        cs->fd = s;
        cs->cu = cu;
        cs->next = cu->socks;
        if (cu->socks != NULL)
            cu->socks->prev = cs;
        cu->socks = cs;
        cu->open_handles++;
        curl_multi_assign(cu->multi, s, cs);
    }
    int events = 0;
    if (what & CURL_POLL_IN)
        events |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        events |= UV_WRITABLE;
    return uv_poll_start(&cs->poll, events, on_poll) == 0 ? 0 : -1;
}

/* CURLMOPT_TIMERFUNCTION: call socket_action(TIMEOUT) in @timeout_ms (-1: never). Never
 * calls curl from here; a 0 timeout runs on the next loop iteration. */
static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    struct curl_uv *cu = userp;
    if (timeout_ms < 0)
        uv_timer_stop(&cu->timer);
    else
        uv_timer_start(&cu->timer, on_timeout, (uint64_t)timeout_ms, 0);
    return 0;
}

int curl_uv_create(uv_loop_t *loop, struct curl_uv **out)
{
    struct curl_uv *cu = calloc(1, sizeof(*cu));
    if (cu == NULL) {
        fprintf(stderr, "curl_uv: out of memory\n");
        return -1;
    }
    cu->loop = loop;
    cu->multi = curl_multi_init();
    if (cu->multi == NULL) {
        fprintf(stderr, "curl_uv: curl_multi_init failed\n");
        free(cu);
        return -1;
    }
    uv_timer_init(loop, &cu->timer);
    cu->timer.data = cu;
    cu->open_handles = 1;
    curl_multi_setopt(cu->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(cu->multi, CURLMOPT_SOCKETDATA, cu);
    curl_multi_setopt(cu->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(cu->multi, CURLMOPT_TIMERDATA, cu);
    /* No limit of curl's own on connections: the band semaphore is the bound. Keep enough
     * idle connections to reuse one per transfer slot. */
    curl_multi_setopt(cu->multi, CURLMOPT_MAXCONNECTS, 32L);
    *out = cu;
    return 0;
}

int curl_uv_add(struct curl_uv *cu, struct curl_uv_xfer *x)
{
    if (cu->closing || x->easy == NULL || x->done == NULL)
        return -1;
    curl_easy_setopt(x->easy, CURLOPT_PRIVATE, (void *)x);
    return curl_multi_add_handle(cu->multi, x->easy) == CURLM_OK ? 0 : -1;
}

void curl_uv_remove(struct curl_uv *cu, struct curl_uv_xfer *x)
{
    if (cu->multi != NULL)
        curl_multi_remove_handle(cu->multi, x->easy);
}

void curl_uv_close(struct curl_uv *cu, void (*on_closed)(void *data), void *data)
{
    if (cu->closing)
        return;
    cu->on_closed = on_closed;
    cu->closed_data = data;
    cu->closing = 1;
    if (cu->busy == 0) {
        cu->closing = 2;
        finish_close(cu);
    }
}

CURLM *curl_uv_multi(struct curl_uv *cu)
{
    return cu->multi;
}

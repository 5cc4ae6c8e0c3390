/* SPDX-License-Identifier: MIT */
/*
 * uv_metrics.c - the /metrics endpoint (band/uv_metrics.h).
 *
 * One listener and a list of connections. A connection reads into its own fixed buffer
 * until the request head ends (a blank line), then stops reading, renders its answer into
 * one allocation, writes it, shuts the write side down, reads and drops what the peer
 * still sends until it closes (so the answer is never lost to a reset), and closes. Each
 * connection has a timer: the request head's deadline, then the linger's. Every handle close is
 * counted: a connection is freed when its two handles are closed, and the endpoint's close
 * completes when the listener and every connection are.
 */
#include <stdlib.h>
#include <string.h>

#include "band/uv_metrics.h"

struct client {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_write_t wr;
    uv_shutdown_t sd;
    band_uv_metrics *srv;
    struct client *prev, *next;
    char *resp;    /* the answer being written */
    int open;      /* handles not yet closed (tcp, timer) */
    int closing;   /* close started */
    int answering; /* the request head was read: no more reading */
    int draining;  /* answered and shut down: reading until the peer closes */
    size_t len;
    char req[BAND_UV_METRICS_MAX_REQUEST];
};

struct band_uv_metrics {
    uv_loop_t *loop;
    uv_tcp_t listener;
    const band_metrics *m;
    struct client *clients;
    size_t nclients;
    int closing, listener_open, closed;
    void (*on_closed)(void *data);
    void *data;
};

static void srv_maybe_closed(band_uv_metrics *s)
{
    if (s->closing && !s->listener_open && s->clients == NULL && !s->closed) {
        s->closed = 1;
        if (s->on_closed != NULL)
            s->on_closed(s->data);
    }
}

static void client_handle_closed(uv_handle_t *h)
{
    struct client *c = h->data;
    if (--c->open > 0)
        return;
    band_uv_metrics *s = c->srv;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        s->clients = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    s->nclients--;
    free(c->resp);
    free(c);
    srv_maybe_closed(s);
}

static void client_close(struct client *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    uv_close((uv_handle_t *)&c->tcp, client_handle_closed);
    uv_close((uv_handle_t *)&c->timer, client_handle_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);
static void on_timeout(uv_timer_t *t);

/* The answer is out and the write side shut down. Closing now, with bytes of the peer
 * still unread (a request body, or the rest of an oversized head), would reset the
 * connection and could discard the answer before the peer read it: read and drop what
 * comes until the peer closes, for at most BAND_UV_METRICS_LINGER_MS. */
#define BAND_UV_METRICS_LINGER_MS 2000

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct client *c = req->data;
    if (c->closing)
        return;
    c->draining = 1;
    if (status != 0 || uv_timer_start(&c->timer, on_timeout, BAND_UV_METRICS_LINGER_MS, 0) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
        client_close(c);
}

static void on_written(uv_write_t *req, int status)
{
    struct client *c = req->data;
    if (status != 0 || c->closing || uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
        client_close(c);
}

/* Answer @status with @body (@blen bytes; HEAD: headers only). */
static void respond(struct client *c, const char *status, const char *type, const char *body,
                    size_t blen, int head_only)
{
    char hdr[256];
    int n = snprintf(hdr, sizeof(hdr),
                     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     status, type, blen);
    size_t hlen = n > 0 ? (size_t)n : 0;
    size_t total = hlen + (head_only ? 0 : blen);
    c->resp = malloc(total > 0 ? total : 1);
    if (c->resp == NULL) {
        client_close(c);
        return;
    }
    memcpy(c->resp, hdr, hlen);
    if (!head_only && blen > 0)
        memcpy(c->resp + hlen, body, blen);
    uv_buf_t buf = uv_buf_init(c->resp, (unsigned)total);
    c->wr.data = c;
    c->sd.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &buf, 1, on_written) != 0)
        client_close(c);
}

static const char text_type[] = "text/plain; charset=utf-8";

static void respond_text(struct client *c, const char *status, const char *body, int head_only)
{
    respond(c, status, text_type, body, strlen(body), head_only);
}

/* The request head is in c->req: answer it. */
static void answer(struct client *c)
{
    c->answering = 1;
    (void)uv_read_stop((uv_stream_t *)&c->tcp);
    (void)uv_timer_stop(&c->timer);
    const char *r = c->req;
    size_t mlen = strcspn(r, " \r\n");
    int get = mlen == 3 && memcmp(r, "GET", 3) == 0;
    int head = mlen == 4 && memcmp(r, "HEAD", 4) == 0;
    const char *target = r[mlen] == ' ' ? r + mlen + 1 : "";
    size_t tlen = strcspn(target, " \r\n");
    size_t plen = strcspn(target, "? \r\n");
    const char *rest = target + tlen;
    int http = strncmp(rest, " HTTP/1.", 8) == 0;
    if (!http) {
        respond_text(c, "400 Bad Request", "bad request\n", 0);
        return;
    }
    if (!(get || head) || plen != sizeof("/metrics") - 1 || memcmp(target, "/metrics", plen) != 0) {
        respond_text(c, "404 Not Found", "not found\n", head);
        return;
    }
    size_t len = 0;
    char *text;
    int rc = band_metrics_render(c->srv->m, &text, &len);
    if (rc != 0) {
        respond_text(c, "500 Internal Server Error",
                     rc == BAND_ENOMEM ? "out of memory\n" : "counters kept changing size\n", head);
        return;
    }
    respond(c, "200 OK", "text/plain; version=0.0.4; charset=utf-8", text, len, head);
    free(text);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    struct client *c = h->data;
    if (c->draining) { /* what comes now is dropped */
        *buf = uv_buf_init(c->req, (unsigned)sizeof(c->req));
        return;
    }
    size_t room = sizeof(c->req) - 1 - c->len; /* keep one byte for the NUL */
    *buf = uv_buf_init(c->req + c->len, (unsigned)room);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    struct client *c = st->data;
    if (c->closing)
        return;
    if (c->draining) {
        if (nread < 0) /* the peer closed (or failed): done */
            client_close(c);
        return;
    }
    if (c->answering)
        return;
    if (nread < 0) { /* the peer went away, or an error: nothing to answer */
        client_close(c);
        return;
    }
    c->len += (size_t)nread;
    c->req[c->len] = '\0';
    if (strstr(c->req, "\r\n\r\n") != NULL || strstr(c->req, "\n\n") != NULL) {
        answer(c);
    } else if (c->len == sizeof(c->req) - 1) {
        c->answering = 1;
        (void)uv_read_stop(st);
        (void)uv_timer_stop(&c->timer);
        respond_text(c, "431 Request Header Fields Too Large", "request too large\n", 0);
    }
}

static void on_timeout(uv_timer_t *t)
{
    client_close(t->data);
}

static void on_connection(uv_stream_t *server, int status)
{
    band_uv_metrics *s = server->data;
    if (status != 0 || s->closing)
        return;
    struct client *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return; /* the connection stays in the backlog until memory allows */
    c->srv = s;
    if (uv_tcp_init(s->loop, &c->tcp) != 0) {
        free(c);
        return;
    }
    c->tcp.data = c;
    c->open = 1;
    c->next = s->clients;
    if (s->clients != NULL)
        s->clients->prev = c;
    s->clients = c;
    s->nclients++;
    if (uv_timer_init(s->loop, &c->timer) != 0) {
        c->closing = 1;
        uv_close((uv_handle_t *)&c->tcp, client_handle_closed);
        return;
    }
    c->timer.data = c;
    c->open = 2;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        client_close(c);
        return;
    }
    if (s->nclients > BAND_UV_METRICS_MAX_CLIENTS) {
        c->answering = 1;
        respond_text(c, "503 Service Unavailable", "too many connections\n", 0);
        return;
    }
    if (uv_timer_start(&c->timer, on_timeout, BAND_UV_METRICS_TIMEOUT_MS, 0) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
        client_close(c);
}

static void on_listener_closed(uv_handle_t *h)
{
    band_uv_metrics *s = h->data;
    s->listener_open = 0;
    srv_maybe_closed(s);
}

static void free_unlistened(uv_handle_t *h)
{
    free(h->data);
}

int band_uv_metrics_serve(band_uv_metrics **out, uv_loop_t *loop, const char *addr, int port,
                          const band_metrics *m)
{
    if (out == NULL || loop == NULL || addr == NULL || m == NULL || port < 0 || port > 65535)
        return BAND_EINVAL;
    struct sockaddr_storage sa;
    memset(&sa, 0, sizeof(sa));
    if (uv_ip4_addr(addr, port, (struct sockaddr_in *)&sa) != 0 &&
        uv_ip6_addr(addr, port, (struct sockaddr_in6 *)&sa) != 0)
        return BAND_EINVAL;
    band_uv_metrics *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return BAND_ENOMEM;
    s->loop = loop;
    s->m = m;
    if (uv_tcp_init(loop, &s->listener) != 0) {
        free(s);
        return BAND_ENOMEM;
    }
    s->listener.data = s;
    if (uv_tcp_bind(&s->listener, (const struct sockaddr *)&sa, 0) != 0 ||
        uv_listen((uv_stream_t *)&s->listener, 128, on_connection) != 0) {
        /* The handle is the loop's until its close callback: free the endpoint there. */
        uv_close((uv_handle_t *)&s->listener, free_unlistened);
        return BAND_EINVAL;
    }
    s->listener_open = 1;
    *out = s;
    return 0;
}

int band_uv_metrics_port(const band_uv_metrics *s)
{
    if (s == NULL || s->closing)
        return BAND_EINVAL;
    struct sockaddr_storage sa;
    int len = (int)sizeof(sa);
    if (uv_tcp_getsockname(&s->listener, (struct sockaddr *)&sa, &len) != 0)
        return BAND_EINVAL;
    if (sa.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&sa)->sin_port);
    if (sa.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
    return BAND_EINVAL;
}

int band_uv_metrics_close(band_uv_metrics *s, void (*on_closed)(void *data), void *data)
{
    if (s == NULL)
        return BAND_EINVAL;
    if (s->closing)
        return BAND_ECLOSED;
    s->closing = 1;
    s->on_closed = on_closed;
    s->data = data;
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
    for (struct client *c = s->clients; c != NULL; c = c->next)
        client_close(c);
    return 0;
}

int band_uv_metrics_destroy(band_uv_metrics *s)
{
    if (s == NULL)
        return 0;
    if (!s->closed)
        return BAND_EBUSY;
    free(s);
    return 0;
}

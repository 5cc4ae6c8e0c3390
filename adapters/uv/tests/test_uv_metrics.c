/* SPDX-License-Identifier: MIT */
/*
 * test_uv_metrics.c - the /metrics endpoint's calls (band/uv_metrics.h): their errors, its
 * life (serve, close, destroy), and its answers to a plain socket client on another thread.
 */
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "band/uv_metrics.h"

static int closed_calls;

static void on_closed(void *data)
{
    (void)data;
    closed_calls++;
}

static void test_args_and_life(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    band_metrics *m = NULL;
    assert_int_equal(band_metrics_create(&m, 1), 0);
    band_uv_metrics *s = NULL, *t = NULL;
    assert_int_equal(band_uv_metrics_serve(NULL, &loop, "127.0.0.1", 0, m), BAND_EINVAL);
    assert_int_equal(band_uv_metrics_serve(&s, NULL, "127.0.0.1", 0, m), BAND_EINVAL);
    assert_int_equal(band_uv_metrics_serve(&s, &loop, NULL, 0, m), BAND_EINVAL);
    assert_int_equal(band_uv_metrics_serve(&s, &loop, "127.0.0.1", 0, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_metrics_serve(&s, &loop, "localhost", 0, m), BAND_EINVAL);
    assert_int_equal(band_uv_metrics_serve(&s, &loop, "127.0.0.1", -1, m), BAND_EINVAL);
    assert_int_equal(band_uv_metrics_serve(&s, &loop, "127.0.0.1", 65536, m), BAND_EINVAL);
    assert_null(s);
    assert_int_equal(band_uv_metrics_port(NULL), BAND_EINVAL);
    assert_int_equal(band_uv_metrics_close(NULL, NULL, NULL), BAND_EINVAL);
    assert_int_equal(band_uv_metrics_destroy(NULL), 0);

    assert_int_equal(band_uv_metrics_serve(&s, &loop, "127.0.0.1", 0, m), 0);
    int port = band_uv_metrics_port(s);
    assert_true(port > 0 && port <= 65535);
    /* The port is taken: the second endpoint fails, leaving *out untouched. */
    assert_int_equal(band_uv_metrics_serve(&t, &loop, "127.0.0.1", port, m), BAND_EINVAL);
    assert_null(t);

    assert_int_equal(band_uv_metrics_destroy(s), BAND_EBUSY); /* not closed */
    closed_calls = 0;
    assert_int_equal(band_uv_metrics_close(s, on_closed, NULL), 0);
    assert_int_equal(band_uv_metrics_close(s, on_closed, NULL), BAND_ECLOSED);
    assert_int_equal(band_uv_metrics_port(s), BAND_EINVAL);
    assert_int_equal(band_uv_metrics_destroy(s), BAND_EBUSY); /* the close has not completed */
    assert_int_equal(closed_calls, 0);                        /* never inside a call */
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(closed_calls, 1);
    assert_int_equal(band_uv_metrics_destroy(s), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(band_metrics_destroy(m), 0);
}

/* A client on another thread: what one request got back, whole. */
struct client {
    int port;
    const char *request;
    char reply[16384];
    size_t len;
};

static void fetch(struct client *c)
{
    c->len = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)c->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        write(fd, c->request, strlen(c->request)) == (ssize_t)strlen(c->request)) {
        ssize_t n;
        while (c->len < sizeof(c->reply) - 1 &&
               (n = read(fd, c->reply + c->len, sizeof(c->reply) - 1 - c->len)) > 0)
            c->len += (size_t)n;
    }
    c->reply[c->len] = '\0';
    close(fd);
}

struct run {
    struct client get, head, missing, bad;
    uv_async_t done;
    band_uv_metrics *s;
};

static void on_done(uv_async_t *a)
{
    struct run *r = a->data;
    assert_int_equal(band_uv_metrics_close(r->s, NULL, NULL), 0);
    uv_close((uv_handle_t *)a, NULL);
}

static void *client_thread(void *arg)
{
    struct run *r = arg;
    fetch(&r->get);
    fetch(&r->head);
    fetch(&r->missing);
    fetch(&r->bad);
    (void)uv_async_send(&r->done);
    return NULL;
}

static void test_answers(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    band_sem *sem = NULL;
    assert_int_equal(band_sem_create(&sem, 3, NULL), 0);
    band_metrics *m = NULL;
    assert_int_equal(band_metrics_create(&m, 1), 0);
    assert_int_equal(band_metrics_add_sem(m, "s", sem, NULL), 0);
    struct run *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    assert_int_equal(band_uv_metrics_serve(&r->s, &loop, "127.0.0.1", 0, m), 0);
    int port = band_uv_metrics_port(r->s);
    r->get = (struct client){.port = port, .request = "GET /metrics HTTP/1.0\r\n\r\n"};
    r->head = (struct client){.port = port, .request = "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"};
    r->missing = (struct client){.port = port, .request = "GET /metricsx HTTP/1.1\r\n\r\n"};
    r->bad = (struct client){.port = port, .request = "GET /metrics\r\n\r\n"}; /* no version */
    assert_int_equal(uv_async_init(&loop, &r->done, on_done), 0);
    r->done.data = r;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, client_thread, r), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(pthread_join(t, NULL), 0);

    size_t need = 0;
    assert_int_equal(band_metrics_write(m, NULL, 0, &need), BAND_E2BIG);
    char head[256];
    (void)snprintf(head, sizeof(head),
                   "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                   need);
    assert_int_equal(r->get.len, strlen(head) + need);
    assert_memory_equal(r->get.reply, head, strlen(head));
    assert_non_null(strstr(r->get.reply, "\nband_sem_capacity{name=\"s\"} 3\n"));
    assert_string_equal(r->head.reply, head); /* headers only */
    assert_string_equal(r->missing.reply,
                        "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Content-Length: 10\r\nConnection: close\r\n\r\nnot found\n");
    assert_non_null(strstr(r->bad.reply, "HTTP/1.1 400 Bad Request\r\n"));

    assert_int_equal(band_uv_metrics_destroy(r->s), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    free(r);
    assert_int_equal(band_metrics_destroy(m), 0);
    assert_int_equal(band_sem_destroy(sem), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args_and_life),
        cmocka_unit_test(test_answers),
    };
    return cmocka_run_group_tests_name("test_uv_metrics", tests, NULL, NULL);
}

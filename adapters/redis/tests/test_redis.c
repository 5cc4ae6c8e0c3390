/* SPDX-License-Identifier: MIT */
/*
 * test_redis.c - libband-redis against a real redis-server.
 *
 * Each test starts its own redis-server on 127.0.0.1 on a free port, without persistence
 * (--save "" --appendonly no), and stops it at the end. Covered: decisions and exact
 * retry-afters through band_keyrate_try_acquire(), available and forget, two processes
 * sharing one key's rate, the script being flushed (NOSCRIPT, reloaded), and the server
 * going away and coming back mid-run, answered per fail option and never with a hang.
 */
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "band/keyrate.h"
#include "band/redis.h"

#define MS (BAND_SEC / 1000)

struct server {
    pid_t pid;
    int port;
};

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0)
        return -1;
    close(s);
    return ntohs(a.sin_port);
}

static bool server_up(void *arg)
{
    struct server *sv = arg;
    struct timeval tv = {0, 100000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", sv->port, tv);
    bool up = false;
    if (c != NULL && c->err == 0) {
        redisReply *r = redisCommand(c, "PING");
        up = r != NULL && r->type == REDIS_REPLY_STATUS;
        if (r != NULL)
            freeReplyObject(r);
    }
    if (c != NULL)
        redisFree(c);
    return up;
}

static void start_server(struct server *sv)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", sv->port);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (freopen("/dev/null", "w", stdout) == NULL)
            _exit(126);
        execl(BAND_REDIS_SERVER, "redis-server", "--port", port, "--bind", "127.0.0.1", "--save",
              "", "--appendonly", "no", "--daemonize", "no", (char *)NULL);
        _exit(127);
    }
    sv->pid = pid;
    assert_true(test_wait_until(server_up, sv, 5 * BAND_SEC));
}

static void stop_server(struct server *sv)
{
    if (sv->pid <= 0)
        return;
    kill(sv->pid, SIGKILL);
    waitpid(sv->pid, NULL, 0);
    sv->pid = 0;
}

static void sleep_ns(band_time ns)
{
    struct timespec ts = {(time_t)(ns / BAND_SEC), (long)(ns % BAND_SEC)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static band_keyrate *table(band_redis *r, uint64_t tokens, band_time period, uint64_t burst,
                           int fail)
{
    band_keyrate_backend be;
    assert_int_equal(band_redis_backend(r, &be), 0);
    band_keyrate_opts o;
    memset(&o, 0, sizeof(o));
    o.backend = &be;
    o.fail = fail;
    band_keyrate *k = NULL;
    assert_int_equal(band_keyrate_create(&k, tokens, period, burst, &o), 0);
    return k;
}

static int take(band_keyrate *k, const char *key, uint64_t n, band_time *ra)
{
    return band_keyrate_try_acquire(k, key, strlen(key), n, ra);
}

static void test_decisions(void **state)
{
    (void)state;
    struct server sv = {0, free_port()};
    start_server(&sv);
    band_redis *r = NULL;
    assert_int_equal(band_redis_create(&r, "127.0.0.1", sv.port, NULL), 0);
    band_keyrate *k = table(r, 10, BAND_SEC, 3, BAND_KEYRATE_FAIL_CLOSED);
    band_time ra = -1;
    for (int i = 0; i < 3; i++)
        assert_int_equal(take(k, "t1", 1, &ra), 0);
    band_time t0 = band_now();
    assert_int_equal(take(k, "t1", 1, &ra), BAND_EAGAIN);
    /* 100 ms per token at 10/s, less what passed on the server since the third grant. */
    assert_true(ra > 100 * MS - (band_now() - t0) - 50 * MS && ra <= 100 * MS);
    assert_int_equal(band_keyrate_available(k, "t1", 2), 0);
    sleep_ns(ra);
    assert_int_equal(take(k, "t1", 1, &ra), 0); /* the retry-after was enough */
    /* Weighted: two missing at 10/s is 200 ms. */
    assert_int_equal(take(k, "w", 3, &ra), 0);
    assert_int_equal(take(k, "w", 2, &ra), BAND_EAGAIN);
    assert_true(ra > 150 * MS && ra <= 200 * MS);
    assert_int_equal(take(k, "w", 4, &ra), BAND_E2BIG);
    /* Keys are bytes, NUL included. */
    assert_int_equal(band_keyrate_try_acquire(k, "x\0y", 3, 3, &ra), 0);
    assert_int_equal(band_keyrate_try_acquire(k, "x\0z", 3, 3, &ra), 0);
    assert_int_equal(band_keyrate_try_acquire(k, "x\0y", 3, 1, &ra), BAND_EAGAIN);
    /* Forget. */
    assert_int_equal(band_keyrate_forget(k, "w", 1), 0);
    assert_int_equal(band_keyrate_available(k, "w", 1), 3);
    assert_int_equal(band_keyrate_forget(k, "never", 5), BAND_ENOENT);
    /* NOSCRIPT: the script is flushed; the next decision loads it again. */
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", sv.port, tv);
    assert_non_null(c);
    redisReply *rep = redisCommand(c, "SCRIPT FLUSH");
    assert_non_null(rep);
    freeReplyObject(rep);
    redisFree(c);
    assert_int_equal(take(k, "fresh", 1, &ra), 0);
    band_redis_stats st;
    assert_int_equal(band_redis_get_stats(r, &st), 0);
    assert_u64_equal(st.reloads, 1);
    assert_u64_equal(st.errors, 0);
    band_keyrate_stats ks;
    assert_int_equal(band_keyrate_get_stats(k, &ks), 0);
    assert_u64_equal(ks.backend_errors, 0);
    band_keyrate_destroy(k);
    band_redis_destroy(r);
    stop_server(&sv);
}

/* Two processes share one key: the second gets exactly what the first left. */
static void test_two_processes(void **state)
{
    (void)state;
    struct server sv = {0, free_port()};
    start_server(&sv);
    band_redis *r = NULL;
    assert_int_equal(band_redis_create(&r, "127.0.0.1", sv.port, NULL), 0);
    band_keyrate *k = table(r, 1, 3600 * BAND_SEC, 10, BAND_KEYRATE_FAIL_CLOSED);
    for (int i = 0; i < 4; i++)
        assert_int_equal(take(k, "shared", 1, NULL), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        band_redis *r2 = NULL;
        if (band_redis_create(&r2, "127.0.0.1", sv.port, NULL) != 0)
            _exit(100);
        band_keyrate *k2 = table(r2, 1, 3600 * BAND_SEC, 10, BAND_KEYRATE_FAIL_CLOSED);
        int got = 0, rc;
        while ((rc = take(k2, "shared", 1, NULL)) == 0 && got < 50)
            got++;
        _exit(rc == BAND_EAGAIN ? got : 101);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 6);
    assert_int_equal(take(k, "shared", 1, NULL), BAND_EAGAIN);
    band_keyrate_destroy(k);
    band_redis_destroy(r);
    stop_server(&sv);
}

/* The server dies and comes back: each option answers at once meanwhile, then recovers. */
static void test_restart(void **state)
{
    (void)state;
    struct server sv = {0, free_port()};
    start_server(&sv);
    band_redis_opts ro;
    memset(&ro, 0, sizeof(ro));
    ro.connect_timeout = 100 * MS;
    ro.command_timeout = 100 * MS;
    ro.reconnect_interval = 50 * MS;
    band_redis *r = NULL;
    assert_int_equal(band_redis_create(&r, "127.0.0.1", sv.port, &ro), 0);
    band_keyrate *closed = table(r, 100, BAND_SEC, 5, BAND_KEYRATE_FAIL_CLOSED);
    band_keyrate *open = table(r, 100, BAND_SEC, 5, BAND_KEYRATE_FAIL_OPEN);
    assert_int_equal(take(closed, "a", 1, NULL), 0);
    assert_int_equal(take(open, "b", 1, NULL), 0);
    stop_server(&sv);
    band_time worst = 0;
    for (int i = 0; i < 20; i++) {
        band_time t0 = band_now();
        band_time ra = -1;
        assert_int_equal(take(closed, "a", 1, &ra), BAND_ETIMEDOUT);
        assert_int_equal(ra, 0);
        assert_int_equal(take(open, "b", 1, &ra), 0);
        band_time d = band_now() - t0;
        if (d > worst)
            worst = d;
    }
    assert_true(worst < 500 * MS); /* never a hang: at most about one connect timeout */
    band_keyrate_stats st;
    assert_int_equal(band_keyrate_get_stats(open, &st), 0);
    assert_u64_equal(st.failed_open, 20);
    assert_int_equal(band_keyrate_get_stats(closed, &st), 0);
    assert_u64_equal(st.backend_errors, 20);
    start_server(&sv); /* same port, empty: every key is full again */
    band_time until = band_now() + 3 * BAND_SEC;
    int rc;
    while ((rc = take(closed, "a", 5, NULL)) != 0 && band_now() < until)
        sleep_ns(10 * MS);
    assert_int_equal(rc, 0);
    assert_int_equal(take(closed, "a", 1, NULL), BAND_EAGAIN);
    band_redis_stats rs;
    assert_int_equal(band_redis_get_stats(r, &rs), 0);
    assert_true(rs.connects >= 2);
    assert_int_equal(rs.connected, 1);
    band_keyrate_destroy(closed);
    band_keyrate_destroy(open);
    band_redis_destroy(r);
    stop_server(&sv);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decisions),
        cmocka_unit_test(test_two_processes),
        cmocka_unit_test(test_restart),
    };
    return cmocka_run_group_tests_name("test_redis", tests, NULL, NULL);
}

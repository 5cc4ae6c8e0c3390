/* SPDX-License-Identifier: MIT */
/*
 * test_redis.c - libband-redis against a real redis-server.
 *
 * Each test starts its own redis-server on 127.0.0.1 on a free port, without persistence
 * (--save "" --appendonly no), and stops it at the end. Covered: decisions and exact
 * retry-afters through band_keyrate_try_acquire(), available and forget, two processes
 * sharing one key's rate, the script being flushed (NOSCRIPT, reloaded), and the server
 * going away and coming back mid-run or restarting between two calls, answered per fail
 * option with exact outcomes and never with a hang.
 */
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "band/keyrate.h"
#include "band/redis.h"

#define MS (BAND_SEC / 1000)

/* The server of the running test: started by setup(), killed by teardown() even when the
 * test fails, and by the kernel when this process dies first (PR_SET_PDEATHSIG). */
struct server {
    pid_t pid;
    int port;
};
static struct server g_sv;

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int port = -1;
    if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (s >= 0)
        close(s);
    return port;
}

static redisContext *admin(int port)
{
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c != NULL && c->err != 0) {
        redisFree(c);
        c = NULL;
    }
    return c;
}

static bool server_up(void *arg)
{
    struct server *sv = arg;
    redisContext *c = admin(sv->port);
    bool up = false;
    if (c != NULL) {
        redisReply *r = redisCommand(c, "PING");
        up = r != NULL && r->type == REDIS_REPLY_STATUS;
        if (r != NULL)
            freeReplyObject(r);
        redisFree(c);
    }
    return up;
}

static void start_server(struct server *sv)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", sv->port);
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(125);
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

static int setup(void **state)
{
    (void)state;
    if (access(BAND_REDIS_SERVER, X_OK) != 0) {
        print_message("redis-server not found at %s: skipped\n", BAND_REDIS_SERVER);
        return 0;
    }
    g_sv.pid = 0;
    g_sv.port = free_port();
    if (g_sv.port <= 0)
        return -1;
    start_server(&g_sv);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (g_sv.pid > 0)
        kill(g_sv.pid, SIGCONT); /* a test that stopped it and failed */
    stop_server(&g_sv);
    return 0;
}

static void need_server(void)
{
    if (g_sv.pid <= 0)
        skip();
}

/* The server's clock (TIME), in microseconds. */
static int64_t server_us(int port)
{
    redisContext *c = admin(port);
    assert_non_null(c);
    redisReply *r = redisCommand(c, "TIME");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    int64_t us =
        strtoll(r->element[0]->str, NULL, 10) * 1000000 + strtoll(r->element[1]->str, NULL, 10);
    freeReplyObject(r);
    redisFree(c);
    return us;
}

/* Run one command on a fresh connection; returns the reply (the caller frees it). */
static redisReply *command(int port, const char *fmt, ...)
{
    redisContext *c = admin(port);
    assert_non_null(c);
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    redisFree(c);
    return r;
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
    need_server();
    band_redis *r = NULL;
    assert_int_equal(band_redis_create(&r, "127.0.0.1", g_sv.port, NULL), 0);
    band_keyrate *k = table(r, 10, BAND_SEC, 3, BAND_KEYRATE_FAIL_CLOSED);
    band_time ra = -1;
    int64_t t0 = server_us(g_sv.port);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(take(k, "t1", 1, &ra), 0);
        assert_int_equal(ra, 0);
    }
    assert_int_equal(take(k, "t1", 1, &ra), BAND_EAGAIN);
    int64_t t1 = server_us(g_sv.port);
    /* 100 ms per token at 10/s, less what passed on the server's clock (microseconds, so
     * the wait is a whole number of microseconds) since the grants. */
    assert_int_equal(ra % 1000, 0);
    assert_true(ra <= 100 * MS);
    assert_true(ra >= 100 * MS - (t1 - t0) * 1000);
    assert_int_equal(band_keyrate_available(k, "t1", 2), 0);
    sleep_ns(ra);
    assert_int_equal(take(k, "t1", 1, &ra), 0); /* the retry-after was enough */
    /* Weighted: two missing at 10/s is 200 ms, less the time since the grant. */
    t0 = server_us(g_sv.port);
    assert_int_equal(take(k, "w", 3, &ra), 0);
    assert_int_equal(take(k, "w", 2, &ra), BAND_EAGAIN);
    t1 = server_us(g_sv.port);
    assert_true(ra <= 200 * MS && ra >= 200 * MS - (t1 - t0) * 1000);
    assert_int_equal(take(k, "w", 4, &ra), BAND_E2BIG);
    /* Keys are bytes, NUL included. */
    assert_int_equal(band_keyrate_try_acquire(k, "x\0y", 3, 3, &ra), 0);
    assert_int_equal(band_keyrate_try_acquire(k, "x\0z", 3, 3, &ra), 0);
    assert_int_equal(band_keyrate_try_acquire(k, "x\0y", 3, 1, &ra), BAND_EAGAIN);
    /* Forget. */
    assert_int_equal(band_keyrate_forget(k, "w", 1), 0);
    assert_int_equal(band_keyrate_available(k, "w", 1), 3);
    assert_int_equal(band_keyrate_forget(k, "never", 5), BAND_ENOENT);
    /* A key refilled but not yet expired (its TTL is rounded up to the ms) was full. */
    band_keyrate *fast = table(r, 1000, MS, 1, BAND_KEYRATE_FAIL_CLOSED); /* 1 token per us */
    assert_int_equal(take(fast, "quick", 1, &ra), 0);
    sleep_ns(100 * 1000);
    assert_int_equal(band_keyrate_forget(fast, "quick", 5), BAND_ENOENT);
    band_keyrate_destroy(fast);
    /* NOSCRIPT: the script is flushed; the next decision loads it again. */
    freeReplyObject(command(g_sv.port, "SCRIPT FLUSH"));
    assert_int_equal(take(k, "fresh", 1, &ra), 0);
    band_redis_stats st;
    assert_int_equal(band_redis_get_stats(r, &st), 0);
    assert_u64_equal(st.reloads, 1);
    assert_u64_equal(st.errors, 0);
    assert_u64_equal(st.connects, 1);
    assert_int_equal(st.connected, 1);
    band_keyrate_stats ks;
    assert_int_equal(band_keyrate_get_stats(k, &ks), 0);
    assert_u64_equal(ks.backend_errors, 0);
    band_keyrate_destroy(k);
    band_redis_destroy(r);
}

/* A bucket written at a server time an hour ahead: the script reads it as no time elapsed
 * (a clock that stepped back), so every answer is exact to the nanosecond. */
static void plant(const char *key, const char *missing, const char *period)
{
    char last[32];
    snprintf(last, sizeof(last), "%lld", (long long)(server_us(g_sv.port) + 3600LL * 1000000));
    /* The bucket's layout (src/keyrate.lua): m, l, p, r, e as little-endian doubles; e = 0
     * (the key has no TTL), so the next grant sets one. */
    redisReply *rep = command(g_sv.port, "EVAL %s 1 band:kr:%s %s %s %s 10",
                              "return redis.call('SET', KEYS[1], struct.pack('<ddddd', "
                              "tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), "
                              "tonumber(ARGV[4]), 0))",
                              key, missing, last, period);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
}

/* The units a bucket is missing (its m), in decimal. */
static redisReply *missing_of(const char *key)
{
    return command(g_sv.port, "EVAL %s 1 band:kr:%s",
                   "return string.format('%.0f', (struct.unpack('<ddddd', "
                   "redis.call('GET', KEYS[1]))))",
                   key);
}

static void test_exact(void **state)
{
    (void)state;
    need_server();
    band_redis *r = NULL;
    assert_int_equal(band_redis_create(&r, "127.0.0.1", g_sv.port, NULL), 0);
    band_keyrate *k = table(r, 10, BAND_SEC, 3, BAND_KEYRATE_FAIL_CLOSED);
    band_time ra = -1;
    /* 2.5 tokens and 7 units short: 1 more needs 0.5 token + 7 units at 10 units/ns. */
    plant("e1", "2500000007", "1000000000");
    assert_int_equal(band_keyrate_available(k, "e1", 2), 0);
    assert_int_equal(take(k, "e1", 1, &ra), BAND_EAGAIN);
    assert_int_equal(ra, 50000001);
    /* 1 token and 3 units short: 1 whole token left; after it 3 units too few, 1 ns. */
    plant("e2", "1000000003", "1000000000");
    assert_int_equal(band_keyrate_available(k, "e2", 2), 1);
    assert_int_equal(take(k, "e2", 1, &ra), 0);
    redisReply *rep = missing_of("e2");
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "2000000003");
    freeReplyObject(rep);
    /* Full again after 200000001 ns: the TTL is that in ms rounded up (201), plus the
     * script's slack of 1000 ms. */
    rep = command(g_sv.port, "PTTL band:kr:e2");
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    assert_true(rep->integer > 1150 && rep->integer <= 1201);
    freeReplyObject(rep);
    assert_int_equal(take(k, "e2", 1, &ra), BAND_EAGAIN);
    assert_int_equal(ra, 1);
    /* A new period: 2 tokens and 3 units short is 3 whole tokens short, of a burst of 3. */
    assert_int_equal(band_keyrate_set(k, 10, 2 * BAND_SEC, 3), 0);
    assert_int_equal(band_keyrate_available(k, "e2", 2), 0);
    assert_int_equal(take(k, "e2", 1, &ra), BAND_EAGAIN);
    assert_int_equal(ra, 200000000); /* one token of 2 s at 10 units/ns */
    /* Settings beyond the script's exact range are refused: could not decide. */
    band_keyrate *big = table(r, 1, BAND_SEC, UINT64_C(1) << 30, BAND_KEYRATE_FAIL_CLOSED);
    assert_int_equal(take(big, "e3", 1, &ra), BAND_EUNAVAIL);
    band_keyrate_destroy(big);
    band_keyrate_destroy(k);
    band_redis_destroy(r);
}

/* Two processes race on one key at once: together they get exactly its burst. */
static void test_two_processes(void **state)
{
    (void)state;
    need_server();
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* No cmocka asserts here: a failure is the exit status. */
        char c;
        close(go[1]);
        band_redis *r2 = NULL;
        band_keyrate_backend be;
        band_keyrate_opts o;
        memset(&o, 0, sizeof(o));
        o.backend = &be;
        band_keyrate *k2 = NULL;
        if (band_redis_create(&r2, "127.0.0.1", g_sv.port, NULL) != 0 ||
            band_redis_backend(r2, &be) != 0 ||
            band_keyrate_create(&k2, 1, 3600 * BAND_SEC, 100, &o) != 0 || read(go[0], &c, 1) != 1)
            _exit(200);
        int got = 0, rc;
        while ((rc = take(k2, "shared", 1, NULL)) == 0 && got < 150)
            got++;
        _exit(rc == BAND_EAGAIN ? got : 201);
    }
    close(go[0]);
    band_redis *r = NULL;
    assert_int_equal(band_redis_create(&r, "127.0.0.1", g_sv.port, NULL), 0);
    band_keyrate *k = table(r, 1, 3600 * BAND_SEC, 100, BAND_KEYRATE_FAIL_CLOSED);
    assert_int_equal(write(go[1], "g", 1), 1);
    close(go[1]);
    int got = 0, rc;
    while ((rc = take(k, "shared", 1, NULL)) == 0 && got < 150)
        got++;
    assert_int_equal(rc, BAND_EAGAIN);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    int other = WEXITSTATUS(status);
    assert_true(other <= 100);
    assert_int_equal(got + other, 100);
    assert_int_equal(take(k, "shared", 1, NULL), BAND_EAGAIN);
    print_message("two processes: %d + %d grants of a burst of 100\n", got, other);
    band_keyrate_destroy(k);
    band_redis_destroy(r);
}

struct racer {
    band_keyrate *k;
    int got, rc;
};

static void *race(void *arg)
{
    struct racer *x = arg;
    while ((x->rc = take(x->k, "threads", 1, NULL)) == 0 && x->got < 300)
        x->got++;
    return NULL;
}

/* Four threads share one connection and one key: together they get exactly its burst. */
static void test_threads(void **state)
{
    (void)state;
    need_server();
    band_redis *r = NULL;
    assert_int_equal(band_redis_create(&r, "127.0.0.1", g_sv.port, NULL), 0);
    band_keyrate *k = table(r, 1, 3600 * BAND_SEC, 200, BAND_KEYRATE_FAIL_CLOSED);
    struct racer x[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        x[i] = (struct racer){k, 0, 0};
        assert_int_equal(pthread_create(&th[i], NULL, race, &x[i]), 0);
    }
    int sum = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(x[i].rc, BAND_EAGAIN);
        sum += x[i].got;
    }
    assert_int_equal(sum, 200);
    band_redis_stats st;
    assert_int_equal(band_redis_get_stats(r, &st), 0);
    assert_u64_equal(st.errors, 0);
    assert_u64_equal(st.calls, 204);
    band_keyrate_destroy(k);
    band_redis_destroy(r);
}

static band_redis *short_timeouts(void)
{
    band_redis_opts ro;
    memset(&ro, 0, sizeof(ro));
    ro.connect_timeout = 100 * MS;
    ro.command_timeout = 100 * MS;
    ro.reconnect_interval = 50 * MS;
    band_redis *r = NULL;
    assert_int_equal(band_redis_create(&r, "127.0.0.1", g_sv.port, &ro), 0);
    return r;
}

/* The server dies and comes back: each option answers at once meanwhile, then recovers. */
static void test_restart(void **state)
{
    (void)state;
    need_server();
    band_redis *r = short_timeouts();
    band_keyrate *closed = table(r, 100, BAND_SEC, 5, BAND_KEYRATE_FAIL_CLOSED);
    band_keyrate *open = table(r, 100, BAND_SEC, 5, BAND_KEYRATE_FAIL_OPEN);
    assert_int_equal(take(closed, "a", 1, NULL), 0);
    assert_int_equal(take(open, "b", 1, NULL), 0);
    stop_server(&g_sv);
    band_time worst = 0;
    for (int i = 0; i < 20; i++) {
        band_time t0 = band_now();
        band_time ra = -1;
        assert_int_equal(take(closed, "a", 1, &ra), BAND_EUNAVAIL);
        assert_int_equal(ra, 0);
        assert_int_equal(take(open, "b", 1, &ra), 0);
        assert_int_equal(ra, 0);
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
    assert_u64_equal(st.failed_open, 0);
    /* The other calls answer per fail option too, at once. */
    band_time t0 = band_now();
    assert_u64_equal(band_keyrate_available(closed, "a", 1), 0);
    assert_u64_equal(band_keyrate_available(open, "b", 1), 5);
    assert_int_equal(band_keyrate_forget(closed, "a", 1), BAND_EUNAVAIL);
    assert_int_equal(band_keyrate_forget(open, "b", 1), BAND_EUNAVAIL);
    assert_true(band_now() - t0 < 500 * MS);
    start_server(&g_sv); /* same port, empty: every key is full again */
    band_time until = band_now() + 3 * BAND_SEC;
    int rc;
    while ((rc = take(closed, "a", 5, NULL)) != 0 && band_now() < until)
        sleep_ns(10 * MS);
    assert_int_equal(rc, 0);
    assert_int_equal(take(closed, "a", 1, NULL), BAND_EAGAIN);
    /* Failing open has stopped: the open table decides again, from a full bucket. */
    assert_int_equal(band_keyrate_get_stats(open, &st), 0);
    uint64_t failed_open = st.failed_open;
    assert_int_equal(take(open, "b", 5, NULL), 0);
    band_time ra = 0;
    assert_int_equal(take(open, "b", 1, &ra), BAND_EAGAIN);
    assert_true(ra > 0 && ra <= 10 * MS);
    assert_int_equal(band_keyrate_get_stats(open, &st), 0);
    assert_u64_equal(st.failed_open, failed_open);
    band_redis_stats rs;
    assert_int_equal(band_redis_get_stats(r, &rs), 0);
    assert_true(rs.connects >= 2);
    assert_int_equal(rs.connected, 1);
    band_keyrate_destroy(closed);
    band_keyrate_destroy(open);
    band_redis_destroy(r);
}

/* The server restarts between two calls: the connection each handle holds is dead, so the
 * first call on each fails (failing closed: BAND_EUNAVAIL; failing open: a grant), at
 * once, and the next one reconnects and decides on the fresh server. */
static void test_restart_between_calls(void **state)
{
    (void)state;
    need_server();
    band_time created = band_now();
    band_redis *r_closed = short_timeouts(), *r_open = short_timeouts();
    /* One token an hour: an empty bucket stays empty however slowly the calls run. */
    band_keyrate *closed = table(r_closed, 1, 3600 * BAND_SEC, 2, BAND_KEYRATE_FAIL_CLOSED);
    band_keyrate *open = table(r_open, 1, 3600 * BAND_SEC, 2, BAND_KEYRATE_FAIL_OPEN);
    assert_int_equal(take(closed, "c", 2, NULL), 0);
    assert_int_equal(take(open, "o", 2, NULL), 0);
    assert_int_equal(take(closed, "c", 1, NULL), BAND_EAGAIN);
    assert_int_equal(take(open, "o", 1, NULL), BAND_EAGAIN);
    stop_server(&g_sv);
    start_server(&g_sv); /* same port, empty */
    /* Connects are spaced by the reconnect interval (50 ms) from the last one, made at
     * create: past it, the call after a failure reconnects. */
    band_time wait = created + 60 * MS - band_now();
    if (wait > 0)
        sleep_ns(wait);
    band_time t0 = band_now();
    band_time ra = -1;
    assert_int_equal(take(closed, "c", 1, &ra), BAND_EUNAVAIL);
    assert_int_equal(ra, 0);
    assert_int_equal(take(open, "o", 1, &ra), 0);
    assert_int_equal(ra, 0);
    assert_true(band_now() - t0 < 300 * MS); /* two failed calls, no wait */
    /* Reconnected: the buckets are full on the new server, and each table decides. */
    assert_int_equal(take(closed, "c", 2, NULL), 0);
    assert_int_equal(take(closed, "c", 1, NULL), BAND_EAGAIN);
    assert_int_equal(take(open, "o", 2, NULL), 0);
    assert_int_equal(take(open, "o", 1, NULL), BAND_EAGAIN);
    band_keyrate_stats st;
    assert_int_equal(band_keyrate_get_stats(closed, &st), 0);
    assert_u64_equal(st.backend_errors, 1);
    assert_u64_equal(st.failed_open, 0);
    assert_int_equal(band_keyrate_get_stats(open, &st), 0);
    assert_u64_equal(st.backend_errors, 1);
    assert_u64_equal(st.failed_open, 1);
    band_redis_stats rs;
    assert_int_equal(band_redis_get_stats(r_closed, &rs), 0);
    assert_u64_equal(rs.connects, 2);
    assert_u64_equal(rs.errors, 1);
    assert_int_equal(rs.connected, 1);
    assert_int_equal(band_redis_get_stats(r_open, &rs), 0);
    assert_u64_equal(rs.connects, 2);
    assert_int_equal(rs.connected, 1);
    band_keyrate_destroy(closed);
    band_keyrate_destroy(open);
    band_redis_destroy(r_closed);
    band_redis_destroy(r_open);
}

/* The server hangs (SIGSTOP): every call ends by the command timeout, then it recovers. */
static void test_hung(void **state)
{
    (void)state;
    need_server();
    band_redis *r = short_timeouts();
    band_keyrate *closed = table(r, 100, BAND_SEC, 5, BAND_KEYRATE_FAIL_CLOSED);
    band_keyrate *open = table(r, 100, BAND_SEC, 5, BAND_KEYRATE_FAIL_OPEN);
    assert_int_equal(take(closed, "h", 1, NULL), 0);
    assert_int_equal(kill(g_sv.pid, SIGSTOP), 0);
    band_time worst = 0;
    for (int i = 0; i < 4; i++) {
        band_time t0 = band_now();
        assert_int_equal(take(closed, "h", 1, NULL), BAND_EUNAVAIL);
        assert_int_equal(take(open, "h", 1, NULL), 0);
        band_time d = band_now() - t0;
        if (d > worst)
            worst = d;
    }
    /* Two calls, each at most a command timeout (100 ms) after a connect that succeeds
     * into the listen backlog. */
    assert_true(worst < 450 * MS);
    assert_int_equal(kill(g_sv.pid, SIGCONT), 0);
    band_time until = band_now() + 3 * BAND_SEC;
    int rc;
    while ((rc = take(closed, "h", 1, NULL)) != 0 && band_now() < until)
        sleep_ns(10 * MS);
    assert_int_equal(rc, 0);
    band_keyrate_stats st;
    assert_int_equal(band_keyrate_get_stats(open, &st), 0);
    assert_u64_equal(st.failed_open, 4);
    band_keyrate_destroy(closed);
    band_keyrate_destroy(open);
    band_redis_destroy(r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_decisions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_between_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hung, setup, teardown),
    };
    return cmocka_run_group_tests_name("test_redis", tests, NULL, NULL);
}

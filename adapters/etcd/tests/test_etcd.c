/* SPDX-License-Identifier: MIT */
/*
 * test_etcd.c - libband-etcd against a real 3-member etcd cluster.
 *
 * main() starts the cluster through etcd_cluster.sh (with this process as its owner, so
 * it is stopped however the test ends) unless BAND_ETCD_ENDPOINTS and
 * BAND_ETCD_CLUSTER_DIR name a running one. Every test uses budgets of its own names.
 * Covered: argument checks; opening and creating budgets; try_acquire (fits, EAGAIN,
 * E2BIG); strict FIFO across two clients (no barging); fencing tokens; capacity lowering
 * and its debt; asynchronous acquisitions and their cancel; blocking acquisitions with a
 * deadline and a cancel token; close; multi-budget admission; an operator's revoke; a
 * holder whose lease expires (a stopped child process); six threads of three clients
 * contending (held never above the capacity, tokens unique); failover when the member a
 * client talks to dies. It also prints the latency of try_acquire + release and of a bare
 * txn. BAND_ETCD_TEST_FILTER=<glob> runs only the matching tests.
 */
#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "band/etcd.h"

#define MS BAND_MSEC

static char g_endpoints[1024];
static char g_dir[512];
static int g_own_cluster;
static band_etcd *g_a, *g_b; /* two clients: two processes' worth of leases */

/* ---- helpers ---------------------------------------------------------------------- */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Poll @cond every 10 ms until it holds or @ms pass: for conditions read from the
 * cluster. */
static bool poll_until(bool (*cond)(void *), void *arg, long ms)
{
    band_time deadline = band_now() + ms * MS;
    while (!cond(arg)) {
        if (band_now() >= deadline)
            return cond(arg);
        sleep_ms(10);
    }
    return true;
}

static void unique_name(char *buf, size_t n, const char *what)
{
    static int seq;
    snprintf(buf, n, "%s-%ld-%d", what, (long)getpid(), ++seq);
}

static band_etcd_budget *open_budget(band_etcd *e, const char *name, uint64_t cap)
{
    band_etcd_budget *b = NULL;
    int rc = band_etcd_budget_create(&b, e, name, cap);
    assert_int_equal(rc, 0);
    return b;
}

static size_t entries(band_etcd_budget *b)
{
    size_t n = 0;
    assert_int_equal(band_etcd_budget_list(b, NULL, 0, &n), 0);
    return n;
}

struct count_cond {
    band_etcd_budget *b;
    size_t n;
};

static bool cond_entries(void *arg)
{
    struct count_cond *c = arg;
    size_t n = 0;
    return band_etcd_budget_list(c->b, NULL, 0, &n) == 0 && n == c->n;
}

/* An asynchronous acquisition with a wake counter. */
struct aop {
    band_etcd_budget_acquire_op op;
    atomic_int woken;
    atomic_int status;
};

static void aop_wake(band_waiter *w)
{
    struct aop *a = w->data;
    atomic_store(&a->status, band_waiter_status(w));
    atomic_store(&a->woken, 1);
}

static void aop_init(struct aop *a)
{
    memset(a, 0, sizeof(*a));
    band_waiter_init(&a->op.w, aop_wake, a);
}

static bool cond_woken(void *arg)
{
    return atomic_load(&((struct aop *)arg)->woken) != 0;
}

static void wait_woken(struct aop *a, int status)
{
    assert_true(poll_until(cond_woken, a, 10000));
    assert_int_equal(atomic_load(&a->status), status);
}

/* ---- fixtures --------------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    band_etcd_opts o = {0};
    o.holder = "client-a";
    if (band_etcd_create(&g_a, g_endpoints, &o) != 0)
        return -1;
    o.holder = "client-b";
    if (band_etcd_create(&g_b, g_endpoints, &o) != 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    int rc = band_etcd_destroy(g_a) | band_etcd_destroy(g_b);
    g_a = g_b = NULL;
    return rc;
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_args(void **state)
{
    (void)state;
    band_etcd *e = NULL;
    assert_int_equal(band_etcd_create(NULL, g_endpoints, NULL), BAND_EINVAL);
    assert_int_equal(band_etcd_create(&e, NULL, NULL), BAND_EINVAL);
    assert_int_equal(band_etcd_create(&e, "", NULL), BAND_EINVAL);
    assert_int_equal(band_etcd_create(&e, "ftp://127.0.0.1:1", NULL), BAND_EINVAL);
    assert_int_equal(band_etcd_create(&e, "http://127.0.0.1:1,,", NULL), BAND_EINVAL);
    band_etcd_opts o = {0};
    o.lease_ttl = -1;
    assert_int_equal(band_etcd_create(&e, g_endpoints, &o), BAND_EINVAL);
    o.lease_ttl = 0;
    o.holder = "quote\"d";
    assert_int_equal(band_etcd_create(&e, g_endpoints, &o), BAND_EINVAL);
    assert_null(e);
    /* Nothing listens on port 1: no lease, no client. */
    o.holder = NULL;
    o.request_timeout = 200 * MS;
    assert_int_equal(band_etcd_create(&e, "http://127.0.0.1:1", &o), BAND_EUNAVAIL);

    band_etcd_budget *b = NULL;
    assert_int_equal(band_etcd_budget_create(&b, g_a, "", 1), BAND_EINVAL);
    assert_int_equal(band_etcd_budget_create(&b, g_a, "a/b", 1), BAND_EINVAL);
    assert_int_equal(band_etcd_budget_create(&b, g_a, "ok", BAND_MAX_UNITS + 1), BAND_EINVAL);
    assert_int_equal(band_etcd_budget_create(NULL, g_a, "ok", 1), BAND_EINVAL);
    assert_int_equal(band_etcd_budget_create(&b, NULL, "ok", 1), BAND_EINVAL);
    char longname[BAND_ETCD_NAME_MAX + 2];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(band_etcd_budget_create(&b, g_a, longname, 1), BAND_EINVAL);

    char name[64];
    unique_name(name, sizeof(name), "args");
    b = open_budget(g_a, name, 3);
    band_etcd_grant g;
    assert_int_equal(band_etcd_budget_try_acquire(b, 0, &g), BAND_EINVAL);
    assert_int_equal(band_etcd_budget_try_acquire(b, BAND_MAX_UNITS + 1, &g), BAND_EINVAL);
    assert_int_equal(band_etcd_budget_try_acquire(NULL, 1, &g), BAND_EINVAL);
    assert_int_equal(band_etcd_budget_try_acquire(b, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_etcd_budget_set_capacity(b, 0), BAND_EINVAL);
    assert_int_equal(band_etcd_budget_check_token(b, 0), BAND_EINVAL);
    struct aop a;
    aop_init(&a);
    a.op.w.wake = NULL;
    assert_int_equal(band_etcd_budget_acquire_async(b, 1, &a.op), BAND_EINVAL);
    assert_int_equal(band_etcd_revoke(g_a, 0), BAND_EINVAL);
    memset(&g, 0, sizeof(g));
    strcpy(g.id, "1-1");
    g.lease = 12345;
    assert_int_equal(band_etcd_budget_release(b, &g), BAND_EINVAL); /* not our lease */
    size_t n;
    assert_int_equal(band_etcd_budget_list(b, NULL, 1, &n), BAND_EINVAL);
    band_etcd_req r;
    assert_int_equal(band_etcd_req_init(&r, NULL, NULL), 0);
    assert_int_equal(band_etcd_try_admit(g_a, &r), BAND_EINVAL); /* no parts */
    assert_int_equal(band_etcd_req_add(&r, b, 1), 0);
    assert_int_equal(band_etcd_req_add(&r, b, 1), BAND_EINVAL);    /* twice */
    assert_int_equal(band_etcd_try_admit(g_b, &r), BAND_EINVAL);   /* another client */
    assert_int_equal(band_etcd_release_req(g_a, &r), BAND_EINVAL); /* not granted */
    assert_int_equal(band_etcd_destroy(g_a), BAND_EBUSY);
    assert_int_equal(band_etcd_budget_destroy(b), 0);
    assert_int_equal(band_etcd_budget_destroy(NULL), 0);
    assert_int_equal(band_etcd_destroy(NULL), 0);
}

static void test_open(void **state)
{
    (void)state;
    char name[64];
    unique_name(name, sizeof(name), "open");
    band_etcd_budget *b = NULL;
    assert_int_equal(band_etcd_budget_create(&b, g_a, name, 0), BAND_ENOENT);
    b = open_budget(g_a, name, 10);
    band_etcd_budget *b2 = open_budget(g_b, name, 99); /* exists: keeps 10 */
    band_etcd_budget_stats s;
    assert_int_equal(band_etcd_budget_get_stats(b2, &s), 0);
    assert_u64_equal(s.capacity, 10);
    assert_u64_equal(s.held, 0);
    assert_int_equal(s.holders, 0);
    assert_true(s.revision > 0);
    band_etcd_budget *b3 = open_budget(g_b, name, 0);
    assert_int_equal(band_etcd_budget_is_closed(b3), 0);
    assert_int_equal(band_etcd_budget_destroy(b3), 0);
    assert_int_equal(band_etcd_budget_destroy(b2), 0);
    assert_int_equal(band_etcd_budget_destroy(b), 0);
}

static void test_try_acquire(void **state)
{
    (void)state;
    char name[64];
    unique_name(name, sizeof(name), "try");
    band_etcd_budget *b = open_budget(g_a, name, 10);
    band_etcd_grant g1, g2, g3;
    assert_int_equal(band_etcd_budget_try_acquire(b, 4, &g1), 0);
    assert_u64_equal(g1.units, 4);
    assert_true(g1.token > 0);
    band_etcd_stats cs;
    assert_int_equal(band_etcd_get_stats(g_a, &cs), 0);
    assert_int_equal(g1.lease, cs.lease);
    assert_int_equal(band_etcd_budget_try_acquire(b, 7, &g2), BAND_EAGAIN);
    assert_int_equal(band_etcd_budget_try_acquire(b, 11, &g2), BAND_E2BIG);
    assert_int_equal(band_etcd_budget_try_acquire(b, 6, &g2), 0);
    assert_true(g2.token > g1.token);
    band_etcd_budget_stats s;
    assert_int_equal(band_etcd_budget_get_stats(b, &s), 0);
    assert_u64_equal(s.held, 10);
    assert_int_equal(s.holders, 2);
    assert_int_equal(s.waiters, 0);
    assert_int_equal(band_etcd_budget_try_acquire(b, 1, &g3), BAND_EAGAIN);
    assert_int_equal(entries(b), 2); /* refusals leave no key behind */
    assert_int_equal(band_etcd_budget_release(b, &g1), 0);
    assert_int_equal(band_etcd_budget_release(b, &g1), BAND_ESTALE);
    assert_int_equal(band_etcd_budget_release(b, &g2), 0);
    assert_int_equal(entries(b), 0);
    assert_int_equal(band_etcd_budget_destroy(b), 0);
}

/* A big request ahead blocks a small one behind it; releases grant in order. */
static void test_fifo(void **state)
{
    (void)state;
    char name[64];
    unique_name(name, sizeof(name), "fifo");
    band_etcd_budget *ba = open_budget(g_a, name, 10);
    band_etcd_budget *bb = open_budget(g_b, name, 10);
    band_etcd_grant held;
    assert_int_equal(band_etcd_budget_try_acquire(ba, 6, &held), 0);
    struct aop big, small;
    aop_init(&big);
    aop_init(&small);
    assert_int_equal(band_etcd_budget_acquire_async(bb, 8, &big.op), BAND_PENDING);
    /* 2 would fit beside the 6 held, but the 8 is ahead: no barging. */
    band_etcd_grant g;
    assert_int_equal(band_etcd_budget_try_acquire(ba, 2, &g), BAND_EAGAIN);
    assert_int_equal(band_etcd_budget_acquire_async(ba, 2, &small.op), BAND_PENDING);
    band_etcd_entry ent[4];
    size_t n = 0;
    assert_int_equal(band_etcd_budget_list(ba, ent, 4, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(ent[0].granted, 1);
    assert_string_equal(ent[0].holder, "client-a");
    assert_int_equal(ent[1].granted, 0);
    assert_u64_equal(ent[1].units, 8);
    assert_string_equal(ent[1].holder, "client-b");
    assert_int_equal(ent[2].granted, 0);
    assert_true(ent[1].created < ent[2].created);
    assert_int_equal(atomic_load(&big.woken), 0);
    assert_int_equal(atomic_load(&small.woken), 0);

    assert_int_equal(band_etcd_budget_release(ba, &held), 0);
    wait_woken(&big, 0);
    wait_woken(&small, 0);
    /* The wakes run on two clients' threads, in either order; the grants are ordered. */
    assert_true(big.op.grant.token > held.token);
    assert_true(small.op.grant.token > big.op.grant.token);
    assert_u64_equal(big.op.grant.units, 8);
    band_etcd_budget_stats s;
    assert_int_equal(band_etcd_budget_get_stats(ba, &s), 0);
    assert_u64_equal(s.held, 10);
    assert_int_equal(band_etcd_budget_release(bb, &big.op.grant), 0);
    assert_int_equal(band_etcd_budget_release(ba, &small.op.grant), 0);
    assert_int_equal(band_etcd_budget_destroy(ba), 0);
    assert_int_equal(band_etcd_budget_destroy(bb), 0);
}

static void test_fencing(void **state)
{
    (void)state;
    char name[64];
    unique_name(name, sizeof(name), "fence");
    band_etcd_budget *ba = open_budget(g_a, name, 5);
    band_etcd_budget *bb = open_budget(g_b, name, 5);
    band_etcd_grant g1, g2;
    assert_int_equal(band_etcd_budget_try_acquire(ba, 5, &g1), 0);
    assert_int_equal(band_etcd_budget_check_token(bb, g1.token), 0);
    assert_int_equal(band_etcd_budget_check_token(bb, g1.token + 1000000), BAND_ESTALE);
    assert_int_equal(band_etcd_budget_release(ba, &g1), 0);
    assert_int_equal(band_etcd_budget_check_token(bb, g1.token), BAND_ESTALE);
    assert_int_equal(band_etcd_budget_try_acquire(bb, 5, &g2), 0);
    assert_true(g2.token > g1.token);
    assert_int_equal(band_etcd_budget_check_token(ba, g2.token), 0);
    assert_int_equal(band_etcd_budget_check_token(ba, g1.token), BAND_ESTALE);
    assert_int_equal(band_etcd_budget_release(bb, &g2), 0);
    assert_int_equal(band_etcd_budget_destroy(ba), 0);
    assert_int_equal(band_etcd_budget_destroy(bb), 0);
}

static bool cond_stays_pending(void *arg)
{
    return atomic_load(&((struct aop *)arg)->woken) != 0;
}

/* Lowering the capacity gives a debt that releases repay before anybody is granted. */
static void test_debt(void **state)
{
    (void)state;
    char name[64];
    unique_name(name, sizeof(name), "debt");
    band_etcd_budget *ba = open_budget(g_a, name, 10);
    band_etcd_budget *bb = open_budget(g_b, name, 10);
    band_etcd_grant g6, g4;
    assert_int_equal(band_etcd_budget_try_acquire(ba, 6, &g6), 0);
    assert_int_equal(band_etcd_budget_try_acquire(ba, 4, &g4), 0);
    assert_int_equal(band_etcd_budget_set_capacity(ba, 5), 0);
    band_etcd_budget_stats s;
    assert_int_equal(band_etcd_budget_get_stats(ba, &s), 0);
    assert_u64_equal(s.capacity, 5);
    assert_u64_equal(s.held, 10);
    assert_u64_equal(s.debt, 5);
    struct aop w;
    aop_init(&w);
    assert_int_equal(band_etcd_budget_acquire_async(bb, 1, &w.op), BAND_PENDING);
    assert_int_equal(band_etcd_budget_release(ba, &g4), 0);
    assert_int_equal(band_etcd_budget_get_stats(ba, &s), 0);
    assert_u64_equal(s.held, 6);
    assert_u64_equal(s.debt, 1);
    assert_int_equal(s.waiters, 1);
    /* 6 held against 5: the waiter must stay queued (given time to be wrongly granted). */
    assert_false(poll_until(cond_stays_pending, &w, 500));
    assert_int_equal(band_etcd_budget_release(ba, &g6), 0);
    wait_woken(&w, 0);
    assert_int_equal(band_etcd_budget_get_stats(ba, &s), 0);
    assert_u64_equal(s.held, 1);
    assert_u64_equal(s.debt, 0);
    assert_int_equal(band_etcd_budget_release(bb, &w.op.grant), 0);
    assert_int_equal(band_etcd_budget_destroy(ba), 0);
    assert_int_equal(band_etcd_budget_destroy(bb), 0);
}

static void test_async_cancel(void **state)
{
    (void)state;
    char name[64];
    unique_name(name, sizeof(name), "cancel");
    band_etcd_budget *ba = open_budget(g_a, name, 4);
    band_etcd_budget *bb = open_budget(g_b, name, 4);
    band_etcd_grant held;
    assert_int_equal(band_etcd_budget_try_acquire(ba, 3, &held), 0);
    struct aop first, second;
    aop_init(&first);
    aop_init(&second);
    assert_int_equal(band_etcd_budget_acquire_async(bb, 4, &first.op), BAND_PENDING);
    assert_int_equal(band_etcd_budget_acquire_async(ba, 1, &second.op), BAND_PENDING);
    assert_int_equal(entries(ba), 3);
    assert_int_equal(band_waiter_cancel(&first.op.w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_status(&first.op.w), BAND_ECANCELED);
    /* Its key goes; the one behind it fits beside the 3 held and is granted. */
    wait_woken(&second, 0);
    struct count_cond c = {ba, 2};
    assert_true(poll_until(cond_entries, &c, 5000));
    assert_int_equal(atomic_load(&first.woken), 0);
    assert_int_equal(band_etcd_budget_release(ba, &held), 0);
    assert_int_equal(band_etcd_budget_release(ba, &second.op.grant), 0);
    assert_int_equal(band_etcd_budget_destroy(ba), 0);
    assert_int_equal(band_etcd_budget_destroy(bb), 0);
}

struct canceller {
    band_etcd_budget *b;
    band_cancel *token;
};

static int cancel_when_queued(void *arg)
{
    struct canceller *c = arg;
    struct count_cond cc = {c->b, 2};
    if (!poll_until(cond_entries, &cc, 10000))
        return -1;
    return band_cancel_request(c->token);
}

static void test_blocking(void **state)
{
    (void)state;
    char name[64];
    unique_name(name, sizeof(name), "block");
    band_etcd_budget *ba = open_budget(g_a, name, 2);
    band_etcd_budget *bb = open_budget(g_b, name, 2);
    band_etcd_grant held, g;
    assert_int_equal(band_etcd_budget_try_acquire(ba, 2, &held), 0);
    band_time t0 = band_now();
    assert_int_equal(band_etcd_budget_acquire(bb, 1, &g, t0 + 300 * MS, NULL), BAND_ETIMEDOUT);
    assert_true(band_now() - t0 >= 300 * MS);
    assert_int_equal(entries(ba), 1); /* its key is gone on return */

    band_cancel *tok = NULL;
    assert_int_equal(band_cancel_create(&tok, NULL), 0);
    struct canceller c = {ba, tok};
    struct test_thread th;
    assert_int_equal(test_thread_start(&th, cancel_when_queued, &c), 0);
    assert_int_equal(band_etcd_budget_acquire(bb, 1, &g, BAND_FOREVER, tok), BAND_ECANCELED);
    assert_int_equal(test_thread_join(&th), 0);
    assert_int_equal(entries(ba), 1);
    assert_int_equal(band_cancel_destroy(tok), 0);

    /* Granted through the wait once the holder releases. */
    struct aop rel;
    aop_init(&rel);
    assert_int_equal(band_etcd_budget_release(ba, &held), 0);
    assert_int_equal(band_etcd_budget_acquire(bb, 2, &g, band_now() + 5 * BAND_SEC, NULL), 0);
    assert_u64_equal(g.units, 2);
    assert_int_equal(band_etcd_budget_release(bb, &g), 0);
    assert_int_equal(band_etcd_budget_destroy(ba), 0);
    assert_int_equal(band_etcd_budget_destroy(bb), 0);
}

static void test_close(void **state)
{
    (void)state;
    char name[64];
    unique_name(name, sizeof(name), "close");
    band_etcd_budget *ba = open_budget(g_a, name, 1);
    band_etcd_budget *bb = open_budget(g_b, name, 1);
    band_etcd_grant held, g;
    assert_int_equal(band_etcd_budget_try_acquire(ba, 1, &held), 0);
    struct aop w;
    aop_init(&w);
    assert_int_equal(band_etcd_budget_acquire_async(bb, 1, &w.op), BAND_PENDING);
    assert_int_equal(band_etcd_budget_destroy(bb), BAND_EBUSY);
    assert_int_equal(band_etcd_budget_close(bb), 0);
    assert_int_equal(band_etcd_budget_is_closed(bb), 1);
    wait_woken(&w, BAND_ECLOSED);
    assert_int_equal(band_etcd_budget_try_acquire(bb, 1, &g), BAND_ECLOSED);
    struct count_cond c = {ba, 1};
    assert_true(poll_until(cond_entries, &c, 5000));
    assert_int_equal(band_etcd_budget_is_closed(ba), 0);
    assert_int_equal(band_etcd_budget_release(ba, &held), 0);
    assert_int_equal(band_etcd_budget_destroy(bb), 0);
    assert_int_equal(band_etcd_budget_destroy(ba), 0);
}

struct rop {
    band_etcd_req r;
    atomic_int woken;
};

static void rop_wake(band_waiter *w)
{
    atomic_store(&((struct rop *)w->data)->woken, 1);
}

static bool cond_rop(void *arg)
{
    return atomic_load(&((struct rop *)arg)->woken) != 0;
}

static void test_admit(void **state)
{
    (void)state;
    char nx[64], ny[64];
    unique_name(nx, sizeof(nx), "admx");
    unique_name(ny, sizeof(ny), "admy");
    band_etcd_budget *x = open_budget(g_a, nx, 5);
    band_etcd_budget *y = open_budget(g_a, ny, 5);
    band_etcd_budget *yb = open_budget(g_b, ny, 5);
    band_etcd_grant hy;
    assert_int_equal(band_etcd_budget_try_acquire(yb, 4, &hy), 0);
    struct rop r;
    memset(&r, 0, sizeof(r));
    assert_int_equal(band_etcd_req_init(&r.r, rop_wake, &r), 0);
    assert_int_equal(band_etcd_req_add(&r.r, x, 3), 0);
    assert_int_equal(band_etcd_req_add(&r.r, y, 3), 0);
    assert_int_equal(band_etcd_try_admit(g_a, &r.r), BAND_EAGAIN);
    assert_int_equal(entries(x), 0); /* none of it */
    assert_int_equal(band_etcd_admit_async(g_a, &r.r), BAND_PENDING);
    band_etcd_budget_stats s;
    assert_int_equal(band_etcd_budget_get_stats(x, &s), 0);
    assert_u64_equal(s.held, 0);
    assert_int_equal(s.waiters, 1);
    band_etcd_entry ex, ey[2];
    size_t n;
    assert_int_equal(band_etcd_budget_list(x, &ex, 1, &n), 0);
    assert_int_equal(band_etcd_budget_list(y, ey, 2, &n), 0);
    assert_int_equal(ex.created, ey[1].created); /* one place in both queues */
    assert_int_equal(band_etcd_budget_release(yb, &hy), 0);
    assert_true(poll_until(cond_rop, &r, 10000));
    assert_int_equal(band_waiter_status(&r.r.w), 0);
    assert_u64_equal(r.r.grant.units, 6);
    assert_int_equal(band_etcd_budget_list(x, &ex, 1, &n), 0);
    assert_int_equal(band_etcd_budget_list(y, ey, 2, &n), 0);
    assert_int_equal(ex.granted, 1);
    assert_int_equal(ey[0].granted, 1);
    assert_int_equal(ex.token, r.r.grant.token);
    assert_int_equal(ey[0].token, r.r.grant.token);
    assert_int_equal(band_etcd_budget_check_token(y, r.r.grant.token), 0);
    assert_int_equal(band_etcd_release_req(g_a, &r.r), 0);
    assert_int_equal(entries(x), 0);
    assert_int_equal(entries(y), 0);
    /* Blocking, and granted at once now. */
    assert_int_equal(band_etcd_admit(g_a, &r.r, band_now() + BAND_SEC, NULL), 0);
    assert_int_equal(band_etcd_release_req(g_a, &r.r), 0);
    assert_int_equal(band_etcd_budget_destroy(yb), 0);
    assert_int_equal(band_etcd_budget_destroy(x), 0);
    assert_int_equal(band_etcd_budget_destroy(y), 0);
}

static atomic_int g_lost;
static atomic_llong g_lost_lease;

static void on_lost(band_etcd *e, int64_t lease, void *data)
{
    (void)e;
    (void)data;
    atomic_store(&g_lost_lease, lease);
    atomic_fetch_add(&g_lost, 1);
}

static bool cond_lost(void *arg)
{
    (void)arg;
    return atomic_load(&g_lost) > 0;
}

static void test_revoke(void **state)
{
    (void)state;
    band_etcd_opts o = {0};
    o.on_lost = on_lost;
    o.holder = "victim";
    band_etcd *v = NULL;
    assert_int_equal(band_etcd_create(&v, g_endpoints, &o), 0);
    atomic_store(&g_lost, 0);
    char name[64];
    unique_name(name, sizeof(name), "revoke");
    band_etcd_budget *bv = open_budget(v, name, 5);
    band_etcd_budget *ba = open_budget(g_a, name, 5);
    band_etcd_grant gv;
    assert_int_equal(band_etcd_budget_try_acquire(bv, 5, &gv), 0);
    struct aop w;
    aop_init(&w);
    assert_int_equal(band_etcd_budget_acquire_async(ba, 5, &w.op), BAND_PENDING);
    assert_int_equal(band_etcd_revoke(g_a, gv.lease), 0);
    wait_woken(&w, 0);
    assert_true(poll_until(cond_lost, NULL, 10000));
    assert_int_equal(atomic_load(&g_lost_lease), gv.lease);
    assert_int_equal(band_etcd_revoke(g_a, gv.lease), BAND_ENOENT);
    assert_int_equal(band_etcd_budget_release(bv, &gv), BAND_ESTALE);
    assert_int_equal(band_etcd_budget_check_token(ba, gv.token), BAND_ESTALE);
    /* The victim goes on under a new lease. */
    band_etcd_stats st;
    assert_int_equal(band_etcd_get_stats(v, &st), 0);
    assert_int_equal(st.leases_lost, 1);
    assert_int_equal(band_etcd_budget_release(ba, &w.op.grant), 0);
    band_etcd_grant g2;
    int rc;
    band_time until = band_now() + 5 * BAND_SEC;
    while ((rc = band_etcd_budget_try_acquire(bv, 1, &g2)) == BAND_EUNAVAIL && band_now() < until)
        sleep_ms(20);
    assert_int_equal(rc, 0);
    assert_true(g2.lease != gv.lease);
    /* Revoking one's own lease gives everything back at once, told through on_lost. */
    atomic_store(&g_lost, 0);
    assert_int_equal(band_etcd_revoke(v, g2.lease), 0);
    assert_true(poll_until(cond_lost, NULL, 10000));
    assert_int_equal(atomic_load(&g_lost_lease), g2.lease);
    assert_int_equal(band_etcd_budget_release(bv, &g2), BAND_ESTALE);
    assert_int_equal(entries(ba), 0);
    assert_int_equal(band_etcd_budget_destroy(bv), 0);
    assert_int_equal(band_etcd_destroy(v), 0);
    assert_int_equal(band_etcd_budget_destroy(ba), 0);
}

/* The child of test_expiry: take every unit, say so, and wait to be stopped. */
static int hold_main(const char *endpoints, const char *name, uint64_t units)
{
    band_etcd_opts o = {0};
    o.lease_ttl = 2 * BAND_SEC;
    o.holder = "stalled";
    band_etcd *e = NULL;
    band_etcd_budget *b = NULL;
    band_etcd_grant g;
    if (band_etcd_create(&e, endpoints, &o) != 0 ||
        band_etcd_budget_create(&b, e, name, units) != 0 ||
        band_etcd_budget_acquire(b, units, &g, band_now() + 10 * BAND_SEC, NULL) != 0)
        return 1;
    printf("%lld\n", (long long)g.token);
    fflush(stdout);
    for (;;)
        pause();
}

static void test_expiry(void **state)
{
    (void)state;
    char name[64];
    unique_name(name, sizeof(name), "expiry");
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], 1);
        close(fds[0]);
        char units[8] = "3";
        execl("/proc/self/exe", "test_etcd", "--hold", g_endpoints, name, units, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    long long token = 0;
    int got = fscanf(f, "%lld", &token);
    fclose(f);
    if (got != 1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("the holder child did not acquire");
    }
    band_etcd_budget *b = open_budget(g_a, name, 3);
    assert_int_equal(band_etcd_budget_check_token(b, token), 0);
    /* Stopped, it renews nothing: the server ends its lease within its TTL. */
    band_time stopped = band_now();
    assert_int_equal(kill(pid, SIGSTOP), 0);
    band_etcd_grant g;
    int rc = band_etcd_budget_acquire(b, 3, &g, stopped + 6 * BAND_SEC, NULL);
    band_time took = band_now() - stopped;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(rc, 0);
    assert_true(took <= 3 * BAND_SEC); /* TTL 2 s + 1 s */
    assert_int_equal(band_etcd_budget_check_token(b, token), BAND_ESTALE);
    assert_true(g.token > token);
    assert_int_equal(band_etcd_budget_release(b, &g), 0);
    assert_int_equal(band_etcd_budget_destroy(b), 0);
}

static int cluster(const char *verb, int member)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' %s '%s' %d >/dev/null", BAND_ETCD_CLUSTER_SH, verb, g_dir,
             member);
    return system(cmd);
}

static int cluster_sig(const char *sig, int member)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' stopsig '%s' %d %s >/dev/null", BAND_ETCD_CLUSTER_SH, g_dir,
             member, sig);
    return system(cmd);
}

/* The member a waiter's watch is on stops answering but keeps its connections: the
 * client's next request times out there, moves on, and the watch follows it. */
static void test_stalled_member(void **state)
{
    (void)state;
    band_etcd_opts o = {0};
    o.request_timeout = 300 * MS;
    band_etcd *e = NULL, *h = NULL;
    assert_int_equal(band_etcd_create(&e, g_endpoints, &o), 0); /* m1 first */
    /* The holder talks to the others only. */
    const char *rest = strchr(g_endpoints, ',');
    assert_non_null(rest);
    assert_int_equal(band_etcd_create(&h, rest + 1, &o), 0);
    char name[64];
    unique_name(name, sizeof(name), "stalled");
    band_etcd_budget *be = open_budget(e, name, 1);
    band_etcd_budget *bh = open_budget(h, name, 1);
    band_etcd_grant g;
    assert_int_equal(band_etcd_budget_try_acquire(bh, 1, &g), 0);
    struct aop w;
    aop_init(&w);
    assert_int_equal(band_etcd_budget_acquire_async(be, 1, &w.op), BAND_PENDING);
    assert_int_equal(cluster_sig("STOP", 1), 0);
    int rc;
    band_time until = band_now() + 10 * BAND_SEC;
    while ((rc = band_etcd_budget_release(bh, &g)) == BAND_EUNAVAIL && band_now() < until)
        sleep_ms(50);
    bool granted = rc == 0 && poll_until(cond_woken, &w, 15000);
    assert_int_equal(cluster_sig("CONT", 1), 0);
    assert_int_equal(rc, 0);
    assert_true(granted);
    assert_int_equal(atomic_load(&w.status), 0);
    until = band_now() + 10 * BAND_SEC;
    while ((rc = band_etcd_budget_release(be, &w.op.grant)) == BAND_EUNAVAIL && band_now() < until)
        sleep_ms(50);
    assert_int_equal(rc, 0);
    assert_int_equal(band_etcd_budget_destroy(be), 0);
    assert_int_equal(band_etcd_budget_destroy(bh), 0);
    assert_int_equal(band_etcd_destroy(e), 0);
    assert_int_equal(band_etcd_destroy(h), 0);
}

/* The member a client talks to dies: the client goes on through the others. */
static void test_failover(void **state)
{
    (void)state;
    band_etcd_opts o = {0};
    o.request_timeout = 500 * MS;
    band_etcd *e = NULL;
    assert_int_equal(band_etcd_create(&e, g_endpoints, &o), 0); /* talks to m1 first */
    char name[64];
    unique_name(name, sizeof(name), "failover");
    band_etcd_budget *b = open_budget(e, name, 2);
    band_etcd_budget *ba = open_budget(g_a, name, 2);
    band_etcd_grant g;
    assert_int_equal(band_etcd_budget_try_acquire(b, 2, &g), 0);
    struct aop w;
    aop_init(&w);
    assert_int_equal(band_etcd_budget_acquire_async(ba, 1, &w.op), BAND_PENDING);
    assert_int_equal(cluster("kill", 1), 0);
    /* Its release must reach the cluster through another member (an election may be in
     * progress: allow it a few seconds). */
    int rc;
    band_time until = band_now() + 10 * BAND_SEC;
    while ((rc = band_etcd_budget_release(b, &g)) == BAND_EUNAVAIL && band_now() < until)
        sleep_ms(50);
    if (rc != 0) { /* say what the client saw before failing */
        band_etcd_stats st;
        band_etcd_get_stats(e, &st);
        fprintf(stderr,
                "failover: release %d, lease %lld (grant's %lld), lost %llu, failovers %llu\n", rc,
                (long long)st.lease, (long long)g.lease, (unsigned long long)st.leases_lost,
                (unsigned long long)st.failovers);
    }
    assert_int_equal(rc, 0);
    wait_woken(&w, 0);
    assert_int_equal(band_etcd_budget_release(ba, &w.op.grant), 0);
    for (int i = 0; i < 20; i++) {
        until = band_now() + 10 * BAND_SEC;
        while ((rc = band_etcd_budget_try_acquire(b, 1, &g)) == BAND_EUNAVAIL && band_now() < until)
            sleep_ms(50);
        assert_int_equal(rc, 0);
        assert_int_equal(band_etcd_budget_release(b, &g), 0);
    }
    band_etcd_stats st;
    assert_int_equal(band_etcd_get_stats(e, &st), 0);
    assert_true(st.failovers >= 1);
    assert_int_equal(band_etcd_budget_destroy(b), 0);
    assert_int_equal(band_etcd_destroy(e), 0);
    assert_int_equal(band_etcd_budget_destroy(ba), 0);
    assert_int_equal(cluster("restart", 1), 0);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Several clients and threads contend: the units held never exceed the capacity and no
 * two grants share a token. */
enum { C_THREADS = 6, C_ROUNDS = 12, C_CAP = 5 };
struct contender {
    band_etcd_budget *b;
    uint64_t seed;
    int64_t tokens[C_ROUNDS];
    int n;
};
static atomic_int g_held, g_max_held;

static int contend(void *arg)
{
    struct contender *c = arg;
    for (int i = 0; i < C_ROUNDS; i++) {
        uint64_t units = test_rng_range(&c->seed, 1, 3);
        band_etcd_grant g;
        int rc = band_etcd_budget_acquire(c->b, units, &g, band_now() + 20 * BAND_SEC, NULL);
        if (rc != 0)
            return rc;
        int held = atomic_fetch_add(&g_held, (int)units) + (int)units;
        int max = atomic_load(&g_max_held);
        while (held > max && !atomic_compare_exchange_weak(&g_max_held, &max, held))
            ;
        c->tokens[c->n++] = g.token;
        sleep_ms(3); /* hold it a little: the others queue */
        atomic_fetch_sub(&g_held, (int)units);
        rc = band_etcd_budget_release(c->b, &g);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static void test_contention(void **state)
{
    (void)state;
    band_etcd *third = NULL;
    assert_int_equal(band_etcd_create(&third, g_endpoints, NULL), 0);
    band_etcd *clients[3] = {g_a, g_b, third};
    char name[64];
    unique_name(name, sizeof(name), "contend");
    band_etcd_budget *b[3];
    for (int i = 0; i < 3; i++)
        b[i] = open_budget(clients[i], name, C_CAP);
    static struct contender c[C_THREADS];
    struct test_thread th[C_THREADS];
    atomic_store(&g_held, 0);
    atomic_store(&g_max_held, 0);
    for (int i = 0; i < C_THREADS; i++) {
        memset(&c[i], 0, sizeof(c[i]));
        c[i].b = b[i % 3];
        c[i].seed = (uint64_t)i + 1;
        assert_int_equal(test_thread_start(&th[i], contend, &c[i]), 0);
    }
    for (int i = 0; i < C_THREADS; i++)
        assert_int_equal(test_thread_join(&th[i]), 0);
    assert_true(atomic_load(&g_max_held) <= C_CAP);
    uint64_t txns = 0;
    for (int i = 0; i < 3; i++) {
        band_etcd_stats st;
        assert_int_equal(band_etcd_get_stats(clients[i], &st), 0);
        txns += st.txns;
    }
    printf("contention: %d grants, %llu transactions, at most %d of %d units held\n",
           C_THREADS * C_ROUNDS, (unsigned long long)txns, atomic_load(&g_max_held), C_CAP);
    static int64_t all[C_THREADS * C_ROUNDS];
    int n = 0;
    for (int i = 0; i < C_THREADS; i++)
        for (int k = 0; k < c[i].n; k++)
            all[n++] = c[i].tokens[k];
    assert_int_equal(n, C_THREADS * C_ROUNDS);
    qsort(all, (size_t)n, sizeof(all[0]), cmp_i64);
    for (int i = 1; i < n; i++)
        assert_true(all[i] > all[i - 1]);
    assert_int_equal(entries(b[0]), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(band_etcd_budget_destroy(b[i]), 0);
    assert_int_equal(band_etcd_destroy(third), 0);
}

static band_etcd *g_watched;
static uint64_t g_want_watches;

static bool cond_watches(void *arg)
{
    (void)arg;
    band_etcd_stats st;
    return band_etcd_get_stats(g_watched, &st) == 0 && st.watches == g_want_watches;
}

static void wait_watches(band_etcd *e, uint64_t n, long ms)
{
    g_watched = e;
    g_want_watches = n;
    assert_true(poll_until(cond_watches, NULL, ms));
}

/* A budget is watched while a request of the client waits in it, and for a while after
 * another client was seen in it; a client alone on a budget opens no watch. */
static void test_watch_on_demand(void **state)
{
    (void)state;
    char name[64];
    unique_name(name, sizeof(name), "ondemand");
    band_etcd_budget *ba = open_budget(g_a, name, 1);
    band_etcd_budget *bb = open_budget(g_b, name, 1);
    band_etcd_grant held, g;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(band_etcd_budget_try_acquire(ba, 1, &held), 0);
        assert_int_equal(band_etcd_budget_release(ba, &held), 0);
    }
    assert_int_equal(band_etcd_budget_try_acquire(ba, 1, &held), 0);
    band_etcd_stats st;
    assert_int_equal(band_etcd_get_stats(g_a, &st), 0);
    assert_int_equal(st.watches, 0);

    struct aop w;
    aop_init(&w);
    assert_int_equal(band_etcd_budget_acquire_async(bb, 1, &w.op), BAND_PENDING);
    wait_watches(g_b, 1, 3000); /* the waiter's */
    /* a's refusal shows it another user: a watches too, from then on. */
    assert_int_equal(band_etcd_budget_try_acquire(ba, 1, &g), BAND_EAGAIN);
    wait_watches(g_a, 1, 3000);
    assert_int_equal(band_etcd_budget_release(ba, &held), 0);
    wait_woken(&w, 0);
    assert_true(w.op.grant.token > held.token);
    assert_int_equal(band_etcd_budget_release(bb, &w.op.grant), 0);
    assert_int_equal(entries(ba), 0);
    /* Nothing waits and nobody else shows up: both watches close after the linger. */
    wait_watches(g_a, 0, 9000);
    wait_watches(g_b, 0, 9000);
    assert_int_equal(band_etcd_budget_destroy(ba), 0);
    assert_int_equal(band_etcd_budget_destroy(bb), 0);
}

/* A client alone on a budget of 1: every acquisition right after its own release is one
 * transaction, since the release enters the view at once (no watch event awaited), and
 * every release is one deletion. Also prints the figures docs/etcd.md quotes. */
static void test_latency(void **state)
{
    (void)state;
    enum { N = 300 };
    static int64_t acq[N], bare[N];
    char name[64];
    unique_name(name, sizeof(name), "latency");
    band_etcd_budget *b = open_budget(g_a, name, 1);
    band_etcd_grant g;
    band_etcd_stats s0, st;
    assert_int_equal(band_etcd_get_stats(g_a, &s0), 0);
    for (int i = 0; i < N; i++) {
        band_time t = band_now();
        assert_int_equal(band_etcd_budget_try_acquire(b, 1, &g), 0);
        assert_int_equal(band_etcd_budget_release(b, &g), 0);
        acq[i] = band_now() - t;
    }
    for (int i = 0; i < N; i++) {
        band_time t = band_now();
        assert_int_equal(band_etcd_budget_set_capacity(b, 1), 0); /* one put txn */
        bare[i] = band_now() - t;
    }
    assert_int_equal(band_etcd_get_stats(g_a, &st), 0);
    assert_int_equal(st.txns - s0.txns, 2 * N);
    assert_int_equal(st.watches, 0); /* alone on it: never watched */
    /* HTTP requests: the transactions, the deletions, and nothing else but renewals and
     * attempts tried again elsewhere. */
    assert_int_equal((st.requests - s0.requests) - (st.keepalives - s0.keepalives) -
                         (st.failovers - s0.failovers),
                     3 * N);
    qsort(acq, N, sizeof(acq[0]), cmp_i64);
    qsort(bare, N, sizeof(bare[0]), cmp_i64);
    printf("latency: try_acquire+release median %.3f ms (p90 %.3f), one put txn median %.3f ms "
           "(p90 %.3f), %d rounds on 3 members\n",
           (double)acq[N / 2] / 1e6, (double)acq[N * 9 / 10] / 1e6, (double)bare[N / 2] / 1e6,
           (double)bare[N * 9 / 10] / 1e6, N);
    assert_int_equal(band_etcd_budget_destroy(b), 0);
}

/* ---- the cluster ------------------------------------------------------------------ */

static int start_cluster(void)
{
    const char *eps = getenv("BAND_ETCD_ENDPOINTS");
    const char *dir = getenv("BAND_ETCD_CLUSTER_DIR");
    if (eps && dir) {
        snprintf(g_endpoints, sizeof(g_endpoints), "%s", eps);
        snprintf(g_dir, sizeof(g_dir), "%s", dir);
        return 0;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof(g_dir), "%s/band-etcd-test.%ld", tmp ? tmp : "/tmp", (long)getpid());
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "'%s' start '%s' %ld", BAND_ETCD_CLUSTER_SH, g_dir, (long)getpid());
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    int ok = fgets(g_endpoints, sizeof(g_endpoints), p) != NULL;
    if (pclose(p) != 0 || !ok)
        return -1;
    g_endpoints[strcspn(g_endpoints, "\n")] = '\0';
    g_own_cluster = 1;
    return 0;
}

static void stop_cluster(void)
{
    if (!g_own_cluster)
        return;
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "'%s' stop '%s'", BAND_ETCD_CLUSTER_SH, g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_etcd: stopping the cluster failed\n");
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 5 && strcmp(argv[1], "--hold") == 0)
        return hold_main(argv[2], argv[3], strtoull(argv[4], NULL, 10));
    if (start_cluster() != 0) {
        fprintf(stderr, "test_etcd: could not start an etcd cluster\n");
        return 1;
    }
    if (getenv("BAND_ETCD_TEST_FILTER"))
        cmocka_set_test_filter(getenv("BAND_ETCD_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_acquire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fencing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_debt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revoke, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_contention, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_on_demand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latency, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stalled_member, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failover, setup, teardown),
    };
    int rc = cmocka_run_group_tests_name("etcd", tests, NULL, NULL);
    stop_cluster();
    return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * test_fd_prims.c - every band primitive is waited for in an epoll loop through the one
 * generic bridge (band_fd_queue_bind / band_fd_queue_start), with no per-primitive code in the
 * queue.
 *
 * For each case of adapters/common/tests/prim_cases.c (sem, budget, chan send / recv /
 * reserve, oneshot, watch, broadcast send / recv, group, latch, token, fair, admission)
 * the same scenarios run, each on a fresh queue:
 *   ready       the _async call completes at once: reaped once, status 0;
 *   thread      another thread completes the wait: reaped after the eventfd woke epoll;
 *   deadline    BAND_ETIMEDOUT, never before the deadline, the op left the queue;
 *   past        a deadline already past: withdrawn at once, BAND_ETIMEDOUT;
 *   cancel      band_fd_queue_cancel() returns 0, then BAND_EALREADY; status BAND_ECANCELED;
 *   token       a cancellation token requested from another thread: BAND_ECANCELED,
 *               and the token can be destroyed after the reap (its hook is gone);
 *   requested   a token requested before the start: BAND_ECANCELED without waiting;
 *   close       the primitive's own close ends the wait with its status (BAND_ECLOSED);
 *   wins        a completion before the cancel wins: BAND_EALREADY, status 0;
 *   queue_close band_fd_queue_close() with the op waiting: withdrawn inside close, reaped
 *               once with BAND_ECANCELED; destroy refuses until then, and frees after.
 * After every report the case checks the primitive: status 0 means the result is in the
 * primitive's own op (and is given back), any other status that nothing was delivered or
 * held, and nothing is left queued.
 */
#include "fd_test_util.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prim_cases.h"

struct harness {
    band_fd_queue *q;
    int ep;
    band_fd_queue_op op;
    band_fd_queue_op *got[2];
    band_time at; /* when the op was reaped */
};

static void h_open(struct harness *h)
{
    memset(h, 0, sizeof(*h));
    assert_int_equal(band_fd_queue_create(&h->q), 0);
    h->ep = fdt_epoll_open(h->q, 0);
    assert_true(h->ep >= 0);
    band_fd_queue_op_init(&h->op, h);
}

/* Wait (up to 5 s) for the op to be reaped, then check nothing else is. */
static void h_collect(struct harness *h)
{
    size_t n = fdt_epoll_collect(h->ep, h->q, h->got, 1, 1, 5 * BAND_SEC, NULL);
    h->at = band_now();
    assert_int_equal(n, 1);
    assert_ptr_equal(h->got[0], &h->op);
    assert_int_equal(band_fd_queue_reap(h->q, h->got, 2), 0);
    assert_int_equal(fdt_readable(band_fd_queue_fd(h->q)), 0);
    assert_int_equal(band_fd_queue_count(h->q), 0);
}

static void h_close(struct harness *h)
{
    if (h->q != NULL)
        assert_int_equal(band_fd_queue_destroy(h->q), 0);
    close(h->ep);
}

/* Open case @ops (waiting unless @ready), bind its waiter with @deadline and @token,
 * submit and start. */
static void begin(struct harness *h, struct pcase *c, const struct pcase_ops *ops, int ready,
                  band_time deadline, band_cancel *token)
{
    if (pcase_open(c, ops, ready) != 0)
        fail_msg("%s", c->err);
    band_waiter *w = ops->prepare(c);
    assert_non_null(w);
    assert_int_equal(band_fd_queue_bind(h->q, &h->op, w, deadline, token), 0);
    int rc = ops->submit(c);
    assert_int_equal(rc, ready ? 0 : BAND_PENDING);
    assert_int_equal(band_fd_queue_start(&h->op, rc), 0);
    assert_int_equal(h->op.status, BAND_PENDING);
}

/* The op was handed back with @status, and the case agrees. */
static void end(struct harness *h, struct pcase *c, int status)
{
    if (h->op.status != status)
        fail_msg("%s: status %s, want %s", c->ops->name, band_err_name(h->op.status),
                 band_err_name(status));
    if (pcase_check(c, status) != 0)
        fail_msg("%s", c->err);
    assert_int_equal(band_fd_queue_cancel(&h->op), BAND_EINVAL); /* handed back: idle */
    pcase_close(c);
}

struct completer {
    struct pcase *c;
    band_cancel *token; /* request it instead of completing */
};

static int completer_main(void *arg)
{
    struct completer *k = arg;
    struct timespec ts = {0, 1000000}; /* let the owner go to sleep in epoll_wait first */
    nanosleep(&ts, NULL);
    if (k->token != NULL)
        return band_cancel_request(k->token);
    return k->c->ops->complete(k->c);
}

static void sc_ready(const struct pcase_ops *ops)
{
    struct harness h;
    struct pcase c;
    h_open(&h);
    begin(&h, &c, ops, 1, BAND_FOREVER, NULL);
    assert_int_equal(band_fd_queue_cancel(&h.op), BAND_EALREADY); /* completed, not yet reaped */
    h_collect(&h);
    end(&h, &c, 0);
    h_close(&h);
}

static void sc_thread(const struct pcase_ops *ops)
{
    struct harness h;
    struct pcase c;
    h_open(&h);
    begin(&h, &c, ops, 0, BAND_FOREVER, NULL);
    assert_int_equal(fdt_readable(band_fd_queue_fd(h.q)), 0);
    struct completer k = {&c, NULL};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, completer_main, &k), 0);
    h_collect(&h);
    assert_int_equal(test_thread_join(&t), 0);
    end(&h, &c, 0);
    h_close(&h);
}

static void sc_deadline(const struct pcase_ops *ops)
{
    struct harness h;
    struct pcase c;
    h_open(&h);
    band_time deadline = band_now() + 15 * BAND_MSEC;
    begin(&h, &c, ops, 0, deadline, NULL);
    assert_int_equal(band_fd_queue_next_deadline(h.q), deadline);
    h_collect(&h);
    assert_true(h.at >= deadline); /* never early */
    end(&h, &c, BAND_ETIMEDOUT);
    h_close(&h);
}

static void sc_past(const struct pcase_ops *ops)
{
    struct harness h;
    struct pcase c;
    h_open(&h);
    begin(&h, &c, ops, 0, band_now() - 1, NULL);
    assert_int_equal(ops->waiting(&c), 0); /* withdrawn inside start */
    assert_int_equal(band_fd_queue_next_deadline(h.q), BAND_FOREVER);
    h_collect(&h);
    end(&h, &c, BAND_ETIMEDOUT);
    h_close(&h);
}

static void sc_cancel(const struct pcase_ops *ops)
{
    struct harness h;
    struct pcase c;
    band_cancel *token; /* never requested: its hook must be removed all the same */
    assert_int_equal(band_cancel_create(&token, NULL), 0);
    h_open(&h);
    begin(&h, &c, ops, 0, band_now() + 60 * BAND_SEC, token);
    assert_true(ops->waiting(&c) > 0); /* queued (an admission in each of its budgets) */
    assert_int_equal(band_fd_queue_cancel(&h.op), 0);
    assert_int_equal(band_fd_queue_cancel(&h.op), BAND_EALREADY);
    assert_int_equal(ops->waiting(&c), 0); /* left the queue before the cancel returned */
    assert_int_equal(band_fd_queue_next_deadline(h.q), BAND_FOREVER);
    h_collect(&h);
    end(&h, &c, BAND_ECANCELED);
    assert_int_equal(band_cancel_destroy(token), 0); /* EBUSY if the hook were left */
    h_close(&h);
}

static void sc_token(const struct pcase_ops *ops)
{
    struct harness h;
    struct pcase c;
    band_cancel *token;
    assert_int_equal(band_cancel_create(&token, NULL), 0);
    h_open(&h);
    begin(&h, &c, ops, 0, BAND_FOREVER, token);
    assert_int_equal(band_cancel_destroy(token), BAND_EBUSY); /* the queue's hook */
    struct completer k = {&c, token};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, completer_main, &k), 0);
    h_collect(&h); /* woken by the hook's eventfd write */
    assert_int_equal(test_thread_join(&t), 0);
    end(&h, &c, BAND_ECANCELED);
    assert_int_equal(band_cancel_destroy(token), 0); /* the hook was removed */
    h_close(&h);
}

static void sc_requested(const struct pcase_ops *ops)
{
    struct harness h;
    struct pcase c;
    band_cancel *parent, *token;
    assert_int_equal(band_cancel_create(&parent, NULL), 0);
    band_cancel_opts o = {.parent = parent};
    assert_int_equal(band_cancel_create(&token, &o), 0);
    assert_int_equal(band_cancel_request(parent), 0); /* the child is requested with it */
    h_open(&h);
    begin(&h, &c, ops, 0, BAND_FOREVER, token);
    assert_int_equal(ops->waiting(&c), 0); /* withdrawn inside start */
    h_collect(&h);
    end(&h, &c, BAND_ECANCELED);
    assert_int_equal(band_cancel_destroy(token), 0);
    assert_int_equal(band_cancel_destroy(parent), 0);
    h_close(&h);
}

static void sc_close(const struct pcase_ops *ops)
{
    if (ops->close == NULL)
        return;
    struct harness h;
    struct pcase c;
    h_open(&h);
    begin(&h, &c, ops, 0, band_now() + 60 * BAND_SEC, NULL);
    assert_int_equal(ops->close(&c), 0); /* the wake runs here, on the owner thread */
    assert_int_equal(fdt_readable(band_fd_queue_fd(h.q)), 1);
    h_collect(&h);
    end(&h, &c, ops->close_status);
    h_close(&h);
}

static void sc_wins(const struct pcase_ops *ops)
{
    struct harness h;
    struct pcase c;
    band_cancel *token;
    assert_int_equal(band_cancel_create(&token, NULL), 0);
    h_open(&h);
    begin(&h, &c, ops, 0, band_now() + 60 * BAND_SEC, token);
    assert_int_equal(ops->complete(&c), 0); /* completes it: the wake pushes the op */
    assert_int_equal(band_fd_queue_cancel(&h.op), BAND_EALREADY);
    assert_int_equal(band_cancel_request(token), 0); /* too late as well */
    h_collect(&h);
    end(&h, &c, 0);
    assert_int_equal(band_cancel_destroy(token), 0);
    h_close(&h);
}

static void sc_queue_close(const struct pcase_ops *ops)
{
    struct harness h;
    struct pcase c;
    band_cancel *token;
    assert_int_equal(band_cancel_create(&token, NULL), 0);
    h_open(&h);
    begin(&h, &c, ops, 0, band_now() + 60 * BAND_SEC, token);
    assert_int_equal(band_fd_queue_destroy(h.q), BAND_EBUSY);
    assert_int_equal(band_fd_queue_close(h.q), 0);
    assert_int_equal(ops->waiting(&c), 0); /* withdrawn inside close */
    assert_int_equal(h.op.status, BAND_PENDING);
    assert_int_equal(band_fd_queue_destroy(h.q), BAND_EBUSY); /* not reaped yet */
    h_collect(&h);
    assert_int_equal(h.op.status, BAND_ECANCELED);
    if (pcase_check(&c, BAND_ECANCELED) != 0)
        fail_msg("%s", c.err);
    pcase_close(&c);
    assert_int_equal(band_cancel_destroy(token), 0); /* reap removed the hook */
    h_close(&h);
}

static void test_case(void **state)
{
    const struct pcase_ops *ops = *state;
    sc_ready(ops);
    sc_thread(ops);
    sc_deadline(ops);
    sc_past(ops);
    sc_cancel(ops);
    sc_token(ops);
    sc_requested(ops);
    sc_close(ops);
    sc_wins(ops);
    sc_queue_close(ops);
}

int main(void)
{
    struct CMUnitTest tests[32];
    if (pcase_count > TEST_COUNTOF(tests))
        return 1;
    for (size_t i = 0; i < pcase_count; i++) {
        memset(&tests[i], 0, sizeof(tests[i]));
        tests[i].name = pcase_all[i]->name;
        tests[i].test_func = test_case;
        tests[i].initial_state = (void *)(uintptr_t)pcase_all[i];
    }
    return _cmocka_run_group_tests("fd_prims", tests, pcase_count, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * test_uv_prims.c - every band primitive completes on a libuv loop through the one
 * generic bridge (band_uv_bind / band_uv_start), with no per-primitive code in the
 * adapter.
 *
 * For each case of adapters/common/tests/prim_cases.c (sem, budget, chan send / recv /
 * reserve, oneshot, watch, broadcast send / recv, group, latch, token, fair, admission)
 * the same scenarios run, each on a fresh loop and adapter:
 *   ready       the _async call completes at once: one callback, later, status 0;
 *   thread      another thread completes the wait: status 0 on the loop thread;
 *   deadline    BAND_ETIMEDOUT, never before the deadline, the op left the queue;
 *   past        a deadline already past: withdrawn at once, BAND_ETIMEDOUT;
 *   cancel      band_uv_cancel() returns 0, then BAND_EALREADY; status BAND_ECANCELED;
 *   token       a cancellation token requested from another thread: BAND_ECANCELED,
 *               and the token can be destroyed after the callback (its hook is gone);
 *   requested   a token requested before the start: BAND_ECANCELED without waiting;
 *   close       the primitive's own close ends the wait with its status (BAND_ECLOSED);
 *   wins        a completion before the cancel wins: BAND_EALREADY, status 0;
 *   adapter     band_uv_close() with the op waiting: BAND_ECANCELED, on_closed after it.
 * After every callback the case checks the primitive: status 0 means the result is in
 * the primitive's own op (and is given back), any other status that nothing was
 * delivered or held, and nothing is left queued.
 */
#include "test.h"

#include <string.h>
#include <time.h>

#include "band/uv.h"
#include "prim_cases.h"

#define GUARD_MS 10000

struct harness {
    uv_loop_t loop;
    uv_timer_t guard;
    int hung;
    band_uv *u;
    band_uv_op op;
    pthread_t loop_thread;
    int calls, status, on_loop, closed;
    band_uv *dying; /* the adapter being closed: on_closed destroys it */
    int destroy_rc; /* what band_uv_destroy() answered there */
    band_time at;
};

static void guard_cb(uv_timer_t *t)
{
    struct harness *h = t->data;
    h->hung = 1;
    uv_stop(&h->loop);
}

static void on_done(band_uv_op *op, int status)
{
    struct harness *h = op->data;
    h->calls++;
    h->status = status;
    h->on_loop = pthread_equal(pthread_self(), h->loop_thread);
    h->at = band_now();
}

static void on_closed(void *data)
{
    struct harness *h = data;
    h->closed++;
    h->destroy_rc = band_uv_destroy(h->dying); /* the close completed: free it */
    h->dying = NULL;
}

static void h_close_uv(struct harness *h)
{
    h->dying = h->u;
    h->destroy_rc = -1;
    assert_int_equal(band_uv_close(h->u, on_closed, h), 0);
}

static void h_open(struct harness *h)
{
    memset(h, 0, sizeof(*h));
    assert_int_equal(uv_loop_init(&h->loop), 0);
    uv_timer_init(&h->loop, &h->guard);
    h->guard.data = h;
    uv_timer_start(&h->guard, guard_cb, GUARD_MS, 0);
    uv_unref((uv_handle_t *)&h->guard);
    h->loop_thread = pthread_self();
    assert_int_equal(band_uv_create(&h->u, &h->loop), 0);
    h->op.data = h;
    h->status = 12345;
}

static void h_run(struct harness *h)
{
    uv_run(&h->loop, UV_RUN_DEFAULT);
    assert_false(h->hung);
}

static void h_close(struct harness *h)
{
    if (h->u != NULL) {
        h_close_uv(h);
        h_run(h);
        assert_int_equal(h->closed, 1);
        assert_int_equal(h->destroy_rc, 0);
    }
    uv_close((uv_handle_t *)&h->guard, NULL);
    uv_run(&h->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&h->loop), 0);
}

static void check_case(struct pcase *c, int status)
{
    if (pcase_check(c, status) != 0)
        fail_msg("%s", c->err);
}

/* Open case @ops (waiting unless @ready), bind its waiter with @deadline and @token, submit
 * and start. Returns the submission's answer. */
static int begin(struct harness *h, struct pcase *c, const struct pcase_ops *ops, int ready,
                 band_time deadline, band_cancel *token)
{
    if (pcase_open(c, ops, ready) != 0)
        fail_msg("%s", c->err);
    band_waiter *w = ops->prepare(c);
    assert_non_null(w);
    assert_int_equal(band_uv_bind(h->u, &h->op, w, on_done, deadline, token), 0);
    int rc = ops->submit(c);
    assert_int_equal(rc, ready ? 0 : BAND_PENDING);
    assert_int_equal(band_uv_start(&h->op, rc), 0);
    assert_int_equal(h->calls, 0); /* never from inside bind, submit or start */
    return rc;
}

/* The callback ran once on the loop thread with @status, and the case agrees. */
static void end(struct harness *h, struct pcase *c, int status)
{
    assert_int_equal(h->calls, 1);
    if (h->status != status)
        fail_msg("%s: status %s, want %s", c->ops->name, band_err_name(h->status),
                 band_err_name(status));
    assert_true(h->on_loop);
    check_case(c, status);
    assert_int_equal(band_uv_cancel(&h->op), BAND_EINVAL); /* delivered: idle */
    pcase_close(c);
}

struct completer {
    struct pcase *c;
    band_cancel *token; /* request it instead of completing */
};

static int completer_main(void *arg)
{
    struct completer *k = arg;
    struct timespec ts = {0, 1000000}; /* let the loop go to sleep first */
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
    assert_int_equal(band_uv_cancel(&h.op), BAND_EALREADY); /* completed, not yet called */
    h_run(&h);
    end(&h, &c, 0);
    h_close(&h);
}

static void sc_thread(const struct pcase_ops *ops)
{
    struct harness h;
    struct pcase c;
    h_open(&h);
    begin(&h, &c, ops, 0, BAND_FOREVER, NULL);
    struct completer k = {&c, NULL};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, completer_main, &k), 0);
    h_run(&h); /* stays in the loop until the callback ran */
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
    h_run(&h);
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
    h_run(&h);
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
    assert_int_equal(band_uv_cancel(&h.op), 0);
    assert_int_equal(band_uv_cancel(&h.op), BAND_EALREADY);
    assert_int_equal(ops->waiting(&c), 0); /* left the queue before the cancel returned */
    assert_int_equal(h.calls, 0);
    h_run(&h);
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
    assert_int_equal(band_cancel_destroy(token), BAND_EBUSY); /* the adapter's hook */
    struct completer k = {&c, token};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, completer_main, &k), 0);
    h_run(&h);
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
    h_run(&h);
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
    assert_int_equal(ops->close(&c), 0); /* the wake runs here, on the loop thread */
    assert_int_equal(h.calls, 0);
    h_run(&h);
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
    assert_int_equal(band_uv_cancel(&h.op), BAND_EALREADY);
    assert_int_equal(band_cancel_request(token), 0); /* too late as well */
    h_run(&h);
    end(&h, &c, 0);
    assert_int_equal(band_cancel_destroy(token), 0);
    h_close(&h);
}

static void sc_adapter_close(const struct pcase_ops *ops)
{
    struct harness h;
    struct pcase c;
    h_open(&h);
    begin(&h, &c, ops, 0, band_now() + 60 * BAND_SEC, NULL);
    h_close_uv(&h);
    assert_int_equal(ops->waiting(&c), 0); /* withdrawn inside close */
    assert_int_equal(h.calls, 0);
    h.u = NULL;
    h_run(&h);
    assert_int_equal(h.closed, 1); /* after the callback */
    assert_int_equal(h.destroy_rc, 0);
    end(&h, &c, BAND_ECANCELED);
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
    sc_adapter_close(ops);
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
    return _cmocka_run_group_tests("uv_prims", tests, pcase_count, NULL, NULL);
}

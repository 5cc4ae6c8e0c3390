/* SPDX-License-Identifier: MIT */
/*
 * test_shm_uv.c - an asynchronous shm acquisition completes through libband-uv: the
 * waiter is bound to a band_uv adapter on a real loop, another process releases the
 * units, and the callback runs on the loop thread with status 0 and the units held; the
 * callback then closes the adapter and the loop ends with nothing left open.
 */
#define _GNU_SOURCE

#include "test.h"

#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "band/shm.h"
#include "band/uv.h"

static const band_shm_bound bound = {"conns", 2, BAND_SHM_UNITS};

struct ctx {
    band_uv *u;
    band_shm *s;
    int calls, status;
    uint64_t held_in_cb;
    int closed;
};

static void on_closed(void *data)
{
    struct ctx *c = data;
    c->closed = band_uv_destroy(c->u) == 0;
}

static void on_done(band_uv_op *op, int status)
{
    struct ctx *c = op->data;
    c->calls++;
    c->status = status;
    c->held_in_cb = band_shm_held(c->s, 0);
    (void)band_uv_close(c->u, on_closed, c);
}

static void test_shm_through_uv(void **state)
{
    (void)state;
    band_shm *s = NULL;
    assert_int_equal(band_shm_create(&s, NULL, &bound, 1, NULL), 0);
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        band_shm *c = NULL;
        char x = 'n';
        if (band_shm_open_fd(&c, band_shm_fd(s), NULL) == 0 && band_shm_try_acquire(c, 0, 2) == 0)
            x = 'y';
        if (write(ready[1], &x, 1) != 1 || read(go[0], &x, 1) != 1)
            _exit(2);
        _exit(band_shm_release(c, 0, 2) == 0 && band_shm_destroy(c) == 0 ? 0 : 3);
    }
    char x = 0;
    assert_int_equal(read(ready[0], &x, 1), 1);
    assert_int_equal(x, 'y');

    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct ctx c = {.s = s};
    assert_int_equal(band_uv_create(&c.u, &loop), 0);
    band_uv_op op = {0};
    op.data = &c;
    band_waiter w;
    band_waiter_init(&w, NULL, NULL);
    assert_int_equal(band_uv_bind(c.u, &op, &w, on_done, band_deadline_after(10 * BAND_SEC), NULL),
                     0);
    int rc = band_shm_acquire_async(s, 0, 2, &w);
    assert_int_equal(rc, BAND_PENDING);
    assert_int_equal(band_uv_start(&op, rc), 0);
    assert_int_equal(write(go[1], "g", 1), 1);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.status, 0);
    assert_u64_equal(c.held_in_cb, 2);
    assert_int_equal(c.closed, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
    int st = 0;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(band_shm_release(s, 0, 2), 0);
    assert_int_equal(band_shm_destroy(s), 0);
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    close(go[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shm_through_uv),
    };
    return cmocka_run_group_tests_name("test_shm_uv", tests, NULL, NULL);
}

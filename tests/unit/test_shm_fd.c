/* SPDX-License-Identifier: MIT */
/*
 * test_shm_fd.c - an asynchronous shm acquisition completes through libband-fd: the
 * waiter is bound to a band_fd_queue, the units are released by another process, the
 * grant reaches this handle's doorbell thread and the queue's eventfd, and
 * band_fd_queue_reap() reports the op with status 0, the units held. A second op is
 * withdrawn at its deadline through the queue (BAND_ETIMEDOUT, nothing held).
 */
#define _GNU_SOURCE

#include "test.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "band/fd.h"
#include "band/shm.h"

static const band_shm_bound bound = {"conns", 2, BAND_SHM_UNITS};

/* The child holds both units until it reads a byte, then releases them. */
static void child(int fd, int ready, int go)
{
    band_shm *c = NULL;
    char x = 'n';
    if (band_shm_open_fd(&c, fd, NULL) == 0 && band_shm_try_acquire(c, 0, 2) == 0)
        x = 'y';
    if (write(ready, &x, 1) != 1 || read(go, &x, 1) != 1)
        _exit(2);
    _exit(band_shm_release(c, 0, 2) == 0 && band_shm_destroy(c) == 0 ? 0 : 3);
}

static band_fd_queue_op *reap_one(band_fd_queue *q)
{
    band_fd_queue_op *got = NULL;
    band_time end = band_now() + 5 * BAND_SEC;
    while (got == NULL && band_now() < end) {
        struct pollfd p = {.fd = band_fd_queue_fd(q), .events = POLLIN};
        int ms = band_fd_queue_timeout_ms(q);
        (void)poll(&p, 1, ms < 0 || ms > 100 ? 100 : ms);
        if (band_fd_queue_reap(q, &got, 1) == 0)
            got = NULL;
    }
    return got;
}

static void test_shm_through_fd(void **state)
{
    (void)state;
    band_shm *s = NULL;
    assert_int_equal(band_shm_create(&s, NULL, &bound, 1, NULL), 0);
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0)
        child(band_shm_fd(s), ready[1], go[0]);
    char x = 0;
    assert_int_equal(read(ready[0], &x, 1), 1);
    assert_int_equal(x, 'y');

    band_fd_queue *q = NULL;
    assert_int_equal(band_fd_queue_create(&q), 0);
    band_fd_queue_op op, op2;
    band_fd_queue_op_init(&op, NULL);
    band_fd_queue_op_init(&op2, NULL);
    band_waiter w, w2;
    band_waiter_init(&w, NULL, NULL);
    band_waiter_init(&w2, NULL, NULL);

    /* Withdrawn at its deadline by the queue. */
    assert_int_equal(band_fd_queue_bind(q, &op2, &w2, band_deadline_after(20 * BAND_MSEC), NULL),
                     0);
    assert_int_equal(band_fd_queue_start(&op2, band_shm_acquire_async(s, 0, 1, &w2)), 0);
    assert_ptr_equal(reap_one(q), &op2);
    assert_int_equal(op2.status, BAND_ETIMEDOUT);
    assert_u64_equal(band_shm_held(s, 0), 0);

    /* Granted by another process's release. */
    assert_int_equal(band_fd_queue_bind(q, &op, &w, BAND_FOREVER, NULL), 0);
    int rc = band_shm_acquire_async(s, 0, 2, &w);
    assert_int_equal(rc, BAND_PENDING);
    assert_int_equal(band_fd_queue_start(&op, rc), 0);
    assert_int_equal(write(go[1], "g", 1), 1);
    assert_ptr_equal(reap_one(q), &op);
    assert_int_equal(op.status, 0);
    assert_u64_equal(band_shm_held(s, 0), 2);
    int st = 0;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    assert_int_equal(band_fd_queue_close(q), 0);
    assert_int_equal(band_fd_queue_destroy(q), 0);
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
        cmocka_unit_test(test_shm_through_fd),
    };
    return cmocka_run_group_tests_name("test_shm_fd", tests, NULL, NULL);
}

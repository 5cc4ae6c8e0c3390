/* SPDX-License-Identifier: MIT */
/*
 * test_fd_uring.c - libband-fd driven by io_uring (liburing): the eventfd is watched with
 * IORING_OP_POLL_ADD (re-armed after each completion) or consumed with an IORING_OP_READ
 * SQE, and the next deadline is an IORING_OP_TIMEOUT with IORING_TIMEOUT_ABS at
 * band_fd_queue_next_deadline() (CLOCK_MONOTONIC ns, the same clock: no rounding), replaced
 * with IORING_OP_TIMEOUT_REMOVE when the next deadline changes.
 *
 * A kernel or container without io_uring (io_uring_queue_init() fails with -ENOSYS or
 * -EPERM) skips every test with a message instead of failing.
 */
#include "fd_test_util.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#define UD_POLL    UINT64_C(1)
#define UD_READ    UINT64_C(2)
#define UD_REMOVE  UINT64_C(3)
#define UD_TIMEOUT UINT64_C(4) /* | generation << 8 */

struct uloop {
    struct io_uring ring;
    band_fd_queue *q;
    int use_read;      /* 1: a read SQE on the eventfd instead of a poll */
    int watch_armed;   /* the poll (or read) is in flight */
    uint64_t read_buf; /* the read SQE's target */
    int timeout_armed; /* a timeout is in flight for timeout_at */
    band_time timeout_at;
    uint64_t gen; /* generation of the armed timeout */
    struct __kernel_timespec ts;
    unsigned timeouts_fired, watch_fired;
};

/* Opens the ring, or skips the test when this kernel or container has no io_uring. */
static void uloop_open(struct uloop *l, band_fd_queue *q, int use_read)
{
    memset(l, 0, sizeof(*l));
    l->q = q;
    l->use_read = use_read;
    int rc = io_uring_queue_init(16, &l->ring, 0);
    if (rc == -ENOSYS || rc == -EPERM) {
        print_message("io_uring unavailable here (io_uring_queue_init: %s): skipped\n",
                      strerror(-rc));
        skip();
    }
    assert_int_equal(rc, 0);
}

static struct io_uring_sqe *sqe_get(struct uloop *l)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
    assert_non_null(sqe);
    return sqe;
}

/* Arm the fd watch, and a timeout for the next deadline (replacing a stale one). */
static void uloop_arm(struct uloop *l)
{
    if (!l->watch_armed) {
        struct io_uring_sqe *sqe = sqe_get(l);
        if (l->use_read) {
            io_uring_prep_read(sqe, band_fd_queue_fd(l->q), &l->read_buf, sizeof(l->read_buf), 0);
            io_uring_sqe_set_data64(sqe, UD_READ);
        } else {
            io_uring_prep_poll_add(sqe, band_fd_queue_fd(l->q), POLLIN);
            io_uring_sqe_set_data64(sqe, UD_POLL);
        }
        l->watch_armed = 1;
    }
    band_time d = band_fd_queue_next_deadline(l->q);
    if (l->timeout_armed && d != l->timeout_at) {
        struct io_uring_sqe *sqe = sqe_get(l);
        io_uring_prep_timeout_remove(sqe, UD_TIMEOUT | l->gen << 8, 0);
        io_uring_sqe_set_data64(sqe, UD_REMOVE);
        l->timeout_armed = 0;
    }
    if (!l->timeout_armed && d != BAND_FOREVER) {
        l->ts.tv_sec = d / BAND_SEC;
        l->ts.tv_nsec = d % BAND_SEC;
        l->gen++;
        struct io_uring_sqe *sqe = sqe_get(l);
        io_uring_prep_timeout(sqe, &l->ts, 0, IORING_TIMEOUT_ABS);
        io_uring_sqe_set_data64(sqe, UD_TIMEOUT | l->gen << 8);
        l->timeout_armed = 1;
        l->timeout_at = d;
    }
    assert_true(io_uring_submit(&l->ring) >= 0);
}

/* Arm, then wait for at least one completion and account for every one there is. */
static void uloop_wait(struct uloop *l)
{
    uloop_arm(l);
    int rc = io_uring_submit_and_wait(&l->ring, 1);
    assert_true(rc >= 0 || rc == -EINTR);

    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&l->ring, head, cqe)
    {
        uint64_t ud = io_uring_cqe_get_data64(cqe);
        if (ud == UD_POLL || ud == UD_READ) {
            l->watch_armed = 0;
            l->watch_fired++;
        } else if ((ud & 0xff) == UD_TIMEOUT && ud >> 8 == l->gen) {
            /* -ETIME: it fired. (An old generation ends with -ECANCELED: ignored.) */
            l->timeout_armed = 0;
            l->timeouts_fired += cqe->res == -ETIME;
        }
        seen++;
    }
    io_uring_cq_advance(&l->ring, seen);
}

/* Loop until @want ops were reaped (at most @batch per reap) or 5 s passed. */
static size_t uloop_collect(struct uloop *l, band_fd_queue_op **got, size_t want, size_t batch,
                            band_time *reaped_at)
{
    band_time give_up = band_deadline_after(5 * BAND_SEC);
    size_t n = band_fd_queue_reap(l->q, got, want < batch ? want : batch);
    while (n < want && band_now() < give_up) {
        uloop_wait(l);
        size_t room = want - n < batch ? want - n : batch;
        size_t k = band_fd_queue_reap(l->q, got + n, room);
        if (reaped_at != NULL)
            for (size_t i = 0; i < k; i++)
                reaped_at[n + i] = band_now();
        n += k;
    }
    return n;
}

static void uloop_close(struct uloop *l)
{
    io_uring_queue_exit(&l->ring); /* cancels the poll/read and the timeout in flight */
}

struct fixture {
    band_fd_queue *q;
    band_sem *sem;
    band_chan *ch;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL || band_fd_queue_create(&f->q) != 0 || band_sem_create(&f->sem, 0, NULL) != 0 ||
        band_chan_create(&f->ch, sizeof(uint64_t), 4, NULL) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    int rc = fdt_close_reap_destroy(f->q, NULL, 0) < 0 ? -1 : 0;
    band_chan_close(f->ch);
    rc |= band_chan_destroy(f->ch);
    band_sem_close(f->sem);
    rc |= band_sem_destroy(f->sem);
    free(f);
    return rc == 0 ? 0 : -1;
}

struct sender {
    band_chan *ch;
    uint64_t n;
    struct test_thread t;
};

static int sender_main(void *arg)
{
    struct sender *s = arg;
    for (uint64_t i = 0; i < s->n; i++) {
        uint64_t v = 500 + i;
        if (band_chan_send(s->ch, &v, i + 1, band_deadline_after(5 * BAND_SEC), NULL) != 0)
            return -1;
    }
    return 0;
}

/*
 * Grants from another thread, receives completed by another thread's sends, a deadline
 * that fires through an IORING_OP_TIMEOUT (never early) and hands its partial grant to
 * the ops queued behind it, and a cancelled deadline whose timeout is removed.
 */
static void test_uring_basic_flow(void **state)
{
    struct fixture *f = *state;
    struct uloop l;
    uloop_open(&l, f->q, 0);

    enum { NACQ = 8, NRECV = 4, N = 1 + NACQ + NRECV };
    band_fd_queue_op ops[N + 1];
    band_waiter ws[N + 1];
    struct band_chan_recv_op recv[NRECV];
    band_fd_queue_op *got[N + 1];
    band_time at[N + 1];
    uint64_t out[NRECV];
    /* A waiter is bound only when it is not pending: zeroed, it is idle. */
    memset(ws, 0, sizeof(ws));
    memset(recv, 0, sizeof(recv));
    for (int i = 0; i < N + 1; i++)
        band_fd_queue_op_init(&ops[i], (void *)(uintptr_t)i);

    /* ops[0]: the head, wants 10, times out after 40 ms holding what it got. */
    band_time d = band_deadline_after(40 * BAND_MSEC);
    assert_int_equal(fdt_acquire(f->q, &ops[0], &ws[0], f->sem, 10, d), 0);
    for (int i = 1; i <= NACQ; i++)
        assert_int_equal(fdt_acquire(f->q, &ops[i], &ws[i], f->sem, 1, BAND_FOREVER), 0);
    for (int i = 0; i < NRECV; i++)
        assert_int_equal(fdt_recv(f->q, &ops[1 + NACQ + i], &recv[i], f->ch, &out[i], BAND_FOREVER),
                         0);
    /* ops[N]: an earlier deadline, cancelled before it fires: its timeout is replaced. */
    assert_int_equal(
        fdt_acquire(f->q, &ops[N], &ws[N], f->sem, 1, band_deadline_after(20 * BAND_MSEC)), 0);
    assert_int_equal(band_fd_queue_next_deadline(f->q), ops[N]._dl.deadline);

    /* Arm the poll and the 20 ms timeout, then cancel: the next wait replaces the timeout
     * (IORING_OP_TIMEOUT_REMOVE) with one at d. */
    uloop_arm(&l);
    assert_true(l.timeout_armed);
    assert_int_equal(band_fd_queue_cancel(&ops[N]), 0);
    assert_int_equal(uloop_collect(&l, got, 1, 4, NULL), 1);
    assert_ptr_equal(got[0], &ops[N]);
    assert_int_equal(ops[N].status, BAND_ECANCELED);
    assert_int_equal(band_fd_queue_next_deadline(f->q), d);

    struct fdt_releaser r;
    assert_int_equal(fdt_releaser_start(&r, f->sem, NACQ, 1), 0);
    struct sender s = {.ch = f->ch, .n = NRECV};
    assert_int_equal(test_thread_start(&s.t, sender_main, &s), 0);

    size_t n = uloop_collect(&l, got, N, 4, at);
    assert_int_equal(test_thread_join(&r.t), 0);
    assert_int_equal(test_thread_join(&s.t), 0);
    assert_int_equal(n, N);

    int seen[N] = {0};
    for (int i = 0; i < N; i++) {
        int id = (int)(uintptr_t)got[i]->data;
        assert_true(id >= 0 && id < N);
        seen[id]++;
        if (id == 0) {
            assert_int_equal(got[i]->status, BAND_ETIMEDOUT);
            assert_true(at[i] >= d); /* never early */
        } else {
            assert_int_equal(got[i]->status, 0);
        }
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(seen[i], 1);
    for (int i = 0; i < NRECV; i++) {
        assert_u64_equal(out[i], 500 + (uint64_t)i);
        assert_u64_equal(recv[i].bytes, (uint64_t)i + 1);
    }
    assert_true(l.timeouts_fired >= 1);
    /* Conservation: the 8 released permits are held by ops 1..8; the head got none. */
    assert_u64_equal(band_sem_available(f->sem), 0);
    for (int i = 1; i <= NACQ; i++) {
        band_permit p = BAND_PERMIT_INIT;
        assert_int_equal(band_permit_adopt(&p, f->sem, 1), 0);
        assert_int_equal(band_permit_release(&p), 0);
    }
    assert_u64_equal(band_sem_available(f->sem), NACQ);
    assert_int_equal(band_fd_queue_count(f->q), 0);
    assert_int_equal(band_fd_queue_reap(f->q, got, 1), 0);
    uloop_close(&l);
}

/* 2000 completions from another thread, reaped 32 at a time through a re-armed poll. */
static void test_uring_burst(void **state)
{
    struct fixture *f = *state;
    struct uloop l;
    uloop_open(&l, f->q, 0);
    enum { B = 2000 };
    band_fd_queue_op *ops = calloc(B, sizeof(*ops));
    band_waiter *ws = calloc(B, sizeof(*ws));
    band_fd_queue_op **got = calloc(B, sizeof(*got));
    assert_non_null(ws);
    assert_non_null(ops);
    assert_non_null(got);
    for (size_t i = 0; i < B; i++) {
        band_fd_queue_op_init(&ops[i], (void *)(uintptr_t)i);
        assert_int_equal(fdt_acquire(f->q, &ops[i], &ws[i], f->sem, 1, BAND_FOREVER), 0);
    }
    struct fdt_releaser r;
    assert_int_equal(fdt_releaser_start(&r, f->sem, B, 7), 0);
    size_t n = uloop_collect(&l, got, B, 32, NULL);
    assert_int_equal(test_thread_join(&r.t), 0);
    assert_int_equal(n, B);
    for (size_t i = 0; i < B; i++) {
        assert_ptr_equal(got[i], &ops[i]); /* FIFO, each once */
        assert_int_equal(got[i]->status, 0);
    }
    print_message("io_uring burst: %d completions, %u poll completions\n", B, l.watch_fired);
    assert_int_equal(band_fd_queue_reap(f->q, got, 1), 0);
    assert_int_equal(band_sem_release(f->sem, B), 0);
    uloop_close(&l);
    free(got);
    free(ops);
    free(ws);
}

/* The same flow with a read SQE on the eventfd instead of a poll. */
static void test_uring_read_sqe(void **state)
{
    struct fixture *f = *state;
    struct uloop l;
    uloop_open(&l, f->q, 1);
    enum { R = 64 };
    band_fd_queue_op ops[R + 1];
    band_waiter ws[R + 1];
    memset(ws, 0, sizeof(ws));
    band_fd_queue_op *got[R + 1];
    band_time at[R + 1];
    for (int i = 0; i < R; i++) {
        band_fd_queue_op_init(&ops[i], (void *)(uintptr_t)i);
        assert_int_equal(fdt_acquire(f->q, &ops[i], &ws[i], f->sem, 1, BAND_FOREVER), 0);
    }
    /* Queued behind them, wants more than will ever come: times out. */
    band_time d = band_deadline_after(10 * BAND_MSEC);
    band_fd_queue_op_init(&ops[R], (void *)(uintptr_t)R);
    assert_int_equal(fdt_acquire(f->q, &ops[R], &ws[R], f->sem, 1000, d), 0);
    struct fdt_releaser r;
    assert_int_equal(fdt_releaser_start(&r, f->sem, R, 3), 0);
    size_t n = uloop_collect(&l, got, R + 1, 5, at);
    assert_int_equal(test_thread_join(&r.t), 0);
    assert_int_equal(n, R + 1);
    int next = 0, late = 0;
    for (int i = 0; i < R + 1; i++) {
        int id = (int)(uintptr_t)got[i]->data;
        if (id == R) {
            late++;
            assert_int_equal(got[i]->status, BAND_ETIMEDOUT);
            assert_true(at[i] >= d);
        } else {
            assert_int_equal(id, next++); /* FIFO among the granted ones */
            assert_int_equal(got[i]->status, 0);
        }
    }
    assert_int_equal(late, 1);
    assert_int_equal(next, R);
    assert_true(l.watch_fired >= 1);
    assert_int_equal(band_sem_release(f->sem, R), 0);
    uloop_close(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_uring_basic_flow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uring_burst, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uring_read_sqe, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

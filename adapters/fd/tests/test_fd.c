/* SPDX-License-Identifier: MIT */
/*
 * test_fd.c - libband-fd driven by an epoll loop: argument checks, completions reported
 * once through reap (immediate ones too), grants and channel traffic from other threads,
 * bursts of 10^4 completions with coalesced signals (level- and edge-triggered), partial
 * batches that keep the fd readable, deadlines that never fire early and give partial
 * grants back, cancel before and after completion, cancellation tokens (also requested
 * from a signal handler), rate bookings completed at their due time, close with pending
 * ops and destroy's refusals, permit conservation, no allocation per operation, and the
 * op's layout.
 * test_fd_prims.c runs the same bridge over every primitive.
 *
 * Only the main thread asserts; worker threads (releasers, senders) record results.
 */
#include "fd_test_util.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "fd_layout.h"

#define NOPS 16

#define PCASE_OUT_UNTOUCHED UINT64_C(0xdeadbeef)

struct fixture {
    band_fd_queue *q;
    band_sem *sem; /* starts with 0 permits */
    band_chan *ch; /* uint64_t elements, capacity 4 */
    int ep;        /* level-triggered epoll on the queue's fd */
    band_fd_queue_op op[NOPS];
    band_waiter w[NOPS];                 /* acquisitions through op[i] */
    struct band_chan_send_op send[NOPS]; /* sends through op[i] */
    struct band_chan_recv_op recv[NOPS]; /* receives through op[i] */
    band_fd_queue_op *got[NOPS * 2];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    if (band_fd_queue_create(&f->q) != 0 || band_sem_create(&f->sem, 0, NULL) != 0 ||
        band_chan_create(&f->ch, sizeof(uint64_t), 4, NULL) != 0)
        return -1;
    f->ep = fdt_epoll_open(f->q, 0);
    if (f->ep < 0)
        return -1;
    for (int i = 0; i < NOPS; i++)
        band_fd_queue_op_init(&f->op[i], (void *)(uintptr_t)i);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    int rc = 0;
    if (f->q != NULL && fdt_close_reap_destroy(f->q, NULL, 0) < 0)
        rc = -1;
    close(f->ep);
    band_chan_close(f->ch);
    if (band_chan_destroy(f->ch) != 0)
        rc = -1;
    band_sem_close(f->sem);
    if (band_sem_destroy(f->sem) != 0)
        rc = -1;
    free(f);
    return rc;
}

static band_sem_stats sem_stats(const band_sem *s)
{
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(s, &st), 0);
    return st;
}

/* Reap exactly @n ops (waiting up to 2 s) into f->got. */
static void collect(struct fixture *f, size_t n)
{
    assert_true(n <= TEST_COUNTOF(f->got));
    size_t got = fdt_epoll_collect(f->ep, f->q, f->got, n, 4, 2 * BAND_SEC, NULL);
    assert_int_equal(got, n);
}

/* Nothing more to reap, and the fd says so. */
static void assert_quiet(struct fixture *f)
{
    band_fd_queue_op *extra[2];
    assert_int_equal(band_fd_queue_reap(f->q, extra, 2), 0);
    assert_int_equal(fdt_readable(band_fd_queue_fd(f->q)), 0);
}

/* ---------------------------------------------------------------------------------- */

static void test_layout_matches_library(void **state)
{
    (void)state;
    struct fdt_layout in;
    fdt_layout_internal(&in);
    assert_int_equal(in.size, sizeof(band_fd_queue_op));
    assert_int_equal(in.align, _Alignof(band_fd_queue_op));
    assert_int_equal(in.ready_off, offsetof(band_fd_queue_op, _ready));
    assert_int_equal(in.ready_size, sizeof(struct band__ready_node));
    assert_int_equal(in.dl_off, offsetof(band_fd_queue_op, _dl));
    assert_int_equal(in.dl_size, sizeof(struct band__dl_node));
    assert_int_equal(in.dl_deadline_off, offsetof(struct band__dl_node, deadline));
    assert_int_equal(in.dl_child_off, offsetof(struct band__dl_node, child));
    assert_int_equal(in.dl_sibling_off, offsetof(struct band__dl_node, sibling));
    assert_int_equal(in.dl_prev_off, offsetof(struct band__dl_node, prev));
    assert_int_equal(in.hook_off, offsetof(band_fd_queue_op, _hook));
    if (sizeof(void *) == 8)
        assert_int_equal(sizeof(band_fd_queue_op), 160);
}

/* The wake of waiters the queue does not own; never expected to run. */
static void unused_wake(band_waiter *w)
{
    (void)w;
}

static void test_args(void **state)
{
    struct fixture *f = *state;
    band_fd_queue_op *op = &f->op[0];
    band_waiter *w = &f->w[0];

    assert_int_equal(band_fd_queue_create(NULL), BAND_EINVAL);
    assert_int_equal(band_fd_queue_fd(NULL), BAND_EINVAL);
    assert_int_equal(band_fd_queue_destroy(NULL), 0);
    assert_int_equal(band_fd_queue_close(NULL), BAND_EINVAL);
    assert_int_equal(band_fd_queue_is_closed(NULL), 0);
    assert_int_equal(band_fd_queue_reap(NULL, f->got, 1), 0);
    assert_int_equal(band_fd_queue_reap(f->q, NULL, 1), 0);
    assert_int_equal(band_fd_queue_next_deadline(NULL), BAND_FOREVER);
    assert_int_equal(band_fd_queue_timeout_ms(NULL), -1);
    assert_int_equal(band_fd_queue_count(NULL), 0);
    assert_int_equal(band_fd_queue_cancel(NULL), BAND_EINVAL);
    assert_int_equal(band_fd_queue_cancel(op), BAND_EINVAL); /* never bound */
    assert_int_equal(band_fd_queue_start(NULL, 0), BAND_EINVAL);
    band_fd_queue_op_init(NULL, NULL); /* ignored */

    /* The eventfd: non-blocking, close-on-exec, not readable while empty. */
    int fd = band_fd_queue_fd(f->q);
    assert_true(fd >= 0);
    assert_true((fcntl(fd, F_GETFL) & O_NONBLOCK) != 0);
    assert_true((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    assert_int_equal(fdt_readable(fd), 0);
    assert_int_equal(band_fd_queue_next_deadline(f->q), BAND_FOREVER);
    assert_int_equal(band_fd_queue_timeout_ms(f->q), -1);

    /* Misuse is answered by the call; nothing is queued or reported. */
    assert_int_equal(band_fd_queue_bind(NULL, op, w, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(op->status, BAND_EINVAL); /* an idle op records the refusal */
    op->status = 0;
    assert_int_equal(band_fd_queue_bind(f->q, NULL, w, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_fd_queue_bind(f->q, op, NULL, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_fd_queue_at(NULL, op, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_fd_queue_at(f->q, NULL, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_fd_queue_start(op, 0), BAND_EINVAL); /* never bound */
    /* A waiter already pending on a primitive cannot be bound (its wake is in use). */
    band_waiter other;
    band_waiter_init(&other, unused_wake, NULL);
    assert_int_equal(band_sem_acquire_async(f->sem, 1, &other), BAND_PENDING);
    assert_int_equal(band_fd_queue_bind(f->q, op, &other, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&other, BAND_ECANCELED), 0);
    assert_int_equal(band_fd_queue_count(f->q), 0);
    assert_quiet(f);

    /* Bound, not started: owned, not cancellable, not bindable again. */
    assert_int_equal(band_fd_queue_bind(f->q, op, w, BAND_FOREVER, NULL), 0);
    assert_int_equal(op->status, BAND_PENDING);
    assert_int_equal(band_fd_queue_count(f->q), 1);
    assert_int_equal(band_fd_queue_cancel(op), BAND_EINVAL);
    assert_int_equal(band_fd_queue_bind(f->q, op, &f->w[1], BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_fd_queue_at(f->q, op, 0, NULL), BAND_EINVAL);
    assert_int_equal(op->status, BAND_PENDING); /* an owned op is left alone */
    /* A positive answer that is not BAND_PENDING is no band result: refused, op idle. */
    assert_int_equal(band_fd_queue_start(op, BAND_PENDING + 1), BAND_EINVAL);
    assert_int_equal(op->status, BAND_EINVAL);
    assert_int_equal(band_fd_queue_count(f->q), 0);
    /* A waiter initialised again after the bind lost the queue's wake: refused. */
    assert_int_equal(band_fd_queue_bind(f->q, op, w, BAND_FOREVER, NULL), 0);
    band_waiter_init(w, unused_wake, NULL);
    assert_int_equal(band_fd_queue_start(op, 0), BAND_EINVAL);
    assert_int_equal(band_fd_queue_count(f->q), 0);
    assert_quiet(f);

    /* The primitive's own refusals, BAND_EINVAL included, are reaped as the status. */
    uint64_t v = 0;
    band_chan *drop = NULL;
    band_chan_opts o = {.overflow = BAND_CHAN_DROP_OLDEST};
    assert_int_equal(band_chan_create(&drop, 8, 2, &o), 0);
    assert_int_equal(fdt_send(f->q, &f->op[1], &f->send[1], drop, &v, 0, BAND_FOREVER), 0);
    assert_int_equal(
        fdt_acquire(f->q, &f->op[2], &f->w[2], f->sem, BAND_MAX_UNITS + 1, BAND_FOREVER), 0);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 4), 2);
    assert_int_equal(f->op[1].status, BAND_EINVAL);
    assert_int_equal(f->op[2].status, BAND_EINVAL);
    assert_int_equal(band_chan_destroy(drop), 0);
    assert_quiet(f);

    /* An op owned by the queue cannot be bound again. */
    assert_int_equal(fdt_acquire(f->q, op, w, f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(op->status, BAND_PENDING);
    assert_int_equal(band_fd_queue_bind(f->q, op, &f->w[1], BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_fd_queue_start(op, 0), BAND_EINVAL);
    assert_int_equal(op->status, BAND_PENDING); /* an owned op is left alone */
    assert_int_equal(band_fd_queue_count(f->q), 1);
    assert_u64_equal(sem_stats(f->sem).waiters, 1);
    assert_int_equal(band_fd_queue_cancel(op), 0);
    collect(f, 1);
    assert_ptr_equal(f->got[0], op);
    assert_int_equal(op->status, BAND_ECANCELED);
    assert_int_equal(band_fd_queue_cancel(op), BAND_EINVAL); /* reaped */
    assert_quiet(f);
}

/* Granted at once: still reported through reap, exactly once; the permits are the
 * owner's. */
static void test_immediate_grant(void **state)
{
    struct fixture *f = *state;
    band_fd_queue_op *op = &f->op[0];
    assert_int_equal(band_sem_release(f->sem, 5), 0);
    assert_int_equal(fdt_acquire(f->q, op, &f->w[0], f->sem, 3, BAND_FOREVER), 0);
    assert_u64_equal(band_sem_available(f->sem), 2);
    assert_int_equal(band_fd_queue_count(f->q), 1);
    assert_int_equal(fdt_readable(band_fd_queue_fd(f->q)), 1);
    assert_int_equal(band_fd_queue_cancel(op), BAND_EALREADY); /* completed already */

    assert_int_equal(band_fd_queue_reap(f->q, f->got, 4), 1);
    assert_ptr_equal(f->got[0], op);
    assert_int_equal(op->status, 0);
    assert_ptr_equal(op->data, (void *)(uintptr_t)0);
    assert_int_equal(band_fd_queue_count(f->q), 0);
    assert_quiet(f);

    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_adopt(&p, f->sem, 3), 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 5);

    /* The op is reusable after reap. */
    assert_int_equal(fdt_acquire(f->q, op, &f->w[0], f->sem, 5, BAND_FOREVER), 0);
    collect(f, 1);
    assert_int_equal(op->status, 0);
    assert_int_equal(band_sem_release(f->sem, 5), 0);
}

/* Refused at once (closed primitives): reported through reap; elements stay put. */
static void test_immediate_refusals(void **state)
{
    struct fixture *f = *state;
    uint64_t elem = 42, out = 0;

    /* An element waiting in the channel: received at once, its bytes in the recv op. */
    assert_int_equal(band_chan_try_send(f->ch, &elem, 7), 0);
    assert_int_equal(fdt_recv(f->q, &f->op[0], &f->recv[0], f->ch, &out, BAND_FOREVER), 0);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 4), 1);
    assert_int_equal(f->op[0].status, 0);
    assert_u64_equal(out, 42);
    assert_u64_equal(f->recv[0].bytes, 7);

    assert_int_equal(band_sem_close(f->sem), 0);
    assert_int_equal(band_chan_close(f->ch), 0);
    assert_int_equal(fdt_acquire(f->q, &f->op[1], &f->w[1], f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(fdt_send(f->q, &f->op[2], &f->send[2], f->ch, &elem, 8, BAND_FOREVER), 0);
    out = 0;
    assert_int_equal(fdt_recv(f->q, &f->op[3], &f->recv[3], f->ch, &out, BAND_FOREVER), 0);
    assert_int_equal(band_fd_queue_count(f->q), 3);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 3);
    /* Oldest first. */
    assert_ptr_equal(f->got[0], &f->op[1]);
    assert_ptr_equal(f->got[1], &f->op[2]);
    assert_ptr_equal(f->got[2], &f->op[3]);
    assert_int_equal(f->op[1].status, BAND_ECLOSED);
    assert_int_equal(f->op[2].status, BAND_ECLOSED);
    assert_int_equal(f->op[3].status, BAND_ECLOSED);
    assert_u64_equal(out, 0);              /* nothing received */
    assert_u64_equal(f->recv[3].bytes, 0); /* cleared at submission, never set */
    band_chan_stats cs;
    assert_int_equal(band_chan_get_stats(f->ch, &cs), 0);
    assert_u64_equal(cs.len, 0); /* the refused element was not queued */
    assert_quiet(f);
}

/* Pending acquisitions granted by releases on another thread: FIFO, each reaped once. */
static void test_grants_from_thread(void **state)
{
    struct fixture *f = *state;
    uint64_t total = 0;
    for (int i = 0; i < NOPS; i++) {
        uint64_t n = (uint64_t)(i % 3 + 1);
        total += n;
        assert_int_equal(fdt_acquire(f->q, &f->op[i], &f->w[i], f->sem, n, BAND_FOREVER), 0);
    }
    assert_int_equal(fdt_readable(band_fd_queue_fd(f->q)), 0);
    assert_u64_equal(sem_stats(f->sem).waiters, NOPS);

    struct fdt_releaser r;
    assert_int_equal(fdt_releaser_start(&r, f->sem, total, 1), 0);
    collect(f, NOPS);
    assert_int_equal(test_thread_join(&r.t), 0);

    int seen[NOPS] = {0};
    for (int i = 0; i < NOPS; i++) {
        band_fd_queue_op *op = f->got[i];
        int id = (int)(uintptr_t)op->data;
        assert_ptr_equal(op, &f->op[id]);
        assert_int_equal(id, i); /* strict FIFO hand-off, reported oldest first */
        assert_int_equal(op->status, 0);
        seen[id]++;
    }
    for (int i = 0; i < NOPS; i++)
        assert_int_equal(seen[i], 1);
    assert_quiet(f);
    assert_int_equal(band_fd_queue_count(f->q), 0);

    /* Conservation: every permit is held by a reaped op; give them back. */
    assert_u64_equal(band_sem_available(f->sem), 0);
    for (int i = 0; i < NOPS; i++) {
        band_permit p = BAND_PERMIT_INIT;
        assert_int_equal(band_permit_adopt(&p, f->sem, (uint64_t)(i % 3 + 1)), 0);
        assert_int_equal(band_permit_release(&p), 0);
    }
    assert_u64_equal(band_sem_available(f->sem), total);
}

struct chan_peer {
    band_chan *ch;
    uint64_t n;
    uint64_t got[NOPS];
    struct test_thread t;
};

static int sender_main(void *arg)
{
    struct chan_peer *p = arg;
    for (uint64_t i = 0; i < p->n; i++) {
        uint64_t v = 1000 + i;
        if (band_chan_send(p->ch, &v, i, band_deadline_after(5 * BAND_SEC), NULL) != 0)
            return -1;
    }
    return 0;
}

static int receiver_main(void *arg)
{
    struct chan_peer *p = arg;
    for (uint64_t i = 0; i < p->n; i++) {
        if (band_chan_recv(p->ch, &p->got[i], NULL, band_deadline_after(5 * BAND_SEC), NULL) != 0)
            return -1;
    }
    return 0;
}

/* Receives completed by sends on another thread, sends completed by receives. */
static void test_chan_from_thread(void **state)
{
    struct fixture *f = *state;
    uint64_t out[NOPS] = {0};
    for (int i = 0; i < 8; i++) {
        assert_int_equal(fdt_recv(f->q, &f->op[i], &f->recv[i], f->ch, &out[i], BAND_FOREVER), 0);
    }
    struct chan_peer s = {.ch = f->ch, .n = 8};
    assert_int_equal(test_thread_start(&s.t, sender_main, &s), 0);
    collect(f, 8);
    assert_int_equal(test_thread_join(&s.t), 0);
    for (int i = 0; i < 8; i++) {
        assert_ptr_equal(f->got[i], &f->op[i]);
        assert_int_equal(f->op[i].status, 0);
        assert_u64_equal(out[i], 1000 + (uint64_t)i);
        assert_u64_equal(f->recv[i].bytes, (uint64_t)i);
    }
    assert_quiet(f);

    /* Fill the channel (capacity 4), then 8 sends wait for room. */
    uint64_t elems[NOPS];
    for (int i = 0; i < 12; i++) {
        elems[i] = 2000 + (uint64_t)i;
        assert_int_equal(fdt_send(f->q, &f->op[i], &f->send[i], f->ch, &elems[i], 1, BAND_FOREVER),
                         0);
    }
    collect(f, 4); /* the first four went in at once */
    for (int i = 0; i < 4; i++) {
        assert_ptr_equal(f->got[i], &f->op[i]);
        assert_int_equal(f->op[i].status, 0);
    }
    assert_int_equal(band_fd_queue_count(f->q), 8);
    struct chan_peer r = {.ch = f->ch, .n = 12};
    assert_int_equal(test_thread_start(&r.t, receiver_main, &r), 0);
    collect(f, 8);
    assert_int_equal(test_thread_join(&r.t), 0);
    for (int i = 0; i < 8; i++) {
        assert_ptr_equal(f->got[i], &f->op[4 + i]);
        assert_int_equal(f->op[4 + i].status, 0);
    }
    for (int i = 0; i < 12; i++)
        assert_u64_equal(r.got[i], 2000 + (uint64_t)i);
    assert_quiet(f);
}

/*
 * A burst: 10^4 queued acquisitions granted by one release on another thread (all their
 * wakes run there, back to back, so the eventfd writes coalesce), reaped 64 at a time.
 * Run level-triggered and edge-triggered.
 */
#define BURST 10000

static void burst(struct fixture *f, int edge)
{
    band_fd_queue_op *ops = calloc(BURST, sizeof(*ops));
    band_fd_queue_op **got = calloc(BURST, sizeof(*got));
    unsigned char *seen = calloc(BURST, 1);
    band_waiter *ws = calloc(BURST, sizeof(*ws));
    assert_non_null(ws);
    assert_non_null(ops);
    assert_non_null(got);
    assert_non_null(seen);
    int ep = fdt_epoll_open(f->q, edge);
    assert_true(ep >= 0);

    for (size_t i = 0; i < BURST; i++) {
        band_fd_queue_op_init(&ops[i], (void *)(uintptr_t)i);
        assert_int_equal(fdt_acquire(f->q, &ops[i], &ws[i], f->sem, 1, BAND_FOREVER), 0);
    }
    assert_int_equal(fdt_readable(band_fd_queue_fd(f->q)), 0);
    struct fdt_releaser r;
    assert_int_equal(fdt_releaser_start(&r, f->sem, BURST, edge ? BURST : 1000), 0);
    unsigned wakeups = 0;
    size_t n = fdt_epoll_collect(ep, f->q, got, BURST, 64, 10 * BAND_SEC, &wakeups);
    assert_int_equal(test_thread_join(&r.t), 0);
    assert_int_equal(n, BURST);
    for (size_t i = 0; i < BURST; i++) {
        size_t id = (size_t)(uintptr_t)got[i]->data;
        assert_true(id < BURST);
        assert_int_equal(got[i]->status, 0);
        assert_int_equal(seen[id], 0);
        seen[id] = 1;
        assert_int_equal(id, i); /* FIFO */
    }
    print_message("burst %s: %d completions, %u epoll wake-ups\n", edge ? "EPOLLET" : "level",
                  BURST, wakeups);
    assert_true(wakeups <= BURST);
    assert_quiet(f);
    assert_int_equal(band_fd_queue_count(f->q), 0);
    assert_int_equal(band_sem_release(f->sem, BURST), 0);
    assert_u64_equal(band_sem_available(f->sem), BURST);
    assert_int_equal(band_sem_drain(f->sem, BURST), BURST);
    close(ep);
    free(seen);
    free(got);
    free(ops);
    free(ws);
}

static void test_burst_level(void **state)
{
    burst(*state, 0);
}

static void test_burst_edge(void **state)
{
    burst(*state, 1);
}

/* A reap that returns @max with more left keeps the fd readable (and re-arms EPOLLET). */
static void test_partial_batches_keep_fd_readable(void **state)
{
    struct fixture *f = *state;
    int et = fdt_epoll_open(f->q, 1);
    assert_true(et >= 0);
    assert_int_equal(band_sem_release(f->sem, 10), 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(fdt_acquire(f->q, &f->op[i], &f->w[i], f->sem, 1, BAND_FOREVER), 0);
    struct epoll_event ev;
    size_t total = 0;
    int round = 0;
    while (total < 10) {
        assert_int_equal(fdt_readable(band_fd_queue_fd(f->q)), 1);
        assert_int_equal(epoll_wait(et, &ev, 1, 0), 1); /* a new edge each time */
        size_t n = band_fd_queue_reap(f->q, f->got + total, 3);
        assert_int_equal(n, total + 3 <= 10 ? 3 : 10 - total);
        total += n;
        round++;
    }
    assert_int_equal(round, 4);
    for (int i = 0; i < 10; i++)
        assert_ptr_equal(f->got[i], &f->op[i]);
    assert_quiet(f);
    assert_int_equal(epoll_wait(et, &ev, 1, 0), 0);
    assert_int_equal(band_sem_release(f->sem, 10), 0);
    /* max 0 collects but returns nothing, and the fd stays readable. */
    for (int i = 0; i < 2; i++)
        assert_int_equal(fdt_acquire(f->q, &f->op[i], &f->w[i], f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(band_fd_queue_reap(f->q, NULL, 0), 0);
    assert_int_equal(fdt_readable(band_fd_queue_fd(f->q)), 1);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 2);
    assert_quiet(f);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_u64_equal(band_sem_available(f->sem), 10);
    close(et);
}

/* A deadline fires no earlier than it says, through the epoll timeout. */
static void test_deadline_never_early(void **state)
{
    struct fixture *f = *state;
    band_time d0 = band_deadline_after(80 * BAND_MSEC);
    band_time d1 = band_deadline_after(60 * BAND_MSEC + 300 * BAND_USEC);
    assert_int_equal(fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 1, d0), 0);
    assert_int_equal(fdt_acquire(f->q, &f->op[1], &f->w[1], f->sem, 1, d1), 0);
    assert_int_equal(fdt_acquire(f->q, &f->op[2], &f->w[2], f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(band_fd_queue_next_deadline(f->q), d1);

    band_time before = band_now();
    int ms = band_fd_queue_timeout_ms(f->q);
    assert_true(ms >= 0 && ms <= 61);
    assert_true(before + ms * BAND_MSEC >= d1); /* rounded up: never wakes before d1 */

    /* Reaping before the deadline times nothing out. */
    size_t early = band_fd_queue_reap(f->q, f->got, 4);
    if (band_now() < d1)
        assert_int_equal(early, 0);
    size_t n = early;

    band_time reaped_at[2] = {0, 0};
    for (size_t i = 0; i < n; i++)
        reaped_at[i] = band_now();
    band_time give_up = band_deadline_after(2 * BAND_SEC);
    while (n < 2 && band_now() < give_up) {
        struct epoll_event ev;
        int t = band_fd_queue_timeout_ms(f->q);
        assert_true(t >= 0);
        (void)epoll_wait(f->ep, &ev, 1, t);
        size_t k = band_fd_queue_reap(f->q, f->got + n, 2 - n);
        for (size_t i = 0; i < k; i++)
            reaped_at[n + i] = band_now();
        n += k;
    }
    assert_int_equal(n, 2);
    assert_ptr_equal(f->got[0], &f->op[1]); /* earliest deadline first */
    assert_ptr_equal(f->got[1], &f->op[0]);
    assert_int_equal(f->op[0].status, BAND_ETIMEDOUT);
    assert_int_equal(f->op[1].status, BAND_ETIMEDOUT);
    assert_true(reaped_at[0] >= d1);
    assert_true(reaped_at[1] >= d0);
    assert_int_equal(band_fd_queue_next_deadline(f->q), BAND_FOREVER);
    assert_int_equal(band_fd_queue_timeout_ms(f->q), -1);

    band_sem_stats st = sem_stats(f->sem);
    assert_u64_equal(st.timeouts, 2);
    assert_u64_equal(st.waiters, 1);
    assert_int_equal(band_fd_queue_cancel(&f->op[2]), 0);
    collect(f, 1);
    assert_int_equal(f->op[2].status, BAND_ECANCELED);
}

/* timeout_ms rounds up, saturates, and says 0 once the deadline passed. */
static void test_timeout_ms_rounding(void **state)
{
    struct fixture *f = *state;
    band_time d = band_deadline_after(BAND_MSEC / 2);
    assert_int_equal(fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 1, d), 0);
    int ms = band_fd_queue_timeout_ms(f->q);
    assert_true(ms == 1 || (ms == 0 && band_now() >= d));
    assert_int_equal(band_fd_queue_cancel(&f->op[0]), 0);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 2), 1);

    assert_int_equal(fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 1, BAND_FOREVER - 1), 0);
    assert_int_equal(band_fd_queue_timeout_ms(f->q), INT32_MAX);
    assert_int_equal(band_fd_queue_next_deadline(f->q), BAND_FOREVER - 1);
    assert_int_equal(band_fd_queue_cancel(&f->op[0]), 0);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 2), 1);
    assert_quiet(f);
}

/* A timed-out head gives its partial grant to the waiter behind it. */
static void test_deadline_returns_partial_grant(void **state)
{
    struct fixture *f = *state;
    band_time d = band_deadline_after(5 * BAND_MSEC);
    assert_int_equal(fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 5, d), 0);
    assert_int_equal(fdt_acquire(f->q, &f->op[1], &f->w[1], f->sem, 2, BAND_FOREVER), 0);
    assert_int_equal(band_sem_release(f->sem, 3), 0); /* head holds 3 of 5 */
    band_sem_stats st = sem_stats(f->sem);
    assert_u64_equal(st.head_granted, 3);
    assert_int_equal(fdt_readable(band_fd_queue_fd(f->q)), 0);

    collect(f, 2);
    assert_true(band_now() >= d);
    /* The head's cancel granted op 1 (its wake ran first, on this thread), then op 0 ended. */
    assert_ptr_equal(f->got[0], &f->op[1]);
    assert_ptr_equal(f->got[1], &f->op[0]);
    assert_int_equal(f->op[0].status, BAND_ETIMEDOUT);
    assert_int_equal(f->op[1].status, 0);
    assert_u64_equal(band_sem_available(f->sem), 1); /* 3 - 2: nothing lost */
    st = sem_stats(f->sem);
    assert_u64_equal(st.timeouts, 1);
    assert_u64_equal(st.waiters, 0);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_u64_equal(band_sem_available(f->sem), 3);
    assert_quiet(f);
}

/* A deadline already passed means "do not wait": granted now, or withdrawn inside the
 * start and reaped as ETIMEDOUT; nothing stays queued. */
static void test_past_deadline(void **state)
{
    struct fixture *f = *state;
    band_time past = band_now() - 1;
    uint64_t v = 7, out = 0;
    assert_int_equal(fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 1, past), 0);
    assert_int_equal(fdt_recv(f->q, &f->op[1], &f->recv[1], f->ch, &out, past), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(fdt_acquire(f->q, &f->op[2], &f->w[2], f->sem, 1, past), 0);
    assert_int_equal(fdt_send(f->q, &f->op[3], &f->send[3], f->ch, &v, 1, past), 0);
    assert_int_equal(fdt_recv(f->q, &f->op[4], &f->recv[4], f->ch, &out, 0), 0);
    band_sem_stats st = sem_stats(f->sem);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.queued, 1);   /* op 0 queued and was withdrawn at once ... */
    assert_u64_equal(st.timeouts, 1); /* ... as a timeout */
    band_chan_stats cs;
    assert_int_equal(band_chan_get_stats(f->ch, &cs), 0);
    assert_u64_equal(cs.waiting_receivers, 0);
    assert_int_equal(band_fd_queue_next_deadline(f->q), BAND_FOREVER);

    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 5);
    for (int i = 0; i < 5; i++)
        assert_ptr_equal(f->got[i], &f->op[i]);
    assert_int_equal(f->op[0].status, BAND_ETIMEDOUT);
    assert_int_equal(f->op[1].status, BAND_ETIMEDOUT);
    assert_int_equal(f->op[2].status, 0);
    assert_int_equal(f->op[3].status, 0);
    assert_int_equal(f->op[4].status, 0);
    assert_u64_equal(out, 7);
    assert_quiet(f);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
}

/* Cancel while pending: reported once as ECANCELED; cancelling again says EALREADY. */
static void test_cancel_pending(void **state)
{
    struct fixture *f = *state;
    uint64_t out = 5;
    assert_int_equal(
        fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 2, band_deadline_after(BAND_SEC)), 0);
    assert_int_equal(fdt_recv(f->q, &f->op[1], &f->recv[1], f->ch, &out, BAND_FOREVER), 0);
    assert_int_equal(band_fd_queue_next_deadline(f->q), f->op[0]._dl.deadline);
    assert_int_equal(band_fd_queue_cancel(&f->op[0]), 0);
    assert_int_equal(band_fd_queue_next_deadline(f->q), BAND_FOREVER); /* deadline dropped */
    assert_int_equal(band_fd_queue_cancel(&f->op[0]), BAND_EALREADY);
    assert_int_equal(band_fd_queue_cancel(&f->op[1]), 0);
    assert_int_equal(band_fd_queue_cancel(&f->op[1]), BAND_EALREADY);
    assert_int_equal(fdt_readable(band_fd_queue_fd(f->q)), 1);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 2);
    assert_ptr_equal(f->got[0], &f->op[0]);
    assert_ptr_equal(f->got[1], &f->op[1]);
    assert_int_equal(f->op[0].status, BAND_ECANCELED);
    assert_int_equal(f->op[1].status, BAND_ECANCELED);
    assert_u64_equal(out, 5);
    assert_int_equal(band_fd_queue_cancel(&f->op[0]), BAND_EINVAL);
    assert_quiet(f);
    band_sem_stats st = sem_stats(f->sem);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.cancels, 1);
}

/* Cancel after completion (wake already pushed): EALREADY, and the real result is reaped. */
static void test_cancel_after_completion(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 2, BAND_FOREVER), 0);
    struct fdt_releaser r;
    assert_int_equal(fdt_releaser_start(&r, f->sem, 2, 2), 0);
    assert_int_equal(test_thread_join(&r.t), 0); /* the wake ran on that thread */
    assert_int_equal(fdt_readable(band_fd_queue_fd(f->q)), 1);
    assert_int_equal(band_fd_queue_cancel(&f->op[0]), BAND_EALREADY);
    assert_int_equal(band_fd_queue_cancel(&f->op[0]), BAND_EALREADY);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 1);
    assert_int_equal(f->op[0].status, 0);
    assert_quiet(f);
    assert_u64_equal(band_sem_available(f->sem), 0); /* the owner holds both */
    band_permit p = BAND_PERMIT_INIT;
    assert_int_equal(band_permit_adopt(&p, f->sem, 2), 0);
    assert_int_equal(band_permit_release(&p), 0);
    assert_u64_equal(band_sem_available(f->sem), 2);
}

/* Cancelling a partially granted head gives its units to the next waiter. */
static void test_cancel_returns_partial_grant(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 5, BAND_FOREVER), 0);
    assert_int_equal(fdt_acquire(f->q, &f->op[1], &f->w[1], f->sem, 2, BAND_FOREVER), 0);
    assert_int_equal(band_sem_release(f->sem, 4), 0);
    assert_int_equal(band_fd_queue_cancel(&f->op[0]), 0);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 2);
    assert_ptr_equal(f->got[0], &f->op[1]);
    assert_ptr_equal(f->got[1], &f->op[0]);
    assert_int_equal(f->op[1].status, 0);
    assert_int_equal(f->op[0].status, BAND_ECANCELED);
    assert_u64_equal(band_sem_available(f->sem), 2);
    assert_quiet(f);
    assert_int_equal(band_sem_release(f->sem, 2), 0);
}

/* Destroy refuses while the queue owns an op, changing nothing; an idle queue, never
 * closed, is destroyed at once. */
static void test_destroy_refuses_while_owning(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(band_fd_queue_destroy(f->q), BAND_EBUSY); /* waiting */
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_fd_queue_destroy(f->q), BAND_EBUSY); /* completed, not reaped */
    assert_int_equal(band_fd_queue_is_closed(f->q), 0);
    assert_int_equal(band_fd_queue_count(f->q), 1);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 1);
    assert_int_equal(f->op[0].status, 0); /* reported as usual after the refusals */
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_fd_queue_bind(f->q, &f->op[1], &f->w[1], BAND_FOREVER, NULL), 0);
    assert_int_equal(band_fd_queue_destroy(f->q), BAND_EBUSY); /* bound, not started */
    assert_int_equal(band_fd_queue_start(&f->op[1], band_sem_acquire_async(f->sem, 1, &f->w[1])),
                     0);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 1);
    assert_int_equal(f->op[1].status, 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_fd_queue_destroy(f->q), 0); /* owns nothing: freed */
    f->q = NULL;
    band_fd_queue *q;
    assert_int_equal(band_fd_queue_create(&q), 0);
    assert_int_equal(band_fd_queue_destroy(q), 0);
}

/* Close cancels every op still waiting, keeps the results of those that completed, and
 * reap reports each once; binds and due times are refused from then on. */
static void test_close_with_pending_ops(void **state)
{
    struct fixture *f = *state;
    uint64_t out = 0, v = 77;
    assert_int_equal(
        fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 4, band_deadline_after(BAND_SEC)), 0);
    assert_int_equal(fdt_recv(f->q, &f->op[1], &f->recv[1], f->ch, &out, BAND_FOREVER), 0);
    assert_int_equal(fdt_acquire(f->q, &f->op[2], &f->w[2], f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(band_sem_release(f->sem, 3), 0);      /* op 0 holds 3 of 4 */
    assert_int_equal(band_chan_try_send(f->ch, &v, 9), 0); /* completes op 1 */
    assert_int_equal(band_sem_release(f->sem, 2), 0);
    assert_int_equal(fdt_acquire(f->q, &f->op[3], &f->w[3], f->sem, 1, BAND_FOREVER), 0);
    /* Now: op 1 received, op 0 granted (4), op 2 granted (1), op 3 waiting. */
    assert_int_equal(fdt_acquire(f->q, &f->op[4], &f->w[4], f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(band_fd_queue_at(f->q, &f->op[5], band_now() + 60 * BAND_SEC, NULL), 0);
    assert_int_equal(band_fd_queue_count(f->q), 6);

    assert_int_equal(band_fd_queue_close(f->q), 0);
    assert_int_equal(band_fd_queue_is_closed(f->q), 1);
    assert_u64_equal(sem_stats(f->sem).waiters, 0); /* withdrawn inside close */
    assert_int_equal(band_fd_queue_close(f->q), 0); /* a second close changes nothing */
    assert_int_equal(band_fd_queue_count(f->q), 6); /* nothing handed back yet */
    assert_int_equal(band_fd_queue_destroy(f->q), BAND_EBUSY);
    /* Closed: new work is refused, and an idle op says why. */
    assert_int_equal(band_fd_queue_bind(f->q, &f->op[6], &f->w[6], BAND_FOREVER, NULL),
                     BAND_ECLOSED);
    assert_int_equal(f->op[6].status, BAND_ECLOSED);
    assert_int_equal(band_fd_queue_at(f->q, &f->op[7], band_now(), NULL), BAND_ECLOSED);
    assert_int_equal(f->op[7].status, BAND_ECLOSED);
    assert_int_equal(fdt_readable(band_fd_queue_fd(f->q)), 1);

    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 6);
    /* Completion order: the receive, the two grants, then close's withdrawals. */
    int want[6] = {1, 0, 2, 3, 4, 5};
    for (int i = 0; i < 6; i++)
        assert_ptr_equal(f->got[i], &f->op[want[i]]);
    assert_int_equal(f->op[0].status, 0);
    assert_int_equal(f->op[1].status, 0);
    assert_int_equal(f->op[2].status, 0);
    assert_int_equal(f->op[3].status, BAND_ECANCELED);
    assert_int_equal(f->op[4].status, BAND_ECANCELED);
    assert_int_equal(f->op[5].status, BAND_ECANCELED); /* the due time a minute away */
    assert_u64_equal(out, 77);
    assert_u64_equal(f->recv[1].bytes, 9);
    assert_int_equal(band_sem_release(f->sem, 5), 0); /* ops 0 and 2 held 5 */
    assert_u64_equal(band_sem_available(f->sem), 5);
    assert_int_equal(band_fd_queue_count(f->q), 0);
    assert_quiet(f);
    for (int i = 0; i < 6; i++)
        assert_int_equal(band_fd_queue_cancel(&f->op[i]), BAND_EINVAL); /* idle again */
    assert_int_equal(band_fd_queue_destroy(f->q), 0);
    f->q = NULL;
}

/* A partial grant of an op that close withdraws goes back; a granted op's permits are the
 * owner's. An op bound before the close and started after it: withdrawn by its start
 * when it queued, its real result when it completed at once. */
static void test_close_returns_partial_grant(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 3, BAND_FOREVER), 0);
    assert_int_equal(fdt_acquire(f->q, &f->op[1], &f->w[1], f->sem, 3, BAND_FOREVER), 0);
    assert_int_equal(band_sem_release(f->sem, 4), 0); /* op 0 granted, op 1 holds 1 */
    assert_int_equal(band_fd_queue_bind(f->q, &f->op[2], &f->w[2], BAND_FOREVER, NULL), 0);
    assert_int_equal(band_fd_queue_bind(f->q, &f->op[3], &f->w[3], BAND_FOREVER, NULL), 0);
    assert_int_equal(band_fd_queue_close(f->q), 0);
    assert_u64_equal(band_sem_available(f->sem), 1); /* op 1's partial grant came back */
    assert_int_equal(band_fd_queue_start(&f->op[2], band_sem_acquire_async(f->sem, 1, &f->w[2])),
                     0); /* granted at once */
    assert_int_equal(band_fd_queue_start(&f->op[3], band_sem_acquire_async(f->sem, 1, &f->w[3])),
                     0); /* queued: withdrawn */
    assert_u64_equal(sem_stats(f->sem).waiters, 0);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 4);
    assert_ptr_equal(f->got[0], &f->op[0]);
    assert_ptr_equal(f->got[1], &f->op[1]);
    assert_ptr_equal(f->got[2], &f->op[2]);
    assert_ptr_equal(f->got[3], &f->op[3]);
    assert_int_equal(f->op[0].status, 0);
    assert_int_equal(f->op[1].status, BAND_ECANCELED);
    assert_int_equal(f->op[2].status, 0);
    assert_int_equal(f->op[3].status, BAND_ECANCELED);
    assert_int_equal(band_sem_release(f->sem, 4), 0); /* ops 0 and 2 */
    assert_u64_equal(band_sem_available(f->sem), 4);
    assert_int_equal(band_fd_queue_destroy(f->q), 0);
    f->q = NULL;
}

/* Close while another thread's releases complete ops: every op reaped once, then the
 * destroy right after the last reap (a wake may still be returning) frees the queue. */
static void test_close_races_wakes(void **state)
{
    struct fixture *f = *state;
    for (int round = 0; round < 50; round++) {
        band_fd_queue *q;
        assert_int_equal(band_fd_queue_create(&q), 0);
        for (int i = 0; i < NOPS; i++)
            assert_int_equal(fdt_acquire(q, &f->op[i], &f->w[i], f->sem, 1, BAND_FOREVER), 0);
        struct fdt_releaser r;
        assert_int_equal(fdt_releaser_start(&r, f->sem, NOPS, 1), 0);
        band_fd_queue_op *got[NOPS];
        assert_int_equal(fdt_close_reap_destroy(q, got, NOPS), NOPS);
        assert_int_equal(test_thread_join(&r.t), 0);
        int seen[NOPS] = {0};
        for (int i = 0; i < NOPS; i++) {
            size_t id = (size_t)(uintptr_t)got[i]->data;
            assert_true(id < NOPS);
            seen[id]++;
            assert_true(got[i]->status == 0 || got[i]->status == BAND_ECANCELED);
            if (got[i]->status == 0)
                assert_int_equal(band_sem_release(f->sem, 1), 0); /* the owner's permit */
        }
        for (int i = 0; i < NOPS; i++)
            assert_int_equal(seen[i], 1);
        /* Conservation: all NOPS permits are back (released here, or never taken). */
        assert_u64_equal(band_sem_available(f->sem), NOPS);
        assert_int_equal(band_sem_drain(f->sem, NOPS), NOPS);
    }
}

/* No allocation per operation: glibc's counters do not move over submit/complete/reap. */
static void test_no_allocation_per_op(void **state)
{
    struct fixture *f = *state;
    uint64_t v = 1, out = 0;
    /* Warm up (the first eventfd read/write, stdio, etc.). Each granted permit is kept
     * (and forgotten), so every round starts with none available. */
    assert_int_equal(fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 1, BAND_FOREVER), 0);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 4), 1);

    band_cancel *tok;
    assert_int_equal(band_cancel_create(&tok, NULL), 0);
    struct mallinfo2 before = mallinfo2();
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(fdt_acquire_tok(f->q, &f->op[0], &f->w[0], f->sem, 1,
                                         band_deadline_after(BAND_SEC), tok),
                         0);
        assert_int_equal(fdt_recv(f->q, &f->op[1], &f->recv[1], f->ch, &out, BAND_FOREVER), 0);
        assert_int_equal(fdt_send(f->q, &f->op[2], &f->send[2], f->ch, &v, 1, BAND_FOREVER), 0);
        assert_int_equal(fdt_acquire(f->q, &f->op[3], &f->w[3], f->sem, 1, BAND_FOREVER), 0);
        assert_int_equal(band_sem_release(f->sem, 1), 0);
        assert_int_equal(band_fd_queue_cancel(&f->op[3]), 0);
        assert_int_equal(band_fd_queue_at(f->q, &f->op[4], band_now(), tok), 0);
        assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 5);
        assert_int_equal(f->op[0].status, 0);
        assert_int_equal(f->op[3].status, BAND_ECANCELED);
        assert_int_equal(f->op[4].status, 0);
    }
    struct mallinfo2 after = mallinfo2();
    assert_int_equal(band_cancel_destroy(tok), 0);
    assert_u64_equal(after.uordblks, before.uordblks);
    assert_u64_equal(after.arena, before.arena);
    assert_u64_equal(after.hblks, before.hblks);
}

/* ---------------------------------------------------------------------------------- */
/* cancellation tokens                                                                 */

struct requester {
    band_cancel *tok;
    struct test_thread t;
};

static int requester_main(void *arg)
{
    struct requester *r = arg;
    struct timespec ts = {0, 1000000}; /* let the owner go to sleep in epoll_wait first */
    nanosleep(&ts, NULL);
    return band_cancel_request(r->tok);
}

/* A token requested on another thread: its hooks only write the eventfd, the next reap
 * cancels every op still waiting under it (a partial grant goes on), leaves completed
 * ones alone and the fd quiet afterwards; an op bound under a requested token is
 * withdrawn inside its start. */
static void test_token_cancels(void **state)
{
    struct fixture *f = *state;
    band_cancel *tok, *other;
    assert_int_equal(band_cancel_create(&tok, NULL), 0);
    assert_int_equal(band_cancel_create(&other, NULL), 0);
    for (int i = 0; i < 6; i++)
        assert_int_equal(fdt_acquire_tok(f->q, &f->op[i], &f->w[i], f->sem, 2, BAND_FOREVER, tok),
                         0);
    assert_int_equal(fdt_acquire_tok(f->q, &f->op[6], &f->w[6], f->sem, 2, BAND_FOREVER, other), 0);
    uint64_t out = PCASE_OUT_UNTOUCHED;
    assert_int_equal(band_fd_queue_bind(f->q, &f->op[7], &f->recv[7].w, BAND_FOREVER, tok), 0);
    assert_int_equal(band_fd_queue_start(&f->op[7], band_chan_recv_async(f->ch, &out, &f->recv[7])),
                     0);
    assert_int_equal(band_sem_release(f->sem, 3), 0); /* op 0 granted, op 1 holds 1 */
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 1);
    assert_ptr_equal(f->got[0], &f->op[0]);

    struct requester rq = {tok, {0}};
    assert_int_equal(test_thread_start(&rq.t, requester_main, &rq), 0);
    collect(f, 6); /* woken by the hooks' eventfd writes */
    assert_int_equal(test_thread_join(&rq.t), 0);
    for (int i = 0; i < 5; i++) {
        assert_ptr_equal(f->got[i], &f->op[i + 1]); /* the scan walks them in bind order */
        assert_int_equal(f->op[i + 1].status, BAND_ECANCELED);
    }
    assert_ptr_equal(f->got[5], &f->op[7]);
    assert_int_equal(f->op[7].status, BAND_ECANCELED);
    assert_u64_equal(out, PCASE_OUT_UNTOUCHED);
    assert_quiet(f);
    /* op 1's partial grant went down the cancelled ops to op 6 (the other token). */
    band_sem_stats st = sem_stats(f->sem);
    assert_u64_equal(st.waiters, 1);
    assert_u64_equal(st.head_granted, 1);
    assert_int_equal(band_sem_release(f->sem, 1), 0);
    collect(f, 1);
    assert_ptr_equal(f->got[0], &f->op[6]);
    assert_int_equal(f->op[6].status, 0);

    /* Bound under the requested token: withdrawn at once, reaped as cancelled. */
    assert_int_equal(fdt_acquire_tok(f->q, &f->op[8], &f->w[8], f->sem, 1, BAND_FOREVER, tok), 0);
    assert_u64_equal(sem_stats(f->sem).waiters, 0);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 1);
    assert_int_equal(f->op[8].status, BAND_ECANCELED);
    assert_quiet(f);
    st = sem_stats(f->sem);
    assert_u64_equal(st.cancels, 5 + 1);
    assert_int_equal(band_sem_release(f->sem, 4), 0); /* ops 0 and 6 */
    assert_u64_equal(band_sem_available(f->sem), 4);
    assert_int_equal(band_cancel_destroy(tok), 0);
    assert_int_equal(band_cancel_destroy(other), 0);
}

static band_cancel *signal_token;

static void request_on_signal(int sig)
{
    (void)sig;
    (void)band_cancel_request(signal_token); /* async-signal-safe */
}

static int raise_main(void *arg)
{
    (void)arg;
    return raise(SIGUSR1); /* the handler runs on this worker thread */
}

/* A token requested from a signal handler, on the owner thread and on another one. */
static void test_token_from_signal_handler(void **state)
{
    struct fixture *f = *state;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = request_on_signal;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(band_cancel_create(&signal_token, NULL), 0);
        for (int i = 0; i < 3; i++)
            assert_int_equal(
                fdt_acquire_tok(f->q, &f->op[i], &f->w[i], f->sem, 1, BAND_FOREVER, signal_token),
                0);
        if (round == 0) {
            assert_int_equal(raise(SIGUSR1), 0); /* the handler runs here, now */
            assert_int_equal(fdt_readable(band_fd_queue_fd(f->q)), 1);
        } else {
            struct test_thread t;
            assert_int_equal(test_thread_start(&t, raise_main, NULL), 0);
            assert_int_equal(test_thread_join(&t), 0);
        }
        collect(f, 3);
        for (int i = 0; i < 3; i++)
            assert_int_equal(f->op[i].status, BAND_ECANCELED);
        assert_quiet(f);
        assert_int_equal(band_cancel_destroy(signal_token), 0);
    }
    assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
    assert_u64_equal(sem_stats(f->sem).waiters, 0);
}

/* band_shutdown_watch() cancels the waiter and calls its wake itself: one report, with the
 * token's reason; the queue's own cancel loses cleanly. */
static void test_shutdown_watch(void **state)
{
    struct fixture *f = *state;
    band_shutdown *t;
    assert_int_equal(band_shutdown_create(&t), 0);
    band_shutdown_link link;
    band_shutdown_link_init(&link);
    assert_int_equal(
        fdt_acquire(f->q, &f->op[0], &f->w[0], f->sem, 1, band_deadline_after(60 * BAND_SEC)), 0);
    assert_int_equal(band_shutdown_watch(t, &link, &f->w[0]), 0);
    assert_int_equal(band_shutdown_request(t, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_fd_queue_cancel(&f->op[0]), BAND_EALREADY);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 4), 1);
    assert_int_equal(f->op[0].status, BAND_ETIMEDOUT);
    assert_int_equal(band_shutdown_unwatch(&link), BAND_EALREADY);
    assert_int_equal(band_fd_queue_next_deadline(f->q), BAND_FOREVER);
    assert_quiet(f);
    assert_int_equal(band_shutdown_destroy(t), 0);
}

/* ---------------------------------------------------------------------------------- */
/* rate bookings: complete at a time                                                    */

static void test_rate_bookings(void **state)
{
    struct fixture *f = *state;
    band_rate *rate;
    assert_int_equal(band_rate_create(&rate, 200, BAND_SEC, 1, NULL), 0); /* one every 5 ms */
    band_cancel *tok;
    assert_int_equal(band_cancel_create(&tok, NULL), 0);
    enum { N = 5 };
    band_rate_ticket t[N];
    for (int i = 0; i < N; i++) {
        t[i] = (band_rate_ticket)BAND_RATE_TICKET_INIT;
        assert_int_equal(band_rate_reserve(rate, 1, &t[i], NULL, BAND_FOREVER), 0);
        assert_int_equal(band_fd_queue_at(f->q, &f->op[i], t[i].at, i == 3 ? tok : NULL), 0);
    }
    /* The first is due at once; the next due time is the loop's next deadline. */
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 1);
    assert_ptr_equal(f->got[0], &f->op[0]);
    assert_int_equal(f->op[0].status, 0);
    assert_int_equal(band_fd_queue_next_deadline(f->q), t[1].at);
    /* Given back before they are due: by cancel and by the token. */
    assert_int_equal(band_fd_queue_cancel(&f->op[2]), 0);
    assert_int_equal(band_fd_queue_cancel(&f->op[2]), BAND_EALREADY);
    assert_int_equal(band_cancel_request(tok), 0);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 2);
    assert_ptr_equal(f->got[0], &f->op[2]);
    assert_ptr_equal(f->got[1], &f->op[3]);
    assert_int_equal(f->op[2].status, BAND_ECANCELED);
    assert_int_equal(f->op[3].status, BAND_ECANCELED);
    assert_int_equal(band_rate_ticket_cancel(&t[2]), 0); /* not due: its token is back */
    assert_int_equal(band_rate_ticket_cancel(&t[3]), 0);
    /* The rest fall due through the epoll timeout, never early, in time order. */
    band_time reaped_at[2];
    size_t n = 0;
    band_time give_up = band_deadline_after(2 * BAND_SEC);
    while (n < 2 && band_now() < give_up) {
        struct epoll_event ev;
        (void)epoll_wait(f->ep, &ev, 1, band_fd_queue_timeout_ms(f->q));
        size_t k = band_fd_queue_reap(f->q, f->got + n, 2 - n);
        for (size_t i = 0; i < k; i++)
            reaped_at[n + i] = band_now();
        n += k;
    }
    assert_int_equal(n, 2);
    assert_ptr_equal(f->got[0], &f->op[1]);
    assert_ptr_equal(f->got[1], &f->op[4]);
    assert_int_equal(f->op[1].status, 0);
    assert_int_equal(f->op[4].status, 0);
    assert_true(reaped_at[0] >= t[1].at);
    assert_true(reaped_at[1] >= t[4].at);
    band_rate_stats rs;
    assert_int_equal(band_rate_get_stats(rate, &rs), 0);
    assert_u64_equal(rs.cancelled, 2);
    assert_quiet(f);
    /* Close cancels a booking still pending; reap reports it. */
    band_rate_ticket first = BAND_RATE_TICKET_INIT, late = BAND_RATE_TICKET_INIT;
    assert_int_equal(band_rate_set(rate, 1, 60 * BAND_SEC, 1), 0);
    assert_int_equal(band_rate_reserve(rate, 1, &first, NULL, BAND_FOREVER), 0);
    assert_int_equal(band_rate_reserve(rate, 1, &late, NULL, BAND_FOREVER), 0);
    assert_true(late.at > band_now() + 30 * BAND_SEC);
    assert_int_equal(band_fd_queue_at(f->q, &f->op[5], late.at, NULL), 0);
    assert_int_equal(band_fd_queue_at(f->q, &f->op[5], late.at, NULL), BAND_EINVAL); /* owned */
    assert_int_equal(band_fd_queue_close(f->q), 0);
    assert_int_equal(band_fd_queue_reap(f->q, f->got, 8), 1);
    assert_ptr_equal(f->got[0], &f->op[5]);
    assert_int_equal(f->op[5].status, BAND_ECANCELED);
    assert_int_equal(band_fd_queue_destroy(f->q), 0);
    f->q = NULL;
    assert_int_equal(band_rate_ticket_cancel(&late), 0);
    assert_int_equal(band_cancel_destroy(tok), 0);
    assert_int_equal(band_rate_destroy(rate), 0);
}

/* Closing a rate budget refuses new bookings but keeps the ones made: they still fall due
 * through the queue. A slot past a booking's deadline is refused by the budget itself. */
static void test_rate_close_keeps_bookings(void **state)
{
    struct fixture *f = *state;
    band_rate *rate;
    assert_int_equal(band_rate_create(&rate, 100, BAND_SEC, 1, NULL), 0); /* one every 10 ms */
    band_rate_ticket t[2];
    for (int i = 0; i < 2; i++) {
        t[i] = (band_rate_ticket)BAND_RATE_TICKET_INIT;
        assert_int_equal(band_rate_reserve(rate, 1, &t[i], NULL, BAND_FOREVER), 0);
        assert_int_equal(band_fd_queue_at(f->q, &f->op[i], t[i].at, NULL), 0);
    }
    band_rate_ticket x = BAND_RATE_TICKET_INIT;
    band_time retry = 0;
    assert_int_equal(band_rate_reserve(rate, 1, &x, &retry, band_now() + BAND_MSEC),
                     BAND_ETIMEDOUT); /* its slot would be 20 ms away: nothing booked */
    assert_true(retry > BAND_MSEC);
    assert_int_equal(band_rate_close(rate), 0);
    assert_int_equal(band_rate_reserve(rate, 1, &x, NULL, BAND_FOREVER), BAND_ECLOSED);
    collect(f, 2);
    assert_true(band_now() >= t[1].at);
    for (int i = 0; i < 2; i++) {
        assert_ptr_equal(f->got[i], &f->op[i]);
        assert_int_equal(f->op[i].status, 0);
    }
    assert_quiet(f);
    assert_int_equal(band_rate_destroy(rate), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_matches_library),
        cmocka_unit_test_setup_teardown(test_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_immediate_grant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_immediate_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grants_from_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chan_from_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_burst_level, setup, teardown),
        cmocka_unit_test_setup_teardown(test_burst_edge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_batches_keep_fd_readable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadline_never_early, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_ms_rounding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadline_returns_partial_grant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_past_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_after_completion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_returns_partial_grant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_refuses_while_owning, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_with_pending_ops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_returns_partial_grant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_races_wakes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_allocation_per_op, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_cancels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_from_signal_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rate_bookings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rate_close_keeps_bookings, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
